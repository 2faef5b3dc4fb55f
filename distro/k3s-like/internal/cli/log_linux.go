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
