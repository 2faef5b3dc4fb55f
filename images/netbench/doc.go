// Command netbench measures a pod network from inside Pods: the round-trip
// time and the throughput of TCP between two of them, and the moment one
// first reaches the other.
//
//	netbench serve [-listen :5201]                  # echo ('e') or sink ('s') per connection
//	netbench rtt -addr IP:5201 [-n 2000]            # 1-byte ping-pongs over one connection
//	netbench tput -addr IP:5201 [-d 3s]             # bulk send; the server says how much arrived
//	netbench reach -addr IP:5201 [-every 50ms]      # dial until it connects; prints when
//
// Each client prints one line of key=value pairs (times in microseconds,
// "reached" a Unix time in nanoseconds) and exits 0, or 1 with the error.
// Built static (CGO_ENABLED=0) by ../cmd/mkimages into the image
// kubeharness.local/netbench.
package main
