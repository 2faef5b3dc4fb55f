package node

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/kubernetes/pkg/proxy/iptables"
	"k8s.io/kubernetes/pkg/proxy/nftables"
	utiliptables "k8s.io/kubernetes/pkg/util/iptables"
)

// CleanupProxyRules removes the host rules of kube-proxy in iptables and
// nftables mode — its KUBE-* chains of both IP families and its
// kube-proxy nftables tables — as `kube-proxy --cleanup` does (IPVS is
// left alone: the adapter does not run it). Call it once kube-proxy has
// stopped; while it runs, its sync loop puts them back. Errors are
// upstream's, logged by it; the error returned says which mode failed.
func CleanupProxyRules(ctx context.Context) error {
	var errs []error
	if iptables.CleanupLeftovers(ctx) {
		errs = append(errs, errors.New("kube-proxy's iptables rules were not all removed (see the log)"))
	}
	if nftables.CleanupLeftovers(ctx) {
		errs = append(errs, errors.New("kube-proxy's nftables tables were not all removed (see the log)"))
	}
	return errors.Join(errs...)
}

// kubeletChains are the iptables chains the kubelet creates (upstream's
// kubelet_network_linux.go): the hint chain, the canary it monitors, and
// the firewall chain with the jumps to it.
var kubeletChains = []struct {
	table utiliptables.Table
	chain utiliptables.Chain
}{
	{utiliptables.TableMangle, "KUBE-IPTABLES-HINT"},
	{utiliptables.TableMangle, "KUBE-KUBELET-CANARY"},
	{utiliptables.TableNAT, "KUBE-KUBELET-CANARY"},
	{utiliptables.TableFilter, "KUBE-KUBELET-CANARY"},
	{utiliptables.TableFilter, "KUBE-FIREWALL"},
}

// CleanupKubeletRules removes the iptables chains the kubelet creates on
// the host (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY, KUBE-FIREWALL and
// the INPUT and OUTPUT jumps to it), in both IP families, with the
// host's iptables commands. Call it once
// the kubelet has stopped: its monitor recreates them within a minute
// while it runs. A chain that does not exist is not an error.
func CleanupKubeletRules() error {
	var errs []error
	for family, ipt := range utiliptables.NewBestEffort() {
		if exists, err := ipt.ChainExists(utiliptables.TableFilter, "KUBE-FIREWALL"); err == nil && exists {
			for _, from := range []utiliptables.Chain{utiliptables.ChainInput, utiliptables.ChainOutput} {
				// DeleteRule checks first: a missing jump is not an error.
				if err := ipt.DeleteRule(utiliptables.TableFilter, from, "-j", "KUBE-FIREWALL"); err != nil {
					errs = append(errs, fmt.Errorf("%s: deleting the jump from %s to KUBE-FIREWALL: %w", family, from, err))
				}
			}
		}
		for _, c := range kubeletChains {
			if exists, err := ipt.ChainExists(c.table, c.chain); err != nil || !exists {
				continue
			}
			if err := ipt.FlushChain(c.table, c.chain); err != nil {
				errs = append(errs, fmt.Errorf("%s: flushing %s in %s: %w", family, c.chain, c.table, err))
				continue
			}
			if err := ipt.DeleteChain(c.table, c.chain); err != nil {
				errs = append(errs, fmt.Errorf("%s: deleting %s in %s: %w", family, c.chain, c.table, err))
			}
		}
	}
	return errors.Join(errs...)
}
