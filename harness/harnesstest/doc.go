// Package harnesstest runs a harness.Harness from a test: Start runs it in
// a goroutine, StartReady also waits until every component is ready
// (Harness.WaitReady), and Stop cancels it and returns what Run returned.
// It uses only the harness's public API.
//
//	ctx, cancel := context.WithCancel(context.Background())
//	defer cancel()
//	done := harnesstest.StartReady(t, ctx, h, time.Minute) // fails t if not ready in time
//	// ... the test, while every component runs ...
//	err := harnesstest.Stop(t, cancel, done, time.Minute) // Run's error
//
// A test that watches Run return on its own (a component fails, a lease is
// lost) selects on the channel StartReady returned.
package harnesstest
