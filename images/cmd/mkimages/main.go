package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/kubeharness/kubeharness/images"
	"github.com/kubeharness/kubeharness/images/busybox"
)

// The import paths of the programs mkimages builds.
const (
	pausePackage   = "github.com/kubeharness/kubeharness/images/pause"
	corednsPackage = "github.com/kubeharness/kubeharness/images/coredns"
	netbenchPkg    = "github.com/kubeharness/kubeharness/images/netbench"
)

// busyboxHint ends every error about a -busybox binary.
const busyboxHint = "give a static busybox (Debian's busybox-static has one), or none to build busybox " + busybox.Version

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mkimages:", err)
		stop()
		os.Exit(1)
	}
}

// run is mkimages with its arguments and output streams.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags := flag.NewFlagSet("mkimages", flag.ContinueOnError)
	flags.SetOutput(stderr)
	out := flags.String("out", "", "directory to write pause.tar, busybox.tar, coredns.tar and netbench.tar into (required; made if missing)")
	bbPath := flags.String("busybox", "", "a static busybox binary to use instead of building busybox "+busybox.Version+" (images/busybox), such as Debian's busybox-static's /bin/busybox")
	version := flags.String("busybox-version", "", "busybox's version, for the image's tag (default: "+busybox.Version+", or with -busybox dpkg-query's version of busybox-static)")
	bbCache := flags.String("busybox-cache", "", "directory busybox's source and build are kept in (default: $KUBEHARNESS_CACHE/busybox, KUBEHARNESS_CACHE defaulting to ~/.cache/kubeharness)")
	goCmd := flags.String("go", "go", "the go command that builds the pause, coredns and netbench programs")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("-out DIR is required")
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}

	// busybox first: a given binary's checks are quick and fail before the
	// builds.
	bbSpec, err := busyboxSpec(ctx, *bbPath, *bbCache)
	if err != nil {
		return err
	}
	switch {
	case *version != "":
	case *bbPath == "":
		*version = busybox.Version
	default:
		if *version, err = debianVersion(ctx, "busybox-static"); err != nil {
			return err
		}
	}
	bbName, err := images.BusyboxName(*version)
	if err != nil {
		return err
	}
	pause, err := buildStatic(ctx, *goCmd, "pause", pausePackage)
	if err != nil {
		return err
	}
	coredns, err := buildStatic(ctx, *goCmd, "coredns", corednsPackage)
	if err != nil {
		return err
	}
	netbench, err := buildStatic(ctx, *goCmd, "netbench", netbenchPkg)
	if err != nil {
		return err
	}

	for _, w := range []struct {
		file, name string
		spec       images.Spec
	}{
		{"pause.tar", images.PauseName, images.PauseSpec(pause)},
		{"busybox.tar", bbName, bbSpec},
		{"coredns.tar", images.CoreDNSName, images.CoreDNSSpec(coredns)},
		{"netbench.tar", images.NetbenchName, images.NetbenchSpec(netbench)},
	} {
		if err := write(stdout, filepath.Join(*out, w.file), w.name, w.spec); err != nil {
			return err
		}
	}
	return nil
}

// busyboxSpec is the busybox image of the static busybox binary at path,
// or if path is "" of busybox built in cacheDir ("": [busybox.CacheDir]).
func busyboxSpec(ctx context.Context, path, cacheDir string) (images.Spec, error) {
	var data []byte
	createdBy := "kubeharness images: busybox " + busybox.Version + " (images/busybox)"
	if path == "" {
		var err error
		if cacheDir == "" {
			if cacheDir, err = busybox.CacheDir(); err != nil {
				return images.Spec{}, err
			}
		}
		if data, err = busybox.Build(ctx, cacheDir); err != nil {
			return images.Spec{}, err
		}
	} else {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return images.Spec{}, fmt.Errorf("busybox %s: missing; %s", path, busyboxHint)
		}
		if err := images.CheckStatic(path); err != nil {
			return images.Spec{}, fmt.Errorf("busybox: %w; %s", err, busyboxHint)
		}
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return images.Spec{}, fmt.Errorf("busybox: %w", err)
		}
		createdBy = "kubeharness images: busybox of " + path
	}
	applets, err := busybox.Applets(ctx, data)
	if err != nil {
		return images.Spec{}, fmt.Errorf("%s: %w", strings.TrimPrefix(createdBy, "kubeharness images: "), err)
	}
	spec, err := images.BusyboxSpec(data, applets)
	spec.CreatedBy = createdBy
	return spec, err
}

// debianVersion is the installed version of Debian package pkg.
func debianVersion(ctx context.Context, pkg string) (string, error) {
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
		}
		return "", fmt.Errorf("version of Debian package %s (or give -busybox-version): dpkg-query: %w", pkg, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("version of Debian package %s: not installed (or give -busybox-version)", pkg)
	}
	return v, nil
}

// buildStatic builds the program pkg (called name in errors) of this
// module (mkimages runs in the images module).
func buildStatic(ctx context.Context, goCmd, name, pkg string) ([]byte, error) {
	b, err := images.GoBuild(ctx, goCmd, ".", pkg, nil)
	if err != nil {
		return nil, fmt.Errorf("the %s program (run mkimages from the images module): %w", name, err)
	}
	return b, nil
}

// write builds spec, writes it to path tagged name and prints what it wrote.
func write(stdout io.Writer, path, name string, spec images.Spec) error {
	img, err := images.Build(spec)
	if err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	if err := images.Write(path, name, img); err != nil {
		return err
	}
	id, digest, err := ids(img)
	if err != nil {
		return fmt.Errorf("image %s: %w", name, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: %s id %s manifest %s, %d bytes\n", path, name, id, digest, info.Size())
	return err
}

// ids is img's config digest (the image ID) and manifest digest.
func ids(img v1.Image) (id, digest v1.Hash, err error) {
	if id, err = img.ConfigName(); err != nil {
		return id, digest, err
	}
	digest, err = img.Digest()
	return id, digest, err
}
