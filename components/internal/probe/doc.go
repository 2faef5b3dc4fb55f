// Package probe is how every adapter tells the harness it is ready: one
// Readiness per component, marked once (Mark, or MarkWhen a check
// passes); Poll, which runs a check until it passes; and Probe, which asks
// a component's own server for a path (/healthz, /readyz): over TLS
// pinned to the certificate it is configured to serve (New), or plain
// HTTP on loopback (NewHTTP).
//
//	stop := c.ready.MarkWhen(ctx, func(ctx context.Context) error {
//		return probe.NewHTTP(healthzAddr).WaitOK(ctx, "/healthz")
//	})
//	defer stop()
//	...
//	func (c *C) Ready(ctx context.Context) error { return c.ready.Wait(ctx) }
package probe
