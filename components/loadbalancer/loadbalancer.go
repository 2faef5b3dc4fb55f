package loadbalancer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

// Name is the component's name in a harness.
const Name = "apiserver-lb"

// DefaultPort is k3s's agent load balancer port (--lb-server-port).
const DefaultPort = 6444

// Defaults of LoadBalancer's intervals.
const (
	DefaultHealthInterval  = 2 * time.Second
	DefaultRefreshInterval = 10 * time.Second
	dialTimeout            = 2 * time.Second
)

// LoadBalancer is the harness component. Address and Servers are
// required. A value runs once.
type LoadBalancer struct {
	// Address is where it listens, host:port (127.0.0.1:6444).
	Address string
	// Servers are the apiservers known from the start, host:port; the
	// first is current at first. They stay in the list whatever the
	// endpoints say.
	Servers []string
	// Kubeconfig is a kubeconfig (pointing at Address) whose credential
	// may list the EndpointSlices of the default namespace; "" or a file
	// that does not exist yet: Servers only, until it does.
	Kubeconfig string
	// HealthInterval and RefreshInterval; 0 means the defaults.
	HealthInterval, RefreshInterval time.Duration

	mu      sync.Mutex
	servers []*backend // the list; current is servers[cur]
	cur     int
	ready   chan struct{}
	once    sync.Once
}

// backend is one apiserver and the connections proxied to it.
type backend struct {
	addr    string
	healthy bool
	conns   map[net.Conn]struct{} // the client side of each proxied connection
}

var (
	_ harness.Component = (*LoadBalancer)(nil)
	_ harness.Readier   = (*LoadBalancer)(nil)
)

// Name is Name.
func (lb *LoadBalancer) Name() string { return Name }

// AddFlags adds none: it is configured by its fields.
func (lb *LoadBalancer) AddFlags(*scoping.Scope) error { return nil }

func (lb *LoadBalancer) init() {
	lb.once.Do(func() { lb.ready = make(chan struct{}) })
}

// Ready returns nil once it listens.
func (lb *LoadBalancer) Ready(ctx context.Context) error {
	lb.init()
	select {
	case <-lb.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// URL is https://Address, for the kubeconfigs that go through it.
func (lb *LoadBalancer) URL() string { return "https://" + lb.Address }

// Current is the server new connections go to.
func (lb *LoadBalancer) Current() string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if len(lb.servers) == 0 {
		return ""
	}
	return lb.servers[lb.cur].addr
}

// ServerList is the list it balances over, current first.
func (lb *LoadBalancer) ServerList() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var out []string
	for i := range lb.servers {
		out = append(out, lb.servers[(lb.cur+i)%len(lb.servers)].addr)
	}
	return out
}

// Run listens on Address and proxies until ctx ends; then it closes the
// listener and every proxied connection and returns nil once its
// goroutines are done.
func (lb *LoadBalancer) Run(ctx context.Context) error {
	lb.init()
	if len(lb.Servers) == 0 {
		return fmt.Errorf("%s: no servers", Name)
	}
	log := klog.FromContext(ctx).WithName(Name)
	lb.setServers(lb.Servers)
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", lb.Address)
	if err != nil {
		return fmt.Errorf("%s: %w", Name, err)
	}
	log.Info("Load-balancing the apiservers", "address", lb.Address, "servers", lb.Servers)
	close(lb.ready)
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(ctx)
	wg.Go(func() { lb.checkHealth(ctx, log) })
	wg.Go(func() { lb.refresh(ctx, log) })
	wg.Go(func() {
		<-ctx.Done()
		l.Close()
		lb.closeAll()
	})
	for {
		c, err := l.Accept()
		if err != nil {
			cancel()
			wg.Wait()
			if ctx.Err() != nil && errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("%s: %w", Name, err)
		}
		wg.Go(func() { lb.proxy(ctx, log, c) })
	}
}

// setServers makes the list addrs (Servers first, each once), keeping
// what it knew of those it had, and the current server if it is still
// in it.
func (lb *LoadBalancer) setServers(addrs []string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var cur string
	if len(lb.servers) > 0 {
		cur = lb.servers[lb.cur].addr
	}
	old := map[string]*backend{}
	for _, b := range lb.servers {
		old[b.addr] = b
	}
	var next []*backend
	seen := map[string]bool{}
	for _, a := range slices.Concat(lb.Servers, addrs) {
		if seen[a] {
			continue
		}
		seen[a] = true
		b := old[a]
		if b == nil {
			b = &backend{addr: a, healthy: true, conns: map[net.Conn]struct{}{}}
		}
		delete(old, a)
		next = append(next, b)
	}
	for _, b := range old { // gone from the endpoints: their connections go
		for c := range b.conns {
			c.Close()
		}
	}
	lb.servers, lb.cur = next, 0
	for i, b := range next {
		if b.addr == cur {
			lb.cur = i
		}
	}
}

// pick returns the servers to try, current first, healthy before failed.
func (lb *LoadBalancer) pick() []*backend {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var healthy, failed []*backend
	for i := range lb.servers {
		b := lb.servers[(lb.cur+i)%len(lb.servers)]
		if b.healthy {
			healthy = append(healthy, b)
		} else {
			failed = append(failed, b)
		}
	}
	return append(healthy, failed...)
}

// proxy connects client to the first server that answers and copies both
// ways until either side closes.
func (lb *LoadBalancer) proxy(ctx context.Context, log klog.Logger, client net.Conn) {
	defer client.Close()
	var server net.Conn
	var b *backend
	for _, cand := range lb.pick() {
		d := net.Dialer{Timeout: dialTimeout}
		c, err := d.DialContext(ctx, "tcp", cand.addr)
		if err != nil {
			lb.markFailed(log, cand, err)
			continue
		}
		server, b = c, cand
		break
	}
	if server == nil {
		return // every server refused: the client sees its connection closed and retries
	}
	defer server.Close()
	if !lb.track(b, client) {
		return
	}
	defer lb.untrack(b, client)
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); closeWrite(server); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); closeWrite(client); done <- struct{}{} }()
	<-done
	client.Close()
	server.Close()
	<-done
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}

// track records client as proxied to b, unless b left the list.
func (lb *LoadBalancer) track(b *backend, client net.Conn) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if !slices.Contains(lb.servers, b) {
		return false
	}
	b.conns[client] = struct{}{}
	return true
}

func (lb *LoadBalancer) untrack(b *backend, client net.Conn) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	delete(b.conns, client)
}

// markFailed marks b failed; if it was current, the next healthy server
// becomes current and b's connections are closed.
func (lb *LoadBalancer) markFailed(log klog.Logger, b *backend, err error) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if !b.healthy {
		return
	}
	b.healthy = false
	idx := slices.Index(lb.servers, b)
	if idx < 0 {
		return
	}
	for c := range b.conns {
		c.Close()
	}
	if idx != lb.cur {
		log.Info("An apiserver stopped answering", "server", b.addr, "err", err)
		return
	}
	for i := 1; i < len(lb.servers); i++ {
		n := (lb.cur + i) % len(lb.servers)
		if lb.servers[n].healthy {
			lb.cur = n
			break
		}
	}
	log.Info("The current apiserver stopped answering: switching", "from", b.addr, "to", lb.servers[lb.cur].addr, "err", err)
}

// markHealthy marks b healthy again.
func (lb *LoadBalancer) markHealthy(log klog.Logger, b *backend) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if b.healthy {
		return
	}
	b.healthy = true
	log.Info("An apiserver answers again", "server", b.addr)
	if !lb.servers[lb.cur].healthy {
		if i := slices.Index(lb.servers, b); i >= 0 {
			lb.cur = i
		}
	}
}

// checkHealth dials every server each HealthInterval.
func (lb *LoadBalancer) checkHealth(ctx context.Context, log klog.Logger) {
	every := lb.HealthInterval
	if every <= 0 {
		every = DefaultHealthInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		lb.mu.Lock()
		all := slices.Clone(lb.servers)
		lb.mu.Unlock()
		var wg sync.WaitGroup
		for _, b := range all {
			wg.Go(func() {
				d := net.Dialer{Timeout: min(dialTimeout, every)}
				c, err := d.DialContext(ctx, "tcp", b.addr)
				if err != nil {
					if ctx.Err() == nil {
						lb.markFailed(log, b, err)
					}
					return
				}
				c.Close()
				lb.markHealthy(log, b)
			})
		}
		wg.Wait()
	}
}

// refresh sets the list from the kubernetes Service's EndpointSlices
// every RefreshInterval, once Kubeconfig exists.
func (lb *LoadBalancer) refresh(ctx context.Context, log klog.Logger) {
	every := lb.RefreshInterval
	if every <= 0 {
		every = DefaultRefreshInterval
	}
	var (
		last   string
		client *kubernetes.Clientset
	)
	for {
		var addrs []string
		var err error
		client, addrs, err = lb.endpoints(ctx, client)
		switch {
		case err != nil && ctx.Err() == nil && err.Error() != last:
			log.V(2).Info("Reading the apiservers' endpoints; retrying", "err", err)
			last = err.Error()
		case err == nil && len(addrs) > 0:
			before := lb.ServerList()
			lb.setServers(addrs)
			if after := lb.ServerList(); !sameSet(before, after) {
				log.Info("The apiservers changed", "servers", after)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// endpoints are the addresses of the kubernetes Service's endpoints,
// read with the client made from Kubeconfig once it exists.
func (lb *LoadBalancer) endpoints(ctx context.Context, client *kubernetes.Clientset) (*kubernetes.Clientset, []string, error) {
	if client == nil {
		if lb.Kubeconfig == "" {
			return nil, nil, nil
		}
		if _, err := os.Stat(lb.Kubeconfig); err != nil {
			return nil, nil, err
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", lb.Kubeconfig)
		if err != nil {
			return nil, nil, err
		}
		cfg.Timeout = 10 * time.Second
		cfg.UserAgent = "k3s-like-" + Name
		if client, err = kubernetes.NewForConfig(cfg); err != nil {
			return nil, nil, err
		}
	}
	list, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return client, nil, err
	}
	return client, Addresses(list.Items), nil
}

// Addresses are host:port of every ready endpoint of the EndpointSlices,
// on their https port.
func Addresses(endpointSlices []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range endpointSlices {
		port := int32(0)
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil || *p.Name == "https" || port == 0) {
				port = *p.Port
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				out = append(out, net.JoinHostPort(a, strconv.Itoa(int(port))))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// closeAll closes every proxied connection.
func (lb *LoadBalancer) closeAll() {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	for _, b := range lb.servers {
		for c := range b.conns {
			c.Close()
		}
	}
}
