package main

import (
	"encoding/json"
	"net/http"
)

// statusHandler is what --status-address serves: the harness status handler
// (/components, /features, /healthz) and /leader-election.
func (o *serverOptions) statusHandler(cp *controlPlane) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", cp.h.Handler())
	mux.HandleFunc("GET /leader-election", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(cp.leaderElection())
	})
	return mux
}
