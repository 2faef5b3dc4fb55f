package top

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/profshare"
	"github.com/kubeharness/kubeharness/distro/k3s-like/internal/status"
)

// topOutputs are the -o formats of `k3s-like top`.
func topOutputs() []string { return []string{"table", "json"} }

// topOther is the row of the samples and goroutines that carry no
// component label: the Go runtime's own (the garbage collector's
// background workers, the scheduler), the status endpoint serving this
// profile, and goroutines started outside every component's code.
const topOther = profshare.Other

// topChunk is the longest CPU profile top asks for in one request: the
// status client gives up on a request after 10 s, so a longer profile is
// taken in pieces of at most topChunk, one right after the other, and their
// samples are added up.
const topChunk = 5 * time.Second

// NewCommand is `k3s-like top`.
func NewCommand() *cobra.Command {
	var client status.Client
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
(/debug/pprof/goroutine) the same way. The server serves them only with
--enable-pprof; over TLS only to system:masters or a user the apiserver
allows to get /debug/pprof/profile and /debug/pprof/goroutine.

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
			report, err := opts.take(&client)
			if err != nil {
				return err
			}
			return opts.print(cmd.OutOrStdout(), report)
		},
	}
	client.AddFlags(cmd)
	cmd.Flags().IntVar(&opts.seconds, "seconds", 10, "How long to profile the server's CPU, in seconds")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "table", "Output format: "+strings.Join(topOutputs(), ", "))
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
	if !slices.Contains(topOutputs(), o.output) {
		return fmt.Errorf("-o %s: unknown output format; use one of %s", o.output, strings.Join(topOutputs(), ", "))
	}
	return nil
}

// take profiles the server's CPU for o.seconds, in pieces of at most
// topChunk, then takes a goroutine profile, and adds them up by component.
func (o *topOptions) take(client *status.Client) (*topReport, error) {
	var cpu [][]byte
	chunk := int(topChunk / time.Second)
	for left := o.seconds; left > 0; left -= chunk {
		body, err := client.Get("/debug/pprof/profile?seconds=" + strconv.Itoa(min(left, chunk)))
		if se, ok := errors.AsType[*status.ResponseError](err); ok && se.Code == http.StatusNotFound {
			return nil, fmt.Errorf("the server at --status-address %s serves no profiles: start it with --enable-pprof", client.Addr)
		}
		if err != nil {
			return nil, fmt.Errorf("the CPU profile: %w", err)
		}
		cpu = append(cpu, body)
	}
	goroutines, err := client.Get("/debug/pprof/goroutine?debug=0")
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
// component label of each sample (package profshare); samples without one
// go to topOther.
func newTopReport(cpuProfiles [][]byte, goroutineProfile []byte) (*topReport, error) {
	var shares profshare.Shares
	for _, body := range cpuProfiles {
		if err := shares.AddCPU(body); err != nil {
			return nil, err
		}
	}
	if err := shares.AddGoroutines(goroutineProfile); err != nil {
		return nil, err
	}
	total := shares.TotalCPU()
	report := &topReport{DurationSeconds: shares.Profiled.Seconds(), CPUSeconds: total.Seconds()}
	names := map[string]bool{}
	for name := range shares.CPU {
		names[name] = true
	}
	for name, n := range shares.Goroutines {
		names[name] = true
		report.Goroutines += n
	}
	for name := range names {
		row := topRow{Component: name, CPUSeconds: shares.CPU[name].Seconds(), Goroutines: shares.Goroutines[name]}
		if total > 0 {
			row.CPUPercent = 100 * float64(shares.CPU[name]) / float64(total)
		}
		report.Components = append(report.Components, row)
	}
	slices.SortFunc(report.Components, func(a, b topRow) int {
		return cmp.Or(cmp.Compare(shares.CPU[b.Component], shares.CPU[a.Component]), cmp.Compare(b.Goroutines, a.Goroutines), strings.Compare(a.Component, b.Component))
	})
	return report, nil
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
