package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/kubeharness/kubeharness/images/busybox"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "e2eimages:", err)
		stop()
		os.Exit(1)
	}
}

// options are e2eimages' flags.
type options struct {
	list, out, module, debs, goCmd string
	// busybox is the directory busybox is built and kept in.
	busybox string
	goFlags []string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("e2eimages", flag.ContinueOnError)
	flags.SetOutput(stderr)
	var o options
	var goFlags string
	flags.StringVar(&o.list, "list", "", "the image names, one per line: the output of `e2e.test --list-images` (required; - for stdin)")
	flags.StringVar(&o.out, "out", "", "directory to write the archives and IMAGES.txt into (required; made if missing)")
	flags.StringVar(&o.module, "module", "", "the Go module directory whose build list has the minor's k8s.io/kubernetes, k8s.io/sample-apiserver and etcd (required: conformance/)")
	flags.StringVar(&goFlags, "go-flags", "", "more go build flags for that module, space-separated (such as -modfile=go.k8s-1.36.mod -tags=k8s1_36)")
	flags.StringVar(&o.debs, "debs", "", "directory the Debian packages are downloaded to and kept in (required)")
	flags.StringVar(&o.busybox, "busybox-cache", "", "directory busybox's source and build are kept in (default: $KUBEHARNESS_CACHE/busybox, KUBEHARNESS_CACHE defaulting to ~/.cache/kubeharness)")
	flags.StringVar(&o.goCmd, "go", "go", "the go command")
	serveAddr := flags.String("serve", "", "instead of building, serve the images of -out's archives as a registry on this loopback address (host:port) until stopped: the node's mirror")
	blobs := flags.String("blobs", "", "with -serve: the directory the registry keeps blobs in (required)")
	ready := flags.String("ready", "", "with -serve: a file to write the registry's address to once every image is pushed")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	if *serveAddr != "" {
		if o.out == "" || *blobs == "" {
			return errors.New("-serve needs -out (the archives) and -blobs")
		}
		return serve(ctx, *serveAddr, o.out, *blobs, *ready, stdout)
	}
	if o.list == "" || o.out == "" || o.module == "" || o.debs == "" {
		return errors.New("-list, -out, -module and -debs are required")
	}
	o.goFlags = strings.Fields(goFlags)
	if o.busybox == "" {
		var err error
		if o.busybox, err = busybox.CacheDir(); err != nil {
			return err
		}
	}
	names, err := readList(o.list)
	if err != nil {
		return err
	}
	plans, err := makePlans(names)
	if err != nil {
		return err
	}
	b := &builder{opts: o, stdout: stdout}
	for _, p := range plans {
		if p.file == "agnhost" {
			_, b.agnhost = split(p.names[0])
		}
	}
	var report strings.Builder
	for _, p := range plans {
		if p.recipe == nil {
			for _, n := range p.names {
				fmt.Fprintf(&report, "%s\tnot built\t%s\n", n, p.note)
			}
			continue
		}
		file, err := b.build(ctx, p)
		if err != nil {
			return err
		}
		for _, n := range p.names {
			fmt.Fprintf(&report, "%s\t%s\t%s\n", n, file, p.note)
		}
	}
	return writeFileAtomic(filepath.Join(o.out, "IMAGES.txt"), []byte(report.String()))
}

// readList reads the image names of path ("-": stdin), one per line,
// blank lines ignored; a line that is not an image name with a tag is an
// error naming it.
func readList(path string) ([]string, error) {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("-list: %w", err)
		}
		defer f.Close()
		r = f
	}
	var names []string
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if _, err := name.NewTag(s, name.StrictValidation); err != nil {
			return nil, fmt.Errorf("-list %s:%d: %q is not an image name with a tag: %w", path, line, s, err)
		}
		names = append(names, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("-list %s: %w", path, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("-list %s: no image names", path)
	}
	sort.Strings(names)
	return names, nil
}

// writeFileAtomic writes data to path through a temporary file and a
// rename.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return err
}
