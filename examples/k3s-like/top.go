package main

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/pprof/profile"
	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/harness"
)

// The -o formats of `k3s-like top`.
var topOutputs = []string{"table", "json"}

// topOther is the row of the samples and goroutines that carry no
// component label: the Go runtime's own (the garbage collector's
// background workers, the scheduler), the status endpoint serving this
// profile, and goroutines started outside every component's code.
const topOther = "(other)"

// topChunk is the longest CPU profile top asks for in one request: the
// status client gives up on a request after 10 s, so a longer profile is
// taken in pieces of at most topChunk, one right after the other, and their
// samples are added up.
const topChunk = 5 * time.Second

func newTopCommand() *cobra.Command {
	var status statusClient
	var opts topOptions
	cmd := &cobra.Command{
		Use:   "top",
		Short: "Show which component of a running server uses the CPU, and how many goroutines each runs",
		Long: `Show which component of a running server uses the CPU, and how many goroutines
each runs. All components are goroutines of one process, so the operating
system sees one process; the harness runs each component's code under the
pprof label component=<name>. top takes a CPU profile of the server for
--seconds from its status endpoint (/debug/pprof/profile), adds up the
samples by that label, and counts the goroutines of a goroutine profile
(/debug/pprof/goroutine) the same way.

CPU% is a component's share of the CPU time the process used during the
profile; CPU-SECONDS is that CPU time (divide by --seconds for cores).
(other) is what carries no label: the Go runtime (the garbage collector's
background workers; the collection work a goroutine does while it allocates
is charged to that goroutine's component), the status endpoint, and
goroutines started outside a component's code. Memory is not split: Go's
heap profiles carry no labels.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(); err != nil {
				return err
			}
			report, err := opts.take(&status)
			if err != nil {
				return err
			}
			return opts.print(cmd.OutOrStdout(), report)
		},
	}
	status.addFlags(cmd)
	cmd.Flags().IntVar(&opts.seconds, "seconds", 10, "How long to profile the server's CPU, in seconds")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "Output format: "+strings.Join(topOutputs, ", "))
	return cmd
}

// topOptions are what `k3s-like top` profiles and how it prints.
type topOptions struct {
	seconds int
	output  string // one of topOutputs
}

func (o *topOptions) validate() error {
	if o.seconds < 1 {
		return fmt.Errorf("--seconds=%d: want a whole number of seconds, 1 or more", o.seconds)
	}
	if !slices.Contains(topOutputs, o.output) {
		return fmt.Errorf("-o %s: unknown output format; use one of %s", o.output, strings.Join(topOutputs, ", "))
	}
	return nil
}

// take profiles the server's CPU for o.seconds, in pieces of at most
// topChunk, then takes a goroutine profile, and adds them up by component.
func (o *topOptions) take(status *statusClient) (*topReport, error) {
	var cpu [][]byte
	chunk := int(topChunk / time.Second)
	for left := o.seconds; left > 0; left -= chunk {
		body, err := status.get("/debug/pprof/profile?seconds=" + strconv.Itoa(min(left, chunk)))
		if err != nil {
			return nil, fmt.Errorf("the CPU profile: %w", err)
		}
		cpu = append(cpu, body)
	}
	goroutines, err := status.get("/debug/pprof/goroutine?debug=0")
	if err != nil {
		return nil, fmt.Errorf("the goroutine profile: %w", err)
	}
	return newTopReport(cpu, goroutines)
}

// topReport is what `k3s-like top` prints: -o json prints it as it is.
type topReport struct {
	// DurationSeconds is how long the CPU was profiled.
	DurationSeconds float64 `json:"durationSeconds"`
	// CPUSeconds is the CPU time the process used meanwhile, as sampled.
	CPUSeconds float64 `json:"cpuSeconds"`
	// Goroutines is how many goroutines the process ran at the end.
	Goroutines int64 `json:"goroutines"`
	// Components has a row per component label, and topOther, by CPU
	// time, most first.
	Components []topRow `json:"components"`
}

// topRow is one component's share.
type topRow struct {
	Component  string  `json:"component"`
	CPUPercent float64 `json:"cpuPercent"`
	CPUSeconds float64 `json:"cpuSeconds"`
	Goroutines int64   `json:"goroutines"`
}

// newTopReport adds up CPU profiles (the pieces of one) and a goroutine
// profile, each as /debug/pprof serves it (gzipped protobuf), by the
// component label of each sample; samples without one go to topOther.
func newTopReport(cpuProfiles [][]byte, goroutineProfile []byte) (*topReport, error) {
	report := &topReport{}
	cpu := map[string]int64{} // nanoseconds
	var total int64
	for _, body := range cpuProfiles {
		p, err := parseProfile("CPU", body)
		if err != nil {
			return nil, err
		}
		i, err := sampleIndex(p, "CPU", "cpu", "nanoseconds")
		if err != nil {
			return nil, err
		}
		for _, s := range p.Sample {
			cpu[componentOf(s)] += s.Value[i]
			total += s.Value[i]
		}
		report.DurationSeconds += time.Duration(p.DurationNanos).Seconds()
	}
	p, err := parseProfile("goroutine", goroutineProfile)
	if err != nil {
		return nil, err
	}
	i, err := sampleIndex(p, "goroutine", "goroutine", "count")
	if err != nil {
		return nil, err
	}
	goroutines := map[string]int64{}
	for _, s := range p.Sample {
		goroutines[componentOf(s)] += s.Value[i]
		report.Goroutines += s.Value[i]
	}

	report.CPUSeconds = time.Duration(total).Seconds()
	names := maps.Clone(cpu)
	maps.Copy(names, goroutines) // every name of either profile
	for name := range names {
		row := topRow{Component: name, CPUSeconds: time.Duration(cpu[name]).Seconds(), Goroutines: goroutines[name]}
		if total > 0 {
			row.CPUPercent = 100 * float64(cpu[name]) / float64(total)
		}
		report.Components = append(report.Components, row)
	}
	slices.SortFunc(report.Components, func(a, b topRow) int {
		return cmp.Or(cmp.Compare(cpu[b.Component], cpu[a.Component]), cmp.Compare(b.Goroutines, a.Goroutines), strings.Compare(a.Component, b.Component))
	})
	return report, nil
}

// parseProfile parses a profile as /debug/pprof serves it: protobuf,
// gzipped. Unlike profile.Parse, it takes no legacy text format (a
// goroutine profile at debug=1, say), which would parse without its labels.
func parseProfile(what string, body []byte) (*profile.Profile, error) {
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

// componentOf is the sample's component label, or topOther.
func componentOf(s *profile.Sample) string {
	if v := s.Label[harness.ProfileLabel]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	return topOther
}

// print writes the report in o.output.
func (o *topOptions) print(w io.Writer, report *topReport) error {
	if o.output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
	fmt.Fprintln(tw, "COMPONENT\tCPU%\tCPU-SECONDS\tGOROUTINES")
	for _, r := range report.Components {
		fmt.Fprintf(tw, "%s\t%.1f%%\t%.2f\t%d\n", r.Component, r.CPUPercent, r.CPUSeconds, r.Goroutines)
	}
	return tw.Flush()
}
