// Package kubeargs merges a distro's default arguments for an upstream
// component with its user's by k3s's rules (k3s pkg/util/args.go, GetArgs):
// the user passes upstream flags, repeatable, as key=value
// (--kube-apiserver-arg=v=2), with or without the leading "--"; a bare key
// means key=true; a user value replaces the default of the same key;
// key+=value appends to the default and key-=value prepends to it (as
// separate --key=value arguments, for upstream's repeatable and list
// flags); a key given several times becomes several --key=value arguments,
// in order. Parse checks what the user wrote; Merge builds the upstream
// arguments; Value reads one back.
//
// Two deliberate differences from k3s: the arguments keep the defaults'
// order, then the user's new keys in the order given, where k3s sorts them
// by key (the order of distinct flags does not change their meaning, and a
// repeated key keeps its order in both); and a single leading dash is an
// error, where k3s would pass "---key".
package kubeargs

import (
	"fmt"
	"slices"
	"strings"
)

// Arg is one upstream flag without its dashes: {"secure-port", "6443"}. A
// user's Key ending in "+" appends to the default of the key without it, one
// ending in "-" prepends to it.
type Arg struct {
	Key   string
	Value string
}

// String renders it as the upstream binary takes it: --secure-port=6443.
func (a Arg) String() string { return "--" + a.Key + "=" + a.Value }

// Parse parses repeatable k3s-style arguments, as given to
// --kube-apiserver-arg and its siblings: a key, with or without a leading
// "--", then "=value" (which may itself contain "=", and may be empty), or
// nothing for "=true". A key ending in "+" (key+=value) appends to the
// default for that key, one ending in "-" (key-=value) prepends to it. flag
// names the distro's flag, for errors.
func Parse(flag string, raw []string) ([]Arg, error) {
	out := make([]Arg, 0, len(raw))
	for _, r := range raw {
		k, v, ok := strings.Cut(strings.TrimPrefix(r, "--"), "=")
		if !ok {
			v = "true"
		}
		switch {
		case strings.HasPrefix(k, "-"):
			return nil, fmt.Errorf("--%s=%s: a flag has two leading dashes or none, e.g. --%s=%s", flag, r, flag, strings.TrimLeft(r, "-"))
		case strings.TrimRight(k, "+-") == "":
			return nil, fmt.Errorf("--%s=%s: expected key=value or key, e.g. --%s=v=2", flag, r, flag)
		}
		out = append(out, Arg{Key: k, Value: v})
	}
	return out, nil
}

// Merge returns a component's upstream arguments by k3s's rules: the
// defaults, in order, each replaced by the user's arguments with the same
// key (several give several --key=value, in order), or extended by "key+"
// (after the default) and "key-" (before it); then the shorthands; then the
// user's arguments for keys without a default, in the order given ("key+"
// and "key-" without a default are plain key=value). Shorthands are what a
// distro applies to every component (such as --feature-gates); they come
// between the defaults and the user's own, so a repeatable flag gets both.
func Merge(defaults, shorthands, user []Arg) []string {
	initial := map[string]string{}
	for _, d := range defaults {
		initial[d.Key] = d.Value
	}
	// values[key] is k3s's multiArgs: after the first user argument of a
	// key, its default is part of the values (or was dropped by a plain one).
	values := map[string][]string{}
	var newKeys []string
	for _, u := range user {
		key := strings.TrimRight(u.Key, "+-")
		def, hasDefault := initial[key]
		existing, seen := values[key]
		// Once a key has values, they hold its default (or replaced it).
		if seen {
			hasDefault = false
		}
		var next []string
		switch {
		case strings.HasSuffix(u.Key, "+"):
			if hasDefault {
				next = append(next, def)
			}
			next = append(append(next, existing...), u.Value)
		case strings.HasSuffix(u.Key, "-"):
			next = append(next, u.Value)
			if hasDefault {
				next = append(next, def)
			}
			next = append(next, existing...)
		default:
			next = append(slices.Clone(existing), u.Value)
		}
		if !seen && !hasDefault {
			newKeys = append(newKeys, key)
		}
		values[key] = next
	}
	var out []string
	for _, d := range defaults {
		vs, ok := values[d.Key]
		if !ok {
			vs = []string{d.Value}
		}
		for _, v := range vs {
			out = append(out, Arg{Key: d.Key, Value: v}.String())
		}
	}
	for _, s := range shorthands {
		out = append(out, s.String())
	}
	for _, k := range newKeys {
		for _, v := range values[k] {
			out = append(out, Arg{Key: k, Value: v}.String())
		}
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
