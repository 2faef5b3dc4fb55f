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
// +kubebuilder:printcolumn:name="Enabled",type=string,JSONPath=`.status.clusterEnabled`,description="true, false or partial: in every server and on every node that reports, in none, or in some"
// +kubebuilder:printcolumn:name="Default",type=boolean,JSONPath=`.status.default`
// +kubebuilder:printcolumn:name="Set-By",type=string,JSONPath=`.status.setBy`,description="Which component set the gate, or default / emulated-version"
// +kubebuilder:printcolumn:name="Servers",type=string,JSONPath=`.status.servers[*].server`,priority=1
// +kubebuilder:printcolumn:name="Nodes",type=string,JSONPath=`.status.nodesEnabled`,priority=1,description="Nodes whose kubelet runs the gate enabled / nodes that report"
// +kubebuilder:printcolumn:name="Disagreeing",type=string,JSONPath=`.status.disagreeing`,priority=1,description="A sample of the nodes whose kubelet runs the gate with the minority value"
// +kubebuilder:printcolumn:name="Declared",type=string,JSONPath=`.status.nodesDeclaring`,priority=1,description="Nodes that declare the KEP-5328 declared features this gate guards / nodes that report"
// +kubebuilder:printcolumn:name="Declared-Disagreeing",type=string,JSONPath=`.status.declaredDisagreeing`,priority=1,description="A sample of the nodes whose declared features disagree with the majority's"
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

	// The fields below are the cluster's view, written by the node
	// summarizer (featurepub.Summarizer) from the servers' entries and the
	// nodes' NodeFeatureReports.

	// ClusterEnabled is true when every server and every node that
	// reports runs the gate enabled, false when none does, else partial.
	// +optional
	// +kubebuilder:validation:Enum="true";"false";partial
	ClusterEnabled string `json:"clusterEnabled,omitempty"`
	// NodesEnabled is "enabled/reporting" for the nodes' kubelets, e.g.
	// 4987/5000.
	// +optional
	NodesEnabled string `json:"nodesEnabled,omitempty"`
	// Disagreeing is a printable sample of the nodes whose kubelet runs the
	// gate with the minority value, e.g. "node-7,node-9 (+11)".
	// +optional
	Disagreeing string `json:"disagreeing,omitempty"`
	// Nodes summarizes the gate on the nodes, one entry per component kind
	// (kubelet, kube-proxy); never one entry per node.
	// +optional
	// +listType=map
	// +listMapKey=component
	// +kubebuilder:validation:MaxItems=8
	Nodes []NodeFeatureSummary `json:"nodes,omitempty"`
	// NodesDeclaring is "declaring/reporting" for the KEP-5328 declared
	// features this gate guards (upstream's registry,
	// k8s.io/component-helpers/nodedeclaredfeatures): the nodes whose
	// Node.status.declaredFeatures lists every one of them, e.g. 4987/5000;
	// "" when the gate guards none or no node reports.
	// +optional
	NodesDeclaring string `json:"nodesDeclaring,omitempty"`
	// DeclaredDisagreeing is a printable sample of the nodes whose
	// declaring is the minority's, e.g. "node-7,node-9 (+11)".
	// +optional
	DeclaredDisagreeing string `json:"declaredDisagreeing,omitempty"`
	// Declared summarizes, per declared feature this gate guards, which
	// nodes declare it; never one entry per node.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Declared []DeclaredFeatureSummary `json:"declared,omitempty"`
	// Conditions: Enabled is True only when every server and every node
	// that reports runs the gate enabled (kubectl wait
	// --for=condition=Enabled feature/NAME).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ConditionEnabled is the Feature condition that is True only when the
// gate is enabled in every server and on every node that reports.
const ConditionEnabled = "Enabled"

// Limits of a NodeFeatureSummary, which keep a Feature object's size
// independent of the number of nodes.
const (
	// MaxNodeGroups bounds NodeFeatureSummary.Groups.
	MaxNodeGroups = 16
	// MaxDisagreeingSample bounds NodeFeatureSummary.DisagreeingSample.
	MaxDisagreeingSample = 10
)

// NodeFeatureSummary is the gate on the nodes that run one component kind:
// counts, a bounded breakdown and a bounded sample of names.
type NodeFeatureSummary struct {
	// Component is the component kind: kubelet or kube-proxy.
	Component string `json:"component"`
	// Nodes is the number of nodes that report running the component.
	Nodes int32 `json:"nodes"`
	// Enabled is the number of them that run the gate enabled.
	Enabled int32 `json:"enabled"`
	// Unknown is the number of them whose binary does not know the gate
	// (they are not counted as enabled).
	// +optional
	Unknown int32 `json:"unknown,omitempty"`
	// Groups break Nodes down by binary version, emulated version, who set
	// the gate and its value, largest first; at most MaxNodeGroups, the
	// nodes of the others in OtherNodes.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Groups []NodeFeatureGroup `json:"groups,omitempty"`
	// OtherNodes counts the nodes of the groups beyond MaxNodeGroups.
	// +optional
	OtherNodes int32 `json:"otherNodes,omitempty"`
	// Disagreeing is the number of nodes whose value is not the majority's
	// (a tie goes to the control plane's value).
	// +optional
	Disagreeing int32 `json:"disagreeing,omitempty"`
	// DisagreeingSample names at most MaxDisagreeingSample of them, in
	// name order.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	DisagreeingSample []string `json:"disagreeingSample,omitempty"`
}

// MaxDeclaredFeatures bounds FeatureStatus.Declared.
const MaxDeclaredFeatures = 8

// DeclaredFeatureSummary is one KEP-5328 declared feature on the nodes that
// report: counts and a bounded sample of names, as NodeFeatureSummary's.
type DeclaredFeatureSummary struct {
	// Name of the declared feature, e.g. RestartAllContainersOnContainerExits.
	Name string `json:"name"`
	// Nodes is the number of nodes that report a kubelet.
	Nodes int32 `json:"nodes"`
	// Declaring is the number of them whose Node.status.declaredFeatures
	// lists the feature.
	Declaring int32 `json:"declaring"`
	// NotPublishing is the number of them whose kubelet runs the
	// NodeDeclaredFeatures gate off or does not know it: their Nodes
	// declare nothing (counted as not declaring).
	// +optional
	NotPublishing int32 `json:"notPublishing,omitempty"`
	// Disagreeing is the number of nodes whose declaring is not the
	// majority's (a tie goes to declaring).
	// +optional
	Disagreeing int32 `json:"disagreeing,omitempty"`
	// DisagreeingSample names at most MaxDisagreeingSample of them, in
	// name order.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	DisagreeingSample []string `json:"disagreeingSample,omitempty"`
}

// NodeFeatureGroup is a number of nodes that run the gate alike.
type NodeFeatureGroup struct {
	// BinaryVersion of the component on these nodes.
	BinaryVersion string `json:"binaryVersion"`
	// EmulationVersion of the component on these nodes.
	// +optional
	EmulationVersion string `json:"emulationVersion,omitempty"`
	// SetBy is who set the gate on these nodes (scoping's SET-BY:
	// kubelet=true, default, emulated-version).
	// +optional
	SetBy string `json:"setBy,omitempty"`
	// Enabled is true, false, or unknown (the binary does not know the gate).
	// +kubebuilder:validation:Enum="true";"false";unknown
	Enabled string `json:"enabled"`
	// Nodes is how many nodes run the gate this way.
	Nodes int32 `json:"nodes"`
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
