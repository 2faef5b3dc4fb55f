package server

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/cli"
)

// parseServer parses args into a fresh server command's flags, then applies
// the config files, as `k3s-like server` does before it runs.
func parseServer(t *testing.T, args []string, files ...string) (*options, error) {
	t.Helper()
	cmd, o := newCommandWithOptions()
	require.NoError(t, cmd.ParseFlags(args))
	return o, cli.ApplyConfig(cmd.Flags(), cli.Server, files)
}

// TestConfigFile: k3s's rules. Keys are the long flag names; repeatable
// flags are lists (or one scalar); a later file replaces a scalar and a
// list; "key+:" appends; the command line overrides every file.
func TestConfigFile(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(main, []byte(`
data-dir: /srv/k3s-like
https-listen-port: 7443
disable-scheduler: true
stop-timeout: 12s
kube-apiserver-arg:
- v=2
- profiling
kube-scheduler-arg: v=3
emulated-version: "1.36"
`), 0o600))
	require.NoError(t, os.MkdirAll(main+".d", 0o700))
	drop1 := filepath.Join(main+".d", "10-more.yaml")
	drop2 := filepath.Join(main+".d", "20-last.yaml")
	require.NoError(t, os.WriteFile(drop1, []byte("kube-apiserver-arg+:\n- audit-log-maxage=3\nhttps-listen-port: 8443\n"), 0o600))
	require.NoError(t, os.WriteFile(drop2, []byte("kube-scheduler-arg: [v=4]\n"), 0o600))
	files, err := cli.ConfigFiles(main, func(string) string { return "" })
	require.NoError(t, err)
	assert.Equal(t, []string{main, drop1, drop2}, files, "the file, then its drop-ins in lexical order")

	o, err := parseServer(t, []string{"--emulated-version=1.37"}, files...)
	require.NoError(t, err)
	assert.Equal(t, "/srv/k3s-like", o.DataDir)
	assert.Equal(t, 8443, o.httpsPort, "a later file replaces a scalar")
	assert.True(t, o.disableScheduler)
	assert.Equal(t, 12*time.Second, o.StopTimeout)
	assert.Equal(t, []string{"v=2", "profiling", "audit-log-maxage=3"}, o.apiserverArgs, "key+: appends")
	assert.Equal(t, []string{"v=4"}, o.schedulerArgs, "a later file replaces a list")
	assert.Equal(t, "1.37", o.emulatedVersion, "the command line overrides the files")
}

// TestConfigFileErrors: an unknown key, a list for a scalar, a value the
// flag refuses and malformed YAML are errors naming the key and the file;
// a --config that does not exist is an error, the default one is optional.
func TestConfigFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
		return p
	}
	for _, tc := range []struct{ name, body, want string }{
		{"unknown", "no-such-flag: 1\n", `unknown key "no-such-flag"`},
		{"dashes", "--data-dir: /x\n", `unknown key "--data-dir"`},
		{"list for a scalar", "data-dir: [a, b]\n", `key "data-dir" takes one value, not a list`},
		{"not a number", "https-listen-port: abc\n", `key "https-listen-port"`},
		{"a map", "data-dir: {a: b}\n", `key "data-dir": want a string, number, boolean or a list of them`},
		{"not yaml", "data-dir: [\n", "config file"},
		{"config in a config", "config: /x\n", `unknown key "config"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := write(tc.name+".yaml", tc.body)
			_, err := parseServer(t, nil, f)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), f, "names the file")
		})
	}
	_, err := cli.ConfigFiles(filepath.Join(dir, "missing.yaml"), func(string) string { return "" })
	assert.ErrorContains(t, err, "missing.yaml")
	_, err = cli.ConfigFiles("", func(k string) string {
		if k == "K3S_LIKE_CONFIG_FILE" {
			return filepath.Join(dir, "env-missing.yaml")
		}
		return ""
	})
	assert.ErrorContains(t, err, "env-missing.yaml", "$K3S_LIKE_CONFIG_FILE is explicit too")
	env := write("env.yaml", "data-dir: /from-env\n")
	files, err := cli.ConfigFiles("", func(k string) string {
		if k == "K3S_LIKE_CONFIG_FILE" {
			return env
		}
		return ""
	})
	require.NoError(t, err)
	assert.Equal(t, []string{env}, files)
}

// TestConfigFileMode: a config file that sets token is as private as a
// token file: readable by group or others is a warning naming the file (in
// a drop-in too), with --protect-files (from the command line or a config
// file) an error; one without the token may be 0644, but writable by group
// or others is a warning (whoever writes it sets the server's flags). The
// token never appears.
func TestConfigFileMode(t *testing.T) {
	const secret = "s3cret-in-config"
	dir := t.TempDir()
	write := func(name, body string, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(body), perm))
		require.NoError(t, os.Chmod(p, perm))
		return p
	}
	noEnv := func(string) string { return "" }
	check := func(args []string, files ...string) (string, error) {
		t.Helper()
		o, err := parseServer(t, append([]string{"--data-dir=" + t.TempDir()}, args...), files...)
		require.NoError(t, err)
		var stderr bytes.Buffer
		err = o.CheckFileModes(&stderr, files, noEnv)
		assert.NotContains(t, stderr.String(), secret)
		if err != nil {
			assert.NotContains(t, err.Error(), secret)
		}
		return stderr.String(), err
	}

	plain := write("plain.yaml", "https-listen-port: 7443\n", 0o644)
	out, err := check(nil, plain)
	require.NoError(t, err)
	assert.Empty(t, out, "a config file without the token may be 0644")

	withToken := write("token.yaml", "token: "+secret+"\n", 0o644)
	out, err = check(nil, withToken)
	require.NoError(t, err)
	assert.Equal(t, "Warning: the config file "+withToken+" (it sets token) is readable by group or others (mode 0644): chmod 600 "+withToken+" (--protect-files makes this an error)\n", out)
	_, err = check([]string{"--protect-files"}, withToken)
	assert.EqualError(t, err, "--protect-files: the config file "+withToken+" (it sets token) is readable by group or others (mode 0644): chmod 600 "+withToken)
	require.NoError(t, os.Chmod(withToken, 0o600))
	out, err = check([]string{"--protect-files"}, withToken)
	require.NoError(t, err)
	assert.Empty(t, out, "0600 is silent")

	main := write("main.yaml", "protect-files: true\n", 0o600)
	dropIn := write("main.yaml.d/10-token.yaml", "token: "+secret+"\n", 0o640)
	files, err := cli.ConfigFiles(main, noEnv)
	require.NoError(t, err)
	_, err = check(nil, files...)
	assert.EqualError(t, err, "--protect-files: the config file "+dropIn+" (it sets token) is readable by group or others (mode 0640): chmod 600 "+dropIn, "a drop-in, and --protect-files from a config file")

	writable := write("writable.yaml", "https-listen-port: 7443\n", 0o664)
	out, err = check(nil, writable)
	require.NoError(t, err)
	assert.Equal(t, "Warning: the config file "+writable+" is writable by group or others (mode 0664): chmod 600 "+writable+" (--protect-files makes this an error)\n", out)
}
