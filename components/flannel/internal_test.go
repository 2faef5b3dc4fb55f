package flannel

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flannel-io/flannel/pkg/subnet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNetConf: the net-conf.json Run writes is what flannel's own parser
// reads as the cluster's network and the backend, IPv4 only.
func TestNetConf(t *testing.T) {
	for _, backend := range Backends() {
		b, err := netConf("10.42.0.0/16", backend)
		require.NoError(t, err)
		c, err := subnet.ParseConfig(string(b))
		require.NoError(t, err)
		assert.Equal(t, backend, c.BackendType)
		assert.Equal(t, "10.42.0.0/16", c.Network.String())
		assert.True(t, c.EnableIPv4)
		assert.False(t, c.EnableIPv6)
	}
}

// TestReadSubnetFile: an earlier run's network and lease, as flannel
// writes them (the subnet's first address), or zero values.
func TestReadSubnetFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "subnet.env")
	n, s := readSubnetFile(path)
	assert.True(t, n.Empty() && s.Empty(), "no file")
	require.NoError(t, os.WriteFile(path, []byte("FLANNEL_NETWORK=10.42.0.0/16\nFLANNEL_SUBNET=10.42.3.1/24\nFLANNEL_MTU=1450\nFLANNEL_IPMASQ=true\n"), 0o600))
	n, s = readSubnetFile(path)
	assert.Equal(t, "10.42.0.0/16", n.String())
	assert.Equal(t, "10.42.3.0/24", s.String())
}
