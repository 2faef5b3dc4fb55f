package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// csiDriver is a CSI driver's node plugin as the kubelet meets one: a
// registration socket in its plugins_registry directory (what
// node-driver-registrar serves) naming the driver's endpoint, where
// NodeGetInfo answers with the node's ID for the driver.
type csiDriver struct {
	registerapi.UnimplementedRegistrationServer
	csi.UnimplementedNodeServer
	name, nodeID, endpoint string

	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus // what the kubelet told it
}

func (d *csiDriver) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: d.name, Endpoint: d.endpoint, SupportedVersions: []string{"1.0.0"}}, nil
}

func (d *csiDriver) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.statuses = append(d.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func (d *csiDriver) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: d.nodeID}, nil
}

// registered is whether the kubelet said the driver is registered, and
// the errors it gave before.
func (d *csiDriver) registered() (bool, []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []string
	for _, s := range d.statuses {
		if s.PluginRegistered {
			return true, errs
		}
		errs = append(errs, s.Error)
	}
	return false, errs
}

// serveCSIDriver serves d's endpoint, then its registration socket in the
// kubelet's plugins_registry directory under kubeletRoot; both stop when
// the test ends.
func serveCSIDriver(t *testing.T, d *csiDriver, kubeletRoot string) {
	t.Helper()
	serve := func(path string, register func(*grpc.Server)) {
		l, err := net.Listen("unix", path)
		require.NoError(t, err, path)
		s := grpc.NewServer()
		register(s)
		done := make(chan struct{})
		go func() { defer close(done); _ = s.Serve(l) }()
		t.Cleanup(func() { s.Stop(); <-done })
	}
	serve(d.endpoint, func(s *grpc.Server) { csi.RegisterNodeServer(s, d) })
	dir := filepath.Join(kubeletRoot, "plugins_registry")
	require.NoError(t, os.MkdirAll(dir, 0o750))
	serve(filepath.Join(dir, "e2e-reg.sock"), func(s *grpc.Server) { registerapi.RegisterRegistrationServer(s, d) })
}

// TestCSIRegistersAfterRebuild (a short name: the registration socket's
// path, under t.TempDir, must fit a unix socket's 108 bytes): a CSI driver registers
// with the server's kubelet — the CSINode and the Node record its node ID
// — after the controller-manager in the same process built its controllers
// again (its lease taken by another holder: the controller-manager is
// demoted, and its successor leads and builds them; leader election is
// on for a member of an embedded etcd cluster). Those controllers
// initialize upstream's CSI plugin with a host that has no node name,
// overwriting the process-wide node info manager the kubelet registers
// drivers with; upstream's registration then fails ("resource name may not
// be empty") until the kubelet takes it back (kubelet.ReclaimCSI, called
// by the server each time the controller-manager built its controllers).
func TestCSIRegistersAfterRebuild(t *testing.T) {
	requireNodeHost(t)
	dataDir := t.TempDir()
	s := startNodeServer(t, dataDir, "--cluster-init") // an etcd cluster member: leader election on
	s.waitNodeReady(90 * time.Second)
	const adcStarts = "Starting attach detach controller"
	require.Equal(t, 1, strings.Count(s.log.String(), adcStarts))

	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00")
	s.kubectl("-n", "kube-system", "patch", "lease", "kube-controller-manager", "--type=merge", "-p",
		fmt.Sprintf(`{"spec":{"holderIdentity":"e2e-other-holder","leaseDurationSeconds":5,"acquireTime":%q,"renewTime":%q}}`, now, now))
	require.Eventually(t, func() bool {
		return strings.Count(s.log.String(), adcStarts) == 2
	}, 90*time.Second, 100*time.Millisecond, "the controller-manager's successor built its controllers")
	assert.Contains(t, s.log.String(), `"Component failed; restarting it (Harness.Recover)" component="kube-controller-manager"`)

	d := &csiDriver{name: "csi.e2e.example.com", nodeID: "e2e-node-a", endpoint: filepath.Join(t.TempDir(), "csi.sock")}
	serveCSIDriver(t, d, filepath.Join(dataDir, "agent", "kubelet"))
	var errs []string
	if !assert.Eventually(t, func() (ok bool) { ok, errs = d.registered(); return ok }, 60*time.Second, 100*time.Millisecond) {
		t.Fatalf("the kubelet did not register the driver; it said: %q", errs)
	}
	s.waitFor(d.nodeID, 10*time.Second, "get", "csinode", "node-a", "-o", `jsonpath={.spec.drivers[?(@.name=="csi.e2e.example.com")].nodeID}`)
	s.waitFor(fmt.Sprintf(`{"%s":"%s"}`, d.name, d.nodeID), 10*time.Second, "get", "node", "node-a", "-o", `jsonpath={.metadata.annotations.csi\.volume\.kubernetes\.io/nodeid}`)
	t.Logf("registered after %d failed attempts: %q", len(errs), errs)
	require.NoError(t, s.stop())
}
