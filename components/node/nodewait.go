package node

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/components/internal/probe"
)

// WaitForNode polls the Node name every second until cond accepts it
// (nil: until it exists), and returns it; or returns ctx's error, with the
// last answer. Errors of the apiserver are retried: the node registers
// after its kubelet started.
func WaitForNode(ctx context.Context, client kubernetes.Interface, name string, cond func(*corev1.Node) bool) (*corev1.Node, error) {
	var node *corev1.Node
	err := probe.Poll(ctx, time.Second, func(ctx context.Context) error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cond != nil && !cond(n) {
			return fmt.Errorf("node %s is not yet as wanted", name)
		}
		node = n
		return nil
	})
	if err != nil {
		return nil, err
	}
	return node, nil
}

// HasAddress is true for a Node with an InternalIP or ExternalIP address
// (what kube-proxy takes its node IPs from).
func HasAddress(n *corev1.Node) bool {
	for _, a := range n.Status.Addresses {
		if (a.Type == corev1.NodeInternalIP || a.Type == corev1.NodeExternalIP) && a.Address != "" {
			return true
		}
	}
	return false
}

// HasPodCIDR is true for a Node the controller-manager gave a pod CIDR.
func HasPodCIDR(n *corev1.Node) bool { return n.Spec.PodCIDR != "" }
