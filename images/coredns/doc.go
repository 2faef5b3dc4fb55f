// Command coredns is CoreDNS (github.com/coredns/coredns, the version in
// ../go.mod) with only the plugins a cluster's DNS needs, the k3s Corefile's
// and a few more: reload, ready, health, prometheus, errors, log,
// loadbalance, rewrite, cache, hosts, kubernetes, loop and forward. They
// run in CoreDNS's own order (core/dnsserver/zdirectives.go), whatever the
// order of a Corefile's lines.
//
// Built static (CGO_ENABLED=0) by ../cmd/mkimages into the image
// [github.com/kubeharness/kubeharness/images.CoreDNSName]; `coredns
// -plugins` lists what it has.
package main
