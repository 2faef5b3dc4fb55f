package scoping

import (
	"fmt"
	"sort"
)

// Request is one component's explicit request for a process-wide setting:
// the scope that asked, the value it asked for, and the flag text that
// carried it, e.g. {kube-scheduler, "false", "--feature-gates=Foo=false"}.
//
// A request the component's own code made (a value it set on its scope's
// gate, a default it overrode) has Source SourceCode and a Flag of
// CodeSetFlag or CodeDefaultFlag. A request implied by AllAlpha or AllBeta
// has Via set to that gate and the Flag that gave it.
type Request struct {
	Component string `json:"component"`
	Value     string `json:"value"`
	Flag      string `json:"flag"`
	// Source is SourceCode for a request the component's code made; empty
	// for a flag.
	Source Source `json:"source,omitempty"`
	// Via is "AllAlpha" or "AllBeta" when the request is one feature of such
	// a flag: `--feature-gates=AllAlpha=true` asks for every alpha feature.
	Via string `json:"via,omitempty"`
}

// The Flag text of requests a component's code made.
const (
	// CodeSetFlag: the component's code set the value on its scope's gate.
	CodeSetFlag = "set in the component's code"
	// CodeDefaultFlag: the component's code overrode the default in its scope's gate.
	CodeDefaultFlag = "default overridden in the component's code"
)

func (r Request) String() string {
	return fmt.Sprintf("%s sets %s (%s)", r.Component, r.Value, r.Flag)
}

// sortRequests orders requests by component, stably.
func sortRequests(rs []Request) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Component < rs[j].Component })
}
