package main

import (
	"archive/tar"
	"errors"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// walk calls fn for each entry of img's layers.
func walk(t *testing.T, img v1.Image, fn func(*tar.Header, io.Reader)) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			fn(h, tr)
		}
		rc.Close()
	}
}

// file is the content of the regular file at path in img.
func file(t *testing.T, img v1.Image, path string) []byte {
	t.Helper()
	var data []byte
	walk(t, img, func(h *tar.Header, r io.Reader) {
		if h.Name == path && h.Typeflag == tar.TypeReg {
			var err error
			if data, err = io.ReadAll(r); err != nil {
				t.Fatal(err)
			}
		}
	})
	if data == nil {
		t.Fatalf("no file %s in the image", path)
	}
	return data
}

// symlinks maps each symlink of img to its target.
func symlinks(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	links := map[string]string{}
	walk(t, img, func(h *tar.Header, _ io.Reader) {
		if h.Typeflag == tar.TypeSymlink {
			links[h.Name] = h.Linkname
		}
	})
	return links
}
