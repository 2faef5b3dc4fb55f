package harness

import (
	"context"
	"runtime/pprof"
)

// ProfileLabel is the key of the pprof label the harness runs each
// component's code under; the value is the component's name (Name). CPU
// and goroutine profiles of the process carry it, so that "which component
// costs what" has an answer in one process: group the samples by it
// (go tool pprof -tagfocus component=kube-scheduler, or -tags). Heap
// profiles carry no labels (a Go limitation).
const ProfileLabel = "component"

// labelled calls f under the pprof label ProfileLabel=name, with runtime/
// pprof.Do: the calling goroutine wears the label while f runs — and only
// then — and every goroutine started from it, directly or not, keeps it for
// life. f gets ctx with the label added to whatever labels ctx carried
// already (a distro's own), so that a component's nested pprof.Do adds to
// it rather than replacing it.
func labelled(ctx context.Context, name string, f func(ctx context.Context) error) (err error) {
	pprof.Do(ctx, pprof.Labels(ProfileLabel, name), func(ctx context.Context) { err = f(ctx) })
	return err
}
