package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/components"

	"github.com/kubeharness/kubeharness/components/testenv"
)

// TestTwoServersSurviveDatastorePause (issue 18, scenario 2): two servers
// share one external etcd (as TestHA: one token, one PKI), and etcd is
// paused (SIGSTOP) as in TestSurvivesDatastorePause. Neither server exits;
// both leases are held (renewed after the resume) again within 30 s; a
// Deployment created after each resume has its Pods bound; what was
// written before reads back through both apiservers. And at no time do two
// instances lead the same lease, checked two ways, each of which fails if
// two servers led at once:
//
//   - Leadership spans from the servers' logs (JSON, one clock: one
//     machine). A span opens at the elector's "Leader election: acquired
//     the lease, starting", logged after the lease was written and before
//     the component's work is called; it closes at the harness's
//     "Component state … recovering" (or failed, or stopped) for that
//     component, logged after the elector's run returned, which it does
//     only once the work has returned. So a span covers all the work done under that lease; two
//     spans of one lease that intersect mean two instances ran that
//     component's work at the same time — on two servers, or on one: the
//     successor of a demoted instance campaigns with its identity and
//     renews the lease at once, which is safe only if it starts after the
//     old instance's work ended. A span still open when the logs are read
//     counts as running until then. Every holder the Lease samples saw
//     must have such a span, so that no acquisition escapes the check.
//   - The Lease objects, sampled every 200 ms through both apiservers
//     (errors during the pause are expected and only counted), ordered by
//     resourceVersion. When the holder changes from X to Y without a
//     released record (no holder) in between, Y's acquireTime must not be
//     before X's last renewTime + X's leaseDurationSeconds (1 s slack): a
//     client-go candidate takes over only a lease it observed unchanged
//     for a whole lease duration, and it observed X's last renewal after X
//     wrote it. A takeover of a live lease breaks this. A missed sample
//     only makes X's renewTime older, i.e. the check weaker, never wrong —
//     except a missed release, which the servers do only on stop (after
//     the sampling) or when a component's work returns on its own (then
//     the server exits, which fails the test anyway). The holder changes
//     only when the other server wins the race after the resume: a
//     demoted instance's successor keeps its identity.
//
// A pause longer than the renew deadline plus a retry period (10 + 2 s)
// must demote the holder of both leases: for each, a new span starts after
// the resume (a re-election, on either server), so that the span check
// has a hand-over to check. Each pause logs "FAULT etcd-pause-two-servers
// …" (make faults: pauses of 5, 15 and 30 s), and the re-elections and
// holder changes behind it.
func TestTwoServersSurviveDatastorePause(t *testing.T) {
	servers, names, etcdProc := twoServers(t)
	a := servers[0]
	// A leads; a pause while its controller-manager builds its controllers
	// can exit the process (waitControllersBuilt): seen here, exit 255.
	waitControllersBuilt(t, a)

	ctx := t.Context()
	clients := []kubernetes.Interface{a.client(), servers[1].client()}
	createReadyNode(ctx, t, clients[0], "node-1")
	_, err := clients[0].CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	leases := []string{components.SchedulerName, components.ControllerManagerName}
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, c := range clients {
			for _, l := range leases {
				_, fresh := leaseFresh(ctx, c, l, time.Now().Add(-time.Minute))
				assert.True(ct, fresh, l)
			}
		}
	}, time.Minute, 500*time.Millisecond, "both leases held before the pause")

	samples, stopSamplers := sampleLeases(ctx, clients, leases)
	defer stopSamplers()

	running := func(when string) {
		t.Helper()
		for i, s := range servers {
			select {
			case <-s.exited:
				t.Fatalf("server %s exited %s: %v\n%s", names[i], when, s.exitErr, testenv.Tail(s.stderr.String(), 40))
			default:
			}
		}
	}
	reported := map[string]map[int64]bool{} // lease → the new holder's resourceVersion of each change logged
	var deployed []string
	for i, pause := range faultPauses(t) {
		paused := time.Now()
		require.NoError(t, etcdProc.Signal(syscall.SIGSTOP))
		time.Sleep(pause)
		require.NoError(t, etcdProc.Signal(syscall.SIGCONT))
		resumed := time.Now()
		running(fmt.Sprintf("during a %s datastore pause", pause))

		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			for ci, c := range clients {
				for _, l := range leases {
					_, fresh := leaseFresh(ctx, c, l, resumed)
					assert.True(ct, fresh, "%s renewed after the resume (read through server %s)", l, names[ci])
				}
			}
		}, 30*time.Second, 200*time.Millisecond, "both leases held again within 30 s of the resume")
		recovered := time.Since(resumed)

		deploy := fmt.Sprintf("two-servers-after-%d", i)
		deployAndWaitBound(ctx, t, clients[i%2], deploy, 2, "node-1")
		deployed = append(deployed, deploy)
		lost := objectsLost(ctx, t, clients, names, deployed)
		running("after the resume")

		// No two leaders: the leadership spans from the logs, then the
		// Lease records.
		spans := leadSpans(t, servers, names)
		overlaps := spanOverlaps(spans, time.Now())
		for _, o := range overlaps {
			t.Errorf("two instances led at once: %s", o)
		}
		owner := spanOwners(spans) // identity → server
		changes := samples.changes()
		round := map[string]int{}
		total := 0
		for _, l := range leases {
			for _, h := range samples.holders(l) {
				assert.Contains(t, owner, h, "lease %s held by %s, which no server logged acquiring", l, h)
			}
			if reported[l] == nil {
				reported[l] = map[int64]bool{}
			}
			for _, ch := range changes[l] {
				if reported[l][ch.to.rv] {
					continue
				}
				reported[l][ch.to.rv] = true
				round[l]++
				t.Logf("holder change: %s", ch.describe(owner))
				if ch.early() {
					t.Errorf("lease %s taken over before it expired: %s", l, ch.describe(owner))
				}
			}
			total += round[l]
			reelected := reElections(spans[l], paused)
			for _, r := range reelected {
				t.Logf("re-election: %s", r)
			}
			if pause > 12*time.Second {
				assert.NotEmpty(t, reelected, "a %s pause (longer than the renew deadline + a retry period) demotes the holder of lease %s, and a new instance leads it after the resume", pause, l)
			}
		}
		reads, failed := samples.counts()
		t.Logf("lease samples so far: %d reads, %d failed (during the pauses); holder changes this pause: scheduler %d, controller-manager %d",
			reads, failed, round[components.SchedulerName], round[components.ControllerManagerName])
		t.Logf("FAULT etcd-pause-two-servers pause=%s survived=yes leases-held-again-after=%s holder-changes=%d overlaps=%d objects-lost=%d",
			pause, recovered.Round(100*time.Millisecond), total, len(overlaps), lost)
	}
	stopSamplers()

	for _, s := range servers {
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	}
	for i, s := range servers {
		code, took := s.wait(30 * time.Second)
		assert.Equal(t, 0, code, "server %s's exit code after SIGTERM (took %s)\n%s", names[i], took, testenv.Tail(s.stderr.String(), 30))
	}
}

// twoServers starts two servers on one external etcd (as TestHA: one
// token, one PKI), with JSON logs (leadSpans reads the leadership spans
// from them): A, then B once A is ready. It returns them, their names
// and the etcd process.
func twoServers(t *testing.T) (servers []*server, names []string, etcdProc *os.Process) {
	flags, etcdProc := etcdProcess(t)
	ha := slices.Concat(flags, []string{"--token=e2e-secret", "--logging-format=json"})
	a, b := newServer(t, t.TempDir()), newServer(t, t.TempDir())
	a.start(ha...)
	a.waitReady(2 * time.Minute)
	b.start(ha...)
	b.waitReady(2 * time.Minute)
	return []*server{a, b}, []string{"A", "B"}, etcdProc
}

// sampleLeases reads the leases through each client every 200 ms (run)
// until stop, which may be called more than once, returns.
func sampleLeases(ctx context.Context, clients []kubernetes.Interface, leases []string) (samples *leaseSamples, stop func()) {
	samples = &leaseSamples{records: map[string]map[int64]leaseRecord{}}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var sampling sync.WaitGroup
	for _, c := range clients {
		sampling.Go(func() { samples.run(sampleCtx, c, leases) })
	}
	return samples, sync.OnceFunc(func() { stopSampling(); sampling.Wait() })
}

// objectsLost reads back, through every client, what was written before
// the pauses: the ConfigMap "before", the node, and the Deployments of
// earlier rounds; it returns how many of them are missing (or wrong)
// through at least one client, each an error of the test.
func objectsLost(ctx context.Context, t *testing.T, clients []kubernetes.Interface, names []string, deployments []string) int {
	t.Helper()
	checks := map[string]func(kubernetes.Interface) error{
		"configmap default/before": func(c kubernetes.Interface) error {
			cm, err := c.CoreV1().ConfigMaps("default").Get(ctx, "before", metav1.GetOptions{})
			if err == nil && cm.Data["k"] != "v" {
				err = fmt.Errorf("data %v, want k=v", cm.Data)
			}
			return err
		},
		"node node-1": func(c kubernetes.Interface) error {
			_, err := c.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
			return err
		},
	}
	for _, d := range deployments {
		checks["deployment default/"+d] = func(c kubernetes.Interface) error {
			_, err := c.AppsV1().Deployments("default").Get(ctx, d, metav1.GetOptions{})
			return err
		}
	}
	lost := 0
	for what, check := range checks {
		ok := true
		for i, c := range clients {
			if err := check(c); err != nil {
				t.Errorf("%s, written before, does not read back through server %s: %v", what, names[i], err)
				ok = false
			}
		}
		if !ok {
			lost++
		}
	}
	return lost
}

// leaseRecord is one version of a Lease, as a sampler read it.
type leaseRecord struct {
	rv       int64
	seen     time.Time // first read
	holder   string
	acquire  time.Time
	renew    time.Time
	duration time.Duration
}

// leaseSamples collects the versions of the Lease objects the samplers
// read.
type leaseSamples struct {
	mu      sync.Mutex
	records map[string]map[int64]leaseRecord // lease → resourceVersion → record
	reads   int
	failed  int
}

// run reads the leases through c every 200 ms until ctx ends; each read
// has a second (the datastore may be paused).
func (s *leaseSamples) run(ctx context.Context, c kubernetes.Interface, leases []string) {
	for ctx.Err() == nil {
		for _, name := range leases {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			l, err := c.CoordinationV1().Leases("kube-system").Get(rctx, name, metav1.GetOptions{})
			cancel()
			now := time.Now()
			var rv int64
			if err == nil {
				rv, err = strconv.ParseInt(l.ResourceVersion, 10, 64)
			}
			s.mu.Lock()
			s.reads++
			if err != nil {
				s.failed++
				s.mu.Unlock()
				continue
			}
			if s.records[name] == nil {
				s.records[name] = map[int64]leaseRecord{}
			}
			if _, ok := s.records[name][rv]; !ok {
				r := leaseRecord{rv: rv, seen: now}
				if l.Spec.HolderIdentity != nil {
					r.holder = *l.Spec.HolderIdentity
				}
				if l.Spec.AcquireTime != nil {
					r.acquire = l.Spec.AcquireTime.Time
				}
				if l.Spec.RenewTime != nil {
					r.renew = l.Spec.RenewTime.Time
				}
				if l.Spec.LeaseDurationSeconds != nil {
					r.duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
				}
				s.records[name][rv] = r
			}
			s.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (s *leaseSamples) counts() (reads, failed int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.failed
}

// history is the lease's versions in resourceVersion order.
func (s *leaseSamples) history(lease string) []leaseRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []leaseRecord
	for _, r := range s.records[lease] {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b leaseRecord) int { return cmp.Compare(a.rv, b.rv) })
	return out
}

// holders are the non-empty holder identities seen for lease.
func (s *leaseSamples) holders(lease string) []string {
	var out []string
	for _, r := range s.history(lease) {
		if r.holder != "" && !slices.Contains(out, r.holder) {
			out = append(out, r.holder)
		}
	}
	return out
}

// holderChange is a lease passing from one holder to another.
type holderChange struct {
	lease    string
	from, to leaseRecord // from: the last version the old holder wrote
	released bool        // a version without holder was seen in between
}

// margin is how long after the old holder's lease expired the new holder
// acquired it (negative: before).
func (c holderChange) margin() time.Duration {
	return c.to.acquire.Sub(c.from.renew.Add(c.from.duration))
}

// early: taken over while the old holder's lease was still valid (beyond a
// second of slack), or without an acquireTime at all.
func (c holderChange) early() bool {
	return !c.released && (c.to.acquire.IsZero() || c.from.renew.IsZero() || c.margin() < -time.Second)
}

func (c holderChange) describe(owner map[string]string) string {
	return fmt.Sprintf("%s: %s (server %s, renewed %s, %s) → %s (server %s, acquired %s): released=%v, acquired %s after the old lease expired",
		c.lease, c.from.holder, owner[c.from.holder], c.from.renew.Format("15:04:05.000"), c.from.duration,
		c.to.holder, owner[c.to.holder], c.to.acquire.Format("15:04:05.000"), c.released, c.margin().Round(time.Millisecond))
}

// changes are the holder changes of each lease, in order.
func (s *leaseSamples) changes() map[string][]holderChange {
	s.mu.Lock()
	leases := make([]string, 0, len(s.records))
	for l := range s.records {
		leases = append(leases, l)
	}
	s.mu.Unlock()
	out := map[string][]holderChange{}
	for _, l := range leases {
		var (
			last     *leaseRecord // the last version with a holder
			released bool
		)
		for _, r := range s.history(l) {
			switch {
			case r.holder == "":
				released = true
				continue
			case last != nil && r.holder != last.holder:
				out[l] = append(out[l], holderChange{lease: l, from: *last, to: r, released: released})
			}
			released = false
			last = &r
		}
	}
	return out
}

// leadSpan is the time one instance (identity) of a component on one
// server ran its work under the lease: from "acquired the lease, starting"
// to the harness's "Component state … recovering" (failed, stopped); end
// is zero while open.
type leadSpan struct {
	server, identity string
	start, end       time.Time
}

// leadSpans reads every server's JSON log: the leadership spans of each
// lease. It fails the test if it finds no JSON log line or no span at all
// (the log format changed: the check would be empty).
func leadSpans(t *testing.T, servers []*server, names []string) map[string][]leadSpan {
	t.Helper()
	out := map[string][]leadSpan{}
	for i, s := range servers {
		parsed := 0
		open := map[string]int{} // lease → index in out[lease] of its open span
		for line := range strings.SplitSeq(s.stderr.String(), "\n") {
			if !strings.HasPrefix(line, "{") {
				continue
			}
			var entry struct {
				TS        float64 `json:"ts"`
				Msg       string  `json:"msg"`
				Lease     string  `json:"lease"`
				Identity  string  `json:"identity"`
				Component string  `json:"component"`
				State     any     `json:"state"`
			}
			if json.Unmarshal([]byte(line), &entry) != nil {
				continue
			}
			parsed++
			// component-base's JSON logs: milliseconds since the epoch.
			ts := time.UnixMicro(int64(entry.TS * 1000))
			if entry.TS < 1e12 { // seconds
				ts = time.UnixMicro(int64(entry.TS * 1e6))
			}
			switch {
			case entry.Msg == "Leader election: acquired the lease, starting":
				// A span still open stays open (running until now):
				// spanOverlaps reports the two.
				open[entry.Lease] = len(out[entry.Lease])
				out[entry.Lease] = append(out[entry.Lease], leadSpan{server: names[i], identity: entry.Identity, start: ts})
			case entry.Msg == "Component state":
				// Leases are named after their components.
				st := strings.ToLower(fmt.Sprint(entry.State))
				if j, ok := open[entry.Component]; ok && (st == "recovering" || st == "failed" || st == "stopped") {
					out[entry.Component][j].end = ts
					delete(open, entry.Component)
				}
			}
		}
		require.Positive(t, parsed, "server %s wrote no JSON log line", names[i])
	}
	require.NotEmpty(t, out, "no \"acquired the lease\" line in either server's log")
	return out
}

// spanOverlaps describes every pair of spans of one lease that intersect,
// on two servers or on one (the successor of a demoted instance campaigns
// with its identity: it must not start before the old one's work ended);
// an open span runs until now.
func spanOverlaps(spans map[string][]leadSpan, now time.Time) []string {
	var out []string
	endOf := func(s leadSpan) time.Time {
		if s.end.IsZero() {
			return now
		}
		return s.end
	}
	for lease, ss := range spans {
		for i, x := range ss {
			for _, y := range ss[i+1:] {
				from, to := x.start, endOf(x)
				if y.start.After(from) {
					from = y.start
				}
				if endOf(y).Before(to) {
					to = endOf(y)
				}
				if from.Before(to) {
					out = append(out, fmt.Sprintf("lease %s: server %s (%s, %s–%s) and server %s (%s, %s–%s) for %s",
						lease, x.server, x.identity, x.start.Format("15:04:05.000"), endOf(x).Format("15:04:05.000"),
						y.server, y.identity, y.start.Format("15:04:05.000"), endOf(y).Format("15:04:05.000"), to.Sub(from)))
				}
			}
		}
	}
	return out
}

// reElections describes the spans that started after since, each with the
// span before it (by start) and how long the lease had no leader between
// the two.
func reElections(spans []leadSpan, since time.Time) []string {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b leadSpan) int { return a.start.Compare(b.start) })
	var out []string
	for i, s := range spans {
		if !s.start.After(since) {
			continue
		}
		desc := fmt.Sprintf("server %s (%s) leads from %s", s.server, s.identity, s.start.Format("15:04:05.000"))
		if i > 0 {
			prev := spans[i-1]
			switch {
			case prev.end.IsZero():
				desc += fmt.Sprintf(", server %s (%s) still leading", prev.server, prev.identity)
			default:
				desc += fmt.Sprintf(", after server %s (%s, same identity %v) stopped at %s: %s without a leader",
					prev.server, prev.identity, prev.identity == s.identity, prev.end.Format("15:04:05.000"), s.start.Sub(prev.end).Round(time.Millisecond))
			}
		}
		out = append(out, desc)
	}
	return out
}
