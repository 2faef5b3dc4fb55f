package flags

import (
	"errors"
	"net"

	"github.com/kubeharness/kubeharness/scoping"
)

// Listen is an address a component will listen on, by the flag that sets
// it.
type Listen struct {
	Flag string
	Addr string
}

// PortsFree binds and closes each address, so that a taken one is a named
// error of the component instead of upstream's os.Exit (the kubelet's
// servers exit the process when their bind fails) or its endless retry
// (kube-proxy's).
func PortsFree(component string, ports []Listen) error {
	var errs []error
	for _, p := range ports {
		l, err := net.Listen("tcp", p.Addr)
		if err != nil {
			errs = append(errs, &scoping.FlagError{Component: component, Flag: p.Flag, Value: p.Addr, Err: err})
			continue
		}
		_ = l.Close()
	}
	return errors.Join(errs...)
}
