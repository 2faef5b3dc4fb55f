package cluster

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// Node passwords, as k3s's (pkg/nodepassword): each node keeps a random
// password (k3s: /etc/rancher/node/password; here NodePasswordFile), and
// the cluster keeps, per node name, a Secret in kube-system
// (NodePasswordSecret) that only that password matches: the first node to
// get a client certificate for a name claims it, and a name already
// claimed is refused to anyone without its password.
//
// k3s's agent sends the password to its supervisor, which stores an
// scrypt hash. Here a node's client certificate comes from a CSR that the
// node-client approver (NodeClientApprover) reviews, and a CSR is readable
// by other bootstrapping nodes: the password never leaves the node. The
// node derives an Ed25519 key from it (HKDF-SHA256) and signs the CSR's
// request with it (the annotation NodePasswordProofAnnotation); the
// Secret holds that key's public half, a one-way function of the password.

// NodePasswordFile is a node's password file: DATA_DIR/agent/node-password
// (0600), on an agent and on a server with a node.
func NodePasswordFile(dataDir string) string {
	return filepath.Join(dataDir, "agent", "node-password")
}

// EnsureNodePassword returns the node's password from NodePasswordFile,
// making a random one (32 bytes from crypto/rand, hex) if the file does not
// exist. A file that exists but cannot be read, or holds less than 32
// characters, is an error naming it (never its content): the node's name is
// claimed with that password, and a new one would not match it.
func EnsureNodePassword(dataDir string) (string, error) {
	path := NodePasswordFile(dataDir)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		p := strings.TrimSpace(string(b))
		if len(p) < minNodePassword {
			return "", fmt.Errorf("the node password file %s holds %d characters, want at least %d: remove it to make a new one (and delete kube-system/NODE%s if the node's name was claimed with the old one)", path, len(p), minNodePassword, nodePasswordSuffix)
		}
		return p, nil
	case !os.IsNotExist(err):
		return "", fmt.Errorf("the node password file: %w", err)
	}
	p, err := NewSecret()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := atomicfile.Write(path, []byte(p+"\n"), 0o600); err != nil {
		return "", err
	}
	return p, nil
}

// minNodePassword is the shortest node password accepted.
const minNodePassword = 32

// The node password Secret: kube-system/NODE.node-password.k3s-like, as
// k3s's NODE.node-password.k3s, of type NodePasswordSecretType, whose key
// nodePasswordKey holds the Ed25519 public key of the node's password.
const (
	nodePasswordSuffix     = ".node-password.k3s-like"
	NodePasswordSecretType = corev1.SecretType("k3s-like.kubeharness.io/node-password")
	nodePasswordKey        = "public-key"
	// NodePasswordProofAnnotation is the CSR annotation that proves the
	// node password: base64(public key) "." base64(signature).
	NodePasswordProofAnnotation = "k3s-like.kubeharness.io/node-password-proof"
)

// NodePasswordSecret is the name of node's password Secret in kube-system.
func NodePasswordSecret(node string) string { return strings.ToLower(node) + nodePasswordSuffix }

// nodeKey is the Ed25519 key of a node password.
func nodeKey(password string) (ed25519.PrivateKey, error) {
	seed, err := hkdf.Key(sha256.New, []byte(password), nil, "k3s-like node password", ed25519.SeedSize)
	if err != nil {
		return nil, err
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// NodePasswordPublicKey is the public key that node password's Secret
// holds.
func NodePasswordPublicKey(password string) (ed25519.PublicKey, error) {
	k, err := nodeKey(password)
	if err != nil {
		return nil, err
	}
	return k.Public().(ed25519.PublicKey), nil
}

// proofMessage is what a proof signs: the node's name and the CSR's
// request (PEM), so that a proof is good for that request only.
func proofMessage(node string, request []byte) []byte {
	return append([]byte("k3s-like node client certificate\x00"+node+"\x00"), request...)
}

// ProveNodePassword is the value of NodePasswordProofAnnotation for a CSR
// of node whose spec.request is request, made with the node's password.
func ProveNodePassword(password, node string, request []byte) (string, error) {
	k, err := nodeKey(password)
	if err != nil {
		return "", err
	}
	pub := k.Public().(ed25519.PublicKey)
	return base64.StdEncoding.EncodeToString(pub) + "." + base64.StdEncoding.EncodeToString(ed25519.Sign(k, proofMessage(node, request))), nil
}

// verifyProof checks a NodePasswordProofAnnotation value for node's
// request and returns the public key it was made with.
func verifyProof(proof, node string, request []byte) (ed25519.PublicKey, error) {
	if proof == "" {
		return nil, fmt.Errorf("no %s annotation: the node did not present its node password (an agent of an older release, or not an agent)", NodePasswordProofAnnotation)
	}
	p, s, ok := strings.Cut(proof, ".")
	pub, err1 := base64.StdEncoding.DecodeString(p)
	sig, err2 := base64.StdEncoding.DecodeString(s)
	if !ok || err1 != nil || err2 != nil || len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return nil, fmt.Errorf("the %s annotation is not base64(Ed25519 public key).base64(signature)", NodePasswordProofAnnotation)
	}
	if !ed25519.Verify(pub, proofMessage(node, request), sig) {
		return nil, fmt.Errorf("the %s annotation's signature does not match the request for node %s", NodePasswordProofAnnotation, node)
	}
	return ed25519.PublicKey(pub), nil
}

// NodePasswordError is a node name already claimed with another node
// password, or a password Secret that cannot be checked: never approved.
type NodePasswordError struct {
	Node, Secret, Reason string
}

// Example: node name node-a is held by another node: its node password does
// not match kube-system/node-a.node-password.k3s-like (…)
func (e *NodePasswordError) Error() string {
	return fmt.Sprintf("node name %s %s (kube-system/%s)", e.Node, e.Reason, e.Secret)
}

// nodePasswordMismatch is NodePasswordError's reason for another password.
const nodePasswordMismatch = "is held by another node: its node password does not match (a node that replaces it keeps the old one's DATA_DIR/agent/node-password, or the operator deletes the old Node and this Secret)"

// EnsureNodePasswordSecret claims node's name for the node password whose
// public key is pub, as k3s's nodepassword.Ensure: it creates
// kube-system/NODE.node-password.k3s-like if there is none, and otherwise
// checks that it holds pub. A Secret of another type or without a valid
// key is a *NodePasswordError (never overwritten: an operator deletes it);
// so is another key.
func EnsureNodePasswordSecret(ctx context.Context, client kubernetes.Interface, node string, pub ed25519.PublicKey) error {
	secrets := client.CoreV1().Secrets(metav1.NamespaceSystem)
	name := NodePasswordSecret(node)
	s, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		immutable := true
		s, err = secrets.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceSystem},
			Type:       NodePasswordSecretType,
			Immutable:  &immutable,
			Data:       map[string][]byte{nodePasswordKey: pub},
		}, metav1.CreateOptions{FieldManager: joinManager})
		if apierrors.IsAlreadyExists(err) {
			s, err = secrets.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("node %s's password Secret kube-system/%s: %w", node, name, err)
	}
	return checkNodePasswordSecret(s, node, pub)
}

// checkNodePasswordSecret checks that s is node's password Secret holding
// pub.
func checkNodePasswordSecret(s *corev1.Secret, node string, pub ed25519.PublicKey) error {
	have := s.Data[nodePasswordKey]
	switch {
	case s.Type != NodePasswordSecretType:
		return &NodePasswordError{Node: node, Secret: s.Name, Reason: fmt.Sprintf("has a password Secret of type %q, not %s: delete it if the node name is free", s.Type, NodePasswordSecretType)}
	case len(have) != ed25519.PublicKeySize:
		return &NodePasswordError{Node: node, Secret: s.Name, Reason: fmt.Sprintf("has a password Secret whose %s is %d bytes, not an Ed25519 public key: delete it if the node name is free", nodePasswordKey, len(have))}
	case !bytes.Equal(have, pub):
		return &NodePasswordError{Node: node, Secret: s.Name, Reason: nodePasswordMismatch}
	}
	return nil
}
