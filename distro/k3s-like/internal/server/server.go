package server

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/go-logr/logr"
	basever "k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/daemon"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/deploy"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/node"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/status"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// run checks the flags and runs the server until ctx ends or it fails; with
// --dry-run it prints the plan instead.
func (o *options) run(ctx context.Context, stdout io.Writer) error {
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
	if o.etcd.clusterReset {
		return o.resetCluster(ctx, stdout)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	harness.SetGCPercent(serverStartGCPercent)
	d := daemon.Daemon{
		Started: started,
		Prepare: func(ctx context.Context) (*harness.Harness, error) {
			cp.h.AfterBarrier = append(cp.h.AfterBarrier, o.afterBarrier(ctx, cp, args)...)
			return cp.h, nil
		},
		Ready: func(log logr.Logger, elapsed time.Duration) {
			log.Info(fmt.Sprintf("ready in %s; KUBECONFIG=%s kubectl get nodes", elapsed.Round(100*time.Millisecond), o.adminKubeconfig()))
			if harness.SetGCPercent(serverGCPercent) {
				log.V(2).Info("Garbage collector goal set; GOGC in the environment overrides it", "GOGC", serverGCPercent, "whileStarting", serverStartGCPercent)
			}
		},
		Explain: func(err error) error { return explainDatastore(err, datadir.Etcd(o.DataDir)) },
	}
	if !o.node.DisableAgent {
		d.AfterStop = o.nodeConfig().AfterStop
	}
	return d.Run(ctx)
}

// check checks the flags and returns each component's arguments and the
// memory limit; not with --dry-run, it also sends the log to --log and makes
// sure the data dir is writable. Each error is one line naming the flag.
func (o *options) check() (args map[string][]string, limit int64, err error) {
	if o.output != "table" && o.output != "json" {
		return nil, 0, fmt.Errorf("--output=%s: want table or json", o.output)
	}
	if !o.dryRun {
		if err := o.Logging.Redirect(); err != nil {
			return nil, 0, err
		}
	}
	if o.net, err = o.resolveNetwork(localHostNames); err != nil {
		return nil, 0, err
	}
	if err := o.checkEtcd(os.Getenv); err != nil {
		return nil, 0, err
	}
	if err := node.CheckFlannelBackend(o.node.FlannelBackend); err != nil {
		return nil, 0, err
	}
	if args, err = o.componentArgs(); err != nil {
		return nil, 0, err
	}
	cli.WarnWeakened(cli.Logger(), args)
	if err := deploy.CheckFlags(o.disable, o.dnsUpstreams); err != nil {
		return nil, 0, err
	}
	if _, err := status.UsesTLS(o.statusAddress, o.statusTLS); err != nil {
		return nil, 0, err
	}
	if _, err := parseFileMode(o.kubeconfigMode); err != nil {
		return nil, 0, err
	}
	if limit, err = parseMemoryLimit(o.memoryLimit); err != nil {
		return nil, 0, err
	}
	if !o.dryRun {
		if err := cli.CheckWritable(o.DataDir); err != nil {
			return nil, 0, err
		}
	}
	return args, limit, nil
}

// afterBarrier are the server's barrier hooks, run after the daemon's
// (which configured the log): how each component runs, the datastore's
// storage version; then certificates, keys and kubeconfigs are written,
// and the status listener opened, only once the barrier passed: a conflict
// leaves the data dir as it was and opens no port.
func (o *options) afterBarrier(ctx context.Context, cp *controlPlane, args map[string][]string) []harness.BarrierHook {
	log := cli.Logger()
	hooks := []harness.BarrierHook{func(p *scoping.Plan) error {
		log.Info("Running Kubernetes", "version", basever.Get().GitVersion, "emulatedVersion", p.EmulationVersion, "minCompatibilityVersion", p.MinCompatibilityVersion)
		o.logComponents(log, cp.h, args)
		return nil
	}}
	if cp.db != nil {
		hooks = append(hooks, keepDatastoreFor(cp.db, log),
			func(*scoping.Plan) error { return o.joinCluster(ctx, log, cp.db) })
	}
	hooks = append(hooks,
		func(*scoping.Plan) error { return o.ensurePKI(ctx, log) },
		func(*scoping.Plan) error { return o.writeCISFiles(time.Now()) },
		func(*scoping.Plan) error { return o.markCluster() },
		func(*scoping.Plan) error { return o.statusEndpoint(cp).Serve(ctx) })
	if !o.node.DisableAgent {
		hooks = append(hooks, func(*scoping.Plan) error { return o.prepareNode() })
	}
	return hooks
}

// logComponents logs how each component runs, in the order they start, as
// k3s does ("Running kube-scheduler --flag=value ..."), secret values
// redacted (harness.RedactArgs).
func (o *options) logComponents(log logr.Logger, h *harness.Harness, args map[string][]string) {
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

// statusEndpoint is the server's status endpoint (--status-address).
func (o *options) statusEndpoint(cp *controlPlane) status.Endpoint {
	e := status.Endpoint{
		Address: o.statusAddress, TLS: o.statusTLS, Layout: o.layout(), AdminKubeconfig: o.adminKubeconfig(),
		EnablePprof: o.enablePprof, Harness: cp.h, LeaderElection: cp.leaderElection,
	}
	if cp.summary != nil {
		e.Summaries = cp.summary.Last
	}
	return e
}
