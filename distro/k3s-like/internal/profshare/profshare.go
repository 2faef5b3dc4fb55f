// Package profshare adds up pprof profiles of a kubeharness process by the
// component each sample belongs to: the harness runs every component's
// code under the pprof label harness.ProfileLabel (component=<name>), so a
// CPU profile's samples and a goroutine profile's goroutines carry the
// name of the component that started them. Samples without the label —
// the Go runtime's own (the garbage collector's background workers, the
// scheduler) and goroutines started outside every component — are Other.
// `k3s-like top` and the benchmark's per-component CPU split use it.
package profshare

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/google/pprof/profile"

	"github.com/kubeharness/kubeharness/harness"
)

// Other is the name of the samples and goroutines that carry no component
// label.
const Other = "(other)"

// Shares is what some profiles say per component: CPU time and goroutines,
// keyed by the component label (Other for none).
type Shares struct {
	// Profiled is the wall time the CPU profiles covered, added up.
	Profiled time.Duration
	// CPU is the CPU time of each component, as sampled.
	CPU map[string]time.Duration
	// Goroutines is each component's goroutines in the goroutine profiles.
	Goroutines map[string]int64
	// Unlabelled splits Other's CPU time by what ran (Unlabelled).
	Unlabelled map[string]time.Duration
	// Work is the CPU time of every sample, labelled or not, by the kind
	// of work it did (Work).
	Work map[string]time.Duration
}

// AddCPU adds a CPU profile, as /debug/pprof/profile serves it (gzipped
// protobuf), to s.
func (s *Shares) AddCPU(body []byte) error {
	p, err := Parse("CPU", body)
	if err != nil {
		return err
	}
	i, err := sampleIndex(p, "CPU", "cpu", "nanoseconds")
	if err != nil {
		return err
	}
	if s.CPU == nil {
		s.CPU = map[string]time.Duration{}
	}
	if s.Unlabelled == nil {
		s.Unlabelled = map[string]time.Duration{}
	}
	if s.Work == nil {
		s.Work = map[string]time.Duration{}
	}
	for _, sample := range p.Sample {
		c := Component(sample)
		s.CPU[c] += time.Duration(sample.Value[i])
		s.Work[Work(sample)] += time.Duration(sample.Value[i])
		if c == Other {
			s.Unlabelled[Unlabelled(sample)] += time.Duration(sample.Value[i])
		}
	}
	s.Profiled += time.Duration(p.DurationNanos)
	return nil
}

// AddGoroutines adds a goroutine profile, as /debug/pprof/goroutine?debug=0
// serves it, to s.
func (s *Shares) AddGoroutines(body []byte) error {
	p, err := Parse("goroutine", body)
	if err != nil {
		return err
	}
	i, err := sampleIndex(p, "goroutine", "goroutine", "count")
	if err != nil {
		return err
	}
	if s.Goroutines == nil {
		s.Goroutines = map[string]int64{}
	}
	for _, sample := range p.Sample {
		s.Goroutines[Component(sample)] += sample.Value[i]
	}
	return nil
}

// TotalCPU is the CPU time of every component and Other.
func (s *Shares) TotalCPU() time.Duration {
	var total time.Duration
	for _, d := range s.CPU {
		total += d
	}
	return total
}

// Parse parses a profile as /debug/pprof serves it: protobuf, gzipped or
// not. Unlike profile.Parse, it takes no legacy text format (a goroutine
// profile at debug=1, say), which would parse without its labels. what
// names the profile in errors.
func Parse(what string, body []byte) (*profile.Profile, error) {
	p, err := func() (*profile.Profile, error) {
		if bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
			gz, err := gzip.NewReader(bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			if body, err = io.ReadAll(gz); err != nil {
				return nil, err
			}
		}
		p, err := profile.ParseUncompressed(body)
		if err != nil {
			return nil, err
		}
		return p, p.CheckValid()
	}()
	if err != nil {
		return nil, fmt.Errorf("the %s profile is no pprof protobuf profile: %w", what, err)
	}
	return p, nil
}

// sampleIndex is the index of the sample value of that type and unit.
func sampleIndex(p *profile.Profile, what, typ, unit string) (int, error) {
	for i, st := range p.SampleType {
		if st.Type == typ && st.Unit == unit {
			return i, nil
		}
	}
	var have []string
	for _, st := range p.SampleType {
		have = append(have, st.Type+"/"+st.Unit)
	}
	return 0, fmt.Errorf("the %s profile has no %s/%s samples (it has %s)", what, typ, unit, strings.Join(have, ", "))
}

// Component is the sample's component label, or Other.
func Component(s *profile.Sample) string {
	if v := s.Label[harness.ProfileLabel]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	return Other
}

// The kinds of unlabelled work Unlabelled tells apart.
const (
	GCWorkers    = "runtime: GC mark workers"            // runtime.gcBgMarkWorker
	GCBackground = "runtime: sweeper and scavenger"      // runtime.bgsweep, runtime.bgscavenge
	RuntimeOther = "runtime: scheduler, timers, signals" // other runtime roots, or no Go stack
)

// Unlabelled says what an unlabelled sample ran, by the root (outermost)
// frame of its stack: the garbage collector's background workers, the
// runtime's other background work, or else the package of the goroutine's
// entry function ("goroutine in <package>"), which names code that started
// a goroutine outside every component.
func Unlabelled(s *profile.Sample) string {
	var root string
	for i := len(s.Location) - 1; i >= 0 && root == ""; i-- {
		lines := s.Location[i].Line
		for j := len(lines) - 1; j >= 0; j-- { // outermost inlined call last
			if lines[j].Function != nil && lines[j].Function.Name != "" {
				root = lines[j].Function.Name
				break
			}
		}
	}
	switch {
	case root == "runtime.gcBgMarkWorker":
		return GCWorkers
	case root == "runtime.bgsweep" || root == "runtime.bgscavenge":
		return GCBackground
	case root == "", strings.HasPrefix(root, "runtime."):
		return RuntimeOther
	}
	return "goroutine in " + FuncPackage(root)
}

// FuncPackage is the import path of a function's symbol name, a gopkg.in
// path's version included ("gopkg.in/yaml.v3.Unmarshal" → "gopkg.in/yaml.v3").
func FuncPackage(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	last := fn[slash+1:]
	dot := strings.IndexByte(last, '.')
	if dot < 0 {
		return fn
	}
	if strings.HasPrefix(fn, "gopkg.in/") {
		if v := gopkgVersion(last[dot+1:]); v > 0 {
			dot += 1 + v
		}
	}
	return fn[:slash+1+dot]
}

// gopkgVersion is the length of a gopkg.in version ("v3") that starts s
// and is followed by a dot, or 0.
func gopkgVersion(s string) int {
	i := 1
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if len(s) < 3 || s[0] != 'v' || i == 1 || i == len(s) || s[i] != '.' {
		return 0
	}
	return i
}

// The kinds of work Work tells apart: what one process could spare its
// in-process clients (TLS, HTTP/2, socket I/O, encoding) and the GC.
const (
	WorkGC       = "garbage collection (mark workers, assists, sweep)"
	WorkTLS      = "TLS and crypto"
	WorkHTTP2    = "HTTP/2 framing"
	WorkHTTP     = "HTTP (net/http, other)"
	WorkSocket   = "socket reads and writes"
	WorkEncoding = "encoding and decoding (JSON, protobuf, CBOR)"
	WorkOther    = "other work"
)

// workKinds are the kinds by frame: the innermost frame of a sample that
// one of them names decides its kind.
var workKinds = []struct {
	kind     string
	prefixes []string
}{
	{WorkGC, []string{"runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.gcDrain", "runtime.bgsweep", "runtime.bgscavenge", "runtime.markroot", "runtime.scanobject", "runtime.greyobject"}},
	{WorkTLS, []string{"crypto/"}},
	{WorkSocket, []string{"internal/poll.(*FD).", "net.(*netFD).", "net.(*conn)."}},
	{WorkHTTP2, []string{"net/http.(*http2", "net/http.http2", "golang.org/x/net/http2."}},
	{WorkHTTP, []string{"net/http."}},
	{WorkEncoding, []string{"encoding/json.", "sigs.k8s.io/json", "k8s.io/apimachinery/pkg/runtime/serializer", "k8s.io/apimachinery/pkg/util/json", "google.golang.org/protobuf/", "github.com/gogo/protobuf/", "github.com/fxamacker/cbor/", "go.etcd.io/etcd/api/v3/"}},
}

// dispatch are net/http's frames that only call a handler: every request's
// handler runs under them, so they name no kind (the handler's work is not
// HTTP's).
var dispatch = []string{
	"net/http.HandlerFunc.ServeHTTP", "net/http.serverHandler.ServeHTTP", "net/http.(*ServeMux).ServeHTTP",
	"net/http.(*conn).serve", "net/http.(*http2serverConn).runHandler", "net/http.http2serverConn.runHandler",
}

// Work says what kind of work a sample did, by the innermost frame of its
// stack that names one (the GC's workers and assists, TLS, socket I/O,
// HTTP/2, other net/http but its handler dispatch, encoding and decoding,
// else WorkOther); the generated protobuf methods of Kubernetes' API types
// (Marshal, Unmarshal, Size, …) count as encoding.
func Work(s *profile.Sample) string {
	for _, loc := range s.Location { // innermost first
		for _, line := range loc.Line { // innermost inlined call first
			if line.Function == nil {
				continue
			}
			name := line.Function.Name
			if slices.Contains(dispatch, name) {
				continue
			}
			for _, k := range workKinds {
				for _, p := range k.prefixes {
					if strings.HasPrefix(name, p) {
						return k.kind
					}
				}
			}
			if generatedCodec(name) {
				return WorkEncoding
			}
		}
	}
	return WorkOther
}

// generatedCodec reports whether fn is a generated protobuf method of an
// API type: k8s.io/api/...(*T).Marshal, Unmarshal, MarshalToSizedBuffer,
// Size, or their helpers (encodeVarintGenerated, sovGenerated, …).
func generatedCodec(fn string) bool {
	if !strings.HasPrefix(fn, "k8s.io/api/") && !strings.HasPrefix(fn, "k8s.io/apimachinery/pkg/apis/") {
		return false
	}
	method := fn[strings.LastIndexByte(fn, '.')+1:]
	switch method {
	case "Marshal", "Unmarshal", "MarshalTo", "MarshalToSizedBuffer", "Size":
		return true
	}
	return strings.HasPrefix(method, "encodeVarintGenerated") || strings.HasPrefix(method, "sovGenerated") || strings.HasPrefix(method, "skipGenerated")
}
