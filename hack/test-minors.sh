#!/usr/bin/env bash
# The core module (scoping/, harness/, race/) against the latest patch of
# each supported Kubernetes minor of k8s.io/component-base, apiserver and
# apimachinery. go.mod requires the oldest (v0.34); each minor gets a
# temporary modfile (go test -modfile=…): no copies of the code. For each
# minor: go vet, go test -race, and a throwaway consumer module that requires
# k8s.io/component-base at that minor and imports harness and scoping, which
# must build and still answer that minor for `go list -m` (nothing forced
# upward). go.mod's own minor is vetted and tested by make vet, test-core
# and race-core, so here only its consumer is built. Minors: MINORS="v0.34.13 v0.35.10 v0.36.6 v0.37.2" by default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
MINORS=${MINORS:-"v0.34.13 v0.35.10 v0.36.6 v0.37.2"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$root"
own=$(go list -m -f '{{.Version}}' k8s.io/component-base)
for v in $MINORS; do
  start=$(date +%s)
  m="$work/$v"
  mkdir -p "$m"
  cp go.mod "$m/go.mod"; cp go.sum "$m/go.sum"
  go get -modfile="$m/go.mod" "k8s.io/component-base@$v" "k8s.io/apiserver@$v" "k8s.io/apimachinery@$v" >/dev/null 2>&1
  go mod tidy -modfile="$m/go.mod" >/dev/null 2>&1
  got=$(go list -modfile="$m/go.mod" -m -f '{{.Version}}' k8s.io/component-base)
  [ "$got" = "$v" ] || { echo "test-minors: asked for component-base $v, got $got" >&2; exit 1; }
  if [ "$v" = "$own" ]; then
    echo "== core against k8s.io/component-base $v: go.mod's own, vetted and tested under -race by make vet, test-core and race-core"
  else
    echo "== core against k8s.io/component-base $v"
    go vet -modfile="$m/go.mod" ./...
    go test -race -count=1 -modfile="$m/go.mod" ./...
  fi

  c="$work/consumer-$v"
  mkdir -p "$c"
  cat > "$c/go.mod" <<MOD
module example.com/distro

go 1.26.0

require (
	github.com/kubeharness/kubeharness v0.0.0
	k8s.io/component-base $v
	k8s.io/apiserver $v
	k8s.io/apimachinery $v
)

replace github.com/kubeharness/kubeharness => $root
MOD
  cat > "$c/main.go" <<'SRC'
package main

import (
	"context"
	"fmt"

	"github.com/kubeharness/kubeharness/harness"
	"github.com/kubeharness/kubeharness/scoping"
)

func main() {
	target := scoping.ProcessTarget()
	target.ApplyLogging = nil
	h := &harness.Harness{Target: &target}
	plan, err := h.DryRun(context.Background())
	fmt.Println(plan != nil, err)
}
SRC
  (cd "$c" && GOFLAGS=-mod=mod go mod tidy >/dev/null && go build -o /dev/null . && go run . >/dev/null)
  gotc=$(cd "$c" && go list -m -f '{{.Version}}' k8s.io/component-base)
  [ "$gotc" = "$v" ] || { echo "test-minors: a consumer on component-base $v was moved to $gotc" >&2; exit 1; }
  echo "test-minors: $v ok in $(( $(date +%s) - start ))s (consumer stays on $gotc)"
done
