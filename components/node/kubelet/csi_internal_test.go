package kubelet

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csi"
	volumetesting "k8s.io/kubernetes/pkg/volume/testing"
)

// requests is the names client was asked to get or delete of resource,
// by verb, since its actions were last cleared.
func requests(client *fake.Clientset, resource string) map[string][]string {
	out := map[string][]string{}
	for _, a := range client.Actions() {
		if a.GetResource().Resource != resource {
			continue
		}
		switch a := a.(type) {
		case clienttesting.GetAction:
			out[a.GetVerb()] = append(out[a.GetVerb()], a.GetName())
		case clienttesting.DeleteAction:
			out[a.GetVerb()] = append(out[a.GetVerb()], a.GetName())
		}
	}
	return out
}

// kubeletHost is upstream's fake kubelet volume host, counting the
// storage errors set on it (what decides the node's Ready).
type kubeletHost struct {
	volume.VolumeHost
	volume.KubeletVolumeHost
	mu     sync.Mutex
	errors int
}

func (h *kubeletHost) SetKubeletError(err error) {
	h.mu.Lock()
	h.errors++
	h.mu.Unlock()
	h.KubeletVolumeHost.SetKubeletError(err)
}

func (h *kubeletHost) storageErrors() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.errors
}

// csiProcess is one process's two users of upstream's CSI plugin: a
// kubelet whose volume plugins the adapter extended, on node-a, and a
// controller-manager's volume controller, whose host has no node name.
// Each has its own client, so that a request tells whose node info
// manager the plugin's process-wide record is.
type csiProcess struct {
	kubelet                  *Kubelet
	kubeletClient, kcmClient *fake.Clientset
	host                     *kubeletHost
	plugins                  []volume.VolumePlugin
}

func newCSIProcess(t *testing.T) *csiProcess {
	p := &csiProcess{
		kubelet:       New(),
		kubeletClient: fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a", UID: "uid-node-a"}}),
		kcmClient:     fake.NewClientset(),
	}
	fakeHost := volumetesting.NewFakeKubeletVolumeHostWithCSINodeName(t, t.TempDir(), p.kubeletClient, nil, "node-a", nil, nil)
	p.host = &kubeletHost{VolumeHost: fakeHost, KubeletVolumeHost: fakeHost}
	p.plugins = p.kubelet.csi.plugins(csi.ProbeVolumePlugins())
	return p
}

// initKubeletPlugins initializes the kubelet's plugins from the i-th to
// the j-th, in order, as the kubelet's VolumePluginMgr.InitPlugins does,
// and waits for the kubelet's CSINode initialization.
func (p *csiProcess) initKubeletPlugins(t *testing.T, i, j int) {
	t.Helper()
	for _, plugin := range p.plugins[i:j] {
		require.NoError(t, plugin.Init(p.host))
	}
	require.NoError(t, p.host.KubeletVolumeHost.(interface{ WaitForKubeletErrNil() error }).WaitForKubeletErrNil())
}

// buildControllers initializes the CSI plugin as the controller-manager's
// attach-detach controller does.
func (p *csiProcess) buildControllers(t *testing.T) {
	volumetesting.NewFakeAttachDetachVolumeHostWithCSINodeName(t, t.TempDir(), p.kcmClient, csi.ProbeVolumePlugins(), "", nil, nil)
}

// owner deregisters a driver, as the kubelet's plugin watcher does, and
// says for which CSINodes the node info manager asked the kubelet's client
// and the controller-manager's.
func (p *csiProcess) owner(t *testing.T) (kubelet, kcm []string) {
	t.Helper()
	p.kubeletClient.ClearActions()
	p.kcmClient.ClearActions()
	deregisterCSIDriver("csi.example.com")
	return requests(p.kubeletClient, "csinodes")["get"], requests(p.kcmClient, "csinodes")["get"]
}

// TestReclaimCSI: a controller-manager's volume controllers built after
// the kubelet started take over upstream's CSI node info manager (the
// kubelet's driver registrations then go to their client, for a CSINode
// with no name); ReclaimCSI gives it back to the kubelet, runs upstream's
// CSINode initialization for it (it reads the Node, for its UID) without
// setting the node's storage error, and deletes nothing. Asked for while
// the kubelet initializes its plugins, it does so once the kubelet
// reached the plugin the adapter added.
func TestReclaimCSI(t *testing.T) {
	t.Run("after the kubelet started", func(t *testing.T) {
		p := newCSIProcess(t)
		p.initKubeletPlugins(t, 0, len(p.plugins))
		kubelet, kcm := p.owner(t)
		assert.Contains(t, kubelet, "node-a", "the kubelet's, once it started")
		assert.Empty(t, kcm)

		p.buildControllers(t)
		kubelet, kcm = p.owner(t)
		assert.Empty(t, kubelet, "upstream: the controllers' Init took the node info manager")
		assert.Contains(t, kcm, "", "upstream: with their client, and no node name")

		before := p.host.storageErrors()
		p.kubeletClient.ClearActions()
		p.kubelet.ReclaimCSI()
		require.Eventually(t, func() bool {
			return len(requests(p.kubeletClient, "nodes")["get"]) > 0
		}, 10*time.Second, 10*time.Millisecond, "upstream's CSINode initialization for the new manager reads the Node")
		assert.Empty(t, requests(p.kubeletClient, "csinodes")["delete"], "the node's CSINode is the node's")
		assert.Equal(t, before, p.host.storageErrors(), "the node's storage error untouched")
		kubelet, kcm = p.owner(t)
		assert.Contains(t, kubelet, "node-a", "the kubelet's again")
		assert.Empty(t, kcm)
	})
	// The kubelet initialized its CSI plugin, the controllers were built
	// and asked for the reclaim, all before the kubelet reached the anchor.
	t.Run("asked for while the kubelet initializes its plugins", func(t *testing.T) {
		p := newCSIProcess(t)
		p.initKubeletPlugins(t, 0, 1)
		p.buildControllers(t)
		p.kubelet.ReclaimCSI() // nothing to take it back with yet
		kubelet, kcm := p.owner(t)
		assert.Empty(t, kubelet)
		assert.Contains(t, kcm, "")
		p.initKubeletPlugins(t, 1, 2)
		kubelet, kcm = p.owner(t)
		assert.Contains(t, kubelet, "node-a", "taken back once the anchor had the host")
		assert.Empty(t, kcm)
	})
	t.Run("the anchor follows the CSI plugin", func(t *testing.T) {
		var info csiNodeInfo
		in := csi.ProbeVolumePlugins()
		out := info.plugins(in)
		require.Len(t, out, len(in)+1)
		assert.Equal(t, csi.CSIPluginName, out[0].GetPluginName())
		assert.Equal(t, csiAnchorName, out[1].GetPluginName())
		assert.False(t, out[1].CanSupport(&volume.Spec{}))
		assert.Equal(t, []volume.VolumePlugin(nil), info.plugins(nil), "no CSI plugin: nothing added")
	})
}
