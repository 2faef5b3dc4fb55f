package status

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Who may read what on the status endpoint.
//
// Plain HTTP (a loopback --status-address with --status-tls=auto)
// authenticates no one: every local user reads every path. Only a Host
// naming loopback is answered (a page whose name a local browser resolves
// to 127.0.0.1 is not: DNS rebinding), and no request a browser marks as
// coming from another site.
//
// Over TLS every client holds a verified certificate of the client CA: its
// CN is the user and its O the groups, as kube-apiserver reads it. The
// health paths are open to any of them; every other path to system:masters,
// or to a user the apiserver allows to get that non-resource path (RBAC
// nonResourceURLs), asked by SubjectAccessReview: upstream's delegated
// authorization (AlwaysAllowPaths, AlwaysAllowGroups), which the components
// use for their own /metrics and /flagz. A node's certificate (system:nodes)
// gets no more than the health paths.

// statusHealthPaths are open to every client of a TLS status endpoint, with
// their sub-paths (/readyz/NAME).
func statusHealthPaths() []string { return []string{"/livez", "/readyz", "/healthz"} }

// statusGuard serves next to whom statusGuard allows.
type statusGuard struct {
	next http.Handler
	// authz decides, over TLS, for a user outside system:masters; nil
	// denies them all.
	authz statusAuthz
}

// statusAuthz is what statusGuard asks of an authorizer.Authorizer (whose
// other methods vary with the Kubernetes minor).
type statusAuthz interface {
	Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error)
}

func (g statusGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil {
		if reason := localOnly(r); reason != "" {
			http.Error(w, reason, http.StatusForbidden)
			return
		}
		g.next.ServeHTTP(w, r)
		return
	}
	u, err := statusUser(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	if statusHealthPath(r.URL.Path) || slices.Contains(u.Groups, user.SystemPrivilegedGroup) {
		g.next.ServeHTTP(w, r)
		return
	}
	verb := strings.ToLower(r.Method)
	decision, reason := authorizer.DecisionDeny, ""
	if g.authz != nil {
		decision, reason, err = g.authz.Authorize(r.Context(), authorizer.AttributesRecord{User: u, Verb: verb, Path: r.URL.Path})
	}
	switch {
	case decision == authorizer.DecisionAllow:
		g.next.ServeHTTP(w, r)
	case err != nil:
		http.Error(w, fmt.Sprintf("cannot authorize User %q to %s path %q: %v", u.Name, verb, r.URL.Path, err), http.StatusServiceUnavailable)
	default:
		msg := fmt.Sprintf("forbidden: User %q cannot %s path %q", u.Name, verb, r.URL.Path)
		if reason != "" {
			msg += ": " + reason
		}
		http.Error(w, msg, http.StatusForbidden)
	}
}

// statusHealthPath reports whether p is a health path or one's sub-path,
// in clean form (ServeMux redirects any other).
func statusHealthPath(p string) bool {
	if path.Clean(p) != p {
		return false
	}
	for _, h := range statusHealthPaths() {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// statusUser is the user of r's verified client certificate: CN the name,
// O the groups, and system:authenticated.
func statusUser(r *http.Request) (*user.DefaultInfo, error) {
	if len(r.TLS.VerifiedChains) == 0 || len(r.TLS.VerifiedChains[0]) == 0 {
		return nil, fmt.Errorf("a client certificate of the cluster's client CA is required")
	}
	leaf := r.TLS.VerifiedChains[0][0]
	if leaf.Subject.CommonName == "" {
		return nil, fmt.Errorf("the client certificate names no user (empty CN)")
	}
	groups := append(slices.Clone(leaf.Subject.Organization), user.AllAuthenticated)
	return &user.DefaultInfo{Name: leaf.Subject.CommonName, Groups: groups}, nil
}

// localOnly is why a plain-HTTP request is refused, or "": its Host must be
// a loopback IP or localhost (any port), and a browser must not say it
// comes from another site (Sec-Fetch-Site).
func localOnly(r *http.Request) string {
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	ip, err := netip.ParseAddr(host)
	if !strings.EqualFold(host, "localhost") && (err != nil || !ip.Unmap().IsLoopback()) {
		return fmt.Sprintf("Host %q: the status endpoint on loopback answers only a Host of loopback (127.0.0.1, [::1] or localhost)", r.Host)
	}
	switch site := r.Header.Get("Sec-Fetch-Site"); site {
	case "", "none", "same-origin":
	default:
		return fmt.Sprintf("Sec-Fetch-Site %q: the status endpoint answers no request a browser makes for another site", site)
	}
	return ""
}

// statusAuthorizer asks the apiserver, with the admin kubeconfig, whether
// a user may get a path (a SubjectAccessReview), each answer kept 10 s, as
// upstream's delegated authorization does; an apiserver that does not
// answer within a few seconds is an error (503), never an allow.
func statusAuthorizer(kubeconfig string) (statusAuthz, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("the status endpoint's authorization: %w", err)
	}
	cfg = rest.AddUserAgent(cfg, "k3s-like-status")
	cfg.Timeout = 3 * time.Second
	client, err := authorizationv1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("the status endpoint's authorization: %w", err)
	}
	return authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client,
		AllowCacheTTL:             10 * time.Second,
		DenyCacheTTL:              10 * time.Second,
		WebhookRetryBackoff:       &wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 2},
	}.New()
}
