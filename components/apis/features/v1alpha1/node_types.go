package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeFeatureReport is one node's report of the feature gates its
// components run with. It is named after its Node and owned by it (the
// garbage collector deletes it with the Node); the node's own process
// writes it when what it reports changes, never periodically. The gates'
// values are not in it but in the FeatureProfile it names, which every node
// that runs the same values shares, so that a report stays a few hundred
// bytes.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=nfr
// +kubebuilder:printcolumn:name="Kubelet",type=string,JSONPath=`.spec.components[?(@.name=="kubelet")].binaryVersion`
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.components[?(@.name=="kubelet")].profile`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type NodeFeatureReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NodeFeatureReportSpec `json:"spec"`
}

// NodeFeatureReportSpec is what the node runs.
type NodeFeatureReportSpec struct {
	// Components are the node's components that run with feature gates.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	Components []NodeComponentReport `json:"components"`
	// DeclaredFeatures are the node's Node.status.declaredFeatures
	// (KEP-5328) as its kubelet published them, sorted; empty when it
	// declares none, which is also the case where the kubelet runs the
	// NodeDeclaredFeatures gate off (the node's profile says which).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	DeclaredFeatures []string `json:"declaredFeatures,omitempty"`
}

// NodeComponentReport is one component of a node and its gates.
type NodeComponentReport struct {
	// Name of the component: kubelet or kube-proxy.
	Name string `json:"name"`
	// BinaryVersion of the component, e.g. v1.37.2.
	BinaryVersion string `json:"binaryVersion"`
	// EmulationVersion is the component's effective emulated version.
	// +optional
	EmulationVersion string `json:"emulationVersion,omitempty"`
	// Profile names the FeatureProfile that holds the value of every gate
	// the component knows.
	Profile string `json:"profile"`
	// SetBy is, for each gate that is not at its binary's default by
	// default, who set it (scoping's SET-BY, e.g. kubelet=true or
	// emulated-version); a gate not listed was left at its default.
	// +optional
	SetBy map[string]string `json:"setBy,omitempty"`
}

// NodeFeatureReportList is a list of NodeFeatureReport.
//
// +kubebuilder:object:root=true
type NodeFeatureReportList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeFeatureReport `json:"items"`
}

// FeatureProfile is the effective value of every gate a binary knows, named
// after a hash of its content (featurepub.ProfileName): written once by the
// first node that runs it, read by the summarizer, shared by every node
// that runs the same values. The summarizer deletes the profiles no report
// names any more.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Enabled",type=integer,JSONPath=`.spec.enabledCount`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type FeatureProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec FeatureProfileSpec `json:"spec"`
}

// FeatureProfileSpec lists gates by value; a gate in neither list is one
// the binary does not know.
type FeatureProfileSpec struct {
	// Enabled are the names of the enabled gates, sorted.
	// +optional
	Enabled []string `json:"enabled,omitempty"`
	// Disabled are the names of the disabled gates, sorted.
	// +optional
	Disabled []string `json:"disabled,omitempty"`
	// EnabledCount is len(Enabled), for the printer column.
	// +optional
	EnabledCount int32 `json:"enabledCount,omitempty"`
}

// FeatureProfileList is a list of FeatureProfile.
//
// +kubebuilder:object:root=true
type FeatureProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FeatureProfile `json:"items"`
}
