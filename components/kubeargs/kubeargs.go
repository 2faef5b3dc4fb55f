// Package kubeargs merges a distro's default arguments for an upstream
// component with its user's, k3s-style: the user passes upstream flags
// without their dashes, repeatable, as key=value (--kube-apiserver-arg=v=2);
// a user value replaces the default of the same key, key+=value appends to
// it with a comma; flags with no default are added in the order given.
// Parse checks what the user wrote; Merge builds the upstream arguments;
// Value reads one back.
package kubeargs

import (
	"fmt"
	"strings"
)

// Arg is one upstream flag without its dashes: {"secure-port", "6443"}. A
// user's Key ending in "+" appends to the default of the key without it.
type Arg struct {
	Key   string
	Value string
}

// String renders it as the upstream binary takes it: --secure-port=6443.
func (a Arg) String() string { return "--" + a.Key + "=" + a.Value }

// Parse parses repeatable k3s-style "key=value" arguments, as given to
// --kube-apiserver-arg and its siblings: no leading dashes, a key, an
// equals sign, a value (which may itself contain "=", and may be empty). A
// key ending in "+" (key+=value) appends to the default for that key
// instead of replacing it, as in k3s. flag names the distro's flag, for
// errors.
func Parse(flag string, raw []string) ([]Arg, error) {
	out := make([]Arg, 0, len(raw))
	for _, r := range raw {
		k, v, ok := strings.Cut(r, "=")
		switch {
		case strings.HasPrefix(k, "-"):
			return nil, fmt.Errorf("--%s=%s: write the upstream flag without leading dashes, e.g. --%s=%s", flag, r, flag, strings.TrimLeft(r, "-"))
		case !ok || k == "" || k == "+":
			return nil, fmt.Errorf("--%s=%s: expected key=value, e.g. --%s=v=2", flag, r, flag)
		}
		out = append(out, Arg{Key: k, Value: v})
	}
	return out, nil
}

// Merge returns a component's upstream arguments: the defaults, each
// replaced by a user argument with the same key (or extended, for a "key+"
// argument, with a comma; several apply in order), then the shorthands,
// then the user's other arguments in the order given (a "key+" without a
// default is plain key=value). Shorthands are what a distro applies to
// every component (such as --feature-gates); they come between the defaults
// and the user's own, so a repeatable flag gets both.
func Merge(defaults, shorthands, user []Arg) []string {
	userByKey := map[string][]Arg{}
	for _, a := range user {
		key := strings.TrimSuffix(a.Key, "+")
		userByKey[key] = append(userByKey[key], a)
	}
	used := map[string]bool{}
	var out []string
	for _, d := range defaults {
		value := d.Value
		for _, u := range userByKey[d.Key] {
			if strings.HasSuffix(u.Key, "+") {
				value += "," + u.Value
			} else {
				value = u.Value
			}
		}
		used[d.Key] = true
		out = append(out, Arg{Key: d.Key, Value: value}.String())
	}
	for _, s := range shorthands {
		out = append(out, s.String())
	}
	for _, u := range user {
		key := strings.TrimSuffix(u.Key, "+")
		if used[key] {
			continue
		}
		out = append(out, Arg{Key: key, Value: u.Value}.String())
	}
	return out
}

// Value is the value of --key in upstream arguments as Merge renders them
// (--key=value), the last one if it is given more than once, as upstream's
// flag parsing takes it; ok is false if it is not there.
func Value(args []string, key string) (value string, ok bool) {
	for _, a := range args {
		if v, found := strings.CutPrefix(a, "--"+key+"="); found {
			value, ok = v, true
		}
	}
	return value, ok
}
