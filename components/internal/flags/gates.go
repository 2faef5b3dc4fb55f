package flags

import (
	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

// TeeFeatureGates makes fs's --feature-gates (the kubelet's or
// kube-proxy's, which fill a map of their own) also set gate, the scope's,
// so that the scope records the flag's features as the component's
// requests.
func TeeFeatureGates(fs *pflag.FlagSet, gate featuregate.MutableFeatureGate) {
	f := fs.Lookup("feature-gates")
	f.Value = &gateTee{Value: f.Value, gate: gate}
}

// gateTee is a --feature-gates value that also sets the scope's gate.
type gateTee struct {
	pflag.Value
	gate featuregate.MutableFeatureGate
}

// Set sets the scope's gate, then the component's map.
func (g *gateTee) Set(s string) error {
	if err := g.gate.Set(s); err != nil {
		return err
	}
	return g.Value.Set(s)
}
