// Package cisfiles writes, before kube-apiserver starts, the files its CIS
// defaults name: the audit policy and the Pod Security admission
// configuration, each only if absent (an edited one is kept), and the
// audit log's directory (0700). A server writes them (package server), as
// does make bench for the upstream processes it compares with.
package cisfiles

import (
	"os"
	"path/filepath"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
)

// AuditPolicy is the audit policy of k3s's CIS hardening guide: every
// request at Metadata (who, what, when, the answer's code; never a body,
// so never a Secret's data).
const AuditPolicy = `# k3s-like's default audit policy, the CIS hardening guide's (k3s): every
# request at Metadata level, no bodies. Edit it here, or pass your own with
# --kube-apiserver-arg=audit-policy-file=FILE.
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Metadata
`

// PodSecurityConfig is the default Pod Security admission configuration:
// baseline enforced in every namespace not labelled otherwise (no
// privileged containers, host namespaces, hostPath volumes or host ports),
// kube-system exempt as in k3s's hardened profile (the packaged
// components run there); audit and warn at baseline too.
const PodSecurityConfig = `# k3s-like's default Pod Security admission configuration (--pod-security-admission-config-file
# replaces it): baseline enforced by default, kube-system exempt. A namespace
# label pod-security.kubernetes.io/enforce=LEVEL overrides the default.
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      enforce-version: latest
      audit: baseline
      audit-version: latest
      warn: baseline
      warn-version: latest
    exemptions:
      usernames: []
      runtimeClasses: []
      namespaces: [kube-system]
`

// Write writes the audit policy (datadir.AuditPolicy), with psa the Pod
// Security configuration (datadir.PodSecurityConfig), each 0600 and only if
// absent, and the audit log's directory.
func Write(dataDir string, psa bool) error {
	files := map[string]string{datadir.AuditPolicy(dataDir): AuditPolicy}
	if psa {
		files[datadir.PodSecurityConfig(dataDir)] = PodSecurityConfig
	}
	for path, content := range files {
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := atomicfile.Write(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	return os.MkdirAll(filepath.Dir(datadir.AuditLog(dataDir)), 0o700)
}
