package testenv

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/kubeharness/kubeharness/components/node/proctree"
)

// Ports are picked at random in [portLow, min(portHigh, the kernel's
// ephemeral range)): above the kubelet's and kube-proxy's default ports
// (10248–10259) and below the NodePort range (30000–32767).
const portLow, portHigh = 15000, 30000

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago and
// that no running process has had from FreePort before, this one included.
// It is chosen at random below the kernel's ephemeral port range: a port
// the kernel hands out itself (":0") can be taken, between this check and
// the component binding it seconds later, as the local port of one of the
// many outgoing connections a starting control plane makes. The
// reservation is a file named for the port under the temporary directory,
// holding the PID; it lapses when that process is gone.
func FreePort() (int, error) {
	dir := filepath.Join(os.TempDir(), "kubeharness-ports-"+strconv.Itoa(os.Getuid()))
	low, high := portLow, min(portHigh, ephemeralLow())
	for range 200 {
		port := low + rand.IntN(high-low)
		if !PortFree(port) {
			continue
		}
		ok, err := reservePort(dir, port, os.Getpid())
		if err != nil {
			return 0, err
		}
		if ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("testenv: no free port in [%d, %d) after 200 tries", low, high)
}

// FreePorts returns n distinct ports, each from FreePort.
func FreePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// reservePort records port in dir for pid unless a process that is still
// running, or pid itself, holds it. An exclusive lock on dir/.lock makes
// the check and the write one step across processes.
func reservePort(dir string, port, pid int) (bool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("testenv: port reservations: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return false, fmt.Errorf("testenv: port reservations: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return false, fmt.Errorf("testenv: port reservations: lock %s: %w", lock.Name(), err)
	}
	path := filepath.Join(dir, strconv.Itoa(port))
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		holder, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if perr == nil && (holder == pid || proctree.Alive(holder)) {
			return false, nil
		}
	case !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("testenv: port reservations: %w", err)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(pid)), 0o600); err != nil {
		return false, fmt.Errorf("testenv: port reservations: %w", err)
	}
	return true, nil
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux),
// or 32768.
func ephemeralLow() int {
	const def = 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return def
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return def
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= portLow+1000 {
		return def
	}
	return low
}

// PortFree reports whether port can be listened on at 127.0.0.1 now.
func PortFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}
