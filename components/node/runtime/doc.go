// Package runtime runs the node's CRI runtime (containerd) as a child
// process of the binary, as k3s does: a harness component (Runtime) whose
// Run starts the child and waits, whose Ready waits until its CRI socket
// answers, and whose Stop removes the pod sandboxes through the CRI
// (package sandboxes) before the child is sent SIGTERM. What the child
// leaves — its shims, their containers, CNI plugins still at work — is
// killed once it exited (KillLeftovers, on package proctree).
//
//	rt := runtime.New(runtime.Config{Command: []string{self, "containerd", "--config", file}, Socket: sock})
//	h.Add(rt, nil)
//	h.Add(kubelet.New(), kubeletArgs, runtime.Name)
//
// The child dies with the process (SIGKILL on the parent's death) and runs
// in a process group of its own.
package runtime
