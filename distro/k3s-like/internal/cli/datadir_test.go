package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultDataDir(t *testing.T) {
	assert.Equal(t, "/var/lib/k3s-like", defaultDataDir(0, "/root"))
	assert.Equal(t, "/home/ann/.k3s-like", defaultDataDir(1000, "/home/ann"))
}

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
