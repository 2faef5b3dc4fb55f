// Package node adapts the node's upstream components to harness
// components: the kubelet of k8s.io/kubernetes (Kubelet), so that a single
// binary runs it beside the control plane, or alone against a remote one;
// the container runtime as a child process of the binary (Runtime); and a
// kubelet's default flags for a node of the control plane's PKI
// (DefaultKubeletFlags, pki.Files.EnsureNode).
//
//	h.Add(components.NewAPIServer(), apiserverArgs)
//	h.Add(node.NewKubelet(), kubeletArgs, components.APIServerName)
//
// # The flow
//
// AddFlags adds the kubelet's flags to its scope. After Parse, Complete
// (harness.Completer) merges its --config file and --config-dir drop-ins
// under the flags as upstream does, records the files' feature gates as
// the kubelet's requests and validates the configuration: all before the
// barrier, which reconciles the kubelet's gates with the control plane's
// and applies them to the process gate. Run checks the kubelet's ports,
// builds its dependencies and runs upstream's app.Run until its context
// ends; Ready waits for the kubelet's /healthz.
//
// # Bounds
//
// A process starts its kubelet once (harness.Once): upstream's kubelet
// runs informers on wait.NeverStop and servers that ignore their context.
// The kubelet has no --emulated-version; it runs at the version the
// barrier reconciled, the control plane's. Its process-wide state (OOM
// score, open files, configz, sd_notify, cAdvisor, host sysctls, the exits
// it takes) is catalogued in docs/components.md at the repository root.
//
// The package is separate from package components so that a binary that
// runs only the control plane links none of the kubelet (cAdvisor's
// global flags, its init-time side effects).
package node
