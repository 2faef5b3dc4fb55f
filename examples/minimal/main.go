// Command minimal is a complete single-binary control plane built only from
// the library: embedded etcd, the PKI, the real kube-apiserver, kube-scheduler,
// kube-controller-manager and the feature publisher, on loopback. SIGTERM
// stops it (exit 0). Flags may come from the environment: MINIMAL_DATA_DIR, …
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
)

func main() {
	var s controlplane.Settings // loopback; the ports below
	var db etcd.Config
	dataDir := flag.String("data-dir", ".minimal", "certificates, keys, kubeconfigs and etcd data")
	flag.IntVar(&s.APIServerPort, "apiserver-port", controlplane.DefaultAPIServerPort, "kube-apiserver port")
	flag.IntVar(&s.SchedulerPort, "scheduler-port", controlplane.DefaultSchedulerPort, "kube-scheduler port")
	flag.IntVar(&s.ControllerManagerPort, "controller-manager-port", controlplane.DefaultControllerManagerPort, "kube-controller-manager port")
	flag.IntVar(&db.ClientPort, "etcd-client-port", etcd.DefaultClientPort, "etcd client port")
	flag.IntVar(&db.PeerPort, "etcd-peer-port", etcd.DefaultPeerPort, "etcd peer port")
	flag.VisitAll(func(f *flag.Flag) {
		if v, ok := os.LookupEnv("MINIMAL_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))); ok {
			_ = f.Value.Set(v)
		}
	})
	flag.Parse()
	if err := run(*dataDir, s, db); err != nil {
		fmt.Fprintln(os.Stderr, "minimal:", err)
		os.Exit(1)
	}
}

func run(dataDir string, s controlplane.Settings, db etcd.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	layout := pki.Layout{Dir: filepath.Join(dataDir, "pki")}
	if _, err := controlplane.EnsurePKI(layout, s, ""); err != nil { // CAs, certificates, kubeconfigs (0600)
		return err
	}
	db.DataDir = filepath.Join(dataDir, "etcd")
	e := etcd.New(controlplane.EtcdConfig(layout, db))
	s.EtcdServers = e.ClientURL()
	h := &harness.Harness{AfterBarrier: []harness.BarrierHook{components.AfterBarrier}}
	if err := (controlplane.Components{
		Etcd:              e,
		APIServer:         components.NewAPIServer(),
		Scheduler:         components.NewScheduler(),
		ControllerManager: components.NewControllerManager(),
		Publisher:         &featurepub.Publisher{Server: "minimal", Kubeconfig: layout.AdminKubeconfig()},
	}).Add(h, controlplane.DefaultArgs(layout, s)); err != nil {
		return err
	}
	go func() {
		if h.WaitReady(ctx) == nil {
			fmt.Fprintf(os.Stderr, "minimal: ready\n    KUBECONFIG=%s kubectl get features\n", layout.AdminKubeconfig())
		}
	}()
	return h.Run(ctx) // nil once SIGTERM stopped everything
}
