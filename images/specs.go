package images

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
)

const (
	// PauseName is the sandbox ("pause") image's name: the default sandbox
	// image of containerd v2.3 and v2.4 and the pause version of Kubernetes
	// 1.37 (kubeadm's PauseVersion), so neither needs configuring.
	PauseName = "registry.k8s.io/pause:3.10.2"
	// PauseUser is the user the pause program runs as, as upstream's.
	PauseUser = "65535:65535"
	// BusyboxRepository is the busybox image's name without its tag, which
	// [BusyboxName] makes from busybox's version.
	BusyboxRepository = "kubeharness.local/busybox"
	// CoreDNSName is the CoreDNS image's name (the program is ./coredns),
	// tagged with the version of github.com/coredns/coredns it is built
	// from, the one in this module's go.mod.
	CoreDNSName = "kubeharness.local/coredns:v1.15.0"
	// CoreDNSUser is the user CoreDNS runs as, upstream image's nonroot.
	CoreDNSUser = "65532:65532"
	// NetbenchName is the image of the netbench program (./netbench),
	// which measures the pod network from inside Pods.
	NetbenchName = "kubeharness.local/netbench:v1"
	// NetbenchUser is the user netbench runs as: nobody.
	NetbenchUser = "65534:65534"
	// DefaultPath is the PATH of the images' environments.
	DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// PauseSpec is the sandbox image: the pause program (a static binary, see
// ./pause) as /pause, its entrypoint, run as [PauseUser].
func PauseSpec(pause []byte) Spec {
	return Spec{
		Files:      []File{{Path: "/pause", Mode: 0o755, Data: pause}},
		Entrypoint: []string{"/pause"},
		Env:        []string{DefaultPath},
		User:       PauseUser,
		WorkingDir: "/",
		CreatedBy:  "kubeharness images: the pause program",
	}
}

// CoreDNSSpec is the CoreDNS image: the coredns program (a static binary,
// see ./coredns) as /coredns, its entrypoint, run as [CoreDNSUser]. A Pod
// gives it its Corefile (-conf).
func CoreDNSSpec(coredns []byte) Spec {
	return Spec{
		Files:      []File{{Path: "/coredns", Mode: 0o755, Data: coredns}},
		Entrypoint: []string{"/coredns"},
		Env:        []string{DefaultPath},
		User:       CoreDNSUser,
		WorkingDir: "/",
		CreatedBy:  "kubeharness images: CoreDNS",
	}
}

// NetbenchSpec is the netbench image: the program (a static binary, see
// ./netbench) as /netbench, its entrypoint, run as [NetbenchUser].
func NetbenchSpec(netbench []byte) Spec {
	return Spec{
		Files:      []File{{Path: "/netbench", Mode: 0o755, Data: netbench}},
		Entrypoint: []string{"/netbench"},
		Env:        []string{DefaultPath},
		User:       NetbenchUser,
		WorkingDir: "/",
		CreatedBy:  "kubeharness images: netbench",
	}
}

// BusyboxSpec is the busybox image: the static busybox binary as
// /bin/busybox, a symlink /bin/APPLET → busybox for each of applets (the
// output of `busybox --list`), /etc/passwd and /etc/group with root and
// nobody, /root, and /tmp (1777); Cmd is sh. An applet name that is not a
// plain file name is an error naming it.
func BusyboxSpec(busybox []byte, applets []string) (Spec, error) {
	files := []File{
		{Path: "/bin", Mode: fs.ModeDir | 0o755},
		{Path: "/bin/busybox", Mode: 0o755, Data: busybox},
		{Path: "/etc", Mode: fs.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		if a == "" || a == "." || a == ".." || strings.ContainsAny(a, "/\x00") {
			return Spec{}, fmt.Errorf("busybox applet %q: not a file name", a)
		}
		files = append(files, File{Path: "/bin/" + a, Mode: fs.ModeSymlink | 0o777, Target: "busybox"})
	}
	return Spec{
		Files:     files,
		Cmd:       []string{"sh"},
		Env:       []string{DefaultPath},
		CreatedBy: "kubeharness images: busybox",
	}, nil
}

// BusyboxName is the busybox image's name for a version of busybox (a
// release, "1.37.0", or a Debian package's): [BusyboxRepository] tagged
// with the version without its epoch (as Debian's .deb file names) and
// with each character a tag may not hold ('+', '~', ':') as '_':
// "1:1.35.0-4+deb12u1+b1" gives "kubeharness.local/busybox:1.35.0-4_deb12u1_b1".
func BusyboxName(version string) (string, error) {
	v := version
	if i := strings.IndexByte(v, ':'); i >= 0 {
		v = v[i+1:]
	}
	v = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, v)
	// A tag is [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} (the OCI distribution spec).
	if v == "" || len(v) > 128 || v[0] == '.' || v[0] == '-' {
		return "", fmt.Errorf("busybox version %q: no image tag can be made of it (got %q)", version, v)
	}
	return BusyboxRepository + ":" + v, nil
}

// elfMachine is goarch's ELF machine, for the architectures a node may be;
// false for the others.
func elfMachine(goarch string) (elf.Machine, bool) {
	switch goarch {
	case "amd64":
		return elf.EM_X86_64, true
	case "arm64":
		return elf.EM_AARCH64, true
	case "arm":
		return elf.EM_ARM, true
	case "386":
		return elf.EM_386, true
	case "riscv64":
		return elf.EM_RISCV, true
	case "ppc64le":
		return elf.EM_PPC64, true
	case "s390x":
		return elf.EM_S390, true
	}
	return 0, false
}

// CheckStatic returns nil if the file at path is an ELF executable for this
// architecture (runtime.GOARCH) without a program interpreter, which is to
// say statically linked, as a binary alone in an image must be. Otherwise
// the error names path and what is wrong (not ELF, the machine, the
// interpreter).
func CheckStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s: not an ELF executable: %w", path, err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("%s: ELF type %v, not an executable", path, f.Type)
	}
	if want, ok := elfMachine(runtime.GOARCH); ok && f.Machine != want {
		return fmt.Errorf("%s: built for %v, this is %s (%v)", path, f.Machine, runtime.GOARCH, want)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		interp := make([]byte, p.Filesz)
		if _, err := p.ReadAt(interp, 0); err != nil {
			return fmt.Errorf("%s: dynamically linked (reading its interpreter: %v)", path, err)
		}
		return fmt.Errorf("%s: dynamically linked (interpreter %s), an image of it alone needs a static binary", path, bytes.TrimRight(interp, "\x00"))
	}
	return nil
}
