package main

import (
	"bytes"
	"context"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeharness/kubeharness/images"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// list137 is part of `e2e.test --list-images` of v1.37.2.
const list137 = `registry.k8s.io/e2e-test-images/agnhost:2.66.1
registry.k8s.io/e2e-test-images/agnhost:2.55
gcr.io/k8s-authenticated-test/agnhost:2.6
invalid.registry.k8s.io/invalid/alpine:3.1
registry.k8s.io/e2e-test-images/nginx:1.27.0-2
registry.k8s.io/e2e-test-images/nginx:1.28.0-2
registry.k8s.io/e2e-test-images/busybox:1.37.0-2
registry.k8s.io/sig-storage/csi-attacher:v4.12.0
registry.k8s.io/e2e-test-images/resource-consumer:1.14
registry.k8s.io/etcd:3.7.0-0
registry.k8s.io/pause:3.10.2

`

func writeList(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "list.txt")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// TestPlans: one archive per recipe with every tag of it; an older agnhost
// tag an archive of its own made from the newest; the images tests expect
// to fail pulling never built; the rest listed as not built, with why.
func TestPlans(t *testing.T) {
	names, err := readList(writeList(t, list137))
	require.NoError(t, err)
	plans, err := makePlans(names)
	require.NoError(t, err)
	byFile := map[string]plan{}
	for _, p := range plans {
		byFile[p.file] = p
	}
	assert.Equal(t, []string{"registry.k8s.io/e2e-test-images/agnhost:2.66.1"}, byFile["agnhost"].names)
	assert.Equal(t, "", byFile["agnhost"].variant)
	prev := byFile["agnhost-2.55"]
	assert.Equal(t, []string{"registry.k8s.io/e2e-test-images/agnhost:2.55"}, prev.names)
	assert.Equal(t, "prev:2.66.1", prev.variant, "the older tag is the newest's program")
	assert.Contains(t, prev.note, "stand-in")
	assert.Equal(t, []string{"registry.k8s.io/e2e-test-images/nginx:1.27.0-2", "registry.k8s.io/e2e-test-images/nginx:1.28.0-2"}, byFile["nginx"].names, "one nginx archive, both tags")
	for _, f := range []string{"never-alpine", "never-agnhost"} {
		require.Contains(t, byFile, f)
		assert.Nil(t, byFile[f].recipe, f)
		assert.Contains(t, byFile[f].note, "never built")
	}
	assert.Nil(t, byFile["unused"].recipe)
	assert.ElementsMatch(t, []string{"registry.k8s.io/sig-storage/csi-attacher:v4.12.0", "registry.k8s.io/e2e-test-images/resource-consumer:1.14"}, byFile["unused"].names)
	for _, f := range []string{"agnhost", "agnhost-2.55", "nginx", "busybox", "etcd", "pause"} {
		assert.NotNil(t, byFile[f].recipe, f)
	}
}

func TestReadListErrors(t *testing.T) {
	_, err := readList(writeList(t, "registry.k8s.io/pause:3.10.2\nnot an image\n"))
	assert.ErrorContains(t, err, ":2:")
	_, err = readList(writeList(t, "\n\n"))
	assert.ErrorContains(t, err, "no image names")
	_, err = readList(filepath.Join(t.TempDir(), "missing"))
	assert.Error(t, err)
}

func TestVersionLess(t *testing.T) {
	assert.True(t, versionLess("2.55", "2.66.1"))
	assert.True(t, versionLess("2.9", "2.10"), "numerically, not as text")
	assert.False(t, versionLess("2.66.1", "2.63.0"))
	assert.True(t, versionLess("2.66", "2.66.1"))
	assert.False(t, versionLess("2.66.1", "2.66.1"))
}

func TestParseDepends(t *testing.T) {
	out := []byte("curl\n  Depends: libc6\n  Depends: <awk>\n    mawk\nlibc6\n<awk>\nmawk\nlibc6:amd64\n")
	assert.Equal(t, []string{"curl", "libc6", "mawk"}, parseDepends(out))
}

func TestMerge(t *testing.T) {
	got := merge([]images.File{{Path: "/a", Data: []byte("1")}, {Path: "/b/"}}, []images.File{{Path: "/a", Data: []byte("2")}, {Path: "/b"}, {Path: "/c"}})
	require.Len(t, got, 3)
	assert.Equal(t, "1", string(got[0].Data), "the first list's entry wins")
}

// TestServe: the mirror serves every image of the archives under its
// repository without the registry host, with the archive's config
// (the image ID the node imported), and only on loopback.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	img, err := images.Build(images.Spec{Files: []images.File{{Path: "/x", Mode: 0o644, Data: []byte("x")}}, Cmd: []string{"/x"}})
	require.NoError(t, err)
	refs := []string{"registry.k8s.io/e2e-test-images/kitten:1.8", "registry.k8s.io/e2e-test-images/nautilus:1.8"}
	require.NoError(t, images.WriteRefs(filepath.Join(dir, "web.tar"), refs, img))
	wantID, err := img.ConfigName()
	require.NoError(t, err)

	assert.ErrorContains(t, serve(context.Background(), "0.0.0.0:0", dir, t.TempDir(), "", &bytes.Buffer{}), "loopback")

	ctx, cancel := context.WithCancel(context.Background())
	ready := filepath.Join(t.TempDir(), "ready")
	var log bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- serve(ctx, "127.0.0.1:0", dir, t.TempDir(), ready, &log) }()
	var addr string
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(ready)
		addr = strings.TrimSpace(string(b))
		return err == nil && addr != ""
	}, 30*time.Second, 50*time.Millisecond)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	for _, r := range []string{"e2e-test-images/kitten:1.8", "e2e-test-images/nautilus:1.8"} {
		ref, err := name.NewTag(addr+"/"+r, name.Insecure)
		require.NoError(t, err)
		got, err := remote.Image(ref, remote.WithTransport(tr))
		require.NoError(t, err, r)
		id, err := got.ConfigName()
		require.NoError(t, err)
		assert.Equal(t, wantID, id, r)
	}
	missing, err := name.NewTag(addr+"/e2e-test-images/agnhost:2.66.1", name.Insecure)
	require.NoError(t, err)
	_, err = remote.Image(missing, remote.WithTransport(tr))
	assert.Error(t, err, "an image of no archive is not served")
	cancel()
	require.NoError(t, <-done)
}

func TestServeNeedsArchives(t *testing.T) {
	err := serve(context.Background(), "127.0.0.1:0", t.TempDir(), t.TempDir(), "", &bytes.Buffer{})
	assert.ErrorContains(t, err, "no image archive")
}

func TestRunArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-list", "x", "-out", "y"},
		{"-serve", "127.0.0.1:0"},
		{"-list", "x", "-out", "y", "-module", "m", "-debs", "d", "extra"},
	} {
		err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{})
		assert.Error(t, err, "%q", args)
	}
}

// TestBaseFiles: the files dpkg's scripts would have made, with the
// modes the tests rely on (a world-writable sticky /tmp).
func TestBaseFiles(t *testing.T) {
	files := baseFiles("u:x:1000:50000::/tmp:/bin/sh\n", "g:x:50000:u\n")
	byPath := map[string]images.File{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	assert.Equal(t, fs.ModeDir|fs.ModeSticky|0o777, byPath["/tmp"].Mode)
	assert.Contains(t, string(byPath["/etc/passwd"].Data), "\nu:x:1000:50000:")
	assert.Contains(t, string(byPath["/etc/nsswitch.conf"].Data), "hosts: files dns")
	_, err := images.Layer(files)
	assert.NoError(t, err)
}
