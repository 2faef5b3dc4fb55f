#!/usr/bin/env bash
# The modfiles of another Kubernetes minor, generated from the default
# minor's go.mod files (components/go.mod pins the default minor):
#
#   FLANNEL=0.28.4 hack/minor-modfile.sh 1.36.3 3.6.8 2.2.9   # k8s.io/kubernetes version, the etcd version it requires, the containerd version k3s-like runs with it; FLANNEL, if set, flannel's version at that minor
#   hack/minor-modfile.sh 1.38.0-beta.0 3.7.3 2.4.2 go1.27.3   # a minor newer than the default, whose modules need a newer Go
#   hack/minor-modfile.sh --check        # every committed minor up to the default, versions read from its modfile
#   hack/minor-modfile.sh --check 1.38   # the minors named
#
# A minor may be older than the default (a supported one) or newer (the next
# one, make test-next). The fourth argument, TOOLCHAIN, is for a minor whose
# modules require a Go newer than ours (1.38 requires go 1.27.0): every go
# command of that minor runs with GOTOOLCHAIN=TOOLCHAIN (fetched from the
# module proxy as golang.org/toolchain), and the modfiles get a `toolchain`
# line, which the Makefile reads to do the same.
#
# (At 1.36 the etcd modules come out at v3.6.10, not 3.6.8: flannel v0.28.4,
# in components/flannel, requires that; --check reads it back from the
# modfile. Flannel is pinned per minor there: the default minor's, v0.28.10,
# requires etcd v3.7.2 and etcd's raft v3.7, which 1.36's etcd server does
# not build with; v0.28.4 panics when its netlink link subscription closes,
# flannel#2549, fixed in v0.28.10 only.)
#
# writes, for the minor 1.36:
#   - components/go.k8s-1.36.mod (.sum): components/go.mod without its
#     indirect requirements, with k8s.io/kubernetes, the staging replace
#     block and etcd at that minor's versions, then go mod tidy recomputes
#     the indirect requirements from that minor's own. Rewriting the default
#     modfile's versions in place keeps the default minor's indirect pins
#     (container-storage-interface/spec, etcd's raft), which the older minor
#     does not build against.
#   - distro/k3s-like/go.k8s-1.36.mod (.sum): its go.mod without indirect
#     requirements, the replace block of the staging modules swapped for one
#     that pins every module the minor moves — whose version in the
#     components' 1.36 build differs from their default build — where that
#     differs from k3s-like's default build. A replace is needed: the
#     components module is a local replace, so Go reads its go.mod (the
#     default minor's) and would raise every shared module to it. A module
#     the minor does not move (one only in the graph of a dependency's
#     go.mod, such as flannel's, at the same version at both minors) keeps
#     k3s-like's version, as at the default minor.
#   - conformance/go.k8s-1.36.mod (.sum): the same for the module of
#     upstream's e2e.test.
#
# The modfiles are each minor's one pin: its versions are written nowhere
# else (the Makefile reads them from there). Build with
#   cd components && go build -tags k8s1_36 -modfile=go.k8s-1.36.mod ./...
#   make build K8S_MINOR=1.36
# --check regenerates every committed minor into temporary modfiles and
# fails if a committed one differs (make test-minors runs it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
fmt='{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}'

# generate K8S ETCD CONTAINERD SUFFIX [TOOLCHAIN [FLANNEL]]: writes the
# modfiles of K8S's minor with SUFFIX before .mod (empty for the committed
# ones); FLANNEL, if given, is flannel's version in them.
# CONTAINERD is the github.com/containerd/containerd/v2 version of
# k3s-like's node at that minor (one whose dependencies the minor's kubelet
# shares); TOOLCHAIN, if given, the Go toolchain of that minor.
generate() {
  local k8s=$1 etcd=$2 containerd=$3 suffix=$4 toolchain=${5:-} flannel=${6:-}
  local minor staging=0.${k8s#1.}
  minor=$(minorof "$k8s")
  [ -z "$toolchain" ] || local -x GOTOOLCHAIN=$toolchain
  local default dstaging
  default=$(awk '$1 == "k8s.io/kubernetes" { sub(/^v/, "", $2); print $2; exit }' "$root/components/go.mod")
  dstaging=0.${default#1.}
  [ "$minor" != "$(minorof "$default")" ] || { echo "minor-modfile: $minor is the default minor (components/go.mod)" >&2; return 1; }
  local c=go.k8s-$minor$suffix.mod
  cd "$root/components"
  go list -e -m -f "$fmt" all | awk 'NF == 2' | sort > "$tmp/components-default"
  grep -v '// indirect$' go.mod |
    sed -e "s#k8s.io/kubernetes v$default#k8s.io/kubernetes v$k8s#" \
        -e "s#\(k8s.io/[a-z0-9-]*\) v$dstaging#\1 v$staging#g" \
        -e "s#\(go.etcd.io/etcd/[a-z0-9/]*\) v3\.[0-9]*\.[0-9]*#\1 v$etcd#" > "$c"
  [ -z "$flannel" ] || go mod edit -modfile="$c" -require="github.com/flannel-io/flannel@v$flannel"
  cp go.sum "${c%.mod}.sum"
  tidy "$c" "$toolchain"
  go list -e -modfile="$c" -m -f "$fmt" all | awk 'NF == 2' | sort > "$tmp/components"

  follow "$root/distro/k3s-like" "$minor" "$k8s" "$suffix"
  go mod edit -modfile="go.k8s-$minor$suffix.mod" -require="github.com/containerd/containerd/v2@v$containerd"
  tidy "go.k8s-$minor$suffix.mod" "$toolchain"
  follow "$root/conformance" "$minor" "$k8s" "$suffix"
  tidy "go.k8s-$minor$suffix.mod" "$toolchain"
}

# minorof VERSION: 1.38 of 1.38.0-beta.0 (and of 1.38.2).
minorof() { local IFS=.; set -- $1; echo "$1.$2"; }

# tidy MODFILE TOOLCHAIN: go mod tidy. With a TOOLCHAIN (a next minor,
# a pre-release) errors are printed but not fatal (-e): a beta may need a
# module the proxy does not serve (v1.38.0-beta.0: sigs.k8s.io/iptables-wrappers
# v1.0.0), and only the packages that import it fail to build, which make
# test-next reports. Then the toolchain line, which tidy drops or rewrites.
tidy() {
  if [ -z "$2" ]; then
    go mod tidy -modfile="$1"
    return
  fi
  go mod tidy -e -modfile="$1" 2>&1 | grep -v '^go: downloading' >&2 || true
  go mod edit -modfile="$1" -toolchain="$2"
}

# follow DIR MINOR K8S SUFFIX: in DIR, a module that requires the components
# module (a local replace), writes the modfile of MINOR: its go.mod without
# indirect requirements and with every module the minor moves (its version
# in the components' build of MINOR, $tmp/components, is not the one of
# their default build, $tmp/components-default) replaced by that version
# where it differs from DIR's default build, for the caller to tidy. Leaves
# the working directory at DIR.
follow() {
  local dir=$1 minor=$2 k8s=$3 suffix=$4
  cd "$dir"
  local k=go.k8s-$minor$suffix.mod
  go list -e -m -f "$fmt" all | awk 'NF == 2' | sort > "$tmp/default"
  {
    awk '/^replace \(/{skip=1} !skip{print} skip&&/^\)/{skip=0}' go.mod | grep -v '// indirect$' | cat -s
    echo
    echo "// Generated by hack/minor-modfile.sh: every module at its version in the"
    echo "// components' build at k8s.io/kubernetes v$k8s (components/go.k8s-$minor.mod)."
    echo "replace ("
    join -a 1 "$tmp/components" "$tmp/components-default" | awk 'NF == 2 || $2 != $3 { print $1, $2 }' |
      join - "$tmp/default" | awk '$2 != $3 { printf "\t%s => %s %s\n", $1, $1, $2 }'
    echo ")"
  } > "$k"
  cat go.sum "$root/components/go.k8s-$minor$suffix.sum" | sort -u > "${k%.mod}.sum"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; rm -f "$root"/{components,distro/k3s-like,conformance}/go.k8s-*.check.{mod,sum}' EXIT

if [ "${1:-}" != --check ]; then
  generate "${1:?kubernetes version, e.g. 1.36.3}" "${2:?etcd version, e.g. 3.6.8}" "${3:?containerd version, e.g. 2.2.9}" "" "${4:-}" "${FLANNEL:-}"
  echo "wrote components/, distro/k3s-like/ and conformance/go.k8s-$(minorof "$1").mod (k8s.io/kubernetes v$1, etcd v$2, containerd v$3${4:+, $4}${FLANNEL:+, flannel v$FLANNEL})"
  exit 0
fi

shift
default=$(awk '$1 == "k8s.io/kubernetes" { sub(/^v/, "", $2); print $2; exit }' "$root/components/go.mod")
dminor=$(minorof "$default")
status=0
for m in "$root"/components/go.k8s-*.mod; do
  case $m in *.check.mod) continue ;; esac
  minor=${m##*/go.k8s-}; minor=${minor%.mod}
  # Without names: the minors up to the default (a newer one needs its own
  # toolchain; make test-next checks it by name).
  if [ $# -eq 0 ]; then
    [ "${minor#*.}" -le "${dminor#*.}" ] || continue
  else
    [[ " $* " == *" $minor "* ]] || continue
  fi
  k8s=$(awk '$1 == "k8s.io/kubernetes" { sub(/^v/, "", $2); print $2; exit }' "$m")
  etcd=$(awk '$1 == "go.etcd.io/etcd/server/v3" { sub(/^v/, "", $2); print $2; exit }' "$m")
  toolchain=$(awk '$1 == "toolchain" { print $2; exit }' "$m")
  containerd=$(awk '$1 == "github.com/containerd/containerd/v2" { sub(/^v/, "", $2); print $2; exit }' "$root/distro/k3s-like/go.k8s-$minor.mod")
  flannel=$(awk '$1 == "github.com/flannel-io/flannel" { sub(/^v/, "", $2); print $2; exit }' "$m")
  generate "$k8s" "$etcd" "$containerd" .check "$toolchain" "$flannel"
  for f in "$root"/{components,distro/k3s-like,conformance}/go.k8s-$minor; do
    if ! diff -q "$f.mod" "$f.check.mod" >/dev/null; then
      echo "minor-modfile: ${f#$root/}.mod is not what FLANNEL=$flannel hack/minor-modfile.sh $k8s $etcd $containerd $toolchain generates: run it" >&2
      diff "$f.mod" "$f.check.mod" >&2 || true
      status=1
    fi
  done
  [ $status -ne 0 ] || echo "minor-modfile: the modfiles of $minor are up to date (k8s.io/kubernetes v$k8s, etcd v$etcd, containerd v$containerd, flannel v$flannel${toolchain:+, $toolchain})"
done
exit $status
