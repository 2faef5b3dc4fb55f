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
		{name: "an empty value", raw: []string{"empty="}, want: []arg{{"empty", ""}}},
		{name: "in order, repeated", raw: []string{"v=2", "v=3", "a=b"}, want: []arg{{"v", "2"}, {"v", "3"}, {"a", "b"}}},
		{name: "leading dashes", raw: []string{"--v=2"},
			wantErr: "--kube-scheduler-arg=--v=2: write the upstream flag without leading dashes, e.g. --kube-scheduler-arg=v=2"},
		{name: "one leading dash", raw: []string{"-v=2"},
			wantErr: "--kube-scheduler-arg=-v=2: write the upstream flag without leading dashes, e.g. --kube-scheduler-arg=v=2"},
		{name: "no =", raw: []string{"v"}, wantErr: "--kube-scheduler-arg=v: expected key=value, e.g. --kube-scheduler-arg=v=2"},
		{name: "no key", raw: []string{"=2"}, wantErr: "--kube-scheduler-arg==2: expected key=value"},
		{name: "only +", raw: []string{"+=2"}, wantErr: "--kube-scheduler-arg=+=2: expected key=value"},
		{name: "a bad one after good ones", raw: []string{"v=2", "x"}, wantErr: "--kube-scheduler-arg=x: expected key=value"},
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
		{name: "the last of several replacements wins", defaults: defaults, user: []arg{{"secure-port", "1"}, {"secure-port", "2"}},
			want: []string{"--secure-port=2", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz"}},
		{name: "key+ appends with a comma", defaults: defaults, user: []arg{{"authorization-always-allow-paths+", "/readyz"}, {"authorization-always-allow-paths+", "/livez"}},
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/healthz,/readyz,/livez"}},
		{name: "a replacement then key+", defaults: defaults, user: []arg{{"authorization-always-allow-paths", "/a"}, {"authorization-always-allow-paths+", "/b"}},
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/a,/b"}},
		{name: "key+ then a replacement", defaults: defaults, user: []arg{{"authorization-always-allow-paths+", "/b"}, {"authorization-always-allow-paths", "/a"}},
			want: []string{"--secure-port=10259", "--bind-address=127.0.0.1", "--authorization-always-allow-paths=/a"}},
		{name: "key+ without a default is key=value", user: []arg{{"v+", "2"}}, want: []string{"--v=2"}},
		{name: "other user flags after the shorthands, in order", defaults: defaults[:1], short: []arg{{"feature-gates", "Foo=true"}},
			user: []arg{{"v", "2"}, {"feature-gates", "Bar=true"}, {"secure-port", "20000"}},
			want: []string{"--secure-port=20000", "--feature-gates=Foo=true", "--v=2", "--feature-gates=Bar=true"}},
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
	// --authorization-always-allow-paths=/healthz,/readyz
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
