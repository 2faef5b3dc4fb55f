package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Feature is one kube feature gate as the control plane's servers run it.
// Its name is the gate's name lowercased (object names are lowercase);
// status.name is the gate's exact name. It has no spec and no status
// subresource: servers write it whole with server-side apply, each under
// its own field manager, each owning its own entry of status.servers.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=feat
// +kubebuilder:printcolumn:name="Stage",type=string,JSONPath=`.status.stage`,description="Stage at the effective emulated version"
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.status.enabled`
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.status.default`
// +kubebuilder:printcolumn:name="Set-By",type=string,JSONPath=`.status.setBy`,description="Which component set the gate, or default / emulated-version"
// +kubebuilder:printcolumn:name="Servers",type=string,JSONPath=`.status.servers[*].server`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Feature struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Status FeatureStatus `json:"status,omitempty"`
}

// FeatureStatus is the gate as the server that wrote the top-level fields
// last runs it, and, per server, as each server runs it.
type FeatureStatus struct {
	// Name is the feature gate's exact name, e.g. SchedulerPreQueueingHints.
	Name string `json:"name"`
	// Stage at the effective emulated version: Alpha, Beta, GA or Deprecated.
	// +optional
	Stage string `json:"stage,omitempty"`
	// Default is the gate's default at the effective emulated version.
	Default bool `json:"default"`
	// Enabled is the gate's effective value.
	Enabled bool `json:"enabled"`
	// LockedToDefault: the gate cannot be set to anything but its default.
	LockedToDefault bool `json:"lockedToDefault"`
	// EmulationVersion is the effective --emulated-version.
	// +optional
	EmulationVersion string `json:"emulationVersion,omitempty"`
	// BinaryVersion is the version of the kube components in the binary.
	// +optional
	BinaryVersion string `json:"binaryVersion,omitempty"`
	// SetBy summarizes who set the gate: component=value for each component
	// that set it by flag, else "default" or "emulated-version".
	// +optional
	SetBy string `json:"setBy,omitempty"`
	// Servers holds one entry per server of the control plane; each server
	// writes only its own.
	// +optional
	// +listType=map
	// +listMapKey=server
	Servers []ServerFeature `json:"servers,omitempty"`
}

// ServerFeature is the gate as one server runs it.
type ServerFeature struct {
	// Server is the server's identity (its --node-name).
	Server string `json:"server"`
	// Enabled is the gate's effective value in this server.
	Enabled bool `json:"enabled"`
	// Stage at this server's effective emulated version.
	// +optional
	Stage string `json:"stage,omitempty"`
	// EmulationVersion is this server's effective --emulated-version.
	// +optional
	EmulationVersion string `json:"emulationVersion,omitempty"`
	// Components are the components this server runs.
	// +optional
	// +listType=map
	// +listMapKey=name
	Components []ComponentFeature `json:"components,omitempty"`
}

// ComponentFeature is what one component of a server does with the gate.
type ComponentFeature struct {
	// Name of the component, e.g. kube-scheduler.
	Name string `json:"name"`
	// Registers: the component knows the gate (it registers the kube
	// feature gates of k8s.io/kubernetes/pkg/features).
	Registers bool `json:"registers"`
	// Value the component asked for with a flag; empty if none.
	// +optional
	Value string `json:"value,omitempty"`
	// Flag is the flag text that asked for it, e.g.
	// --feature-gates=SchedulerPreQueueingHints=true.
	// +optional
	Flag string `json:"flag,omitempty"`
}

// FeatureList is a list of Feature.
//
// +kubebuilder:object:root=true
type FeatureList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Feature `json:"items"`
}
