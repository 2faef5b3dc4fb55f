package main

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// leaseRenew is how often the driver renews each fake Node's Lease in
// kube-node-lease, as a kubelet does (nodeLeaseDurationSeconds 40, renewed
// every 10 s). The node lifecycle controller takes a renewed Lease as the
// Node's heartbeat, so it never marks a fake Node NotReady, taints it or
// evicts its Pods, however long a run takes.
const leaseRenew = 10 * time.Second

// heartbeats keeps the fake Nodes' Leases fresh until stop.
type heartbeats struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	err    error // the first renewal that failed
}

// stop ends the renewals and returns the first error one met.
func (h *heartbeats) stop() error {
	if h == nil {
		return nil
	}
	h.cancel()
	<-h.done
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// createNodes creates s.nodes Ready Nodes (32 CPUs, 64Gi, 110 Pods; no
// kubelet behind them: their Pods are bound, never started) and their
// Leases, and starts renewing the Leases.
func createNodes(ctx context.Context, c kubernetes.Interface, s scale) (*heartbeats, error) {
	q := resource.MustParse
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: corev1.NamespaceNodeLease}}
	if _, err := c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	var leases []*coordinationv1.Lease
	for i := range s.nodes {
		name := fmt.Sprintf("node-%03d", i)
		now := metav1.Now()
		capacity := corev1.ResourceList{corev1.ResourceCPU: q("32"), corev1.ResourceMemory: q("64Gi"), corev1.ResourcePods: q("110")}
		status := corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity,
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
		}
		// A Node takes its status on create, as a kubelet registers it;
		// should the apiserver drop it, it is set with retries (the
		// controller-manager writes the new Node at once: its pod CIDR).
		n, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: status}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		if len(n.Status.Conditions) == 0 {
			err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
				n, err := c.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				n.Status = status
				_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				return nil, err
			}
		}
		l, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID,
			}}},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(name),
				LeaseDurationSeconds: ptr.To(int32(40)),
				RenewTime:            &metav1.MicroTime{Time: time.Now()},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		leases = append(leases, l)
	}
	hctx, cancel := context.WithCancel(context.Background())
	h := &heartbeats{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(leaseRenew)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
			for i, l := range leases {
				l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
				nl, err := c.CoordinationV1().Leases(corev1.NamespaceNodeLease).Update(hctx, l, metav1.UpdateOptions{})
				if err != nil {
					if hctx.Err() != nil {
						return
					}
					h.mu.Lock()
					if h.err == nil {
						h.err = fmt.Errorf("renewing the Lease of %s: %w", l.Name, err)
					}
					h.mu.Unlock()
					continue
				}
				leases[i] = nl
			}
		}
	}()
	return h, nil
}

// createDeployments creates the scale's Deployments in the default
// namespace: one container each, requests 10m CPU and 16Mi.
func createDeployments(ctx context.Context, c kubernetes.Interface, s scale) error {
	q := resource.MustParse
	for i := range s.deployments {
		labels := map[string]string{"app": fmt.Sprintf("load-%03d", i)}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("load-%03d", i), Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(s.replicas)),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/load:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: q("10m"), corev1.ResourceMemory: q("16Mi")}}}}},
				},
			},
		}
		if _, err := c.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// podWatch counts the default namespace's Pods and the bound ones from an
// informer (one LIST and a WATCH: polling LISTs of 5,000 Pods would load
// the apiserver being measured).
type podWatch struct {
	store  cache.Store
	cancel context.CancelFunc
	done   chan struct{}
}

// watchPods starts the informer; stop ends it.
func watchPods(c kubernetes.Interface) *podWatch {
	lw := cache.NewListWatchFromClient(c.CoreV1().RESTClient(), "pods", "default", fields.Everything())
	inf := cache.NewSharedIndexInformer(lw, &corev1.Pod{}, 0, cache.Indexers{})
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{store: inf.GetStore(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		inf.RunWithContext(ctx)
	}()
	return w
}

// counts are the Pods seen and the bound ones.
func (w *podWatch) counts() (pods, bound int) {
	for _, o := range w.store.List() {
		pods++
		if o.(*corev1.Pod).Spec.NodeName != "" {
			bound++
		}
	}
	return pods, bound
}

// stop ends the informer (again: a no-op).
func (w *podWatch) stop() {
	w.cancel()
	<-w.done
}

// waitBound waits until want Pods exist and every one is bound, the
// processes alive, within the scale's timeout.
func (w *podWatch) waitBound(ctx context.Context, s scale, procs []*exec.Cmd) error {
	deadline := time.Now().Add(s.boundTimeout())
	for {
		pods, bound := w.counts()
		if pods == s.pods() && bound == pods {
			return nil
		}
		if err := exitedEarly(procs); err != nil {
			return fmt.Errorf("%d of %d Pods bound: %w", bound, s.pods(), err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d Pods bound after %s (%d exist)", bound, s.pods(), s.boundTimeout(), pods)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Pods bound: %w", bound, s.pods(), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// verifyBound lists the Pods once more from the apiserver (pages of 500)
// after the figures were taken: exactly the scale's Pods, every one bound.
func verifyBound(ctx context.Context, c kubernetes.Interface, s scale) error {
	pods, bound := 0, 0
	opts := metav1.ListOptions{Limit: 500}
	for {
		l, err := c.CoreV1().Pods("default").List(ctx, opts)
		if err != nil {
			return err
		}
		for _, p := range l.Items {
			pods++
			if p.Spec.NodeName != "" {
				bound++
			}
		}
		if l.Continue == "" {
			break
		}
		opts.Continue = l.Continue
	}
	if pods != s.pods() || bound != pods {
		return fmt.Errorf("%d of %d Pods bound at the end (%d exist)", bound, s.pods(), pods)
	}
	return nil
}
