#!/usr/bin/env bash
# A distro must be able to import the core module with no replace directives
# of its own for k8s.io modules. Build a throwaway consumer that requires it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
cat > go.mod <<MOD
module example.com/distro

go 1.26.0

require github.com/kubeharness/kubeharness v0.0.0

replace github.com/kubeharness/kubeharness => $root
MOD
cat > main.go <<'SRC'
package main

import (
	"fmt"

	"github.com/kubeharness/kubeharness/scoping"
)

func main() {
	b, err := scoping.NewBarrier(scoping.ProcessTarget())
	if err != nil {
		panic(err)
	}
	fmt.Println(b.Applied())
}
SRC
GOFLAGS=-mod=mod go mod tidy >/dev/null
if grep -q '^replace k8s.io\|k8s.io/.* =>' go.mod; then
  echo "consumer-check: the consumer needed k8s.io replace lines" >&2; exit 1
fi
go build -o /dev/null .
go run . >/dev/null
echo "consumer-check: ok (a module outside the repository imports scoping with no k8s.io replace lines)"
