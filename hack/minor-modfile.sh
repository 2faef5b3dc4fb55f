#!/usr/bin/env bash
# Generates the components module's modfile for another Kubernetes minor from
# components/go.mod, which pins the default minor: usage
#   hack/minor-modfile.sh 1.36.3 3.6.8   # k8s.io/kubernetes version, etcd version it requires
# writes components/go.k8s-1.36.mod and .sum. The indirect requirements are
# dropped and recomputed by go mod tidy from that minor's own requirements:
# rewriting the default modfile's versions in place keeps the default minor's
# indirect pins (container-storage-interface/spec, etcd's raft), which the
# older minor does not build against. Build with
#   cd components && go build -tags k8s1_36 -modfile=go.k8s-1.36.mod ./...
# With --check first, it regenerates into a temporary modfile and fails if
# the committed one differs (make test-minors runs the check).
set -euo pipefail
check=false
if [ "${1:-}" = --check ]; then check=true; shift; fi
k8s=${1:?kubernetes version, e.g. 1.36.3}
etcd=${2:?etcd version, e.g. 3.6.8}
minor=${k8s%.*}
staging=0.${k8s#1.}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root/components"
default=$(awk '$1 == "k8s.io/kubernetes" { sub(/^v/, "", $2); print $2; exit }' go.mod)
dstaging=0.${default#1.}
out=go.k8s-$minor.mod
if $check; then
  committed=$out
  out=go.k8s-$minor.check.mod
  trap 'rm -f "$out" "${out%.mod}.sum"' EXIT
fi
grep -v '// indirect$' go.mod |
  sed -e "s#k8s.io/kubernetes v$default#k8s.io/kubernetes v$k8s#" \
      -e "s#\(k8s.io/[a-z0-9-]*\) v$dstaging#\1 v$staging#g" \
      -e "s#\(go.etcd.io/etcd/[a-z0-9/]*\) v3\.[0-9]*\.[0-9]*#\1 v$etcd#" > "$out"
cp go.sum "${out%.mod}.sum"
go mod tidy -modfile="$out"
if $check; then
  if ! diff -q "$committed" "$out" >/dev/null; then
    echo "components/$committed is not what hack/minor-modfile.sh $k8s $etcd generates from components/go.mod: run it" >&2
    diff "$committed" "$out" >&2 || true
    exit 1
  fi
  echo "minor-modfile: components/$committed up to date"
  exit 0
fi
echo "wrote components/$out (k8s.io/kubernetes v$k8s, staging v$staging, etcd v$etcd)"
