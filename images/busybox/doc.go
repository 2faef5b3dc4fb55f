// Package busybox builds upstream's busybox, static, configured as
// upstream's busybox image (Docker's busybox:1.37.0): the busybox of the e2e
// images and of the node's busybox image.
//
// Not Debian's: every Debian busybox reverts upstream's commit 9c143ce52,
// so its ash drops environment names that are not shell names ("data-1",
// which the ConfigMap and Secret env specs look for in `sh -c env`); it is
// a standalone shell (its applets before PATH's programs); bookworm's 1.35
// segfaults on `wget -T`. docs/conformance-images.md §10 has the evidence.
//
//	Build(ctx, cacheDir)
//	        CACHE/busybox-1.37.0-KEY if built; else the source (Debian's orig
//	        tarball, upstream's byte for byte, SHA-256 pinned) into CACHE once,
//	        make defconfig, the options (config), make busybox ──► the binary
//	Applets(ctx, binary) ──► its `busybox --list`
//
// Building needs make, gcc and a static libc (Debian: libc6-dev), about a
// minute on two cores, once per cache; it is reproducible (SOURCE_DATE_EPOCH
// is the release's date) for a given compiler and libc.
package busybox
