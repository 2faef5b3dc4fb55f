// Package guard bounds kube-apiserver's reconcilers' etcd calls once the
// apiserver was asked to stop: a Guard per reconciler, and the two
// reconciler wrappers that use one (PeerReconciler, EndpointReconciler).
package guard

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	peerreconcilers "k8s.io/apiserver/pkg/reconcilers"
	"k8s.io/kubernetes/pkg/controlplane/reconcilers"
)

// kube-apiserver's pre-shutdown hooks remove this server's entries from
// etcd: its peer-endpoint lease (peer-endpoint-reconciler-controller) and,
// with the lease endpoint reconciler (a non-loopback advertised address),
// its master lease and its address in the kubernetes Service's endpoints
// (stop-kubernetes-service-controller). Each reconciler writes to etcd
// under a context that never ends, and holds a lock while it does: the
// periodic UpdateLease (peer) or ReconcileEndpoints (endpoints). Each hook
// takes that lock before its own bounded wait (the peer controller's Stop)
// or its removal does (the lease reconciler's RemoveEndpoints), so with the
// datastore gone a write that was in flight at the stop blocks the hook
// for as long as etcd does not answer — for good, if it never comes back
// (upstream's "don't block server shutdown forever" timeouts are never
// reached). The hooks run one after the other.
//
// The adapter wraps both reconcilers (Guard): once the apiserver
// was asked to stop, a storage call that has not answered within its grace
// returns an error, which releases the lock, so the hooks return; and the
// reconciler's storage is closed.
// What upstream does not allow: ending the etcd call itself. It has no
// context, and etcd's client retries a call on a closed client for as long
// as the call's context lives (its retry interceptor takes "the client
// connection is closing" for a cancelled context and goes on), so that
// goroutine stays until the process exits.

// Guard bounds one reconciler's etcd calls once the apiserver was
// asked to stop (stopped ends): Call runs them, closing the reconciler's
// storage when one is stuck at the stop. Destroy (the reconciler's) may itself block for
// seconds with etcd gone — closing an etcd client waits for its
// connections — so it runs on a goroutine of its own, which the adapter
// waits for at the end of its Run (Wait), and a later Destroy from
// upstream's hooks does not wait for it.
type Guard struct {
	stopped context.Context
	grace   time.Duration
	destroy func() // the reconciler's own Destroy

	closing   atomic.Bool   // set when call started destroy
	destroyed chan struct{} // closed when that destroy returned
}

// NewGuard returns a guard of destroy, the reconciler's Destroy, whose
// calls get grace once stopped ended.
func NewGuard(stopped context.Context, grace time.Duration, destroy func()) *Guard {
	return &Guard{stopped: stopped, grace: grace, destroy: destroy, destroyed: make(chan struct{})}
}

// Call runs c. If c has not answered grace after the stop (or after it
// started, if that was later), it starts closing the storage — which makes
// a blocked etcd call fail, unless the etcd client retries it under a
// context that never ends, as the reconcilers' do — and waits up to grace
// more for c. It returns c's error, or one saying what was done. Once the
// storage is closing, later calls fail at once without calling c.
func (f *Guard) Call(what string, c func() error) error {
	if f.closing.Load() {
		return fmt.Errorf("%s: not tried: its etcd client was closed at the stop (%s)", what, context.Cause(f.stopped))
	}
	done := make(chan error, 1)
	go func() { done <- c() }()
	select {
	case err := <-done:
		return err
	case <-f.stopped.Done():
	}
	t := time.NewTimer(f.grace)
	select {
	case err := <-done:
		t.Stop()
		return err
	case <-t.C:
	}
	if f.closing.CompareAndSwap(false, true) {
		go func() {
			defer close(f.destroyed)
			f.destroy()
		}()
	}
	t.Reset(f.grace)
	defer t.Stop()
	select {
	case err := <-done:
		return fmt.Errorf("%s: no answer from etcd %s after the stop (%s); closed the reconciler's etcd client: %w", what, f.grace, context.Cause(f.stopped), err)
	case <-t.C:
		return fmt.Errorf("%s: no answer from etcd %s after the stop (%s), and none %s after its etcd client was closed; the call is left to etcd's client", what, f.grace, context.Cause(f.stopped), f.grace)
	}
}

// Destroy is the reconciler's Destroy, unless Call already started it:
// then it returns at once (Wait waits for it).
func (f *Guard) Destroy() {
	if f.closing.Load() {
		return
	}
	f.destroy()
}

// Wait waits up to budget for a destroy call started and reports whether
// none is still running.
func (f *Guard) Wait(budget time.Duration) bool {
	if !f.closing.Load() {
		return true
	}
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-f.destroyed:
		return true
	case <-t.C:
		return false
	}
}

// PeerReconciler is a PeerEndpointLeaseReconciler whose storage
// calls are bounded once the apiserver was asked to stop (Guard).
type PeerReconciler struct {
	peerreconcilers.PeerEndpointLeaseReconciler
	guard *Guard
}

// NewPeerReconciler guards r's storage calls (see Guard).
func NewPeerReconciler(r peerreconcilers.PeerEndpointLeaseReconciler, stopped context.Context, grace time.Duration) PeerReconciler {
	return PeerReconciler{PeerEndpointLeaseReconciler: r, guard: NewGuard(stopped, grace, r.Destroy)}
}

// UpdateLease refreshes this server's peer-endpoint lease (Guard).
func (r PeerReconciler) UpdateLease(serverID, ip string, endpointPorts []corev1.EndpointPort) error {
	return r.guard.Call("updating the peer-endpoint lease of "+serverID,
		func() error { return r.PeerEndpointLeaseReconciler.UpdateLease(serverID, ip, endpointPorts) })
}

// RemoveLease removes this server's peer-endpoint lease (Guard).
func (r PeerReconciler) RemoveLease(serverID string) error {
	return r.guard.Call("removing the peer-endpoint lease of "+serverID,
		func() error { return r.PeerEndpointLeaseReconciler.RemoveLease(serverID) })
}

// Destroy closes the reconciler's storage (Guard.Destroy).
func (r PeerReconciler) Destroy() { r.guard.Destroy() }

// EndpointReconciler is an EndpointReconciler whose etcd calls are
// bounded once the apiserver was asked to stop (Guard).
type EndpointReconciler struct {
	reconcilers.EndpointReconciler
	guard *Guard
}

// NewEndpointReconciler guards r's storage calls (see Guard).
func NewEndpointReconciler(r reconcilers.EndpointReconciler, stopped context.Context, grace time.Duration) EndpointReconciler {
	return EndpointReconciler{EndpointReconciler: r, guard: NewGuard(stopped, grace, r.Destroy)}
}

// ReconcileEndpoints reconciles serviceName's endpoints (Guard).
func (r EndpointReconciler) ReconcileEndpoints(serviceName string, ip net.IP, endpointPorts []corev1.EndpointPort, reconcilePorts bool) error {
	return r.guard.Call("reconciling the endpoints of the "+serviceName+" service",
		func() error {
			return r.EndpointReconciler.ReconcileEndpoints(serviceName, ip, endpointPorts, reconcilePorts)
		})
}

// RemoveEndpoints removes this server's address from serviceName's
// endpoints (Guard).
func (r EndpointReconciler) RemoveEndpoints(serviceName string, ip net.IP, endpointPorts []corev1.EndpointPort) error {
	return r.guard.Call("removing "+ip.String()+" from the endpoints of the "+serviceName+" service",
		func() error { return r.EndpointReconciler.RemoveEndpoints(serviceName, ip, endpointPorts) })
}

// Destroy closes the reconciler's storage (Guard.Destroy).
func (r EndpointReconciler) Destroy() { r.guard.Destroy() }

// Guard returns r's guard, for the adapter to Wait for at the end of its Run.
func (r PeerReconciler) Guard() *Guard { return r.guard }

// Guard returns r's guard, for the adapter to Wait for at the end of its Run.
func (r EndpointReconciler) Guard() *Guard { return r.guard }
