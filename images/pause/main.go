package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

func main() {
	signals := make(chan os.Signal, 16)
	signal.Notify(signals, unix.SIGINT, unix.SIGTERM, unix.SIGCHLD)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		// Not fatal: as PID 1 the kernel gives it the orphans anyway.
		fmt.Fprintf(os.Stderr, "pause: prctl(PR_SET_CHILD_SUBREAPER): %v\n", err)
	}
	reap() // children that exited before Notify
	for sig := range signals {
		if sig == unix.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap waits for every child that has exited, without blocking; signals
// coalesce, so one SIGCHLD may stand for several children.
func reap() {
	for {
		var status unix.WaitStatus
		pid, err := unix.Wait4(-1, &status, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if pid <= 0 || err != nil {
			return // no child exited (0), or none at all (ECHILD)
		}
	}
}
