package node

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/atomicfile"
)

// defaultRegistriesFile is --private-registry's default, read only if it
// exists (as k3s reads /etc/rancher/k3s/registries.yaml).
const defaultRegistriesFile = "/etc/k3s-like/registries.yaml"

// registries is k3s's registries.yaml, the part k3s-like supports:
// mirrors, by registry host ("*" for every registry), each a list of
// endpoints containerd tries in order before the registry itself.
type registries struct {
	Mirrors map[string]registryMirror `json:"mirrors"`
}

// registryMirror is one registry's mirrors.
type registryMirror struct {
	Endpoint []string `json:"endpoint"`
}

// loadRegistries reads the registries file at path. A missing file is no
// mirrors if path is the default, an error otherwise. Unknown keys
// (k3s's configs, with credentials and TLS files, and rewrite) are errors
// naming the file, and so are endpoints that are not http(s) URLs of a
// host.
func loadRegistries(path string, explicit bool) (registries, error) {
	var r registries
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("--private-registry: %w", err)
	}
	if err := yaml.UnmarshalStrict(b, &r); err != nil {
		return r, fmt.Errorf("--private-registry %s: %w (k3s-like reads mirrors.HOST.endpoint only)", path, err)
	}
	for _, host := range r.hosts() {
		if host != "*" && (host == "" || strings.ContainsAny(host, "/ \t") || strings.HasPrefix(host, ".")) {
			return r, fmt.Errorf("--private-registry %s: mirrors.%q: not a registry host (such as registry.k8s.io or docker.io, or \"*\")", path, host)
		}
		if len(r.Mirrors[host].Endpoint) == 0 {
			return r, fmt.Errorf("--private-registry %s: mirrors.%q: no endpoint", path, host)
		}
		for i, e := range r.Mirrors[host].Endpoint {
			u, err := url.Parse(e)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil || u.RawQuery != "" {
				shown := "(not a URL)"
				if err == nil {
					shown = u.Redacted() // never repeat a password
				}
				return r, fmt.Errorf("--private-registry %s: mirrors.%q.endpoint[%d] = %s: want http:// or https:// and a host[:port], without credentials, path or query", path, host, i, shown)
			}
		}
	}
	return r, nil
}

// hosts are the mirrored registries, sorted.
func (r registries) hosts() []string {
	hosts := make([]string, 0, len(r.Mirrors))
	for h := range r.Mirrors {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
}

// hostsDir is the directory of containerd's hosts.toml files for the
// node on d (containerd's registry config_path).
func (d dirs) hostsDir() string { return filepath.Join(d.agent, "etc", "containerd", "certs.d") }

// writeHostsDir makes dir hold exactly r's mirrors as containerd reads
// them: DIR/HOST/hosts.toml ("_default" for "*"), the upstream registry
// as the server, the mirrors as hosts tried first, for pull and resolve.
// A registry no longer mirrored loses its directory.
func writeHostsDir(dir string, r registries) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, host := range r.hosts() {
		var b strings.Builder
		sub := host
		if host == "*" {
			sub = "_default"
		} else {
			server := "https://" + host
			if host == "docker.io" {
				server = "https://registry-1.docker.io"
			}
			fmt.Fprintf(&b, "server = %s\n", strconv.Quote(server))
		}
		for _, e := range r.Mirrors[host].Endpoint {
			fmt.Fprintf(&b, "\n[host.%s]\n  capabilities = [\"pull\", \"resolve\"]\n", strconv.Quote(strings.TrimSuffix(e, "/")))
		}
		if err := atomicfile.Write(filepath.Join(dir, sub, "hosts.toml"), []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	return nil
}
