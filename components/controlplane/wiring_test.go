package controlplane_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/components/controlplane"
	"github.com/kubeharness/kubeharness/components/etcd"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/components/pki"
	"github.com/kubeharness/kubeharness/harness"
)

func componentNames(h *harness.Harness) []string {
	var out []string
	for _, c := range h.Status().Components {
		out = append(out, c.Name)
	}
	return out
}

// TestComponentsAdd: the components are added in dependency order, nil
// ones left out, with their arguments; the publisher gets the harness's
// plan.
func TestComponentsAdd(t *testing.T) {
	h := &harness.Harness{}
	pub := &featurepub.Publisher{Server: "s"}
	args := map[string][]string{components.APIServerName: {"--secure-port=7443"}}
	require.NoError(t, controlplane.Components{
		Etcd:              etcd.New(etcd.Config{DataDir: t.TempDir()}),
		APIServer:         components.NewAPIServer(),
		Extra:             []harness.Component{&harness.Func{ComponentName: "extra"}},
		Scheduler:         components.NewScheduler(),
		ControllerManager: components.NewControllerManager(),
		Publisher:         pub,
	}.Add(h, args))
	assert.Equal(t, []string{etcd.Name, components.APIServerName, "extra", components.SchedulerName, components.ControllerManagerName, featurepub.Name}, componentNames(h))
	deps := map[string][]string{}
	for _, c := range h.Status().Components {
		deps[c.Name] = c.Dependencies
	}
	assert.Equal(t, map[string][]string{
		etcd.Name:                        nil,
		components.APIServerName:         {etcd.Name},
		"extra":                          {components.APIServerName},
		components.SchedulerName:         {components.APIServerName, "extra"},
		components.ControllerManagerName: {components.APIServerName, "extra"},
		featurepub.Name:                  {components.APIServerName, "extra", components.SchedulerName, components.ControllerManagerName},
	}, deps)
	assert.Equal(t, []string{"--secure-port=7443"}, h.Status().Components[1].Args)
	require.NotNil(t, pub.Plan)
	assert.Nil(t, pub.Plan(), "the harness's plan: none before its barrier")

	h = &harness.Harness{}
	require.NoError(t, controlplane.Components{APIServer: components.NewAPIServer(), Publisher: &featurepub.Publisher{Server: "s"}}.Add(h, nil))
	assert.Equal(t, []string{components.APIServerName, featurepub.Name}, componentNames(h), "no etcd, scheduler or controller-manager")

	// The summarizer after the publisher; without one, after what the
	// publisher would follow.
	h = &harness.Harness{}
	require.NoError(t, controlplane.Components{APIServer: components.NewAPIServer(), Scheduler: components.NewScheduler(),
		Publisher: &featurepub.Publisher{Server: "s"}, Summarizer: &featurepub.Summarizer{}}.Add(h, nil))
	assert.Equal(t, []string{components.APIServerName, components.SchedulerName, featurepub.Name, featurepub.SummarizerName}, componentNames(h))
	assert.Equal(t, []string{components.APIServerName, components.SchedulerName, featurepub.Name}, h.Status().Components[3].Dependencies)
	h = &harness.Harness{}
	require.NoError(t, controlplane.Components{APIServer: components.NewAPIServer(), Summarizer: &featurepub.Summarizer{}}.Add(h, nil))
	assert.Equal(t, []string{components.APIServerName}, h.Status().Components[1].Dependencies)

	// A disabled component left as a nil pointer (k3s-like's
	// --disable-controller-manager) is not run either.
	var kcm *components.ControllerManager
	h = &harness.Harness{}
	require.NoError(t, controlplane.Components{APIServer: components.NewAPIServer(), Scheduler: components.NewScheduler(), ControllerManager: kcm}.Add(h, nil))
	assert.Equal(t, []string{components.APIServerName, components.SchedulerName}, componentNames(h), "no controller-manager")

	assert.Error(t, controlplane.Components{}.Add(&harness.Harness{}, nil), "the apiserver is required")
}

// TestEnsurePKI writes the layout's files and the admin kubeconfig at the
// advertised address.
func TestEnsurePKI(t *testing.T) {
	dir := t.TempDir()
	layout := pki.Layout{Dir: filepath.Join(dir, "pki")}
	admin := filepath.Join(dir, "admin.kubeconfig")
	s := controlplane.Settings{BindAddress: "0.0.0.0", AdvertiseAddress: "192.0.2.10", APIServerPort: 7443}
	files, err := controlplane.EnsurePKI(layout, s, admin)
	require.NoError(t, err)
	assert.FileExists(t, files.ServerCA.CertFile)
	b, err := os.ReadFile(admin)
	require.NoError(t, err)
	assert.Contains(t, string(b), "server: https://192.0.2.10:7443")
	again, err := controlplane.EnsurePKI(layout, s, "")
	require.NoError(t, err)
	assert.Equal(t, files.ServerCA.CertPEM(), again.ServerCA.CertPEM(), "reused")
}
