#!/usr/bin/env bash
# hack/realnode.sh — one real node beside the kwok nodes of the local cluster: a kubelet built
# from the pinned Kubernetes module (tools/kube), containerd and runc and the CNI plugins from
# Debian's packages, so Pods really run (package scripts, performer and model servers, the
# reconciler's own Pod). Each choice is explained where it is made below; DESIGN.md "The local
# cluster" has the overview.
#
#   hack/realnode.sh up       start it (or keep it, if it runs); called by hack/cluster.sh up
#   hack/realnode.sh down     stop it and remove what it made (processes, pods, mounts, bridge)
#   hack/realnode.sh status   "up: NODE" (exit 0) or why not (exit 1)
#   hack/realnode.sh leftovers after down: the node's mounts, bridge and pod cgroups still there
#                             (processes and state: hack/cluster.sh leftovers), exit 1 if any
#   hack/realnode.sh import   import the image tarballs of .cache/images (hack/images) into its containerd
#   hack/realnode.sh exec CMD run CMD in the node's mount namespace (ctr, crictl-like debugging)
#
# The node is gantry-real, labelled gantry.dev/node-pool=real and tainted
# gantry.dev/real-node=true:NoSchedule: only what tolerates that lands there. It is CPU-only.
#
# Nothing of the host changes: containerd and the kubelet run in one private mount namespace
# (kept in .cache/cluster/realnode/mntns) in which the three kernel settings the kubelet writes
# at start (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops) and the ip_forward the CNI
# bridge plugin sets are files bind-mounted over their /proc/sys entries, so the host's values
# stay; the Pods' mounts stay in that namespace too. Pods get addresses on the bridge gantry0
# (10.213.0.0/24, no masquerade) and one route besides it: to the node's own address (a health
# check's $(NODE_IP)), none off the machine. All state (containerd root and socket, kubelet root, CNI state, pod cgroups under
# /gantry-realnode) is under .cache/cluster/realnode; `down` kills every process in the pod
# cgroups, stops containerd and the kubelet, deletes the bridge and the namespace, and removes
# the node object.
#
# Where the machine cannot run it (not root, no cgroups, no unshare), `up` says so in one line,
# writes the reason to .cache/cluster/realnode/unavailable (tests that need the node skip with
# it) and exits 0: the cluster goes on with kwok only. GANTRY_REAL_NODE=0 turns it off.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

state="$CACHE/cluster/realnode"
node=gantry-real
bridge=gantry0
subnet=10.213.0.0/24
cgroup_root=gantry-realnode
mntns="$state/mntns"
sock="$state/containerd/containerd.sock"
kubectl_() { kubectl --kubeconfig "$KUBECONFIG_PATH" --request-timeout=10s "$@"; }
say() { echo "realnode: $*" >&2; }

# in_ns CMD...: run CMD in the node's mount namespace.
in_ns() { nsenter --mount="$mntns" -- "$@"; }

# unavailable_reason: why this machine cannot run a real node (empty: it can).
unavailable_reason() {
  [ "${GANTRY_REAL_NODE:-1}" != 0 ] || { echo "turned off (GANTRY_REAL_NODE=0)"; return; }
  [ "$(id -u)" = 0 ] || { echo "not root (a kubelet and containerd need root)"; return; }
  [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ] || { echo "no cgroups at /sys/fs/cgroup"; return; }
  command -v unshare >/dev/null && command -v nsenter >/dev/null || { echo "no unshare/nsenter (util-linux)"; return; }
  [ -x "$BIN/kubelet" ] || { echo "no bin/kubelet (bash tools/install.sh kube)"; return; }
  ip link show lo >/dev/null 2>&1 || { echo "no ip (iproute2)"; return; }
  # One real node per machine: its bridge, cgroup root and kubelet ports are machine-wide.
  if ! running && ip link show "$bridge" >/dev/null 2>&1; then
    if pgrep -f "cluster/realnode/kubelet.yaml" >/dev/null 2>&1; then
      echo "another clone's real node runs on this machine (bridge $bridge exists; 'make down' there first)"; return
    fi
    ip link del "$bridge" 2>/dev/null || true # left by a node whose processes are gone (a machine restart)
  fi
}

# node_ip: this machine's own address on its default interface (the kubelet refuses loopback).
node_ip() {
  local ip
  ip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p' | head -1)
  [ -n "$ip" ] || ip=$(ip -4 -o addr show scope global | awk '{print $4}' | cut -d/ -f1 | head -1)
  echo "$ip"
}

# debs: containerd, runc and the CNI plugins, from Debian (the test images' busybox is pinned by
# tools/install.sh busybox).
debs() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  [ ${#missing[@]} = 0 ] && return 0
  say "apt-get install ${missing[*]}"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >"$state/apt.log" 2>&1 ||
    { cat "$state/apt.log" >&2; say "could not install ${missing[*]}"; return 1; }
}

node_ready() { [ "$(kubectl_ get node "$node" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]; }

pid_alive() { [ -f "$state/$1.pid" ] && kill -0 "$(cat "$state/$1.pid")" 2>/dev/null; }
running() { [ -e "$mntns" ] && pid_alive containerd && pid_alive kubelet; }

# clusterdir: kwokctl's directory of the local cluster (its pki holds the CA and the admin cert).
clusterdir() { ls -d "$CACHE/cluster/kwok/clusters/"*/ 2>/dev/null | head -1 | sed 's:/$::'; }

write_configs() {
  local ip=$1 pki; pki="$(clusterdir)/pki"
  mkdir -p "$state"/{containerd/root,containerd/state,kubelet,cni/net.d,cni/data,pki,sysctl,log}
  # containerd: its own root, state and socket; CRI on, cgroupfs, the sandbox image we build
  # (hack/images); restrict_oom_score_adj because these VMs deny oom_score_adj writes even to root.
  cat >"$state/containerd/config.toml" <<EOF
version = 2
root = "$state/containerd/root"
state = "$state/containerd/state"
[grpc]
  address = "$sock"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = true
  enable_unprivileged_ports = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
    # The TEE handler the kata-qemu-snp RuntimeClass names: an alias of runc (no SEV-SNP here),
    # so a Pod with that RuntimeClass goes through the kubelet's and containerd's real handler
    # resolution (an unknown handler fails the sandbox: "no runtime for ... is configured").
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata-qemu-snp]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.kata-qemu-snp.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
EOF
  cat >"$state/cni/net.d/10-gantry.conflist" <<EOF
{"cniVersion": "1.0.0", "name": "gantry-realnode", "plugins": [
  {"type": "bridge", "bridge": "$bridge", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "$subnet"}]], "routes": [{"dst": "$ip/32"}], "dataDir": "$state/cni/data"}},
  {"type": "loopback"}]}
EOF
  # The node's client certificate, issued by the cluster's CA (kwokctl's pki).
  if [ ! -s "$state/pki/node.crt" ]; then
    openssl req -new -newkey rsa:2048 -nodes -keyout "$state/pki/node.key" -subj "/O=system:nodes/CN=system:node:$node" \
      -out "$state/pki/node.csr" 2>/dev/null
    openssl x509 -req -in "$state/pki/node.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
      -out "$state/pki/node.crt" -days 365 2>/dev/null
  fi
  local server
  server=$(kubectl_ config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  cat >"$state/kubelet.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority: "$pki/ca.crt"}}]
users: [{name: $node, user: {client-certificate: "$state/pki/node.crt", client-key: "$state/pki/node.key"}}]
contexts: [{name: local, context: {cluster: local, user: $node}}]
current-context: local
EOF
  cat >"$state/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$sock
cgroupDriver: cgroupfs
cgroupRoot: /$cgroup_root
cgroupsPerQOS: true
address: $ip
port: 10350
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10348
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$pki/ca.crt"}
authorization: {mode: Webhook}
registerWithTaints:
- {key: gantry.dev/real-node, value: "true", effect: NoSchedule}
failSwapOn: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
resolvConf: /etc/resolv.conf
maxPods: 30
EOF
  # The values the kubelet wants, as files over /proc/sys in its mount namespace; and
  # ip_forward, which the CNI bridge plugin turns on for a gateway bridge (pods reach the node's
  # own address without it: that is local delivery, not forwarding).
  echo 1 >"$state/sysctl/overcommit_memory"; echo 10 >"$state/sysctl/panic"; echo 1 >"$state/sysctl/panic_on_oops"
  echo 1 >"$state/sysctl/ip_forward"
}

# make_namespace: the private mount namespace, kept by a bind mount of its nsfs file, with the
# kubelet's kernel settings redirected to files.
make_namespace() {
  if [ -e "$mntns" ] && nsenter --mount="$mntns" true 2>/dev/null; then return 0; fi
  touch "$mntns"
  # Private first (cut from the host's peer groups: nothing mounted here reaches the host), then
  # shared within the namespace, as / is on a systemd host: the kubelet's hostPath mounts with
  # HostToContainer propagation (a package's root_mount_path) need a shared or slave source.
  unshare --mount="$mntns" --propagation private true
  in_ns mount --make-rshared /
  in_ns mount --bind "$state/sysctl/overcommit_memory" /proc/sys/vm/overcommit_memory
  in_ns mount --bind "$state/sysctl/panic" /proc/sys/kernel/panic
  in_ns mount --bind "$state/sysctl/panic_on_oops" /proc/sys/kernel/panic_on_oops
  in_ns mount --bind "$state/sysctl/ip_forward" /proc/sys/net/ipv4/ip_forward
  # The kubelet's device manager serves /var/lib/kubelet/device-plugins/kubelet.sock whatever its
  # --root-dir; in the namespace that directory is $state/device-plugins (the device plugin's
  # DaemonSet mounts it by the standard path). The host keeps only the empty mount point.
  mkdir -p /var/lib/kubelet/device-plugins "$state/device-plugins"
  in_ns mount --bind "$state/device-plugins" /var/lib/kubelet/device-plugins
}

start_containerd() {
  pid_alive containerd && return 0
  setsid nohup nsenter --mount="$mntns" -- containerd --config "$state/containerd/config.toml" \
    >"$state/log/containerd.log" 2>&1 </dev/null &
  echo $! >"$state/containerd.pid"
  local i
  for i in $(seq 100); do
    in_ns ctr --address "$sock" version >/dev/null 2>&1 && return 0
    pid_alive containerd || break
    sleep 0.1
  done
  tail -20 "$state/log/containerd.log" >&2; say "containerd did not start (log: $state/log/containerd.log)"; return 1
}

# make_cgroup_root: the kubelet's --cgroup-root (/gantry-realnode) in every cgroup hierarchy (it
# must exist); a new cpuset cgroup needs its parent's cpus and mems before tasks can join.
make_cgroup_root() {
  local d
  if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
    mkdir -p "/sys/fs/cgroup/$cgroup_root"
    return 0
  fi
  for d in /sys/fs/cgroup/*/; do
    d=${d%/}
    [ -f "$d/cgroup.procs" ] || continue
    mkdir -p "$d/$cgroup_root"
  done
  if [ -d /sys/fs/cgroup/cpuset/$cgroup_root ]; then
    cat /sys/fs/cgroup/cpuset/cpuset.cpus >/sys/fs/cgroup/cpuset/$cgroup_root/cpuset.cpus
    cat /sys/fs/cgroup/cpuset/cpuset.mems >/sys/fs/cgroup/cpuset/$cgroup_root/cpuset.mems
  fi
}

start_kubelet() {
  local ip=$1
  pid_alive kubelet && return 0
  make_cgroup_root
  setsid nohup nsenter --mount="$mntns" -- "$BIN/kubelet" --config "$state/kubelet.yaml" --root-dir "$state/kubelet" \
    --hostname-override "$node" --node-ip "$ip" --kubeconfig "$state/kubelet.kubeconfig" \
    --node-labels "gantry.dev/node-pool=real,gantry.dev/real-node=true" --v=1 \
    >"$state/log/kubelet.log" 2>&1 </dev/null &
  echo $! >"$state/kubelet.pid"
}

# import [TARBALL...]: the image tarballs (default: every .cache/images/*.tar) into containerd's
# k8s.io namespace, where the kubelet finds them (Pods use IfNotPresent; there is no registry).
import_images() {
  local f files=("$@")
  [ ${#files[@]} -gt 0 ] || files=("$CACHE"/images/*.tar)
  for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    in_ns ctr --address "$sock" -n k8s.io images import --no-unpack=false "$f" >/dev/null ||
      { say "could not import $f"; return 1; }
  done
}

# The fake GPUs (hack/images/deviceplugin) advertised on the node, and what GPU feature
# discovery and node-feature-discovery would label it with: an H200 node
# (../shared/reference/gpu-facts.md) with two whole GPUs (nvidia.com/gpu), one more renamed by
# type (nvidia.com/h200) and one in MIG mode with seven 1g.18gb slices (the "mixed" strategy),
# and AMD SEV-SNP (the kata-qemu-snp RuntimeClass's handler is runc's alias above).
gpu_resources=(nvidia.com/gpu=2 nvidia.com/h200=1 nvidia.com/mig-1g.18gb=7)
gpu_labels=(nvidia.com/gpu.present=true nvidia.com/gpu.product=NVIDIA-H200 nvidia.com/gpu.memory=143771
  nvidia.com/gpu.count=4 nvidia.com/gpu.family=hopper nvidia.com/gpu.compute.major=9 nvidia.com/gpu.compute.minor=0
  nvidia.com/mig.capable=true nvidia.com/mig.strategy=mixed nvidia.com/mig-1g.18gb.count=7
  feature.node.kubernetes.io/cpu-security.sev.snp.enabled=true)
device_plugin_ds=gantry-fake-gpu-device-plugin

# fake_gpus: label the node and run the test device plugin as a DaemonSet on it (as nvidia's
# plugin runs: the kubelet's device-plugins directory as a hostPath), then wait until the node's
# allocatable shows the GPUs. Tests restart the plugin by deleting its Pod.
fake_gpus() {
  local args=() r i
  for r in "${gpu_resources[@]}"; do args+=("-resource" "$r"); done
  args+=("-restart-delay" "15s") # a restart keeps the GPUs away long enough for the node's status to show it
  kubectl_ label node "$node" --overwrite "${gpu_labels[@]}" >/dev/null
  kubectl_ apply --server-side --force-conflicts --field-manager=gantry-cluster -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: $device_plugin_ds
  namespace: kube-system
  labels: {app.kubernetes.io/name: $device_plugin_ds}
spec:
  selector: {matchLabels: {app.kubernetes.io/name: $device_plugin_ds}}
  template:
    metadata:
      labels: {app.kubernetes.io/name: $device_plugin_ds}
    spec:
      nodeSelector: {kubernetes.io/hostname: $node}
      tolerations: [{operator: Exists}]
      priorityClassName: system-node-critical
      terminationGracePeriodSeconds: 5
      containers:
      - name: device-plugin
        image: ghcr.io/gantry-dev/test-device-plugin:1.0.0
        imagePullPolicy: Never
        args: [$(printf '"%s", ' "${args[@]}" | sed 's/, $//')]
        env: [{name: NODE_NAME, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]
        resources: {requests: {cpu: 5m, memory: 16Mi}, limits: {memory: 64Mi}}
        volumeMounts: [{name: device-plugins, mountPath: /var/lib/kubelet/device-plugins}]
      volumes: [{name: device-plugins, hostPath: {path: /var/lib/kubelet/device-plugins, type: Directory}}]
EOF
  for i in $(seq 120); do
    [ "$(kubectl_ get node "$node" -o jsonpath='{.status.allocatable.nvidia\.com/gpu}' 2>/dev/null)" = 2 ] && return 0
    sleep 0.5
  done
  kubectl_ -n kube-system describe pods -l app.kubernetes.io/name=$device_plugin_ds >&2 || true
  say "the test device plugin did not bring nvidia.com/gpu to $node's allocatable in 60s"
  return 1
}

up() {
  mkdir -p "$state"
  rm -f "$state/unavailable"
  local why; why=$(unavailable_reason)
  if [ -n "$why" ]; then
    echo "$why" >"$state/unavailable"
    say "no real node on this machine: $why; the cluster has kwok nodes only"
    return 0
  fi
  if running && node_ready; then
    fake_gpus
    say "$node is up"; return 0
  fi
  down_quiet
  mkdir -p "$state"
  debs
  local ip; ip=$(node_ip)
  [ -n "$ip" ] || { echo "no non-loopback IPv4 address for the node" >"$state/unavailable"; say "no real node: no non-loopback IPv4 address"; return 0; }
  local t=$SECONDS
  write_configs "$ip"
  make_namespace
  start_containerd
  say "building and importing the test images (hack/images)"
  { "$ROOT/tools/install.sh" busybox && go run ./hack/images -out "$CACHE/images"; } >"$state/log/images.log" 2>&1 || { cat "$state/log/images.log" >&2; say "hack/images failed"; return 1; }
  import_images
  start_kubelet "$ip"
  local i
  for i in $(seq 120); do
    if node_ready; then
      fake_gpus
      say "$node Ready at $ip in $((SECONDS - t))s (containerd $(containerd --version | awk '{print $3}'), kubelet $("$BIN/kubelet" --version | awk '{print $2}')), fake GPUs: ${gpu_resources[*]}"
      return 0
    fi
    pid_alive kubelet || break
    sleep 0.5
  done
  tail -30 "$state/log/kubelet.log" >&2
  say "$node did not become Ready (log: $state/log/kubelet.log)"
  return 1
}

# kill_cgroup_procs: SIGKILL every process in the pod cgroups (the containers and their shims'
# children), so nothing the node ran outlives it; then remove the cgroups.
kill_cgroup_procs() {
  local d f pid
  for d in /sys/fs/cgroup/*/"$cgroup_root" /sys/fs/cgroup/"$cgroup_root"; do
    [ -d "$d" ] || continue
    # A pod's cgroup can vanish between find and read (its kubelet removes it): read with cat,
    # whose failure does not stop the teardown as a failed redirection would under set -e.
    while read -r f; do
      while read -r pid; do [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true; done < <(cat "$f" 2>/dev/null || true)
    done < <(find "$d" -name cgroup.procs 2>/dev/null)
  done
  sleep 0.2
  for d in /sys/fs/cgroup/*/"$cgroup_root" /sys/fs/cgroup/"$cgroup_root"; do
    [ -d "$d" ] || continue
    find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true
  done
}

stop_pid() {
  local name=$1 pid
  [ -f "$state/$name.pid" ] || return 0
  pid=$(cat "$state/$name.pid")
  kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  rm -f "$state/$name.pid"
}

down_quiet() {
  stop_pid kubelet
  kill_cgroup_procs
  # containerd's shims (containerd-shim-runc-v2 -address <our socket>) outlive containerd.
  pkill -9 -f -- "-address $sock" 2>/dev/null || true
  stop_pid containerd
  pkill -9 -f -- "containerd --config $state/containerd/config.toml" 2>/dev/null || true
  kill_cgroup_procs
  if [ -e "$mntns" ]; then umount "$mntns" 2>/dev/null || umount -l "$mntns" 2>/dev/null || true; rm -f "$mntns"; fi
  ip link del "$bridge" 2>/dev/null || true
  # Anything of ours still mounted in the host's table (it should all have stayed in the namespace).
  { grep -F " $state/" /proc/self/mounts || true; } | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  # Node state files (containerd's overlay snapshots hold root-owned files).
  rm -rf "$state/containerd" "$state/kubelet" "$state/cni"
}

down() {
  [ -d "$state" ] || return 0
  if [ -f "$KUBECONFIG_PATH" ]; then kubectl_ delete node "$node" --ignore-not-found --wait=false >/dev/null 2>&1 || true; fi
  down_quiet
  rm -rf "$state"
}

# leftovers: what `down` should have removed and did not, beyond the processes and state
# directory hack/cluster.sh leftovers finds under the cluster's state (this node's included): a
# mount of the node's state, the bridge, a pod cgroup; one line each, exit 1 if anything is left.
# The bridge and the pod cgroups are machine-wide: they count only while no other clone's
# kubelet runs (that one owns them).
leftovers() {
  local left=0 line
  while read -r line; do [ -n "$line" ] && { echo "realnode: mount left: $line"; left=1; }; done \
    < <(grep -F " $state/" /proc/self/mounts 2>/dev/null || true)
  if ! pgrep -f "cluster/realnode/kubelet.yaml" >/dev/null 2>&1; then
    if ip link show "$bridge" >/dev/null 2>&1; then echo "realnode: bridge left: $bridge"; left=1; fi
    if [ -n "$(ls -A /var/lib/kubelet/device-plugins 2>/dev/null)" ]; then echo "realnode: files left in the host's /var/lib/kubelet/device-plugins"; left=1; fi
    for d in /sys/fs/cgroup/*/"$cgroup_root" /sys/fs/cgroup/"$cgroup_root"; do
      if [ -d "$d" ]; then echo "realnode: cgroup left: $d"; left=1; fi
    done
  fi
  return "$left"
}

status() {
  if [ -f "$state/unavailable" ]; then echo "unavailable: $(cat "$state/unavailable")"; return 1; fi
  if running; then echo "up: $node"; else echo "down"; return 1; fi
}

cd "$ROOT"
case ${1:-status} in
  up) up ;;
  down) down ;;
  status) status ;;
  leftovers) leftovers ;;
  import) shift; import_images "$@" ;;
  exec) shift; in_ns "$@" ;;
  *) echo "usage: $0 up|down|status|import [TAR...]|exec CMD..." >&2; exit 2 ;;
esac
