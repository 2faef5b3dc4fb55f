// Package secretsencrypt is Secrets encryption at rest, as k3s's
// --secrets-encryption and `k3s secrets-encrypt`: an EncryptionConfiguration
// under DATA_DIR (0600, keys from crypto/rand, aescbc by default or
// secretbox) that kube-apiserver reads and reloads
// (--encryption-provider-config-automatic-reload), and the rotation of
// its key with every Secret rewritten. One kube-apiserver at a time: the
// config is each server's own file.
package secretsencrypt
