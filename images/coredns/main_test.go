package main

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/miekg/dns"
)

// TestDirectivesInCoreDNSOrder: the plugins run in CoreDNS's own order (a
// subsequence of its generated list, which main replaces) and each is
// registered.
func TestDirectivesInCoreDNSOrder(t *testing.T) {
	generated := dnsserver.Directives // main has not run
	i := 0
	for _, d := range directives {
		j := slices.Index(generated[i:], d)
		if j < 0 {
			t.Fatalf("directive %s is not in CoreDNS's order after %v (CoreDNS's: %v)", d, generated[:i], generated)
		}
		i += j + 1
	}
	plugins := strings.Fields(caddy.DescribePlugins())
	for _, d := range directives {
		if !slices.Contains(plugins, d) {
			t.Errorf("plugin %s not registered:\n%s", d, caddy.DescribePlugins())
		}
	}
}

// TestAnswersAndForwardsNowhere serves a Corefile in this process: a name
// of the hosts plugin is answered; any other gets SERVFAIL, as the cluster's
// CoreDNS without an upstream.
func TestAnswersAndForwardsNowhere(t *testing.T) {
	old := dnsserver.Directives
	dnsserver.Directives = directives
	t.Cleanup(func() { dnsserver.Directives = old })
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	corefile := fmt.Sprintf(`.:%d {
    errors
    hosts {
        192.0.2.53 answer.test
        fallthrough
    }
    cache 30
    loadbalance
}
`, port)
	inst, err := caddy.Start(caddy.CaddyfileInput{Contents: []byte(corefile), ServerTypeName: "dns"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop()

	ask := func(name string) *dns.Msg {
		t.Helper()
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeA)
		r, err := dns.Exchange(m, fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return r
	}
	r := ask("answer.test.")
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 || r.Answer[0].(*dns.A).A.String() != "192.0.2.53" {
		t.Errorf("answer.test: %v", r)
	}
	if r := ask("example.com."); r.Rcode != dns.RcodeServerFailure || len(r.Answer) != 0 {
		t.Errorf("example.com: rcode %s, want SERVFAIL and no answer: %v", dns.RcodeToString[r.Rcode], r)
	}
}
