package kubelet

import (
	"errors"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csi"
)

// csiAnchorName is the name of the volume plugin the adapter adds to the
// kubelet's (csiAnchor); it supports no volume.
const csiAnchorName = "kubeharness.io/csi-node-info"

// csiNodeInfo keeps what ReclaimCSI needs: the kubelet's volume host, from
// the moment the kubelet initialized its CSI plugin.
//
// Upstream's CSI volume plugin (k8s.io/kubernetes/pkg/volume/csi) keeps
// its node info manager — what initializes the node's CSINode and records
// each CSI driver registered on the node — in a package variable, set by
// every Init of the plugin: the kubelet's, with its node name and client,
// and the controller-manager's attach-detach, persistent-volume and expand
// controllers', whose hosts have no node name. The last Init wins, so in
// a process that also runs a controller-manager the kubelet's CSINode
// initialization and driver registrations can fail ("resource name may
// not be empty"), and the kubelet exits the process when its CSINode is
// not initialized within about 140 s.
type csiNodeInfo struct {
	mu      sync.Mutex
	host    volume.VolumeHost // the kubelet's, once it initialized its plugins
	pending bool              // reclaim was called before that
}

// plugins is the kubelet's volume plugins with csiAnchor right after
// upstream's CSI plugin, so that the kubelet initializes the anchor, with
// its own host, once it has initialized its CSI plugin. Without a CSI
// plugin, plugins as they are.
func (c *csiNodeInfo) plugins(plugins []volume.VolumePlugin) []volume.VolumePlugin {
	for i, p := range plugins {
		if p.GetPluginName() == csi.CSIPluginName {
			out := make([]volume.VolumePlugin, 0, len(plugins)+1)
			out = append(out, plugins[:i+1]...)
			out = append(out, csiAnchor{c})
			return append(out, plugins[i+1:]...)
		}
	}
	return plugins
}

// initialized records the kubelet's host; a reclaim asked for before runs
// now.
func (c *csiNodeInfo) initialized(host volume.VolumeHost) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.host = host
	if c.pending {
		c.reclaimLocked()
	}
}

// reclaim makes the plugin's node info manager the kubelet's again, or,
// before the kubelet initialized its plugins, asks initialized to.
func (c *csiNodeInfo) reclaim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.host == nil {
		c.pending = true
		return
	}
	c.reclaimLocked()
}

// reclaimLocked runs upstream's Init on a new CSI plugin with the
// kubelet's host (reclaimHost). Init replaces the node info manager with a
// new one of the kubelet's node name and client, and starts upstream's
// CSINode initialization, which gives it the Node's UID: without it, the
// manager takes the node's CSINode for another node's and deletes it. The
// kubelet's own plugin is not touched.
func (c *csiNodeInfo) reclaimLocked() {
	p := csi.ProbeVolumePlugins()[0]
	h, ok := c.host.(volume.KubeletVolumeHost)
	if !ok {
		klog.ErrorS(nil, "Could not take back the CSI plugin's node info manager: the kubelet's volume host is not a KubeletVolumeHost", "component", Name, "host", fmt.Sprintf("%T", c.host))
		return
	}
	if err := p.Init(reclaimHost{c.host, h}); err != nil {
		klog.ErrorS(err, "Could not take back the CSI plugin's node info manager", "component", Name)
	}
}

// reclaimHost is the kubelet's volume host, except that the storage error
// of the CSINode initialization reclaimLocked starts is not the node's:
// the kubelet's own initialization, at its start, decides whether the node
// is Ready; this one, run again while the node may be Ready, would mark it
// NotReady until it is done ("CSINode is not yet initialized"). If it
// fails for about 140 s, upstream exits the process, as for the kubelet's.
type reclaimHost struct {
	volume.VolumeHost
	volume.KubeletVolumeHost
}

// SetKubeletError does nothing (see reclaimHost).
func (reclaimHost) SetKubeletError(error) {}

// csiAnchor is a volume plugin that supports no volume; its Init passes
// the kubelet's host to csiNodeInfo.
type csiAnchor struct{ info *csiNodeInfo }

var errCSIAnchor = errors.New(csiAnchorName + " supports no volume")

func (a csiAnchor) Init(host volume.VolumeHost) error {
	a.info.initialized(host)
	return nil
}
func (csiAnchor) GetPluginName() string                                  { return csiAnchorName }
func (csiAnchor) GetVolumeName(*volume.Spec) (string, error)             { return "", errCSIAnchor }
func (csiAnchor) CanSupport(*volume.Spec) bool                           { return false }
func (csiAnchor) RequiresRemount(*volume.Spec) bool                      { return false }
func (csiAnchor) SupportsMountOption() bool                              { return false }
func (csiAnchor) SupportsSELinuxContextMount(*volume.Spec) (bool, error) { return false, nil }
func (csiAnchor) NewMounter(*volume.Spec, *v1.Pod) (volume.Mounter, error) {
	return nil, errCSIAnchor
}
func (csiAnchor) NewUnmounter(string, types.UID) (volume.Unmounter, error) {
	return nil, errCSIAnchor
}
func (csiAnchor) ConstructVolumeSpec(string, string) (volume.ReconstructedVolume, error) {
	return volume.ReconstructedVolume{}, errCSIAnchor
}
