// Package machines makes "machines" on this host for tests: each a named
// network namespace whose eth0 is on one LAN (a bridge in a namespace of
// the LAN's own), with a documentation-range address (192.0.2.10, .11, …)
// and a default route to 192.0.2.1, which nobody has: nodes that do not
// share a routing table, and no packet that leaves the host.
//
//	lan, err := machines.New(machines.DefaultPrefix(), 3)
//	defer lan.Close()                      // kills what is left in them, deletes them
//	cmd := lan.Machines[1].Command("k3s-like", "agent", …) // nsenter --net=/run/netns/…
//
// Teardown works from the prefix alone, so that a command
// (cmd/machines up|down) can drive it from a script; New first tears
// down the LANs of DefaultPrefix left by a process that is gone. It needs
// root and iproute2's ip and nsenter.
package machines
