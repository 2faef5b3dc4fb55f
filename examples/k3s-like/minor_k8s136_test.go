//go:build k8s1_36

package main_test

// apiserverStopHangsWithoutDatastore: at 1.36, kube-apiserver's stop never
// ends while etcd does not answer. Its identity lease controller
// (k8s.io/component-helpers v0.36 apimachinery/lease) retries creating the
// lease in backoffEnsureLease, holding reconcilingLock, until its context
// ends — and that context ends only after the pre-shutdown hooks, one of
// which is the controller's Stop, waiting for that lock. v0.37 has Stop
// close a channel that ends the retries; no 1.36 patch release has it
// (v0.36.6 neither). The harness abandons kube-apiserver at its stop
// timeout and names it: exit 1, bounded.
const apiserverStopHangsWithoutDatastore = true
