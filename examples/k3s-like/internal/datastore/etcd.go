// Package datastore runs the embedded etcd of a k3s-like server as a
// harness component, so that it starts after the barrier passed (nothing
// listens, nothing is written before) and stops after the apiserver.
package datastore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"go.etcd.io/etcd/server/v3/embed"

	"github.com/kubeharness/kubeharness/scoping"
)

// Embedded is a single-member etcd on loopback with client TLS, as a harness
// component named "etcd".
type Embedded struct {
	// DataDir holds etcd's data; created on first start, reused after.
	DataDir string
	// ClientURL and PeerURL are loopback URLs, e.g. https://127.0.0.1:2379
	// and http://127.0.0.1:2380.
	ClientURL, PeerURL string
	// CertFile and KeyFile serve client TLS; TrustedCAFile verifies client
	// certificates (client-cert auth is required).
	CertFile, KeyFile, TrustedCAFile string

	once  sync.Once
	ready chan struct{}
}

// Name is "etcd".
func (e *Embedded) Name() string { return "etcd" }

// AddFlags adds nothing: etcd is configured by the server, not by arguments.
func (e *Embedded) AddFlags(*scoping.Scope) error { return nil }

func (e *Embedded) readyCh() chan struct{} {
	e.once.Do(func() { e.ready = make(chan struct{}) })
	return e.ready
}

// Run starts etcd and serves until ctx ends, then closes it.
func (e *Embedded) Run(ctx context.Context) error {
	cfg := embed.NewConfig()
	cfg.Name = "default"
	cfg.Dir = e.DataDir
	cfg.LogLevel = "warn"
	client, err := url.Parse(e.ClientURL)
	if err != nil {
		return fmt.Errorf("etcd client URL %q: %w", e.ClientURL, err)
	}
	peer, err := url.Parse(e.PeerURL)
	if err != nil {
		return fmt.Errorf("etcd peer URL %q: %w", e.PeerURL, err)
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenMetricsUrls = nil
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo.CertFile = e.CertFile
	cfg.ClientTLSInfo.KeyFile = e.KeyFile
	cfg.ClientTLSInfo.TrustedCAFile = e.TrustedCAFile
	cfg.ClientTLSInfo.ClientCertAuth = true
	srv, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("starting embedded etcd in %s: %w", e.DataDir, err)
	}
	defer srv.Close()
	select {
	case <-srv.Server.ReadyNotify():
		close(e.readyCh())
	case err := <-srv.Err():
		return fmt.Errorf("embedded etcd: %w", err)
	case <-ctx.Done():
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-srv.Err():
		if err == nil {
			err = errors.New("stopped")
		}
		return fmt.Errorf("embedded etcd: %w", err)
	}
}

// Ready returns once etcd serves clients.
func (e *Embedded) Ready(ctx context.Context) error {
	select {
	case <-e.readyCh():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
