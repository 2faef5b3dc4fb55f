package controlplane_test

import (
	"fmt"

	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
)

// Each component's flags for a PKI layout, before any file exists; the
// zero Settings are loopback on the default ports.
func ExampleDefaultArgs() {
	args := controlplane.DefaultArgs(pki.Layout{Dir: "/var/lib/cp/pki"}, controlplane.Settings{LeaderElect: true})
	for _, a := range args[names.Scheduler] {
		fmt.Println(a)
	}
	// Output:
	// --kubeconfig=/var/lib/cp/pki/kube-scheduler.kubeconfig
	// --authentication-kubeconfig=/var/lib/cp/pki/kube-scheduler.kubeconfig
	// --authorization-kubeconfig=/var/lib/cp/pki/kube-scheduler.kubeconfig
	// --bind-address=127.0.0.1
	// --secure-port=10259
	// --leader-elect=true
	// --profiling=false
}

// The PKI's configuration follows the same Settings: the kubeconfigs point
// at the advertised address, the serving certificate covers the service IP.
func ExamplePKIConfig() {
	s := controlplane.Settings{BindAddress: "192.0.2.10", APIServerPort: 7443, ServiceClusterIPRange: "10.43.0.0/16"}
	cfg, err := controlplane.PKIConfig(pki.Layout{Dir: "/var/lib/cp/pki"}, s)
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.APIServerURL, cfg.ServiceIP, cfg.ServingIPs)
	// Output:
	// https://192.0.2.10:7443 10.43.0.1 [192.0.2.10]
}
