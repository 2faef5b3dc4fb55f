// Package pki creates and reuses the certificates, keys and kubeconfigs a
// single-binary control plane needs in its data directory: the cluster CAs
// (server, client, request-header, etcd, and one that signs only kubelet
// serving certificates), the apiserver's serving certificate, client
// certificates for the admin, kube-scheduler, kube-controller-manager, the
// apiserver itself (towards etcd, kubelets and as front proxy), the
// kubelet serving approver and the feature publisher, the service-account
// key pair, and kubeconfigs with the certificates embedded. Layout names every one of
// these files, before they exist: the one place their paths are defined.
//
// Ensure is idempotent: a CA whose certificate and key are present and valid
// is reused, never regenerated, so that certificates, kubeconfigs and tokens
// issued earlier stay valid. A leaf certificate is reused while it is signed
// by the current CA, is not about to expire, and covers what is asked for;
// otherwise it is issued again. Private keys are written 0600, certificates
// 0644, the directory 0700. Keys are ECDSA P-256; certificates are made with
// client-go's util/cert and util/keyutil and crypto/x509.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// DefaultValidity is how long a leaf certificate issued by Ensure is valid.
const DefaultValidity = 365 * 24 * time.Hour

// renewBefore: a leaf expiring sooner than this is issued again.
const renewBefore = 30 * 24 * time.Hour

// CA is a certificate authority: its certificate and signing key, and the
// files they live in.
type CA struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertFile string
	KeyFile  string
}

// LoadOrCreateCA reuses the CA in certFile and keyFile when both exist and
// match; when neither exists it creates a self-signed CA named commonName
// (valid ten years) and writes it. A CA with only one of its two files, or
// whose key does not match its certificate, is an error: regenerating it
// would silently invalidate everything it signed.
func LoadOrCreateCA(certFile, keyFile, commonName string) (*CA, error) {
	certOK, keyOK := exists(certFile), exists(keyFile)
	switch {
	case certOK && keyOK:
		return LoadCA(certFile, keyFile)
	case certOK || keyOK:
		return nil, fmt.Errorf("pki: CA %s: only one of %s and %s exists; refusing to generate a new CA over it", commonName, certFile, keyFile)
	}
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	crt, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName}, key)
	if err != nil {
		return nil, fmt.Errorf("pki: CA %s: %w", commonName, err)
	}
	if err := writeKey(keyFile, key); err != nil {
		return nil, err
	}
	if err := writeCerts(certFile, crt); err != nil {
		return nil, err
	}
	return &CA{Cert: crt, Key: key, CertFile: certFile, KeyFile: keyFile}, nil
}

// LoadCA reads the CA in certFile and keyFile; a key that does not match
// the certificate, or a certificate that is not a CA's, is an error.
func LoadCA(certFile, keyFile string) (*CA, error) {
	certs, err := certutil.CertsFromFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", certFile, err)
	}
	key, err := loadKey(keyFile)
	if err != nil {
		return nil, err
	}
	crt := certs[0]
	if !crt.IsCA {
		return nil, fmt.Errorf("pki: %s is not a CA certificate", certFile)
	}
	if !publicKeysEqual(crt.PublicKey, key.Public()) {
		return nil, fmt.Errorf("pki: %s does not match the CA certificate %s", keyFile, certFile)
	}
	return &CA{Cert: crt, Key: key, CertFile: certFile, KeyFile: keyFile}, nil
}

// CertPEM is the CA certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte {
	b, _ := certutil.EncodeCertificates(ca.Cert)
	return b
}

// Leaf describes a certificate to issue.
type Leaf struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	// Server and Client select the extended key usages.
	Server, Client bool
	// Validity defaults to DefaultValidity.
	Validity time.Duration
	// Chain writes the CA's certificate after the leaf's, so that a TLS
	// server sends it in the handshake (a joining node pins it by hash).
	Chain bool
}

// Pair is an issued certificate and its key, PEM-encoded, and the files
// they were written to.
type Pair struct {
	CertFile, KeyFile string
	CertPEM, KeyPEM   []byte
}

// Ensure returns the certificate and key in certFile and keyFile if they
// are still right for leaf (signed by ca, valid for at least 30 more days,
// same subject, covering leaf's names and usages), and otherwise issues and
// writes new ones.
func (ca *CA) Ensure(certFile, keyFile string, leaf Leaf) (*Pair, error) {
	if p, ok := ca.reusable(certFile, keyFile, leaf); ok {
		return p, nil
	}
	return ca.Issue(certFile, keyFile, leaf)
}

// Issue issues a new certificate for leaf, with a new key, and writes both.
func (ca *CA) Issue(certFile, keyFile string, leaf Leaf) (*Pair, error) {
	key, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).SetInt64(math.MaxInt64-1))
	if err != nil {
		return nil, err
	}
	validity := leaf.Validity
	if validity == 0 {
		validity = DefaultValidity
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               pkix.Name{CommonName: leaf.CommonName, Organization: leaf.Organization},
		DNSNames:              leaf.DNSNames,
		IPAddresses:           leaf.IPs,
		NotBefore:             now.Add(-time.Minute).UTC(),
		NotAfter:              now.Add(validity).UTC(),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           usages(leaf),
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("pki: issuing %s: %w", leaf.CommonName, err)
	}
	crt, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	if err := writeKey(keyFile, key); err != nil {
		return nil, err
	}
	chain := []*x509.Certificate{crt}
	if leaf.Chain {
		chain = append(chain, ca.Cert)
	}
	if err := writeCerts(certFile, chain...); err != nil {
		return nil, err
	}
	return readPair(certFile, keyFile)
}

func (ca *CA) reusable(certFile, keyFile string, leaf Leaf) (*Pair, bool) {
	p, err := readPair(certFile, keyFile)
	if err != nil {
		return nil, false
	}
	certs, err := certutil.ParseCertsPEM(p.CertPEM)
	if err != nil {
		return nil, false
	}
	key, err := keyutil.ParsePrivateKeyPEM(p.KeyPEM)
	if err != nil {
		return nil, false
	}
	signer, ok := key.(crypto.Signer)
	crt := certs[0]
	switch {
	case !ok || !publicKeysEqual(crt.PublicKey, signer.Public()):
		return nil, false
	case crt.CheckSignatureFrom(ca.Cert) != nil:
		return nil, false
	case time.Until(crt.NotAfter) < renewBefore:
		return nil, false
	case crt.Subject.CommonName != leaf.CommonName || !sameStrings(crt.Subject.Organization, leaf.Organization):
		return nil, false
	case !sameStrings(crt.DNSNames, leaf.DNSNames) || !sameIPs(crt.IPAddresses, leaf.IPs):
		return nil, false
	case !slices.Equal(crt.ExtKeyUsage, usages(leaf)):
		return nil, false
	case leaf.Chain != (len(certs) == 2 && certs[1].Equal(ca.Cert)):
		return nil, false
	}
	return p, true
}

func usages(leaf Leaf) []x509.ExtKeyUsage {
	var u []x509.ExtKeyUsage
	if leaf.Server {
		u = append(u, x509.ExtKeyUsageServerAuth)
	}
	if leaf.Client {
		u = append(u, x509.ExtKeyUsageClientAuth)
	}
	return u
}

func readPair(certFile, keyFile string) (*Pair, error) {
	c, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	k, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, err
	}
	return &Pair{CertFile: certFile, KeyFile: keyFile, CertPEM: c, KeyPEM: k}, nil
}

// EnsureKeyPair reuses the private key in keyFile (any type keyutil
// parses) or generates an ECDSA P-256 key, and (re)writes its public key to
// pubFile. It is the service-account signing key pair.
func EnsureKeyPair(keyFile, pubFile string) error {
	var key crypto.Signer
	if exists(keyFile) {
		k, err := loadKey(keyFile)
		if err != nil {
			return err
		}
		key = k
	} else {
		k, err := newKey()
		if err != nil {
			return err
		}
		if err := writeKey(keyFile, k); err != nil {
			return err
		}
		key = k
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("pki: %s: %w", keyFile, err)
	}
	return writeFile(pubFile, pemEncode("PUBLIC KEY", der), 0o644)
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

func loadKey(keyFile string) (crypto.Signer, error) {
	k, err := keyutil.PrivateKeyFromFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("pki: %s: %w", keyFile, err)
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("pki: %s: not a signing key", keyFile)
	}
	return s, nil
}

// WritePair writes p's key (0600) and certificate (0644) to its files, as
// Issue writes the pairs it makes: for a certificate a signer elsewhere
// issued (a CSR's).
func WritePair(p *Pair) error {
	if err := writeFile(p.KeyFile, p.KeyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(p.CertFile, p.CertPEM, 0o644)
}

func writeKey(path string, key crypto.PrivateKey) error {
	b, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", path, err)
	}
	return writeFile(path, b, 0o600)
}

func writeCerts(path string, certs ...*x509.Certificate) error {
	b, err := certutil.EncodeCertificates(certs...)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", path, err)
	}
	return writeFile(path, b, 0o644)
}

// writeFile writes through a temporary file (O_EXCL), synced and renamed,
// then syncs the directory: a reader or a crash never sees half a file, a
// symbolic link at path is replaced, not followed, and the mode is exactly
// mode even when the file existed with another.
func writeFile(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Chmod(mode), f.Sync(), f.Close()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pki: writing %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("pki: %w", err)
	}
	// The rename outlives a crash once the directory is synced.
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		return fmt.Errorf("pki: syncing %s: %w", filepath.Dir(path), err)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

func sameStrings(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func sameIPs(a, b []net.IP) bool {
	if len(a) != len(b) {
		return false
	}
	for _, ip := range b {
		if !slices.ContainsFunc(a, ip.Equal) {
			return false
		}
	}
	return true
}

func pemEncode(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
