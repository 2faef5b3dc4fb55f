package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// DefaultConfigFile is read when it exists and neither --config nor
// $K3S_LIKE_CONFIG_FILE names another, as k3s reads
// /etc/rancher/k3s/config.yaml.
const DefaultConfigFile = "/etc/k3s-like/config.yaml"

// ConfigFiles are the files to read, in order: the config file (--config,
// else $K3S_LIKE_CONFIG_FILE, else DefaultConfigFile if it exists), then
// its drop-ins FILE.d/*.yaml in lexical order. explicit says whether a
// missing config file is an error.
func ConfigFiles(flagValue string, getenv func(string) string) ([]string, error) {
	path, explicit := flagValue, flagValue != ""
	if path == "" {
		path, explicit = getenv("K3S_LIKE_CONFIG_FILE"), getenv("K3S_LIKE_CONFIG_FILE") != ""
	}
	if path == "" {
		path = DefaultConfigFile
	}
	var files []string
	if _, err := os.Stat(path); err == nil {
		files = append(files, path)
	} else if explicit {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	dropIns, err := filepath.Glob(filepath.Join(path+".d", "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(dropIns)
	return append(files, dropIns...), nil
}

// configValue is one key's merged value and the file that set it last.
type configValue struct {
	values []string
	list   bool
	file   string
}

// readConfig merges files by k3s's rules: keys are the long flag names; a
// repeatable flag's value is a YAML list (or one scalar); a later file
// replaces a key's value, and "key+:" appends to the list instead.
func readConfig(files []string) (map[string]*configValue, []string, error) {
	merged := map[string]*configValue{}
	var order []string
	for _, f := range files {
		doc, err := readConfigFile(f)
		if err != nil {
			return nil, nil, err
		}
		keys := make([]string, 0, len(doc))
		for k := range doc {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			appendTo := strings.HasSuffix(k, "+")
			name := strings.TrimSuffix(k, "+")
			values, list, err := scalars(doc[k])
			if err != nil {
				return nil, nil, fmt.Errorf("config file %s: key %q: %w", f, k, err)
			}
			cur, ok := merged[name]
			if !ok {
				cur = &configValue{}
				merged[name] = cur
				order = append(order, name)
			}
			if appendTo {
				cur.values = append(cur.values, values...)
				cur.list = true
			} else {
				cur.values, cur.list = values, list
			}
			cur.file = f
		}
	}
	return merged, order, nil
}

// readConfigFile parses one config file; its errors name the file.
func readConfigFile(f string) (map[string]any, error) {
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("config file %s: %w", f, err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("config file %s: %w", f, err)
	}
	return doc, nil
}

// secretConfigKeys are the config keys whose values are secrets (the
// token, a server's agent token): a config file that sets one must be as
// private as a token file.
func secretConfigKeys() []string { return []string{"token", "agent-token"} }

// configFilesToCheck are the config files for checkFileModes: a file that
// sets a token (or cannot be read again) is a secret.
func configFilesToCheck(configFiles []string) []checkedFile {
	var files []checkedFile
	for _, f := range configFiles {
		c := checkedFile{path: f, what: "the config file"}
		doc, err := readConfigFile(f)
		for _, key := range secretConfigKeys() {
			_, plain := doc[key]
			_, appended := doc[key+"+"]
			if (plain || appended) && !c.secret {
				c.secret, c.note = true, "it sets "+key
			}
		}
		if err != nil {
			c.secret = true // ApplyConfig read it; if it cannot be read now, assume the worst
		}
		files = append(files, c)
	}
	return files
}

// scalars turns a YAML value into flag values: a scalar, or a list of them.
func scalars(v any) ([]string, bool, error) {
	one := func(v any) (string, error) {
		switch x := v.(type) {
		case string:
			return x, nil
		case bool:
			return strconv.FormatBool(x), nil
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		case nil:
			return "", nil
		}
		return "", fmt.Errorf("want a string, number, boolean or a list of them, not %T", v)
	}
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, item := range list {
			s, err := one(item)
			if err != nil {
				return nil, false, err
			}
			out = append(out, s)
		}
		return out, true, nil
	}
	s, err := one(v)
	return []string{s}, false, err
}

// ApplyConfig sets the flags of fs that the command line did not set from
// the merged config files: the command line overrides the files. An
// unknown key, or a value its flag refuses, is an error naming the key and
// the file; command names the command whose flags the keys are.
func ApplyConfig(fs *pflag.FlagSet, command string, files []string) error {
	merged, order, err := readConfig(files)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range order {
		cv := merged[name]
		f := fs.Lookup(name)
		switch {
		case f == nil || name == "config":
			errs = append(errs, fmt.Errorf("config file %s: unknown key %q (keys are the long flag names of k3s-like %s)", cv.file, name, command))
			continue
		case f.Changed:
			continue // the command line wins
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			if err := sv.Replace(cv.values); err != nil {
				errs = append(errs, fmt.Errorf("config file %s: key %q: %w", cv.file, name, err))
			}
			continue
		}
		if cv.list || len(cv.values) != 1 {
			errs = append(errs, fmt.Errorf("config file %s: key %q takes one value, not a list", cv.file, name))
			continue
		}
		if err := f.Value.Set(cv.values[0]); err != nil {
			errs = append(errs, fmt.Errorf("config file %s: key %q: %w", cv.file, name, err))
		}
	}
	return errors.Join(errs...)
}
