#!/usr/bin/env bash
# The node's helper programs, built apart from k3s-like and packed into the
# archive make build embeds in it (distro/k3s-like/internal/helpers, build
# tag embedhelpers):
#
#   MODFILE=go.k8s-1.36.mod TAGS=k8s1_36 DEBUG= hack/helpers.sh ARCHIVE
#
#   - containerd: containerd itself, the main package of
#     github.com/containerd/containerd/v2/cmd/containerd at the version the
#     minor's modfile pins, static (CGO_ENABLED=0: no btrfs snapshotter, the
#     node uses overlayfs), its version stamped in, as k3s ships it beside
#     its binary: the node's containerd maps this program, not k3s-like's
#     whole binary (issue 46);
#   - containerd-shim-runc-v2: containerd's runc shim, the main package of
#     github.com/containerd/containerd/v2 at the version the minor's modfile
#     pins, built as containerd's Makefile builds it (CGO_ENABLED=0, tag
#     no_grpc: the shim speaks ttrpc only), its version stamped in;
#   - cni: the CNI plugins the node runs (distro/k3s-like/cmd/cni), with a
#     link to it under each plugin's name (`cni --plugins`).
#
# MODFILE and TAGS are the minor's (empty: the default minor); both are
# built with the k3s-like module's versions, so each is pinned in one
# place. Stripped (-trimpath, -s -w) unless DEBUG is set.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:?the archive to write}")
go=${GO:-go}
cd "$root/distro/k3s-like"
mod=()
[ -z "${MODFILE:-}" ] || mod=(-modfile="$MODFILE")
tags=no_grpc${TAGS:+,$TAGS}
strip=(-trimpath)
ldflags="-s -w"
if [ -n "${DEBUG:-}" ]; then strip=(); ldflags=""; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ctrd=github.com/containerd/containerd/v2
version=$($go list "${mod[@]}" -m -f '{{.Version}}' $ctrd)
CGO_ENABLED=0 $go build "${mod[@]}" "${strip[@]}" ${TAGS:+-tags "$TAGS"} \
  -ldflags "$ldflags -X $ctrd/version.Version=$version -X $ctrd/version.Package=$ctrd" \
  -o "$tmp/containerd" $ctrd/cmd/containerd
CGO_ENABLED=0 $go build "${mod[@]}" "${strip[@]}" -tags "$tags" \
  -ldflags "$ldflags -X $ctrd/version.Version=$version -X $ctrd/version.Package=$ctrd" \
  -o "$tmp/containerd-shim-runc-v2" $ctrd/cmd/containerd-shim-runc-v2
CGO_ENABLED=0 $go build "${mod[@]}" "${strip[@]}" -tags "$tags" -ldflags "$ldflags" -o "$tmp/cni" ./cmd/cni
for p in $("$tmp/cni" --plugins); do ln -s cni "$tmp/$p"; done
echo "helpers: containerd $version ($(stat -c %s "$tmp/containerd") bytes), containerd-shim-runc-v2 ($(stat -c %s "$tmp/containerd-shim-runc-v2") bytes), cni ($(stat -c %s "$tmp/cni") bytes): $("$tmp/cni" --plugins | tr '\n' ' ')"
$go run "${mod[@]}" ./internal/helpers/pack -o "$out" "$tmp"
