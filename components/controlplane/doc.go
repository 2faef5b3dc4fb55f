// Package controlplane is the default wiring of a single-binary control
// plane around one PKI layout (package pki): each upstream component's flags
// (DefaultArgs, DefaultFlags), the PKI (PKIConfig, EnsurePKI) and the
// embedded etcd's configuration (EtcdConfig), all from the same Settings —
// ports, bind address, service CIDR, etcd endpoints, leader election — so
// that the paths in the flags are the files Ensure writes and the serving
// certificate covers the addresses the apiserver is reached at; and the
// components in the order they depend on each other (Components.Add):
// etcd → kube-apiserver → kube-scheduler and kube-controller-manager →
// the feature publisher.
//
//	layout := pki.Layout{Dir: filepath.Join(dataDir, "pki")}
//	s := controlplane.Settings{APIServerPort: 6443}
//	_, err := controlplane.EnsurePKI(layout, s, layout.AdminKubeconfig())
//	db := etcd.New(controlplane.EtcdConfig(layout, etcd.Config{DataDir: filepath.Join(dataDir, "etcd")}))
//	err = controlplane.Components{
//		Etcd:              db,
//		APIServer:         components.NewAPIServer(),
//		Scheduler:         components.NewScheduler(),
//		ControllerManager: components.NewControllerManager(),
//		Publisher:         &featurepub.Publisher{Server: "a", Kubeconfig: layout.AdminKubeconfig()},
//	}.Add(h, controlplane.DefaultArgs(layout, s))
//
// The flags are the minimal set the three components need to run together
// with TLS everywhere, RBAC, service-account tokens, the front proxy and
// kubelet client certificates, and nothing a distro would want to choose
// differently without saying so. Add to them, or replace some, with
// package kubeargs (DefaultFlags) or by appending later flags (DefaultArgs:
// the last value of a flag wins).
package controlplane
