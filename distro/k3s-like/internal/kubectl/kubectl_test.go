package kubectl

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestKubeconfigArg: an explicit --kubeconfig in kubectl's arguments, in
// either form, the last one winning as pflag's; none after "--" (a command's
// arguments, kubectl exec … -- cmd --kubeconfig=x) and none in a longer flag
// or a value.
func TestKubeconfigArg(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"get", "ns"}, ""},
		{[]string{"--kubeconfig=/a", "get", "ns"}, "/a"},
		{[]string{"get", "ns", "--kubeconfig", "/a"}, "/a"},
		{[]string{"--kubeconfig=/a=b"}, "/a=b"},
		{[]string{"--kubeconfig=/a", "--kubeconfig", "/b"}, "/b"},
		{[]string{"--kubeconfig"}, ""}, // kubectl reports the missing value
		{[]string{"exec", "p", "--", "cmd", "--kubeconfig=/a"}, ""},
		{[]string{"--kubeconfig=/a", "exec", "p", "--", "--kubeconfig=/b"}, "/a"},
		{[]string{"--kubeconfigs=/a"}, ""},
	} {
		assert.Equal(t, tc.want, kubeconfigArg(tc.args), "%q", tc.args)
	}
}
