package e2e

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestReachableFromAnotherHost: with --bind-address=0.0.0.0 the apiserver
// advertises a host address, the admin kubeconfig points at it, and a TLS
// handshake to it with that kubeconfig verifies; the serving certificate
// covers the host's addresses and name, --tls-san and the service IP; the
// "kubernetes" Service's endpoint is the advertised address. A changed
// --tls-san reissues the serving certificate under the same CA.
//
// It listens on this host's own non-loopback address (every address: the
// flag under test) and connects to it from this host; the etcd, status,
// scheduler and controller-manager ports stay on loopback.
func TestReachableFromAnotherHost(t *testing.T) {
	ifaddrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	hostname, err := os.Hostname()
	require.NoError(t, err)
	var addrs, hostIPs []string // every non-loopback, non-link-local address; the IPv4 ones
	for _, a := range ifaddrs {
		ipnet, ok := a.(*net.IPNet)
		if !ok || ipnet.IP.IsLoopback() || ipnet.IP.IsLinkLocalUnicast() {
			continue
		}
		addrs = append(addrs, ipnet.IP.String())
		if ipnet.IP.To4() != nil {
			hostIPs = append(hostIPs, ipnet.IP.String())
		}
	}
	if len(hostIPs) == 0 {
		t.Skip("this host has no non-loopback IPv4 address")
	}
	dataDir := t.TempDir()
	s := newServer(t, dataDir)
	s.start("--bind-address=0.0.0.0", "--tls-san=k8s.example.test", "--tls-san=198.51.100.7")
	s.waitReady(90 * time.Second)

	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	require.NoError(t, err)
	u, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	advertised := u.Hostname()
	assert.Contains(t, addrs, advertised, "the admin kubeconfig points at a host address, not loopback")
	assert.Equal(t, strconv.Itoa(s.ports["https"]), u.Port())

	// The kubeconfig's own TLS settings (CA, client certificate) verify the
	// apiserver at the non-loopback address.
	c := s.client()
	nss, err := c.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err, "a TLS handshake and a request to %s with the admin kubeconfig", cfg.Host)
	assert.NotEmpty(t, nss.Items)

	cert := servingCert(t, net.JoinHostPort(advertised, u.Port()), "", dataDir)
	for _, ip := range append(hostIPs, "127.0.0.1", "10.43.0.1", "198.51.100.7") {
		assert.True(t, slices.ContainsFunc(cert.IPAddresses, func(got net.IP) bool { return got.Equal(net.ParseIP(ip)) }), "the serving certificate covers %s: %v", ip, cert.IPAddresses)
	}
	for _, name := range []string{"k8s.example.test", hostname, "kubernetes.default.svc.cluster.local"} {
		assert.Contains(t, cert.DNSNames, name)
	}
	// A client that knows the server by its --tls-san name verifies too.
	servingCert(t, net.JoinHostPort(advertised, u.Port()), "k8s.example.test", dataDir)

	// The "kubernetes" Service's endpoint is the advertised address (the
	// lease reconciler), as other hosts' Pods reach it.
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		ep, err := c.CoreV1().Endpoints("default").Get(t.Context(), "kubernetes", metav1.GetOptions{})
		if !assert.NoError(ct, err) || !assert.Len(ct, ep.Subsets, 1) || !assert.Len(ct, ep.Subsets[0].Addresses, 1) {
			return
		}
		assert.Equal(ct, advertised, ep.Subsets[0].Addresses[0].IP)
	}, 30*time.Second, 500*time.Millisecond)

	caBefore, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ := s.wait(20 * time.Second)
	require.Equal(t, 0, code)

	// Another --tls-san: a new serving certificate, the same CA.
	s2 := &server{t: t, dataDir: dataDir, ports: s.ports}
	s2.start("--bind-address=0.0.0.0", "--tls-san=other.example.test")
	s2.waitReady(90 * time.Second)
	caAfter, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	assert.Equal(t, caBefore, caAfter, "a SAN change never reissues the CA")
	cert2 := servingCert(t, net.JoinHostPort(advertised, u.Port()), "other.example.test", dataDir)
	assert.NotEqual(t, cert.SerialNumber, cert2.SerialNumber, "the serving certificate was reissued")
	assert.NotContains(t, cert2.DNSNames, "k8s.example.test", "the old --tls-san is gone")
	require.NoError(t, s2.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s2.wait(20 * time.Second)
	assert.Equal(t, 0, code)
}

// servingCert completes a TLS handshake with addr, verifying its
// certificate against the server CA of dataDir for serverName (the
// address's host if ""), and returns the certificate.
func servingCert(t *testing.T, addr, serverName, dataDir string) *x509.Certificate {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(dataDir, "tls", "server-ca.crt"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(caPEM))
	if serverName == "" {
		serverName, _, _ = net.SplitHostPort(addr)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pool, ServerName: serverName})
	require.NoError(t, err, "TLS handshake with %s as %s", addr, serverName)
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}
