package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/scoping"
)

// Default deadlines, used when the Harness fields are zero.
const (
	DefaultReadyTimeout = 2 * time.Minute
	DefaultStopTimeout  = 30 * time.Second
)

// Harness runs components as goroutines of one process: a scope per
// component, the barrier, ordered start with readiness, first failure stops
// the rest, reverse stop with deadlines. The zero value is ready to use: Add
// components, then Run once.
//
// Each component's Run, Ready and Stop (a restarted instance's too), and
// its AddFlags and parse in Run's parse phase, run under the pprof label
// ProfileLabel=<its name> (runtime/pprof.Do), and so does every goroutine
// they start: a CPU or goroutine profile of the process says which component
// a sample belongs to. The harness's own goroutines and the AfterBarrier
// hooks carry no component label.
type Harness struct {
	// Target is the process-wide state the barrier applies to; nil means
	// scoping.ProcessTarget().
	Target *scoping.Target
	// Logger gets one line per phase and per component state change; the zero
	// value means klog.Background(). (logr.Discard() is the zero value too: to
	// silence the harness, give it a logger whose sink drops everything.)
	// When set, it is also the logger in the context each component's Run,
	// Ready and Stop get (klog.FromContext), with the component's name as its
	// "component" value; when zero, that context carries whatever logger the
	// caller's context of Run carries.
	Logger logr.Logger
	// ReadyTimeout bounds each component's Ready; zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// StopTimeout bounds each component's stop; zero means DefaultStopTimeout.
	StopTimeout time.Duration
	// AfterBarrier hooks run once each, in order, after the barrier applied
	// and before any component starts: the place for other process-wide
	// settings the components would otherwise fight over (client-go's
	// default warning handler, say), and for what a binary writes only once
	// the arguments are known to be good (certificates, a status listener).
	// The first error stops the run before anything starts; later hooks do
	// not run. Append to the list; do not replace what others put there.
	AfterBarrier []BarrierHook
	// Recover, when set, decides what a component's failure (its Run
	// returning) does: true restarts that component, and the components
	// depending on it, with their arguments unchanged — as Restart does —
	// while the others keep running, instead of stopping the harness. A
	// distro uses it to demote a scheduler or controller-manager that lost
	// its leader-election lease (components.ErrLeaseLost) back to a standby
	// that campaigns again, where upstream exits the process. err is what
	// Run returned. A component that fails so while others still start is
	// restarted once every component started (PhaseRun); WaitReady waits
	// for it. That holds for a component not yet ready too (a lease lost
	// while the scheduler waits for its caches, the datastore stalled):
	// its Ready's context ends when its Run returned, the start goes on
	// without it, and the dependents waiting for its readiness start with
	// its new instance instead — unless one of them was launched already
	// (an EarlyStarter): then Recover is not asked, and the failure stops
	// the harness. A Ready that fails while its Run runs is not a Run
	// failure: it stops the harness. The
	// component is Failed until its new instance starts; its restart
	// counts in ComponentStatus.Restarts and Recoveries, and
	// ComponentStatus.LastRecovery says when and why. A restart that fails
	// stops the harness, with both errors. nil: every failure stops the
	// harness.
	Recover func(component string, err error) bool

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every state or phase change
	units   []*unit
	cur     *run // the run in progress, for Restart
	running bool
	phase   Phase
	timings []PhaseTiming
	plan    *scoping.Plan
	// conflicts counts the conflicts of every barrier that failed (Run's,
	// and each Restart's admission), by scoping.ConflictKind name.
	conflicts map[string]int
}

// BarrierHook is run by Run after the barrier applied its plan, before any
// component starts (see Harness.AfterBarrier).
type BarrierHook func(plan *scoping.Plan) error

// unit is one added component and its run state.
type unit struct {
	c    Component
	args []string
	deps []string

	depUnits []*unit
	scope    *scoping.Scope
	ready    chan struct{} // closed when Ready returned nil
	launched chan struct{} // closed when Run was called
	// unstarted is closed when this instance will not become ready and a
	// new one is to start in its place (Harness.Recover kept a failure
	// before it was ready, of it or of a dependency): its dependents,
	// still waiting, stop waiting for it.
	unstarted chan struct{}
	done      chan struct{} // closed when Run returned; nil until Run was called
	cancel    context.CancelCauseFunc
	runErr    error // Run's result, valid once done is closed

	// guarded by Harness.mu
	state      State
	err        error
	since      time.Time
	stopping   bool
	restarts   int               // how many instances before this one Restart replaced
	recovering bool              // failed, and Harness.Recover restarts it
	recoveries int               // how many of restarts Harness.Recover made
	lastRecov  *Recovery         // the last of them
	flags      map[string]string // the effective flags, redacted, once parsed
}

// Add adds a component with its arguments (exactly what its upstream binary
// would take) and the names of the components it depends on. Add after Run
// started is an error.
func (h *Harness) Add(c Component, args []string, dependsOn ...string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running || h.phase == PhaseDone {
		return errors.New("harness: Add after Run")
	}
	h.units = append(h.units, newUnit(c, slices.Clone(args), slices.Clone(dependsOn)))
	return nil
}

// newUnit is a unit not started yet: Add's, and each new instance of
// Restart's.
func newUnit(c Component, args, deps []string) *unit {
	return &unit{c: c, args: args, deps: deps, ready: make(chan struct{}), launched: make(chan struct{}), unstarted: make(chan struct{})}
}

// run is the state of one call of Run.
type run struct {
	h       *Harness
	log     logr.Logger
	ctx     context.Context // the caller's
	runCtx  context.Context // cancelled by the caller or by the first failure
	fail    context.CancelCauseFunc
	order   []*unit // dependency order
	barrier *scoping.Barrier
	plan    *scoping.Plan // once the barrier reconciled

	restart chan struct{} // holds a token while a Restart or the stop phase runs
	// recovering counts the goroutines restarting a component Recover kept
	// (Run waits for them before it returns).
	recovering sync.WaitGroup

	mu   sync.Mutex
	errs []error // failures, first one first
}

// Run runs every added component until ctx is cancelled or one fails, then
// stops them all, and returns only after every goroutine it started has
// returned — except a component's that overran its stop deadline, which the
// returned error names. It returns nil when ctx was cancelled and everything
// stopped cleanly; otherwise the failures (errors.As finds *ComponentError
// or *PhaseError), first failure first. If a parse fails or the barrier finds
// conflicts, no component's Run is ever called. Run may be called once.
func (h *Harness) Run(ctx context.Context) error {
	r, err := h.begin(ctx, "Run")
	if err != nil {
		return err
	}
	defer r.fail(nil)

	for _, p := range r.phases(false) {
		if r.runCtx.Err() != nil {
			break
		}
		if err := r.timed(p.phase, p.do); err != nil {
			r.failWith(err)
			break
		}
	}
	r.restart <- struct{}{} // wait for a Restart in progress; none starts after
	_ = r.timed(PhaseStop, r.stop)
	r.recovering.Wait()
	h.mu.Lock()
	h.phase, h.running, h.cur = PhaseDone, false, nil
	h.notifyLocked()
	h.mu.Unlock()
	r.log.Info("Harness done", "errors", len(r.errs))
	return errors.Join(r.errs...)
}

// DryRun validates the components, parses every component's arguments in
// its scope and reconciles them, and returns the plan the barrier would
// apply — or the same errors Run would return from those phases. It applies
// nothing and runs nothing. A harness that dry-ran cannot Run: the scopes it
// parsed are spent; build a new one.
func (h *Harness) DryRun(ctx context.Context) (*scoping.Plan, error) {
	r, err := h.begin(ctx, "DryRun")
	if err != nil {
		return nil, err
	}
	defer func() {
		h.mu.Lock()
		h.phase, h.running, h.cur = PhaseDone, false, nil
		h.notifyLocked()
		h.mu.Unlock()
	}()
	defer r.fail(nil)
	for _, p := range r.phases(true) {
		if err := r.timed(p.phase, p.do); err != nil {
			return nil, err
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return r.plan, nil
}

// step is one phase of a run and what it does.
type step struct {
	phase Phase
	do    func() error
}

// phases is the phase table of Run; DryRun runs its prefix up to the
// barrier, which reconciles and applies nothing.
func (r *run) phases(dry bool) []step {
	if dry {
		return []step{{PhaseValidate, r.validate}, {PhaseParse, r.parse}, {PhaseBarrier, r.reconcile}}
	}
	return []step{
		{PhaseValidate, r.validate},
		{PhaseParse, r.parse},
		{PhaseBarrier, r.applyBarrier},
		{PhaseStart, r.start},
		{PhaseRun, r.wait},
	}
}

// begin marks the harness as running — once: a harness runs or dry-runs
// one time — and returns the state of this run, its logger defaulted.
func (h *Harness) begin(ctx context.Context, what string) (*run, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running || h.phase != "" {
		return nil, fmt.Errorf("harness: %s after Run or DryRun: a harness runs once", what)
	}
	h.running = true
	log := h.Logger
	if log.GetSink() == nil {
		log = klog.Background()
	}
	r := &run{h: h, log: log, ctx: ctx, restart: make(chan struct{}, 1)}
	r.runCtx, r.fail = context.WithCancelCause(ctx)
	h.cur = r
	return r, nil
}

func (r *run) timed(p Phase, do func() error) error {
	start := time.Now()
	r.h.mu.Lock()
	r.h.phase = p
	r.h.notifyLocked()
	r.h.mu.Unlock()
	r.log.Info("Harness phase", "phase", p)
	err := do()
	r.h.mu.Lock()
	r.h.timings = append(r.h.timings, PhaseTiming{Phase: p, Start: start, Duration: time.Since(start)})
	r.h.mu.Unlock()
	return err
}

// failWith records a failure and cancels the run; the first one is the cause.
func (r *run) failWith(err error) {
	r.addErr(err)
	r.fail(err)
}

// addErr records a failure without cancelling the run (it is ending anyway).
func (r *run) addErr(err error) {
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

func (r *run) setState(u *unit, s State, err error) {
	r.h.mu.Lock()
	u.state, u.err, u.since = s, err, time.Now()
	r.h.notifyLocked()
	r.h.mu.Unlock()
	if err != nil {
		r.log.Error(err, "Component state", "component", u.c.Name(), "state", s)
		return
	}
	r.log.Info("Component state", "component", u.c.Name(), "state", s)
}

// validate checks names and dependencies and orders the units so that each
// comes after its dependencies (Kahn's algorithm, stable in Add order).
func (r *run) validate() error {
	r.h.mu.Lock()
	units := slices.Clone(r.h.units)
	r.h.mu.Unlock()
	byName := map[string]*unit{}
	for _, u := range units {
		name := u.c.Name()
		if name == "" {
			return &PhaseError{Phase: PhaseValidate, Err: errors.New("a component has an empty name")}
		}
		if byName[name] != nil {
			return &PhaseError{Phase: PhaseValidate, Err: fmt.Errorf("two components are named %q", name)}
		}
		byName[name] = u
	}
	for _, u := range units {
		u.depUnits = nil
		for _, d := range u.deps {
			du := byName[d]
			if du == nil {
				return &PhaseError{Phase: PhaseValidate, Err: &DependencyError{Component: u.c.Name(), Dependency: d}}
			}
			u.depUnits = append(u.depUnits, du)
		}
	}
	placed := map[*unit]bool{}
	for len(r.order) < len(units) {
		progress := false
		for _, u := range units {
			if !placed[u] && !slices.ContainsFunc(u.depUnits, func(d *unit) bool { return !placed[d] }) {
				placed[u] = true
				r.order = append(r.order, u)
				progress = true
			}
		}
		if !progress {
			return &PhaseError{Phase: PhaseValidate, Err: &DependencyError{Cycle: findCycle(units, placed)}}
		}
	}
	return nil
}

// findCycle walks dependencies from an unplaced unit until a name repeats.
func findCycle(units []*unit, placed map[*unit]bool) []string {
	var u *unit
	for _, c := range units {
		if !placed[c] {
			u = c
			break
		}
	}
	seen := map[*unit]int{}
	var path []string
	for {
		if i, ok := seen[u]; ok {
			return append(path[i:], u.c.Name())
		}
		seen[u] = len(path)
		path = append(path, u.c.Name())
		for _, d := range u.depUnits {
			if !placed[d] {
				u = d
				break
			}
		}
	}
}

// parse creates every scope, then adds flags and parses all components
// concurrently. Every parse failure is reported, not just the first.
func (r *run) parse() error {
	target := scoping.ProcessTarget()
	if r.h.Target != nil {
		target = *r.h.Target
	}
	b, err := scoping.NewBarrier(target, scoping.WithLogger(r.log))
	if err != nil {
		return &PhaseError{Phase: PhaseParse, Err: err}
	}
	r.barrier = b
	for _, u := range r.order {
		if u.scope, err = b.NewScope(u.c.Name()); err != nil {
			return &ComponentError{Component: u.c.Name(), Phase: PhaseParse, Err: err}
		}
	}
	errs := make([]error, len(r.order))
	var wg sync.WaitGroup
	for i, u := range r.order {
		wg.Go(func() {
			r.setState(u, Parsing, nil)
			if err := r.parseUnit(u); err != nil {
				errs[i] = &ComponentError{Component: u.c.Name(), Phase: PhaseParse, Err: err}
				r.setState(u, Failed, err)
				return
			}
			r.setState(u, Parsed, nil)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parseUnit adds u's flags to its scope and parses its arguments, under
// its pprof label, a panic turned into an error; then it keeps u's
// effective flags (Harness.Flags). Run's parse phase and Restart use it.
func (r *run) parseUnit(u *unit) error {
	err := safely(func() error {
		return labelled(r.ctx, u.c.Name(), func(context.Context) error {
			if err := u.c.AddFlags(u.scope); err != nil {
				return err
			}
			return u.scope.Parse(u.args)
		})
	})
	if err == nil {
		r.h.keepFlags(u)
	}
	return err
}

// reconcile reconciles every scope into the run's plan.
func (r *run) reconcile() error {
	plan, err := r.barrier.Reconcile()
	if err != nil {
		r.h.countConflicts(err)
		return &PhaseError{Phase: PhaseBarrier, Err: err}
	}
	r.plan = plan
	r.h.mu.Lock()
	r.h.plan = plan
	r.h.mu.Unlock()
	return nil
}

// applyBarrier reconciles every scope and applies the plan once.
func (r *run) applyBarrier() error {
	if err := r.reconcile(); err != nil {
		return err
	}
	plan := r.plan
	for _, w := range plan.Warnings {
		r.log.Info("Warning: " + w)
	}
	if err := r.barrier.Apply(plan); err != nil {
		return &PhaseError{Phase: PhaseBarrier, Err: err}
	}
	for _, hook := range r.h.AfterBarrier {
		if err := safely(func() error { return hook(plan) }); err != nil {
			return &PhaseError{Phase: PhaseBarrier, Err: fmt.Errorf("after the barrier: %w", err)}
		}
	}
	return nil
}

// start starts every component in an errgroup; each waits for its
// dependencies' readiness, calls Run in a goroutine of its own, and waits for
// its own readiness.
func (r *run) start() error {
	for _, u := range r.order {
		r.setState(u, WaitingForDependencies, nil)
	}
	g, gctx := errgroup.WithContext(r.runCtx)
	for _, u := range r.order {
		g.Go(func() error { return r.startUnit(gctx, u) })
	}
	return g.Wait()
}

func (r *run) startUnit(ctx context.Context, u *unit) error {
	early, _ := u.c.(EarlyStarter)
	for _, d := range u.depUnits {
		wait := d.ready
		if early != nil && early.StartsEarly(d.c.Name()) {
			wait = d.launched
		}
		select {
		case <-wait:
		case <-d.unstarted:
			// Its dependency is to be restarted (Harness.Recover): so is
			// this component, with it, once Run is in PhaseRun.
			close(u.unstarted)
			return nil
		case <-ctx.Done():
			return nil // another component failed, or the caller cancelled
		}
	}
	r.setState(u, Starting, nil)
	r.launch(u)
	// An early start overlaps the start-ups; Ready is asked once every
	// dependency is ready, as for any other component.
	for _, d := range u.depUnits {
		select {
		case <-d.ready:
		case <-ctx.Done():
			return nil // launched: the stop phase stops it
		}
	}
	rd, ok := u.c.(Readier)
	if !ok {
		r.setState(u, Ready, nil)
		close(u.ready)
		return nil
	}
	timeout := cmp.Or(r.h.ReadyTimeout, DefaultReadyTimeout)
	rctx, cancel := context.WithTimeout(r.componentContext(ctx, u), timeout)
	defer cancel()
	// Ready's context also ends when Run returned: a Ready that waits for
	// something its Run no longer does returns then, not at the timeout.
	rctx, endReady := context.WithCancelCause(rctx)
	defer endReady(nil)
	go func() {
		select {
		case <-u.done:
			endReady(errRunReturned)
		case <-rctx.Done():
		}
	}()
	err, abandoned := await(rctx, func() error { return labelled(rctx, u.c.Name(), rd.Ready) })
	switch {
	case err == nil && !abandoned:
		r.setState(u, Ready, nil)
		close(u.ready)
		return nil
	case abandoned:
		// Ready ignored its context: bounded like Stop, named, left behind.
		err = &DeadlineError{Component: u.c.Name(), What: "Ready", Timeout: timeout, Abandoned: true}
		if ctx.Err() != nil { // another component failed or the caller cancelled: record it, do not blame
			r.addErr(&ComponentError{Component: u.c.Name(), Phase: PhaseStart, Err: err})
			return nil
		}
	case ctx.Err() != nil:
		return nil // the cause is recorded where it happened
	case errors.Is(context.Cause(rctx), context.DeadlineExceeded):
		err = &DeadlineError{Component: u.c.Name(), What: "Ready", Timeout: timeout}
	case r.recoveredBeforeReady(u):
		close(u.unstarted)
		return nil // recoverUnit restarts it, and its dependents, once Run is in PhaseRun
	case context.Cause(rctx) == errRunReturned:
		return nil // Run's failure is recorded where it happened (launch)
	}
	err = &ComponentError{Component: u.c.Name(), Phase: PhaseStart, Err: err}
	r.setState(u, Failed, err)
	return err // the errgroup cancels the other starts; Run records it
}

// errRunReturned ends the context of a component's Ready when its Run
// returned before it was ready.
var errRunReturned = errors.New("harness: Run returned before the component was ready")

// recoveredBeforeReady reports whether u's Run failed before u was ready
// and Harness.Recover keeps that failure (launch decided, and recoverUnit
// restarts it). Ready returned without success: if Run returned, its
// goroutine decides within moments; if Run has not returned within
// AbandonGrace, Ready failed on its own, which is not recovered.
func (r *run) recoveredBeforeReady(u *unit) bool {
	t := time.NewTimer(AbandonGrace)
	defer t.Stop()
	select {
	case <-u.done:
	case <-t.C:
		return false
	}
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	return u.recovering
}

// dependentLaunched reports whether a component depending on u, directly
// or not, was launched (an EarlyStarter does not wait for u's readiness).
func (r *run) dependentLaunched(u *unit) bool {
	r.h.mu.Lock()
	defer r.h.mu.Unlock()
	for _, o := range withDependents(r.order, u)[1:] {
		select {
		case <-o.launched:
			return true
		default:
		}
	}
	return false
}

// AbandonGrace is how long the harness still waits for a component's Ready
// or Stop to return once the context it was given has ended, before it
// abandons the goroutine calling it. A Ready or Stop that honours its
// context returns well within it.
const AbandonGrace = time.Second

// await calls f in a goroutine of its own and waits for it until ctx ends
// and AbandonGrace more. abandoned says f had not returned by then: its
// goroutine is left behind.
func await(ctx context.Context, f func() error) (err error, abandoned bool) {
	errc := call(f)
	select {
	case err := <-errc:
		return err, false
	case <-ctx.Done():
	}
	return graceful(errc)
}

// call runs f in a goroutine of its own; its result arrives on the channel.
func call(f func() error) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- safely(f) }()
	return errc
}

// graceful waits AbandonGrace for a call whose context has ended.
func graceful(errc <-chan error) (err error, abandoned bool) {
	t := time.NewTimer(AbandonGrace)
	defer t.Stop()
	select {
	case err := <-errc:
		return err, false
	case <-t.C:
		return nil, true
	}
}

// componentContext puts the harness's logger, named for the component, in
// ctx — when the harness has a logger of its own.
func (r *run) componentContext(ctx context.Context, u *unit) context.Context {
	if r.h.Logger.GetSink() == nil {
		return ctx
	}
	return klog.NewContext(ctx, r.h.Logger.WithValues("component", u.c.Name()))
}

// launch calls Run in a goroutine with the component's own context: the
// caller's values, cancelled only when the harness stops this component.
func (r *run) launch(u *unit) {
	var ctx context.Context
	ctx, u.cancel = context.WithCancelCause(r.componentContext(context.WithoutCancel(r.ctx), u))
	u.done = make(chan struct{})
	close(u.launched)
	go func() {
		defer close(u.done)
		err := safely(func() error { return labelled(ctx, u.c.Name(), u.c.Run) })
		u.runErr = err
		r.h.mu.Lock()
		stopping, phase := u.stopping, PhaseRun
		if u.state != Ready {
			phase = PhaseStart // it failed before it became ready
		}
		r.h.mu.Unlock()
		if stopping {
			return
		}
		if err == nil {
			err = ErrExited
		}
		// Before it was ready, a component is recovered only if none of
		// its dependents was launched (an early start): those that wait
		// for its readiness start again with it.
		recover := r.h.Recover != nil && (phase == PhaseRun || !r.dependentLaunched(u)) && r.h.Recover(u.c.Name(), err)
		cerr := &ComponentError{Component: u.c.Name(), Phase: phase, Err: err}
		r.h.mu.Lock()
		u.recovering = recover
		r.h.mu.Unlock()
		r.setState(u, Failed, cerr)
		if !recover {
			r.failWith(cerr)
			return
		}
		r.recovering.Go(func() { r.recoverUnit(u, cerr) })
	}()
}

// recoverUnit restarts a component whose failure Harness.Recover kept from
// stopping the harness, as Restart does with its arguments unchanged
// (with its dependents). If it cannot be restarted, its failure is the
// harness's after all: recorded (after the restart's own error, if any),
// and the harness stops — unless the caller is stopping it anyway.
func (r *run) recoverUnit(u *unit, cause *ComponentError) {
	r.h.mu.Lock()
	u.recoveries++
	u.lastRecov = &Recovery{At: time.Now(), Cause: cause.Err.Error()}
	n := u.recoveries
	r.h.mu.Unlock()
	r.log.Info("Component failed; restarting it (Harness.Recover)", "component", u.c.Name(), "recoveries", n, "err", cause.Err)
	// A component can fail once ready while others still start (a lost
	// lease while the scheduler waits for its own); Restart works in
	// PhaseRun only: the restart waits for it.
	if !r.waitPhaseRun() {
		r.log.Info("Restart after a failure interrupted by the stop", "component", u.c.Name())
		return
	}
	err := r.h.Restart(context.WithoutCancel(r.ctx), u.c.Name(), u.args)
	switch {
	case err == nil:
	case r.ctx.Err() != nil:
		r.log.Info("Restart after a failure interrupted by the stop", "component", u.c.Name(), "err", err)
	default:
		r.failWith(fmt.Errorf("%w; restarting it failed: %v", cause, err))
	}
}

// waitPhaseRun waits until Run reaches PhaseRun (true) or stops — the
// caller cancelled, or the start failed (false).
func (r *run) waitPhaseRun() bool {
	for {
		changed, st := r.h.changes()
		switch {
		case r.runCtx.Err() != nil:
			return false
		case st.Phase == PhaseRun:
			return true
		}
		select {
		case <-changed:
		case <-r.runCtx.Done():
		}
	}
}

// wait blocks until the caller cancels or a component fails.
func (r *run) wait() error {
	<-r.runCtx.Done()
	return nil
}

// stop stops the components that were launched, in reverse dependency
// order, each within StopTimeout: a component stops once every component
// that depends on it has stopped, so components that do not depend on each
// other stop at the same time (kube-scheduler and kube-controller-manager,
// which both depend only on kube-apiserver). The whole stop then takes the
// longest chain of stops, not their sum.
func (r *run) stop() error {
	stopped := make(map[*unit]chan struct{}, len(r.order))
	dependents := make(map[*unit][]*unit, len(r.order))
	for _, u := range r.order {
		stopped[u] = make(chan struct{})
		for _, d := range u.depUnits {
			dependents[d] = append(dependents[d], u)
		}
	}
	var wg sync.WaitGroup
	for _, u := range slices.Backward(r.order) {
		wg.Go(func() {
			defer close(stopped[u])
			for _, d := range dependents[u] {
				<-stopped[d]
			}
			r.stopOne(u)
		})
	}
	wg.Wait()
	return nil
}

// stopOne stops u if it was launched, else marks it stopped (unless it
// failed).
func (r *run) stopOne(u *unit) {
	if u.done == nil {
		r.h.mu.Lock()
		failed := u.state == Failed
		r.h.mu.Unlock()
		if !failed {
			r.setState(u, Stopped, nil) // never started
		}
		return
	}
	if err := r.stopLaunched(u); err != nil {
		r.addErr(err)
	}
}

// stopLaunched stops a component whose Run was called, within StopTimeout,
// and records its state. A failure comes back as a *ComponentError in
// phase stop, the component's state Failed; one that had failed already
// keeps that state.
func (r *run) stopLaunched(u *unit) error {
	r.h.mu.Lock()
	u.stopping = true
	failed := u.state == Failed
	r.h.mu.Unlock()
	if !failed {
		r.setState(u, Stopping, nil)
	}
	if err := r.stopUnit(u, cmp.Or(r.h.StopTimeout, DefaultStopTimeout)); err != nil {
		err = &ComponentError{Component: u.c.Name(), Phase: PhaseStop, Err: err}
		r.setState(u, Failed, err)
		return err
	}
	if !failed {
		r.setState(u, Stopped, nil)
	}
	return nil
}

// stopUnit stops one component within timeout: Stop (if it is a Stopper)
// gets the first half, with a context whose deadline is that share; Run's
// context is cancelled as soon as Stop returned, and at the latest when
// Stop's share ended, and Run gets the rest of the timeout to return. What
// overran — Stop, Run or both — is named in a *DeadlineError. An error Run
// returns while stopping is reported unless it is the cancellation itself.
func (r *run) stopUnit(u *unit, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var stopErr error
	s, isStopper := u.c.(Stopper)
	if !isStopper {
		u.cancel(errStopping)
	} else {
		share := timeout / 2
		sctx, cancel := context.WithTimeout(r.componentContext(context.WithoutCancel(r.ctx), u), share)
		errc := call(func() error { return labelled(sctx, u.c.Name(), s.Stop) })
		select {
		case stopErr = <-errc:
			u.cancel(errStopping)
		case <-sctx.Done():
			// Stop's share is over: Run's context is cancelled now, whatever
			// Stop does; Stop gets AbandonGrace more to return.
			u.cancel(errStopping)
			var abandoned bool
			if stopErr, abandoned = graceful(errc); abandoned {
				stopErr = &DeadlineError{Component: u.c.Name(), What: "Stop", Timeout: share, Abandoned: true}
			}
		}
		cancel()
	}
	rctx, cancel := context.WithDeadline(context.WithoutCancel(r.ctx), deadline)
	defer cancel()
	select {
	case <-u.done:
	case <-rctx.Done():
		return errors.Join(stopErr, &DeadlineError{Component: u.c.Name(), What: "Run", Timeout: timeout, Abandoned: true})
	}
	if stopErr != nil {
		return stopErr
	}
	if u.runErr != nil && !errors.Is(u.runErr, context.Canceled) && !errors.Is(u.runErr, errStopping) {
		r.h.mu.Lock()
		failed := u.state == Failed // already reported when it failed
		r.h.mu.Unlock()
		if !failed {
			return u.runErr
		}
	}
	return nil
}

var errStopping = errors.New("harness: stopping")

// safely runs f, turning a panic into a *PanicError with the stack.
func safely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f()
}
