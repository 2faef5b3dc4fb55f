//go:build !linux

package main

import (
	"errors"
	"os"
)

// dupStderr: --log needs Linux's dup3.
func dupStderr(*os.File) error { return errors.New("--log is supported on Linux only") }
