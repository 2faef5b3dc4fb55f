// Package controlplane is the default wiring of a single-binary control
// plane around one PKI layout (package pki): each upstream component's flags
// (DefaultArgs, DefaultFlags), the PKI's configuration (PKIConfig) and the
// embedded etcd's (EtcdConfig), all from the same Settings — ports, bind
// address, service CIDR, etcd endpoints, leader election — so that the
// paths in the flags are the files Ensure writes and the serving
// certificate covers the addresses the apiserver is reached at.
//
//	layout := pki.Layout{Dir: filepath.Join(dataDir, "pki")}
//	s := controlplane.Settings{APIServerPort: 6443}
//	cfg, err := controlplane.PKIConfig(layout, s)
//	files, err := pki.Ensure(cfg)
//	db := etcd.New(controlplane.EtcdConfig(layout, etcd.Config{DataDir: filepath.Join(dataDir, "etcd")}))
//	args := controlplane.DefaultArgs(layout, s)
//	h.Add(db, nil)
//	h.Add(components.NewAPIServer(), args[components.APIServerName], etcd.Name)
//
// The flags are the minimal set the three components need to run together
// with TLS everywhere, RBAC, service-account tokens, the front proxy and
// kubelet client certificates, and nothing a distro would want to choose
// differently without saying so. Add to them, or replace some, with
// package kubeargs (DefaultFlags) or by appending later flags (DefaultArgs:
// the last value of a flag wins).
package controlplane
