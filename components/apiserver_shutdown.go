package components

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
// The adapter wraps both reconcilers (fencedStorage): once the apiserver
// was asked to stop, a storage call that has not answered within stopGrace
// returns an error, which releases the lock, so the hooks return; and the
// reconciler's storage is closed.
// What upstream does not allow: ending the etcd call itself. It has no
// context, and etcd's client retries a call on a closed client for as long
// as the call's context lives (its retry interceptor takes "the client
// connection is closing" for a cancelled context and goes on), so that
// goroutine stays until the process exits.

// fencedStorage bounds one reconciler's etcd calls once the apiserver was
// asked to stop (stopped ends): call runs them, closing the reconciler's
// storage when one is stuck at the stop. Destroy (the reconciler's) may itself block for
// seconds with etcd gone — closing an etcd client waits for its
// connections — so it runs on a goroutine of its own, which the adapter
// waits for at the end of its Run (wait), and a later Destroy from
// upstream's hooks does not wait for it.
type fencedStorage struct {
	stopped context.Context
	grace   time.Duration
	destroy func() // the reconciler's own Destroy

	closing   atomic.Bool   // set when call started destroy
	destroyed chan struct{} // closed when that destroy returned
}

func newFencedStorage(stopped context.Context, grace time.Duration, destroy func()) *fencedStorage {
	return &fencedStorage{stopped: stopped, grace: grace, destroy: destroy, destroyed: make(chan struct{})}
}

// call runs c. If c has not answered grace after the stop (or after it
// started, if that was later), it starts closing the storage — which makes
// a blocked etcd call fail, unless the etcd client retries it under a
// context that never ends, as the reconcilers' do — and waits up to grace
// more for c. It returns c's error, or one saying what was done. Once the
// storage is closing, later calls fail at once without calling c.
func (f *fencedStorage) call(what string, c func() error) error {
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

// Destroy is the reconciler's Destroy, unless call already started it:
// then it returns at once (wait waits for it).
func (f *fencedStorage) Destroy() {
	if f.closing.Load() {
		return
	}
	f.destroy()
}

// wait waits up to budget for a destroy call started and reports whether
// none is still running.
func (f *fencedStorage) wait(budget time.Duration) bool {
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

// fencedPeerReconciler is a PeerEndpointLeaseReconciler whose storage
// calls are bounded once the apiserver was asked to stop (fencedStorage).
type fencedPeerReconciler struct {
	peerreconcilers.PeerEndpointLeaseReconciler
	storage *fencedStorage
}

func newFencedPeerReconciler(r peerreconcilers.PeerEndpointLeaseReconciler, stopped context.Context, grace time.Duration) fencedPeerReconciler {
	return fencedPeerReconciler{PeerEndpointLeaseReconciler: r, storage: newFencedStorage(stopped, grace, r.Destroy)}
}

// UpdateLease refreshes this server's peer-endpoint lease (fencedStorage).
func (r fencedPeerReconciler) UpdateLease(serverID, ip string, endpointPorts []corev1.EndpointPort) error {
	return r.storage.call("updating the peer-endpoint lease of "+serverID,
		func() error { return r.PeerEndpointLeaseReconciler.UpdateLease(serverID, ip, endpointPorts) })
}

// RemoveLease removes this server's peer-endpoint lease (fencedStorage).
func (r fencedPeerReconciler) RemoveLease(serverID string) error {
	return r.storage.call("removing the peer-endpoint lease of "+serverID,
		func() error { return r.PeerEndpointLeaseReconciler.RemoveLease(serverID) })
}

// Destroy closes the reconciler's storage (fencedStorage.Destroy).
func (r fencedPeerReconciler) Destroy() { r.storage.Destroy() }

// fencedEndpointReconciler is an EndpointReconciler whose etcd calls are
// bounded once the apiserver was asked to stop (fencedStorage).
type fencedEndpointReconciler struct {
	reconcilers.EndpointReconciler
	storage *fencedStorage
}

func newFencedEndpointReconciler(r reconcilers.EndpointReconciler, stopped context.Context, grace time.Duration) fencedEndpointReconciler {
	return fencedEndpointReconciler{EndpointReconciler: r, storage: newFencedStorage(stopped, grace, r.Destroy)}
}

// ReconcileEndpoints reconciles serviceName's endpoints (fencedStorage).
func (r fencedEndpointReconciler) ReconcileEndpoints(serviceName string, ip net.IP, endpointPorts []corev1.EndpointPort, reconcilePorts bool) error {
	return r.storage.call("reconciling the endpoints of the "+serviceName+" service",
		func() error {
			return r.EndpointReconciler.ReconcileEndpoints(serviceName, ip, endpointPorts, reconcilePorts)
		})
}

// RemoveEndpoints removes this server's address from serviceName's
// endpoints (fencedStorage).
func (r fencedEndpointReconciler) RemoveEndpoints(serviceName string, ip net.IP, endpointPorts []corev1.EndpointPort) error {
	return r.storage.call("removing "+ip.String()+" from the endpoints of the "+serviceName+" service",
		func() error { return r.EndpointReconciler.RemoveEndpoints(serviceName, ip, endpointPorts) })
}

// Destroy closes the reconciler's storage (fencedStorage.Destroy).
func (r fencedEndpointReconciler) Destroy() { r.storage.Destroy() }
