package node

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubeharness/kubeharness/scoping"
)

// listenPort is an address a component will listen on, by the flag that
// sets it.
type listenPort struct {
	flag string
	addr string
}

// portsFree binds and closes each address, so that a taken one is a named
// error of the component instead of upstream's os.Exit (the kubelet's
// servers exit the process when their bind fails) or its endless retry
// (kube-proxy's).
func portsFree(component string, ports []listenPort) error {
	var errs []error
	for _, p := range ports {
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			errs = append(errs, &scoping.FlagError{Component: component, Flag: p.flag, Value: p.addr, Err: err})
			continue
		}
		_ = l.Close()
	}
	return errors.Join(errs...)
}

// waitHealthz polls http://addr/healthz (an unspecified host is asked on
// loopback) until ok accepts the answer's status and body, or ctx ends.
func waitHealthz(ctx context.Context, addr string, ok func(code int, body []byte) bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	url := "http://" + net.JoinHostPort(host, port) + "/healthz"
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		_ = resp.Body.Close()
		return ok(resp.StatusCode, body), nil
	})
}
