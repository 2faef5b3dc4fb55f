#!/usr/bin/env bash
# k8s.io/kubernetes replaces its staging modules with local paths, so every
# module that requires it needs the same `replace k8s.io/<staging> =>
# k8s.io/<staging> v0.37.2` block. components/go.mod is the one place they are
# pinned; this copies its block into the other modules that need it
# (examples/k3s-like, examples/minimal), and with --check fails if a copy
# differs.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/components/go.mod"
block() { awk '/^replace \(/{p=1} p{print} p&&/^\)/{exit}' "$1"; }
want=$(block "$src")
[ -n "$want" ] || { echo "sync-replaces: no replace block in $src" >&2; exit 1; }
status=0
for mod in "$root/examples/k3s-like/go.mod" "$root/examples/minimal/go.mod"; do
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
