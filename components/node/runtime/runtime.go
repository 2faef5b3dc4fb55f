package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/internal/probe"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/node/proctree"
	"github.com/kubeharness/kubeharness/components/node/sandboxes"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the component name of the container runtime child.
const Name = names.Containerd

// Runtime runs the node's CRI runtime (containerd) as a child process of
// this binary, as k3s does: Command is this binary's containerd entry point
// and its arguments. The child dies with the process (SIGKILL on the
// parent's death); its exit before the stop is Run's *ExitError,
// with the end of its output. Ready waits until its CRI socket answers
// Version, then runs BeforeReady (image import). At the stop it removes
// the pod sandboxes through the CRI (the containers, their network and
// mounts) as far as Stop's share of the deadline allows, then stops the
// child (SIGTERM, SIGKILL after StopGrace) and kills what is left (shims,
// containers, plugins: KillLeftovers), waiting StopGrace/2 at most for
// them to die. Create it with New; a value runs once.
type Runtime struct {
	cfg  Config
	mu   sync.Mutex
	conn *grpc.ClientConn // set by Ready
}

// Config is what Runtime runs.
type Config struct {
	// Command is the child's argv; Command[0] is the executable.
	Command []string
	// Env is the child's environment (nil: this process's).
	Env []string
	// Socket is the path of the unix socket the child serves the CRI on.
	Socket string
	// Output receives the child's stdout and stderr (nil: discarded); the
	// last lines are kept for the exit error either way.
	Output io.Writer
	// BeforeReady, if set, runs once the CRI answers, before Ready returns
	// (the images of the data dir imported, say); its error fails Ready.
	BeforeReady func(ctx context.Context) error
	// StopGrace is how long the child has after SIGTERM before it is
	// killed, with its process group (0: 10 s); what it leaves is then
	// given StopGrace/2 to die. Run's stop, about 1.5×StopGrace, must fit
	// in what the harness's StopTimeout leaves after Stop (which may take
	// half of it): keep StopGrace at most a quarter of StopTimeout.
	StopGrace time.Duration
	// BinDir, if set, is where the runtime's plugins run from (the CNI
	// plugins): at the stop, every process run from it is killed too.
	BinDir string
}

// New returns the runtime component for cfg.
func New(cfg Config) *Runtime { return &Runtime{cfg: cfg} }

// Name returns "containerd".
func (r *Runtime) Name() string { return Name }

// AddFlags adds no flags: the child's configuration is its Command.
func (r *Runtime) AddFlags(*scoping.Scope) error { return nil }

// ExitError is the runtime child ending before it was asked to stop (or
// failing to start): its command, its exit, the end of its output.
type ExitError struct {
	Command []string
	Err     error
	Tail    string
}

// Error reads like "containerd exited: exit status 1 (…/k3s-like
// containerd --config …); last output: …".
func (e *ExitError) Error() string {
	msg := fmt.Sprintf("%s exited: %v (%s)", Name, e.Err, strings.Join(e.Command, " "))
	if e.Tail != "" {
		msg += "; last output:\n" + e.Tail
	}
	return msg
}

// Unwrap returns the exit.
func (e *ExitError) Unwrap() error { return e.Err }

// Run starts the child and waits: until ctx ends (the stop: the child is
// sent SIGTERM and Run returns once it exited, nil), or until the child
// exits by itself (an *ExitError).
func (r *Runtime) Run(ctx context.Context) error {
	if len(r.cfg.Command) == 0 || r.cfg.Socket == "" {
		return fmt.Errorf("%s: no command or socket", Name)
	}
	if ctx.Err() != nil {
		return nil
	}
	tail := &tailBuffer{max: 4096}
	var out io.Writer = tail
	if r.cfg.Output != nil {
		out = io.MultiWriter(r.cfg.Output, tail)
	}
	_ = os.Remove(r.cfg.Socket) // a stale socket of a killed child
	started := make(chan error, 1)
	exited := make(chan error, 1)
	var cmd *exec.Cmd
	// Pdeathsig is sent when the thread that started the child exits: the
	// thread stays locked to this goroutine until the child exited.
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		cmd = exec.Command(r.cfg.Command[0], r.cfg.Command[1:]...)
		cmd.Env = r.cfg.Env
		cmd.Stdout, cmd.Stderr = out, out
		// The shims inherit the child's stdout and stderr and outlive it
		// until Run kills them: once the child exited, Wait waits that
		// long for the output, then closes it, instead of waiting for them.
		cmd.WaitDelay = outputDelay
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return &ExitError{Command: r.cfg.Command, Err: err}
	}
	select {
	case err := <-exited:
		if err == nil {
			err = errors.New("exit status 0")
		}
		return &ExitError{Command: r.cfg.Command, Err: err, Tail: tail.String()}
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(r.stopGrace()):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
	r.closeConn()
	start := time.Now()
	l := KillLeftovers(cmd.Process.Pid, r.cfg.Socket, r.cfg.BinDir, r.stopGrace()/2)
	if l.Total() > 0 {
		klog.FromContext(ctx).Info("Killed what the runtime left", "inItsProcessGroup", l.Group, "shimsAndContainers", l.Shims, "plugins", l.Plugins, "took", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// Leftovers counts what KillLeftovers killed, by kind.
type Leftovers struct{ Group, Shims, Plugins int }

// Total is the number of processes killed.
func (l Leftovers) Total() int { return l.Group + l.Shims + l.Plugins }

// KillLeftovers kills, with SIGKILL, what a runtime leaves once its child
// exited: the processes of the child's process group pgid (a CNI plugin
// still at work; none if pgid is 0), the shims of socket (proctree's
// Shims; none if socket is "") and the plugins run from binDir (none if
// it is ""), each with all its descendants (the shims' containers), never
// this process or what is under it; then it waits, wait at most in all,
// until each is gone or a zombie. Shims outlive containerd by design; a
// sandbox the kubelet created after Stop's sweep, or one Stop's sweep
// could not remove in time, would otherwise leave its containers running
// after the node stopped.
func KillLeftovers(pgid int, socket, binDir string, wait time.Duration) Leftovers {
	var l Leftovers
	if pgid > 0 {
		defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }() // one that started since /proc was read
	}
	t, err := proctree.Read()
	if err != nil {
		return l
	}
	delete(t, os.Getpid())
	seen := map[int]bool{}
	var kill []int
	take := func(roots []int) int {
		n := 0
		for _, pid := range t.Descendants(roots...) {
			if !seen[pid] && proctree.Alive(pid) {
				seen[pid] = true
				kill = append(kill, pid)
				n++
			}
		}
		return n
	}
	if pgid > 0 {
		l.Group = take(t.Group(pgid))
	}
	if socket != "" {
		l.Shims = take(t.Shims(socket))
	}
	if binDir != "" {
		l.Plugins = take(t.Under(binDir))
	}
	proctree.Kill(kill, wait)
	return l
}

// outputDelay is how long Run waits, once the child exited, for the
// output that processes it started still hold (cmd.WaitDelay).
const outputDelay = 500 * time.Millisecond

func (r *Runtime) stopGrace() time.Duration {
	if r.cfg.StopGrace > 0 {
		return r.cfg.StopGrace
	}
	return 10 * time.Second
}

// Ready blocks until the child's CRI answers Version and BeforeReady
// returned nil, or ctx ends.
func (r *Runtime) Ready(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+r.cfg.Socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	client := runtimeapi.NewRuntimeServiceClient(conn)
	err = probe.Poll(ctx, 100*time.Millisecond, func(ctx context.Context) error {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.Version(callCtx, &runtimeapi.VersionRequest{})
		return err
	})
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("%s: CRI at %s: %w", Name, r.cfg.Socket, err)
	}
	r.mu.Lock()
	r.conn = conn
	r.mu.Unlock()
	if r.cfg.BeforeReady != nil {
		if err := r.cfg.BeforeReady(ctx); err != nil {
			return fmt.Errorf("%s: %w", Name, err)
		}
	}
	return nil
}

// Stop removes every pod sandbox through the CRI within ctx's deadline
// (stopping their containers, tearing down their network and mounts), so
// that no container outlives the node; Run's context then stops the child,
// and Run kills any shim left behind, with its containers. A sandbox it
// could not remove is logged, not an error: Run's kill completes the stop.
func (r *Runtime) Stop(ctx context.Context) error {
	r.mu.Lock()
	conn := r.conn
	r.mu.Unlock()
	if conn == nil {
		return nil
	}
	logger := klog.FromContext(ctx)
	start := time.Now()
	removed, err := sandboxes.RemoveAll(ctx, runtimeapi.NewRuntimeServiceClient(conn), logger)
	logger.Info("Removed the pod sandboxes", "removed", removed, "took", time.Since(start).Round(time.Millisecond))
	if err != nil {
		// What is left is killed by Run once the child exited
		// (KillLeftovers): the stop is complete either way.
		logger.Error(err, "Removing the pod sandboxes at the stop; their shims and containers are killed after containerd")
	}
	return nil
}

func (r *Runtime) closeConn() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conn != nil {
		_ = r.conn.Close()
		r.conn = nil
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if extra := t.buf.Len() - t.max; extra > 0 {
		t.buf.Next(extra)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(t.buf.String())
}
