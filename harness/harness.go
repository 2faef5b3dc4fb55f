package harness

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/scoping"
)

// Default deadlines, used when the Harness fields are zero.
const (
	DefaultReadyTimeout = 2 * time.Minute
	DefaultStopTimeout  = 30 * time.Second
)

// Harness runs components as goroutines of one process: a scope per
// component, the barrier, then one supervisor per component that starts it
// after its dependencies are ready, restarts or recovers it with its
// dependents, and stops it after them with a deadline. The zero value is
// ready to use: Add components, then Run once.
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
	// Ready and Stop get (klog.FromContext); when zero, that context carries
	// the logger of the caller's context of Run. Either way it has the
	// component's name as its "component" value, added once, here.
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
	// Recover, when set, decides what a component's failure — its Run
	// returning before it was asked to stop, ready yet or not — does: true
	// restarts that component, and the components depending on it, with
	// their arguments unchanged, as Restart does, while the others keep
	// running; false stops the harness. RecoverPolicy bounds how often
	// and how soon: a failure beyond it stops the harness whatever Recover
	// says (an *IntensityError). A distro uses it to demote a
	// scheduler or controller-manager that lost its leader-election lease
	// (components.ErrLeaseLost) back to a standby that campaigns again,
	// where upstream exits the process. err is what Run returned. Recover
	// is asked only about a failure the harness can restart: the component
	// and its dependents are Renewers and none is a Once; otherwise the
	// failure stops the harness and Run's error carries the *RestartError
	// that says why. A Ready that fails while Run runs is no Run failure:
	// it stops the harness. The component is Recovering until its new
	// instance is ready (alive, not ready); ComponentStatus.Recoveries and
	// LastRecovery count and explain it. A new instance that fails before
	// it was ready with a failure Recover does not keep stops the harness
	// with a *RecoveryError (both failures). nil: every failure stops the
	// harness.
	Recover func(component string, err error) bool
	// RecoverPolicy bounds Recover's restarts: how many failures of one
	// component it may keep within a period, and how long a restart after
	// a repeated failure waits. Its zero value is the defaults (five
	// within a minute, a backoff from one second).
	RecoverPolicy RecoverPolicy

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced at every change (await)
	slots      []*slot
	phase      Phase // "" until Run or DryRun began; the one record of it
	cur        *run  // the run, from PhaseValidate until PhaseDone
	phaseStart time.Time
	timings    []PhaseTiming
	phaseHooks time.Duration // the AfterBarrier hooks' time in the current phase
	plan       *scoping.Plan
	// conflicts counts the conflicts of every barrier that failed (Run's,
	// and each Restart's admission), by scoping.ConflictKind name.
	conflicts map[string]int
}

// BarrierHook is run by Run after the barrier applied its plan, before any
// component starts (see Harness.AfterBarrier).
type BarrierHook func(plan *scoping.Plan) error

// Add adds a component with its arguments (exactly what its upstream binary
// would take) and the names of the components it depends on. Add after Run
// started is an error.
func (h *Harness) Add(c Component, args []string, dependsOn ...string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.phase != "" {
		return errors.New("harness: Add after Run")
	}
	h.slots = append(h.slots, newSlot(c, slices.Clone(args), slices.Clone(dependsOn)))
	return nil
}

// run is the state of one call of Run or DryRun.
type run struct {
	h        *Harness
	log      logr.Logger
	ctx      context.Context // the caller's
	runCtx   context.Context // cancelled by the caller or by the first failure
	fail     context.CancelCauseFunc
	order    []*slot // dependency order
	barrier  *scoping.Barrier
	plan     *scoping.Plan // once the barrier reconciled
	restarts chan struct{} // holds a token while a Restart runs

	mu   sync.Mutex
	errs []error // failures, first one first
}

// Run runs every added component until ctx is cancelled or one fails, then
// stops them all, and returns only after every goroutine it started has
// returned — except a component's that overran its stop deadline, which the
// returned error names (or, for a Once, its ComponentStatus). It returns
// nil when ctx was cancelled and everything stopped cleanly; otherwise the
// failures (errors.As finds *ComponentError or *PhaseError), first failure
// first. If a parse fails or the barrier finds conflicts, no component's
// Run is ever called. Run may be called once.
func (h *Harness) Run(ctx context.Context) error {
	r, err := h.begin(ctx, "Run")
	if err != nil {
		return err
	}
	defer r.fail(nil)
	var supervisors sync.WaitGroup
	if r.prepare(step{PhaseValidate, r.validate}, step{PhaseParse, r.parse}, step{PhaseBarrier, r.applyBarrier}) {
		r.enter(PhaseStart)
		for _, s := range r.order {
			r.move(s, WaitingForDependencies)
			supervisors.Go(func() { r.supervise(s) })
		}
		if h.await(r.runCtx, h.everyReadyOnce) {
			r.enter(PhaseRun)
		}
	}
	<-r.runCtx.Done() // the caller cancelled, or a component failed
	r.enter(PhaseStop)
	supervisors.Wait()
	for _, s := range h.slots {
		r.move(s, Stopped) // those that never ran; a failed one stays Failed
	}
	r.end()
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
	defer r.end()
	defer r.fail(nil)
	if !r.prepare(step{PhaseValidate, r.validate}, step{PhaseParse, r.parse}, step{PhaseBarrier, r.reconcile}) {
		if len(r.errs) > 0 {
			return nil, errors.Join(r.errs...)
		}
		return nil, ctx.Err()
	}
	return r.plan, nil
}

// step is one phase before the start and what it does.
type step struct {
	phase Phase
	do    func() error
}

// prepare runs the steps in order, each in its phase (begin entered the
// first's), and reports whether all of them passed and the run goes on: a
// failure is recorded and cancels the run.
func (r *run) prepare(steps ...step) bool {
	for i, p := range steps {
		if r.runCtx.Err() != nil {
			return false
		}
		if i > 0 {
			r.enter(p.phase)
		}
		if err := p.do(); err != nil {
			r.failWith(err)
			return false
		}
	}
	return r.runCtx.Err() == nil
}

// begin enters PhaseValidate — once: a harness runs or dry-runs one time —
// and returns the state of this run, its logger defaulted.
func (h *Harness) begin(ctx context.Context, what string) (*run, error) {
	log := h.Logger
	if log.GetSink() == nil {
		log = klog.Background()
	}
	r := &run{h: h, log: log, ctx: ctx, restarts: make(chan struct{}, 1)}
	h.mu.Lock()
	if h.phase != "" {
		h.mu.Unlock()
		return nil, fmt.Errorf("harness: %s after Run or DryRun: a harness runs once", what)
	}
	r.runCtx, r.fail = context.WithCancelCause(ctx)
	h.cur = r
	logged := r.enterLocked(PhaseValidate)
	h.mu.Unlock()
	logged()
	return r, nil
}

// enter moves Run to phase p.
func (r *run) enter(p Phase) {
	r.h.mu.Lock()
	logged := r.enterLocked(p)
	r.h.mu.Unlock()
	logged()
}

// enterLocked moves Run to phase p, ending the current phase's timing, and
// returns what logs it, to call once h.mu (held) is released. Every phase
// change is made here, by Run's (or DryRun's) goroutine, in order;
// PhaseDone lets go of the run.
func (r *run) enterLocked(p Phase) (log func()) {
	h, now := r.h, time.Now()
	if h.phase != "" {
		h.timings = append(h.timings, PhaseTiming{Phase: h.phase, Start: h.phaseStart, Duration: now.Sub(h.phaseStart), Hooks: h.phaseHooks})
	}
	h.phaseHooks = 0
	h.phase, h.phaseStart = p, now
	if p == PhaseDone {
		h.cur = nil
	}
	h.notifyLocked()
	return func() { r.log.Info("Harness phase", "phase", p) }
}

// end moves the run to PhaseDone: the harness runs no more.
func (r *run) end() { r.enter(PhaseDone) }

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

// isStopping reports whether the run is ending: the caller cancelled or a
// component failed.
func (r *run) isStopping() bool { return r.runCtx.Err() != nil }

// validate checks names and dependencies and orders the slots so that each
// comes after its dependencies (Kahn's algorithm, stable in Add order).
func (r *run) validate() error {
	r.h.mu.Lock()
	slots := slices.Clone(r.h.slots)
	r.h.mu.Unlock()
	byName := map[string]*slot{}
	for _, s := range slots {
		if s.name == "" {
			return &PhaseError{Phase: PhaseValidate, Err: errors.New("a component has an empty name")}
		}
		if byName[s.name] != nil {
			return &PhaseError{Phase: PhaseValidate, Err: fmt.Errorf("two components are named %q", s.name)}
		}
		byName[s.name] = s
	}
	for _, s := range slots {
		for _, d := range s.deps {
			ds := byName[d]
			if ds == nil {
				return &PhaseError{Phase: PhaseValidate, Err: &DependencyError{Component: s.name, Dependency: d}}
			}
			s.depSlots = append(s.depSlots, ds)
			ds.dependents = append(ds.dependents, s)
		}
	}
	placed := map[*slot]bool{}
	for len(r.order) < len(slots) {
		progress := false
		for _, s := range slots {
			if !placed[s] && !slices.ContainsFunc(s.depSlots, func(d *slot) bool { return !placed[d] }) {
				placed[s] = true
				r.order = append(r.order, s)
				progress = true
			}
		}
		if !progress {
			return &PhaseError{Phase: PhaseValidate, Err: &DependencyError{Cycle: findCycle(slots, placed)}}
		}
	}
	return nil
}

// findCycle walks dependencies from an unplaced slot until a name repeats.
func findCycle(slots []*slot, placed map[*slot]bool) []string {
	i := slices.IndexFunc(slots, func(s *slot) bool { return !placed[s] })
	s := slots[i]
	seen := map[*slot]int{}
	var path []string
	for {
		if i, ok := seen[s]; ok {
			return append(path[i:], s.name)
		}
		seen[s] = len(path)
		path = append(path, s.name)
		s = s.depSlots[slices.IndexFunc(s.depSlots, func(d *slot) bool { return !placed[d] })]
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
	for _, s := range r.order {
		if s.inst.scope, err = b.NewScope(s.name); err != nil {
			return &ComponentError{Component: s.name, Phase: PhaseParse, Err: err}
		}
	}
	errs := make([]error, len(r.order))
	var wg sync.WaitGroup
	for i, s := range r.order {
		wg.Go(func() {
			r.move(s, Parsing)
			if err := r.parseInstance(s.inst); err != nil {
				errs[i] = &ComponentError{Component: s.name, Phase: PhaseParse, Err: err}
				r.change(s, func() { s.failure = err })
				return
			}
			flags := effectiveFlags(s.inst.scope)
			r.change(s, func() { s.stage, s.inst.flags = Parsed, flags })
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// parseInstance adds an instance's flags to its scope, parses its
// arguments and completes it (Completer), under its pprof label, a panic turned into an error. Run's
// parse phase and every restart use it.
func (r *run) parseInstance(inst *instance) error {
	return safely(func() error {
		return labelled(r.ctx, inst.c.Name(), func(context.Context) error {
			if err := inst.c.AddFlags(inst.scope); err != nil {
				return err
			}
			if err := inst.scope.Parse(inst.args); err != nil {
				return err
			}
			if c, ok := inst.c.(Completer); ok {
				return c.Complete(inst.scope)
			}
			return nil
		})
	})
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
	start := time.Now()
	defer func() {
		r.h.mu.Lock()
		r.h.phaseHooks = time.Since(start)
		r.h.mu.Unlock()
	}()
	for _, hook := range r.h.AfterBarrier {
		if err := safely(func() error { return hook(plan) }); err != nil {
			return &PhaseError{Phase: PhaseBarrier, Err: fmt.Errorf("after the barrier: %w", err)}
		}
	}
	return nil
}

// componentContext puts a logger with the component's name as its
// "component" value in ctx: the harness's, or else the one ctx carries.
func (r *run) componentContext(ctx context.Context, name string) context.Context {
	log := r.h.Logger
	if log.GetSink() == nil {
		log = klog.FromContext(ctx)
	}
	return klog.NewContext(ctx, log.WithValues("component", name))
}

// AbandonGrace is how long the harness still waits for a component's Ready
// or Stop to return once the context it was given has ended, before it
// abandons the goroutine calling it. A Ready or Stop that honours its
// context returns well within it.
const AbandonGrace = time.Second

// call runs f in a goroutine of its own; its result arrives on the
// channel, and then the waiters are woken (await).
func (r *run) call(f func() error) <-chan error {
	errc := make(chan error, 1)
	go func() {
		errc <- safely(f)
		r.h.notify()
	}()
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

// safely runs f, turning a panic into a *PanicError with the stack.
func safely(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return f()
}
