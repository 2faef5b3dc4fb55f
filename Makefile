# kubeharness. `make test` is what CI runs (.ci/run); `make run` starts the
# k3s-like control plane on its embedded defaults.
SHELL := bash
GO ?= go
# The core module: scoping/, harness/, race/. It never imports k8s.io/kubernetes.
CORE_PKGS := ./...
FUZZTIME ?= 30s

# k8s.io/kubernetes is pinned in one place, components/go.mod; binaries and
# tests built from it get that version stamped in (built from the module, it
# would report v0.0.0-master and emulate nothing right).
K8S_VERSION := $(shell awk '$$1 == "k8s.io/kubernetes" { print $$2; exit }' components/go.mod)
K8S_MINOR := $(word 2,$(subst ., ,$(K8S_VERSION)))
K8S_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(K8S_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean
DATA_DIR ?= $(CURDIR)/.data/k3s-like

.PHONY: generate test vet test-core test-minors consumer-check race fuzz bench bench-core run build test-components test-example test-minimal check-replaces

test: vet test-core race test-minors consumer-check check-replaces test-components test-example test-minimal

vet:
	$(GO) vet $(CORE_PKGS)

# race/ runs in its own target, so test-core leaves it out.
test-core:
	$(GO) test -race -count=1 $$($(GO) list $(CORE_PKGS) | grep -v /race$$)

# The reproductions of the upstream clobbering, under -race: registry-level
# (core module, race/) and with the real commands (components/upstreamrace;
# a cold -race build of k8s.io/kubernetes for it took 16m15s here).
race:
	$(GO) test -race -count=1 ./race/
	cd components && $(GO) test -race -count=1 -ldflags "$(K8S_LDFLAGS)" ./upstreamrace/

# The core module against the latest patch of each supported minor of
# k8s.io/component-base, apiserver and apimachinery (v0.34 to v0.37), each
# from a temporary modfile, under -race, with a consumer per minor that must
# stay on its minor. go.mod requires the oldest.
test-minors:
	@bash hack/test-minors.sh

# A throwaway module outside the repository requires the core module (a
# replace of our module only, no k8s.io replace lines) and builds scoping.
consumer-check:
	@bash hack/consumer-check.sh

# Short fuzz runs of the flag values a scope parses; not part of `make test`.
fuzz:
	$(GO) test ./scoping/ -run '^$$' -fuzz '^FuzzFeatureGates$$' -fuzztime $(FUZZTIME)
	$(GO) test ./scoping/ -run '^$$' -fuzz '^FuzzVersions$$' -fuzztime $(FUZZTIME)

# One process against four, side by side on this machine: builds the upstream
# binaries and etcd from the versions components/go.mod pins (bench/out/,
# git-ignored), runs k3s-like (A) and etcd + the three upstream binaries (B)
# alternately, and writes bench/RESULTS.md with the go test -bench results
# of the barrier (scoped versus shared registry). Not part of `make test`;
# fails if any run is not ready or leaves a Pod unbound.
BENCH_PAIRS ?= 3
bench: build
	mkdir -p bench/out
	cd components && $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(CURDIR)/bench/out/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager
	cd components && $(GO) build -o $(CURDIR)/bench/out/etcd go.etcd.io/etcd/server/v3
	cd examples/k3s-like && $(GO) build -o $(CURDIR)/bench/out/bench ./bench
	{ echo '## go test -bench: the barrier, scoped versus upstream'"'"'s shared registry'; echo; \
	  echo 'Synthetic 600-feature gate (core module), `go test ./scoping/ -bench BenchmarkBarrier -count 6`:'; echo; echo '```'; \
	  $(GO) test ./scoping/ -run '^$$' -bench BenchmarkBarrier -benchtime 30x -count 6 | grep -E '^Benchmark'; echo '```'; echo; \
	  echo 'Real kube gate and the real adapters (components module), `go test ./components/ -bench BenchmarkBarrier -count 6`:'; echo; echo '```'; \
	  (cd components && $(GO) test -run '^$$' -bench BenchmarkBarrier -benchtime 30x -count 6 -ldflags "$(K8S_LDFLAGS)" . | grep -E '^Benchmark'); echo '```'; \
	} > bench/out/gobench.md
	./bench/out/bench -pairs $(BENCH_PAIRS) -k3s-like bin/k3s-like -etcd bench/out/etcd \
		-kube-apiserver bench/out/kube-apiserver -kube-scheduler bench/out/kube-scheduler \
		-kube-controller-manager bench/out/kube-controller-manager -out bench/RESULTS.md -extra bench/out/gobench.md

# The core module's own benchmarks.
bench-core:
	$(GO) test ./scoping/ ./harness/ -run '^$$' -bench . -benchmem -count 5

# The reference binary: bin/k3s-like.
build:
	cd examples/k3s-like && $(GO) build -ldflags "$(K8S_LDFLAGS)" -o $(CURDIR)/bin/k3s-like .

# Generated code of components/apis (deep-copy functions and the Feature
# CRD YAML), from the Go types' kubebuilder markers; the output is
# committed. controller-gen comes from the Go module proxy at a pinned version.
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
generate:
	cd components && $(CONTROLLER_GEN) object paths=./apis/... \
		&& $(CONTROLLER_GEN) crd paths=./apis/... output:crd:dir=./apis/features/v1alpha1/crd

# The control plane on its embedded defaults, data under .data/ (git-ignored).
run: build
	@mkdir -p $(DATA_DIR)
	@echo "k3s-like: data dir $(DATA_DIR); kubeconfig $(DATA_DIR)/admin.kubeconfig"
	@echo "k3s-like: in another shell, once it says ready: KUBECONFIG=$(DATA_DIR)/admin.kubeconfig kubectl get --raw /readyz"
	./bin/k3s-like server --data-dir $(DATA_DIR)

# The adapters for the real components (separate module; each control-plane
# start in a fresh process; not -race: see components/README.md).
test-components:
	cd components && $(GO) vet ./... && $(GO) test -count=1 -timeout 30m -ldflags "$(K8S_LDFLAGS)" ./...

# The reference binary's end-to-end tests: they build bin/k3s-like and run it
# as real child processes.
test-example: build
	cd examples/k3s-like && $(GO) vet ./... && K3S_LIKE_BINARY=$(CURDIR)/bin/k3s-like $(GO) test -count=1 -timeout 30m ./...

# The minimal embedder's end-to-end test (examples/minimal, its own module):
# it builds the binary with the version stamped in and runs it as a child
# process.
test-minimal:
	cd examples/minimal && $(GO) vet ./... && MINIMAL_LDFLAGS="$(K8S_LDFLAGS)" $(GO) test -count=1 -timeout 30m ./...

# The linker flags that stamp the version, for running go test by hand.
print-ldflags:
	@echo '$(K8S_LDFLAGS)'

# The staging replace block is pinned in components/go.mod; copies must match.
check-replaces:
	bash hack/sync-replaces.sh --check
