package etcdmembers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the component's name; LeaseName its Lease in kube-system.
const (
	Name      = "etcd-member-removal"
	LeaseName = "k3s-like-etcd-member-removal"
	// Finalizer is on each Node whose name is an etcd member's: the
	// member is removed before the Node goes.
	Finalizer = "etcd.k3s-like.io/member"
)

// Resync is how often the leader reconciles without an event.
const Resync = 10 * time.Second

// Remover is the member-removal component of a server. It is ready at
// once: it removes members, nothing waits for it.
type Remover struct {
	// Identity is the server's (its node name) in the election.
	Identity string
	// Kubeconfig is a credential that may read Nodes and change their
	// finalizers (the server's admin kubeconfig).
	Kubeconfig string
	// The local etcd member's client URL and the client certificate for it.
	EtcdEndpoint, EtcdCAFile, EtcdCertFile, EtcdKeyFile string
}

var _ harness.Component = (*Remover)(nil)

// Name is Name.
func (r *Remover) Name() string { return Name }

// AddFlags adds none.
func (r *Remover) AddFlags(*scoping.Scope) error { return nil }

// Run campaigns for the lease and reconciles while it leads, until ctx
// ends; it returns nil then. Failures are logged and retried.
func (r *Remover) Run(ctx context.Context) error {
	log := cli.Logger().WithName(Name)
	cfg, err := clientcmd.BuildConfigFromFlags("", r.Kubeconfig)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	cfg.UserAgent = "k3s-like-" + Name
	cfg.Timeout = 10 * time.Second
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	tlsInfo := transport.TLSInfo{CertFile: r.EtcdCertFile, KeyFile: r.EtcdKeyFile, TrustedCAFile: r.EtcdCAFile}
	tlsCfg, err := tlsInfo.ClientConfig()
	if err != nil {
		return fmt.Errorf("%s: etcd client TLS: %w", Name, err)
	}
	zl, err := etcd.NewZapLogger(log.WithName("etcd-client"), "error")
	if err != nil {
		return err
	}
	ec, err := clientv3.New(clientv3.Config{Endpoints: []string{r.EtcdEndpoint}, TLS: tlsCfg, DialTimeout: 10 * time.Second, Logger: zl})
	if err != nil {
		return fmt.Errorf("%s: etcd client: %w", Name, err)
	}
	defer ec.Close()
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: LeaseName},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: r.Identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			// Not released on a stop: a stop may come after the quorum
			// is gone (the last servers stopped), when a release would
			// hang; the lease expires, or this identity takes it again.
			Lock: lock, LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Name: Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) { r.lead(klog.NewContext(ctx, log), kube, ec) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			return fmt.Errorf("%s: %w", Name, err)
		}
		le.Run(ctx) // returns when the lease is lost or ctx ends; campaign again
	}
	return nil
}

// lead reconciles on every Node event and every Resync until ctx ends.
func (r *Remover) lead(ctx context.Context, kube kubernetes.Interface, ec *clientv3.Client) {
	log := klog.FromContext(ctx)
	log.Info("Leading the etcd member removal")
	factory := informers.NewSharedInformerFactory(kube, 0)
	nodes := factory.Core().V1().Nodes()
	kick := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	if _, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, UpdateFunc: func(_, n any) { poke(n) }, DeleteFunc: poke,
	}); err != nil {
		log.Error(err, "Watching Nodes")
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), nodes.Informer().HasSynced) {
		return
	}
	t := time.NewTicker(Resync)
	defer t.Stop()
	var last string
	for {
		err := Reconcile(ctx, kube, ec, nodes.Lister().List)
		switch {
		case err != nil && err.Error() != last:
			log.Error(err, "Reconciling the etcd members with the Nodes; retrying")
			last = err.Error()
		case err == nil:
			last = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-t.C:
		}
	}
}

// Members is what Reconcile needs of an etcd client.
type Members interface {
	MemberList(ctx context.Context, opts ...clientv3.OpOption) (*clientv3.MemberListResponse, error)
	MemberRemove(ctx context.Context, id uint64) (*clientv3.MemberRemoveResponse, error)
}

// NodeLister lists the Nodes (an informer's lister).
type NodeLister func(selector labels.Selector) ([]*corev1.Node, error)

// Reconcile makes the Nodes and the members agree once: a Node named as a
// started member gets Finalizer; a Node being deleted that has it has its
// member removed (unless it is the last voting member: then the Node goes
// and the member stays, logged), then loses the finalizer.
func Reconcile(ctx context.Context, kube kubernetes.Interface, ec Members, list NodeLister) error {
	log := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := ec.MemberList(ctx)
	if err != nil {
		return fmt.Errorf("listing the etcd members: %w", err)
	}
	nodes, err := list(labels.Everything())
	if err != nil {
		return err
	}
	voters := 0
	for _, m := range resp.Members {
		if !m.IsLearner {
			voters++
		}
	}
	var errs []error
	for _, n := range nodes {
		idx := slices.IndexFunc(resp.Members, func(m *etcdserverpb.Member) bool { return m.Name == n.Name })
		has := slices.Contains(n.Finalizers, Finalizer)
		switch {
		case n.DeletionTimestamp == nil && idx >= 0 && !has:
			errs = append(errs, patchFinalizers(ctx, kube, n, append(slices.Clone(n.Finalizers), Finalizer)))
		case n.DeletionTimestamp != nil && has:
			if idx >= 0 {
				m := resp.Members[idx]
				if !m.IsLearner && voters <= 1 {
					log.Info("Not removing the last voting etcd member with its Node", "node", n.Name, "member", fmt.Sprintf("%x", m.ID))
				} else {
					if _, err := ec.MemberRemove(ctx, m.ID); err != nil {
						errs = append(errs, fmt.Errorf("removing the etcd member of the deleted Node %s (%x): %w", n.Name, m.ID, err))
						continue
					}
					voters--
					log.Info("Removed the etcd member of a deleted Node", "node", n.Name, "member", fmt.Sprintf("%x", m.ID), "peerURLs", m.PeerURLs)
				}
			}
			errs = append(errs, patchFinalizers(ctx, kube, n, slices.DeleteFunc(slices.Clone(n.Finalizers), func(f string) bool { return f == Finalizer })))
		}
	}
	return errors.Join(errs...)
}

// patchFinalizers sets n's finalizers, if n is still the version read.
func patchFinalizers(ctx context.Context, kube kubernetes.Interface, n *corev1.Node, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"resourceVersion": n.ResourceVersion, "finalizers": finalizers}})
	if err != nil {
		return err
	}
	_, err = kube.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed: the next round sees it
	}
	if err != nil {
		return fmt.Errorf("Node %s: setting its finalizers: %w", n.Name, err)
	}
	return nil
}

// nopLogger is a zap logger that discards: the command's errors say it all.
func nopLogger() *zap.Logger { return zap.NewNop() }
