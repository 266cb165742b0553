#!/usr/bin/env bash
# hack/demo.sh — what `make demo` runs: build, local cluster, reconciler, then
# `terraform init` + `terraform apply -auto-approve` with the pinned Terraform CLI on
# examples/stacks/gpu-stack (the GPU-stack module of examples/modules/gpu-stack once per
# environment, staging and prod: GPU and TEE performers, an executor, an inference workspace
# and a GPU driver package set each), the outputs, and `kubectl get` of what it made. Before
# the apply it creates each environment's namespace and its operator key Secret with kubectl
# (demo keys; key material never goes through Terraform). Leaves the cluster and the
# reconciler running; `make down` stops them. A second run plans no changes.
#
#   hack/demo.sh           the demo (make demo)
#   hack/demo.sh destroy   terraform destroy of the demo stack (make demo-destroy)
set -euo pipefail
mode=${1:-apply}
case $mode in apply|destroy) ;; *) echo "usage: $0 [apply|destroy]" >&2; exit 2 ;; esac
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# The demo's Terraform CLI: a supported terraform or tofu (1.8+) already on PATH (bin/ aside),
# else the pinned Terraform built into the tools cache. GANTRY_DEMO_CLI=PATH forces one.
# cli_version CLI: its version (x.y.z), or nothing if it is not a Terraform/OpenTofu CLI.
cli_version() { "$1" version 2>/dev/null | sed -nE '1s/^(Terraform|OpenTofu) v([0-9]+[.][0-9]+[.][0-9]+).*/\2/p'; }
supported() { local v; v=$(cli_version "$1"); [ -n "$v" ] && printf '1.8.0\n%s\n' "$v" | sort -VC; }
tf=${GANTRY_DEMO_CLI:-}
if [ -z "$tf" ]; then
  for c in terraform tofu; do
    p=$(PATH=${PATH//$BIN:/} command -v "$c" 2>/dev/null) || continue
    if supported "$p"; then tf=$p; break; fi
    log "ignoring $p: $("$p" version 2>/dev/null | head -1) is older than the 1.8 the provider supports"
  done
fi
demo_tools=(debs kube etcd kwok)
[ -n "$tf" ] || demo_tools+=(terraform)
# The reconciler runs as a Pod from its image and Helm chart on the real node, where the machine
# can run one (root, cgroups); else as a process.
pod_capable=0
if [ "$(id -u)" = 0 ] && [ "${GANTRY_REAL_NODE:-1}" != 0 ] && { [ -d /sys/fs/cgroup/memory ] || [ -f /sys/fs/cgroup/cgroup.controllers ]; }; then
  pod_capable=1
  demo_tools+=(helm busybox) # busybox: the real node's test images (hack/images)
fi
log "tools the demo needs: ${demo_tools[*]} (built once into the tools cache, then reused)"
bash tools/install.sh "${demo_tools[@]}"
if [ -n "$tf" ]; then
  supported "$tf" || { log "$tf is not a supported Terraform or OpenTofu CLI (1.8+)"; exit 1; }
  log "using $($tf version | head -1) at $tf (found on PATH; GANTRY_DEMO_CLI=... picks another)"
else
  tf=$BIN/terraform
  log "using the pinned $($tf version | head -1) at $tf (no terraform or tofu 1.8+ on PATH)"
fi
terraform() { "$tf" "$@"; }

# The builds run while the cluster starts (most of its time is waiting on processes and the real
# node): the reconciler; the provider as a plain build, packed into a one-platform release (a
# zip and its SHA256SUMS: no GoReleaser, no signature; `make release` and `make test` cover the
# signed release) to be served from a loopback network mirror as a private registry would serve
# it; and, where a real node can run, the reconciler's image. The zip's bytes depend only on the
# binary's: an unchanged provider is not packed again, and init finds the lock file's hashes as
# they were. Their output is in .cache/demo-build.log.
log "build the reconciler and the provider (bin/, rebuilt when their sources changed) while the local cluster starts"
mkdir -p "$BIN" "$CACHE/mirror"
release="$CACHE/demo-release/0.1.0"
build() {
  go build -trimpath -o "$BIN/gantry-reconciler" ./reconciler/cmd/gantry-reconciler
  go build -trimpath -ldflags "-s -w -X main.version=0.1.0" -o "$BIN/terraform-provider-gantry" .
  go build -o "$CACHE/mirror/mirror" ./hack/mirror
  "$CACHE/mirror/mirror" -pack "$BIN/terraform-provider-gantry" -version 0.1.0 -dir "$release" >"$CACHE/demo-pack.txt"
  if [ "$pod_capable" = 1 ]; then bash hack/reconciler-pod.sh image; fi
}
build >"$CACHE/demo-build.log" 2>&1 &
build_pid=$!
trap 'kill "$build_pid" 2>/dev/null || true' EXIT
log "local cluster"
bash hack/cluster.sh up
wait "$build_pid" || { cat "$CACHE/demo-build.log" >&2; log "the build failed (its output above: .cache/demo-build.log)"; exit 1; }
log "the provider's package: $(cat "$CACHE/demo-pack.txt"), served from a loopback network mirror"
mirror_rc=$(bash hack/mirror.sh start "$release")
trap 'bash hack/mirror.sh stop' EXIT
real=0
if bash hack/realnode.sh status >/dev/null 2>&1; then real=1; fi
if [ "$real" = 1 ]; then
  log "reconciler: a Pod on the real node, from its image and Helm chart (hack/reconciler-pod.sh)"
  bash hack/reconciler-pod.sh start
else
  log "reconciler: a process (no real node: $(bash hack/realnode.sh status 2>&1 || true))"
  bash hack/reconciler-pod.sh stop >/dev/null 2>&1 || true
  # Restart it so a rebuilt binary is the one running.
  bash hack/reconciler.sh stop >/dev/null 2>&1 || true
  bash hack/reconciler.sh start
fi

export TF_CLI_CONFIG_FILE="$mirror_rc" SSL_CERT_FILE="$CACHE/mirror/ca.pem"
export KUBE_CONFIG_PATH="$KUBECONFIG_PATH"
export TF_IN_AUTOMATION=1
stack="$ROOT/examples/stacks/gpu-stack"
log "namespaces and operator key Secrets of the environments"
# Demo keys only (not real key material): in a real setup an operator or a secret manager writes
# this Secret. One kubectl apply for both environments.
for ns in gantry-staging gantry-prod; do
  cat <<YAML
---
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: v1
kind: Secret
metadata: {name: operator-keys, namespace: $ns}
type: Opaque
stringData:
  ecdsa: "0x$(printf 'de%.0s' {1..32})"
  bls: "0x$(printf 'b1%.0s' {1..32})"
YAML
done | kubectl --kubeconfig "$KUBECONFIG_PATH" apply -f - >/dev/null
log "terraform init ($stack)"
# The provider in the local mirror is rebuilt from source on every run with the same version,
# so its checksum can change: drop the (gitignored) lock file rather than fail init on it.
# The lock file is kept: init verifies the mirror's package against it. A provider rebuilt from
# changed sources has other hashes; then the lock file is updated on purpose (-upgrade), saying so.
if ! terraform -chdir="$stack" init -input=false >"$CACHE/demo-init.log" 2>&1; then
  if grep -q "checksum\|does not match" "$CACHE/demo-init.log"; then
    log "the provider was rebuilt since the lock file was written: updating its hashes (terraform init -upgrade)"
    terraform -chdir="$stack" init -input=false -upgrade >/dev/null
  else
    cat "$CACHE/demo-init.log" >&2; exit 1
  fi
fi
grep -q '"h1:' "$stack/.terraform.lock.hcl" || { log "the lock file has no h1: hash"; exit 1; }
realstack="$ROOT/examples/stacks/real-node"
hostdir="$CACHE/demo-realnode"
if [ "$mode" = destroy ]; then
  if [ -d "$realstack/.terraform" ] && [ -f "$realstack/terraform.tfstate" ]; then
    log "terraform destroy ($realstack)"
    terraform -chdir="$realstack" destroy -input=false -auto-approve -var host_dir="$hostdir"
  fi
  log "terraform destroy ($stack)"
  terraform -chdir="$stack" destroy -input=false -auto-approve
  exit 0
fi
log "terraform apply"
terraform -chdir="$stack" apply -input=false -auto-approve
log "terraform output"
terraform -chdir="$stack" output
log "kubectl get performers,executors,workspaces -A; kubectl get packagesets"
kubectl --kubeconfig "$KUBECONFIG_PATH" get performers,executors,workspaces -A -o wide
kubectl --kubeconfig "$KUBECONFIG_PATH" get packagesets -o wide

if [ "$real" = 1 ]; then
  log "the real node: a performer and a package whose Pods really run ($realstack)"
  terraform -chdir="$realstack" init -input=false -upgrade >"$CACHE/demo-init-real.log" 2>&1 || { cat "$CACHE/demo-init-real.log" >&2; exit 1; }
  terraform -chdir="$realstack" apply -input=false -auto-approve -var host_dir="$hostdir"
  log "kubectl get nodes -o wide (the real node beside the kwok nodes); the reconciler's Pod"
  kubectl --kubeconfig "$KUBECONFIG_PATH" get nodes -o wide
  kubectl --kubeconfig "$KUBECONFIG_PATH" -n gantry-system get pods -o wide
  log "what the package's stages wrote on the host ($hostdir)"
  for f in hello.installed hello.config hello.log; do echo "--- $hostdir/$f"; cat "$hostdir/$f"; done
  ep=$(kubectl --kubeconfig "$KUBECONFIG_PATH" -n default get endpointslices -l kubernetes.io/service-name=performer-hello-real \
        -o jsonpath='{.items[0].endpoints[0].addresses[0]}:{.items[0].ports[0].port}')
  log "the performer's answer (its Service's endpoint $ep, from the host)"
  out=$(exec 3<>"/dev/tcp/${ep%:*}/${ep#*:}" && printf 'GET / HTTP/1.0\r\nHost: demo\r\n\r\n' >&3 && cat <&3 | tail -1) ||
    { log "the performer did not answer at $ep"; exit 1; }
  echo "$out"
  case $out in *"gantry test performer"*) ;; *) log "unexpected answer from the performer: $out"; exit 1 ;; esac
else
  log "no real node on this machine ($(bash hack/realnode.sh status 2>&1 || true)): the real-node part of the demo is skipped"
fi

cat <<MSG

The local cluster and the reconciler are still running:
  kubeconfig:      $KUBECONFIG_PATH   (export KUBECONFIG=$KUBECONFIG_PATH)
  reconciler log:  $( [ "$real" = 1 ] && echo "kubectl -n gantry-system logs deploy/gantry-gantry-reconciler (its Pod on the real node)" || echo "$CACHE/reconciler.log")
  try:             kubectl get performers,executors,workspaces,pods,svc -A -o wide; kubectl get packagesets
Run 'make demo' again: the plan finds nothing to change. Stop everything with 'make down'.
MSG
