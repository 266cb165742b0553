#!/usr/bin/env bash
# hack/karpenter.sh start|stop|status — run Karpenter's kwok cloud provider (bin/karpenter, built
# by tools/install.sh from sigs.k8s.io/karpenter/kwok) against the local cluster, so workspaces
# that provision nodes (spec.resource.provisionNodes) get kwok GPU nodes of their instance type
# from the NodeClaims they create, as KAITO's do from its gpu-provisioner.
#
# `start` applies Karpenter's CRDs (NodeClaim, NodePool, NodeOverlay, KWOKNodeClass) and the
# KWOKNodeClass "default", writes the instance types of Gantry's catalog for the kwok provider
# (go run ./hack/karpenter), and starts Karpenter in the background (no leader election, metrics
# and health on free loopback ports). No NodePool is created: Karpenter never provisions for
# pending pods on its own, only the NodeClaims workspaces make. PID in .cache/karpenter.pid, log in
# .cache/karpenter.log. hack/cluster.sh up starts it and down stops it.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
pidfile="$CACHE/karpenter.pid"
logfile="$CACHE/karpenter.log"
state="$CACHE/karpenter"
# The node class the reconciler's --node-class names (hack/reconciler.sh, the chart's values in tests).
NODE_CLASS=karpenter.kwok.sh/KWOKNodeClass/default

alive() { pid_alive "$pidfile"; }
kc() { kubectl --kubeconfig "$KUBECONFIG_PATH" --request-timeout=20s "$@"; }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

case ${1:-status} in
  start)
    if alive; then echo "karpenter already running (pid $(cat "$pidfile"), log $logfile)"; exit 0; fi
    [ -f "$KUBECONFIG_PATH" ] || { echo "no cluster: run 'make cluster' first" >&2; exit 1; }
    [ -x "$BIN/karpenter" ] && [ -d "$BIN/karpenter-crds" ] || { echo "bin/karpenter is missing: run 'bash tools/install.sh karpenter'" >&2; exit 1; }
    mkdir -p "$state"
    kc apply --server-side --force-conflicts --field-manager=gantry-cluster -f "$BIN/karpenter-crds/" >/dev/null
    kc wait --for=condition=Established --timeout=60s crd/nodeclaims.karpenter.sh crd/kwoknodeclasses.karpenter.kwok.sh >/dev/null
    kc apply --server-side --force-conflicts --field-manager=gantry-cluster -f - >/dev/null <<'YAML'
apiVersion: karpenter.kwok.sh/v1alpha1
kind: KWOKNodeClass
metadata:
  name: default
YAML
    (cd "$ROOT" && go run ./hack/karpenter) >"$state/instance-types.json.tmp" && mv "$state/instance-types.json.tmp" "$state/instance-types.json"
    setsid nohup env KUBECONFIG="$KUBECONFIG_PATH" INSTANCE_TYPES_FILE_PATH="$state/instance-types.json" \
      SYSTEM_NAMESPACE=kube-system DISABLE_LEADER_ELECTION=true LOG_LEVEL=info \
      METRICS_PORT="$(freeport)" HEALTH_PROBE_PORT="$(freeport)" \
      "$BIN/karpenter" >"$logfile" 2>&1 &
    echo $! >"$pidfile"
    for _ in $(seq 1 120); do
      alive || { echo "karpenter exited; last log lines of $logfile:" >&2; tail -20 "$logfile" >&2; exit 1; }
      if grep -q 'Starting workers' "$logfile" 2>/dev/null; then echo "karpenter running (pid $(cat "$pidfile"), log $logfile)"; exit 0; fi
      sleep 0.5
    done
    echo "karpenter did not start in 60s; last log lines of $logfile:" >&2; tail -20 "$logfile" >&2
    bash "$0" stop >/dev/null 2>&1 || true; exit 1 ;;
  stop) stop_group "$pidfile" karpenter ;;
  status) if alive; then echo "running (pid $(cat "$pidfile"))"; else echo "not running"; exit 1; fi ;;
  node-class) echo "$NODE_CLASS" ;;
  *) echo "usage: $0 start|stop|status|node-class" >&2; exit 2 ;;
esac
