package server

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/deploy"
)

func TestParseFileMode(t *testing.T) {
	for in, want := range map[string]os.FileMode{"0600": 0o600, "600": 0o600, "644": 0o644, "0640": 0o640, "0": 0} {
		got, err := parseFileMode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "999", "0o600", "rw-r--r--", "1777", "-1"} {
		_, err := parseFileMode(in)
		assert.ErrorContains(t, err, "--write-kubeconfig-mode="+in+": want octal permission bits", in)
	}
}

// TestManifestFlags: --disable takes the packaged components' names only,
// --cluster-dns-upstream addresses or a path.
func TestManifestFlags(t *testing.T) {
	assert.Equal(t, []string{"coredns"}, deploy.PackagedNames())
	for _, tc := range []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"--disable=coredns"}, ""},
		{[]string{"--disable", "coredns", "--disable", "coredns"}, ""},
		{[]string{"--disable=traefik"}, "--disable=traefik: not a packaged component; they are coredns"},
		{[]string{"--disable=coredns,servicelb"}, "--disable=servicelb: not a packaged component; they are coredns"},
		{[]string{"--cluster-dns-upstream=192.0.2.53", "--cluster-dns-upstream=[2001:db8::53]:5353,/etc/resolv.conf"}, ""},
		{[]string{"--cluster-dns-upstream=dns.example"}, "--cluster-dns-upstream=dns.example: want an IP address"},
	} {
		cmd, o := newCommandWithOptions()
		require.NoError(t, cmd.Flags().Parse(tc.args))
		err := deploy.CheckFlags(o.disable, o.dnsUpstreams)
		if tc.want == "" {
			assert.NoError(t, err, "%q", tc.args)
		} else {
			assert.ErrorContains(t, err, tc.want, "%q", tc.args)
		}
	}
}
