package probe

import (
	"context"
	"sync"
)

// Readiness is a component's readiness, reported once. The zero value is
// not ready.
type Readiness struct {
	init sync.Once
	mark sync.Once
	ch   chan struct{}
}

func (r *Readiness) done() chan struct{} {
	r.init.Do(func() { r.ch = make(chan struct{}) })
	return r.ch
}

// Mark reports the component ready; later calls do nothing.
func (r *Readiness) Mark() { r.mark.Do(func() { close(r.done()) }) }

// Done is closed once Mark was called.
func (r *Readiness) Done() <-chan struct{} { return r.done() }

// Wait blocks until Mark was called (nil) or ctx ends (ctx's error).
func (r *Readiness) Wait(ctx context.Context) error {
	select {
	case <-r.done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// MarkWhen runs check in a goroutine and marks r once check returned nil.
// stop ends check's context and waits for the goroutine: call it when the
// component's Run returns.
func (r *Readiness) MarkWhen(ctx context.Context, check func(context.Context) error) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if check(ctx) == nil {
			r.Mark()
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
