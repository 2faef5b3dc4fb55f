//go:build !linux

package main

import (
	"errors"
	"os"
)

// noFollow: none here; --log fails at dupStderr.
const noFollow = 0

// dupStderr: --log needs Linux's dup3.
func dupStderr(*os.File) error { return errors.New("--log is supported on Linux only") }
