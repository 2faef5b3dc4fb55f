// Package datadir is the layout of a k3s-like server's --data-dir, shared
// by the server and by what runs one (the bench), as k3s lays out its
// server directory.
package datadir

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/kubeharness/kubeharness/components/pki"
)

// PKI is where the certificates, keys and kubeconfigs are:
// DATA_DIR/tls, in package pki's layout.
func PKI(dataDir string) pki.Layout { return pki.Layout{Dir: filepath.Join(dataDir, "tls")} }

// Etcd is the embedded etcd's data: DATA_DIR/etcd.
func Etcd(dataDir string) string { return filepath.Join(dataDir, "etcd") }

// AdminKubeconfig is the admin kubeconfig the server writes unless
// --write-kubeconfig names another file: DATA_DIR/admin.kubeconfig.
func AdminKubeconfig(dataDir string) string { return filepath.Join(dataDir, "admin.kubeconfig") }

// Snapshots is where the embedded etcd's snapshots go unless
// --etcd-snapshot-dir says otherwise: DATA_DIR/snapshots.
func Snapshots(dataDir string) string { return filepath.Join(dataDir, "snapshots") }

// EncryptionConfig is the EncryptionConfiguration of --secrets-encryption,
// as k3s keeps it: DATA_DIR/cred/encryption-config.json (0600).
func EncryptionConfig(dataDir string) string {
	return filepath.Join(dataDir, "cred", "encryption-config.json")
}

// AuditPolicy is kube-apiserver's default audit policy: DATA_DIR/audit.yaml.
func AuditPolicy(dataDir string) string { return filepath.Join(dataDir, "audit.yaml") }

// AuditLog is kube-apiserver's default audit log: DATA_DIR/logs/audit.log.
func AuditLog(dataDir string) string { return filepath.Join(dataDir, "logs", "audit.log") }

// PodSecurityConfig is the default Pod Security admission configuration:
// DATA_DIR/psa.yaml.
func PodSecurityConfig(dataDir string) string { return filepath.Join(dataDir, "psa.yaml") }

// NodeRun is the node's runtime directory for a data dir, a server's or
// an agent's: /run/k3s-like/ and the first 5 bytes of the SHA-256 of the
// data dir's absolute path in hex (short: a unix socket's path is limited
// to 107 bytes). containerd's state and sockets are in it.
func NodeRun(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join("/run/k3s-like", hex.EncodeToString(sum[:5]))
}

// ContainerdSocket is the node's containerd socket (its CRI) for a data
// dir: containerd.sock in NodeRun.
func ContainerdSocket(dataDir string) string {
	return filepath.Join(NodeRun(dataDir), "containerd.sock")
}
