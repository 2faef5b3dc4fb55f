package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// upstreamFiles writes every file B's apiserver flags name that A's server
// writes at start: the CIS defaults always, a token file only when the
// flags name one.
func TestUpstreamFiles(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "tls", "join.csv")
	require.NoError(t, os.MkdirAll(filepath.Dir(token), 0o700))
	require.NoError(t, upstreamFiles(dir, []string{"--audit-policy-file=x", "--token-auth-file=" + token}))
	for _, f := range []string{datadir.AuditPolicy(dir), datadir.PodSecurityConfig(dir), token} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	b, err := os.ReadFile(token)
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{32},bench-unused,bench-unused\n$`, string(b))
	fi, err := os.Stat(filepath.Dir(datadir.AuditLog(dir)))
	require.NoError(t, err)
	assert.True(t, fi.IsDir())

	other := t.TempDir()
	require.NoError(t, upstreamFiles(other, []string{"--audit-policy-file=x"}))
	_, err = os.Stat(filepath.Join(other, "tls", "join.csv"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
