package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/datadir"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/profshare"
)

// memStats is the Go runtime's view of one process's memory, from its
// Prometheus go_memstats_* series, in bytes (gogc in percent, -1 when the
// process does not say).
type memStats struct {
	heapAlloc, nextGC, heapInuse, heapIdle, heapReleased, stackInuse, sys float64
	// liveAfterGC is heap_alloc right after the forced GC of the heap
	// profile: the live heap.
	liveAfterGC float64
	gogc        float64
}

// memView is what a run's processes hold once every Pod is bound, read
// after RSS was: the runtime's figures per process, and the heap
// profiles' in-use bytes by owner package summed over the processes.
type memView struct {
	procs   map[string]memStats
	byOwner map[string]int64
	inuse   int64
}

// goStat are the series memStats reads.
var goStat = map[string]func(*memStats) *float64{
	"go_memstats_heap_alloc_bytes":    func(m *memStats) *float64 { return &m.heapAlloc },
	"go_memstats_next_gc_bytes":       func(m *memStats) *float64 { return &m.nextGC },
	"go_memstats_heap_inuse_bytes":    func(m *memStats) *float64 { return &m.heapInuse },
	"go_memstats_heap_idle_bytes":     func(m *memStats) *float64 { return &m.heapIdle },
	"go_memstats_heap_released_bytes": func(m *memStats) *float64 { return &m.heapReleased },
	"go_memstats_stack_inuse_bytes":   func(m *memStats) *float64 { return &m.stackInuse },
	"go_memstats_sys_bytes":           func(m *memStats) *float64 { return &m.sys },
	"go_gc_gogc_percent":              func(m *memStats) *float64 { return &m.gogc },
}

// parseGoStats reads goStat's series from a Prometheus text body.
func parseGoStats(body []byte) (memStats, error) {
	m := memStats{gogc: -1}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		if f, ok := goStat[name]; ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return m, fmt.Errorf("%s: %w", name, err)
			}
			*f(&m) = v
			found++
		}
	}
	if m.heapAlloc == 0 || m.nextGC == 0 {
		return m, fmt.Errorf("no go_memstats_heap_alloc_bytes/next_gc_bytes in /metrics (%d of the series)", found)
	}
	return m, sc.Err()
}

// componentsTLS is the admin's client TLS configuration of cfg for the
// components' own ports, whose serving certificates are self-signed: not
// verified (loopback, the run's own processes).
func componentsTLS(cfg *rest.Config) (*tls.Config, error) {
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	c := tlsCfg.Clone()
	c.InsecureSkipVerify = true //nolint:gosec // the components' self-signed serving certificates
	c.RootCAs = nil
	return c, nil
}

// memEndpoint is where one process says what it holds.
type memEndpoint struct {
	name, metrics, heap string
	client              *http.Client
}

// memEndpoints are the processes of a run of kind: A's one process (its
// /metrics is the apiserver's, its heap profile the status endpoint's),
// B's four.
func memEndpoints(kind, dir string, p ports, cfg *rest.Config) ([]memEndpoint, error) {
	admin, err := componentsTLS(cfg)
	if err != nil {
		return nil, err
	}
	client := func(c *tls.Config) *http.Client {
		return &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: c}}
	}
	https := func(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) }
	const heap = "/debug/pprof/heap?gc=1"
	if kind == "A" {
		return []memEndpoint{{"k3s-like", https(p.https) + "/metrics", "http://127.0.0.1:" + strconv.Itoa(p.status) + heap, client(admin)}}, nil
	}
	etcdCert := datadir.PKI(dir).APIServerEtcdClient()
	pair, err := tls.LoadX509KeyPair(etcdCert.CertFile, etcdCert.KeyFile)
	if err != nil {
		return nil, err
	}
	// B's feature discovery serves on B's unused status port.
	discovery := "http://127.0.0.1:" + strconv.Itoa(p.status)
	etcdTLS := &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true} //nolint:gosec // loopback, the run's own etcd
	return []memEndpoint{
		{"etcd", https(p.etcdClient) + "/metrics", https(p.etcdClient) + heap, client(etcdTLS)},
		{"kube-apiserver", https(p.https) + "/metrics", https(p.https) + heap, client(admin)},
		{"kube-scheduler", https(p.scheduler) + "/metrics", https(p.scheduler) + heap, client(admin)},
		{"kube-controller-manager", https(p.kcm) + "/metrics", https(p.kcm) + heap, client(admin)},
		{discoveryProcess, discovery + "/metrics", discovery + heap, client(nil)},
	}, nil
}

// readMemory reads every endpoint's runtime figures, then its heap profile
// (which forces a GC), then its figures again for the live heap; the
// profiles are kept in profileDir (if not "") as <prefix>-<name>.heap.pb.gz.
func readMemory(eps []memEndpoint, profileDir, prefix string) (memView, error) {
	v := memView{procs: map[string]memStats{}, byOwner: map[string]int64{}}
	get := func(c *http.Client, url string) ([]byte, error) {
		resp, err := c.Get(url)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err == nil && resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s: %s: %.200s", url, resp.Status, body)
		}
		return body, err
	}
	for _, ep := range eps {
		body, err := get(ep.client, ep.metrics)
		if err != nil {
			return v, fmt.Errorf("%s: %w", ep.name, err)
		}
		m, err := parseGoStats(body)
		if err != nil {
			return v, fmt.Errorf("%s %s: %w", ep.name, ep.metrics, err)
		}
		prof, err := get(ep.client, ep.heap)
		if err != nil {
			return v, fmt.Errorf("%s: %w", ep.name, err)
		}
		if profileDir != "" {
			if err := os.WriteFile(filepath.Join(profileDir, prefix+"-"+ep.name+".heap.pb.gz"), prof, 0o644); err != nil {
				return v, err
			}
		}
		owners, total, err := heapByOwner(prof)
		if err != nil {
			return v, fmt.Errorf("%s: %w", ep.name, err)
		}
		for k, n := range owners {
			v.byOwner[k] += n
		}
		v.inuse += total
		if body, err = get(ep.client, ep.metrics); err != nil {
			return v, fmt.Errorf("%s: %w", ep.name, err)
		}
		after, err := parseGoStats(body)
		if err != nil {
			return v, fmt.Errorf("%s %s: %w", ep.name, ep.metrics, err)
		}
		m.liveAfterGC = after.heapAlloc
		v.procs[ep.name] = m
	}
	return v, nil
}

// generic are the packages that allocate on behalf of their callers
// (decoding, copying, the runtime): a heap sample belongs to the first
// frame above them.
var generic = []string{
	"runtime", "reflect", "sync", "bytes", "strings", "strconv", "unicode", "math", "sort", "slices", "maps",
	"encoding/", "compress/", "bufio", "io", "fmt", "errors", "context", "container/", "unique", "internal/",
	"k8s.io/apimachinery/", "k8s.io/api/", "k8s.io/utils/", "sigs.k8s.io/structured-merge-diff", "sigs.k8s.io/json",
	"github.com/json-iterator", "github.com/modern-go", "github.com/gogo/protobuf", "google.golang.org/protobuf",
	"github.com/golang/protobuf", "k8s.io/kube-openapi/pkg/util", "github.com/google/gnostic",
}

func isGeneric(pkg string) bool {
	for _, g := range generic {
		if pkg == strings.TrimSuffix(g, "/") || (strings.HasSuffix(g, "/") && strings.HasPrefix(pkg, g)) || strings.HasPrefix(pkg, g+"/") {
			return true
		}
	}
	return !strings.Contains(pkg, ".") && !strings.Contains(pkg, "/") && pkg != "main" // other standard library
}

// heapByOwner adds up a heap profile's in-use bytes by owner: the package
// of the innermost frame not in a generic package (or the innermost
// frame's own, if all are).
func heapByOwner(body []byte) (map[string]int64, int64, error) {
	p, err := profshare.Parse("heap", body)
	if err != nil {
		return nil, 0, err
	}
	idx := -1
	for i, st := range p.SampleType {
		if st.Type == "inuse_space" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, 0, fmt.Errorf("the heap profile has no inuse_space")
	}
	out := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		n := s.Value[idx]
		if n == 0 {
			continue
		}
		owner := ""
	stack:
		for _, loc := range s.Location {
			for _, line := range loc.Line { // innermost first
				if line.Function == nil {
					continue
				}
				pkg := profshare.FuncPackage(line.Function.Name)
				if owner == "" {
					owner = pkg
				}
				if !isGeneric(pkg) {
					owner = pkg
					break stack
				}
			}
		}
		out[owner] += n
		total += n
	}
	return out, total, nil
}

// ownerRow is one owner's in-use heap in A against B's processes.
type ownerRow struct {
	owner string
	a, b  int64
}

// ownerDiff is every owner's median in-use bytes, A and B, sorted by |A-B|.
func ownerDiff(a, b []memView) []ownerRow {
	owners := map[string]bool{}
	for _, vs := range [][]memView{a, b} {
		for _, v := range vs {
			for k := range v.byOwner {
				owners[k] = true
			}
		}
	}
	med := func(vs []memView, k string) int64 {
		var xs []float64
		for _, v := range vs {
			xs = append(xs, float64(v.byOwner[k]))
		}
		return int64(med(xs))
	}
	var rows []ownerRow
	for k := range owners {
		rows = append(rows, ownerRow{k, med(a, k), med(b, k)})
	}
	abs := func(x int64) int64 {
		if x < 0 {
			return -x
		}
		return x
	}
	sort.Slice(rows, func(i, j int) bool {
		if d1, d2 := abs(rows[i].a-rows[i].b), abs(rows[j].a-rows[j].b); d1 != d2 {
			return d1 > d2
		}
		return rows[i].owner < rows[j].owner
	})
	return rows
}

// renderMemory writes a scale's memory section: the runtime's figures of
// A's process and B's processes, and the owners whose in-use heap differs
// most between A and B.
func renderMemory(sb *strings.Builder, s scaleRuns) {
	mem := func(rs []result) []memView {
		var out []memView
		for _, r := range rs {
			if r.mem.procs != nil {
				out = append(out, r.mem)
			}
		}
		return out
	}
	a, b := mem(s.a), mem(s.b)
	if len(a) == 0 || len(b) == 0 {
		return
	}
	procs := bProcesses
	stat := func(vs []memView, proc string, get func(memStats) float64) string {
		var xs []float64
		for _, v := range vs {
			if proc == "" {
				var t float64
				for _, m := range v.procs {
					t += get(m)
				}
				xs = append(xs, t)
			} else if m, ok := v.procs[proc]; ok {
				xs = append(xs, get(m))
			}
		}
		if len(xs) == 0 {
			return "–"
		}
		return fmt.Sprintf("%.0f", med(xs))
	}
	const mib = 1 << 20
	rows := []struct {
		name string
		get  func(memStats) float64
	}{
		{"live heap (heap alloc right after a forced GC)", func(m memStats) float64 { return m.liveAfterGC / mib }},
		{"heap alloc (before it)", func(m memStats) float64 { return m.heapAlloc / mib }},
		{"heap goal (next GC)", func(m memStats) float64 { return m.nextGC / mib }},
		{"heap in use (spans)", func(m memStats) float64 { return m.heapInuse / mib }},
		{"heap idle, not released", func(m memStats) float64 { return (m.heapIdle - m.heapReleased) / mib }},
		{"stacks", func(m memStats) float64 { return m.stackInuse / mib }},
		{"sys (all the runtime got from the OS)", func(m memStats) float64 { return m.sys / mib }},
	}
	fmt.Fprintf(sb, "\nMemory once every Pod is bound, the Go runtime's view (`go_memstats_*` of each process's `/metrics`, read after RSS; MiB, medians):\n\n| MiB | A | B (sum) |")
	for _, p := range procs {
		fmt.Fprintf(sb, " B %s |", p)
	}
	sb.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(procs)) + "\n")
	for _, row := range rows {
		fmt.Fprintf(sb, "| %s | %s | %s |", row.name, stat(a, "", row.get), stat(b, "", row.get))
		for _, p := range procs {
			fmt.Fprintf(sb, " %s |", stat(b, p, row.get))
		}
		sb.WriteString("\n")
	}
	gogc := func(m memStats) float64 { return m.gogc }
	fmt.Fprintf(sb, "| GOGC | %s | – |", stat(a, "k3s-like", gogc))
	for _, p := range procs {
		fmt.Fprintf(sb, " %s |", stat(b, p, gogc))
	}
	sb.WriteString("\n")

	total := func(vs []memView) float64 {
		var xs []float64
		for _, v := range vs {
			xs = append(xs, float64(v.inuse))
		}
		return med(xs) / mib
	}
	fmt.Fprintf(sb, "\nIn-use heap by owner (the heap profiles taken right after, `inuse_space`, summed over B's processes; the owner is the innermost frame outside the runtime, decoding and apimachinery packages; MiB, medians; A %.0f, B %.0f in all). The owners whose A − B differ most:\n\n| owner | A | B | A − B |\n|---|---|---|---|\n", total(a), total(b))
	owners := ownerDiff(a, b)
	for _, r := range owners[:min(15, len(owners))] {
		fmt.Fprintf(sb, "| `%s` | %.1f | %.1f | %+.1f |\n", r.owner, float64(r.a)/mib, float64(r.b)/mib, float64(r.a-r.b)/mib)
	}
}
