package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseExtraArgs(t *testing.T) {
	got, err := ParseExtraArgs("kube-scheduler-arg", []string{"v=2", "feature-gates=Foo=true,Bar=false", "tls-cipher-suites+=X", "empty="})
	require.NoError(t, err)
	assert.Equal(t, []Arg{{"v", "2"}, {"feature-gates", "Foo=true,Bar=false"}, {"tls-cipher-suites+", "X"}, {"empty", ""}}, got)

	for _, bad := range []struct{ in, want string }{
		{"--v=2", "--kube-scheduler-arg=--v=2: write the upstream flag without leading dashes, e.g. --kube-scheduler-arg=v=2"},
		{"v", "--kube-scheduler-arg=v: expected key=value, e.g. --kube-scheduler-arg=v=2"},
		{"=2", "--kube-scheduler-arg==2: expected key=value"},
	} {
		_, err := ParseExtraArgs("kube-scheduler-arg", []string{bad.in})
		assert.ErrorContains(t, err, bad.want, bad.in)
	}
}

func TestMerge(t *testing.T) {
	defaults := []Arg{{"secure-port", "10259"}, {"bind-address", "127.0.0.1"}, {"authorization-always-allow-paths", "/healthz"}}
	shorthands := []Arg{{"feature-gates", "Foo=true"}}
	user := []Arg{{"feature-gates", "Bar=true"}, {"secure-port", "20000"}, {"authorization-always-allow-paths+", "/readyz"}, {"v", "2"}}
	assert.Equal(t, []string{
		"--secure-port=20000",
		"--bind-address=127.0.0.1",
		"--authorization-always-allow-paths=/healthz,/readyz",
		"--feature-gates=Foo=true",
		"--feature-gates=Bar=true",
		"--v=2",
	}, Merge(defaults, shorthands, user))
}
