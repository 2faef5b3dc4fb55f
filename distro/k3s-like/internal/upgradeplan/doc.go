// Package upgradeplan computes what changing a running control plane's
// emulated version (KEP-4330) will change: the kube feature gates whose
// value flips, and the built-in API group-versions and resources that start
// or stop being served. It computes them with upstream's own machinery,
// from the binary it runs in (which must be the server's):
//
//   - gates: a copy of the kube gate at the target emulation version, with
//     the plan's explicit settings applied as upstream applies them
//     (featuregate's versioned specs; an explicit setting keeps its value);
//   - APIs: every versioned kind of the built-in scheme that has a list
//     kind (a top-level resource), kept if kube-apiserver's default
//     resource configuration plus the server's --runtime-config enables it
//     (resourceconfig.MergeAPIResourceConfigs), if the gates that guard its
//     storage are on at that version (featurecheck.GatesFor), and if
//     apiserver's ResourceExpirationEvaluator — what kube-apiserver runs
//     before it installs a group — keeps it at that version (the types'
//     generated introduced/removed versions).
//
// It models kube-apiserver's built-in groups only: not the CRDs and
// aggregated APIs (apiextensions, apiregistration), and a resource's name is
// its kind's guessed plural (meta.UnsafeGuessKindToResource). Served
// compares the model with a live server's discovery so that a difference is
// seen, not assumed away.
//
// The flow: the command (k3s-like upgrade-plan) reads the server's plan
// and its kube-apiserver's arguments from the status endpoint, and Build
// makes the Report: Gates at the target, Served at the current and the
// target version, their Diff, the manifests' objects judged at the target,
// and, with a live discovery (LiveAPIs), where the model at the current
// version disagrees with the server.
package upgradeplan
