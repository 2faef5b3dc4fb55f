package e2e

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/testenv"
)

// TestJSONLogsAndSystemd runs the server as systemd would (Type=notify)
// with --logging-format=json and --log FILE:
//   - READY=1 arrives once, and when it does the scheduler's and the
//     controller-manager's /healthz already answer 200 (the embedded
//     kube-apiserver's own early READY=1 is suppressed); STOPPING=1 arrives
//     after SIGTERM;
//   - the log file holds only JSON lines, from every writer (the server,
//     the harness, the three components, embedded etcd), among them one
//     "Running <component> --flag=…" per component with secret values
//     redacted, and the final "ready in …" line; the process's stderr has
//     nothing.
func TestJSONLogsAndSystemd(t *testing.T) {
	dir := t.TempDir()
	type notification struct {
		state          string
		schedulerReady bool // /healthz answered 200 when the datagram arrived
		kcmReady       bool
	}
	var (
		mu  sync.Mutex
		got []notification
	)
	s := newServer(t, filepath.Join(dir, "data"))
	sock, stopNotify := listenNotify(t, dir, func(state string) {
		got1 := notification{state: state}
		if state == "READY=1" {
			got1.schedulerReady = healthz(s.ports["scheduler"])
			got1.kcmReady = healthz(s.ports["kcm"])
		}
		mu.Lock()
		got = append(got, got1)
		mu.Unlock()
	})

	s.env = []string{"NOTIFY_SOCKET=" + sock}
	logFile := filepath.Join(dir, "k3s-like.log")

	t.Cleanup(func() {
		if t.Failed() {
			raw, _ := os.ReadFile(logFile)
			t.Logf("%s (last 40 lines):\n%s", logFile, testenv.Tail(string(raw), 40))
		}
	})
	s.start("--logging-format=json", "--log="+logFile, "--kube-apiserver-arg=service-account-max-token-expiration=48h")
	s.waitReady(90 * time.Second)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.NotEmpty(ct, got)
	}, 10*time.Second, 50*time.Millisecond, "READY=1 once every component is ready")
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(20 * time.Second)
	assert.Equal(t, 0, code)
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		mu.Lock()
		defer mu.Unlock()
		assert.Len(ct, got, 2)
	}, 5*time.Second, 50*time.Millisecond)
	stopNotify()
	require.Equal(t, []string{"READY=1", "STOPPING=1"}, []string{got[0].state, got[1].state}, "one READY=1 (the server's, not the apiserver's), then STOPPING=1")
	assert.True(t, got[0].schedulerReady, "kube-scheduler answered /healthz when READY=1 arrived")
	assert.True(t, got[0].kcmReady, "kube-controller-manager answered /healthz when READY=1 arrived")

	assert.Empty(t, s.stderr.String(), "--log: nothing on stderr")
	raw, err := os.ReadFile(logFile)
	require.NoError(t, err)
	info, err := os.Stat(logFile)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	var (
		lines   int
		msgs    []string
		loggers = map[string]bool{}
	)
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
		var entry map[string]any
		if !assert.NoError(t, json.Unmarshal(sc.Bytes(), &entry), "line %d is not JSON: %s", lines, sc.Text()) {
			continue
		}
		msg, _ := entry["msg"].(string)
		msgs = append(msgs, msg)
		for _, key := range []string{"logger", "component"} {
			if v, ok := entry[key].(string); ok {
				loggers[v] = true
			}
		}
	}
	require.NoError(t, sc.Err())
	t.Logf("%d JSON lines", lines)
	assert.Greater(t, lines, 100)
	for _, who := range []string{"k3s-like", "etcd", "kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		assert.True(t, loggers[who], "lines from %s (logger or component): %v", who, loggers)
	}
	running := map[string]string{}
	for _, m := range msgs {
		if rest, ok := strings.CutPrefix(m, "Running kube-"); ok {
			name, args, _ := strings.Cut(rest, " ")
			running["kube-"+name] = args
		}
	}
	require.Len(t, running, 3, "one Running line per component: %v", running)
	assert.Contains(t, running["kube-apiserver"], "--secure-port="+strconv.Itoa(s.ports["https"]))
	assert.Contains(t, running["kube-apiserver"], "--service-account-max-token-expiration=<redacted>")
	assert.NotContains(t, running["kube-apiserver"], "48h")
	assert.Contains(t, running["kube-scheduler"], "--kubeconfig=")
	assert.Contains(t, msgs, "Running embedded etcd")
	var ready []string
	for _, m := range msgs {
		if strings.HasPrefix(m, "ready in ") {
			ready = append(ready, m)
		}
	}
	require.Len(t, ready, 1)
	assert.Regexp(t, `^ready in [0-9.]+m?s; KUBECONFIG=`+filepath.Join(s.dataDir, "admin.kubeconfig")+` kubectl get nodes$`, ready[0])
}

// healthz reports whether a component's secure port answers /healthz 200
// (it serves its own self-signed certificate; /healthz needs no client
// certificate).
func healthz(port int) bool {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get("https://127.0.0.1:" + strconv.Itoa(port) + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// TestLoggingFlags: the server's -v is every component's, so a component
// asking for another is a conflict naming both; a bad value is one line.
func TestLoggingFlags(t *testing.T) {
	run := func(args ...string) (string, int) {
		cmd := exec.Command(binary, append([]string{"server", "--disable-agent", "--dry-run", "--data-dir=" + filepath.Join(t.TempDir(), "d")}, args...)...)
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run("-v", "2", "--kube-scheduler-arg=v=4")
	assert.Equal(t, 1, code, out)
	assert.Contains(t, out, "--v: kube-apiserver sets 2 (--v=2), kube-controller-manager sets 2 (--v=2), kube-scheduler sets 4 (--v=4)")
	out, code = run("-v", "3", "--output=json")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, 3, strings.Count(out, `"--v=3"`), "every component gets -v")
	for args, want := range map[string]string{
		"-v=-1":                "k3s-like: -v=-1: want a log level, a number 0 or more",
		"--logging-format=xml": "k3s-like: --logging-format=xml: want text or json",
		"--log=" + filepath.Join(t.TempDir(), "no", "such", "dir", "log"): "no such file or directory",
	} {
		cmd := exec.Command(binary, "server", "--disable-agent", "--data-dir="+filepath.Join(t.TempDir(), "d"), args)
		out, _ := cmd.CombinedOutput()
		assert.Equal(t, 1, cmd.ProcessState.ExitCode(), args)
		assert.Contains(t, lastLine(string(out)), want, args)
	}
}

// TestLogFileNoFollow: --log at a symbolic link exits 1 naming it, and
// what the link points to is neither written nor chmodded; an existing log
// file group or others could read is made 0600, with a warning saying so.
func TestLogFileNoFollow(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, []byte("keep\n"), 0o644))
	require.NoError(t, os.Chmod(victim, 0o644))
	link := filepath.Join(dir, "k3s-like.log")
	require.NoError(t, os.Symlink(victim, link))
	// --memory-limit=1 fails right after --log is opened: nothing starts.
	run := func(log string) (string, int) {
		cmd := exec.Command(binary, "server", "--disable-agent", "--data-dir="+filepath.Join(t.TempDir(), "d"), "--log="+log, "--memory-limit=1")
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run(link)
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "k3s-like: --log="+link+": is a symbolic link: refusing to follow it; give the file it points to, or remove the link", lastLine(out))
	got, err := os.ReadFile(victim)
	require.NoError(t, err)
	assert.Equal(t, "keep\n", string(got), "the link's target is not written")
	st, err := os.Stat(victim)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm(), "nor chmodded")

	open := filepath.Join(dir, "open.log")
	require.NoError(t, os.WriteFile(open, []byte("before\n"), 0o644))
	require.NoError(t, os.Chmod(open, 0o644))
	out, code = run(open)
	assert.Equal(t, 1, code, out)
	assert.Equal(t, "Warning: --log="+open+" was open to group or others (mode 0644): made it 0600", strings.TrimSpace(out), "the warning on the stderr it replaces; the error is in the log")
	st, err = os.Stat(open)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	got, err = os.ReadFile(open)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "before\n"), "appended: %q", got)
	assert.Contains(t, string(got), "--memory-limit=1")
}

// listenNotify listens in dir as systemd's notify socket does (Type=notify)
// and calls got with each datagram's state, in one goroutine, in order. It
// returns the socket's path and stop, which closes it and waits for the
// goroutine (also at the end of the test).
func listenNotify(t *testing.T, dir string, got func(state string)) (path string, stop func()) {
	t.Helper()
	path = filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			got(strings.TrimSpace(string(buf[:n])))
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			conn.Close()
			<-done
		})
	}
	t.Cleanup(stop)
	return path, stop
}
