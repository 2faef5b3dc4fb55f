package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/rbacapply"
	"github.com/kubeharness/kubeharness/scoping"
)

// B runs what A runs: feature discovery, as a process of its own against
// B's apiserver (the bench's binary again, -feature-discovery), started
// once B is ready — when A's harness starts its publisher — with A's plan
// (from k3s-like's --dry-run) and A's publisher and summarizer settings,
// as A's: their own user (the PKI's feature publisher certificate), bound
// to the same ClusterRole (rbacapply.FeaturePublisherAccess); the driver
// installs the CRDs and applies the role first, as A's node-join does.

// discoveryPlanFile is where upstreamArgs keeps the dry-run's plan, in the
// run's data dir.
const discoveryPlanFile = "dry-run-plan.json"

// discoveryProcess names B's feature discovery in the tables.
const discoveryProcess = "feature-discovery"

// writePlan keeps the plan of k3s-like's --dry-run -o json output for
// B's feature discovery.
func writePlan(dir string, dryRun []byte) error {
	var out struct { // server.DryRunOutput's plan (package server sets flags on flag.CommandLine)
		Plan *scoping.Plan `json:"plan"`
	}
	if err := json.Unmarshal(dryRun, &out); err != nil {
		return fmt.Errorf("k3s-like --dry-run -o json: %w", err)
	}
	if out.Plan == nil {
		return fmt.Errorf("k3s-like --dry-run -o json: no plan")
	}
	b, err := json.Marshal(out.Plan)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, discoveryPlanFile), b, 0o600)
}

// startDiscovery installs the feature discovery's CRDs in B and lets its
// user do what A's may, as A's node-join does (as the admin), then starts
// it, this binary with -feature-discovery dir.
func (m *measurement) startDiscovery(ctx context.Context) error {
	if err := featurepub.InstallCRDs(ctx, m.restCfg); err != nil {
		return fmt.Errorf("the feature discovery's CRDs in B: %w", err)
	}
	if err := rbacapply.FeaturePublisherAccess(ctx, m.client, metav1.ApplyOptions{FieldManager: "k3s-like/bench-b", Force: true}); err != nil {
		return fmt.Errorf("the feature publisher's role in B: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := diesWithDriver(exec.Command(self, "-feature-discovery", m.dir, "-feature-discovery-addr", "127.0.0.1:"+strconv.Itoa(m.p.status)))
	cmd.Env = m.c.env()
	w := m.logs.for_(discoveryProcess)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		return err
	}
	m.procs = append(m.procs, cmd)
	return nil
}

// runDiscovery is -feature-discovery: the publisher and the summarizer of
// k3s-like's server, with their field managers and user agents, against
// the apiserver of the data dir dir, until SIGTERM; its /metrics and
// /debug/pprof/heap on addr (B's unused status port), for the memory view.
func runDiscovery(dir, addr string) error {
	b, err := os.ReadFile(filepath.Join(dir, discoveryPlanFile))
	if err != nil {
		return err
	}
	plan := &scoping.Plan{}
	if err := json.Unmarshal(b, plan); err != nil {
		return fmt.Errorf("%s: %w", discoveryPlanFile, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	kubeconfig := datadir.PKI(dir).FeaturePublisherKubeconfig()
	pub := &featurepub.Publisher{Server: "bench-b", FieldManager: "k3s-like/bench-b", UserAgent: "k3s-like-feature-publisher",
		Kubeconfig: kubeconfig, Plan: func() *scoping.Plan { return plan }}
	sum := &featurepub.Summarizer{FieldManager: "k3s-like/node-summary", UserAgent: "k3s-like-feature-summarizer", Kubeconfig: kubeconfig}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.Handle("/debug/pprof/heap", pprof.Handler("heap"))
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	var wg sync.WaitGroup
	for _, run := range []func(context.Context) error{pub.Run, sum.Run} {
		wg.Go(func() { _ = run(ctx) }) // both never fail: they log and retry
	}
	wg.Wait()
	_ = srv.Close()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
