package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	kubeletopts "k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigconv "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/scoping"
)

// The kubelet's configuration is its flags over its --config file over its
// --config-dir drop-ins, merged as upstream's NewKubeletCommand merges them
// (its helpers are unexported; these follow k8s.io/kubernetes
// cmd/kubelet/app/server.go, identical in v1.36 and v1.37):
//
//  1. the flags are parsed into the defaults (with upstream's legacy
//     defaults for flags);
//  2. --config, if set, replaces those with the file's configuration
//     (defaulted as a v1beta1 file is, with the default hard eviction
//     thresholds merged in);
//  3. each *.conf under --config-dir, in lexical order, is JSON-merge-patched
//     over it, then defaulted again;
//  4. the command line is applied again over the result, so that flags take
//     precedence over files (kubernetes#56171); feature gates from the files
//     that no flag set are kept.
//
// Upstream re-parses its arguments for step 4; the adapter, which is given
// a parsed scope, replays the values its configuration flags were set to,
// in their order (kubeletReplay).

// kubeletSetting is one value a configuration flag was set to.
type kubeletSetting struct{ name, text string }

// kubeletReplay records every value the kubelet's configuration flags are
// set to, in order, so that they can be set again over a configuration
// loaded from files.
type kubeletReplay struct{ settings []kubeletSetting }

// record wraps every flag of fs so that its successful Sets are recorded.
func (r *kubeletReplay) record(fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		f.Value = &replayedValue{Value: f.Value, name: f.Name, replay: r}
	})
}

// over sets the recorded values again on a fresh set of configuration
// flags bound to kc.
func (r *kubeletReplay) over(kc *kubeletconfig.KubeletConfiguration) error {
	fs := pflag.NewFlagSet("kubelet-config", pflag.ContinueOnError)
	kubeletopts.AddKubeletConfigFlags(fs, kc)
	for _, s := range r.settings {
		if err := fs.Set(s.name, s.text); err != nil {
			return fmt.Errorf("--%s=%s over the configuration files: %w", s.name, s.text, err)
		}
	}
	return nil
}

// replayedValue is a flag value whose Sets are recorded in replay.
type replayedValue struct {
	pflag.Value
	name   string
	replay *kubeletReplay
}

// Set sets the value and records it.
func (v *replayedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	v.replay.settings = append(v.replay.settings, kubeletSetting{name: v.name, text: s})
	return nil
}

// kubeletFiles is the kubelet's configuration merged from flags and files,
// with the origin of each feature gate the files set.
type kubeletFiles struct {
	config *kubeletconfig.KubeletConfiguration
	// gates are the feature gates the files set, by origin ("--config=F",
	// "--config-dir=D"); the command line's are in the scope already.
	gates map[string]map[string]bool
	// debug are the process-wide debug handlers the files turn on.
	debug []debugSetting
}

// debugSetting is a file that turns on one of the kubelet's process-wide
// debug handlers: flag is --config or --config-dir, key the field.
type debugSetting struct{ flag, file, key string }

// debugOn is each process-wide debug handler (its profiles and arguments,
// its verbosity) that the JSON object doc turns on.
func debugOn(flag, file string, doc []byte) []debugSetting {
	var fields map[string]any
	if json.Unmarshal(doc, &fields) != nil {
		return nil // the loader reports it
	}
	var out []debugSetting
	for _, k := range [...]string{"enableProfilingHandler", "enableDebugFlagsHandler"} {
		if fields[k] == true {
			out = append(out, debugSetting{flag: flag, file: file, key: k})
		}
	}
	return out
}

// mergeKubeletFiles loads the kubelet's configuration files named by f over
// flagged (the configuration the flags were parsed into), following the
// steps above. With neither --config nor --config-dir, it is flagged.
func mergeKubeletFiles(ctx context.Context, f *kubeletopts.KubeletFlags, flagged *kubeletconfig.KubeletConfiguration, replay *kubeletReplay) (*kubeletFiles, error) {
	out := &kubeletFiles{config: flagged, gates: map[string]map[string]bool{}}
	if f.KubeletConfigFile == "" && f.KubeletDropinConfigDirectory == "" {
		return out, nil
	}
	kc := flagged
	if f.KubeletConfigFile != "" {
		origin := "--config=" + f.KubeletConfigFile
		var err error
		if kc, err = loadKubeletConfigFile(ctx, f.KubeletConfigFile); err != nil {
			return nil, &scoping.FlagError{Component: Name, Flag: "--config", Value: f.KubeletConfigFile, Err: err}
		}
		if raw, err := os.ReadFile(f.KubeletConfigFile); err == nil {
			if doc, err := yaml.YAMLToJSON(raw); err == nil {
				out.debug = append(out.debug, debugOn("--config", f.KubeletConfigFile, doc)...)
			}
		}
		if len(kc.FeatureGates) > 0 {
			out.gates[origin] = maps.Clone(kc.FeatureGates)
		}
	}
	if dir := f.KubeletDropinConfigDirectory; dir != "" {
		before := maps.Clone(kc.FeatureGates)
		if err := mergeKubeletDropins(kc, dir, func(path string, patch []byte) {
			out.debug = append(out.debug, debugOn("--config-dir", path, patch)...)
		}); err != nil {
			return nil, &scoping.FlagError{Component: Name, Flag: "--config-dir", Value: dir, Err: err}
		}
		fromDir := map[string]bool{}
		for name, on := range kc.FeatureGates {
			if was, ok := before[name]; !ok || was != on {
				fromDir[name] = on
				if g := out.gates["--config="+f.KubeletConfigFile]; g != nil {
					delete(g, name)
				}
			}
		}
		if len(fromDir) > 0 {
			out.gates["--config-dir="+dir] = fromDir
		}
	}
	fileGates := kc.FeatureGates
	if err := replay.over(kc); err != nil {
		return nil, &scoping.FlagError{Component: Name, Err: err}
	}
	if kc.FeatureGates == nil {
		kc.FeatureGates = map[string]bool{}
	}
	for name, on := range fileGates { // as upstream: the files' gates no flag set
		if _, ok := kc.FeatureGates[name]; !ok {
			kc.FeatureGates[name] = on
		}
	}
	out.config = kc
	return out, nil
}

// loadKubeletConfigFile is upstream's loadConfigFile: the file, decoded and
// defaulted, with the default hard eviction thresholds when it sets none
// (or merged in, with mergeDefaultEvictionSettings).
func loadKubeletConfigFile(ctx context.Context, name string) (*kubeletconfig.KubeletConfiguration, error) {
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, abs)
	if err != nil {
		return nil, err
	}
	var kc *kubeletconfig.KubeletConfiguration
	if err := defaulting(func() (err error) { kc, err = loader.Load(ctx); return err }); err != nil {
		return nil, err
	}
	if kc.EvictionHard == nil {
		kc.EvictionHard = eviction.DefaultEvictionHard
	} else if kc.MergeDefaultEvictionSettings {
		for k, v := range eviction.DefaultEvictionHard {
			if _, ok := kc.EvictionHard[k]; !ok {
				kc.EvictionHard[k] = v
			}
		}
	}
	return kc, nil
}

// mergeKubeletDropins is upstream's mergeKubeletConfigurations: every *.conf
// file under dir, in lexical order (subdirectories included), merged as a
// JSON merge patch over kc's v1beta1 form, which is then defaulted and
// converted back into kc; seen is given each file's patch. Other files are skipped; a file without
// apiVersion and kind, or with another kind, is an error naming it.
func mergeKubeletDropins(kc *kubeletconfig.KubeletConfiguration, dir string, seen func(path string, patch []byte)) error {
	versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := kubeletconfigconv.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(kc, versioned, nil); err != nil {
		return err
	}
	merged, err := json.Marshal(versioned)
	if err != nil {
		return err
	}
	want := kubeletconfigv1beta1.SchemeGroupVersion.WithKind("KubeletConfiguration")
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(d.Name()) != ".conf" {
			return err
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return err
		}
		loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, abs)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		patch, gvk, err := loader.LoadIntoJSON()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", path, err)
		case gvk == nil || gvk.Empty():
			return fmt.Errorf("%s: no apiVersion/kind", path)
		case *gvk != want:
			return fmt.Errorf("%s: unknown apiVersion/kind %s, want %s", path, gvk, want)
		}
		seen(path, patch)
		if merged, err = jsonpatch.MergePatch(merged, patch); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	versioned = &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := json.Unmarshal(merged, versioned); err != nil {
		return err
	}
	if err := defaulting(func() error { kubeletconfigconv.SetDefaults_KubeletConfiguration(versioned); return nil }); err != nil {
		return err
	}
	return kubeletconfigconv.Convert_v1beta1_KubeletConfiguration_To_config_KubeletConfiguration(versioned, kc, nil)
}

// defaulting runs f, which defaults a v1beta1 KubeletConfiguration, and
// returns upstream's panic as an error: the defaulting panics when the
// configuration's featureGates name a gate the process gate does not know
// (the kubelet command crashes on such a file).
func defaulting(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	return f()
}
