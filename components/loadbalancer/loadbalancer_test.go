package loadbalancer_test

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubeharness/kubeharness/components/loadbalancer"
)

// server is a TCP server that answers each line with its name, and can
// stop listening (its connections left open, as a hung host's) or be
// killed (connections reset, as a killed process's).
type server struct {
	t     *testing.T
	name  string
	addr  string
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newServer(t *testing.T, name, addr string) *server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	s := &server{t: t, name: name, addr: l.Addr().String(), l: l}
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() {
				sc := bufio.NewScanner(c)
				for sc.Scan() {
					if _, err := c.Write([]byte(s.name + "\n")); err != nil {
						return
					}
				}
			})
		}
	})
	t.Cleanup(s.kill)
	return s
}

// stopListening closes the listener only: existing connections hang on.
func (s *server) stopListening() { s.l.Close() }

// kill closes the listener and every connection.
func (s *server) kill() {
	s.l.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ask sends a line on c and returns the answer ("" on an error).
func ask(c net.Conn) string {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte("who\n")); err != nil {
		return ""
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return ""
	}
	return line[:len(line)-1]
}

func run(t *testing.T, lb *loadbalancer.LoadBalancer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- lb.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	require.NoError(t, lb.Ready(rctx))
}

func dial(t *testing.T, lb *loadbalancer.LoadBalancer) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", lb.Address)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// TestFailover: connections go to the first server; when it is killed,
// its clients' connections end and new ones go to the second at once (a
// dial that fails moves on); when it comes back, the second stays current.
func TestFailover(t *testing.T) {
	a, b := newServer(t, "a", "127.0.0.1:0"), newServer(t, "b", "127.0.0.1:0")
	lb := &loadbalancer.LoadBalancer{Address: freeAddr(t), Servers: []string{a.addr, b.addr}, HealthInterval: time.Hour}
	run(t, lb)
	c := dial(t, lb)
	assert.Equal(t, "a", ask(c))
	a.kill()
	assert.Equal(t, "", ask(c), "the killed server's connection ends")
	assert.Equal(t, "b", ask(dial(t, lb)), "a new connection goes to the next server")
	assert.Equal(t, b.addr, lb.Current())
	a2 := newServer(t, "a", a.addr)
	_ = a2
	assert.Equal(t, "b", ask(dial(t, lb)), "the current server stays while it answers")
}

// TestHealthCheckClosesHungConnections: a current server that stops
// accepting (its connections left open, as a host that vanished leaves
// them) is found by the health check: its proxied connections are
// closed, so that clients reconnect, and the next server is current.
func TestHealthCheckClosesHungConnections(t *testing.T) {
	a, b := newServer(t, "a", "127.0.0.1:0"), newServer(t, "b", "127.0.0.1:0")
	lb := &loadbalancer.LoadBalancer{Address: freeAddr(t), Servers: []string{a.addr, b.addr}, HealthInterval: 100 * time.Millisecond}
	run(t, lb)
	c := dial(t, lb)
	assert.Equal(t, "a", ask(c))
	a.stopListening()
	require.Eventually(t, func() bool { return lb.Current() == b.addr }, 5*time.Second, 20*time.Millisecond)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := c.Read(make([]byte, 1))
	assert.Error(t, err, "the connection to the hung server was closed")
	assert.Equal(t, "b", ask(dial(t, lb)))
}

// TestAllDown: with no server answering, a client's connection is closed
// (it retries); once one answers again, connections go through.
func TestAllDown(t *testing.T) {
	addr := freeAddr(t)
	lb := &loadbalancer.LoadBalancer{Address: freeAddr(t), Servers: []string{addr}, HealthInterval: 50 * time.Millisecond}
	run(t, lb)
	assert.Equal(t, "", ask(dial(t, lb)))
	newServer(t, "back", addr)
	require.Eventually(t, func() bool { return ask(dial(t, lb)) == "back" }, 5*time.Second, 50*time.Millisecond)
}

// TestAddresses: the ready endpoints of the kubernetes Service's slices,
// on their https port.
func TestAddresses(t *testing.T) {
	port, https := int32(6443), "https"
	yes, no := true, false
	got := loadbalancer.Addresses([]discoveryv1.EndpointSlice{{
		Ports: []discoveryv1.EndpointPort{{Name: &https, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"192.0.2.11"}, Conditions: discoveryv1.EndpointConditions{Ready: &yes}},
			{Addresses: []string{"192.0.2.10"}},
			{Addresses: []string{"192.0.2.12"}, Conditions: discoveryv1.EndpointConditions{Ready: &no}},
		},
	}})
	assert.Equal(t, []string{"192.0.2.10:6443", "192.0.2.11:6443"}, got)
}
