package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/node/proctree"
	"github.com/kubeharness/kubeharness/components/node/runtime"
	"github.com/kubeharness/kubeharness/components/node/sandboxes"
	"github.com/kubeharness/kubeharness/components/testenv"
)

// fakeChildEnv selects what the re-executed test binary does:
//   - "cri": serve a fake CRI on $FAKE_CRI_SOCKET with two pod sandboxes,
//     printing each call, until SIGTERM ("terminated");
//   - "cri-ignore-term": the same, ignoring SIGTERM;
//   - "cri-with-shim": "cri", after starting a "shim": this binary again
//     with -address $FAKE_CRI_SOCKET in a process group of its own,
//     holding the child's stdout and stderr, sleeping until killed;
//   - "exit": print "boom: bad config" and exit 3;
//   - "parent": run a runtime.Runtime whose child is "cri" and wait to be
//     killed.
const fakeChildEnv = "KUBEHARNESS_NODE_FAKE_CHILD"

// fakeChild is the re-executed test binary's main.
func fakeChild(mode string) int {
	switch mode {
	case "exit":
		fmt.Println("boom: bad config")
		return 3
	case "shim":
		time.Sleep(time.Hour) // killed by Run (KillLeftovers)
		return 0
	case "cri", "cri-ignore-term", "cri-fail-remove", "cri-with-shim":
		if pidFile := os.Getenv("FAKE_PID_FILE"); pidFile != "" {
			_ = os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())), 0o600)
		}
		if mode == "cri-with-shim" {
			// A shim as containerd starts one: a process group of its own,
			// containerd's stdout and stderr inherited, -address SOCKET.
			shim := exec.Command(os.Args[0], "-address", os.Getenv("FAKE_CRI_SOCKET"))
			shim.Env = append(os.Environ(), fakeChildEnv+"=shim")
			shim.Stdout, shim.Stderr = os.Stdout, os.Stderr
			shim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := shim.Start(); err != nil {
				fmt.Println(err)
				return 1
			}
			fmt.Println("shim", shim.Process.Pid)
		}
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM)
		l, err := net.Listen("unix", os.Getenv("FAKE_CRI_SOCKET"))
		if err != nil {
			fmt.Println(err)
			return 1
		}
		srv := grpc.NewServer()
		runtimeapi.RegisterRuntimeServiceServer(srv, &fakeCRI{failRemove: mode == "cri-fail-remove"})
		go func() { _ = srv.Serve(l) }()
		for range sigs {
			fmt.Println("terminated")
			if mode != "cri-ignore-term" {
				srv.Stop()
				return 0
			}
		}
	case "parent":
		r := runtime.New(runtime.Config{
			Command: []string{os.Args[0]},
			Env:     append(os.Environ(), fakeChildEnv+"=cri"),
			Socket:  os.Getenv("FAKE_CRI_SOCKET"),
		})
		_ = r.Run(context.Background())
	}
	return 2
}

// fakeCRI answers Version and lists two sandboxes, printing every stop and
// removal.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	failRemove bool // RemovePodSandbox fails
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake"}, nil
}

func (f *fakeCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	sb := func(id string) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Namespace: "default", Name: "pod-" + id}}
	}
	return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{sb("a"), sb("b")}}, nil
}

func (f *fakeCRI) StopPodSandbox(_ context.Context, r *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	fmt.Println("stopped", r.PodSandboxId)
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *fakeCRI) RemovePodSandbox(_ context.Context, r *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	if f.failRemove {
		return nil, errors.New("sandbox " + r.PodSandboxId + " is busy")
	}
	fmt.Println("removed", r.PodSandboxId)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// syncBuffer is the child's output, written by its copying goroutine.
type syncBuffer = testenv.Buffer

// shortSocket is a unix socket path short enough for sun_path.
func shortSocket(t *testing.T) string {
	dir, err := os.MkdirTemp("", "cri")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "cri.sock")
}

// runtimeFor builds a Runtime for mode with its socket in the child's
// environment.
func runtimeFor(t *testing.T, mode string, out *syncBuffer, beforeReady func(context.Context) error) *runtime.Runtime {
	t.Helper()
	sock := shortSocket(t)
	return runtime.New(runtime.Config{
		Command:     []string{os.Args[0]},
		Env:         append(os.Environ(), fakeChildEnv+"="+mode, "FAKE_CRI_SOCKET="+sock),
		Socket:      sock,
		Output:      out,
		BeforeReady: beforeReady,
		StopGrace:   500 * time.Millisecond,
	})
}

// TestRuntimeLifecycle: Ready once the CRI answers and BeforeReady ran;
// Stop removes every sandbox through the CRI; the cancelled Run sends
// SIGTERM and returns nil once the child exited.
func TestRuntimeLifecycle(t *testing.T) {
	out := &syncBuffer{}
	imported := false
	r := runtimeFor(t, "cri", out, func(context.Context) error { imported = true; return nil })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	readyCtx, readyCancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer readyCancel()
	require.NoError(t, r.Ready(readyCtx))
	assert.True(t, imported, "BeforeReady ran before Ready returned")
	require.NoError(t, r.Stop(t.Context()))
	assert.Eventually(t, func() bool {
		for _, line := range []string{"stopped a\n", "removed a\n", "stopped b\n", "removed b\n"} {
			if !strings.Contains(out.String(), line) {
				return false
			}
		}
		return strings.Index(out.String(), "stopped a") < strings.Index(out.String(), "removed a")
	}, 5*time.Second, 10*time.Millisecond, "the child printed every stop and removal, each sandbox stopped before it was removed (its output is copied asynchronously): %q", out)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	assert.Contains(t, out.String(), "terminated")
}

// TestRuntimeChildIgnoringSIGTERMIsKilled: after StopGrace, SIGKILL.
func TestRuntimeChildIgnoringSIGTERMIsKilled(t *testing.T) {
	out := &syncBuffer{}
	r := runtimeFor(t, "cri-ignore-term", out, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.NoError(t, r.Ready(t.Context()))
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond, "SIGTERM first, SIGKILL after the grace")
	assert.Contains(t, out.String(), "terminated")
}

// TestRuntimeStopWithShimHoldingOutput: a shim the child started keeps
// the child's stdout and stderr open (containerd's shims inherit them);
// the cancelled Run still returns soon after the child exited, not when
// the shim closes them, and kills the shim.
func TestRuntimeStopWithShimHoldingOutput(t *testing.T) {
	out := &syncBuffer{}
	r := runtimeFor(t, "cri-with-shim", out, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.NoError(t, r.Ready(t.Context()))
	var shim int
	require.Eventually(t, func() bool {
		_, err := fmt.Sscanf(out.String(), "shim %d", &shim)
		return err == nil
	}, 10*time.Second, 10*time.Millisecond, "the child started its shim: %q", out)
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(shim, syscall.SIGKILL)
		t.Fatal("Run waited for the shim to close the child's output")
	}
	assert.Less(t, time.Since(start), 5*time.Second)
	assert.Eventually(t, func() bool { return !proctree.Alive(shim) }, 5*time.Second, 20*time.Millisecond, "the shim %d was killed", shim)
}

// TestRuntimeExitIsNamedError: the child exiting by itself is Run's
// *ExitError with its exit and last output; a command that cannot
// start is one too.
func TestRuntimeExitIsNamedError(t *testing.T) {
	r := runtimeFor(t, "exit", &syncBuffer{}, nil)
	err := r.Run(t.Context())
	var re *runtime.ExitError
	require.ErrorAs(t, err, &re)
	assert.ErrorContains(t, err, "containerd exited: exit status 3")
	assert.Equal(t, "boom: bad config", re.Tail)

	missing := runtime.New(runtime.Config{Command: []string{filepath.Join(t.TempDir(), "no-such-binary")}, Socket: shortSocket(t)})
	err = missing.Run(t.Context())
	require.ErrorAs(t, err, &re)
	assert.True(t, errors.Is(err, os.ErrNotExist), "%v", err)

	assert.ErrorContains(t, runtime.New(runtime.Config{}).Run(t.Context()), "no command or socket")
}

// TestRuntimeDiesWithItsParent: a process running a Runtime is killed with
// SIGKILL; its runtime child dies with it (Pdeathsig).
func TestRuntimeDiesWithItsParent(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), fakeChildEnv+"=parent", "FAKE_CRI_SOCKET="+shortSocket(t), "FAKE_PID_FILE="+pidFile)
	require.NoError(t, parent.Start())
	var child int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		child, err = strconv.Atoi(string(b))
		return err == nil
	}, 30*time.Second, 20*time.Millisecond, "the runtime child started")
	require.NoError(t, parent.Process.Kill())
	_ = parent.Wait()
	assert.Eventually(t, func() bool { return !proctree.Alive(child) }, 10*time.Second, 20*time.Millisecond, "the child %d died with its parent", child)
}

// TestRuntimeStopWithSandboxesLeft: sandboxes the CRI fails to remove are
// sandboxes.RemoveAll's error, naming each; Stop logs it and returns nil
// (Run kills what is left after containerd); Run still stops the child.
func TestRuntimeStopWithSandboxesLeft(t *testing.T) {
	r := runtimeFor(t, "cri-fail-remove", &syncBuffer{}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	require.NoError(t, r.Ready(t.Context()))
	assert.NoError(t, r.Stop(t.Context()), "not an error: the stop completes after containerd")
	cancel()
	require.NoError(t, <-done)

	sock := shortSocket(t)
	srv := startFakeCRI(t, sock, &fakeCRI{failRemove: true})
	defer srv.Stop()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	removed, err := sandboxes.RemoveAll(t.Context(), runtimeapi.NewRuntimeServiceClient(conn), klog.Background())
	assert.Equal(t, 0, removed)
	assert.ErrorContains(t, err, "removing pod sandbox default/pod-a: rpc error: code = Unknown desc = sandbox a is busy")
	assert.ErrorContains(t, err, "removing pod sandbox default/pod-b")
}

// startFakeCRI serves f on a unix socket in this process.
func startFakeCRI(t *testing.T, sock string, f *fakeCRI) *grpc.Server {
	t.Helper()
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	go func() { _ = srv.Serve(l) }()
	return srv
}
