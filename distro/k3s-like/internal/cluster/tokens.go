package cluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
)

// createdTokenGroup is the extra group of the bootstrap tokens `k3s-like
// token create` makes: not the automatic token's (bootstrapGroup), so that
// node-join neither hands them out nor deletes them; every bootstrap token
// is in system:bootstrappers, which may read the agent settings and ask
// for a node client certificate.
const createdTokenGroup = "system:bootstrappers:k3s-like:token"

// MaxBootstrapTTL bounds a created bootstrap token's life.
const MaxBootstrapTTL = 365 * 24 * time.Hour

// CreateBootstrapToken makes a random bootstrap token that joins agents
// (never servers) until now+ttl, as k3s token create: a Secret
// kube-system/bootstrap-token-ID of type bootstrap.kubernetes.io/token
// that the apiserver's bootstrap authenticator refuses once expired.
// ttl must be positive and at most MaxBootstrapTTL: every bootstrap token
// here expires. description is the Secret's description.
func CreateBootstrapToken(ctx context.Context, client kubernetes.Interface, ttl time.Duration, description string, now time.Time) (Token, time.Time, error) {
	if ttl <= 0 || ttl > MaxBootstrapTTL {
		return Token{}, time.Time{}, fmt.Errorf("--ttl=%s: want more than 0 and at most %s: every bootstrap token expires", ttl, MaxBootstrapTTL)
	}
	id, secret, err := newBootstrapToken()
	if err != nil {
		return Token{}, time.Time{}, err
	}
	exp := now.Add(ttl).UTC().Truncate(time.Second)
	if _, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrapSecretPrefix + id, Namespace: metav1.NamespaceSystem},
		Type:       corev1.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			"description":                    []byte(description),
			"token-id":                       []byte(id),
			"token-secret":                   []byte(secret),
			"expiration":                     []byte(exp.Format(time.RFC3339)),
			"usage-bootstrap-authentication": []byte("true"),
			"auth-extra-groups":              []byte(createdTokenGroup),
		},
	}, metav1.CreateOptions{FieldManager: joinManager}); err != nil {
		return Token{}, time.Time{}, fmt.Errorf("creating the bootstrap token kube-system/%s%s: %w", bootstrapSecretPrefix, id, err)
	}
	return Token{Secret: id + "." + secret, Kind: BootstrapToken}, exp, nil
}

// ResealServerRecord seals the cluster's PKI (the files of dir) again with
// the new server token's secret in kube-system/k3s-like-server-bootstrap,
// the record joining servers fetch, if there is one; found is false when
// there is none (a server that is no member of an etcd cluster). The
// record must open with old's secret to this server's files: a record
// sealed with another token is an error, and nothing is written.
func ResealServerRecord(ctx context.Context, client kubernetes.Interface, dir string, old, new Token) (found bool, err error) {
	s, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, serverBootstrap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !bootstrap.Opens(s.Data[recordKey], old.Secret, dir, bootstrap.EmbeddedFiles) &&
		!bootstrap.Opens(s.Data[recordKey], new.Secret, dir, bootstrap.EmbeddedFiles) {
		return true, fmt.Errorf("kube-system/%s does not open with this server's token (DATA_DIR/token) to this server's PKI: not re-sealing it", serverBootstrap)
	}
	record, err := bootstrap.Seal(new.Secret, dir, bootstrap.EmbeddedFiles)
	if err != nil {
		return true, err
	}
	_, err = client.CoreV1().Secrets(metav1.NamespaceSystem).Apply(ctx, corev1ac.Secret(serverBootstrap, metav1.NamespaceSystem).
		WithData(map[string][]byte{recordKey: record}), metav1.ApplyOptions{FieldManager: recordManager, Force: true})
	return true, err
}
