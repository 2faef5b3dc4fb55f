package cli

import (
	"os"
	"syscall"
)

// NoFollow makes opening a symbolic link an error (ELOOP).
const NoFollow = syscall.O_NOFOLLOW

// dupStderr makes f the process's stderr (file descriptor 2): what Go's
// os.Stderr, klog and a panic write goes to f from now on.
func dupStderr(f *os.File) error { return syscall.Dup3(int(f.Fd()), 2, 0) }

// owner is the user ID that owns the file st describes.
func owner(st os.FileInfo) (uid int, ok bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(s.Uid), true
}
