package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// isManifest reports whether a file name in the directory is a manifest
// (not a .skip file, not a hidden or temporary file).
func isManifest(name string) bool {
	switch filepath.Ext(name) {
	case ".yaml", ".yml", ".json":
		return !strings.HasPrefix(name, ".")
	}
	return false
}

// decodeManifest returns the objects of a YAML (multi-document) or JSON
// manifest; a List's items are objects. An error names the file and the
// document (counted from 1); a file with one is applied not at all.
func decodeManifest(file string, data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for doc := 1; ; doc++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		j, err := yaml.YAMLToJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
			continue // empty, or only comments
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
		}
		items := []*unstructured.Unstructured{obj}
		if obj.IsList() {
			list, err := obj.ToList()
			if err != nil {
				return nil, fmt.Errorf("%s: document %d: %w", file, doc, err)
			}
			items = items[:0]
			for i := range list.Items {
				items = append(items, &list.Items[i])
			}
		}
		for _, o := range items {
			if o.GetAPIVersion() == "" || o.GetKind() == "" || o.GetName() == "" {
				return nil, fmt.Errorf("%s: document %d: an object needs apiVersion, kind and metadata.name (got %q, %q, %q)", file, doc, o.GetAPIVersion(), o.GetKind(), o.GetName())
			}
			objs = append(objs, o)
		}
	}
}

// appliedObject is one object a file applied, as its record lists it.
type appliedObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

func (a appliedObject) String() string {
	if a.Namespace == "" {
		return fmt.Sprintf("%s %s (%s)", a.Kind, a.Name, a.APIVersion)
	}
	return fmt.Sprintf("%s %s/%s (%s)", a.Kind, a.Namespace, a.Name, a.APIVersion)
}

// recordName is the name of a manifest file's record.
func recordName(file string) string {
	base := strings.ToLower(strings.TrimSuffix(file, filepath.Ext(file)))
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, base)
	return strings.Trim(manifestRecordPrefix+name, "-.")
}
