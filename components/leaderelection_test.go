package components

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRecoverLostLease(t *testing.T) {
	lost := fmt.Errorf("%w kube-system/kube-scheduler (held as me)", ErrLeaseLost)
	assert.True(t, RecoverLostLease("kube-scheduler", lost))
	assert.True(t, RecoverLostLease("kube-scheduler", fmt.Errorf("kube-scheduler failed in phase run: %w", lost)))
	assert.False(t, RecoverLostLease("kube-scheduler", errors.New("lost the leader-election lease")), "the text alone is not the error")
	unhealthy := fmt.Errorf("kube-controller-manager: %w: %w", ErrAPIServerUnhealthy, errors.New(upstreamKCMAPIServerUnhealthy+": timed out waiting for the condition"))
	assert.True(t, RecoverLostLease("kube-controller-manager", fmt.Errorf("kube-controller-manager failed in phase start: %w", unhealthy)))
	assert.False(t, RecoverLostLease("kube-controller-manager", errors.New(upstreamKCMAPIServerUnhealthy)), "upstream's error alone is not the adapter's")
	assert.False(t, RecoverLostLease("kube-apiserver", errors.New("bind: address already in use")))
}
