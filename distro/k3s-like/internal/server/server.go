package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	basever "k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/examples/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/heldlog"
	"github.com/kubeharness/kubeharness/scoping"
)

// run checks the flags and runs the server until ctx ends or it fails; with
// --dry-run it prints the plan instead.
func (o *serverOptions) run(ctx context.Context, stdout io.Writer) error {
	started := time.Now()
	args, limit, err := o.check()
	if err != nil {
		return err
	}
	cp, err := o.newControlPlane(args)
	if err != nil {
		return err
	}
	if o.dryRun {
		return o.printPlan(ctx, cp.h, args, stdout)
	}
	return o.serve(ctx, cp, args, limit, started)
}

// check checks the flags and returns each component's arguments and the
// memory limit; not with --dry-run, it also sends the log to --log and makes
// sure the data dir is writable. Each error is one line naming the flag.
func (o *serverOptions) check() (args map[string][]string, limit int64, err error) {
	if o.output != "table" && o.output != "json" {
		return nil, 0, fmt.Errorf("--output=%s: want table or json", o.output)
	}
	if !o.dryRun {
		if err := o.logging.redirect(); err != nil {
			return nil, 0, err
		}
	}
	if o.net, err = o.resolveNetwork(localHostNames); err != nil {
		return nil, 0, err
	}
	if args, err = o.componentArgs(); err != nil {
		return nil, 0, err
	}
	if err := o.checkManifestFlags(); err != nil {
		return nil, 0, err
	}
	if _, err := statusUsesTLS(o.statusAddress, o.statusTLS); err != nil {
		return nil, 0, err
	}
	if _, err := parseFileMode(o.kubeconfigMode); err != nil {
		return nil, 0, err
	}
	if limit, err = parseMemoryLimit(o.memoryLimit); err != nil {
		return nil, 0, err
	}
	if !o.dryRun {
		if err := checkWritable(o.dataDir); err != nil {
			return nil, 0, err
		}
	}
	return args, limit, nil
}

// serve runs the harness of cp until ctx ends (SIGINT, SIGTERM) or it
// fails: logging held until the barrier configures it, the PKI written and
// the status listener opened only once the barrier passed, systemd told.
func (o *serverOptions) serve(ctx context.Context, cp *controlPlane, args map[string][]string, limit int64, started time.Time) error {
	h := cp.h
	log := logger()
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	// The harness's lines from before the barrier wait for the format it
	// configures (package heldlog).
	var release func()
	h.Logger, release = heldlog.New()
	defer release()
	systemd := takeNotifySocket()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, func() {
		if err := systemd.notify("STOPPING=1"); err != nil {
			log.Error(err, "Telling systemd the server stops")
		}
	})
	// Certificates, keys and kubeconfigs are written, and the status
	// listener opened, only once the barrier passed: a conflict leaves the
	// data dir as it was and opens no port.
	var passed atomic.Bool
	h.AfterBarrier = append(h.AfterBarrier, func(p *scoping.Plan) error {
		passed.Store(true)
		release()
		log.Info("Running Kubernetes", "version", basever.Get().GitVersion, "emulatedVersion", p.EmulationVersion, "minCompatibilityVersion", p.MinCompatibilityVersion)
		o.logComponents(log, h, args)
		return nil
	})
	if cp.db != nil {
		h.AfterBarrier = append(h.AfterBarrier, keepDatastoreFor(cp.db, log))
	}
	h.AfterBarrier = append(h.AfterBarrier,
		func(*scoping.Plan) error { return o.ensurePKI(ctx, log) },
		func(*scoping.Plan) error { return o.serveStatus(ctx, cp) })
	if !o.node.disableAgent {
		h.AfterBarrier = append(h.AfterBarrier, func(*scoping.Plan) error { return o.prepareNode() })
	}
	go o.announceReady(ctx, h, log, started, systemd)
	err := h.Run(ctx)
	if !o.node.disableAgent && passed.Load() {
		o.nodeConfig().afterStop(context.WithoutCancel(ctx), log)
	}
	if err != nil {
		err = explainDatastore(err, datadir.Etcd(o.dataDir))
		if !passed.Load() {
			release()
			return err // logging is not configured: one plain line, the last
		}
		log.Error(err, "Stopped")
		return exitCode(1)
	}
	log.Info("Stopped")
	return nil
}

// logComponents logs how each component runs, in the order they start, as
// k3s does ("Running kube-scheduler --flag=value ..."), secret values
// redacted (harness.RedactArgs).
func (o *serverOptions) logComponents(log logr.Logger, h *harness.Harness, args map[string][]string) {
	for _, c := range h.Status().Components {
		switch {
		case c.Name == etcd.Name:
			cfg := o.etcdConfig()
			log.Info("Running embedded etcd", "dataDir", cfg.DataDir, "clientURL", cfg.ClientURL())
		case len(args[c.Name]) > 0:
			log.Info("Running " + c.Name + " " + strings.Join(harness.RedactArgs(args[c.Name]), " "))
		}
	}
}

// announceReady logs how to use the server once every component is ready,
// and tells systemd.
func (o *serverOptions) announceReady(ctx context.Context, h *harness.Harness, log logr.Logger, started time.Time, systemd notifier) {
	if h.WaitReady(ctx) != nil {
		return
	}
	log.Info(fmt.Sprintf("ready in %s; KUBECONFIG=%s kubectl get nodes", time.Since(started).Round(100*time.Millisecond), o.adminKubeconfig()))
	if err := systemd.notify("READY=1"); err != nil {
		log.Error(err, "Telling systemd the server is ready")
	}
}

// checkWritable creates the data dir if it is missing and fails with one
// line naming what to fix. A data dir it creates is 0700: it holds private
// keys and the etcd data (never more open, whatever the umask: a umask only
// clears bits). An existing dir keeps its mode (MkdirAll leaves it, and nothing
// chmods it): it is the operator's, who may have set that mode on purpose.
// TestFileModes checks the mode of a data dir the binary created.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data dir %s cannot be created (%v): choose another --data-dir", dir, unwrapPath(err))
	}
	probe, err := os.CreateTemp(dir, ".write-probe-*")
	if err != nil {
		return fmt.Errorf("data dir %s is not writable (%v): fix its permissions or choose another --data-dir", dir, unwrapPath(err))
	}
	probe.Close()
	return os.Remove(probe.Name())
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
