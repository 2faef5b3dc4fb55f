// Package mounts finds and detaches the mounts below directories: what a
// node leaves mounted (the kubelet's volumes, containerd's sandbox
// mounts) once it stopped. k3s-like's server and agent and the node
// benchmark use it.
package mounts

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Under returns the mount points of a /proc/PID/mountinfo text at or below
// one of dirs (made absolute), deepest first, mountinfo's octal escapes
// undone.
func Under(mountinfo string, dirs ...string) []string {
	abs := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if a, err := filepath.Abs(d); err == nil {
			abs = append(abs, a)
		}
	}
	var out []string
	for _, line := range strings.Split(mountinfo, "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescape(f[4])
		for _, d := range abs {
			if mp == d || strings.HasPrefix(mp, d+"/") {
				out = append(out, mp)
				break
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// UnmountUnder detaches (MNT_DETACH) every mount of this process's mount
// namespace at or below dirs, deepest first, and returns how many; a mount
// already gone is no error.
func UnmountUnder(dirs ...string) (int, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, mp := range Under(string(b), dirs...) {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", mp, err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
