package kubeargs

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kubeharness/kubeharness/components/names"
)

// Weakening is a hardening default that a component's final arguments no
// longer have: Flag's value (as upstream reads it; "" if unset) and what
// was lost.
type Weakening struct {
	Component, Flag, Value string
	Lost                   string
}

// Example: kube-apiserver --anonymous-auth=true: requests without
// credentials are served as system:anonymous
func (w Weakening) String() string {
	value := "(unset)"
	if w.Value != "" {
		value = w.Value
	}
	return fmt.Sprintf("%s --%s=%s: %s", w.Component, w.Flag, value, w.Lost)
}

// Weakened lists, for the kube-apiserver's and the kubelet's final
// arguments in args (keyed by names.APIServer and names.Kubelet, as Merge
// renders them; other components are not looked at), each hardening
// default they lost, one Weakening per flag: admission without
// NodeRestriction, anonymous authentication, AlwaysAllow authorization,
// the apiserver not verifying kubelets' serving certificates, the kubelet
// trusting no client CA. An unset flag counts with upstream's default
// (anonymous on, AlwaysAllow). Weakened checks what the arguments say,
// not a --config file they name.
func Weakened(args map[string][]string) []Weakening {
	var out []Weakening
	lost := func(component, flag, value, what string) {
		out = append(out, Weakening{Component: component, Flag: flag, Value: value, Lost: what})
	}
	if a, ok := args[names.APIServer]; ok {
		const c = names.APIServer
		if enabled := listValues(a, "enable-admission-plugins"); !slices.Contains(enabled, "NodeRestriction") {
			lost(c, "enable-admission-plugins", strings.Join(enabled, ","), "NodeRestriction is not enabled: a node's kubelet may change other nodes' Node objects and Pods")
		}
		if disabled := listValues(a, "disable-admission-plugins"); slices.Contains(disabled, "NodeRestriction") {
			lost(c, "disable-admission-plugins", strings.Join(disabled, ","), "NodeRestriction is disabled: a node's kubelet may change other nodes' Node objects and Pods")
		}
		if v, on := boolValue(a, "anonymous-auth", true); on {
			lost(c, "anonymous-auth", v, "requests without credentials are served as system:anonymous")
		}
		if modes := listValues(a, "authorization-mode"); len(modes) == 0 || slices.Contains(modes, "AlwaysAllow") {
			lost(c, "authorization-mode", strings.Join(modes, ","), "AlwaysAllow: every authenticated request is allowed, whatever RBAC says")
		}
		if v, _ := Value(a, "kubelet-certificate-authority"); v == "" {
			lost(c, "kubelet-certificate-authority", v, "the apiserver does not verify the kubelets' serving certificates (exec, logs and port-forward go to whoever answers)")
		}
	}
	if a, ok := args[names.Kubelet]; ok {
		const c = names.Kubelet
		if v, on := boolValue(a, "anonymous-auth", true); on {
			lost(c, "anonymous-auth", v, "requests to the kubelet's port without credentials are served as system:anonymous")
		}
		if v, _ := Value(a, "authorization-mode"); v == "" || v == "AlwaysAllow" {
			lost(c, "authorization-mode", v, "AlwaysAllow: every authenticated request to the kubelet's API (exec, logs, proxy) is allowed")
		}
		if v, _ := Value(a, "client-ca-file"); v == "" {
			lost(c, "client-ca-file", v, "the kubelet trusts no client CA: it authenticates no client certificate, the apiserver's included")
		}
	}
	return out
}

// listValues is a list flag's items: every --key=value, comma-separated,
// in order (upstream's string-slice flags append each repetition).
func listValues(args []string, key string) []string {
	var out []string
	for _, a := range args {
		if v, found := strings.CutPrefix(a, "--"+key+"="); found {
			for item := range strings.SplitSeq(v, ",") {
				if item = strings.TrimSpace(item); item != "" {
					out = append(out, item)
				}
			}
		}
	}
	return out
}

// boolValue is a boolean flag's last value and whether it is on (def if
// unset; a value that does not parse counts as on: upstream refuses it).
func boolValue(args []string, key string, def bool) (string, bool) {
	v, ok := Value(args, key)
	if !ok {
		return "", def
	}
	b, err := strconv.ParseBool(v)
	return v, err != nil || b
}
