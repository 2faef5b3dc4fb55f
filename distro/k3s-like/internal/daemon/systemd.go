package daemon

import (
	"fmt"
	"net"
	"os"
)

// notifier tells systemd (Type=notify) about the process: READY=1 once
// every component is ready, STOPPING=1 when it begins to stop.
//
// Process-wide state: the embedded kube-apiserver calls go-systemd's
// daemon.SdNotify(true, "READY=1") as soon as it serves
// (genericapiserver's RunWithContext), before the scheduler and the
// controller-manager are ready, and that call unsets $NOTIFY_SOCKET for the
// whole process; the kubelet sends its own READY=1 early too.
// takeNotifySocket takes the socket away from them before anything starts
// (they find no $NOTIFY_SOCKET and send nothing), so only the daemon speaks
// to systemd. go-systemd's daemon package reads the
// socket from the environment only, so the notifier writes the datagram
// itself, as sd_notify(3) does.
type notifier struct {
	socket string // "" when not run by systemd
}

// takeNotifySocket returns a notifier for $NOTIFY_SOCKET and removes it
// from the environment.
func takeNotifySocket() notifier {
	n := notifier{socket: os.Getenv("NOTIFY_SOCKET")}
	os.Unsetenv("NOTIFY_SOCKET")
	return n
}

// notify sends state ("READY=1", "STOPPING=1") to systemd; nothing when
// not run by systemd. An abstract socket's "@" is the kernel's leading NUL
// (package net).
func (n notifier) notify(state string) error {
	if n.socket == "" {
		return nil
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.socket, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("NOTIFY_SOCKET %s: %w", n.socket, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state + "\n")); err != nil {
		return fmt.Errorf("NOTIFY_SOCKET %s: %w", n.socket, err)
	}
	return nil
}
