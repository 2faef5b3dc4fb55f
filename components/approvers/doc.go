// Package approvers holds the control plane's approvers of certificate
// signing requests that upstream signs but never approves. Today one: the
// ServingApprover of the kubelets' serving certificates (signer
// kubernetes.io/kubelet-serving, a kubelet's serverTLSBootstrap), a
// harness component of the servers, with its rules (ReviewServing) and
// its RBAC (ServingApproverRules).
//
//	h.Add(&approvers.ServingApprover{Kubeconfig: files.KubeletServingApproverKubeconfig}, nil)
//
// It runs where the control plane runs, with an identity of its own, and
// imports neither the kubelet nor the node's adapters: a server without a
// node links none of them.
package approvers
