// Package testenv starts what a test (or an example binary) needs around
// the three real control-plane components: the PKI (package pki), an
// embedded etcd (package etcd) on loopback with TLS and client-certificate
// authentication, free loopback ports, and the flags each upstream
// component needs to run against them (package controlplane's defaults).
// It starts none of the components itself.
package testenv

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
)

// Etcd is the control plane's etcd (package etcd) started on its own,
// outside a harness: a single member on loopback, clients on https with
// client-certificate authentication.
type Etcd struct {
	// ClientURL is https://127.0.0.1:<port>.
	ClientURL string
	e         *etcd.Etcd
	files     *pki.Files
	stop      context.CancelFunc
	done      chan struct{}
}

// EtcdConfig is the configuration of an etcd (package etcd) with its data
// in dir, serving with files.EtcdServer and trusting files.EtcdCA, on two
// free loopback ports, logging at level warn, without fsync (a test's data
// is thrown away).
func EtcdConfig(dir string, files *pki.Files) (etcd.Config, error) {
	clientPort, err := FreePort()
	if err != nil {
		return etcd.Config{}, err
	}
	peerPort, err := FreePort()
	if err != nil {
		return etcd.Config{}, err
	}
	return etcd.Config{
		DataDir:       dir,
		ClientPort:    clientPort,
		PeerPort:      peerPort,
		CertFile:      files.EtcdServer.CertFile,
		KeyFile:       files.EtcdServer.KeyFile,
		TrustedCAFile: files.EtcdCA.CertFile,
		UnsafeNoFsync: true,
	}, nil
}

// StartEtcd starts etcd with EtcdConfig(dir, files) and waits until it is
// ready (at most a minute). It logs through klog.
func StartEtcd(dir string, files *pki.Files) (*Etcd, error) {
	cfg, err := EtcdConfig(dir, files)
	if err != nil {
		return nil, err
	}
	e := etcd.New(cfg)
	ctx, stop := context.WithCancel(context.Background())
	out := &Etcd{ClientURL: e.ClientURL(), e: e, files: files, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(out.done)
		_ = e.Run(ctx) // its error is Ready's
	}()
	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := e.Ready(readyCtx); err != nil {
		out.Close()
		return nil, fmt.Errorf("testenv: etcd not ready: %w", err)
	}
	return out, nil
}

// Client returns an etcd client authenticated with the apiserver's etcd
// client certificate. Close it.
func (e *Etcd) Client() (*clientv3.Client, error) {
	return e.e.Client(klog.Background(), e.files.APIServerEtcdClient.CertFile, e.files.APIServerEtcdClient.KeyFile)
}

// KeyCount returns how many keys exist under prefix.
func (e *Etcd) KeyCount(ctx context.Context, prefix string) (int64, error) {
	c, err := e.Client()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	resp, err := c.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return 0, err
	}
	return resp.Count, nil
}

// Close stops etcd and waits for it. It may be called more than once.
func (e *Etcd) Close() {
	e.stop()
	<-e.done
}

// ControlPlane is everything around the three components: the PKI in
// Dir/pki, etcd with its data in Dir/etcd, and a free loopback port for
// each component's secure port.
type ControlPlane struct {
	Dir  string
	PKI  *pki.Files
	Etcd *Etcd

	APIServerPort, SchedulerPort, ControllerManagerPort int
}

// Start makes the PKI in dir/pki, picks the ports and starts etcd.
func Start(dir string) (*ControlPlane, error) {
	cp := &ControlPlane{Dir: dir}
	var err error
	for _, p := range []*int{&cp.APIServerPort, &cp.SchedulerPort, &cp.ControllerManagerPort} {
		if *p, err = FreePort(); err != nil {
			return nil, err
		}
	}
	if cp.PKI, err = controlplane.EnsurePKI(pki.Layout{Dir: filepath.Join(dir, "pki")}, cp.settings(), ""); err != nil {
		return nil, err
	}
	if cp.Etcd, err = StartEtcd(filepath.Join(dir, "etcd"), cp.PKI); err != nil {
		return nil, err
	}
	return cp, nil
}

// settings are the control plane's (package controlplane): loopback, the
// ports Start picked, etcd's client URL once it runs, leader election on.
func (cp *ControlPlane) settings() controlplane.Settings {
	s := controlplane.Settings{
		APIServerPort:         cp.APIServerPort,
		SchedulerPort:         cp.SchedulerPort,
		ControllerManagerPort: cp.ControllerManagerPort,
		ServiceClusterIPRange: ServiceClusterIPRange,
		LeaderElect:           true,
	}
	if cp.Etcd != nil {
		s.EtcdServers = cp.Etcd.ClientURL
	}
	return s
}

// APIServerURL is https://127.0.0.1:<APIServerPort>.
func (cp *ControlPlane) APIServerURL() string { return cp.settings().APIServerURL() }

// ServiceClusterIPRange is the --service-cluster-ip-range the apiserver
// gets; its first address is the PKI's default service IP.
const ServiceClusterIPRange = controlplane.DefaultServiceClusterIPRange

// args are the default flags of component for this control plane
// (controlplane.DefaultArgs), then extra (later flags win).
func (cp *ControlPlane) args(component string, extra []string) []string {
	return append(controlplane.DefaultArgs(cp.PKI.Layout(), cp.settings())[component], extra...)
}

// APIServerArgs are kube-apiserver's flags for this control plane
// (controlplane.DefaultArgs), then extra (later flags win).
func (cp *ControlPlane) APIServerArgs(extra ...string) []string {
	return cp.args(names.APIServer, extra)
}

// SchedulerArgs are kube-scheduler's flags for this control plane
// (controlplane.DefaultArgs, leader election on, as upstream's default),
// then extra.
func (cp *ControlPlane) SchedulerArgs(extra ...string) []string {
	return cp.args(names.Scheduler, extra)
}

// ControllerManagerArgs are kube-controller-manager's flags for this
// control plane (controlplane.DefaultArgs, leader election on, as
// upstream's default), then extra.
func (cp *ControlPlane) ControllerManagerArgs(extra ...string) []string {
	return cp.args(names.ControllerManager, extra)
}

// AdminConfig is a client configuration from the admin kubeconfig
// (system:masters).
func (cp *ControlPlane) AdminConfig() (*rest.Config, error) {
	return clientcmd.BuildConfigFromFlags("", cp.PKI.AdminKubeconfig)
}

// Close stops etcd.
func (cp *ControlPlane) Close() {
	if cp.Etcd != nil {
		cp.Etcd.Close()
	}
}
