// Package featurepub publishes feature discovery (KEP-3920) as objects of
// features.kubeharness.io/v1alpha1 (package
// components/apis/features/v1alpha1): `kubectl get features` shows every
// kube feature gate with its stage, default, who set it, and whether it is
// enabled in every server and on every node (true, false or partial).
//
// Three harness components, each never failing its harness (apiserver
// errors are logged and retried with backoff until its context ends):
//
//   - Publisher, in each server, after the control plane: installs the
//     CRDs and server-side applies one Feature per gate with its own entry
//     of status.servers, only those whose copy in the apiserver differs
//     (none after a restart with the same plan); deletes the Features of
//     gates no server knows; applies again one deleted, or whose entry
//     someone else changed, while it runs.
//   - Reporter, on each node, after the kubelet: sends the node's
//     NodeFeatureReport (BuildNodeReport, NodeReport.Send) with the node's
//     credential, written only when it changes, owned by its Node; the
//     gates' values live in a FeatureProfile shared by every node that runs
//     the same values.
//   - Summarizer, in each server, after the Publisher: watches the three
//     kinds and applies to each Feature whose view changed the cluster's
//     summary (Summarize): counts per component kind on nodes, at most 16
//     groups by version and SET-BY, at most 10 disagreeing node names, and
//     the Enabled condition.
//
// Wiring in a server (controlplane.Components does it):
//
//	pub := &featurepub.Publisher{Server: nodeName, Kubeconfig: adminKubeconfig}
//	sum := &featurepub.Summarizer{Kubeconfig: adminKubeconfig}
//	h.Add(pub, nil, components.APIServerName, components.SchedulerName, components.ControllerManagerName)
//	h.Add(sum, nil, pub.Name())
//
// and on a node:
//
//	h.Add(&featurepub.Reporter{Node: name, Kubeconfig: kubeletKubeconfig,
//		Plan: func() *scoping.Plan { return h.Status().Plan }}, nil, names.Kubelet)
//
// docs/features-nodes.md gives the options considered and their costs.
package featurepub
