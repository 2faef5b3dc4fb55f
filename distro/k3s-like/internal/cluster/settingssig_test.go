package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSettingsSignatureKeys: the settings sign and verify with each kind
// of CA key an operator's CA may have; another CA of the same kind does
// not verify them.
func TestSettingsSignatureKeys(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	ec2, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	rs, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	rs2, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	_, ed2, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	data := map[string]string{settingClientCA: "PEM", settingClusterDNS: "10.43.0.10"}
	for name, keys := range map[string][2]crypto.Signer{"ecdsa": {ec, ec2}, "rsa": {rs, rs2}, "ed25519": {ed, ed2}} {
		sig, err := signSettings(keys[0], data)
		require.NoError(t, err, name)
		signed := map[string]string{settingSignature: sig}
		for k, v := range data {
			signed[k] = v
		}
		assert.NoError(t, verifySettings(selfSigned(t, keys[0]), signed), name)
		assert.Error(t, verifySettings(selfSigned(t, keys[1]), signed), "%s: another CA", name)
	}
}

func selfSigned(t *testing.T, key crypto.Signer) *x509.Certificate {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	c, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return c
}
