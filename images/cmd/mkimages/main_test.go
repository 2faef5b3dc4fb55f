package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/images"
)

// exec.Cmd and the layers' compression run goroutines.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRefusesBusybox(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, busybox string
		want          []string
	}{
		{"missing", filepath.Join(dir, "nope"), []string{filepath.Join(dir, "nope") + ": missing", "give a static busybox"}},
		{"dynamic", "/bin/ls", []string{"/bin/ls: dynamically linked (interpreter /", "give a static busybox"}},
		{"not ELF", script, []string{script + ": not an ELF executable", "give a static busybox"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			err := run(context.Background(), []string{"-out", out, "-busybox", tc.busybox, "-busybox-version", "1.0"}, new(bytes.Buffer), new(bytes.Buffer))
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("error %v, want one containing %q", err, w)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s exists (%v); nothing should be written", out, err)
			}
		})
	}
}

func TestRefusesArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-out DIR is required"},
		{[]string{"-out", t.TempDir(), "extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
	} {
		err := run(context.Background(), tc.args, new(bytes.Buffer), new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("mkimages %q: error %v, want one containing %q", tc.args, err, tc.want)
		}
	}
}

// TestWritesTheImages runs mkimages twice on Debian's busybox-static: the
// archives hold the images under their names, CoreDNS has the plugins a
// cluster's DNS needs, and the second run gives the same digests (the pause
// and coredns builds are reproducible).
func TestWritesTheImages(t *testing.T) {
	const busybox = "/bin/busybox"
	if err := images.CheckStatic(busybox); err != nil {
		t.Skipf("%v: install Debian's busybox-static (.ci/run does)", err)
	}
	const version = "1:1.0-1+b1"
	bbName := "kubeharness.local/busybox:1.0-1_b1"
	var printed [2]string
	for i := range printed {
		out := filepath.Join(t.TempDir(), "agent", "images")
		var stdout bytes.Buffer
		if err := run(context.Background(), []string{"-out", out, "-busybox", busybox, "-busybox-version", version}, &stdout, new(bytes.Buffer)); err != nil {
			t.Fatal(err)
		}
		printed[i] = strings.ReplaceAll(stdout.String(), out, "OUT")
		line := regexp.MustCompile(`^OUT/(pause|busybox|coredns|netbench)\.tar: (\S+) id sha256:[0-9a-f]{64} manifest sha256:[0-9a-f]{64}, [0-9]+ bytes$`)
		lines := strings.Split(strings.TrimSuffix(printed[i], "\n"), "\n")
		if len(lines) != 4 || slices.ContainsFunc(lines, func(l string) bool { return !line.MatchString(l) }) {
			t.Fatalf("printed %q, want a line per archive", printed[i])
		}

		pause := load(t, filepath.Join(out, "pause.tar"), images.PauseName)
		cf, err := pause.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{"/pause"}) || cf.Config.User != images.PauseUser {
			t.Errorf("pause: entrypoint %q user %q", cf.Config.Entrypoint, cf.Config.User)
		}
		bin := filepath.Join(t.TempDir(), "pause")
		if err := os.WriteFile(bin, file(t, pause, "pause"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := images.CheckStatic(bin); err != nil {
			t.Errorf("the image's /pause: %v", err)
		}

		bb := load(t, filepath.Join(out, "busybox.tar"), bbName)
		list, err := exec.Command(busybox, "--list").Output()
		if err != nil {
			t.Fatal(err)
		}
		// Every applet but busybox itself, which is the binary.
		applets := slices.DeleteFunc(strings.Fields(string(list)), func(a string) bool { return a == "busybox" })
		links := symlinks(t, bb)
		if len(links) != len(applets) {
			t.Errorf("busybox: %d symlinks in bin/, busybox --list names %d applets", len(links), len(applets))
		}
		for _, a := range []string{"sh", "echo", "sleep", "wget", "nc", "ping", "cat", "hostname"} {
			if links["bin/"+a] != "busybox" {
				t.Errorf("busybox: bin/%s → %q, want busybox", a, links["bin/"+a])
			}
		}
		want, err := os.ReadFile(busybox)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(file(t, bb, "bin/busybox"), want) {
			t.Errorf("busybox: bin/busybox differs from %s", busybox)
		}

		coredns := load(t, filepath.Join(out, "coredns.tar"), images.CoreDNSName)
		if cf, err = coredns.ConfigFile(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{"/coredns"}) || cf.Config.User != images.CoreDNSUser {
			t.Errorf("coredns: entrypoint %q user %q", cf.Config.Entrypoint, cf.Config.User)
		}
		bin = filepath.Join(t.TempDir(), "coredns")
		if err := os.WriteFile(bin, file(t, coredns, "coredns"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := images.CheckStatic(bin); err != nil {
			t.Errorf("the image's /coredns: %v", err)
		}
		plugins, err := exec.Command(bin, "-plugins").Output()
		if err != nil {
			t.Fatalf("coredns -plugins: %v", err)
		}
		for _, p := range []string{"kubernetes", "forward", "hosts", "cache", "health", "ready", "prometheus", "loop", "reload", "errors"} {
			if !slices.Contains(strings.Fields(string(plugins)), p) {
				t.Errorf("coredns -plugins lists no %s:\n%s", p, plugins)
			}
		}
		netbench := load(t, filepath.Join(out, "netbench.tar"), images.NetbenchName)
		if cf, err = netbench.ConfigFile(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(cf.Config.Entrypoint, []string{"/netbench"}) || cf.Config.User != images.NetbenchUser {
			t.Errorf("netbench: entrypoint %q user %q", cf.Config.Entrypoint, cf.Config.User)
		}
	}
	if printed[0] != printed[1] {
		t.Errorf("two runs differ:\n%s\n%s", printed[0], printed[1])
	}
}

// load reads the image tagged ref from the archive at path.
func load(t *testing.T, path, ref string) v1.Image {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("loading %s as %s: %v", path, ref, err)
	}
	return img
}
