package flannel

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	goiptables "github.com/coreos/go-iptables/iptables"
	"github.com/vishvananda/netlink"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// VXLANDevice is the device the vxlan backend makes (VNI 1).
const VXLANDevice = "flannel.1"

// flannelChains are the iptables chains flannel v0.28 makes, each with the
// rule that jumps to it, as it writes them.
var flannelChains = []struct {
	table, chain, from string
	jump               []string
}{
	{"nat", "FLANNEL-POSTRTG", "POSTROUTING", []string{"-m", "comment", "--comment", "flanneld masq", "-j", "FLANNEL-POSTRTG"}},
	{"filter", "FLANNEL-FWD", "FORWARD", []string{"-m", "comment", "--comment", "flanneld forward", "-j", "FLANNEL-FWD"}},
}

// waitRules polls until the jumps to flannel's chains exist (IPv4).
func waitRules(ctx context.Context) error {
	ipt, err := goiptables.New()
	if err != nil {
		return err
	}
	return wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		for _, c := range flannelChains {
			if ok, err := ipt.Exists(c.table, c.from, c.jump...); err != nil || !ok {
				return false, nil
			}
		}
		return true, nil
	})
}

// Cleanup removes from the host what flannel leaves there once it
// stopped: the vxlan device (with its address, its routes and its
// neighbour and forwarding entries), host-gw's routes to the other nodes'
// pod CIDRs (routes into network through a gateway outside it), and its
// iptables chains with the jumps to them, in both IP families. Call it
// once Run returned: while flannel runs it puts them back (and v0.28.4
// panics, ending the process, when the vxlan device is deleted under
// it). What is not there is not an error.
func Cleanup(network netip.Prefix) error {
	var errs []error
	if link, err := netlink.LinkByName(VXLANDevice); err == nil {
		if err := netlink.LinkDel(link); err != nil {
			errs = append(errs, fmt.Errorf("deleting %s: %w", VXLANDevice, err))
		}
	}
	routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
	if err != nil {
		errs = append(errs, fmt.Errorf("listing routes: %w", err))
	}
	for _, r := range routes {
		if r.Dst == nil || r.Gw == nil {
			continue
		}
		dst, ok := netip.AddrFromSlice(r.Dst.IP.To4())
		gw, _ := netip.AddrFromSlice(r.Gw.To4())
		if ok && network.Contains(dst) && !network.Contains(gw) {
			if err := netlink.RouteDel(&r); err != nil {
				errs = append(errs, fmt.Errorf("deleting the route to %s via %s: %w", r.Dst, r.Gw, err))
			}
		}
	}
	for _, proto := range []goiptables.Protocol{goiptables.ProtocolIPv4, goiptables.ProtocolIPv6} {
		ipt, err := goiptables.NewWithProtocol(proto)
		if err != nil {
			continue // no ip6tables: nothing of flannel's there either
		}
		for _, c := range flannelChains {
			if exists, err := ipt.ChainExists(c.table, c.chain); err != nil || !exists {
				continue
			}
			for {
				if ok, err := ipt.Exists(c.table, c.from, c.jump...); err != nil || !ok {
					break
				}
				if err := ipt.Delete(c.table, c.from, c.jump...); err != nil {
					errs = append(errs, fmt.Errorf("deleting the jump from %s to %s (%s): %w", c.from, c.chain, c.table, err))
					break
				}
			}
			if err := ipt.ClearAndDeleteChain(c.table, c.chain); err != nil {
				errs = append(errs, fmt.Errorf("deleting %s (%s): %w", c.chain, c.table, err))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: cleanup: %w", Name, err)
	}
	return nil
}

// Rules are what flannel's credential needs: to list and watch every Node
// (the other nodes' leases) and to patch its own Node's status (its
// annotations, its NetworkUnavailable condition; NodeRestriction keeps a
// node's credential to its own Node).
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"nodes/status"}, Verbs: []string{"patch"}},
	}
}
