package controlplane

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/names"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// Components are the components of one control plane. Add adds them to a
// harness in the order they depend on each other: etcd, the apiserver,
// then Extra, then the scheduler and the controller-manager, then the
// publisher. A nil component (or a nil pointer to one) is not run. The adapters are harness
// Components (components.NewAPIServer and its siblings), so that this
// package needs no k8s.io/kubernetes of its own.
type Components struct {
	// Etcd is the embedded datastore; nil when etcd runs outside the
	// harness (an external datastore, or a test's).
	Etcd *etcd.Etcd
	// APIServer depends on Etcd; it is required (components.NewAPIServer).
	APIServer harness.Component
	// Extra depend on the apiserver; the scheduler and the
	// controller-manager depend on them, so they stop after those two.
	Extra []harness.Component
	// Scheduler and ControllerManager depend on the apiserver and Extra
	// (components.NewScheduler, components.NewControllerManager).
	Scheduler         harness.Component
	ControllerManager harness.Component
	// Publisher depends on every other component but etcd, so it publishes
	// once the control plane is ready. A nil Plan is the harness's.
	Publisher *featurepub.Publisher
	// Summarizer depends on the Publisher (or, without one, as the
	// Publisher would), so that the Features it summarizes exist.
	Summarizer *featurepub.Summarizer
}

// Add adds the components to h, each with its arguments (args, keyed by
// component name; etcd, Extra and the publisher take none).
func (c Components) Add(h *harness.Harness, args map[string][]string) error {
	if !present(c.APIServer) {
		return errors.New("controlplane: Components.APIServer is required")
	}
	var apiDeps []string
	if c.Etcd != nil {
		if err := h.Add(c.Etcd, nil); err != nil {
			return err
		}
		apiDeps = append(apiDeps, c.Etcd.Name())
	}
	if err := h.Add(c.APIServer, args[names.APIServer], apiDeps...); err != nil {
		return err
	}
	deps := []string{names.APIServer}
	for _, x := range c.Extra {
		if err := h.Add(x, nil, names.APIServer); err != nil {
			return err
		}
		deps = append(deps, x.Name())
	}
	pubDeps := slices.Clone(deps)
	if present(c.Scheduler) {
		if err := h.Add(c.Scheduler, args[names.Scheduler], deps...); err != nil {
			return err
		}
		pubDeps = append(pubDeps, names.Scheduler)
	}
	if present(c.ControllerManager) {
		if err := h.Add(c.ControllerManager, args[names.ControllerManager], deps...); err != nil {
			return err
		}
		pubDeps = append(pubDeps, names.ControllerManager)
	}
	if c.Publisher != nil {
		if c.Publisher.Plan == nil {
			c.Publisher.Plan = func() *scoping.Plan { return h.Status().Plan }
		}
		if err := h.Add(c.Publisher, nil, pubDeps...); err != nil {
			return err
		}
		pubDeps = append(pubDeps, c.Publisher.Name())
	}
	if c.Summarizer == nil {
		return nil
	}
	return h.Add(c.Summarizer, nil, pubDeps...)
}

// present reports whether c is a component: neither nil nor a nil pointer
// in an interface (a *components.Scheduler left nil when it is disabled).
func present(c harness.Component) bool {
	if c == nil {
		return false
	}
	v := reflect.ValueOf(c)
	return v.Kind() != reflect.Pointer || !v.IsNil()
}

// EnsurePKI creates the certificates, keys and kubeconfigs of layout for
// s on first use and reuses them after (PKIConfig, pki.Ensure). With
// adminKubeconfig set it also writes an admin kubeconfig there, pointing
// at s.APIServerURL() (the advertised address: for users, on this host or
// another; the components' kubeconfigs point at the local one).
func EnsurePKI(layout pki.Layout, s Settings, adminKubeconfig string) (*pki.Files, error) {
	cfg, err := PKIConfig(layout, s)
	if err != nil {
		return nil, err
	}
	files, err := pki.Ensure(cfg)
	if err != nil {
		return nil, fmt.Errorf("certificates in %s: %w", cfg.Dir, err)
	}
	if adminKubeconfig != "" {
		if err := pki.WriteKubeconfig(adminKubeconfig, s.APIServerURL(), files.ServerCA.CertPEM(), files.Admin); err != nil {
			return nil, err
		}
	}
	return files, nil
}
