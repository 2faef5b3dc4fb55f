// Command e2eimages builds the images a Kubernetes minor's e2e suite runs,
// under their upstream names, so that the [Conformance] specs find them on a
// node with no registry, and serves them as that node's registry mirror.
//
//	e2e.test --list-images > list.txt
//	e2eimages -list list.txt -out DIR -module ../conformance [-go-flags "-tags=k8s1_36 -modfile=go.k8s-1.36.mod"] -debs CACHE [-busybox-cache DIR]
//	e2eimages -serve 127.0.0.1:5080 -out DIR -blobs BLOBDIR [-ready FILE]
//
// Building: each name of the list goes to a plan (plan.go): an archive
// DIR/FILE.tar with a recipe (recipes.go), or a line of DIR/IMAGES.txt
// saying why it is not built. A recipe makes the image of programs built
// from -module's build list (agnhost, nonewprivs, sample-apiserver, etcd:
// the minor's own sources), upstream files of that k8s.io/kubernetes,
// busybox (images/busybox: upstream's release built once into
// -busybox-cache) and Debian packages (images/deb: apt-get download into
// -debs, unpacked with the libraries their programs need). An archive whose inputs (files,
// configuration, names) did not change is not written again. IMAGES.txt
// says of every name its archive and how it differs from upstream's image.
//
// Serving: every image of DIR's archives is pushed into a registry
// (go-containerregistry's) on a loopback address, under its repository
// without the registry host, which is how containerd asks a mirror; the
// address is written to -ready once all are in.
package main
