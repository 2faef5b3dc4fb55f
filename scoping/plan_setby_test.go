package scoping_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeharness/kubeharness/scoping"
)

// TestFeatureStateSetBy: the components that set a feature, sorted, with
// their values; without any, the source.
func TestFeatureStateSetBy(t *testing.T) {
	assert.Equal(t, "default", scoping.FeatureState{Source: scoping.SourceDefault}.SetBy())
	assert.Equal(t, "kube-apiserver=true,kube-scheduler=true", scoping.FeatureState{Requests: []scoping.Request{
		{Component: "kube-scheduler", Value: "true"}, {Component: "kube-apiserver", Value: "true"},
	}}.SetBy())
}
