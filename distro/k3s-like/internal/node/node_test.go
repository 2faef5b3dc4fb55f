package node

import (
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeharness/kubeharness/components/node/kubelet"
	"github.com/kubeharness/kubeharness/components/testenv"
	"github.com/kubeharness/kubeharness/scoping"
)

// TestKubeletProfiling: the node's kubelet, parsed and completed, has
// enableProfilingHandler and enableDebugFlagsHandler off (they serve the
// whole process), its debugging handlers on; with Profiling (a server's
// --enable-pprof) both on.
func TestKubeletProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		b, err := scoping.NewBarrier(testenv.MustPrivateTarget(), scoping.WithLogger(logr.Discard()))
		require.NoError(t, err)
		s, err := b.NewScope(kubelet.Name)
		require.NoError(t, err)
		k := Config{Profiling: profiling}.newKubelet()
		require.NoError(t, k.AddFlags(s))
		require.NoError(t, s.Parse([]string{"--fail-cgroupv1=false"}))
		require.NoError(t, k.Complete(s))
		kc := k.Server().KubeletConfiguration
		assert.Equal(t, profiling, kc.EnableProfilingHandler, "enableProfilingHandler, Profiling=%v", profiling)
		assert.Equal(t, profiling, kc.EnableDebugFlagsHandler, "enableDebugFlagsHandler, Profiling=%v", profiling)
		assert.True(t, kc.EnableDebuggingHandlers, "logs, exec, attach, port-forward")
	}
}
