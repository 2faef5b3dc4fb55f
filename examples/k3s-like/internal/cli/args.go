// Package cli turns k3s-style server flags into each component's upstream
// arguments.
package cli

import (
	"fmt"
	"strings"
)

// Arg is one upstream flag without its dashes: {"secure-port", "6443"}.
type Arg struct {
	Key   string
	Value string
}

// String renders it as the upstream binary takes it: --secure-port=6443.
func (a Arg) String() string { return "--" + a.Key + "=" + a.Value }

// ParseExtraArgs parses repeatable k3s-style "key=value" arguments, as given
// to --kube-apiserver-arg and its siblings: no leading dashes, a key, an
// equals sign, a value (which may itself contain "="). A key ending in "+"
// appends to the server's default for that key instead of replacing it, as
// in k3s. flag names the server flag, for errors.
func ParseExtraArgs(flag string, raw []string) ([]Arg, error) {
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

// Merge returns a component's upstream arguments: the server's defaults,
// each replaced by a user argument with the same key (or extended, for a
// "key+" argument, with a comma), then the user's other arguments in the
// order given. Shorthands the server applies to every component (such as
// --feature-gates) come between the defaults and the user's own, so a
// repeatable flag gets both.
func Merge(defaults, shorthands, user []Arg) []string {
	userByKey := map[string][]Arg{}
	for _, a := range user {
		userByKey[strings.TrimSuffix(a.Key, "+")] = append(userByKey[strings.TrimSuffix(a.Key, "+")], a)
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
