package main

import (
	"math"
	"testing"
	"time"
)

// TestGCTrace: gctrace lines are read among other output (forced cycles
// marked, a malformed line skipped), and a run's window adds up the
// cycles that started in it, per process from its own start, with the
// last cycle before the window's end giving live and goal — a forced one
// not, nor a cycle after the end.
func TestGCTrace(t *testing.T) {
	out := []byte(`I1203 log line
gc 1 @0.500s 2%: 0.1+20+0.01 ms clock, 0.2+0/10/0+0.02 ms cpu, 4->5->3 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P
gc 2 @2.000s 5%: 0.1+300+0.01 ms clock, 0.2+0/10/0+0.02 ms cpu, 100->120->60 MB, 110 MB goal, 1 MB stacks, 0 MB globals, 2 P
gc 3 @2.500s 5%: 0.1+100+0.01 ms clock, 0.2+0/10/0+0.02 ms cpu, 70->71->50 MB, 121 MB goal, 1 MB stacks, 0 MB globals, 2 P (forced)
gc 4 @garbage
gc 5 @9.000s 5%: 0.1+50+0.01 ms clock, 0.2+0/10/0+0.02 ms cpu, 110->112->80 MB, 100 MB goal, 1 MB stacks, 0 MB globals, 2 P
`)
	cycles := parseGCTrace(out)
	if len(cycles) != 4 {
		t.Fatalf("got %d cycles, want 4: %+v", len(cycles), cycles)
	}
	if c := cycles[1]; c.at != 2*time.Second || c.mark != 300*time.Millisecond || c.start != 100 || c.end != 120 || c.live != 60 || c.goal != 110 || c.forced {
		t.Errorf("cycle 2 read as %+v", c)
	}
	if !cycles[2].forced {
		t.Error("the forced cycle is not marked forced")
	}

	t0 := time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)
	procs := map[string][]gcCycle{"a": cycles, "b": parseGCTrace([]byte("gc 1 @1.000s 1%: 0.1+10+0.01 ms clock, x, 10->12->6 MB, 12 MB goal\n"))}
	started := map[string]time.Time{"a": t0, "b": t0.Add(time.Second)} // b's cycle is at t0+2s
	v := gcWindow(procs, started, t0.Add(time.Second), t0.Add(5*time.Second))
	want := gcView{cycles: 2, mark: 310 * time.Millisecond, grown: 22, live: 66, goal: 122}
	if v != want {
		t.Errorf("window: got %+v, want %+v", v, want)
	}
}

// TestMarkedRequests: a request counts as marked when a mark of a process
// on its path ran during it — inside, across either end, of either of B's
// two processes — and not when it ended as the mark began or began as it
// ended, nor for a process off its path; each group has its own p99.
func TestMarkedRequests(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	// Each process started at t0+1s; its mark runs 1000..1100 ms after.
	trace := parseGCTrace([]byte("gc 1 @1.000s 1%: 0.1+100+0.01 ms clock, x, 10->12->6 MB, 12 MB goal\n"))
	started := map[string]time.Time{"etcd": ms(1000), "kube-apiserver": ms(5000), "kube-scheduler": ms(8000)}
	traces := map[string][]gcCycle{"etcd": trace, "kube-apiserver": trace, "kube-scheduler": trace}
	spans := []auditSpan{
		{ms(2010), ms(2020)}, // inside etcd's mark (2000..2100)
		{ms(1990), ms(2005)}, // across its start
		{ms(2090), ms(2150)}, // across its end
		{ms(1950), ms(2000)}, // ends as it begins
		{ms(2100), ms(2101)}, // begins as it ends
		{ms(6050), ms(6054)}, // inside the apiserver's (6000..6100)
		{ms(9010), ms(9030)}, // inside the scheduler's: off the path
		{ms(3000), ms(3002)},
	}
	v := markedRequests(spans, traces, started, []string{"kube-apiserver", "etcd"})
	if want := (markedView{share: 4.0 / 8, p99In: 0.060, p99Out: 0.050}); math.Abs(v.share-want.share) > 1e-9 || math.Abs(v.p99In-want.p99In) > 1e-9 || math.Abs(v.p99Out-want.p99Out) > 1e-9 {
		t.Errorf("got %+v, want %+v", v, want)
	}
	if v := markedRequests(spans, traces, started, []string{"kube-scheduler"}); v.share != 1.0/8 || v.p99In != 0.020 {
		t.Errorf("the scheduler's mark alone: got %+v, want 1/8 marked, p99 20 ms", v)
	}
	if v := markedRequests(nil, traces, started, []string{"etcd"}); !math.IsNaN(v.share) || !math.IsNaN(v.p99In) {
		t.Errorf("no requests: got %+v, want NaNs", v)
	}
}
