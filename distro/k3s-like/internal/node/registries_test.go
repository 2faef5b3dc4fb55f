package node

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	srvconfig "github.com/containerd/containerd/v2/cmd/containerd/server/config"
	"github.com/containerd/containerd/v2/core/remotes/docker"
	hostsconfig "github.com/containerd/containerd/v2/core/remotes/docker/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeRegistries(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "registries.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestLoadRegistries(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml")
	r, err := loadRegistries(missing, false)
	require.NoError(t, err, "a missing default file is no mirrors")
	assert.Empty(t, r.Mirrors)
	_, err = loadRegistries(missing, true)
	assert.ErrorContains(t, err, "none.yaml", "a missing file given by name is an error")

	r, err = loadRegistries(writeRegistries(t, `mirrors:
  registry.k8s.io:
    endpoint: ["http://127.0.0.1:5050", "https://mirror.example:8443/"]
  "*":
    endpoint: ["http://127.0.0.1:5051"]
`), true)
	require.NoError(t, err)
	assert.Equal(t, []string{"*", "registry.k8s.io"}, r.hosts())

	for name, text := range map[string]string{
		"configs (credentials) are refused": "mirrors: {}\nconfigs:\n  r.example: {auth: {username: u, password: SECRET}}\n",
		"rewrite is refused":                "mirrors:\n  docker.io:\n    endpoint: [\"http://127.0.0.1:1\"]\n    rewrite: {\"^a\": b}\n",
		"no endpoint":                       "mirrors:\n  docker.io: {}\n",
		"not a URL scheme":                  "mirrors:\n  docker.io:\n    endpoint: [\"ftp://127.0.0.1\"]\n",
		"no host":                           "mirrors:\n  docker.io:\n    endpoint: [\"http://\"]\n",
		"a path":                            "mirrors:\n  docker.io:\n    endpoint: [\"http://127.0.0.1/v2/x\"]\n",
		"credentials in the URL":            "mirrors:\n  docker.io:\n    endpoint: [\"https://u:SECRET@r.example\"]\n",
		"a host with a path":                "mirrors:\n  r.example/x:\n    endpoint: [\"https://r.example\"]\n",
		"not YAML":                          "mirrors: [\n",
	} {
		t.Run(name, func(t *testing.T) {
			p := writeRegistries(t, text)
			_, err := loadRegistries(p, true)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "--private-registry")
			assert.NotContains(t, err.Error(), "SECRET", "the error does not repeat a credential")
		})
	}
}

// TestHostsDir: what writeHostsDir writes is what containerd's own
// hosts.toml reader makes of it: the mirrors first, for pull and resolve
// over their scheme, then the registry itself; "*" applies to every
// other registry; a registry no longer listed loses its mirrors.
func TestHostsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs.d")
	require.NoError(t, writeHostsDir(dir, registries{Mirrors: map[string]registryMirror{
		"registry.k8s.io": {Endpoint: []string{"http://127.0.0.1:5050", "https://mirror.example:8443/"}},
		"docker.io":       {Endpoint: []string{"http://127.0.0.1:5051"}},
	}}))
	hosts := func(ref string) []docker.RegistryHost {
		t.Helper()
		h, err := hostsconfig.ConfigureHosts(context.Background(), hostsconfig.HostOptions{HostDir: hostsconfig.HostDirFromRoot(dir)})(ref)
		require.NoError(t, err)
		return h
	}
	got := hosts("registry.k8s.io")
	require.Len(t, got, 3)
	assert.Equal(t, []string{"http", "127.0.0.1:5050"}, []string{got[0].Scheme, got[0].Host})
	assert.Equal(t, docker.HostCapabilityPull|docker.HostCapabilityResolve, got[0].Capabilities)
	assert.Equal(t, []string{"https", "mirror.example:8443"}, []string{got[1].Scheme, got[1].Host})
	assert.Equal(t, []string{"https", "registry.k8s.io"}, []string{got[2].Scheme, got[2].Host})
	got = hosts("docker.io")
	require.Len(t, got, 2)
	assert.Equal(t, "127.0.0.1:5051", got[0].Host)
	assert.Equal(t, "registry-1.docker.io", got[1].Host)
	require.Len(t, hosts("quay.io"), 1, "an unlisted registry has no mirror")

	require.NoError(t, writeHostsDir(dir, registries{Mirrors: map[string]registryMirror{
		"*": {Endpoint: []string{"http://127.0.0.1:5052"}},
	}}))
	got = hosts("registry.k8s.io")
	require.Len(t, got, 2, "the old registry.k8s.io mirrors are gone")
	assert.Equal(t, "127.0.0.1:5052", got[0].Host, "\"*\" is every registry's mirror")
	assert.Equal(t, "registry.k8s.io", got[1].Host, "then the registry itself")
	_, err := os.Stat(filepath.Join(dir, "registry.k8s.io"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestContainerdConfigRegistry: containerd, loading the node's config as
// it does at start, reads the node's hosts directory as the registry
// configuration of both the CRI's pulls and the transfer service, and the
// transfer service keeps its unpack platform.
func TestContainerdConfigRegistry(t *testing.T) {
	d := newDirs(t.TempDir())
	p := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(p, []byte(containerdConfig(d)), 0o600))
	var cfg srvconfig.Config
	ctx := context.Background()
	require.NoError(t, srvconfig.LoadConfig(ctx, p, &cfg))
	var images struct {
		Registry struct {
			ConfigPath string `toml:"config_path"`
		} `toml:"registry"`
	}
	_, err := cfg.Decode(ctx, "io.containerd.cri.v1.images", &images)
	require.NoError(t, err)
	assert.Equal(t, d.hostsDir(), images.Registry.ConfigPath)
	var transfer struct {
		ConfigPath string `toml:"config_path"`
		Unpack     []struct {
			Platform    string `toml:"platform"`
			Snapshotter string `toml:"snapshotter"`
		} `toml:"unpack_config"`
	}
	_, err = cfg.Decode(ctx, "io.containerd.transfer.v1.local", &transfer)
	require.NoError(t, err)
	assert.Equal(t, d.hostsDir(), transfer.ConfigPath)
	require.Len(t, transfer.Unpack, 1)
	assert.Equal(t, snapshotter, transfer.Unpack[0].Snapshotter)
	assert.NotEmpty(t, transfer.Unpack[0].Platform)
}
