#!/usr/bin/env bash
# Upstream's [Conformance] suite against `k3s-like server` and its node and
# a `k3s-like agent`, two nodes on two "machines" (MACHINES up: network
# namespaces on one LAN, 192.0.2.10 and .11, a default route nobody
# answers), so that nothing the suite or its Pods send can leave the host.
# The suite, the server and the registry mirror run on the first machine,
# the agent on the second. NODES=1: the server's node alone, in a network
# namespace of its own (loopback and a veth with 192.0.2.10):
#
#   hack/conformance.sh MINOR OUTDIR   # make conformance sets the environment below
#
# K3S_LIKE, E2E_TEST, GINKGO: the binaries of MINOR; IMAGES: the archives of
# e2eimages; E2EIMAGES: the e2eimages command (its -serve is the nodes'
# registry mirror, for the tests that pull with Always); MACHINES: the
# machines command (distro/k3s-like/test/machines); NODES: 2 (default) or 1;
# RESULTS: the results
# command; SKIP: the skip list (name<TAB>reason); PROCS: ginkgo's parallelism;
# TIMEOUT: ginkgo's (default 4h); ETCD_TMPFS: 1 (default) puts the server's
# etcd data on a tmpfs, as kind's and OpenShift's CI do (kind#845): the suite
# tests the API, not the disk, and on a shared disk other writers stalled
# etcd's fdatasync for 2.4 s and failed a [Serial] spec; 0 keeps it on disk. FOCUS: the specs to run (default every [Conformance] spec; `make
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
NODES=${NODES:-2}
node_ip=192.0.2.10

if [ -z "${CONFORMANCE_IN_NETNS:-}" ]; then
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  export CONFORMANCE_IN_NETNS=1
  case $NODES in
  1) ;;
  2)
    : "${MACHINES:?}"
    prefix=khconf$$
    trap '"$MACHINES" down -prefix "$prefix"' EXIT
    "$MACHINES" up -prefix "$prefix" -n 2 > "$out/machines.txt"
    read -r _ ip0 ns0 < <(sed -n 1p "$out/machines.txt")
    read -r _ AGENT_IP AGENT_NETNS < <(sed -n 2p "$out/machines.txt")
    [ "$ip0" = "$node_ip" ] || { echo "conformance: the first machine is $ip0, not $node_ip" >&2; exit 1; }
    export AGENT_IP AGENT_NETNS
    set +e
    nsenter --net="$ns0" bash "$0" "$minor" "$out"
    exit $?
    ;;
  *) echo "conformance: NODES is 1 or 2, not $NODES" >&2; exit 1 ;;
  esac
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

# The kubelets' default hard eviction thresholds (imagefs.available<15%,
# nodefs.available<10%) taint both nodes when the file system under
# /var/tmp has less free: the suite then waits for schedulable nodes, and
# its specs time out.
read -r size avail < <(df --output=size,avail /var/tmp | tail -1)
if [ $((avail * 100 / size)) -lt 16 ]; then
  echo "conformance: /var/tmp's file system has $((avail * 100 / size))% free ($((avail / 1048576)) GiB); the kubelets taint their nodes below 15% (imagefs.available): free some space (the Go build cache: go clean -cache)" >&2
  exit 1
fi
work=$(mktemp -d /var/tmp/k3s-like-conformance.XXXXXX)
data=$work/data
mkdir -p "$data/agent/images" "$work/bin"
# The run's own copy of the binary: a make build in the checkout while the
# suite runs must not change what the nodes, kubectl and the results' commit
# are.
cp "$K3S_LIKE" "$work/bin/k3s-like"
K3S_LIKE=$work/bin/k3s-like
pids=()
ETCD_TMPFS=${ETCD_TMPFS:-1}
if [ "$ETCD_TMPFS" = 1 ]; then
  mkdir -p "$data/etcd"
  mount -t tmpfs -o size=4g,mode=0700 k3s-like-conformance-etcd "$data/etcd"
fi
# Each kubelet's own cgroup root and Pod logs directory: another kubelet on
# this host (the other node's, a test's, another run's) removes the Pod
# cgroups and log directories it does not know under the shared defaults.
cgdirs=()
kubelet_dirs() { # NAME: the cgroup root /NAME and $work/NAME.yaml
  local d dirs=()
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    dirs=(/sys/fs/cgroup/$1)
  else
    for h in /sys/fs/cgroup/*/; do
      mountpoint -q "$h" && dirs+=("${h}$1")
    done
  fi
  for d in "${dirs[@]}"; do
    mkdir -p "$d"
    cgdirs+=("$d")
    case $d in */cpuset/*) cp "$(dirname "$d")/cpuset.cpus" "$d/cpuset.cpus"; cp "$(dirname "$d")/cpuset.mems" "$d/cpuset.mems" ;; esac
  done
  printf 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\npodLogsDir: %s\n' "$work/pod-logs-$1" > "$work/$1.yaml"
}
cgroot=k3s-like-conformance-$$
kubelet_dirs "$cgroot"
cleanup() {
  status=$?
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  # Pods' mounts under the data dir, if the server did not stop cleanly.
  grep -o " $work/[^ ]*" /proc/self/mountinfo | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  for d in "${cgdirs[@]}"; do find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true; done
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT INT TERM

# Each node imports the archives at start, under their upstream names.
# The node's own images (CoreDNS) are in IMAGES/node.
link_images() { # DATA_DIR
  mkdir -p "$1/agent/images"
  for f in "$IMAGES"/*.tar "$IMAGES"/node/*.tar; do
    to=$1/agent/images/$(basename "$(dirname "$f")")-$(basename "$f")
    ln "$f" "$to" 2>/dev/null || cp "$f" "$to"
  done
}
link_images "$data"

# The mirror of registry.k8s.io, for the pulls with Always, on each
# machine's loopback (it has no authentication): NAME [nsenter ARGS].
mirror() {
  local name=$1; shift
  "$@" "$E2EIMAGES" -serve 127.0.0.1:5080 -out "$IMAGES" -blobs "$work/blobs-$name" -ready "$work/$name.ready" > "$out/$name.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 600); do [ -s "$work/$name.ready" ] && break; sleep 1; done
  [ -s "$work/$name.ready" ] || { echo "conformance: the registry mirror did not start (see $out/$name.log)" >&2; exit 1; }
}
mirror registry
cat > "$work/registries.yaml" <<EOF
mirrors:
  registry.k8s.io:
    endpoint: ["http://127.0.0.1:5080"]
EOF

ln -s "$K3S_LIKE" "$work/bin/kubectl"
export KUBECONFIG=$data/admin.kubeconfig PATH=$work/bin:$PATH
"$K3S_LIKE" server --data-dir "$data" --node-name conformance --private-registry "$work/registries.yaml" \
  --kubelet-arg=cgroup-root=/$cgroot --kubelet-arg=config="$work/$cgroot.yaml" > "$out/k3s-like.log" 2>&1 &
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

# The second node: an agent on the second machine, joined with the
# server's token.
if [ -n "${AGENT_NETNS:-}" ]; then
  agent_data=$work/agent-data
  link_images "$agent_data"
  mirror registry-agent nsenter --net="$AGENT_NETNS"
  cgroot2=k3s-like-conformance-$$-2
  kubelet_dirs "$cgroot2"
  nsenter --net="$AGENT_NETNS" "$K3S_LIKE" agent --data-dir "$agent_data" --server "https://$node_ip:6443" \
    --token-file "$data/token" --node-name conformance-2 --node-ip "$AGENT_IP" --private-registry "$work/registries.yaml" \
    --kubelet-arg=cgroup-root=/$cgroot2 --kubelet-arg=config="$work/$cgroot2.yaml" > "$out/k3s-like-agent.log" 2>&1 &
  agent=$!
  pids=("$agent" "${pids[@]}")
  ready=
  for _ in $(seq 1 300); do
    if ! kill -0 "$agent" 2>/dev/null; then echo "conformance: the agent exited (see $out/k3s-like-agent.log)" >&2; exit 1; fi
    if kubectl wait --for=condition=Ready node/conformance-2 --timeout=2s >/dev/null 2>&1; then ready=1; break; fi
    sleep 1
  done
  [ -n "$ready" ] || { echo "conformance: the agent's node not ready in 300 s (see $out/k3s-like-agent.log)" >&2; exit 1; }
fi
echo "conformance: k3s-like $minor ready, $NODES node(s); running $FOCUS with $PROCS processes"

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
# The commit the binary was built from (its --version), and a focus other
# than the default.
rev=$("$K3S_LIKE" --version 2>/dev/null | awk '/kubeharness:/ {print $2; exit}')
rev=${rev:-unknown}
meta=(-meta "k3s-like=$rev")
[ "$FOCUS" = '\[Conformance\]' ] || meta+=(-meta "focus=$FOCUS")
# The command that repeats this run: the knobs given, not their defaults.
command="make conformance K8S_MINOR=$minor"
[ "$PROCS" = 4 ] || command+=" PROCS=$PROCS"
[ "$NODES" = 2 ] || command+=" NODES=$NODES"
[ -z "${TIMEOUT:-}" ] || command+=" TIMEOUT=$TIMEOUT"
[ "$ETCD_TMPFS" = 1 ] || command+=" ETCD_TMPFS=0"
echo "conformance: ginkgo exited $code at $(date -u +%T) (started $started); writing $RESULTS_MD"
"$RESULTS" -json "$out/report.json" -skip "$SKIP" -out "$RESULTS_MD" -version "$("$K3S_LIKE" --version 2>/dev/null | awk '/kubernetes:/ {print $2; exit}')" \
  -command "$command" -meta "machine=$(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)" \
  -meta "procs=$PROCS" -meta "nodes=$NODES" -meta "etcd data on tmpfs=$([ "$ETCD_TMPFS" = 1 ] && echo yes || echo no)" "${meta[@]}"
exit $code
