package features

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	featuresv1alpha1 "github.com/kubeharness/kubeharness/components/apis/features/v1alpha1"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/featurecheck"
)

// errNotServed makes `features check` exit 1 without another message: the
// per-object lines already say what is missing or partial.
var errNotServed = errors.New("some objects cannot be served everywhere in this cluster")

func newFeaturesCheckCommand() *cobra.Command {
	var file, kubeconfig, dataDir string
	home, _ := os.UserHomeDir()
	cmd := &cobra.Command{
		Use:   "check -f FILE|-",
		Short: "Report, per object of a manifest, whether this cluster serves its API group/version and kind, and what would",
		Long: `Reads Kubernetes manifests (multi-document YAML or JSON; - is stdin) and prints one line per
object: "ok" if the cluster serves its apiVersion and kind (discovery), else "MISSING" with what
would serve it: --runtime-config for alpha/beta group-versions kube-apiserver does not serve by
default, and the feature gates kube-apiserver adds the kind's storage under, with their stage and
state from the cluster's Feature objects; "PARTIAL" if it is served but such a gate is enabled
only in some servers or on some nodes, naming how many and a sample of those that differ.
For a Pod, or a workload's Pod template, that needs node declared features (KEP-5328: upstream's
inference, as the scheduler's), "PARTIAL" if only some nodes declare them, naming those that can
run it (at most 10 and how many), "MISSING" if no node does.
Exit code 0 if every object is "ok", 1 otherwise.
API-level only, but for declared features: other field-level gates, admission, webhooks and
controllers are not checked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return errors.New("-f FILE or -f - (stdin) is required")
			}
			if kubeconfig == "" {
				kubeconfig = os.Getenv("KUBECONFIG")
			}
			if kubeconfig == "" {
				kubeconfig = datadir.AdminKubeconfig(dataDir)
			}
			return runFeaturesCheck(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), file, kubeconfig)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "Manifest file, or - for stdin")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the cluster (default $KUBECONFIG, else DATA_DIR/admin.kubeconfig)")
	cmd.Flags().StringVarP(&dataDir, "data-dir", "d", cli.DefaultDataDir(os.Geteuid(), home), "The server's --data-dir, for its admin.kubeconfig")
	return cmd
}

// readObjects reads the objects of the manifests in file (- is stdin).
func readObjects(stdin io.Reader, file string) ([]featurecheck.Object, error) {
	in := stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		in = f
	}
	objs, err := featurecheck.Read(in)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return objs, nil
}

func runFeaturesCheck(ctx context.Context, stdin io.Reader, stdout io.Writer, file, kubeconfig string) error {
	objs, err := readObjects(stdin, file)
	if err != nil {
		return err
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.Timeout = 30 * time.Second
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	gates, err := clusterGates(ctx, dyn)
	if err != nil {
		return err
	}
	var nodes *featurecheck.Nodes
	if needsNodes(objs) {
		if nodes, err = clusterNodes(ctx, cfg, disc); err != nil {
			return err
		}
	}
	results, err := featurecheck.Check(disc, gates, nodes, objs)
	if err != nil {
		return err
	}
	ok := true
	for _, r := range results {
		fmt.Fprintln(stdout, r)
		ok = ok && r.OK()
	}
	if !ok {
		return errNotServed
	}
	return nil
}

// needsNodes reports whether an object of objs has a Pod spec.
func needsNodes(objs []featurecheck.Object) bool {
	for _, o := range objs {
		if o.PodSpec != nil {
			return true
		}
	}
	return false
}

// clusterNodes reads each Node's declared features (KEP-5328), 500 Nodes
// a page, and the servers' version the scheduler infers a Pod's needs at.
func clusterNodes(ctx context.Context, cfg *rest.Config, disc discovery.DiscoveryInterface) (*featurecheck.Nodes, error) {
	info, err := disc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("the servers' version: %w", err)
	}
	v, err := version.ParseGeneric(info.GitVersion)
	if err != nil {
		return nil, fmt.Errorf("the servers' version %q: %w", info.GitVersion, err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	out := &featurecheck.Nodes{Version: v}
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := cs.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list Nodes: %w", err)
		}
		for _, n := range list.Items {
			out.Items = append(out.Items, featurecheck.NodeDeclared{Name: n.Name, Features: n.Status.DeclaredFeatures})
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// clusterGates reads the Feature objects; none (no CRD: not a k3s-like
// cluster, or the publisher has not run yet) is not an error.
func clusterGates(ctx context.Context, dyn dynamic.Interface) (map[string]featurecheck.Gate, error) {
	list, err := dyn.Resource(featuresv1alpha1.Resource).List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list Features: %w", err)
	}
	out := map[string]featurecheck.Gate{}
	for _, item := range list.Items {
		name, _, _ := unstructured.NestedString(item.Object, "status", "name")
		stage, _, _ := unstructured.NestedString(item.Object, "status", "stage")
		enabled, _, _ := unstructured.NestedBool(item.Object, "status", "enabled")
		cluster, _, _ := unstructured.NestedString(item.Object, "status", "clusterEnabled")
		nodes, _, _ := unstructured.NestedString(item.Object, "status", "nodesEnabled")
		disagreeing, _, _ := unstructured.NestedString(item.Object, "status", "disagreeing")
		if name != "" {
			out[name] = featurecheck.Gate{Stage: stage, Enabled: enabled, Cluster: cluster, Nodes: nodes, Disagreeing: disagreeing}
		}
	}
	return out, nil
}
