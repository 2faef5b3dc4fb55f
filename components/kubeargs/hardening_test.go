package kubeargs_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/names"
)

// hardened are the apiserver's and the kubelet's hardening defaults, as a
// distro sets them (components/controlplane, components/node).
var hardened = map[string][]arg{
	names.APIServer: {
		{Key: "anonymous-auth", Value: "false"}, {Key: "authorization-mode", Value: "Node,RBAC"},
		{Key: "enable-admission-plugins", Value: "NodeRestriction"}, {Key: "kubelet-certificate-authority", Value: "/pki/kubelet-serving-ca.crt"},
	},
	names.Kubelet: {
		{Key: "client-ca-file", Value: "/pki/client-ca.crt"}, {Key: "anonymous-auth", Value: "false"}, {Key: "authorization-mode", Value: "Webhook"},
	},
}

// weakened merges the user's raw arguments for component into the
// hardened defaults and returns Weakened's lines.
func weakened(t *testing.T, component string, raw ...string) []string {
	t.Helper()
	args := map[string][]string{}
	for c, d := range hardened {
		var user []arg
		if c == component {
			var err error
			user, err = kubeargs.Parse(c+"-arg", raw)
			require.NoError(t, err)
		}
		args[c] = kubeargs.Merge(d, nil, user)
	}
	var out []string
	for _, w := range kubeargs.Weakened(args) {
		out = append(out, w.String())
	}
	return out
}

// TestWeakened: each flag that removes a hardening default is one line
// naming the component, the flag, its value and what was lost; the
// defaults, and additions that keep them, are none.
func TestWeakened(t *testing.T) {
	for _, tc := range []struct {
		name, component string
		raw             []string
		want            []string
	}{
		{"defaults", names.APIServer, nil, nil},
		{"plugins appended", names.APIServer, []string{"enable-admission-plugins+=PodSecurity"}, nil},
		{"plugins replaced", names.APIServer, []string{"enable-admission-plugins=PodSecurity,EventRateLimit"},
			[]string{"kube-apiserver --enable-admission-plugins=PodSecurity,EventRateLimit: NodeRestriction is not enabled: a node's kubelet may change other nodes' Node objects and Pods"}},
		{"plugin disabled", names.APIServer, []string{"disable-admission-plugins=NodeRestriction"},
			[]string{"kube-apiserver --disable-admission-plugins=NodeRestriction: NodeRestriction is disabled: a node's kubelet may change other nodes' Node objects and Pods"}},
		{"anonymous", names.APIServer, []string{"anonymous-auth=true"},
			[]string{"kube-apiserver --anonymous-auth=true: requests without credentials are served as system:anonymous"}},
		{"anonymous bare key", names.APIServer, []string{"anonymous-auth"},
			[]string{"kube-apiserver --anonymous-auth=true: requests without credentials are served as system:anonymous"}},
		{"AlwaysAllow", names.APIServer, []string{"authorization-mode=AlwaysAllow"},
			[]string{"kube-apiserver --authorization-mode=AlwaysAllow: AlwaysAllow: every authenticated request is allowed, whatever RBAC says"}},
		{"AlwaysAllow appended", names.APIServer, []string{"authorization-mode+=AlwaysAllow"},
			[]string{"kube-apiserver --authorization-mode=Node,RBAC,AlwaysAllow: AlwaysAllow: every authenticated request is allowed, whatever RBAC says"}},
		{"RBAC only", names.APIServer, []string{"authorization-mode=RBAC"}, nil},
		{"no kubelet CA", names.APIServer, []string{"kubelet-certificate-authority="},
			[]string{"kube-apiserver --kubelet-certificate-authority=(unset): the apiserver does not verify the kubelets' serving certificates (exec, logs and port-forward go to whoever answers)"}},
		{"kubelet defaults", names.Kubelet, nil, nil},
		{"kubelet anonymous", names.Kubelet, []string{"anonymous-auth=true"},
			[]string{"kubelet --anonymous-auth=true: requests to the kubelet's port without credentials are served as system:anonymous"}},
		{"kubelet AlwaysAllow", names.Kubelet, []string{"authorization-mode=AlwaysAllow"},
			[]string{"kubelet --authorization-mode=AlwaysAllow: AlwaysAllow: every authenticated request to the kubelet's API (exec, logs, proxy) is allowed"}},
		{"kubelet empty client CA", names.Kubelet, []string{"client-ca-file="},
			[]string{"kubelet --client-ca-file=(unset): the kubelet trusts no client CA: it authenticates no client certificate, the apiserver's included"}},
		{"two at once", names.Kubelet, []string{"anonymous-auth=true", "client-ca-file="}, []string{
			"kubelet --anonymous-auth=true: requests to the kubelet's port without credentials are served as system:anonymous",
			"kubelet --client-ca-file=(unset): the kubelet trusts no client CA: it authenticates no client certificate, the apiserver's included"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, weakened(t, tc.component, tc.raw...))
		})
	}
}

// TestWeakenedUnset: a flag left unset has upstream's default (anonymous
// on, AlwaysAllow, no NodeRestriction, no kubelet CA); components other
// than the apiserver and the kubelet are not looked at.
func TestWeakenedUnset(t *testing.T) {
	got := kubeargs.Weakened(map[string][]string{names.APIServer: nil, names.Kubelet: {}, names.Scheduler: nil})
	var flags []string
	for _, w := range got {
		flags = append(flags, w.Component+" "+w.Flag)
	}
	assert.Equal(t, []string{
		"kube-apiserver enable-admission-plugins", "kube-apiserver anonymous-auth", "kube-apiserver authorization-mode",
		"kube-apiserver kubelet-certificate-authority",
		"kubelet anonymous-auth", "kubelet authorization-mode", "kubelet client-ca-file",
	}, flags)
	assert.Empty(t, kubeargs.Weakened(map[string][]string{names.Scheduler: {"--anonymous-auth=true"}}))
}
