// Package images builds the container images the node needs, from source and
// without a registry, as archives containerd imports (k3s's airgap
// convention: every *.tar under DATA_DIR/agent/images goes into containerd's
// k8s.io namespace).
//
// The flow:
//
//	files ([]File) ──► Layer: one in-memory tar, entries sorted, fixed
//	                   timestamps, missing parent directories added
//	Spec{Files, Entrypoint, Cmd, Env, User} ──► Build: empty.Image + the layer
//	                   + a config with OS "linux" and runtime.GOARCH (containerd
//	                   drops an image without them on import) ──► v1.Image
//	Write(path, name, image) ──► a docker-save style tarball tagged name,
//	                   written to a temporary file and renamed into place
//
// The same Spec always gives the same digest. [PauseSpec], [BusyboxSpec],
// [CoreDNSSpec] and [NetbenchSpec] are the project's images; cmd/mkimages
// builds them (the programs are ./pause, ./coredns and ./netbench) and
// writes pause.tar, busybox.tar, coredns.tar and netbench.tar.
package images
