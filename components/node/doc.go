// Package node adapts the node's upstream components to harness
// components: the kubelet and kube-proxy of k8s.io/kubernetes (Kubelet,
// KubeProxy), so that a single binary runs them beside the control plane,
// or alone against a remote one;
// the container runtime as a child process of the binary (Runtime); a
// kubelet's default flags for a node of the control plane's PKI
// (DefaultKubeletFlags, pki.Files.EnsureNode, or with ServingBootstrap a
// serving certificate the kubelet requests); and, for the servers, the
// approver of those requests (ServingApprover, ReviewServing,
// ServingApproverRules).
//
//	h.Add(components.NewAPIServer(), apiserverArgs)
//	h.Add(node.NewKubelet(), kubeletArgs, components.APIServerName)
//	h.Add(node.NewKubeProxy(), proxyArgs, node.KubeletName)
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
// ends; Ready waits for the kubelet's /healthz and its client certificate
// (a bootstrapping kubelet writes it once its request is signed).
//
// kube-proxy's Complete reads only its --config file's feature gates;
// its Run, after the barrier, checks its ports, waits for its Node to
// have an address, then runs upstream's Complete, Validate and Run; Ready
// waits for its /healthz (its rules synced once). CleanupProxyRules and
// CleanupKubeletRules remove the host rules both leave, once stopped.
//
// # Bounds
//
// A process starts its kubelet and its kube-proxy once (harness.Once):
// upstream's run informers on wait.NeverStop and servers or loops that
// ignore their context. Neither has --emulated-version; they run at the
// version the barrier reconciled, the control plane's. Its process-wide state (OOM
// score, open files, configz, sd_notify, cAdvisor, host sysctls, the exits
// it takes) is catalogued in docs/components.md at the repository root.
//
// The package is separate from package components so that a binary that
// runs only the control plane links none of the kubelet (cAdvisor's
// global flags, its init-time side effects).
package node
