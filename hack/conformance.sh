#!/usr/bin/env bash
# Upstream's [Conformance] suite against `k3s-like server` and its node, all
# inside a network namespace this script creates (loopback, a veth with the
# documentation address 192.0.2.10 as the node IP and the default route), so
# that nothing the suite or its Pods send can leave the machine:
#
#   hack/conformance.sh MINOR OUTDIR   # make conformance sets the environment below
#
# K3S_LIKE, E2E_TEST, GINKGO: the binaries of MINOR; IMAGES: the archives of
# e2eimages; E2EIMAGES: the e2eimages command (its -serve is the node's
# registry mirror, for the tests that pull with Always); RESULTS: the results
# command; SKIP: the skip list (name<TAB>reason); PROCS: ginkgo's parallelism;
# TIMEOUT: ginkgo's (default 4h); FOCUS: the specs to run (default every [Conformance] spec; `make
# conformance-fast` narrows it to a few). Writes OUTDIR/report.json,
# OUTDIR/junit.xml, OUTDIR/k3s-like.log, OUTDIR/e2e.log and RESULTS_MD
# (default OUTDIR/RESULTS.md).
set -euo pipefail
minor=${1:?minor, such as 1.37}
out=${2:?output directory}
: "${K3S_LIKE:?}" "${E2E_TEST:?}" "${GINKGO:?}" "${IMAGES:?}" "${E2EIMAGES:?}" "${RESULTS:?}" "${SKIP:?}"
# Four: the suite mostly waits (in a full run at 4 on two cores, k3s-like
# and its containerd used about a fifth of one core), and at 2 it takes
# about twice as long.
PROCS=${PROCS:-4}
FOCUS=${FOCUS:-'\[Conformance\]'}
RESULTS_MD=${RESULTS_MD:-$out/RESULTS.md}
node_ip=192.0.2.10

if [ -z "${CONFORMANCE_IN_NETNS:-}" ]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  export CONFORMANCE_IN_NETNS=1
  exec unshare --net --fork --kill-child sh -c '
set -e
ip link set lo up
ip link add eth0 type veth peer name eth0p
ip addr add '"$node_ip"'/24 dev eth0
ip link set eth0 up
ip link set eth0p up
ip route add default via 192.0.2.1 dev eth0
exec "$@"' sh "$0" "$minor" "$out"
fi

work=$(mktemp -d /var/tmp/k3s-like-conformance.XXXXXX)
data=$work/data
mkdir -p "$data/agent/images" "$work/bin"
pids=()
# The kubelet's own cgroup root and Pod logs directory: another kubelet on
# this host (a test's, another run's) removes the Pod cgroups and log
# directories it does not know under the shared defaults.
cgroot=k3s-like-conformance-$$
cgdirs=()
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  cgdirs=(/sys/fs/cgroup/$cgroot)
else
  for h in /sys/fs/cgroup/*/; do
    mountpoint -q "$h" && cgdirs+=("${h}$cgroot")
  done
fi
for d in "${cgdirs[@]}"; do
  mkdir -p "$d"
  case $d in */cpuset/*) cp "$(dirname "$d")/cpuset.cpus" "$d/cpuset.cpus"; cp "$(dirname "$d")/cpuset.mems" "$d/cpuset.mems" ;; esac
done
cat > "$work/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
podLogsDir: $work/pod-logs
EOF
cleanup() {
  status=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # Pods' mounts under the data dir, if the server did not stop cleanly.
  grep -o " $data/[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  for d in "${cgdirs[@]}"; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; done
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT INT TERM

# The node imports the archives at start, under their upstream names.
# The node's own images (CoreDNS) are in IMAGES/node.
for f in "$IMAGES"/*.tar "$IMAGES"/node/*.tar; do
  to=$data/agent/images/$(basename "$(dirname "$f")")-$(basename "$f")
  ln "$f" "$to" 2>/dev/null || cp "$f" "$to"
done

# The mirror of registry.k8s.io, for the pulls with Always.
"$E2EIMAGES" -serve 127.0.0.1:5080 -out "$IMAGES" -blobs "$work/blobs" -ready "$work/registry.ready" > "$out/registry.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 600); do [ -s "$work/registry.ready" ] && break; sleep 1; done
[ -s "$work/registry.ready" ] || { echo "conformance: the registry mirror did not start (see $out/registry.log)" >&2; exit 1; }
cat > "$work/registries.yaml" <<EOF
mirrors:
  registry.k8s.io:
    endpoint: ["http://127.0.0.1:5080"]
EOF

ln -s "$K3S_LIKE" "$work/bin/kubectl"
export KUBECONFIG=$data/admin.kubeconfig PATH=$work/bin:$PATH
"$K3S_LIKE" server --data-dir "$data" --node-name conformance --private-registry "$work/registries.yaml" \
  --kubelet-arg=cgroup-root=/$cgroot --kubelet-arg=config="$work/kubelet.yaml" > "$out/k3s-like.log" 2>&1 &
server=$!
pids=("$server" "${pids[@]}")
ready=
for _ in $(seq 1 300); do
  if ! kill -0 "$server" 2>/dev/null; then echo "conformance: k3s-like exited (see $out/k3s-like.log)" >&2; exit 1; fi
  if [ -s "$KUBECONFIG" ] && kubectl wait --for=condition=Ready node/conformance --timeout=2s >/dev/null 2>&1 &&
     kubectl -n kube-system rollout status deployment/coredns --timeout=2s >/dev/null 2>&1; then ready=1; break; fi
  sleep 1
done
[ -n "$ready" ] || { echo "conformance: the node or CoreDNS not ready in 300 s (see $out/k3s-like.log)" >&2; exit 1; }
echo "conformance: k3s-like $minor ready; running $FOCUS with $PROCS processes"

skip=$("$RESULTS" -skip-regexp -skip "$SKIP")
args=(--procs="$PROCS" --timeout="${TIMEOUT:-4h}" --poll-progress-after=10m --no-color --silence-skips --focus="$FOCUS"
  --json-report=report.json --junit-report=junit.xml --output-dir="$out")
[ -z "$skip" ] || args+=(--skip="$skip")
started=$(date -u +%FT%TZ)
set +e
"$GINKGO" "${args[@]}" "$E2E_TEST" -- --provider=skeleton --kubeconfig="$KUBECONFIG" \
  --kubectl-path="$work/bin/kubectl" --report-dir="$out" > "$out/e2e.log" 2>&1
code=$?
set -e
# The checkout the run was made from, and a focus other than the default.
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$repo" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git -C "$repo" diff --quiet HEAD 2>/dev/null || rev+=+dirty
meta=(-meta "k3s-like=$rev")
[ "$FOCUS" = '\[Conformance\]' ] || meta+=(-meta "focus=$FOCUS")
# The command that repeats this run: the knobs given, not their defaults.
command="make conformance K8S_MINOR=$minor"
[ "$PROCS" = 4 ] || command+=" PROCS=$PROCS"
[ -z "${TIMEOUT:-}" ] || command+=" TIMEOUT=$TIMEOUT"
echo "conformance: ginkgo exited $code at $(date -u +%T) (started $started); writing $RESULTS_MD"
"$RESULTS" -json "$out/report.json" -skip "$SKIP" -out "$RESULTS_MD" -version "$("$K3S_LIKE" --version 2>/dev/null | awk '/kubernetes:/ {print $2; exit}')" \
  -command "$command" -meta "machine=$(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)" \
  -meta "procs=$PROCS" "${meta[@]}"
exit $code
