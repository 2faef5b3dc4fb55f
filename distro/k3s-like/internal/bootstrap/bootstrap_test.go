package bootstrap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSealOpen(t *testing.T) {
	files := map[string][]byte{"server-ca.key": []byte("secret"), "server-ca.crt": []byte("cert")}
	data, err := seal("token-1", files)
	require.NoError(t, err)
	assert.NotContains(t, string(data), "secret")
	got, s, err := open("token-1", data)
	require.NoError(t, err)
	assert.Equal(t, files, got)
	assert.False(t, s.stale(), "what seal writes is not stale")
	_, _, err = open("token-2", data)
	assert.ErrorIs(t, err, ErrWrongToken)
}
