package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "netbench:", err)
		stop()
		os.Exit(1)
	}
}

// The first byte of a connection says what the server does with it.
const (
	modeEcho = 'e'
	modeSink = 's'
)

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: netbench serve|rtt|tput|reach [flags]")
	}
	fs := flag.NewFlagSet("netbench "+args[0], flag.ContinueOnError)
	listen := fs.String("listen", ":5201", "serve: the address to listen on")
	addr := fs.String("addr", "", "rtt, tput, reach: the server's IP:PORT")
	n := fs.Int("n", 2000, "rtt: round trips")
	d := fs.Duration("d", 3*time.Second, "tput: how long to send")
	every := fs.Duration("every", 50*time.Millisecond, "reach: time between dials (each dial times out after it)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if args[0] != "serve" && *addr == "" {
		return errors.New("-addr is required")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, *listen)
	case "rtt":
		return rtt(ctx, *addr, *n, out)
	case "tput":
		return tput(ctx, *addr, *d, out)
	case "reach":
		return reach(ctx, *addr, *every, out)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// serve answers each connection: echo every byte back, or read all and
// then write how many bytes came (8 bytes, big-endian).
func serve(ctx context.Context, addr string) error {
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go handle(c)
	}
}

func handle(c net.Conn) {
	defer c.Close()
	mode := make([]byte, 1)
	if _, err := io.ReadFull(c, mode); err != nil {
		return
	}
	switch mode[0] {
	case modeEcho:
		_, _ = io.Copy(c, c)
	case modeSink:
		n, _ := io.Copy(io.Discard, c)
		_ = binary.Write(c, binary.BigEndian, n)
	}
}

func dial(ctx context.Context, addr string, mode byte) (*net.TCPConn, error) {
	c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	if err := tc.SetNoDelay(true); err != nil {
		tc.Close()
		return nil, err
	}
	if _, err := tc.Write([]byte{mode}); err != nil {
		tc.Close()
		return nil, err
	}
	return tc, nil
}

// rtt times n one-byte round trips over one connection.
func rtt(ctx context.Context, addr string, n int, out io.Writer) error {
	c, err := dial(ctx, addr, modeEcho)
	if err != nil {
		return err
	}
	defer c.Close()
	b := []byte{0}
	times := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if _, err := c.Write(b); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return err
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	var sum time.Duration
	for _, t := range times {
		sum += t
	}
	us := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Microsecond)) }
	pct := func(p int) time.Duration { return times[(len(times)-1)*p/100] }
	_, err = fmt.Fprintf(out, "rtt n=%d mean_us=%s p50_us=%s p90_us=%s p99_us=%s max_us=%s\n",
		n, us(sum/time.Duration(n)), us(pct(50)), us(pct(90)), us(pct(99)), us(times[len(times)-1]))
	return err
}

// tput sends for d, then reads how many bytes the server received.
func tput(ctx context.Context, addr string, d time.Duration, out io.Writer) error {
	c, err := dial(ctx, addr, modeSink)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, 128<<10)
	start := time.Now()
	if err := c.SetWriteDeadline(start.Add(d)); err != nil {
		return err
	}
	for {
		if _, err := c.Write(buf); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				break
			}
			return err
		}
	}
	if err := c.CloseWrite(); err != nil {
		return err
	}
	var got int64
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return err
	}
	if err := binary.Read(c, binary.BigEndian, &got); err != nil {
		return fmt.Errorf("the server's byte count: %w", err)
	}
	secs := time.Since(start).Seconds()
	_, err = fmt.Fprintf(out, "tput bytes=%d seconds=%.3f MiB_per_s=%.1f Gbit_per_s=%.3f\n", got, secs, float64(got)/secs/(1<<20), float64(got)*8/secs/1e9)
	return err
}

// reach dials every `every` until a connection is made.
func reach(ctx context.Context, addr string, every time.Duration, out io.Writer) error {
	for attempt := 1; ; attempt++ {
		start := time.Now()
		dctx, cancel := context.WithTimeout(ctx, every)
		c, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
		cancel()
		if err == nil {
			at := time.Now()
			c.Close()
			_, err = fmt.Fprintf(out, "reach reached=%d attempts=%d\n", at.UnixNano(), attempt)
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not reached after %d attempts: %w", addr, attempt, ctx.Err())
		case <-time.After(every - time.Since(start)): // a refused dial returns at once
		}
	}
}
