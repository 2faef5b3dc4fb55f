package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestNetbench: against a server on loopback, rtt and tput print their
// figures, reach prints when it connected; a server that is not there
// yet is reached once it listens; serve returns when its context ends.
func TestNetbench(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there until serve starts

	ctx, cancel := context.WithCancel(t.Context())
	reached := make(chan string, 1)
	go func() {
		var out bytes.Buffer
		if err := run(ctx, []string{"reach", "-addr", addr, "-every", "20ms"}, &out); err != nil {
			reached <- "error: " + err.Error()
			return
		}
		reached <- out.String()
	}()
	time.Sleep(100 * time.Millisecond) // a few refused dials first
	served := make(chan error, 1)
	listening := time.Now()
	go func() { served <- run(ctx, []string{"serve", "-listen", addr}, nil) }()

	got := <-reached
	m := regexp.MustCompile(`^reach reached=([0-9]+) attempts=([0-9]+)\n$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("reach printed %q", got)
	}
	at, _ := strconv.ParseInt(m[1], 10, 64)
	if when := time.Unix(0, at); when.Before(listening) || time.Since(when) > 10*time.Second {
		t.Errorf("reached at %s, the server listened from %s", when, listening)
	}
	t.Logf("reached after %s attempts", m[2])

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rtt", "-addr", addr, "-n", "200"}, `^rtt n=200 mean_us=[0-9.]+ p50_us=[0-9.]+ p90_us=[0-9.]+ p99_us=[0-9.]+ max_us=[0-9.]+\n$`},
		{[]string{"tput", "-addr", addr, "-d", "200ms"}, `^tput bytes=[1-9][0-9]* seconds=0\.[2-9][0-9]* MiB_per_s=[0-9.]+ Gbit_per_s=[0-9.]+\n$`},
	} {
		var out bytes.Buffer
		if err := run(ctx, tc.args, &out); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if !regexp.MustCompile(tc.want).MatchString(out.String()) {
			t.Errorf("%v printed %q", tc.args, out.String())
		}
	}
	cancel()
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}
