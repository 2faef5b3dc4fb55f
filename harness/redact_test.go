package harness_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

func TestRedactArgs(t *testing.T) {
	in := []string{
		"--oidc-client-secret=hunter2",
		"--Password=hunter3",
		"--bootstrap-token", "abcdef.0123456789abcdef",
		"--token-auth-file=/etc/tokens.csv",
		"--tls-private-key-file=/pki/x.key",
		"--enable-bootstrap-token-auth=true",
		"--secret-dir", "/run/secrets",
		"--v=2",
		"--db-password=",
		"positional",
	}
	want := []string{
		"--oidc-client-secret=<redacted>",
		"--Password=<redacted>",
		"--bootstrap-token", "<redacted>",
		"--token-auth-file=/etc/tokens.csv",
		"--tls-private-key-file=/pki/x.key",
		"--enable-bootstrap-token-auth=true",
		"--secret-dir", "/run/secrets",
		"--v=2",
		"--db-password=<redacted>",
		"positional",
	}
	got := harness.RedactArgs(in)
	assert.Equal(t, want, got)
	assert.Equal(t, "--oidc-client-secret=hunter2", in[0], "the input is not changed")
	assert.Equal(t, []string{"--api-token"}, harness.RedactArgs([]string{"--api-token"}), "a secret flag without a value")
	assert.Empty(t, harness.RedactArgs(nil))
}

// withPassword is a fake with a secret flag.
type withPassword struct{ *fake }

func (w withPassword) AddFlags(s *scoping.Scope) error {
	s.FlagSet().String("db-password", "", "a secret")
	return w.fake.AddFlags(s)
}

// TestStatusHandlerRedacts: /components shows a secret flag's value as
// <redacted>; Status keeps it for the binary.
func TestStatusHandlerRedacts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, _ := newHarness(t)
		j := &journal{}
		require.NoError(t, h.Add(withPassword{newFake("kube-apiserver", j)}, []string{"--db-password=hunter2", "--feature-gates=Foo=true"}))
		stop, _ := runUntil(t, h)
		synctest.Wait()
		code, body := get(t, h.Handler(), "/components", "")
		require.Equal(t, http.StatusOK, code)
		assert.NotContains(t, body, "hunter2")
		var comps struct{ Components []harness.ComponentStatus }
		require.NoError(t, json.Unmarshal([]byte(body), &comps))
		assert.Equal(t, []string{"--db-password=<redacted>", "--feature-gates=Foo=true"}, comps.Components[0].Args)
		assert.Equal(t, []string{"--db-password=hunter2", "--feature-gates=Foo=true"}, h.Status().Components[0].Args)
		require.NoError(t, stop())
	})
}
