package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kubeharness/kubeharness/images"
	"github.com/kubeharness/kubeharness/images/busybox"
	"github.com/kubeharness/kubeharness/images/deb"
)

// A recipe makes the image of one plan from the builder's programs,
// upstream files and Debian packages; tag is the plan's first name's tag.
type recipe func(ctx context.Context, b *builder, variant, tag string) (images.Spec, error)

// The programs of the module's build list (-module) the images run.
const (
	agnhostPackage    = "k8s.io/kubernetes/test/images/agnhost"
	nnpPackage        = "k8s.io/kubernetes/test/images/nonewprivs"
	sampleAPIPackage  = "k8s.io/sample-apiserver"
	etcdPackage       = "go.etcd.io/etcd/server/v3"
	pausePackage      = "github.com/kubeharness/kubeharness/images/pause"
	kubernetesModule  = "k8s.io/kubernetes"
	debianPathEnvLine = images.DefaultPath
)

// Files every image of Debian programs has, which dpkg's maintainer
// scripts would have made: users and groups, the resolver's order
// (files, then DNS), /tmp.
var (
	passwd = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group  = "root:x:0:\nnogroup:x:65534:\n"
)

func baseFiles(extraPasswd, extraGroup string) []images.File {
	return []images.File{
		{Path: "/etc", Mode: fs.ModeDir | 0o755},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte(passwd + extraPasswd)},
		{Path: "/etc/group", Mode: 0o644, Data: []byte(group + extraGroup)},
		{Path: "/etc/nsswitch.conf", Mode: 0o644, Data: []byte("passwd: files\ngroup: files\nhosts: files dns\nnetworks: files\n")},
		{Path: "/root", Mode: fs.ModeDir | 0o700},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
		{Path: "/var/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
}

// builder builds the plans' images, keeping what several share.
type builder struct {
	opts     options
	stdout   io.Writer
	programs map[string][]byte
	k8sDir   string
	// agnhost is the newest agnhost tag of the list, the version of the
	// agnhost program in kitten and nautilus.
	agnhost string
	// trees are the unpacked Debian packages, by the packages asked for.
	trees map[string]debTree
	// bbProgram and bbApplets are busybox, once built.
	bbProgram []byte
	bbApplets []string
}

// debTree is some packages, unpacked, and their versions.
type debTree struct {
	tree     *deb.Tree
	versions []string
}

// program is the static binary of pkg, built in the -module directory
// (the images module for the project's own programs).
func (b *builder) program(ctx context.Context, pkg string, ldflagsX ...string) ([]byte, error) {
	key := pkg + " " + strings.Join(ldflagsX, " ")
	if p, ok := b.programs[key]; ok {
		return p, nil
	}
	dir, flags := b.opts.module, b.opts.goFlags
	if strings.HasPrefix(pkg, "github.com/kubeharness/kubeharness/images/") {
		dir, flags = ".", nil
	}
	fmt.Fprintf(b.stdout, "building %s\n", pkg)
	p, err := images.GoBuild(ctx, b.opts.goCmd, dir, pkg, flags, ldflagsX...)
	if err != nil {
		return nil, err
	}
	if b.programs == nil {
		b.programs = map[string][]byte{}
	}
	b.programs[key] = p
	return p, nil
}

// upstream reads the file rel (slash-separated) of the k8s.io/kubernetes
// module the -module directory builds with.
func (b *builder) upstream(ctx context.Context, rel string) ([]byte, error) {
	if b.k8sDir == "" {
		args := append([]string{"list", "-m", "-f", "{{.Dir}}"}, b.opts.goFlags...)
		args = append(args, kubernetesModule)
		cmd := exec.CommandContext(ctx, b.opts.goCmd, args...)
		cmd.Dir = b.opts.module
		out, err := cmd.Output()
		dir := strings.TrimSpace(string(out))
		if err != nil || dir == "" {
			return nil, fmt.Errorf("the directory of %s in %s (%s): %v", kubernetesModule, b.opts.module, strings.Join(cmd.Args, " "), err)
		}
		b.k8sDir = dir
	}
	return os.ReadFile(filepath.Join(b.k8sDir, filepath.FromSlash(rel)))
}

// debian returns paths of Debian packages pkgs (with everything they
// depend on downloaded, for the libraries) and what they need, see
// [deb.Tree.Select].
func (b *builder) debian(ctx context.Context, pkgs []string, paths ...string) ([]images.File, []string, error) {
	key := strings.Join(pkgs, " ")
	t, ok := b.trees[key]
	if !ok {
		all, err := depends(ctx, pkgs)
		if err != nil {
			return nil, nil, err
		}
		fmt.Fprintf(b.stdout, "Debian packages for %s: %d\n", key, len(all))
		got, err := deb.Fetch(ctx, b.opts.debs, all...)
		if err != nil {
			return nil, nil, err
		}
		if t.tree, err = deb.Unpack(ctx, got...); err != nil {
			return nil, nil, err
		}
		for _, p := range got {
			t.versions = append(t.versions, p.Name+"="+p.Version)
		}
		if b.trees == nil {
			b.trees = map[string]debTree{}
		}
		b.trees[key] = t
	}
	files, err := t.tree.Select(paths...)
	if err != nil {
		return nil, nil, err
	}
	return files, t.versions, nil
}

// depends is pkgs and every package they depend on (Depends and
// Pre-Depends, recursively, as apt-cache depends lists them; a virtual
// package is left out, the packages providing it are in the list).
func depends(ctx context.Context, pkgs []string) ([]string, error) {
	args := append([]string{"depends", "--recurse", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces", "--no-enhances"}, pkgs...)
	cmd := exec.CommandContext(ctx, "apt-cache", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the dependencies of %s: apt-cache depends: %w", strings.Join(pkgs, " "), err)
	}
	return parseDepends(out), nil
}

// parseDepends reads `apt-cache depends --recurse`: the package names
// are the lines that do not start with a space, virtual ones in <>.
func parseDepends(out []byte) []string {
	seen := map[string]bool{}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == ' ' || strings.HasPrefix(l, "<") {
			continue
		}
		n, _, _ := strings.Cut(strings.TrimSpace(l), ":")
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// merge is the files of lists, each path once (the first list's entry).
func merge(lists ...[]images.File) []images.File {
	seen := map[string]bool{}
	var out []images.File
	for _, l := range lists {
		for _, f := range l {
			if p := path.Clean(f.Path); !seen[p] {
				seen[p] = true
				out = append(out, f)
			}
		}
	}
	return out
}

func pauseImage(ctx context.Context, b *builder, _, _ string) (images.Spec, error) {
	p, err := b.program(ctx, pausePackage)
	if err != nil {
		return images.Spec{}, err
	}
	return images.PauseSpec(p), nil
}

// busyboxImage is upstream's busybox image (Docker's busybox:1.37.0):
// busybox built as that image's is (images/busybox), its ash as /bin/sh,
// an applet per /bin name, and /usr/bin/env.
func busyboxImage(ctx context.Context, b *builder, _, _ string) (images.Spec, error) {
	bin, applets, err := b.busybox(ctx)
	if err != nil {
		return images.Spec{}, err
	}
	spec, err := images.BusyboxSpec(bin, applets)
	if err != nil {
		return images.Spec{}, err
	}
	spec.Files = append(spec.Files, images.File{Path: "/usr/bin/env", Mode: fs.ModeSymlink | 0o777, Target: "../../bin/env"})
	spec.CreatedBy = "kubeharness e2eimages: busybox " + busybox.Version + ", upstream's source built as upstream's image's (static)"
	return spec, nil
}

// busybox is the busybox program of the images (images/busybox) and its
// applets, built once.
func (b *builder) busybox(ctx context.Context) ([]byte, []string, error) {
	if b.bbProgram == nil {
		p, err := busybox.Build(ctx, b.opts.busybox)
		if err != nil {
			return nil, nil, err
		}
		applets, err := busybox.Applets(ctx, p)
		if err != nil {
			return nil, nil, err
		}
		b.bbProgram, b.bbApplets = p, applets
	}
	return b.bbProgram, b.bbApplets, nil
}

// agnhostUserland is the userland of agnhost, as Alpine's in upstream's:
// busybox (images/busybox) with its ash as /bin/sh and its applets as
// /bin/APPLET except where a Debian program below has the name, and from
// Debian curl, netcat-openbsd as nc, dig, nslookup, getent, bash, socat.
// busybox's ash looks commands up in PATH (it is not a standalone shell),
// so `sh -c 'nc -v …'` runs netcat-openbsd as on Alpine.
func agnhostUserland(ctx context.Context, b *builder) ([]images.File, []string, error) {
	programs := []string{"/usr/bin/curl", "/bin/nc.openbsd", "/usr/bin/dig", "/usr/bin/nslookup", "/usr/bin/getent", "/bin/bash", "/usr/bin/socat"}
	files, versions, err := b.debian(ctx, []string{"curl", "netcat-openbsd", "bind9-dnsutils", "libc-bin", "bash", "socat"}, programs...)
	if err != nil {
		return nil, nil, err
	}
	bin, applets, err := b.busybox(ctx)
	if err != nil {
		return nil, nil, err
	}
	taken := map[string]bool{"nc": true, "busybox": true}
	for _, p := range programs {
		taken[path.Base(p)] = true
	}
	files = append(files,
		images.File{Path: "/bin/busybox", Mode: 0o755, Data: bin},
		images.File{Path: "/bin/nc", Mode: fs.ModeSymlink | 0o777, Target: "nc.openbsd"})
	for _, a := range applets {
		if !taken[a] && !strings.ContainsAny(a, "/\x00") {
			files = append(files, images.File{Path: "/bin/" + a, Mode: fs.ModeSymlink | 0o777, Target: "busybox"})
		}
	}
	return files, append([]string{"busybox=" + busybox.Version}, versions...), nil
}

// agnhostFiles are agnhost's image files (upstream's Dockerfile): the
// program at the tag's version, /agnhost-2, the porter's certificate,
// /uploads, its user and group, and the Debian userland.
func agnhostFiles(ctx context.Context, b *builder, variant, tag string) ([]images.File, []string, error) {
	version := tag
	prev, isPrev := strings.CutPrefix(variant, "prev:")
	if isPrev {
		version = prev // the newest's program, see plan
	}
	var x []string
	if version != "" {
		x = append(x, "main.Version="+version)
	}
	prog, err := b.program(ctx, agnhostPackage, x...)
	if err != nil {
		return nil, nil, err
	}
	crt, err := b.upstream(ctx, "test/images/agnhost/porter/localhost.crt")
	if err != nil {
		return nil, nil, err
	}
	key, err := b.upstream(ctx, "test/images/agnhost/porter/localhost.key")
	if err != nil {
		return nil, nil, err
	}
	userland, versions, err := agnhostUserland(ctx, b)
	if err != nil {
		return nil, nil, err
	}
	own := []images.File{
		{Path: "/agnhost", Mode: 0o755, Data: prog},
		{Path: "/agnhost-2", Mode: fs.ModeSymlink | 0o777, Target: "agnhost"},
		{Path: "/localhost.crt", Mode: 0o644, Data: crt},
		{Path: "/localhost.key", Mode: 0o644, Data: key},
		{Path: "/uploads", Mode: fs.ModeDir | 0o755},
	}
	if isPrev {
		own = append(own, images.File{Path: "/agnhost-prev", Mode: 0o644, Data: []byte("agnhost:" + tag + " is a stand-in: the newer agnhost under this tag\n")})
	}
	base := baseFiles("user-defined-in-image:x:1000:50000::/tmp:/bin/sh\n", "group-defined-in-image:x:50000:user-defined-in-image\n")
	return merge(own, base, userland), versions, nil
}

func agnhostImage(ctx context.Context, b *builder, variant, tag string) (images.Spec, error) {
	files, versions, err := agnhostFiles(ctx, b, variant, tag)
	if err != nil {
		return images.Spec{}, err
	}
	return images.Spec{
		Files: files, Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"},
		Env: []string{debianPathEnvLine}, WorkingDir: "/",
		CreatedBy: "kubeharness e2eimages: agnhost " + tag + " from " + kubernetesModule + "; " + strings.Join(versions, " "),
	}, nil
}

// webImage is kitten's or nautilus's image: agnhost's files, the
// picture and data.json of upstream's directory, run as test-webserver.
func webImage(which string) recipe {
	return func(ctx context.Context, b *builder, _, tag string) (images.Spec, error) {
		files, versions, err := agnhostFiles(ctx, b, "", b.agnhost)
		if err != nil {
			return images.Spec{}, err
		}
		jpg, err := b.upstream(ctx, "test/images/"+which+"/html/"+which+".jpg")
		if err != nil {
			return images.Spec{}, err
		}
		data, err := b.upstream(ctx, "test/images/"+which+"/html/data.json")
		if err != nil {
			return images.Spec{}, err
		}
		own := []images.File{
			{Path: "/" + which + ".jpg", Mode: 0o644, Data: jpg},
			{Path: "/data.json", Mode: 0o644, Data: data},
		}
		if which == "kitten" {
			own = append(own, images.File{Path: "/etc/os-release", Mode: 0o644, Data: []byte(
				"NAME=\"kubeharness kitten\"\nID=kubeharness\nPRETTY_NAME=\"kubeharness kitten, a stand-in for the Alpine Linux based upstream image\"\n")})
		}
		return images.Spec{
			Files: merge(own, files), Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"},
			Env: []string{debianPathEnvLine}, WorkingDir: "/",
			CreatedBy: "kubeharness e2eimages: " + which + " " + tag + " (agnhost with upstream's " + which + " files); " + strings.Join(versions, " "),
		}, nil
	}
}

// nginxImage is Debian's nginx serving /usr/share/nginx/html on port 80,
// logging to the container's output, in the foreground.
func nginxImage(ctx context.Context, b *builder, _, tag string) (images.Spec, error) {
	files, versions, err := b.debian(ctx, []string{"nginx", "nginx-common"}, "/usr/sbin/nginx", "/etc/nginx/mime.types", "/usr/share/nginx/html")
	if err != nil {
		return images.Spec{}, err
	}
	conf := "user nobody nogroup;\nworker_processes 1;\nerror_log stderr;\npid /run/nginx.pid;\nevents {}\nhttp {\n  include mime.types;\n  access_log /dev/stdout;\n  server {\n    listen 80;\n    root /usr/share/nginx/html;\n  }\n}\n"
	own := []images.File{
		{Path: "/etc/nginx/nginx.conf", Mode: 0o644, Data: []byte(conf)},
		{Path: "/var/log/nginx", Mode: fs.ModeDir | 0o755},
		{Path: "/var/lib/nginx", Mode: fs.ModeDir | 0o755},
		{Path: "/run", Mode: fs.ModeDir | 0o755},
	}
	return images.Spec{
		Files: merge(own, baseFiles("", ""), files), Cmd: []string{"nginx", "-g", "daemon off;"},
		Env: []string{debianPathEnvLine}, WorkingDir: "/",
		CreatedBy: "kubeharness e2eimages: nginx " + tag + " stand-in, Debian " + strings.Join(versions, " "),
	}, nil
}

// dnsTestingImage is glibc-dns-testing: Debian's dash as /bin/sh,
// coreutils, bash, dig and getent, and base-files' os-release.
func dnsTestingImage(ctx context.Context, b *builder, _, tag string) (images.Spec, error) {
	core, v1, err := b.debian(ctx, []string{"coreutils"}, "/bin", "/usr/bin")
	if err != nil {
		return images.Spec{}, err
	}
	rest, v2, err := b.debian(ctx, []string{"dash", "bash", "bind9-dnsutils", "libc-bin", "base-files"},
		"/bin/dash", "/bin/bash", "/usr/bin/dig", "/usr/bin/nslookup", "/usr/bin/host", "/usr/bin/getent", "/etc/os-release", "/usr/lib/os-release")
	if err != nil {
		return images.Spec{}, err
	}
	own := []images.File{{Path: "/bin/sh", Mode: fs.ModeSymlink | 0o777, Target: "dash"}}
	return images.Spec{
		Files: merge(own, baseFiles("", ""), rest, core), Cmd: []string{"bash"},
		Env: []string{debianPathEnvLine}, WorkingDir: "/",
		CreatedBy: "kubeharness e2eimages: glibc-dns-testing " + tag + ", Debian " + strings.Join(append(v1, v2...), " "),
	}, nil
}

func nonewprivsImage(ctx context.Context, b *builder, _, tag string) (images.Spec, error) {
	p, err := b.program(ctx, nnpPackage)
	if err != nil {
		return images.Spec{}, err
	}
	return images.Spec{
		Files: []images.File{{Path: "/usr/local/bin/nnp", Mode: fs.ModeSetuid | 0o755, Data: p}},
		Cmd:   []string{"nnp"}, Env: []string{debianPathEnvLine}, WorkingDir: "/",
		CreatedBy: "kubeharness e2eimages: nonewprivs " + tag + " (" + nnpPackage + ")",
	}, nil
}

func sampleAPIServerImage(ctx context.Context, b *builder, _, tag string) (images.Spec, error) {
	p, err := b.program(ctx, sampleAPIPackage)
	if err != nil {
		return images.Spec{}, err
	}
	return images.Spec{
		Files:      merge([]images.File{{Path: "/sample-apiserver", Mode: 0o755, Data: p}}, baseFiles("", "")),
		Entrypoint: []string{"/sample-apiserver"}, Env: []string{debianPathEnvLine}, WorkingDir: "/",
		CreatedBy: "kubeharness e2eimages: sample-apiserver " + tag + " stand-in (" + sampleAPIPackage + " of the minor)",
	}, nil
}

func etcdImage(ctx context.Context, b *builder, _, tag string) (images.Spec, error) {
	p, err := b.program(ctx, etcdPackage)
	if err != nil {
		return images.Spec{}, err
	}
	return images.Spec{
		Files: merge([]images.File{
			{Path: "/usr/local/bin/etcd", Mode: 0o755, Data: p},
			{Path: "/var/etcd", Mode: fs.ModeDir | 0o755},
			{Path: "/var/lib/etcd", Mode: fs.ModeDir | 0o755},
		}, baseFiles("", "")),
		Cmd: []string{"/usr/local/bin/etcd"}, Env: []string{debianPathEnvLine}, WorkingDir: "/var/lib/etcd/",
		CreatedBy: "kubeharness e2eimages: etcd " + tag + " (" + etcdPackage + " of the minor's build)",
	}, nil
}
