package status

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeharness/kubeharness/components/pki"
)

// The status endpoint (--status-address) shows every component's
// arguments, the feature plan and the leader election. On loopback it is
// plain HTTP, for the local operator and scripts; anywhere else it is
// HTTPS with the apiserver's serving certificate and requires a client
// certificate of the cluster's client CA (the admin kubeconfig's works),
// and authorization beyond the health paths (statusGuard).
// --status-tls=always asks for the latter on loopback too.
const (
	TLSAuto   = "auto"
	TLSAlways = "always"
)

// UsesTLS reports whether the status endpoint at addr is served (or
// reached) over TLS in mode.
func UsesTLS(addr, mode string) (bool, error) {
	switch mode {
	case TLSAlways:
		return true, nil
	case TLSAuto, "":
	default:
		return false, fmt.Errorf("--status-tls=%s: want auto or always", mode)
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--status-address %s: %w", addr, err)
	}
	ip := net.ParseIP(host)
	return !(host == "localhost" || (ip != nil && ip.IsLoopback())), nil
}

// statusServerTLS is the status endpoint's TLS configuration: the
// apiserver's serving certificate, and client certificates of the client CA
// required.
func statusServerTLS(l pki.Layout) (*tls.Config, error) {
	serving := l.APIServerServing()
	cert, err := tls.LoadX509KeyPair(serving.CertFile, serving.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("the status endpoint's certificate: %w", err)
	}
	caPEM, err := os.ReadFile(l.ClientCA().CertFile)
	if err != nil {
		return nil, fmt.Errorf("the status endpoint's client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("the status endpoint's client CA %s holds no certificate", l.ClientCA().CertFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// Client reaches a server's status endpoint, over TLS with the
// kubeconfig's client certificate and CA when the endpoint is served so.
type Client struct {
	Addr       string
	TLSMode    string
	Kubeconfig string
}

// AddFlags adds --status-address, --status-tls and --status-kubeconfig.
func (c *Client) AddFlags(cmd *cobra.Command) {
	cmd.Flags().StringVar(&c.Addr, "status-address", DefaultAddress, "The server's --status-address")
	cmd.Flags().StringVar(&c.TLSMode, "status-tls", TLSAuto, "As the server's --status-tls: auto (TLS unless the address is loopback) or always")
	cmd.Flags().StringVar(&c.Kubeconfig, "status-kubeconfig", "", "Kubeconfig whose client certificate and CA reach a TLS status endpoint (default $KUBECONFIG)")
}

// DefaultAddress is the default --status-address.
const DefaultAddress = "127.0.0.1:10290"

// Get returns the body of path.
func (c *Client) Get(path string) ([]byte, error) {
	useTLS, err := UsesTLS(c.Addr, c.TLSMode)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Timeout: 10 * time.Second}
	scheme := "http"
	if useTLS {
		scheme = "https"
		kubeconfig := c.Kubeconfig
		if kubeconfig == "" {
			kubeconfig = os.Getenv("KUBECONFIG")
		}
		if kubeconfig == "" {
			return nil, fmt.Errorf("the status endpoint %s is TLS: give --status-kubeconfig (or $KUBECONFIG) with a client certificate of the cluster", c.Addr)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--status-kubeconfig %s: %w", kubeconfig, err)
		}
		tlsConfig, err := rest.TLSConfigFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("--status-kubeconfig %s: %w", kubeconfig, err)
		}
		client.Transport = &http.Transport{TLSClientConfig: tlsConfig}
		defer client.CloseIdleConnections()
	}
	resp, err := client.Get(scheme + "://" + c.Addr + path)
	if err != nil {
		return nil, fmt.Errorf("no server answers at --status-address %s: %w", c.Addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &ResponseError{URL: c.Addr + path, Code: resp.StatusCode, Status: resp.Status, Body: string(body)}
	}
	return body, nil
}

// ResponseError is a status endpoint's answer other than 200.
type ResponseError struct {
	URL    string // address and path
	Code   int
	Status string
	Body   string
}

func (e *ResponseError) Error() string { return fmt.Sprintf("%s: %s: %s", e.URL, e.Status, e.Body) }
