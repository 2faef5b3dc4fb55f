package node_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/node"
)

// hostRules are rules as kube-proxy (iptables and nftables modes) and the
// kubelet leave them on a host, and one chain of someone else's.
var hostRules = [][]string{
	{"iptables", "-t", "nat", "-N", "KUBE-SERVICES"},
	{"iptables", "-t", "nat", "-I", "PREROUTING", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"},
	{"iptables", "-t", "nat", "-I", "OUTPUT", "-m", "comment", "--comment", "kubernetes service portals", "-j", "KUBE-SERVICES"},
	{"iptables", "-t", "nat", "-N", "KUBE-SVC-ABCDEFGHIJKLMNOP"},
	{"iptables", "-t", "nat", "-A", "KUBE-SERVICES", "-d", "10.43.0.20/32", "-j", "KUBE-SVC-ABCDEFGHIJKLMNOP"},
	{"iptables", "-t", "mangle", "-N", "KUBE-IPTABLES-HINT"},
	{"iptables", "-t", "mangle", "-N", "KUBE-KUBELET-CANARY"},
	{"iptables", "-t", "nat", "-N", "KUBE-KUBELET-CANARY"},
	{"iptables", "-t", "filter", "-N", "KUBE-KUBELET-CANARY"},
	{"iptables", "-t", "filter", "-N", "KUBE-FIREWALL"},
	{"iptables", "-t", "filter", "-A", "KUBE-FIREWALL", "-d", "127.0.0.0/8", "!", "-s", "127.0.0.0/8", "-j", "DROP"},
	{"iptables", "-I", "INPUT", "-j", "KUBE-FIREWALL"},
	{"iptables", "-I", "OUTPUT", "-j", "KUBE-FIREWALL"},
	{"nft", "add", "table", "ip", "kube-proxy"},
	{"nft", "add", "chain", "ip", "kube-proxy", "services"},
	{"nft", "add", "table", "ip6", "kube-proxy"},
	{"iptables", "-t", "nat", "-N", "SOMEONE-ELSES"},
	{"nft", "add", "table", "ip", "someone-elses"},
}

// hostState is what iptables-save and nft list tables show.
func hostState() (string, error) {
	ipt, err := exec.Command("iptables-save").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("iptables-save: %v: %s", err, ipt)
	}
	nft, err := exec.Command("nft", "list", "tables").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("nft list tables: %v: %s", err, nft)
	}
	return string(ipt) + string(nft), nil
}

// cleanupRulesChild runs in a network namespace of its own: it writes
// hostRules, cleans up as a distro's stop would, and prints what is left
// of ours ("LEFT ...") and of the others' ("KEPT ...").
func cleanupRulesChild() int {
	for _, r := range hostRules {
		if out, err := exec.Command(r[0], r[1:]...).CombinedOutput(); err != nil {
			fmt.Printf("SETUP %v: %v: %s\n", r, err, out)
			return 1
		}
	}
	before, err := hostState()
	if err != nil {
		fmt.Println("SETUP", err)
		return 1
	}
	fmt.Println("BEFORE", strings.Count(before, "KUBE-")+strings.Count(before, "kube-proxy"))
	if err := node.CleanupProxyRules(context.Background()); err != nil {
		fmt.Println("ERROR", err)
	}
	if err := node.CleanupKubeletRules(); err != nil {
		fmt.Println("ERROR", err)
	}
	after, err := hostState()
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	for _, line := range strings.Split(after, "\n") {
		switch {
		case strings.Contains(line, "KUBE-") || strings.Contains(line, "kube-proxy"):
			fmt.Println("LEFT", line)
		case strings.Contains(line, "SOMEONE-ELSES") || strings.Contains(line, "someone-elses"):
			fmt.Println("KEPT", line)
		}
	}
	return 0
}

// TestCleanupRules: CleanupProxyRules and CleanupKubeletRules remove every
// KUBE-* chain and jump and kube-proxy's nftables tables that kube-proxy
// and the kubelet create, and nothing of anyone else's. It runs in a
// network namespace of its own (root, unshare, iptables and nft needed).
func TestCleanupRules(t *testing.T) {
	for _, cmd := range []string{"unshare", "iptables", "iptables-save", "nft"} {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("%s is not installed", cmd)
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a network namespace")
	}
	cmd := exec.CommandContext(t.Context(), "unshare", "--net", os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fakeChildEnv+"=cleanup-rules")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	text := string(out)
	t.Log(text)
	assert.Regexp(t, `BEFORE [1-9][0-9]*\n`, text, "the rules were written")
	assert.NotContains(t, text, "ERROR")
	assert.NotContains(t, text, "LEFT")
	assert.Contains(t, text, "KEPT :SOMEONE-ELSES")
	assert.Contains(t, text, "KEPT table ip someone-elses")
}
