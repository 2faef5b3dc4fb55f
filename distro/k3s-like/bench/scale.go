package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// scale is one size of the workload: fake Nodes, and Deployments whose
// Pods must all be bound.
type scale struct {
	nodes, deployments, replicas int
}

// pods is the number of Pods the scale makes.
func (s scale) pods() int { return s.deployments * s.replicas }

// String is how the report and the log name a scale.
func (s scale) String() string {
	return fmt.Sprintf("%d Pods (%d Nodes, %d Deployments × %d)", s.pods(), s.nodes, s.deployments, s.replicas)
}

// boundTimeout is how long the workload may take to have every Pod bound:
// two minutes and 50 ms per Pod (6m10s at 5,000 Pods).
func (s scale) boundTimeout() time.Duration {
	return 2*time.Minute + time.Duration(s.pods())*50*time.Millisecond
}

// presets are make bench's scales (BENCH_SCALES names them by their Pods).
var presets = map[int]scale{
	150:  {nodes: 10, deployments: 50, replicas: 3},
	1500: {nodes: 50, deployments: 150, replicas: 10},
	5000: {nodes: 100, deployments: 250, replicas: 20},
}

// parseScales reads -scales: comma-separated Pod counts. 150, 1500 and 5000
// are the presets; any other count N gets max(3, ⌈N/50⌉) Nodes (at most
// 100) and Deployments of 3 (N < 500), 10 (N < 3000) or 20 replicas, as
// many as make at least N Pods.
func parseScales(spec string) ([]scale, error) {
	var out []scale
	for f := range strings.SplitSeq(spec, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-scales: %q is not a positive number of Pods", f)
		}
		if s, ok := presets[n]; ok {
			out = append(out, s)
			continue
		}
		s := scale{nodes: min(100, max(3, (n+49)/50)), replicas: 20}
		switch {
		case n < 500:
			s.replicas = 3
		case n < 3000:
			s.replicas = 10
		}
		s.deployments = (n + s.replicas - 1) / s.replicas
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-scales: no scale in %q", spec)
	}
	return out, nil
}
