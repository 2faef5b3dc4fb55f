package secretsencrypt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// apiserverIdentityLabel marks the kube-apiservers' identity leases in
// kube-system, one per running kube-apiserver.
const apiserverIdentityLabel = "apiserver.kubernetes.io/identity=kube-apiserver"

// loadedMetric is the metric whose hash label is the hash of the config
// kube-apiserver loaded last (FileHash).
const loadedMetric = "apiserver_encryption_config_controller_last_config_info"

// KubeCluster is Cluster through kube-apiserver, with an admin's client.
type KubeCluster struct {
	Client kubernetes.Interface
	// Poll is how often WaitLoaded reads /metrics; 0 means 2 s.
	Poll time.Duration
	// Now is the clock leases are judged by; nil means time.Now.
	Now func() time.Time
}

// APIServers counts the identity leases not yet expired.
func (k KubeCluster) APIServers(ctx context.Context) (int, error) {
	leases, err := k.Client.CoordinationV1().Leases(metav1.NamespaceSystem).List(ctx, metav1.ListOptions{LabelSelector: apiserverIdentityLabel})
	if err != nil {
		return 0, err
	}
	now := time.Now()
	if k.Now != nil {
		now = k.Now()
	}
	n := 0
	for _, l := range leases.Items {
		if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		if l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second).After(now) {
			n++
		}
	}
	return n, nil
}

// WaitLoaded polls kube-apiserver's /metrics until the config it loaded
// last hashes to hash, or ctx ends.
func (k KubeCluster) WaitLoaded(ctx context.Context, hash string) error {
	poll := k.Poll
	if poll == 0 {
		poll = 2 * time.Second
	}
	var last []string
	err := wait.PollUntilContextCancel(ctx, poll, true, func(ctx context.Context) (bool, error) {
		var err error
		last, err = k.LoadedHashes(ctx)
		if err != nil {
			return false, nil // the apiserver restarting: ask again
		}
		for _, h := range last {
			if h == hash {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%w (it reports %v)", err, last)
	}
	return nil
}

// LoadedHashes are the hashes of the configs kube-apiserver reports it
// loaded (one per apiserver identity it knows; one in a single process).
func (k KubeCluster) LoadedHashes(ctx context.Context) ([]string, error) {
	b, err := k.Client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return loadedHashes(b)
}

// loadedHashes reads the hash labels of loadedMetric from a Prometheus
// text exposition.
func loadedHashes(metrics []byte) ([]string, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(metrics))
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver's /metrics: %w", err)
	}
	var out []string
	for _, m := range families[loadedMetric].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "hash" {
				out = append(out, l.GetValue())
			}
		}
	}
	return out, nil
}

// RewriteSecrets updates every Secret unchanged, a page at a time: the
// apiserver writes an object again when it was read with a key that is
// not the active one. A conflict or a Secret gone means another writer
// stored it since, with the active key.
func (k KubeCluster) RewriteSecrets(ctx context.Context) (int, error) {
	n := 0
	p := pager.New(pager.SimplePageFunc(func(opts metav1.ListOptions) (runtime.Object, error) {
		return k.Client.CoreV1().Secrets(metav1.NamespaceAll).List(ctx, opts)
	}))
	p.PageSize = 50
	err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
		s, ok := obj.(*corev1.Secret)
		if !ok {
			return fmt.Errorf("listing Secrets: got %T", obj)
		}
		_, err := k.Client.CoreV1().Secrets(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		n++
		return nil
	})
	return n, err
}
