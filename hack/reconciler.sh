#!/usr/bin/env bash
# hack/reconciler.sh start|stop|status — run bin/gantry-reconciler against the local cluster
# in the background. PID in .cache/reconciler.pid, logs in .cache/reconciler.log.
# `start` is a no-op when the recorded process is alive. Extra flags for the reconciler (e.g.
# --zap-log-level=debug) can be passed in $GANTRY_RECONCILER_ARGS.
#
# GANTRY_RECONCILER_RBAC=1 runs it the way config/manager/manager.yaml does in a cluster: as
# ServiceAccount gantry-system/gantry-reconciler bound to the generated config/rbac
# (ClusterRole from the controllers' +kubebuilder:rbac markers, leader-election Role), with
# --leader-elect; a verb missing from the markers then fails (make test uses it).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
pidfile="$CACHE/reconciler.pid"
logfile="$CACHE/reconciler.log"

alive() { pid_alive "$pidfile"; }

# reconciler_kubeconfig: applies config/rbac and the ServiceAccount gantry-system/gantry-reconciler,
# writes a kubeconfig holding only a token of it (sa_kubeconfig, hack/lib.sh) and prints its path.
reconciler_kubeconfig() {
  local kc=(kubectl --kubeconfig "$KUBECONFIG_PATH")
  "${kc[@]}" get namespace gantry-system >/dev/null 2>&1 || "${kc[@]}" create namespace gantry-system >/dev/null
  "${kc[@]}" apply -f "$ROOT/config/rbac/" >/dev/null
  sa_kubeconfig gantry-system gantry-reconciler "$CACHE/reconciler-sa.kubeconfig"
}

case ${1:-status} in
  start)
    if alive; then echo "reconciler already running (pid $(cat "$pidfile"), log $logfile)"; exit 0; fi
    [ -f "$KUBECONFIG_PATH" ] || { echo "no cluster: run 'make cluster' first" >&2; exit 1; }
    kubeconfig=$KUBECONFIG_PATH rbac_args=()
    if [ "${GANTRY_RECONCILER_RBAC:-0}" = 1 ]; then
      kubeconfig=$(reconciler_kubeconfig)
      # A stable identity across the supervisor's restarts (as a Pod's name): a restarted
      # reconciler takes its Lease back at once.
      rbac_args=(--leader-elect --leader-election-namespace=gantry-system "--leader-election-identity=local-$(hostname)-$$")
    fi
    # Supervised like its Deployment (restartPolicy Always): with --leader-elect the reconciler
    # exits when it cannot renew its Lease (an API server or etcd outage longer than the renew
    # deadline, as controller-runtime does) and relies on being restarted. The loop restarts it
    # after 1 s; it runs in its own process group, which `stop` kills whole. It gives up (and
    # exits, so `start` fails with the last log lines) when the binary cannot run at all
    # (missing, not executable: status 126/127) or crashes at start-up (five exits within 10 s
    # before it ever ran 10 s; later, an API server outage may make it exit and restart often,
    # which is expected), as a CrashLoopBackOff would tell, instead of restarting it forever.
    # A binary older than the sources (edited since the last `make build`) is rebuilt first,
    # so `start` never runs yesterday's reconciler; go build is a no-op when nothing changed.
    if [ -x "$BIN/gantry-reconciler" ] && [ -n "$(find "$ROOT/reconciler" "$ROOT/internal" "$ROOT/go.mod" \( -name '*.go' ! -name '*_test.go' -o -name go.mod \) -newer "$BIN/gantry-reconciler" -print -quit 2>/dev/null)" ]; then
      echo "reconciler: sources changed since $BIN/gantry-reconciler was built; rebuilding it (make build)" >&2
      make --no-print-directory -C "$ROOT" build >&2
    fi
    [ -x "$BIN/gantry-reconciler" ] || { echo "$BIN/gantry-reconciler is missing or not executable: run 'make build'" >&2; exit 1; }
    setsid nohup bash -c '
      exits=() up=0
      while :; do
        began=$SECONDS; "$@"; rc=$?
        if [ $rc = 126 ] || [ $rc = 127 ]; then
          echo "supervise: gantry-reconciler could not be started (status $rc: $1 is missing or not executable); giving up"; exit $rc
        fi
        [ $((SECONDS - began)) -ge 10 ] && up=1
        exits+=("$SECONDS"); [ ${#exits[@]} -gt 5 ] && exits=("${exits[@]:1}")
        if [ $up = 0 ] && [ ${#exits[@]} = 5 ] && [ $((SECONDS - exits[0])) -le 10 ]; then
          echo "supervise: gantry-reconciler exited 5 times within 10s of starting (last status $rc); giving up (crash loop)"; exit 1
        fi
        echo "gantry-reconciler exited with status $rc; restarting it in 1s (as its Deployment would)"; sleep 1
      done' \
      supervise "$BIN/gantry-reconciler" --kubeconfig "$kubeconfig" "${rbac_args[@]}" \
      --metrics-bind-address=0 --health-probe-bind-address=0 \
      --node-class="$(bash "$ROOT/hack/karpenter.sh" node-class)" \
      --zap-time-encoding=rfc3339nano ${GANTRY_RECONCILER_ARGS:-} >"$logfile" 2>&1 &
    echo $! >"$pidfile"
    # Ready once it has applied its CRDs (the performers CRD is Established) and its controllers
    # run (controller-runtime logs "Starting workers" once it leads): CRDs left by an earlier
    # run alone do not count.
    for _ in $(seq 1 120); do
      alive || { echo "reconciler exited; last log lines of $logfile:" >&2; tail -20 "$logfile" >&2; exit 1; }
      if grep -q 'Starting workers' "$logfile" && kubectl --kubeconfig "$KUBECONFIG_PATH" wait --for=condition=Established \
           crd/performers.gantry.dev --timeout=1s >/dev/null 2>&1; then
        echo "reconciler running (pid $(cat "$pidfile"), log $logfile)"; exit 0
      fi
      sleep 0.5
    done
    echo "reconciler did not become ready in 60s; last log lines of $logfile:" >&2; tail -20 "$logfile" >&2
    bash "$0" stop >/dev/null 2>&1 || true; exit 1 ;;
  stop) stop_group "$pidfile" reconciler ;;
  status) if alive; then echo "running (pid $(cat "$pidfile"))"; else echo "not running"; exit 1; fi ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
