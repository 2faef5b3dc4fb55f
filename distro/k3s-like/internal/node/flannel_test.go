package node

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/flannel"
	"github.com/kubeharness/kubeharness/harness"
)

// TestCNIConflist: the bridge takes flannel's lease and MTU and does not
// masquerade (flannel's rules masquerade what leaves the cluster CIDR).
func TestCNIConflist(t *testing.T) {
	var conf struct {
		Plugins []map[string]any `json:"plugins"`
	}
	require.NoError(t, json.Unmarshal([]byte(cniConflist("10.42.3.0/24", 1450, newDirs(t.TempDir()))), &conf))
	bridge := conf.Plugins[0]
	assert.Equal(t, "bridge", bridge["type"])
	assert.Equal(t, false, bridge["ipMasq"])
	assert.EqualValues(t, 1450, bridge["mtu"])
	ranges := bridge["ipam"].(map[string]any)["ranges"].([]any)
	assert.Equal(t, "10.42.3.0/24", ranges[0].([]any)[0].(map[string]any)["subnet"])
}

// TestAddNetwork: flannel after the kubelet and the CNI configuration
// after flannel; with --flannel-backend=none neither.
func TestAddNetwork(t *testing.T) {
	names := func(backend string) map[string][]string {
		c := Config{DataDir: t.TempDir(), Name: "node-a", ClusterCIDR: "10.42.0.0/16", Options: Options{FlannelBackend: backend}}
		h := &harness.Harness{}
		require.NoError(t, h.Add(&harness.Func{ComponentName: "kubelet", RunFunc: func(context.Context) error { return nil }}, nil))
		require.NoError(t, c.addNetwork(h, map[string][]string{}))
		out := map[string][]string{}
		for _, s := range h.Status().Components {
			if s.Name != "kubelet" {
				out[s.Name] = s.Dependencies
			}
		}
		return out
	}
	got := names("")
	assert.Equal(t, []string{"kubelet"}, got[flannel.Name])
	assert.Equal(t, []string{flannel.Name}, got[cniConfigName])
	assert.Empty(t, names(FlannelNone))
	assert.EqualError(t, CheckFlannelBackend("udp"), "--flannel-backend=udp: want vxlan, host-gw, none")
}
