#!/usr/bin/env bash
# k8s.io/kubernetes replaces its staging modules with local paths, so every
# module that requires it needs the same `replace k8s.io/<staging> =>
# k8s.io/<staging> v0.37.2` block. components/go.mod is the one place they are
# pinned; this copies its block into the other modules that need it
# (distro/k3s-like, examples/minimal, conformance) with the k8s.io/kubernetes
# version, and with --check fails if a copy differs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/components/go.mod"
block() { awk '/^replace \(/{p=1} p{print} p&&/^\)/{exit}' "$1"; }
want=$(block "$src")
[ -n "$want" ] || { echo "sync-replaces: no replace block in $src" >&2; exit 1; }
# (One awk reading the whole file: a reader that exits at the first match
# kills the writer of a pipe with SIGPIPE, which pipefail turns into exit 141.)
kver() { awk '{ sub(/^require[[:space:]]+/, "") } $1 == "k8s.io/kubernetes" && v == "" { v = $2 } END { print v }' "$1"; }
k8s=$(kver "$src")
status=0
for mod in "$root/distro/k3s-like/go.mod" "$root/examples/minimal/go.mod" "$root/conformance/go.mod"; do
  # A module that requires k8s.io/kubernetes requires the pinned version.
  v=$(kver "$mod")
  if [ -n "$v" ] && [ "$v" != "$k8s" ]; then
    if [ "${1:-}" == "--check" ]; then
      echo "sync-replaces: $mod requires k8s.io/kubernetes $v, components/go.mod pins $k8s; run hack/sync-replaces.sh" >&2
      status=1
    else
      (cd "$(dirname "$mod")" && go mod edit -require="k8s.io/kubernetes@$k8s")
      echo "sync-replaces: $mod now requires k8s.io/kubernetes $k8s"
    fi
  fi
  have=$(block "$mod")
  if [ "$have" == "$want" ]; then continue; fi
  if [ "${1:-}" == "--check" ]; then
    echo "sync-replaces: the staging replace block of $mod differs from components/go.mod; run hack/sync-replaces.sh" >&2
    status=1
    continue
  fi
  tmp=$(mktemp)
  awk '/^replace \(/{skip=1} !skip{print} skip&&/^\)/{skip=0}' "$mod" > "$tmp"
  printf '\n%s\n' "$want" >> "$tmp"
  mv "$tmp" "$mod"
  echo "sync-replaces: updated $mod"
done
exit $status
