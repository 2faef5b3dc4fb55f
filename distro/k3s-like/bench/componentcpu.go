package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/profshare"
)

// componentCPUChunk is how long each CPU profile startComponentCPU takes
// is: the window is covered by consecutive profiles of this length, so it
// ends at most this much after stop was called.
const componentCPUChunk = 2 * time.Second

// startComponentCPU is called for every A run right before the workload
// starts (the first Node is created), with the status endpoint's address
// (host:port, plain HTTP on loopback). Until the function it returns is
// called (once every Pod is bound), it takes consecutive CPU profiles of
// componentCPUChunk from the status endpoint's /debug/pprof/profile; that
// function waits for the profile under way and returns the CPU seconds
// each component used, keyed by the pprof label `component` (package
// profshare; "" for the unlabelled rest), and that rest by what ran
// (profshare.Unlabelled: the garbage collector's workers, the rest of
// the runtime, goroutines started outside the components), and every
// sample's CPU by the kind of work it did (profshare.Work: TLS, HTTP/2,
// socket I/O, encoding, GC, other). The window so covered
// ends up to componentCPUChunk after the workload's; profiling's own cost
// lands in A's figures (the report's A column is the whole process over
// the workload window, measured apart), which is why the run it profiles
// is not one of the pairs. A failed profile is an error, not
// partial figures.
func startComponentCPU(statusAddr string) (stop func() (components, unlabelled, work map[string]time.Duration, err error)) {
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		shares profshare.Shares
		err    error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		client := &http.Client{Timeout: componentCPUChunk + 10*time.Second}
		url := "http://" + statusAddr + "/debug/pprof/profile?seconds=" + strconv.Itoa(int(componentCPUChunk/time.Second))
		for ctx.Err() == nil && r.err == nil {
			r.err = func() error {
				resp, err := client.Get(url)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("%s: %s: %s", url, resp.Status, body)
				}
				return r.shares.AddCPU(body)
			}()
		}
		done <- r
	}()
	return func() (map[string]time.Duration, map[string]time.Duration, map[string]time.Duration, error) {
		cancel()
		r := <-done
		if r.err != nil {
			return nil, nil, nil, fmt.Errorf("A's CPU by component: %w", r.err)
		}
		out := map[string]time.Duration{}
		for name, d := range r.shares.CPU {
			if name == profshare.Other {
				name = ""
			}
			out[name] += d
		}
		return out, r.shares.Unlabelled, r.shares.Work, nil
	}
}
