package machines

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The LAN's addresses: a documentation range only, and a gateway nobody
// has, so that nothing is routed off the host.
const (
	Subnet  = "192.0.2.0/24"
	Gateway = "192.0.2.1"
	firstIP = "192.0.2.10"
)

// netnsDir is where `ip netns` keeps named namespaces.
const netnsDir = "/run/netns"

// LAN is machines on one LAN: each a named network namespace whose eth0
// (a veth) is on a bridge in a namespace of the LAN's own.
type LAN struct {
	Prefix   string // every namespace's name begins PREFIX-
	Machines []Machine
}

// Machine is one network namespace on a LAN.
type Machine struct {
	Name string     // the namespace: PREFIX-N
	IP   netip.Addr // eth0's: 192.0.2.10+N
}

// NetnsPath is the namespace's file, for nsenter --net or setns.
func (m Machine) NetnsPath() string { return filepath.Join(netnsDir, m.Name) }

// Command is name with args, run in the machine's network namespace by
// nsenter (which keeps the host's mount namespace: `ip netns exec`
// remounts /sys, hiding the cgroups from a kubelet).
func (m Machine) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + m.NetnsPath(), "--", name}, args...)...)
}

// DefaultPrefix is the prefix of this process's LANs: khm<pid>. New
// tears down the LANs of such prefixes whose process is gone.
func DefaultPrefix() string { return "khm" + strconv.Itoa(os.Getpid()) }

// New makes n machines on a LAN whose namespaces are named PREFIX-lan
// and PREFIX-0 … PREFIX-(n-1); machine i has 192.0.2.(10+i)/24 on eth0
// and a default route to 192.0.2.1, which nobody has. A LAN of a
// DefaultPrefix whose process is gone is torn down first. On an error,
// what was made is torn down.
func New(prefix string, n int) (*LAN, error) {
	if n < 1 || n > 200 {
		return nil, fmt.Errorf("machines: %d machines: want 1 to 200", n)
	}
	if err := sweep(); err != nil {
		return nil, err
	}
	l := &LAN{Prefix: prefix}
	lan := prefix + "-lan"
	steps := [][]string{
		{"netns", "add", lan},
		{"-n", lan, "link", "set", "lo", "up"},
		{"-n", lan, "link", "add", "br0", "type", "bridge"},
		{"-n", lan, "link", "set", "br0", "up"},
	}
	ip := netip.MustParseAddr(firstIP)
	bits := netip.MustParsePrefix(Subnet).Bits()
	for i := range n {
		m := Machine{Name: fmt.Sprintf("%s-%d", prefix, i), IP: ip}
		port := fmt.Sprintf("m%d", i)
		steps = append(steps,
			[]string{"netns", "add", m.Name},
			[]string{"-n", m.Name, "link", "set", "lo", "up"},
			[]string{"link", "add", "eth0", "netns", m.Name, "type", "veth", "peer", "name", port, "netns", lan},
			[]string{"-n", lan, "link", "set", port, "master", "br0", "up"},
			[]string{"-n", m.Name, "addr", "add", netip.PrefixFrom(m.IP, bits).String(), "dev", "eth0"},
			[]string{"-n", m.Name, "link", "set", "eth0", "up"},
			[]string{"-n", m.Name, "route", "add", "default", "via", Gateway, "dev", "eth0"},
		)
		l.Machines = append(l.Machines, m)
		ip = ip.Next()
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			err = fmt.Errorf("machines: ip %s: %w: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
			return nil, errors.Join(err, Teardown(prefix))
		}
	}
	return l, nil
}

// Close tears the LAN down (Teardown).
func (l *LAN) Close() error { return Teardown(l.Prefix) }

// Teardown kills every process left in a namespace PREFIX-* and deletes
// the namespaces, which takes their veths and the LAN's bridge with them.
// What is not there is not an error.
func Teardown(prefix string) error {
	entries, err := os.ReadDir(netnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("machines: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix+"-") {
			continue
		}
		if err := killIn(filepath.Join(netnsDir, e.Name())); err != nil {
			errs = append(errs, err)
		}
		if out, err := exec.Command("ip", "netns", "del", e.Name()).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("machines: ip netns del %s: %w: %s", e.Name(), err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// killTimeout bounds the wait for killed processes to be gone.
const killTimeout = 10 * time.Second

// killIn SIGKILLs every process whose network namespace is the one bound
// at path, and waits until none is left.
func killIn(path string) error {
	var ns syscall.Stat_t
	if err := syscall.Stat(path, &ns); err != nil {
		return nil // gone already
	}
	deadline := time.Now().Add(killTimeout)
	for {
		left := processesIn(ns)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("machines: processes %v still in %s %s after SIGKILL", left, path, killTimeout)
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesIn are the processes whose network namespace is ns.
func processesIn(ns syscall.Stat_t) []int {
	procs, _ := os.ReadDir("/proc")
	var out []int
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", p.Name(), "ns", "net"), &st) == nil && st.Dev == ns.Dev && st.Ino == ns.Ino {
			out = append(out, pid)
		}
	}
	return out
}

// defaultPID is the process ID in a namespace name of a DefaultPrefix
// LAN ("khm123-0": "123").
func defaultPID(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "khm")
	pid, _, dash := strings.Cut(rest, "-")
	if _, err := strconv.Atoi(pid); !ok || !dash || err != nil {
		return "", false
	}
	return pid, true
}

// sweep tears down the LANs of DefaultPrefix whose process is gone (a
// test binary killed before its cleanup ran).
func sweep() error {
	entries, err := os.ReadDir(netnsDir)
	if err != nil {
		return nil
	}
	var errs []error
	done := map[string]bool{}
	for _, e := range entries {
		pid, ok := defaultPID(e.Name())
		if !ok || done[pid] {
			continue
		}
		done[pid] = true
		if _, err := os.Stat("/proc/" + pid); errors.Is(err, os.ErrNotExist) {
			errs = append(errs, Teardown("khm"+pid))
		}
	}
	return errors.Join(errs...)
}
