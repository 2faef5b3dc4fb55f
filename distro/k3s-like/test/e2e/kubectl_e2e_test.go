package e2e

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// execute runs cmd and returns its stdout, stderr and exit code; it fails
// the test only if cmd could not run at all.
func execute(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "%s", cmd.Args)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// kubectlUser is who the kubectl processes of TestKubectl run as: the
// tests' own user, or nobody when the tests run as root. The default data
// dir is ~/.k3s-like for anyone but root and /var/lib/k3s-like for root
// (as k3s): a test may point $HOME at a temporary directory, but must not
// touch /var/lib.
func kubectlUser() *syscall.SysProcAttr {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// kubectlHome is a new directory for $HOME that the kubectl user owns and
// anyone may traverse, holding bin/k3s-like, the binary under test (a hard
// link, or a copy: TestMain's directory is root's alone), and
// bin/kubectl, a symlink to it.
func kubectlHome(t *testing.T) (home, bin string) {
	home, err := os.MkdirTemp("", "k3s-like-kubectl-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	require.NoError(t, os.MkdirAll(filepath.Join(home, "bin"), 0o755))
	bin = filepath.Join(home, "bin", "k3s-like")
	if err := os.Link(binary, bin); err != nil {
		src, err := os.Open(binary)
		require.NoError(t, err)
		defer src.Close()
		dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
		require.NoError(t, err)
		_, err = io.Copy(dst, src)
		require.NoError(t, err)
		require.NoError(t, dst.Close())
	}
	require.NoError(t, os.Symlink(bin, filepath.Join(home, "bin", "kubectl")))
	if a := kubectlUser(); a != nil {
		for _, p := range []string{home, filepath.Join(home, "bin")} {
			require.NoError(t, os.Chown(p, int(a.Credential.Uid), int(a.Credential.Gid)))
		}
	}
	require.NoError(t, os.Chmod(home, 0o755))
	return home, bin
}

// environ is the test's environment without KUBECONFIG and HOME, then
// HOME=home and extra.
func environ(home string, extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "KUBECONFIG=") || strings.HasPrefix(kv, "HOME=")
	})
	return append(append(env, "HOME="+home), extra...)
}

// TestKubectl: `k3s-like kubectl` is kubectl, with KUBECONFIG defaulting to
// DATA_DIR/admin.kubeconfig of the default data dir ($HOME/.k3s-like), as
// `k3s kubectl`: its arguments, flags included, untouched, its output, its
// errors and exit codes; an explicit --kubeconfig or $KUBECONFIG wins, a
// bad one fails with kubectl's error; an unreadable default gets k3s's
// hint; the binary run as "kubectl" and kubectl plugins work too.
func TestKubectl(t *testing.T) {
	home, bin := kubectlHome(t)
	dataDir := filepath.Join(home, ".k3s-like") // the default data dir of the kubectl user
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	s := newServer(t, dataDir)
	s.start()
	s.waitReady(90 * time.Second)
	require.NoError(t, os.Chmod(dataDir, 0o755))

	kubectl := func(env []string, args ...string) (string, string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"kubectl"}, args...)...)
		cmd.Env = environ(home, env...)
		cmd.SysProcAttr = kubectlUser()
		return execute(t, cmd)
	}

	// The default kubeconfig exists but its user cannot read it: kubectl
	// fails, after k3s's hint.
	require.NoError(t, os.Chmod(kubeconfig, 0o000))
	_, stderr, code := kubectl(nil, "get", "ns")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, stderr, "k3s-like: warning: unable to read "+kubeconfig+": start the server with --write-kubeconfig-mode")
	assert.Contains(t, stderr, "permission denied")
	require.NoError(t, os.Chmod(kubeconfig, 0o644))

	// KUBECONFIG unset, or empty: the default data dir's admin kubeconfig.
	for _, env := range [][]string{nil, {"KUBECONFIG="}} {
		out, stderr, code := kubectl(env, "get", "ns")
		require.Equal(t, 0, code, "%v: %s", env, stderr)
		assert.Empty(t, stderr)
		assert.Regexp(t, `^NAME\s+STATUS\s+AGE\n`, out)
		assert.Regexp(t, `(?m)^kube-system\s+Active\s+\S+$`, out)
		assert.Regexp(t, `(?m)^default\s+Active\s+\S+$`, out)
	}
	// Flags after the command and before it, as kubectl takes them.
	out, stderr, code := kubectl(nil, "get", "ns", "-o", "name")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, strings.Split(out, "\n"), "namespace/kube-system")
	assert.NotContains(t, out, "NAME")
	out, stderr, code = kubectl(nil, "-n", "kube-system", "get", "configmap", "extension-apiserver-authentication", "-o", "jsonpath={.metadata.name}")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "extension-apiserver-authentication", out)
	// stdin is kubectl's.
	cmd := exec.Command(bin, "kubectl", "apply", "-f", "-")
	cmd.Env, cmd.SysProcAttr = environ(home), kubectlUser()
	cmd.Stdin = strings.NewReader("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-stdin\n  namespace: default\ndata:\n  a: b\n")
	out, stderr, code = execute(t, cmd)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "configmap/from-stdin created\n", out)

	// kubectl's own help, not k3s-like's; kubectl's flags only.
	out, _, code = kubectl(nil, "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "kubectl controls the Kubernetes cluster manager")
	assert.NotContains(t, out, "single-binary")
	out, _, code = kubectl(nil, "options")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "--kubeconfig=")
	assert.NotContains(t, out, "--version", "k3s-like's --version is not kubectl's")
	_, stderr, code = kubectl(nil, "--version")
	assert.Equal(t, 1, code)
	assert.Equal(t, "error: unknown flag: --version\nSee 'kubectl --help' for usage.\n", stderr)

	// kubectl's errors and exit codes.
	_, stderr, code = kubectl(nil, "get", "nosuchkind")
	assert.Equal(t, 1, code)
	assert.Equal(t, `error: the server doesn't have a resource type "nosuchkind"`+"\n", stderr)

	// An explicit kubeconfig wins over the default, in each form, and a bad
	// one is kubectl's error.
	bad := filepath.Join(home, "bad.kubeconfig")
	require.NoError(t, os.WriteFile(bad, []byte("this: [is not a kubeconfig\n"), 0o644))
	for _, tc := range []struct {
		env  []string
		args []string
	}{
		{nil, []string{"--kubeconfig=" + bad, "get", "ns"}},
		{nil, []string{"get", "ns", "--kubeconfig", bad}},
		{[]string{"KUBECONFIG=" + bad}, []string{"get", "ns"}},
	} {
		out, stderr, code := kubectl(tc.env, tc.args...)
		assert.Equal(t, 1, code, "%v %v", tc.env, tc.args)
		assert.Empty(t, out)
		assert.True(t, strings.HasPrefix(stderr, `error: error loading config file "`+bad+`"`), "%v %v: %s", tc.env, tc.args, stderr)
	}
	missing := filepath.Join(home, "missing.kubeconfig")
	_, stderr, code = kubectl(nil, "--kubeconfig="+missing, "get", "ns")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, missing)
	// A good explicit one, with $HOME where there is no data dir.
	out, stderr, code = kubectl([]string{"KUBECONFIG=" + kubeconfig, "HOME=" + filepath.Join(home, "bin")}, "get", "ns", "default", "-o", "name")
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "namespace/default\n", out)

	// Run as "kubectl" (a symlink, as k3s installs one), the binary is kubectl.
	cmd = exec.Command(filepath.Join(home, "bin", "kubectl"), "get", "ns", "default", "-o", "name")
	cmd.Env, cmd.SysProcAttr = environ(home), kubectlUser()
	out, stderr, code = execute(t, cmd)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, "namespace/default\n", out)

	// A kubectl plugin on PATH gets its arguments and its exit code is
	// kubectl's.
	plugin := filepath.Join(home, "bin", "kubectl-hello")
	require.NoError(t, os.WriteFile(plugin, []byte("#!/bin/sh\necho \"hello $*\"\nexit 7\n"), 0o755))
	out, stderr, code = kubectl([]string{"PATH=" + filepath.Join(home, "bin") + ":" + os.Getenv("PATH")}, "hello", "a", "--b=c")
	assert.Equal(t, 7, code, stderr)
	assert.Equal(t, "hello a --b=c\n", out)

	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	code, _ = s.wait(30 * time.Second)
	assert.Equal(t, 0, code)
}

// TestKubectlWithoutServer: no server, no data dir: kubectl's own error
// and exit code, nothing written to $HOME but kubectl's own.
func TestKubectlWithoutServer(t *testing.T) {
	home := t.TempDir()
	cmd := exec.Command(binary, "kubectl", "--kubeconfig="+filepath.Join(home, "nope"), "get", "ns")
	cmd.Env = environ(home)
	_, stderr, code := execute(t, cmd)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "nope")
	_, err := os.Stat(filepath.Join(home, ".k3s-like"))
	assert.True(t, os.IsNotExist(err), "kubectl creates no data dir")
}

// TestKubectlTranslations: kubectl, called so or as `k3s-like kubectl`,
// speaks the language of $LANG; the processes containerd starts from the
// same binary (a CNI plugin here) do not load kubectl's catalogs at init.
func TestKubectlTranslations(t *testing.T) {
	home := t.TempDir()
	const german = "Zeige eine oder mehrere Resourcen" // de_DE's "Display one or many resources", get's summary
	link := filepath.Join(home, "kubectl")
	require.NoError(t, os.Symlink(binary, link))
	for _, args := range [][]string{{binary, "kubectl", "--help"}, {link, "--help"}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = environ(home, "LANG=de_DE.UTF-8", "LC_ALL=", "LC_MESSAGES=")
		stdout, stderr, code := execute(t, cmd)
		assert.Equal(t, 0, code, "%q: %s", args, stderr)
		assert.Contains(t, stdout, german, "%q", args)
	}

	plugin := filepath.Join(home, "loopback")
	require.NoError(t, os.Symlink(binary, plugin))
	cmd := exec.Command(plugin)
	cmd.Env = environ(home, "LANG=de_DE.UTF-8", "CNI_COMMAND=VERSION", "GODEBUG=inittrace=1")
	stdout, stderr, code := execute(t, cmd)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "supportedVersions")
	// "init k8s.io/kubectl/pkg/cmd/options @51 ms, 0.005 ms clock, 168 bytes, 4 allocs":
	// the first i18n.T of kubectl's packages; loading the catalogs there
	// allocated 4.4 MB.
	var line string
	for l := range strings.Lines(stderr) {
		if strings.HasPrefix(l, "init k8s.io/kubectl/pkg/cmd/options ") {
			line = strings.TrimSpace(l)
		}
	}
	require.NotEmpty(t, line, "GODEBUG=inittrace=1 names the init of k8s.io/kubectl/pkg/cmd/options")
	fields := strings.Fields(line)
	i := slices.Index(fields, "bytes,")
	require.Positive(t, i, line)
	allocated, err := strconv.Atoi(fields[i-1])
	require.NoError(t, err, line)
	assert.Less(t, allocated, 100_000, "a CNI plugin loaded kubectl's catalogs at init: %s", line)
}
