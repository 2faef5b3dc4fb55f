package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/component-base/version"
)

// TestVersion: --version prints the Kubernetes version the binary carries —
// of the minor whose source it was built from (this test is built from the
// same modfile: version.DefaultKubeBinaryVersion), so bin/k3s-like-1.36 says
// v1.36.x — and the kubeharness commit; on a subcommand it prints the same
// and runs nothing; --version=raw prints upstream's raw form; the help
// offers no --version=vX.Y.Z, and a --version that would change the
// reported version is refused before anything runs.
func TestVersion(t *testing.T) {
	run := func(args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(binary, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			require.IsType(t, &exec.ExitError{}, err)
		}
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	minor := regexp.QuoteMeta("v" + version.DefaultKubeBinaryVersion)
	want := regexp.MustCompile(`^k3s-like version (` + minor + `\.\d+\S*)\n` +
		`  kubernetes:  ` + minor + `\.\d+\S*\n` +
		`  kubeharness: \S+\n` +
		`  go:          go\S+ \S+/\S+\n$`)

	out, stderr, code := run("--version")
	require.Equal(t, 0, code, stderr)
	m := want.FindStringSubmatch(out)
	require.NotNil(t, m, "--version: %q", out)
	stamped := m[1]
	assert.NotContains(t, out, "v0.0.0", "built with the version ldflags")

	dataDir := filepath.Join(t.TempDir(), "data")
	out, stderr, code = run("server", "--data-dir="+dataDir, "--version")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, want, out)
	_, err := os.Stat(dataDir)
	assert.True(t, os.IsNotExist(err), "server --version runs nothing")

	out, stderr, code = run("--version=raw")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, `GitVersion:"`+stamped+`"`)
	assert.Regexp(t, `(?m)^kubeharness: \S+$`, out)

	// The flag's help offers no --version=vX.Y.Z (component-base's, which
	// sets the reported version), on the root or a subcommand.
	for _, args := range [][]string{{"--help"}, {"server", "--help"}} {
		out, stderr, code = run(args...)
		require.Equal(t, 0, code, stderr)
		assert.Regexp(t, `(?m)^\s+--version\[=true\]\s+Print k3s-like's version, the Kubernetes version it carries and the Go version, and quit; --version=raw `, out, args)
		assert.NotContains(t, out, "vX.Y.Z", args)
		assert.NotContains(t, out, "sets the reported version", args)
	}

	_, stderr, code = run("--version="+stamped+"-other", "server", "--disable-agent", "--data-dir="+dataDir, "--dry-run")
	assert.Equal(t, 1, code)
	assert.Contains(t, lastLine(stderr), "k3s-like: --version="+stamped+"-other: k3s-like does not change the Kubernetes version it reports")
	_, err = os.Stat(dataDir)
	assert.True(t, os.IsNotExist(err), "a refused --version runs nothing")
}
