package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/bootstrap"
	"github.com/kubeharness/kubeharness/harness"
)

// What the servers of an embedded etcd cluster publish for another server
// to join with.
const (
	// ServerJoinName is the harness component that publishes it.
	ServerJoinName = "server-join"
	// serverBootstrap is the Secret in kube-system a joining server
	// reads: the cluster's PKI sealed with the token (key recordKey) and
	// each member's etcd client URL (keys etcdKeyPrefix+NODE).
	serverBootstrap = "k3s-like-server-bootstrap"
	recordKey       = "pki"
	etcdKeyPrefix   = "etcd."
	// The record's field manager is shared by the servers (any one's seal
	// will do); each server owns its own etcd URL.
	recordManager = "k3s-like-server-join"
)

// ServerJoin is what a server of an embedded etcd cluster publishes for
// another server to join with: the server-join component.
type ServerJoin struct {
	DataDir         string     // the server's: its token file
	Layout          pki.Layout // the server's PKI: the shared files it seals
	AdminKubeconfig string
	// NodeName and EtcdClientURL are this server's etcd member: its name
	// and the client URL it advertises.
	NodeName, EtcdClientURL string
	Log                     logr.Logger
}

// Add adds the server-join component: once the apiserver is ready it
// publishes, with server-side apply, the role that lets ServerJoinUser (a
// joining server's credential, Token.ServerJoinCredential, authenticated
// by the apiserver from JoinAuthFile) read
// kube-system/k3s-like-server-bootstrap, and that Secret:
// the cluster's shared PKI (bootstrap.EmbeddedFiles) sealed with the
// token's secret (written again only when the one there does not open to
// this server's files) and this member's etcd client URL. It is ready once
// published.
func (j ServerJoin) Add(h *harness.Harness) error {
	return addPublisher(h, ServerJoinName, "what servers join with", 0, j.publish)
}

func (j ServerJoin) publish(ctx context.Context) error {
	b, err := os.ReadFile(TokenFile(j.DataDir))
	if err != nil {
		return err
	}
	tok, err := ParseToken(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", TokenFile(j.DataDir), err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", j.AdminKubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = "k3s-like-server-join"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	const ns = metav1.NamespaceSystem
	opts := metav1.ApplyOptions{FieldManager: joinManager, Force: true}
	rbac := client.RbacV1()
	if _, err := rbac.Roles(ns).Apply(ctx, rbacv1ac.Role(serverBootstrap, ns).WithRules(
		rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").WithResourceNames(serverBootstrap).WithVerbs("get")), opts); err != nil {
		return err
	}
	if _, err := rbac.RoleBindings(ns).Apply(ctx, rbacv1ac.RoleBinding(serverBootstrap, ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup("rbac.authorization.k8s.io").WithKind("Role").WithName(serverBootstrap)).
		WithSubjects(rbacv1ac.Subject().WithKind("User").WithAPIGroup("rbac.authorization.k8s.io").WithName(ServerJoinUser)), opts); err != nil {
		return err
	}
	have, err := client.CoreV1().Secrets(ns).Get(ctx, serverBootstrap, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || !bootstrap.Opens(have.Data[recordKey], tok.Secret, j.Layout.Dir, bootstrap.EmbeddedFiles) {
		record, err := bootstrap.Seal(tok.Secret, j.Layout.Dir, bootstrap.EmbeddedFiles)
		if err != nil {
			return err
		}
		if _, err := client.CoreV1().Secrets(ns).Apply(ctx, corev1ac.Secret(serverBootstrap, ns).
			WithData(map[string][]byte{recordKey: record}), metav1.ApplyOptions{FieldManager: recordManager, Force: true}); err != nil {
			return err
		}
		j.Log.Info("Published the cluster's sealed PKI for joining servers", "secret", ns+"/"+serverBootstrap)
	}
	_, err = client.CoreV1().Secrets(ns).Apply(ctx, corev1ac.Secret(serverBootstrap, ns).
		WithData(map[string][]byte{etcdKeyPrefix + j.NodeName: []byte(j.EtcdClientURL)}),
		metav1.ApplyOptions{FieldManager: recordManager + "/" + j.NodeName, Force: true})
	return err
}

// ServerJoinTimeout bounds FetchServerPKI's retries of a server that
// answers, with the CA the token pins, but does not accept the token's
// server join credential: long enough for a server that just started to
// publish it, short enough that a wrong secret is an error soon.
const ServerJoinTimeout = 60 * time.Second

// FetchServerPKI is a joining server's first step: over TLS to the server
// at u, whose CA must be the one the token pins (nothing is sent before),
// it reads the cluster's sealed PKI with the token's server join
// credential, opens it with the token's secret, verifies it against the pin,
// and only then writes bootstrap.EmbeddedFiles to dir (a different file
// already there is an error: that data dir is another cluster's). It
// returns the etcd client URLs of the cluster's members, as they
// published them. It retries while the server does not answer, or
// answers but has not published (for ServerJoinTimeout once it answers
// with the pinned CA), until ctx ends; a CA the token does not pin is an
// error at once.
func FetchServerPKI(ctx context.Context, log logr.Logger, u *url.URL, tok Token, dir string) ([]string, error) {
	if tok.Kind == AgentToken || tok.Kind == BootstrapToken {
		return nil, &ServerJoinError{Server: u.String(), Err: fmt.Errorf("the token is an agent's (K10…::%s…): an agent token or a bootstrap token joins agents only; a server joins with the server token of a server's DATA_DIR/token", map[TokenKind]string{AgentToken: "node:", BootstrapToken: "ID.SECRET"}[tok.Kind])}
	}
	if tok.CAHash == "" {
		return nil, errors.New("joining a server needs the full token (K10…::server:…) of a server's DATA_DIR/token, which pins the cluster CA; the token given is a bare secret")
	}
	log = log.WithName("server-join")
	var (
		client   kubernetes.Interface
		secret   *corev1.Secret
		last     string
		answered time.Time
	)
	retry := func(err error) (bool, error) {
		if err.Error() != last {
			log.Info("Fetching the cluster's PKI from the server; retrying", "server", u.String(), "err", err)
			last = err.Error()
		}
		if !answered.IsZero() && time.Since(answered) > ServerJoinTimeout {
			return false, &ServerJoinError{Server: u.String(), Err: err}
		}
		return false, nil
	}
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		if client == nil {
			var err error
			if client, _, err = pinnedClient(ctx, u, tok, tok.ServerJoinCredential(), "k3s-like-server-join"); err != nil {
				var pe *caPinError
				if errors.As(err, &pe) {
					return false, &ServerJoinError{Server: u.String(), Err: err}
				}
				return retry(err)
			}
			answered = time.Now()
		}
		s, err := client.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, serverBootstrap, metav1.GetOptions{})
		switch {
		case apierrors.IsUnauthorized(err):
			return retry(fmt.Errorf("the server does not accept the token's server join credential (not published yet, the token's secret is not the cluster's server token, or it is an agent token, which cannot join a server): %w", err))
		case err != nil:
			return retry(err)
		case len(s.Data[recordKey]) == 0:
			return retry(fmt.Errorf("kube-system/%s has no %s yet", serverBootstrap, recordKey))
		}
		secret = s
		return true, nil
	})
	if err != nil {
		var je *ServerJoinError
		switch {
		case errors.As(err, &je):
			return nil, err
		case ctx.Err() != nil:
			return nil, &ServerJoinError{Server: u.String(), Err: fmt.Errorf("stopped before the server answered (last: %s)", last)}
		}
		return nil, &ServerJoinError{Server: u.String(), Err: err}
	}
	if err := bootstrap.Install(secret.Data[recordKey], tok.Secret, tok.CAHash, dir, bootstrap.EmbeddedFiles); err != nil {
		if errors.Is(err, bootstrap.ErrWrongToken) {
			err = errors.New("the cluster's sealed PKI cannot be decrypted with this token's secret: use the token of the cluster's DATA_DIR/token")
		}
		return nil, &ServerJoinError{Server: u.String(), Err: err}
	}
	var urls []string
	for k, v := range secret.Data {
		if strings.HasPrefix(k, etcdKeyPrefix) && len(v) > 0 {
			urls = append(urls, string(v))
		}
	}
	slices.Sort(urls)
	if len(urls) == 0 {
		return nil, &ServerJoinError{Server: u.String(), Err: fmt.Errorf("kube-system/%s names no etcd member", serverBootstrap)}
	}
	log.Info("Fetched the cluster's PKI: the cluster CA is the one the token pins", "server", u.String(), "caSHA256", tok.CAHash, "etcdMembers", urls)
	return urls, nil
}

// ServerJoinError is a server that could not join the cluster through the
// server it was given (--server): a CA the token does not pin, a token
// the cluster does not accept, a record that does not verify. Nothing was
// written.
//
//	joining the cluster through https://192.0.2.10:6443: the server https://192.0.2.10:6443 sent no certificate with the sha256 the token pins (…)
type ServerJoinError struct {
	Server string
	Err    error
}

func (e *ServerJoinError) Error() string {
	return fmt.Sprintf("joining the cluster through %s: %v", e.Server, e.Err)
}

func (e *ServerJoinError) Unwrap() error { return e.Err }
