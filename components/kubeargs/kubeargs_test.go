package kubeargs_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/kubeargs"
)

type arg = kubeargs.Arg

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		raw     []string
		want    []arg
		wantErr string
	}{
		{name: "none", raw: nil, want: []arg{}},
		{name: "key=value", raw: []string{"v=2"}, want: []arg{{"v", "2"}}},
		{name: "a value with =", raw: []string{"feature-gates=Foo=true,Bar=false"}, want: []arg{{"feature-gates", "Foo=true,Bar=false"}}},
		{name: "key+=value", raw: []string{"tls-cipher-suites+=X"}, want: []arg{{"tls-cipher-suites+", "X"}}},
		{name: "key-=value", raw: []string{"tls-cipher-suites-=X"}, want: []arg{{"tls-cipher-suites-", "X"}}},
		{name: "an empty value", raw: []string{"empty="}, want: []arg{{"empty", ""}}},
		{name: "in order, repeated", raw: []string{"v=2", "v=3", "a=b"}, want: []arg{{"v", "2"}, {"v", "3"}, {"a", "b"}}},
		{name: "leading dashes, as k3s tolerates", raw: []string{"--v=2", "--bbb+=x"}, want: []arg{{"v", "2"}, {"bbb+", "x"}}},
		{name: "a bare key is true", raw: []string{"profiling", "--contention-profiling"}, want: []arg{{"profiling", "true"}, {"contention-profiling", "true"}}},
		{name: "one leading dash", raw: []string{"-v=2"},
			wantErr: "--kube-scheduler-arg=-v=2: a flag has two leading dashes or none, e.g. --kube-scheduler-arg=v=2"},
		{name: "three leading dashes", raw: []string{"---v=2"}, wantErr: "two leading dashes or none"},
		{name: "no key", raw: []string{"=2"}, wantErr: "--kube-scheduler-arg==2: expected key=value or key"},
		{name: "only +", raw: []string{"+=2"}, wantErr: "--kube-scheduler-arg=+=2: expected key=value or key"},
		{name: "empty", raw: []string{""}, wantErr: "expected key=value or key"},
		{name: "a bad one after good ones", raw: []string{"v=2", "=x"}, wantErr: "--kube-scheduler-arg==x: expected key=value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := kubeargs.Parse("kube-scheduler-arg", tc.raw)
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestMergeK3sCases: k3s's own table for GetArgs (k3s pkg/util/args_test.go,
// Test_UnitGetArgs), its defaults given in key order; k3s sorts its output
// by key, and these cases come out in the same order here.
func TestMergeK3sCases(t *testing.T) {
	defs := func(kv ...string) []arg {
		var out []arg
		for i := 0; i < len(kv); i += 2 {
			out = append(out, arg{kv[i], kv[i+1]})
		}
		return out
	}
	eight := defs("aaa", "A", "bbb", "B", "ccc", "C", "ddd", "d", "eee", "e", "fff", "f", "ggg", "g", "hhh", "h")
	for _, tc := range []struct {
		name     string
		defaults []arg
		user     []string
		want     []string
	}{
		{"Default Test", eight, []string{"bbb=BB", "ddd=DD", "iii=II"},
			[]string{"--aaa=A", "--bbb=BB", "--ccc=C", "--ddd=DD", "--eee=e", "--fff=f", "--ggg=g", "--hhh=h", "--iii=II"}},
		{"Args with existing hyphens Test", eight, []string{"--bbb=BB", "--ddd=DD", "--iii=II"},
			[]string{"--aaa=A", "--bbb=BB", "--ccc=C", "--ddd=DD", "--eee=e", "--fff=f", "--ggg=g", "--hhh=h", "--iii=II"}},
		{"Multiple args with defaults Test", defs("aaa", "A", "bbb", "B"), []string{"--ccc=C", "--bbb=DD", "--bbb=AA"},
			[]string{"--aaa=A", "--bbb=DD", "--bbb=AA", "--ccc=C"}},
		{"Multiple args with defaults and prefix", defs("aaa", "A", "bbb", "B"), []string{"--ccc=C", "--bbb-=DD"},
			[]string{"--aaa=A", "--bbb=DD", "--bbb=B", "--ccc=C"}},
		{"Multiple args with defaults and suffix", defs("aaa", "A", "bbb", "B"), []string{"--ccc=C", "--bbb+=DD"},
			[]string{"--aaa=A", "--bbb=B", "--bbb=DD", "--ccc=C"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, err := kubeargs.Parse("kube-apiserver-arg", tc.user)
			require.NoError(t, err)
			assert.Equal(t, tc.want, kubeargs.Merge(tc.defaults, nil, user))
		})
	}
}

// TestMerge: the rest of k3s's rules, and the shorthands.
func TestMerge(t *testing.T) {
	defaults := []arg{{"secure-port", "10259"}, {"bind-address", "127.0.0.1"}, {"authorization-always-allow-paths", "/healthz"}}
	for _, tc := range []struct {
		name            string
		defaults, short []arg
		user            []arg
		want            []string
	}{
		{name: "defaults only", defaults: defaults,
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz"}},
		{name: "nothing", want: nil},
		{name: "a user value replaces its default, in the default's place", defaults: defaults, user: []arg{{"secure-port", "20000"}},
			want: []string{"--secure-port=20000", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz"}},
		{name: "a key given twice is two arguments", defaults: defaults, user: []arg{{"secure-port", "1"}, {"secure-port", "2"}},
			want: []string{"--secure-port=1", "--secure-port=2", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz"}},
		{name: "key+ twice appends both after the default", defaults: defaults, user: []arg{{"authorization-always-allow-paths+", "/readyz"}, {"authorization-always-allow-paths+", "/livez"}},
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz", "--authorization-always-allow-paths=/readyz", "--authorization-always-allow-paths=/livez"}},
		{name: "key- then key+ (k3s: the second keeps what the first made)", defaults: defaults, user: []arg{{"authorization-always-allow-paths-", "/a"}, {"authorization-always-allow-paths+", "/b"}},
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/a", "--authorization-always-allow-paths=/healthz", "--authorization-always-allow-paths=/b"}},
		{name: "key+ then a plain value: the plain one is added to what key+ made (k3s)", defaults: defaults, user: []arg{{"authorization-always-allow-paths+", "/b"}, {"authorization-always-allow-paths", "/a"}},
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz", "--authorization-always-allow-paths=/b", "--authorization-always-allow-paths=/a"}},
		{name: "key+ without a default is key=value", user: []arg{{"v+", "2"}}, want: []string{"--v=2"}},
		{name: "key- without a default is key=value", user: []arg{{"v-", "2"}}, want: []string{"--v=2"}},
		{name: "other user flags after the shorthands, in order", defaults: defaults[:1], short: []arg{{"feature-gates", "Foo=true"}},
			user: []arg{{"v", "2"}, {"feature-gates", "Bar=true"}, {"secure-port", "20000"}, {"v", "3"}},
			want: []string{"--secure-port=20000", "--feature-gates=Foo=true", "--v=2", "--v=3", "--feature-gates=Bar=true"}},
		{name: "an empty value", defaults: defaults[:1], user: []arg{{"secure-port", ""}}, want: []string{"--secure-port="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, kubeargs.Merge(tc.defaults, tc.short, tc.user))
		})
	}
}

func ExampleMerge() {
	defaults := []kubeargs.Arg{{Key: "secure-port", Value: "10259"}, {Key: "authorization-always-allow-paths", Value: "/healthz"}}
	shorthands := []kubeargs.Arg{{Key: "feature-gates", Value: "Foo=true"}} // the distro's --feature-gates, for every component
	user, err := kubeargs.Parse("kube-scheduler-arg", []string{"v=2", "authorization-always-allow-paths+=/readyz", "feature-gates=Bar=true"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range kubeargs.Merge(defaults, shorthands, user) {
		fmt.Println(a)
	}
	// Output:
	// --secure-port=10259
	// --authorization-always-allow-paths=/healthz
	// --authorization-always-allow-paths=/readyz
	// --feature-gates=Foo=true
	// --v=2
	// --feature-gates=Bar=true
}

func TestValue(t *testing.T) {
	args := []string{"--secure-port=6443", "--feature-gates=A=true", "--v=2", "--feature-gates=B=false", "--empty="}
	for _, tc := range []struct {
		key    string
		want   string
		wantOK bool
	}{
		{"secure-port", "6443", true},
		{"feature-gates", "B=false", true}, // the last wins, as in upstream's parsing
		{"empty", "", true},
		{"v", "2", true},
		{"secure", "", false}, // a prefix of a key is not the key
		{"missing", "", false},
	} {
		got, ok := kubeargs.Value(args, tc.key)
		assert.Equal(t, tc.wantOK, ok, tc.key)
		assert.Equal(t, tc.want, got, tc.key)
	}
}
