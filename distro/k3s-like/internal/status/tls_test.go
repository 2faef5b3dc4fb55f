package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusUsesTLS: plain HTTP only on loopback in auto mode; every other
// address, the wildcard included, gets TLS with client certificates.
func TestStatusUsesTLS(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:10290": false,
		"127.0.0.2:10290": false,
		"[::1]:10290":     false,
		"localhost:10290": false,
		"0.0.0.0:10290":   true,
		":10290":          true,
		"[::]:10290":      true,
		"10.0.0.5:10290":  true,
		"example.com:443": true,
	} {
		got, err := UsesTLS(addr, TLSAuto)
		require.NoError(t, err, addr)
		assert.Equal(t, want, got, addr)
		got, err = UsesTLS(addr, TLSAlways)
		require.NoError(t, err, addr)
		assert.True(t, got, "always: %s", addr)
	}
	_, err := UsesTLS("127.0.0.1:1", "never")
	assert.ErrorContains(t, err, "--status-tls=never: want auto or always")
	_, err = UsesTLS("no-port", TLSAuto)
	assert.ErrorContains(t, err, "--status-address no-port")
}
