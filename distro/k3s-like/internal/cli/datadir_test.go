package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDefaultDataDir(t *testing.T) {
	assert.Equal(t, "/var/lib/k3s-like", DefaultDataDir(0, "/root"))
	assert.Equal(t, "/home/ann/.k3s-like", DefaultDataDir(1000, "/home/ann"))
}
