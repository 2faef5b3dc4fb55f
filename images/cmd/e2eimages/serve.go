package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// serve runs a registry on addr (a loopback address: it has no
// authentication) holding every image of the archives in dir under its
// repository and tag without the registry host, as containerd asks a
// mirror for them ("e2e-test-images/kitten:1.8" for
// registry.k8s.io/e2e-test-images/kitten:1.8). Blobs are kept under
// blobs (made if missing). It writes ready (if not empty) once every image
// is pushed, and serves until ctx ends.
func serve(ctx context.Context, addr, dir, blobs, ready string, stdout io.Writer) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-serve %s: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-serve %s: not a loopback address (the registry has no authentication)", addr)
	}
	if err := os.MkdirAll(blobs, 0o700); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-serve: %w", err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)), registry.Logger(log.New(stdout, "registry: ", log.LstdFlags))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	err = push(ctx, ln.Addr().String(), dir, stdout)
	if err == nil && ready != "" {
		err = writeFileAtomic(ready, []byte(ln.Addr().String()+"\n"))
	}
	if err == nil {
		select {
		case <-ctx.Done():
		case err = <-done:
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if serr := <-done; err == nil && !errors.Is(serr, http.ErrServerClosed) {
		err = serr
	}
	return err
}

// push writes every image of dir's archives to the registry at addr.
func push(ctx context.Context, addr, dir string, stdout io.Writer) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.tar"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	if len(files) == 0 {
		return fmt.Errorf("-serve: no image archive (*.tar) in %s", dir)
	}
	// A transport of its own, its connections closed once all is pushed.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	for _, f := range files {
		m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(f) })
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		for _, d := range m {
			for _, t := range d.RepoTags {
				tag, err := name.NewTag(t, name.StrictValidation)
				if err != nil {
					return fmt.Errorf("%s: %q: %w", f, t, err)
				}
				img, err := tarball.ImageFromPath(f, &tag)
				if err != nil {
					return fmt.Errorf("%s: %s: %w", f, t, err)
				}
				repo := tag.Context().RepositoryStr()
				local, err := name.NewTag(addr+"/"+repo+":"+tag.TagStr(), name.Insecure)
				if err != nil {
					return err
				}
				if err := remote.Write(local, img, remote.WithContext(ctx), remote.WithTransport(tr)); err != nil {
					return fmt.Errorf("pushing %s as %s: %w", t, local, err)
				}
				fmt.Fprintf(stdout, "serving %s as %s\n", t, local)
			}
		}
	}
	return nil
}
