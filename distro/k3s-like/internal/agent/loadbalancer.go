package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strconv"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/loadbalancer"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
)

// loadBalancer is the agent's client-side load balancer (k3s's): on
// 127.0.0.1:--lb-server-port, in front of the server joined through and
// every apiserver the kubernetes Service's endpoints name, read with the
// kubelet's credential. The kubelet's kubeconfig (which flannel and the
// feature reporter use too) and kube-proxy's point at it: they are
// rewritten so on every start.
func (a *options) loadBalancer(c node.Config, u *url.URL) (*loadbalancer.LoadBalancer, error) {
	port := u.Port()
	if port == "" {
		port = "443"
	}
	lb := &loadbalancer.LoadBalancer{
		Address:    net.JoinHostPort("127.0.0.1", strconv.Itoa(a.lbPort)),
		Servers:    []string{net.JoinHostPort(u.Hostname(), port)},
		Kubeconfig: c.Kubeconfig(),
	}
	for _, kc := range []string{c.Kubeconfig(), c.KubeProxyKubeconfig()} {
		if err := pointAt(kc, lb.URL()); err != nil {
			return nil, fmt.Errorf("pointing %s at the agent's load balancer (--lb-server-port=%d): %w", kc, a.lbPort, err)
		}
	}
	return lb, nil
}

// pointAt sets the server of every cluster of the kubeconfig at path (if
// it exists) to server, keeping its mode 0600.
func pointAt(path, server string) error {
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	changed := false
	for _, cl := range cfg.Clusters {
		if cl.Server != server {
			cl.Server, changed = server, true
		}
	}
	if !changed {
		return nil
	}
	b, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o600); err != nil {
		return err
	}
	_, err = os.Stat(path)
	return err
}
