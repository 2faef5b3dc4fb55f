// Command mkimages builds the node's images from source and writes them as
// archives containerd imports: OUT/pause.tar (registry.k8s.io/pause:3.10.2,
// the pause program of ../../pause built static), OUT/busybox.tar
// (kubeharness.local/busybox:1.37.0, busybox built by ../../busybox, or a
// static binary given, with a symlink per applet) and OUT/coredns.tar
// (kubeharness.local/coredns:vVERSION, ../../coredns built static).
//
//	go run ./cmd/mkimages -out DIR [-busybox-cache DIR | -busybox /bin/busybox [-busybox-version V]] [-go go]
//
// Run it from the images module (the pause and coredns programs are built
// by their import paths). Each archive goes to a temporary file renamed into place; one line
// per archive says what was written: path, name, image ID (the config's
// digest, what crictl shows), manifest digest and size.
package main
