// Package featurepub publishes a control plane's feature plan
// (scoping.Plan) as Feature objects (features.kubeharness.io/v1alpha1,
// package components/apis/features/v1alpha1), KEP-3920 feature discovery:
// `kubectl get features` shows every kube feature gate with its stage,
// default, effective value and who set it.
//
// Publisher is a harness component: it installs the CRD, server-side
// applies one Feature per kube feature gate under the server's own field
// manager, and deletes the Features of gates no server knows any more. Add
// it after every other component, so that it runs once they are ready:
//
//	pub := &featurepub.Publisher{
//		Server:     nodeName,
//		Kubeconfig: adminKubeconfig, // written before any component runs
//		Plan:       func() *scoping.Plan { return h.Status().Plan },
//	}
//	h.Add(pub, nil, components.APIServerName, components.SchedulerName, components.ControllerManagerName)
//
// It never fails the harness: apiserver errors are logged and retried with
// exponential backoff until its context ends. Features builds the objects
// without an apiserver.
package featurepub
