package heldlog

import (
	"errors"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestHeld: lines logged before release wait, then come out in order
// through klog with their names and values; a repeated key/value pair is
// kept once; values of any type, uncomparable ones too, are fine.
func TestHeld(t *testing.T) {
	l, release := New()
	c := l.WithName("harness").WithValues("component", "kube-scheduler").WithValues("component", "kube-scheduler", "list", []string{"a"})
	s := c.GetSink().(*sink)
	assert.Equal(t, []string{"harness"}, s.names)
	assert.Equal(t, []any{"component", "kube-scheduler", "list", []string{"a"}}, s.values)
	c = c.WithValues("list", []string{"a"}) // uncomparable: kept, no panic
	assert.Len(t, c.GetSink().(*sink).values, 6)

	assert.True(t, l.V(9).Enabled(), "every level is held before release: the verbosity is not known yet")
	c.Info("one")
	c.Error(errors.New("boom"), "two")
	shared := s.shared
	assert.Len(t, shared.held, 2)
	release()
	assert.Empty(t, shared.held)
	assert.True(t, shared.released)
	release() // twice: nothing
	assert.False(t, l.V(9).Enabled(), "after release klog's verbosity decides")
	logr.Logger(c).Info("three") // directly, nothing held
	assert.Empty(t, shared.held)
}
