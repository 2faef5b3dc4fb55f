package bootstrap

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRotate: a record sealed with the old secret opens with the new one
// only, the files unchanged; a wrong old secret is ErrWrongToken and the
// record is left as it was; an empty datastore is found false.
func TestRotate(t *testing.T) {
	c := startEtcd(t)
	ctx := t.Context()
	found, err := Rotate(ctx, c, "old", "new")
	require.NoError(t, err)
	assert.False(t, found)

	files := newCluster(t)
	data, err := seal("old", files)
	require.NoError(t, err)
	_, err = c.Put(ctx, Key, string(data))
	require.NoError(t, err)

	before, _ := record(t, c)
	_, err = Rotate(ctx, c, "wrong", "new")
	require.ErrorIs(t, err, ErrWrongToken)
	after, _ := record(t, c)
	assert.Equal(t, before, after, "left as it was")

	found, err = Rotate(ctx, c, "old", "new")
	require.NoError(t, err)
	assert.True(t, found)
	got, _ := record(t, c)
	_, _, err = open("old", got)
	assert.ErrorIs(t, err, ErrWrongToken, "the old secret no longer opens it")
	opened, _, err := open("new", got)
	require.NoError(t, err)
	assert.Equal(t, files, opened)
}

// TestDial: TLS files that cannot be read are an error naming the flags;
// without TLS a client is made (it dials lazily).
func TestDial(t *testing.T) {
	_, err := Dial("https://127.0.0.1:1", "/nonexistent/ca.crt", "/nonexistent/c.crt", "/nonexistent/c.key")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--datastore-cafile/--datastore-certfile/--datastore-keyfile")
	c, err := Dial("http://127.0.0.1:1,http://127.0.0.1:2", "", "", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"http://127.0.0.1:1", "http://127.0.0.1:2"}, c.Endpoints())
	require.NoError(t, c.Close())
}
