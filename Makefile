# kubeharness. `make test` is what CI runs (.ci/run); `make run` starts the
# k3s-like control plane on its embedded defaults.
SHELL := bash
GO ?= go
# The core module: scoping/, harness/, race/. It never imports k8s.io/kubernetes.
CORE_PKGS := ./...
FUZZTIME ?= 30s

.PHONY: test vet test-core consumer-check race fuzz bench run build

test: vet test-core race consumer-check

vet:
	$(GO) vet $(CORE_PKGS)

# race/ runs in its own target, so test-core leaves it out.
test-core:
	$(GO) test -race -count=1 $$($(GO) list $(CORE_PKGS) | grep -v /race$$)

# Registry-level reproductions of the upstream clobbering, under -race.
race:
	$(GO) test -race -count=1 ./race/

# A throwaway module outside the repository requires the core module (a
# replace of our module only, no k8s.io replace lines) and builds scoping.
consumer-check:
	@bash hack/consumer-check.sh

# Short fuzz runs of the flag values a scope parses; not part of `make test`.
fuzz:
	$(GO) test ./scoping/ -run '^$$' -fuzz '^FuzzFeatureGates$$' -fuzztime $(FUZZTIME)
	$(GO) test ./scoping/ -run '^$$' -fuzz '^FuzzVersions$$' -fuzztime $(FUZZTIME)

# Benchmarks, side by side in one run; not part of `make test`.
bench:
	$(GO) test ./scoping/ ./harness/ -run '^$$' -bench . -benchmem -count 5

run:
	@echo "make run: the k3s-like control plane (examples/k3s-like) does not exist yet; it comes with issue 6." >&2
	@exit 2
