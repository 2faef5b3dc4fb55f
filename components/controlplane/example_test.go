package controlplane_test

import (
	"fmt"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
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

// The components of a control plane, added to a harness in the order they
// depend on each other, each with its default flags.
func ExampleComponents_Add() {
	layout := pki.Layout{Dir: "/var/lib/cp/pki"}
	s := controlplane.Settings{}
	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
	err := controlplane.Components{
		Etcd:              etcd.New(controlplane.EtcdConfig(layout, etcd.Config{DataDir: "/var/lib/cp/etcd"})),
		APIServer:         components.NewAPIServer(),
		Scheduler:         components.NewScheduler(),
		ControllerManager: components.NewControllerManager(),
		Publisher:         &featurepub.Publisher{Server: "cp-1", Kubeconfig: layout.AdminKubeconfig()},
	}.Add(h, controlplane.DefaultArgs(layout, s))
	if err != nil {
		panic(err)
	}
	for _, c := range h.Status().Components {
		fmt.Println(c.Name, c.Dependencies)
	}
	// Output:
	// etcd []
	// kube-apiserver [etcd]
	// kube-scheduler [kube-apiserver]
	// kube-controller-manager [kube-apiserver]
	// feature-publisher [kube-apiserver kube-scheduler kube-controller-manager]
}
