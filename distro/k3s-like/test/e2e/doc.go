// Package e2e is the distro's end-to-end suite. Every test runs the
// k3s-like binary as real child processes, against temporary data dirs and
// free loopback ports: $K3S_LIKE_BINARY (make test-example builds it), or
// one TestMain builds from ../../cmd/k3s-like with $K3S_LIKE_LDFLAGS.
//
// The node's tests need root, runc, iptables, nftables, iproute2, and make,
// gcc and libc6-dev (images/busybox builds busybox), and run the binary in
// a network namespace they make (skipped when not root); those with agents
// run each node on a machine of its own (package ../machines: a namespace on
// one LAN), the cluster network tests (cluster_e2e_test.go) three of them,
// the host-gw one in make test-cluster; TestUpgradeRehearsal needs the binaries of two
// minors ($K3S_LIKE_OLD, $K3S_LIKE_NEW: make rehearsal); the datastore
// fault scenarios (faults_*) are make faults and make faults-short, left
// out of make test-example. incluster is a program the Services test runs
// in a Pod.
package e2e
