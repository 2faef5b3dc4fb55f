package features

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/components/featurepub"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/status"
	"github.com/kubeharness/kubeharness/scoping"
)

// featureOutputs are the -o formats of `k3s-like features`, as kubectl's.
func featureOutputs() []string { return []string{"table", "wide", "json", "yaml", "name"} }

// NewCommand is `k3s-like features`, with `features check`.
func NewCommand() *cobra.Command {
	var client status.Client
	var opts featuresOptions
	cmd := &cobra.Command{
		Use:   "features",
		Short: "Show the effective feature gates of a running server, and who set them",
		Long: `Show the effective feature gates of a running server, and who set them, as
kubectl get features shows the Feature objects the server publishes: the same
columns (but AGE: these come from the server, not the apiserver) and SET-BY
text. ENABLED is true, false or partial: in every server and on every node
that reports, in none, or in some. -o wide adds SERVERS, NODES (the nodes
whose kubelet runs the gate enabled / the nodes that report), DISAGREEING (a
sample of the nodes whose kubelet runs the minority value), DECLARED (the
nodes that declare the KEP-5328 declared features the gate guards / the
nodes that report), DECLARED-DISAGREEING (a sample of the minority) and the
emulated and binary versions; -o json and -o yaml print a FeatureList of the Feature
objects this server publishes (status.servers holds only its own entry,
named by --node-name) with the cluster's summary of the nodes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			body, err := client.Get("/features")
			if err != nil {
				return err
			}
			var plan scoping.Plan
			if err := json.Unmarshal(body, &plan); err != nil {
				return fmt.Errorf("%s/features: %w", client.Addr, err)
			}
			// The node summaries: a server without them (an older one)
			// shows the plan alone.
			if body, err := client.Get("/features/nodes"); err == nil {
				if err := json.Unmarshal(body, &opts.nodes); err != nil {
					return fmt.Errorf("%s/features/nodes: %w", client.Addr, err)
				}
			}
			return opts.print(cmd.OutOrStdout(), cmd.ErrOrStderr(), &plan)
		},
	}
	client.AddFlags(cmd)
	hostname, _ := os.Hostname()
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "Output format: "+strings.Join(featureOutputs(), ", "))
	cmd.Flags().BoolVar(&opts.noHeaders, "no-headers", false, "table and wide: print no header line")
	cmd.Flags().StringVar(&opts.nodeName, "node-name", hostname, "The server's --node-name: its entry in status.servers (-o wide, json, yaml)")
	// KEP-3920 feature discovery: `k3s-like features check -f FILE|-` (check.go).
	cmd.AddCommand(newFeaturesCheckCommand())
	return cmd
}

// featuresOptions are how `k3s-like features` prints a plan.
type featuresOptions struct {
	output    string // one of featureOutputs
	noHeaders bool
	nodeName  string // the server identity in status.servers
	// nodes are the server's node summaries by gate (/features/nodes);
	// nil shows the plan alone.
	nodes map[string]featurepub.Summary
}

func (o *featuresOptions) validate() error {
	if !slices.Contains(featureOutputs(), o.output) {
		return fmt.Errorf("-o %s: unknown output format; use one of %s", o.output, strings.Join(featureOutputs(), ", "))
	}
	return nil
}

// print writes the plan to w in o.output, and the plan's warnings to
// stderr, "Warning: " first, as kubectl prints the apiserver's.
func (o *featuresOptions) print(w, stderr io.Writer, plan *scoping.Plan) error {
	if err := o.validate(); err != nil {
		return err
	}
	list := featureList(plan, o.nodeName, o.nodes)
	var err error
	switch o.output {
	case "table", "wide":
		var table *metav1.Table
		if table, err = featureTable(list); err == nil {
			err = printers.NewTablePrinter(printers.PrintOptions{NoHeaders: o.noHeaders, Wide: o.output == "wide"}).PrintObj(table, w)
		}
	case "json":
		err = (&printers.JSONPrinter{}).PrintObj(list, w)
	case "yaml":
		err = (&printers.YAMLPrinter{}).PrintObj(list, w)
	case "name":
		// NamePrinter takes a List object only unstructured: one item at a time.
		for i := 0; i < len(list.Items) && err == nil; i++ {
			err = (&printers.NamePrinter{}).PrintObj(&list.Items[i], w)
		}
	}
	for _, warning := range plan.Warnings {
		fmt.Fprintf(stderr, "Warning: %s\n", warning)
	}
	return err
}

// featureList is the FeatureList of the Feature objects server publishes
// for plan (featurepub.Features) with the summarizer's fields from nodes (a
// gate without a summary: ENABLED is the server's value), in the
// apiserver's order (by name), so that the rows are kubectl's rows.
func featureList(plan *scoping.Plan, server string, nodes map[string]featurepub.Summary) *featuresv1alpha1.FeatureList {
	list := &featuresv1alpha1.FeatureList{
		TypeMeta: metav1.TypeMeta{APIVersion: featuresv1alpha1.SchemeGroupVersion.String(), Kind: "FeatureList"},
		Items:    []featuresv1alpha1.Feature{},
	}
	for _, f := range featurepub.Features(plan, server) {
		st := &f.Status
		st.ClusterEnabled = strconv.FormatBool(st.Enabled)
		if s, ok := nodes[st.Name]; ok {
			st.ClusterEnabled, st.NodesEnabled, st.Disagreeing, st.Nodes = s.ClusterEnabled, s.NodesEnabled, s.Disagreeing, s.Nodes
			st.NodesDeclaring, st.DeclaredDisagreeing, st.Declared = s.NodesDeclaring, s.DeclaredDisagreeing, s.Declared
			if s.Condition.Type != "" {
				st.Conditions = []metav1.Condition{s.Condition}
			}
		}
		list.Items = append(list.Items, *f)
	}
	slices.SortFunc(list.Items, func(a, b featuresv1alpha1.Feature) int { return strings.Compare(a.Name, b.Name) })
	return list
}

// featureTable is the list as the apiserver's Table for `kubectl get
// features`: the CRD's printer columns, converted by the apiserver's own
// convertor, without AGE (these objects never were in an apiserver), and
// the emulated and binary versions as -o wide columns.
func featureTable(list *featuresv1alpha1.FeatureList) (*metav1.Table, error) {
	columns, err := crdPrinterColumns()
	if err != nil {
		return nil, err
	}
	columns = slices.DeleteFunc(columns, func(c apiextensionsv1.CustomResourceColumnDefinition) bool {
		return c.JSONPath == ".metadata.creationTimestamp"
	})
	columns = append(columns,
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Emulated", Type: "string", JSONPath: ".status.emulationVersion", Priority: 1, Description: "The server's effective emulated version"},
		apiextensionsv1.CustomResourceColumnDefinition{Name: "Binary", Type: "string", JSONPath: ".status.binaryVersion", Priority: 1, Description: "The version of the kube components in the server's binary"},
	)
	convertor, err := tableconvertor.New(columns)
	if err != nil {
		return nil, err
	}
	return convertor.ConvertToTable(context.Background(), list, nil)
}

// crdPrinterColumns are the additionalPrinterColumns of the Feature CRD's
// version v1alpha1.
func crdPrinterColumns() ([]apiextensionsv1.CustomResourceColumnDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(featuresv1alpha1.CRD, &crd); err != nil {
		return nil, fmt.Errorf("the Feature CRD: %w", err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name == featuresv1alpha1.SchemeGroupVersion.Version {
			return v.AdditionalPrinterColumns, nil
		}
	}
	return nil, fmt.Errorf("the Feature CRD has no version %s", featuresv1alpha1.SchemeGroupVersion.Version)
}
