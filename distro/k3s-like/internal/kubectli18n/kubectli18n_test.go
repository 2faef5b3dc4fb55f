package kubectli18n

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWanted(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"/usr/local/bin/kubectl", "get", "pods"}, true},
		{[]string{"kubectl"}, true},
		{[]string{"k3s-like", "kubectl", "get", "pods"}, true},
		{[]string{"k3s-like", "--debug", "kubectl", "--help"}, true},
		{[]string{"k3s-like", "server"}, false},
		{[]string{"/var/lib/k3s-like/agent/bin/host-local"}, false},
		{[]string{"containerd-shim-runc-v2", "-namespace", "k8s.io", "start"}, false},
		{[]string{"k3s-like", "containerd", "--config", "c.toml"}, false},
		{[]string{"kubectl-plugin"}, false},
		{nil, false},
	} {
		assert.Equal(t, tc.want, Wanted(tc.args), "%q", tc.args)
	}
}
