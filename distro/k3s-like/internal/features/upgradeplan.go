package features

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/clientcmd"
	basever "k8s.io/component-base/version"

	"github.com/kubeharness/kubeharness/components"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/featurecheck"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/status"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/upgradeplan"
	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// NewUpgradePlanCommand is `k3s-like upgrade-plan`.
func NewUpgradePlanCommand() *cobra.Command {
	var client status.Client
	var kubeconfig, output, to, file string
	cmd := &cobra.Command{
		Use:   "upgrade-plan",
		Short: "Show what moving a running server to another emulated version changes: feature gates and served APIs",
		Long: `Asks a running server (its status address) for its plan and kube-apiserver arguments, and prints
what moving it from its emulated version to --to-emulated-version (default: the binary's version,
i.e. lifting the emulation) changes: every kube feature gate whose value flips (stage at each
version; an explicitly set gate keeps its value, and one the target refuses is named), and every
built-in API group-version and resource that starts or stops being served, computed with
kube-apiserver's own machinery (its resource configuration with the server's --runtime-config, the
gates that guard storage, and the API lifecycle evaluator). With -f, which of the manifests' objects
would stop being served. With --kubeconfig, the model of what is served now is compared with the
server's discovery and any difference is printed. Run it with the server's own binary.

Exit status: 0 nothing changes, 3 something changes, 1 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %s: use table or json", output)
			}
			r, err := upgradePlan(cmd.InOrStdin(), &client, kubeconfig, to, file)
			if err != nil {
				return err
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				err = enc.Encode(r)
			} else {
				err = r.WriteTable(cmd.OutOrStdout())
			}
			if err != nil {
				return err
			}
			if r.Changes() {
				return cli.ExitCode(3)
			}
			return nil
		},
	}
	client.AddFlags(cmd)
	cmd.Flags().StringVar(&to, "to-emulated-version", "", "The emulated version to move to, major.minor (default: the binary's version)")
	cmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "Kubeconfig of the server, to compare the model with its discovery (optional)")
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	cmd.Flags().StringVarP(&file, "filename", "f", "", "Manifests (- is stdin): which objects stop being served at the target")
	return cmd
}

func upgradePlan(stdin io.Reader, client *status.Client, kubeconfig, to, file string) (*upgradeplan.Report, error) {
	st, err := serverStatus(client)
	if err != nil {
		return nil, err
	}
	if st.Plan.EmulationVersion == "" {
		return nil, fmt.Errorf("the server at %s has no plan yet (phase %s)", client.Addr, st.Phase)
	}
	bin := utilfeature.DefaultMutableFeatureGate
	ours := version.MustParse(basever.DefaultKubeBinaryVersion)
	theirs, err := version.Parse(st.Plan.BinaryVersion)
	if err != nil {
		return nil, fmt.Errorf("the server's binary version %q: %w", st.Plan.BinaryVersion, err)
	}
	if theirs.Major() != ours.Major() || theirs.Minor() != ours.Minor() {
		return nil, fmt.Errorf("the server runs Kubernetes %s, this binary %s: run upgrade-plan with the server's binary", st.Plan.BinaryVersion, basever.DefaultKubeBinaryVersion)
	}
	target := ours
	if to != "" {
		if target, err = version.Parse(to); err != nil {
			return nil, fmt.Errorf("--to-emulated-version=%s: %w", to, err)
		}
		if target.Patch() != 0 {
			return nil, fmt.Errorf("--to-emulated-version=%s: no patch number: use major.minor", to)
		}
	}
	var objs []featurecheck.Object
	if file != "" {
		if objs, err = readObjects(stdin, file); err != nil {
			return nil, err
		}
	}
	var apiserverArgs []string
	for _, c := range st.Components {
		if c.Name == components.APIServerName {
			apiserverArgs = c.Args
		}
	}
	var live *upgradeplan.APIs
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("--kubeconfig %s: %w", kubeconfig, err)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			return nil, err
		}
		_, lists, err := dc.ServerGroupsAndResources()
		if err != nil {
			return nil, fmt.Errorf("the server's discovery: %w", err)
		}
		a := upgradeplan.LiveAPIs(lists)
		live = &a
	}
	return upgradeplan.Build(bin, st.Plan, apiserverArgs, target, objs, live)
}

// serverStatus is the harness status the server's status handler serves:
// /components, and the plan from /features.
func serverStatus(client *status.Client) (*harness.Status, error) {
	var st harness.Status
	if err := getJSON(client, "/components", &st); err != nil {
		return nil, err
	}
	var plan scoping.Plan
	if err := getJSON(client, "/features", &plan); err != nil {
		return nil, err
	}
	st.Plan = &plan
	return &st, nil
}

func getJSON(client *status.Client, path string, into any) error {
	body, err := client.Get(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("%s%s: %w", client.Addr, path, err)
	}
	return nil
}
