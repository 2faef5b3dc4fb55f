//go:build !linux

package cli

import (
	"errors"
	"os"
)

// NoFollow: none here; --log fails at dupStderr.
const NoFollow = 0

// dupStderr: --log needs Linux's dup3.
func dupStderr(*os.File) error { return errors.New("--log is supported on Linux only") }

// owner: not checked here.
func owner(os.FileInfo) (uid int, ok bool) { return 0, false }
