package images_test

import (
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kubeharness/kubeharness/images"
)

// Build an image of two files and write it where the node imports images
// from; containerd imports it as example.com/hello:1.
func ExampleWrite() {
	dir, err := os.MkdirTemp("", "images-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	img, err := images.Build(images.Spec{
		Files: []images.File{
			{Path: "/bin/hello", Mode: 0o755, Data: []byte("#!/bin/sh\necho hello\n")},
			{Path: "/bin/hi", Mode: fs.ModeSymlink | 0o777, Target: "hello"},
		},
		Entrypoint: []string{"/bin/hello"},
	})
	if err != nil {
		log.Fatal(err)
	}
	path := filepath.Join(dir, "agent", "images", "hello.tar")
	if err := images.Write(path, "example.com/hello:1", img); err != nil {
		log.Fatal(err)
	}

	tag, err := name.NewTag("example.com/hello:1")
	if err != nil {
		log.Fatal(err)
	}
	loaded, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		log.Fatal(err)
	}
	cf, err := loaded.ConfigFile()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(cf.OS, cf.Config.Entrypoint)
	// Output: linux [/bin/hello]
}

func ExampleBusyboxName() {
	fmt.Println(images.BusyboxName("1:1.35.0-4+deb12u1+b1"))
	// Output: kubeharness.local/busybox:1.35.0-4_deb12u1_b1 <nil>
}
