package cli

import (
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
)

// TestWarnWeakened: one logged Warning line per hardening default lost,
// none for hardened arguments.
func TestWarnWeakened(t *testing.T) {
	var logged []string
	log := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	hardened := []string{"--anonymous-auth=false", "--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction",
		"--kubelet-certificate-authority=/ca.crt"}
	assert.Empty(t, WarnWeakened(log, map[string][]string{"kube-apiserver": hardened}))
	assert.Empty(t, logged)

	lines := WarnWeakened(log, map[string][]string{"kube-apiserver": append(hardened, "--anonymous-auth=true", "--authorization-mode=AlwaysAllow")})
	assert.Equal(t, []string{
		"Warning: a passthrough flag removes a hardening default: kube-apiserver --anonymous-auth=true: requests without credentials are served as system:anonymous",
		"Warning: a passthrough flag removes a hardening default: kube-apiserver --authorization-mode=Node,RBAC,AlwaysAllow: AlwaysAllow: every authenticated request is allowed, whatever RBAC says",
	}, lines)
	assert.Len(t, logged, 2)
	for i := range logged {
		assert.Contains(t, logged[i], lines[i])
	}
}
