// Package proctree reads the process tree from /proc once (Read) and
// selects in it — a process group, the shims of a containerd socket, the
// processes run from a directory, everything under some roots — then kills
// what was selected (Kill). The node's runtime kills what containerd left
// with it (runtime.KillLeftovers); the node benchmark measures and sweeps
// the same processes. It imports nothing of Kubernetes.
//
//	t, err := proctree.Read()
//	pids := t.Descendants(t.Shims(socket)...)
//	proctree.Kill(pids, time.Second)
package proctree
