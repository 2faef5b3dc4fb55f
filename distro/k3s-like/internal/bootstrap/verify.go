package bootstrap

import (
	"crypto"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"

	"github.com/kubeharness/kubeharness/components/pki"
)

// PinError is a record whose server CA certificate is not the one the
// token pins.
type PinError struct {
	// Pinned is the sha256 the token pins; Got the one of the record's
	// server-ca.crt (lower-case hex).
	Pinned, Got string
}

func (e *PinError) Error() string {
	return fmt.Sprintf("the cluster CA in the datastore has sha256 %s, not the %s the token pins: refusing to trust it (another cluster's datastore, or a tampered record); nothing was written", e.Got, e.Pinned)
}

// verify checks the decrypted files before anything is written: every one
// of Files is there; server-ca.crt has the sha256 pinned (when pinned is
// not ""); each CA certificate among Files (a .crt beside a .key) is a CA
// certificate and the key beside it is its private key; each public key (a
// .pub beside a .key, the service account's) is the private key's.
//
// With a pin, that check of server-ca.key is what covers the other files:
// a record is accepted only if its writer held the private key of the
// pinned CA — the proof a signature by that key would give, for every
// record, old or new, with no signature to strip. Without a pin it only
// refuses an inconsistent record before it is written.
func verify(files map[string][]byte, pinned string) error {
	return verifyNames(files, pinned, Files)
}

// verifyNames is verify of the files names.
func verifyNames(files map[string][]byte, pinned string, names []string) error {
	for _, name := range names {
		if _, ok := files[name]; !ok {
			return &RecordError{Field: name, Problem: "missing from the decrypted record"}
		}
	}
	serverCA := pki.Layout{}.ServerCA()
	if pinned != "" {
		sum := sha256.Sum256(files[serverCA.CertFile])
		if got := hex.EncodeToString(sum[:]); got != pinned {
			return &PinError{Pinned: pinned, Got: got}
		}
	}
	shared := map[string]bool{}
	for _, name := range names {
		shared[name] = true
	}
	for _, name := range names {
		base, ok := strings.CutSuffix(name, ".key")
		if !ok {
			continue
		}
		if ca := (pki.CertKey{CertFile: base + ".crt", KeyFile: name}); shared[ca.CertFile] {
			if err := checkCA(files, ca, pinned != "" && ca == serverCA); err != nil {
				return err
			}
		}
		if pub := base + ".pub"; shared[pub] {
			if err := checkPublicKey(files, name, pub); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkPublicKey checks that files[pub] is the public key of files[key].
func checkPublicKey(files map[string][]byte, key, pub string) error {
	k, err := privateKey(files, key)
	if err != nil {
		return err
	}
	pubs, err := keyutil.ParsePublicKeysPEM(files[pub])
	if err != nil {
		return &RecordError{Field: pub, Problem: err.Error()}
	}
	if len(pubs) != 1 || !sameKey(pubs[0], k.Public()) {
		return &RecordError{Field: pub, Problem: "not the public key of " + key}
	}
	return nil
}

// checkCA checks that files[ca.CertFile] starts with a CA certificate
// whose private key is files[ca.KeyFile].
func checkCA(files map[string][]byte, ca pki.CertKey, pinned bool) error {
	certs, err := certutil.ParseCertsPEM(files[ca.CertFile])
	if err != nil {
		return &RecordError{Field: ca.CertFile, Problem: err.Error()}
	}
	if !certs[0].IsCA {
		return &RecordError{Field: ca.CertFile, Problem: "not a CA certificate"}
	}
	key, err := privateKey(files, ca.KeyFile)
	if err != nil {
		return err
	}
	if !sameKey(certs[0].PublicKey, key.Public()) {
		problem := "not the private key of " + ca.CertFile
		if pinned {
			problem += ", the CA the token pins: whoever wrote this record does not hold that CA's key; refusing it, nothing was written"
		}
		return &RecordError{Field: ca.KeyFile, Problem: problem}
	}
	return nil
}

// privateKey parses files[name] as a PEM private key that can sign.
func privateKey(files map[string][]byte, name string) (crypto.Signer, error) {
	k, err := keyutil.ParsePrivateKeyPEM(files[name])
	if err != nil {
		return nil, &RecordError{Field: name, Problem: err.Error()}
	}
	s, ok := k.(crypto.Signer)
	if !ok {
		return nil, &RecordError{Field: name, Problem: fmt.Sprintf("a %T, not a signing key", k)}
	}
	return s, nil
}

func sameKey(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}
