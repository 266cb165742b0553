#!/usr/bin/env bash
# hack/test.sh — what `make test` runs, in order, on a fresh clone:
#   1. generated files fresh (controller-gen, tfplugindocs) and lint (gofmt, go vet);
#   2. build both binaries;
#   3. start the local cluster (or reuse a running one);
#   4. unit, machine and controller suites (internal/..., reconciler/...) against the cluster;
#   5. the release (hack/release-test.sh: GoReleaser, signature, terraform/tofu init from a
#      loopback network mirror);
#   6. the reconciler as a separate process, then the provider acceptance tests with the real
#      Terraform CLI (TF_ACC=1);
#   7. stop what this script started (the reconciler always; the cluster if it was not up before).
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

# acceptance NAME CLI [VAR=VALUE...]: the provider acceptance tests (TF_ACC=1) with the real CLI
# at CLI, the environment extended by VAR=VALUE; log .cache/testacc-NAME.log, and per test the
# CLI's own warnings and errors (TF_ACC_LOG=WARN) in .cache/testacc-NAME.tf/<test>.log, printed
# for each failed test (a CLI that exits 1 with nothing on stderr says why there:
# plugin-testing discards the CLI's stdout); prints a summary line and returns go test's exit
# code.
acceptance() {
  local name=$1 cli=$2; shift 2
  local t rc tflogs=$CACHE/testacc-$name.tf
  log "provider acceptance tests on $name ($("$cli" version | head -1))"
  t=$(date +%s)
  rm -rf "$tflogs" && mkdir -p "$tflogs"
  set +e
  env "$@" TF_ACC=1 TF_ACC_TERRAFORM_PATH="$cli" TF_ACC_LOG=WARN TF_LOG_PATH_MASK="$tflogs/%s.log" \
    go test ./provider/... -count=1 -timeout 30m -v 2>&1 | tee "$CACHE/testacc-$name.log" | grep -E '^(=== RUN|--- |PASS|FAIL|ok|panic)|_test.go'
  rc=${PIPESTATUS[0]}
  set -e
  local failed_test
  for failed_test in $(sed -n 's/^ *--- FAIL: \([^ ]*\).*/\1/p' "$CACHE/testacc-$name.log" | sed 's|/|__|g' | sort -u); do
    [ -f "$tflogs/$failed_test.log" ] || continue
    log "$name: $failed_test: the CLI's warnings and errors (last 40 lines of .cache/testacc-$name.tf/$failed_test.log)"
    tail -40 "$tflogs/$failed_test.log" >&2
  done
  summary+=("$(printf '%-16s %s in %ss: %s passed, %s failed, %s skipped' "$name" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" \
    "$(( $(date +%s) - t ))" "$(grep -c '^    --- PASS\|^--- PASS' "$CACHE/testacc-$name.log")" \
    "$(grep -c '^    --- FAIL\|^--- FAIL' "$CACHE/testacc-$name.log")" "$(grep -c '^    --- SKIP\|^--- SKIP' "$CACHE/testacc-$name.log")")")
  return "$rc"
}

log "release: GoReleaser artifacts, installed by terraform and tofu from a loopback network mirror"
bash hack/release-test.sh

log "provider acceptance tests (real Terraform and OpenTofu CLIs, reconciler running)"
# A TF_CLI_CONFIG_FILE naming a file that does not exist makes the newer CLIs print a warning
# on every command; the tests need no CLI configuration.
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then unset TF_CLI_CONFIG_FILE; fi
GANTRY_RECONCILER_RBAC=1 bash hack/reconciler.sh start
# The OpenTofu pass runs as the least-privilege Terraform runner (config/terraform-runner):
# the provider gets a kubeconfig holding only the runner's token; test fixtures use the admin one.
runner_kubeconfig=$(bash hack/runner-rbac.sh)
summary=() failed=0
acceptance terraform-1.8 "$BIN/terraform" KUBE_CONFIG_PATH="$KUBECONFIG_PATH" || failed=1
acceptance terraform-1.14 "$BIN/terraform-1.14" KUBE_CONFIG_PATH="$KUBECONFIG_PATH" || failed=1
acceptance tofu-runner-rbac "$BIN/tofu" KUBE_CONFIG_PATH="$runner_kubeconfig" \
  GANTRY_TEST_ADMIN_KUBECONFIG="$KUBECONFIG_PATH" GANTRY_TEST_RUNNER_SA=terraform-runner/gantry-runner \
  TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_ACC_PROVIDER_HOST=registry.opentofu.org || failed=1
log "acceptance summary"
printf '  %s\n' "${summary[@]}" >&2
test "$failed" = 0
