// Package race holds registry-level reproductions, under `go test -race`,
// of what happens when a single binary wires kube-apiserver, kube-scheduler
// and kube-controller-manager to one process-wide
// compatibility.ComponentGlobalsRegistry, as the upstream commands do
// (k3s#11853, kubernetes#130483, and the KEP-4330 follow-up "the featuregate
// of the component that is started first does not take effect").
//
// Every reproduction comes in a pair: TestUpstream_* wires the flag sets
// exactly as the upstream commands do and asserts what upstream does at
// component-base v0.37.2, concretely, so that an upstream fix makes it fail
// loudly; TestHarness_* runs the same scenario through package scoping and
// asserts what the harness does instead. The package has no non-test code;
// README.md lists the reproductions and how to run each.
//
// The tests here use a synthetic "kube" feature gate and never import
// k8s.io/kubernetes. Reproductions with the real kube-scheduler and
// kube-controller-manager commands live in the components module.
package race
