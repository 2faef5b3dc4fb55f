// Package flags is what the adapters share about their flags: adding
// upstream's named flag sets to a scope (AddSets), refusing flags an
// adapter keeps by name but cannot honour (Refuse), making the kubelet's and
// kube-proxy's --feature-gates set the scope's gate (TeeFeatureGates), and
// checking that the ports a component will listen on are free (PortsFree).
package flags
