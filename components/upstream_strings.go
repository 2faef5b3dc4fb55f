package components

import "strings"

// Upstream messages that the adapters, or their tests, recognise by text:
// upstream returns or logs them as plain fmt.Errorf strings, with no
// sentinel error or type to match instead. Each constant cites the file of
// the upstream module (at the version go.mod requires) that produces it;
// TestUpstreamStrings reads each of those files from the module cache, and
// provokes the message where that is cheap, so that a Kubernetes bump that
// rewords one fails that test instead of silently changing what the
// adapters do or what the tests look for.
const (
	// upstreamSchedulerStopped is what kube-scheduler's app.Run returns,
	// always, once its context ended with upstream's leader election off
	// (k8s.io/kubernetes cmd/kube-scheduler/app/server.go, Run). Scheduler.Run
	// takes it for a clean stop.
	upstreamSchedulerStopped = "finished without leader elect"

	// upstreamKCMShutdownTimeout is what kube-controller-manager's app.Run
	// returns when controllers were still running at
	// --controller-shutdown-timeout (k8s.io/kubernetes
	// cmd/kube-controller-manager/app/controllermanager.go, Run).
	// ControllerManager.Run logs which controllers it leaves to return on
	// their own.
	upstreamKCMShutdownTimeout = "controller shutdown timeout reached"

	// upstreamInformerNameTaken ends client-go's error for an informer name
	// that is still registered in the process ("informer name %q is already
	// registered"; k8s.io/client-go tools/cache/identity.go,
	// NewInformerName). The restart tests fail on it.
	upstreamInformerNameTaken = "is already registered"

	// upstreamKCMInformerNameFailed is how kube-controller-manager's
	// CreateControllerContext wraps that error ("failed to create informer
	// name: %w"; k8s.io/kubernetes
	// cmd/kube-controller-manager/app/controllermanager.go). The restart
	// tests fail on it.
	upstreamKCMInformerNameFailed = "failed to create informer name"

	// upstreamKCMAPIServerUnhealthy is CreateControllerContext's error when
	// the apiserver's /healthz did not answer ok within 10 s ("failed to
	// wait for apiserver being healthy: %w"; k8s.io/kubernetes
	// cmd/kube-controller-manager/app/controllermanager.go).
	// TestControllerManagerReleasesInformerNameAfterFailure expects it.
	upstreamKCMAPIServerUnhealthy = "failed to wait for apiserver being healthy"

	// upstreamConfigzTwice begins configz's error for a name registered
	// twice ("register config %q twice"; k8s.io/component-base
	// configz/configz.go, New). The restart tests fail on it.
	upstreamConfigzTwice = "register config "

	// upstreamDuplicateMetrics is Prometheus's AlreadyRegisteredError
	// (github.com/prometheus/client_golang prometheus/registry.go), which
	// kube-controller-manager's ReplicaSet controller logs from its second
	// start in a process on (see docs/components.md, "Metrics").
	upstreamDuplicateMetrics = "duplicate metrics collector registration attempted"

	// upstreamHealthzPassed and upstreamHealthzFailed begin each check's
	// line of a verbose /healthz ("[+]%s ok", "[+]%s excluded: ok",
	// "[-]%s failed: reason withheld"; k8s.io/apiserver
	// pkg/server/healthz/healthz.go, handleRootHealth), the check's name
	// next, then a space. listsCheck parses them.
	upstreamHealthzPassed = "[+]"
	upstreamHealthzFailed = "[-]"
)

// listsCheck reports whether a verbose /healthz body (upstreamHealthzPassed
// and upstreamHealthzFailed lines) lists a check with one of checks.
func listsCheck(body string, checks map[string]bool) bool {
	for line := range strings.SplitSeq(body, "\n") {
		rest, ok := strings.CutPrefix(line, upstreamHealthzPassed)
		if !ok {
			rest, ok = strings.CutPrefix(line, upstreamHealthzFailed)
		}
		if name, _, _ := strings.Cut(rest, " "); ok && checks[name] {
			return true
		}
	}
	return false
}
