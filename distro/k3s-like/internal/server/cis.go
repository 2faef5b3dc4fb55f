package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubeharness/kubeharness/components/kubeargs"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cisfiles"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/secretsencrypt"
)

// The audit log's rotation, the CIS Benchmark's values (1.2.17–1.2.19):
// days kept, files kept, megabytes per file.
const (
	auditLogMaxAge    = "30"
	auditLogMaxBackup = "10"
	auditLogMaxSize   = "100"
)

// cisAPIServerArgs are kube-apiserver's defaults for the CIS Benchmark
// items k3s's hardening guide sets by hand: the audit policy and log,
// rotated (1.2.16–1.2.19); the Pod Security admission configuration;
// strong TLS cipher suites only (1.2.29); service-account tokens not
// extended (1.2.30); with --secrets-encryption, the
// encryption config, reloaded when it changes (1.2.27, 1.2.28). Each may
// be replaced by --kube-apiserver-arg.
func (o *options) cisAPIServerArgs() []kubeargs.Arg {
	psa := o.psaConfigFile
	if psa == "" {
		psa = datadir.PodSecurityConfig(o.DataDir)
	}
	args := []kubeargs.Arg{
		{Key: "audit-policy-file", Value: datadir.AuditPolicy(o.DataDir)},
		{Key: "audit-log-path", Value: datadir.AuditLog(o.DataDir)},
		{Key: "audit-log-maxage", Value: auditLogMaxAge},
		{Key: "audit-log-maxbackup", Value: auditLogMaxBackup},
		{Key: "audit-log-maxsize", Value: auditLogMaxSize},
		{Key: "admission-control-config-file", Value: psa},
		{Key: "tls-cipher-suites", Value: strings.Join(pki.StrongCipherSuites(), ",")},
		// Projected service-account tokens expire when they say (1.2.30;
		// upstream extends the kubelet's to a year for old clients).
		{Key: "service-account-extend-token-expiration", Value: "false"},
	}
	if o.secretsEncryption {
		args = append(args,
			kubeargs.Arg{Key: "encryption-provider-config", Value: datadir.EncryptionConfig(o.DataDir)},
			kubeargs.Arg{Key: "encryption-provider-config-automatic-reload", Value: "true"})
	}
	return args
}

// checkCIS checks the flags of the CIS defaults, and the state of the
// encryption config against --secrets-encryption: a config on disk means
// the datastore holds Secrets only its keys decrypt, so the flag may not
// be dropped; a config that cannot be read is an error naming the file; a
// server joining an etcd cluster (--server) brings the cluster's config,
// it never makes a key of its own.
func (o *options) checkCIS(user []kubeargs.Arg) error {
	if !slices.Contains(secretsencrypt.Providers(), o.secretsEncryptionProvider) {
		return fmt.Errorf("--secrets-encryption-provider=%s: want one of %s", o.secretsEncryptionProvider, strings.Join(secretsencrypt.Providers(), ", "))
	}
	if o.psaConfigFile != "" {
		for _, a := range user {
			if strings.TrimRight(a.Key, "+-") == "admission-control-config-file" {
				return fmt.Errorf("--pod-security-admission-config-file=%s and --kube-apiserver-arg=%s=%s: give one of them", o.psaConfigFile, a.Key, a.Value)
			}
		}
		if _, err := os.Stat(o.psaConfigFile); err != nil {
			return fmt.Errorf("--pod-security-admission-config-file=%s: %w", o.psaConfigFile, err)
		}
	}
	path := datadir.EncryptionConfig(o.DataDir)
	_, err := secretsencrypt.Load(path)
	// A data dir under a file holds no config either (Load): the
	// writability check says what is wrong with it.
	absent := errors.Is(err, fs.ErrNotExist)
	switch {
	case absent && o.secretsEncryption && o.etcd.server != "":
		// A key of its own would write Secrets the other servers cannot
		// read (and it could not read theirs).
		return fmt.Errorf("--secrets-encryption with --server=%s: this server joins a cluster whose Secrets are encrypted with keys it does not have: copy %s (0600) from a server of the cluster first (the config is not shared through the datastore)", o.etcd.server, path)
	case absent:
		return nil
	case err != nil:
		return err
	case !o.secretsEncryption:
		return fmt.Errorf("%s exists: the Secrets in the datastore are encrypted with its keys; start the server with --secrets-encryption (k3s-like cannot turn it off)", path)
	}
	return nil
}

// writeCISFiles writes, before kube-apiserver starts, the files its CIS
// defaults name: the audit policy and the Pod Security configuration if
// they are not there (an edited one is kept), the audit log's directory
// (0700), and with --secrets-encryption the encryption config (a new key
// the first time; an existing config is checked and kept).
func (o *options) writeCISFiles(now time.Time) error {
	if err := cisfiles.Write(o.DataDir, o.psaConfigFile == ""); err != nil {
		return err
	}
	if !o.secretsEncryption {
		return nil
	}
	_, err := secretsencrypt.Ensure(datadir.EncryptionConfig(o.DataDir), o.secretsEncryptionProvider, now)
	return err
}
