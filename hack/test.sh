#!/usr/bin/env bash
# hack/test.sh — what `make test` runs, in order, on a fresh clone:
#   1. generated files fresh (controller-gen, tfplugindocs) and lint (gofmt, go vet);
#   2. build both binaries;
#   3. start the local cluster (or reuse a running one);
#   4. unit, machine and controller suites (internal/..., reconciler/...) against the cluster;
#   5. the reconciler as a separate process, then the provider acceptance tests with the real
#      Terraform CLI (TF_ACC=1);
#   6. stop what this script started (the reconciler always; the cluster if it was not up before).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

started_cluster=0
cleanup() {
  local rc=$?
  bash hack/reconciler.sh stop >/dev/null 2>&1 || true
  if [ "$started_cluster" = 1 ]; then log "stopping the cluster this run started"; bash hack/cluster.sh down >/dev/null 2>&1 || true; fi
  exit $rc
}
trap cleanup EXIT

log "generated files"
make --no-print-directory check-generate
log "lint"
make --no-print-directory lint
log "build"
make --no-print-directory build

if bash hack/cluster.sh status >/dev/null 2>&1; then
  log "reusing the running local cluster"
else
  log "starting the local cluster"
  started_cluster=1
  bash hack/cluster.sh up
fi
# A reconciler left running (make demo) would fight the controller tests' in-process manager.
bash hack/reconciler.sh stop >/dev/null 2>&1 || true

export GANTRY_TEST_KUBECONFIG="$KUBECONFIG_PATH"
log "unit, machine and controller tests"
go test $(go list ./... | grep -v /provider) -count=1 -timeout 20m

log "provider acceptance tests (real Terraform CLI, reconciler running)"
GANTRY_RECONCILER_RBAC=1 bash hack/reconciler.sh start
TF_ACC=1 TF_ACC_TERRAFORM_PATH="$BIN/terraform" KUBE_CONFIG_PATH="$KUBECONFIG_PATH" \
  go test ./provider/... -count=1 -timeout 30m -v 2>&1 | tee "$CACHE/testacc.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|_test.go' 
test "${PIPESTATUS[0]}" = 0
