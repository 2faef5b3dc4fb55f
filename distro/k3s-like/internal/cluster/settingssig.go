package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// settingSignature is the agent settings' key that holds the signature,
// by the cluster (server) CA's key, of every other key: an agent takes
// the settings (its kubelet's client CA among them) only if the CA its
// token pins signed them, so who can write ConfigMaps in kube-system
// cannot change what a new agent trusts.
const settingSignature = "signature"

// settingsMessage is what the signature covers: a context line, then each
// key but the signature, sorted, and its value, each length-prefixed.
func settingsMessage(data map[string]string) []byte {
	msg := []byte("k3s-like agent settings v1\n")
	for _, k := range slices.Sorted(maps.Keys(data)) {
		if k == settingSignature {
			continue
		}
		for _, s := range []string{k, data[k]} {
			msg = strconv.AppendInt(msg, int64(len(s)), 10)
			msg = append(msg, ':')
			msg = append(msg, s...)
		}
	}
	return msg
}

// signatureAlgorithm is the x509 algorithm of a CA key's signatures.
func signatureAlgorithm(pub crypto.PublicKey) (x509.SignatureAlgorithm, error) {
	switch pub.(type) {
	case *ecdsa.PublicKey:
		return x509.ECDSAWithSHA256, nil
	case *rsa.PublicKey:
		return x509.SHA256WithRSA, nil
	case ed25519.PublicKey:
		return x509.PureEd25519, nil
	}
	return 0, fmt.Errorf("a CA key of type %T cannot sign the agent settings", pub)
}

// signSettings returns data's signature by key (the server CA's),
// base64-encoded.
func signSettings(key crypto.Signer, data map[string]string) (string, error) {
	algo, err := signatureAlgorithm(key.Public())
	if err != nil {
		return "", err
	}
	msg, opts := settingsMessage(data), crypto.SignerOpts(crypto.SHA256)
	if algo == x509.PureEd25519 {
		opts = crypto.Hash(0)
	} else {
		sum := sha256.Sum256(msg)
		msg = sum[:]
	}
	sig, err := key.Sign(rand.Reader, msg, opts)
	if err != nil {
		return "", fmt.Errorf("signing the agent settings: %w", err)
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// errSettingsUnsigned is settings without a signature.
var errSettingsUnsigned = errors.New("the agent settings carry no signature (a server older than the agent: upgrade servers first)")

// verifySettings checks data's signature against ca, the cluster CA the
// token pins.
func verifySettings(ca *x509.Certificate, data map[string]string) error {
	enc, ok := data[settingSignature]
	if !ok || enc == "" {
		return errSettingsUnsigned
	}
	sig, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return fmt.Errorf("the agent settings' signature: %w", err)
	}
	algo, err := signatureAlgorithm(ca.PublicKey)
	if err != nil {
		return err
	}
	if err := ca.CheckSignature(algo, settingsMessage(data), sig); err != nil {
		return fmt.Errorf("the agent settings are not signed by the cluster CA the token pins (changed by someone who may write ConfigMaps in kube-system?): %w", err)
	}
	return nil
}
