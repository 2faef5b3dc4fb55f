package testenv

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// CreateReadyNode creates a Node object the scheduler binds Pods to: Ready,
// 8 CPUs, 16Gi, 110 Pods. No kubelet runs behind it: its Pods are bound,
// never started.
func CreateReadyNode(ctx context.Context, c kubernetes.Interface, name string) error {
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110")}
	// The controller-manager may update the Node meanwhile (its node IPAM
	// assigns a pod CIDR): on a conflict, read it again and retry.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node.Status = corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}},
		}
		_, err := c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if latest, gerr := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); gerr == nil {
				node = latest
			}
		}
		return err
	})
}

// DeployAndWaitBound creates a Deployment of replicas Pods labelled
// app=name in the default namespace and waits, a minute at most, until the
// controller-manager made all of them and the scheduler bound every one to
// node.
func DeployAndWaitBound(ctx context.Context, c kubernetes.Interface, name string, replicas int32, node string) error {
	if err := CreateDeployment(ctx, c, name, replicas); err != nil {
		return err
	}
	return waitBound(ctx, c, "app="+name, int(replicas), node, time.Minute, true)
}

// CreateDeployment creates a Deployment of replicas Pods labelled app=name
// in the default namespace. Its image is never pulled: no kubelet runs.
func CreateDeployment(ctx context.Context, c kubernetes.Interface, name string, replicas int32) error {
	labels := map[string]string{"app": name}
	_, err := c.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "registry.invalid/" + name + ":1"}}},
			},
		},
	}, metav1.CreateOptions{})
	return err
}

// WaitBound waits, timeout at most, until at least want Pods of the default
// namespace match selector and the scheduler bound every one of them: to
// node, or to any node when node is "". Its error says how far it got.
func WaitBound(ctx context.Context, c kubernetes.Interface, selector string, want int, node string, timeout time.Duration) error {
	return waitBound(ctx, c, selector, want, node, timeout, false)
}

// waitBound is WaitBound; exact: exactly want Pods, not at least.
func waitBound(ctx context.Context, c kubernetes.Interface, selector string, want int, node string, timeout time.Duration, exact bool) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := c.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		bound := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && (node == "" || p.Spec.NodeName == node) {
				bound++
			}
		}
		last = fmt.Sprintf("%d Pods, %d bound (node %q)", len(pods.Items), bound, node)
		enough := len(pods.Items) >= want
		if exact {
			enough = len(pods.Items) == want
		}
		return enough && bound == len(pods.Items), nil
	})
	if err != nil {
		return fmt.Errorf("testenv: Pods %s not bound within %s: %s: %w", selector, timeout, last, err)
	}
	return nil
}
