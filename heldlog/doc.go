// Package heldlog is a logr.Logger that holds what is logged until the
// process's logging is configured, then writes it, and everything after,
// through klog.
//
// A single binary configures logging once, at the harness's barrier, from
// the components' -v, --vmodule and --logging-format (package scoping).
// The harness logs its parse phase before that. Given a held logger
// (Harness.Logger), those lines wait, and come out in the format the
// barrier chose instead of in klog's default text ahead of a JSON stream:
//
//	logger, release := heldlog.New()
//	defer release() // a run that failed before the barrier: write them plainly
//	h.Logger = logger
//	h.AfterBarrier = append(h.AfterBarrier, func(*scoping.Plan) error { release(); return nil })
//	err := h.Run(ctx)
//
// Until release every level is held (the verbosity is not known yet);
// after it klog decides. A key/value pair the logger already has is not
// added again: the logger adds no key of its own, and a "component" value
// given by both the harness and a component's adapter appears once.
package heldlog
