// Package kubelet runs the real kubelet of k8s.io/kubernetes as a harness
// component (Kubelet), beside the control plane or alone against a remote
// one.
//
//	h.Add(components.NewAPIServer(), apiserverArgs)
//	h.Add(kubelet.New(), kubeletArgs, components.APIServerName)
//
// AddFlags adds the kubelet's flags to its scope. After Parse, Complete
// (harness.Completer) merges its --config file and --config-dir drop-ins
// under the flags as upstream does (config.go), records the files'
// feature gates as the kubelet's requests and validates the
// configuration: all before the barrier, which reconciles the kubelet's
// gates with the control plane's and applies them to the process gate.
// Run checks the kubelet's ports, builds its dependencies and runs
// upstream's app.Run until its context ends; Ready waits for the
// kubelet's /healthz and its client certificate (a bootstrapping kubelet
// writes it once its request is signed).
//
// A process starts its kubelet once (harness.Once): upstream's runs
// informers on wait.NeverStop and servers that ignore their context. It
// has no --emulated-version; it runs at the version the barrier
// reconciled, the control plane's. Its process-wide state (OOM score, open
// files, configz, sd_notify, cAdvisor, host sysctls, the exits it takes)
// is catalogued in docs/components.md at the repository root. Its default
// flags for a node of the control plane's PKI, and the cleanup of the host
// rules it leaves, are in package node.
package kubelet
