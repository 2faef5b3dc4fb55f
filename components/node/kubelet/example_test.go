package kubelet_test

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/node/kubelet"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/harness"
)

// A kubelet gate that contradicts the apiserver's is the barrier's
// conflict, before anything starts; agreeing, SET-BY names both.
func ExampleKubelet() {
	plan := func(apiserverGate, kubeletGate string) {
		target, err := testenv.PrivateTarget()
		if err != nil {
			panic(err)
		}
		h := &harness.Harness{Target: &target, Logger: logr.Discard()}
		_ = h.Add(components.NewAPIServer(), []string{"--feature-gates=CRIListStreaming=" + apiserverGate})
		_ = h.Add(kubelet.New(), []string{"--fail-cgroupv1=false", "--feature-gates=CRIListStreaming=" + kubeletGate}, components.APIServerName)
		p, err := h.DryRun(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, f := range p.FeatureStates() {
			if f.Name == "CRIListStreaming" {
				fmt.Println(f.Name, f.Enabled, f.SetBy())
			}
		}
	}
	plan("false", "true")
	plan("true", "true")
	// Output:
	// harness phase barrier: components conflict on 1 process-wide setting:
	//   feature gate "CRIListStreaming": kube-apiserver sets false (--feature-gates=CRIListStreaming=false), kubelet sets true (--feature-gates=CRIListStreaming=true)
	// CRIListStreaming true kube-apiserver=true,kubelet=true
}
