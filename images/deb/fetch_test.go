package deb

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/images"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fixtures are this machine's apt-cache output (Debian 12, LC_ALL=C).
func TestParseCandidate(t *testing.T) {
	for _, tc := range []struct {
		fixture, name, want, err string
	}{
		{"policy-bind9-dnsutils.txt", "bind9-dnsutils", "1:9.18.47-1~deb12u1", ""},
		// Installed, and an older version in the table.
		{"policy-libc6-installed.txt", "libc6", "2.36-9+deb12u14", ""},
		{"policy-netcat-virtual.txt", "netcat", "", "no installation candidate"},
		// Output for another package (or none) is no answer.
		{"policy-bind9-dnsutils.txt", "bind9", "", "no candidate for bind9"},
		{"", "nosuchpkg", "", "unknown package"},
	} {
		var out []byte
		if tc.fixture != "" {
			out = readFixture(t, tc.fixture)
		}
		got, err := parseCandidate(out, tc.name)
		if tc.err != "" {
			errorContains(t, err, tc.err)
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseCandidate(%s, %s) = %q, %v; want %q", tc.fixture, tc.name, got, err, tc.want)
		}
	}
}

func TestParseRecord(t *testing.T) {
	bind9 := readFixture(t, "show-bind9-dnsutils.txt")
	other := strings.Replace(string(bind9), "SHA256: 9fa4", "SHA256: 0fa4", 1)
	for _, tc := range []struct {
		name      string
		out       []byte
		pkg, ver  string
		arch, sum string
		err       string
	}{
		{name: "epoch", out: bind9, pkg: "bind9-dnsutils", ver: "1:9.18.47-1~deb12u1",
			arch: "amd64", sum: "9fa4f8311c7f5cb5fac45e86432aca1446c6e379775d3b5a2b1e01d2b394e344"},
		{name: "all", out: readFixture(t, "show-nginx-common.txt"), pkg: "nginx-common", ver: "1.22.1-9+deb12u7",
			arch: "all", sum: "693e802c4f10e3503aa4133720836f75302873fe4c20ef1275b2b72d1313830e"},
		{name: "same record twice", out: append(append(slices.Clone(bind9), '\n'), bind9...), pkg: "bind9-dnsutils",
			ver: "1:9.18.47-1~deb12u1", arch: "amd64", sum: "9fa4f8311c7f5cb5fac45e86432aca1446c6e379775d3b5a2b1e01d2b394e344"},
		{name: "two records", out: []byte(string(bind9) + "\n" + other), pkg: "bind9-dnsutils", ver: "1:9.18.47-1~deb12u1",
			err: "two records"},
		{name: "status only", out: readFixture(t, "show-tzdata-status-only.txt"), pkg: "tzdata", ver: "2025b-0+deb12u2",
			err: "only dpkg's status"},
		{name: "other version", out: bind9, pkg: "bind9-dnsutils", ver: "1:9.18.47-1", err: "no record of this version"},
		{name: "other package", out: bind9, pkg: "bind9-host", ver: "1:9.18.47-1~deb12u1", err: "no record"},
		{name: "bad digest", out: []byte("Package: a\nVersion: 1\nArchitecture: all\nSHA256: 1234\n"), pkg: "a", ver: "1",
			err: `SHA256 "1234"`},
	} {
		got, err := parseRecord(tc.out, tc.pkg, tc.ver)
		if tc.err != "" {
			errorContains(t, err, tc.err)
			continue
		}
		if err != nil || got.arch != tc.arch || got.sha256 != tc.sum {
			t.Errorf("%s: parseRecord = %+v, %v; want %s %s", tc.name, got, err, tc.arch, tc.sum)
		}
	}
}

func TestDebFileName(t *testing.T) {
	for _, tc := range [][4]string{
		{"bind9-dnsutils", "1:9.18.47-1~deb12u1", "amd64", "bind9-dnsutils_1%3a9.18.47-1~deb12u1_amd64.deb"},
		{"netcat-openbsd", "1.219-1", "amd64", "netcat-openbsd_1.219-1_amd64.deb"},
		{"busybox-static", "1:1.35.0-4+deb12u1+b1", "amd64", "busybox-static_1%3a1.35.0-4+deb12u1+b1_amd64.deb"},
		{"nginx-common", "1.22.1-9+deb12u7", "all", "nginx-common_1.22.1-9+deb12u7_all.deb"},
	} {
		if got := debFileName(tc[0], tc[1], tc[2]); got != tc[3] {
			t.Errorf("debFileName(%q, %q, %q) = %q, want %q", tc[0], tc[1], tc[2], got, tc[3])
		}
	}
}

// fakeApt puts apt-cache and apt-get scripts first in PATH: apt-cache
// prints dir/policy/NAME or dir/show/NAME=VERSION for each of its
// arguments (and logs them to dir/apt-cache.log), apt-get download copies
// dir/debs/NAME=VERSION into its working directory; apt-get logs
// "$LC_ALL $*" to dir/apt-get.log.
func fakeApt(t *testing.T, dir string) {
	t.Helper()
	bin := t.TempDir()
	scripts := map[string]string{
		"apt-cache": `#!/bin/sh
echo "$*" >>"$FAKE_APT/apt-cache.log"
cmd=$1; shift
status=0
for a in "$@"; do
  f="$FAKE_APT/$cmd/$a"
  if [ -f "$f" ]; then cat "$f"; echo; elif [ "$cmd" != policy ]; then echo "E: No packages found" >&2; status=100; fi
done
exit $status
`,
		"apt-get": `#!/bin/sh
echo "$LC_ALL $*" >>"$FAKE_APT/apt-get.log"
[ "$1 $2" = "-q download" ] || exit 64
f="$FAKE_APT/debs/$3"
if [ ! -f "$f" ]; then echo "E: Can't find a source to download version '$3'" >&2; exit 100; fi
cp "$f" ./downloaded.deb
`,
	}
	for name, s := range scripts {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"policy", "show", "debs"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_APT", dir)
}

// writeFile writes data to dir/rel.
func writeFile(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, rel), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestFetch(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	stage(t, root, map[string]string{"/usr/bin/kh-fetch": "fetched\n"}, nil)
	deb := buildDeb(t, root, "kh-fetch", "1:1.0-1", "gzip")
	sum, err := images.FileSHA256(deb.File)
	if err != nil {
		t.Fatal(err)
	}
	debData, err := os.ReadFile(deb.File)
	if err != nil {
		t.Fatal(err)
	}

	fake := t.TempDir()
	fakeApt(t, fake)
	writeFile(t, fake, "policy/kh-fetch", []byte("kh-fetch:\n  Installed: (none)\n  Candidate: 1:1.0-1\n  Version table:\n     1:1.0-1 500\n"))
	writeFile(t, fake, "show/kh-fetch=1:1.0-1", []byte("Package: kh-fetch\nVersion: 1:1.0-1\nArchitecture: all\nSHA256: "+sum+"\n\n"))
	writeFile(t, fake, "debs/kh-fetch=1:1.0-1", debData)
	writeFile(t, fake, "policy/kh-bad", []byte("kh-bad:\n  Installed: (none)\n  Candidate: 2.0\n"))
	writeFile(t, fake, "show/kh-bad=2.0", []byte("Package: kh-bad\nVersion: 2.0\nArchitecture: amd64\nSHA256: "+strings.Repeat("0", 64)+"\n"))
	writeFile(t, fake, "debs/kh-bad=2.0", debData)
	calls := func() []string {
		b, err := os.ReadFile(filepath.Join(fake, "apt-get.log"))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })
	}

	cache := filepath.Join(t.TempDir(), "cache")
	want := Package{Name: "kh-fetch", Version: "1:1.0-1", Arch: "all", SHA256: sum,
		File: filepath.Join(cache, "kh-fetch_1%3a1.0-1_all.deb")}
	fetchOne := func(spec string) {
		t.Helper()
		got, err := Fetch(ctx, cache, spec)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("Fetch(%s) = %+v, want [%+v]", spec, got, want)
		}
		if s, err := images.FileSHA256(want.File); err != nil || s != sum {
			t.Fatalf("%s: SHA256 %s, %v; want %s", want.File, s, err, sum)
		}
	}

	fetchOne("kh-fetch")
	if c := calls(); !slices.Equal(c, []string{"C -q download kh-fetch=1:1.0-1"}) {
		t.Fatalf("apt-get calls %q, want one download under LC_ALL=C", c)
	}
	fetchOne("kh-fetch=1:1.0-1")
	if c := calls(); len(c) != 1 {
		t.Errorf("apt-get calls %q: the cached file was not reused", c)
	}
	if err := os.WriteFile(want.File, []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	fetchOne("kh-fetch")
	if c := calls(); len(c) != 2 {
		t.Errorf("apt-get calls %q: the corrupt cached file was not fetched again", c)
	}

	// Several packages: one apt-cache policy (of the unpinned) and one
	// apt-cache show for all of them.
	log := filepath.Join(fake, "apt-cache.log")
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if got, err := Fetch(ctx, cache, "kh-fetch", "kh-fetch=1:1.0-1"); err != nil || len(got) != 2 || got[0] != want || got[1] != want {
		t.Fatalf("Fetch of two: %+v, %v", got, err)
	}
	if b, err := os.ReadFile(log); err != nil || string(b) != "policy kh-fetch\nshow kh-fetch=1:1.0-1 kh-fetch=1:1.0-1\n" {
		t.Errorf("apt-cache calls %q (%v), want one policy and one show", b, err)
	}

	tree, err := Unpack(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if files, err := tree.Select("/usr/bin/kh-fetch"); err != nil || string(byPath(files)["/usr/bin/kh-fetch"].Data) != "fetched\n" {
		t.Errorf("Select of the fetched package: %q, %v", paths(files), err)
	}

	for _, tc := range []struct {
		pkgs []string
		want []string
	}{
		{[]string{"kh-fetch", "kh-bad"}, []string{"package kh-bad=2.0", "SHA256 " + sum, "apt-cache show says 0000"}},
		{[]string{"kh-none"}, []string{"package kh-none", "unknown package"}},
		{[]string{"kh-fetch=9.9"}, []string{"package kh-fetch=9.9", "No packages found"}},
		{[]string{"-oDebug::pkgAcquire=1"}, []string{`"-oDebug::pkgAcquire=1"`, "not a Debian package name"}},
		{[]string{"KH-fetch"}, []string{`"KH-fetch"`}},
		{[]string{"kh-fetch="}, []string{`"kh-fetch="`}},
		{[]string{"kh-fetch=1.0 x"}, []string{`"kh-fetch=1.0 x"`}},
	} {
		got, err := Fetch(ctx, cache, tc.pkgs...)
		errorContains(t, err, tc.want...)
		if got != nil {
			t.Errorf("Fetch(%q) returned packages with its error", tc.pkgs)
		}
	}
	if c := calls(); len(c) != 3 {
		t.Errorf("apt-get calls %q, want 3 (the last for kh-bad)", c)
	}
	entries, err := os.ReadDir(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != filepath.Base(want.File) {
		t.Errorf("the cache holds %v, want only %s (no bad file, no temporary directory)", entries, filepath.Base(want.File))
	}
}

// TestFetchNetwork downloads netcat-openbsd and the libraries nc needs
// from the archive apt is configured with, unpacks them and runs nc from
// the selection. It runs only with KUBEHARNESS_DEB_NETWORK=1.
func TestFetchNetwork(t *testing.T) {
	if os.Getenv("KUBEHARNESS_DEB_NETWORK") != "1" {
		t.Skip("downloads from the Debian archive; set KUBEHARNESS_DEB_NETWORK=1 to run it")
	}
	for _, prog := range []string{"apt-get", "apt-cache", "dpkg-deb"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Fatalf("%s: %v", prog, err)
		}
	}
	ctx := context.Background()
	cache := t.TempDir()
	pkgs, err := Fetch(ctx, cache, "netcat-openbsd", "libbsd0", "libmd0", "libc6")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		fi, err := os.Stat(p.File)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s %s: %s, %d bytes, sha256 %s", p.Name, p.Version, p.Arch, filepath.Base(p.File), fi.Size(), p.SHA256)
	}
	// A second Fetch finds them all in the cache.
	before, err := os.Stat(pkgs[0].File)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Fetch(ctx, cache, pkgs[0].Name+"="+pkgs[0].Version)
	if err != nil {
		t.Fatal(err)
	}
	if after, err := os.Stat(again[0].File); err != nil || !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the second Fetch replaced %s", again[0].File)
	}

	tree, err := Unpack(ctx, pkgs...)
	if err != nil {
		t.Fatal(err)
	}
	files, err := tree.Select("/bin/nc.openbsd")
	if err != nil {
		t.Fatal(err)
	}
	var libs []string
	for _, f := range files {
		if !f.Mode.IsDir() {
			libs = append(libs, f.Path)
		}
	}
	t.Logf("Select(/bin/nc.openbsd): %q", libs)
	for _, want := range []string{"libbsd.so.0", "libmd.so.0", "libc.so.6", "ld-linux"} {
		if !slices.ContainsFunc(libs, func(p string) bool { return strings.Contains(filepath.Base(p), want) }) {
			t.Errorf("no %s in the selection", want)
		}
	}
	dir := t.TempDir()
	materialize(t, dir, files)
	out, _ := runChrooted(t, dir, "/bin/nc.openbsd", "-h")
	if !strings.Contains(out, "OpenBSD netcat") {
		t.Errorf("nc.openbsd -h in a root of the selection printed %q, want its usage", out)
	}
}
