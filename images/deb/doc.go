// Package deb turns Debian packages of the build machine's archive into the
// entries ([]images.File) of a single-layer image: the userland of the e2e
// test images (curl, nc, dig, getent, nginx…) without installing anything on
// the host.
//
// The flow:
//
//	Fetch(ctx, cacheDir, "curl", "libc6=2.36-9+deb12u14")
//	        apt-cache policy/show for the version and SHA256, apt-get download
//	        into cacheDir unless a file there has that SHA256 ──► []Package
//	Unpack(ctx, pkgs...)
//	        dpkg-deb --fsys-tarfile of each, merged by path in memory, hard
//	        links as copies, clashing files an error ──► *Tree
//	tree.Select("/usr/bin/curl", "/etc/nginx")
//	        the entries, their symlink chains, parent directories, directory
//	        contents and the ELF loader and shared-library closure ──► []images.File
//
// No maintainer script runs: what postinst would make (/etc/passwd,
// /etc/group, /etc/nsswitch.conf, update-alternatives links such as
// /bin/nc → nc.openbsd) the caller adds itself. Fetch needs apt's indexes
// (apt-get update) and the network unless the cache has every file; Unpack
// needs dpkg-deb. The package keeps no state between calls.
package deb
