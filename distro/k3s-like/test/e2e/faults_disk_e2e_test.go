//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeharness/kubeharness/components/testenv"
)

// fullFSSize is the size of the tmpfs TestFullDataDirFilesystem puts the
// data dir on: room for a running server (etcd's current WAL segment and
// the next one, 64 MB each and preallocated, ~126 MB in all) with some to
// spare, so that the filler alone decides when the filesystem is full.
const fullFSSize = 200 << 20

// mountTmpfs mounts a tmpfs of size bytes on a new temp dir and returns
// it; it is unmounted at the end of the test, after the processes the test
// started are gone. The test is skipped where mounting is not permitted
// (not root, or no CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size int64) string {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
			t.Skipf("a full filesystem needs a tmpfs of its own, and mounting one is not permitted here (%v): it needs root (CAP_SYS_ADMIN)", err)
		}
		t.Fatalf("mounting a tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting the tmpfs on %s: %v", dir, err)
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// fill creates file on the filesystem of dir, allocated so that only
// leave bytes stay free, and returns how many bytes it took.
func fill(t *testing.T, dir, file string, leave int64) int64 {
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	size := int64(st.Bavail)*st.Bsize - leave
	require.Positive(t, size, "free space on %s", dir)
	f, err := os.Create(file)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, syscall.Fallocate(int(f.Fd()), 0, 0, size), "fallocate %s", file)
	return size
}

// errWith returns the error (err="...") of the first line of s that
// contains sub, or "".
func errWith(s, sub string) string {
	logErr := regexp.MustCompile(`err="((?:[^"\\]|\\.)*)"`)
	for line := range strings.Lines(s) {
		if strings.Contains(line, sub) {
			if m := logErr.FindStringSubmatch(line); m != nil {
				return m[1]
			}
		}
	}
	return ""
}

// stackTrace matches a goroutine header of a Go stack trace.
const stackTrace = `goroutine \d+ \[`

// TestFullDataDirFilesystem: issue 18's scenario 5. The data dir is on a
// tmpfs of its own that a filler file makes full:
//
//   - at the start (a new data dir): the server exits 1 with one error
//     that names etcd's data dir and the cause ("embedded etcd: data dir
//     DIR/etcd: failed to create WAL: no space left on device"), not a
//     stack trace (etcd's zap Panic, before components/etcd turned it into
//     Run's error);
//   - while it serves (a stream of 128 KiB ConfigMap creates): embedded
//     etcd exits the process with status 1 (a zap Fatal, "failed to commit
//     tx" when bbolt's file cannot grow), after a line that names the data
//     dir;
//
// and each time, once the space is back, the server starts again on the
// same data dir, and every create the apiserver acknowledged is there.
func TestFullDataDirFilesystem(t *testing.T) {
	fs := mountTmpfs(t, fullFSSize)
	dataDir := filepath.Join(fs, "data")
	etcdDir := filepath.Join(dataDir, "etcd")
	filler := filepath.Join(fs, "filler")
	const nospace = "no space left on device"

	// A new data dir on a full filesystem.
	const startFree = 1 << 20
	fill(t, fs, filler, startFree)
	s := newServer(t, dataDir)
	s.start()
	code, took := s.wait(time.Minute)
	stderr := s.stderr.String()
	want := "etcd failed in phase start: embedded etcd: data dir " + etcdDir + ": failed to create WAL: " + nospace
	t.Logf("FAULT full-filesystem when=start free=%dKiB exit=%d took=%s error=%q",
		startFree>>10, code, took.Round(100*time.Millisecond), errWith(stderr, "etcd failed in phase start"))
	assert.Equal(t, 1, code, "exit code")
	assert.Contains(t, stderr, want, "the error names the data dir and the cause\n%s", testenv.Tail(stderr, 30))
	assert.NotRegexp(t, stackTrace, stderr, "no stack trace")

	// The space is back: the same data dir starts, and takes writes.
	require.NoError(t, os.Remove(filler))
	s = &server{t: t, dataDir: dataDir, ports: s.ports}
	restarted := time.Now()
	s.start()
	s.waitReady(2 * time.Minute)
	t.Logf("FAULT full-filesystem when=start space-back ready-after=%s", time.Since(restarted).Round(100*time.Millisecond))
	ctx := t.Context()
	c := s.client()
	blob := strings.Repeat("x", 128<<10)
	var acked []string
	for i := range 10 {
		name := fmt.Sprintf("before-%d", i)
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"blob": blob}}, metav1.CreateOptions{})
		require.NoError(t, err)
		acked = append(acked, name)
	}

	// The filesystem fills while the server writes.
	const runFree = 4 << 20
	fill(t, fs, filler, runFree)
	filled := time.Now()
	failed := 0
	exited := func() bool {
		select {
		case <-s.exited:
			return true
		default:
			return false
		}
	}
	for i := 0; !exited(); i++ {
		if time.Since(filled) > time.Minute {
			t.Fatalf("the server still runs a minute after its filesystem was filled (%d creates acknowledged since)\n%s", len(acked)-10, testenv.Tail(s.stderr.String(), 30))
		}
		name := fmt.Sprintf("during-%d", i)
		_, err := c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"blob": blob}}, metav1.CreateOptions{})
		if err == nil {
			acked = append(acked, name)
		} else {
			failed++
		}
	}
	code, _ = s.wait(time.Second)
	stderr = s.stderr.String()
	exiting := errWith(stderr, "Exiting: embedded etcd cannot go on")
	t.Logf("FAULT full-filesystem when=running free=%dKiB acknowledged-after-fill=%d failed=%d exit=%d after=%s error=%q",
		runFree>>10, len(acked)-10, failed, code, time.Since(filled).Round(100*time.Millisecond), exiting)
	assert.Equal(t, 1, code, "exit code")
	assert.True(t, strings.HasPrefix(exiting, "embedded etcd: data dir "+etcdDir+": "), "the error names the data dir: %q\n%s", exiting, testenv.Tail(stderr, 30))
	assert.Contains(t, exiting, nospace, "and the cause")
	assert.NotRegexp(t, stackTrace, stderr, "no stack trace")

	// The space is back: nothing acknowledged is lost, nothing is corrupt.
	require.NoError(t, os.Remove(filler))
	s = &server{t: t, dataDir: dataDir, ports: s.ports}
	restarted = time.Now()
	s.start()
	s.waitReady(2 * time.Minute)
	ready := time.Since(restarted)
	c = s.client()
	list, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	present := map[string]string{}
	for _, cm := range list.Items {
		present[cm.Name] = cm.Data["blob"]
	}
	var lost, damaged []string
	for _, name := range acked {
		b, ok := present[name]
		switch {
		case !ok:
			lost = append(lost, name)
		case b != blob:
			damaged = append(damaged, name)
		}
	}
	_, err = c.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}, Data: map[string]string{"blob": blob}}, metav1.CreateOptions{})
	t.Logf("FAULT full-filesystem when=running space-back ready-after=%s acknowledged=%d lost=%d damaged=%d write-after=%v",
		ready.Round(100*time.Millisecond), len(acked), len(lost), len(damaged), err)
	assert.Empty(t, lost, "acknowledged creates lost")
	assert.Empty(t, damaged, "acknowledged creates that read back different")
	assert.NoError(t, err, "a create after the restart")

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}
