package scoping

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/version"
)

// recordedFlags are the flags whose text a scope keeps, to say later which
// flag asked for what.
var recordedFlags = []string{"feature-gates", "emulated-version", "min-compatibility-version", "v", "vmodule", "logging-format"}

// recorder wraps a flag's pflag.Value and keeps every text it was set to.
// pflag calls Set once per occurrence on the command line.
type recorder struct {
	pflag.Value
	texts []string
}

func (r *recorder) Set(s string) error {
	if err := r.Value.Set(s); err != nil {
		return err
	}
	r.texts = append(r.texts, s)
	return nil
}

// flagItem is one comma-separated item of a recorded flag value, with the
// registry component it addresses ("kube" when the user left it out).
type flagItem struct {
	component string
	key       string // feature name; empty for versions
	value     string
	text      string // the item as the user wrote it
}

// flagText renders one item as a command-line flag: --feature-gates=Foo=true.
func flagText(flag, item string) string { return "--" + flag + "=" + item }

// splitItems splits the recorded texts of a comma-separated flag.
func splitItems(texts []string) []string {
	var out []string
	for _, t := range texts {
		for _, it := range strings.Split(t, ",") {
			if it = strings.TrimSpace(it); it != "" {
				out = append(out, it)
			}
		}
	}
	return out
}

// featureItems parses --feature-gates items: [component:]Feature=bool.
func featureItems(texts []string) ([]flagItem, error) {
	var out []flagItem
	for _, it := range splitItems(texts) {
		comp, kv := KubeComponent, it
		if c, rest, ok := strings.Cut(it, ":"); ok {
			comp, kv = strings.TrimSpace(c), rest
		}
		k, v, ok := strings.Cut(kv, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok || k == "" {
			return nil, &itemError{it, fmt.Errorf("expected [component:]Feature=true|false")}
		}
		if _, err := strconv.ParseBool(v); err != nil {
			return nil, &itemError{it, fmt.Errorf("value %q of feature %s is not a bool", v, k)}
		}
		out = append(out, flagItem{component: comp, key: k, value: v, text: it})
	}
	return out, nil
}

// versionItems parses --emulated-version / --min-compatibility-version items:
// [component=]major.minor, with upstream's rules (no patch number).
func versionItems(texts []string) ([]flagItem, error) {
	var out []flagItem
	for _, it := range splitItems(texts) {
		comp, v := KubeComponent, it
		if c, rest, ok := strings.Cut(it, "="); ok {
			comp, v = strings.TrimSpace(c), strings.TrimSpace(rest)
		}
		ver, err := version.Parse(v)
		if err != nil {
			return nil, &itemError{it, err}
		}
		if ver.Patch() != 0 {
			return nil, &itemError{it, fmt.Errorf("patch version not allowed, use major.minor (got %s)", ver)}
		}
		out = append(out, flagItem{component: comp, value: version.MajorMinor(ver.Major(), ver.Minor()).String(), text: it})
	}
	return out, nil
}

type itemError struct {
	item string
	err  error
}

func (e *itemError) Error() string { return e.err.Error() }
