package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cluster"
)

// TestAgentToken: --agent-token-file's token goes, in its full form, to
// DATA_DIR/agent-token (0600) and its join credential into the join file
// beside the server token's two; without one the file is removed and
// agents join with the server token; an agent token that is the server
// token, pins another CA, or is a server or bootstrap token is an error
// naming the flag, never the token. A server given an agent token as its
// own token refuses it.
func TestAgentToken(t *testing.T) {
	dataDir := t.TempDir()
	cmd, o := newCommandWithOptions()
	require.NoError(t, cmd.Flags().Parse([]string{"--data-dir=" + dataDir}))
	l := o.layout()
	require.NoError(t, os.MkdirAll(l.Dir, 0o700))
	_, err := pki.LoadOrCreateCA(l.ServerCA().CertFile, l.ServerCA().KeyFile, "")
	require.NoError(t, err)
	ca, err := os.ReadFile(l.ServerCA().CertFile)
	require.NoError(t, err)
	server := cluster.Token{Secret: "server-s3cret"}
	write := func(name, content string) string {
		f := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.WriteFile(f, []byte(content), 0o600))
		return f
	}

	require.NoError(t, o.writeFullToken(logr.Discard(), server, "test"))
	_, err = os.Stat(cluster.AgentTokenFile(dataDir))
	assert.True(t, os.IsNotExist(err))
	join, err := os.ReadFile(cluster.JoinAuthFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, 2, strings.Count(string(join), "\n"), "the server token's two credentials")

	o.agentTokenFile = write("agent", "agent-s3cret\n")
	require.NoError(t, o.writeFullToken(logr.Discard(), server, "test"))
	full, err := os.ReadFile(cluster.AgentTokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, cluster.Token{Secret: "agent-s3cret", Kind: cluster.AgentToken}.Full(ca)+"\n", string(full))
	st, err := os.Stat(cluster.AgentTokenFile(dataDir))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	join, err = os.ReadFile(cluster.JoinAuthFile(dataDir))
	require.NoError(t, err)
	assert.Contains(t, string(join), cluster.Token{Secret: "agent-s3cret"}.JoinCredential()+","+cluster.JoinUser)
	assert.NotContains(t, string(join), cluster.Token{Secret: "agent-s3cret"}.ServerJoinCredential())

	o.agentTokenFile = ""
	require.NoError(t, o.writeFullToken(logr.Discard(), server, "test"))
	_, err = os.Stat(cluster.AgentTokenFile(dataDir))
	assert.True(t, os.IsNotExist(err), "as k3s: no agent token, the server token joins agents")

	hash := strings.Repeat("0", 64)
	for content, want := range map[string]string{
		"server-s3cret":                            "the agent token is the server token",
		"K10" + hash + "::node:agent-s3cret":       "refusing to trust it",
		"K10" + hash + "::server:agent-s3cret":     "a server token, not an agent token",
		"abcdef.0123456789abcdef":                  "a bootstrap token, not an agent token",
		"K10" + cluster.CAHashOf(ca) + "::rubbish": "neither server:SECRET",
	} {
		o.agentTokenFile = write("bad", content)
		err := o.writeFullToken(logr.Discard(), server, "test")
		require.Error(t, err, content)
		assert.Contains(t, err.Error(), want, content)
		assert.Contains(t, err.Error(), "--agent-token-file", content)
		assert.NotContains(t, err.Error(), "s3cret", content)
	}

	o.agentTokenFile = ""
	for _, tok := range []string{"K10" + hash + "::node:agent-s3cret", "K10" + hash + "::abcdef.0123456789abcdef"} {
		o.TokenFile = write("token", tok)
		_, _, found, err := o.serverToken()
		require.Error(t, err, tok)
		assert.False(t, found)
		assert.Contains(t, err.Error(), "joins agents only", tok)
	}
	o.TokenFile = write("token", "K10"+hash+"::server:s3cret")
	tok, _, found, err := o.serverToken()
	require.NoError(t, err)
	assert.True(t, found)
	assert.Equal(t, cluster.ServerToken, tok.Kind)
}
