package logtest

import (
	"context"
	"strings"
	"sync"

	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
)

// Capture returns ctx with a logger (klog.FromContext) that records every
// line a component logs through it, and a function that returns the
// lines recorded so far that contain all of want: funcr's text, such as
// "msg"="Retrying" "attempt"=1.
func Capture(ctx context.Context) (context.Context, func(want ...string) []string) {
	var mu sync.Mutex
	var lines []string
	logger := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{})
	return klog.NewContext(ctx, logger), func(want ...string) []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
	lines:
		for _, l := range lines {
			for _, w := range want {
				if !strings.Contains(l, w) {
					continue lines
				}
			}
			out = append(out, l)
		}
		return out
	}
}
