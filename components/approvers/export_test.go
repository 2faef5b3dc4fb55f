package approvers

import (
	"context"

	"k8s.io/client-go/kubernetes"
)

// RunServingApprover runs a with client instead of its kubeconfig's.
func RunServingApprover(ctx context.Context, a *ServingApprover, client kubernetes.Interface) error {
	return a.run(ctx, client)
}
