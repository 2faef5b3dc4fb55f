// Command mkimages builds the node's images from source and writes them as
// archives containerd imports: OUT/pause.tar (registry.k8s.io/pause:3.10.2,
// the pause program of ../../pause built static), OUT/busybox.tar
// (kubeharness.local/busybox:1.37.0, busybox built by ../../busybox, or a
// static binary given, with a symlink per applet), OUT/coredns.tar
// (kubeharness.local/coredns:vVERSION, ../../coredns built static) and
// OUT/netbench.tar (kubeharness.local/netbench:v1, ../../netbench built
// static: the pod network's round trips and throughput, for tests).
//
//	go run ./cmd/mkimages -out DIR [-busybox-cache DIR | -busybox /bin/busybox [-busybox-version V]] [-go go]
//
// Run it from the images module (the programs are built
// by their import paths). Each archive goes to a temporary file renamed into place; one line
// per archive says what was written: path, name, image ID (the config's
// digest, what crictl shows), manifest digest and size.
package main
