// Package logtest is for the tests of components that log through their
// context's logger (klog.FromContext): Capture puts a logger that records
// each line in a context, and returns the lines that contain what a test
// looks for.
//
//	ctx, lines := logtest.Capture(t.Context())
//	_ = c.Run(ctx)
//	assert.NotEmpty(t, lines(`"msg"="Retrying"`, `"attempt"=1`))
package logtest
