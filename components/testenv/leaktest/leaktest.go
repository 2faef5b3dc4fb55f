// Package leaktest waits for a test's goroutines to end (goleak), apart
// from package testenv so that testenv's users need not require goleak.
package leaktest

import (
	"runtime"
	"time"

	"go.uber.org/goleak"
)

// FindLeaks retries goleak.Find (with opts) every interval, collecting
// garbage before each try so that goroutines ending with a collected
// object (client-go's certificate-reload loops) are gone, until it finds
// none or wait has passed. It returns how long that took and the last
// error: nil when no goroutine was left.
func FindLeaks(wait, interval time.Duration, opts ...goleak.Option) (time.Duration, error) {
	start := time.Now()
	for {
		runtime.GC()
		err := goleak.Find(opts...)
		if err == nil || time.Since(start) > wait {
			return time.Since(start), err
		}
		time.Sleep(interval)
	}
}
