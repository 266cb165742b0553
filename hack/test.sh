#!/usr/bin/env bash
# hack/test.sh — what `make test` runs, in order, on a fresh clone:
#   1. generated files fresh (controller-gen, tfplugindocs) and lint (gofmt, go vet,
#      golangci-lint: depguard boundaries, gocyclo);
#   2. build both binaries;
#   3. start the local cluster (or reuse a running one);
#   4. the README's front door: `make demo` as the README gives it (apply), `make demo` again
#      (must plan no changes), then `make demo-destroy`, against this cluster;
#   5. unit, machine and controller suites (internal/..., reconciler/...) against the cluster;
#   6. the release (hack/release-test.sh: GoReleaser, signature, terraform/tofu init from a
#      loopback network mirror);
#   7. the reconciler as a separate process, then the provider acceptance tests with the real
#      Terraform CLI (TF_ACC=1), the module's apply test and the state-upgrade check
#      (hack/state-upgrade.sh check: each committed state fixture upgraded by this provider plans
#      no change, on Terraform 1.14 and OpenTofu);
#   8. stop what this script started (the reconciler always; the cluster if it was not up before,
#      with the README's `make down`, which must then leave no process, mount, bridge or state:
#      hack/cluster.sh leftovers).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# stage NAME: logs NAME and starts timing it (the previous stage ends); stage_report prints the
# time per stage and the total (at exit, also after a failure, naming the stage that failed).
stage_names=() stage_secs=() stage_cur="" stage_t0=$(date +%s) run_t0=$(date +%s)
stage() {
  local now; now=$(date +%s)
  if [ -n "$stage_cur" ]; then stage_names+=("$stage_cur"); stage_secs+=("$(( now - stage_t0 ))"); fi
  stage_cur=$1 stage_t0=$now
  if [ -n "$1" ]; then log "$1"; fi
}
stage_report() {
  local rc=$1 i
  stage ""
  log "time per stage"
  for i in "${!stage_names[@]}"; do printf '  %5ss  %s\n' "${stage_secs[$i]}" "${stage_names[$i]}" >&2; done
  local last="?"
  if [ "${#stage_names[@]}" -gt 0 ]; then last=${stage_names[-1]}; fi
  printf '  %5ss  total%s\n' "$(( $(date +%s) - run_t0 ))" "$([ "$rc" = 0 ] || echo " (failed in: $last)")" >&2
  # The acceptance summary again, last: a CI log cut to its tail still names a failed test.
  if [ "${#summary[@]}" -gt 0 ]; then
    log "acceptance summary (as above)"
    printf '  %s\n' "${summary[@]}" >&2
  fi
}

started_cluster=0
summary=()
cleanup() {
  local rc=$?
  stage_report "$rc"
  bash hack/reconciler.sh stop >/dev/null 2>&1 || true
  bash hack/reconciler-pod.sh stop >/dev/null 2>&1 || true
  if [ "$started_cluster" = 1 ]; then log "stopping the cluster this run started"; bash hack/cluster.sh down >/dev/null 2>&1 || true; fi
  exit $rc
}
trap cleanup EXIT

stage "generated files"
make --no-print-directory check-generate
stage "lint"
make --no-print-directory lint
stage "build"
make --no-print-directory build
stage "module tests: terraform test of examples/modules/gpu-stack, mocked provider (hack/module-test.sh mock)"
bash hack/module-test.sh mock

if bash hack/cluster.sh status >/dev/null 2>&1; then
  stage "reusing the running local cluster"
else
  stage "starting the local cluster"
  started_cluster=1
  bash hack/cluster.sh up
fi
# The README's first command, as a new user runs it (it builds what it needs itself): apply, a
# second run that must plan no changes, then destroy. Its reconciler is stopped afterwards.
stage "the README's demo: make demo"
t=$(date +%s)
make --no-print-directory demo 2>&1 | tee "$CACHE/demo-1.log"
log "the README's demo again: make demo (must plan no changes)"
make --no-print-directory demo 2>&1 | tee "$CACHE/demo-2.log"
grep -q 'No changes\.' "$CACHE/demo-2.log" && ! grep -qE 'Apply complete! Resources: ([1-9]|[0-9]+ added, [1-9]|0 added, 0 changed, [1-9])' "$CACHE/demo-2.log" ||
  { log "the second make demo did not plan 'No changes.' (log: .cache/demo-2.log)"; exit 1; }
log "make demo-destroy"
make --no-print-directory demo-destroy 2>&1 | tee "$CACHE/demo-destroy.log"
grep -qE 'Destroy complete! Resources: [1-9][0-9]* destroyed' "$CACHE/demo-destroy.log" ||
  { log "make demo-destroy did not destroy the demo's resources (log: .cache/demo-destroy.log)"; exit 1; }
log "demo: apply, no-change second run and destroy passed in $(( $(date +%s) - t ))s"

# A reconciler left running (make demo: a Pod on the real node, or a process) would fight the
# controller tests' in-process manager.
bash hack/reconciler-pod.sh stop >/dev/null 2>&1 || true
bash hack/reconciler.sh stop >/dev/null 2>&1 || true

export GANTRY_TEST_KUBECONFIG="$KUBECONFIG_PATH"
stage "unit, machine and controller tests"
go test $(go list ./... | grep -v /provider) -count=1 -timeout 20m

# test_lines: the lines of `go test -v` a person reads on the console: runs, results, and each
# message a test logged, whole. A test's message continues on lines indented deeper than its
# "<file>_test.go:<line>:" line (plugin-testing's "Error running apply: exit status 1" is
# followed there by Terraform's own stderr, the diagnostic): those are kept with it.
test_lines() {
  awk '
    /^(=== RUN|--- |PASS|FAIL|ok|panic)/ || /_test\.go:[0-9]+:/ {
      print; fflush(); cont = 0
      if (match($0, /^ *[^ ]*_test\.go:[0-9]+:/)) { cont = 1; match($0, /^ */); indent = RLENGTH }
      next
    }
    cont && match($0, /^ */) && RLENGTH > indent { print; fflush(); next }
    { cont = 0 }'
}

# acceptance NAME CLI [VAR=VALUE...]: the provider acceptance tests (TF_ACC=1) with the real CLI
# at CLI, the environment extended by VAR=VALUE; log .cache/testacc-NAME.log, and per test the
# CLI's own warnings and errors (TF_ACC_LOG=WARN) in .cache/testacc-NAME.tf/<test>.log, printed
# for each failed test (a CLI that exits 1 with nothing on stderr says why there:
# plugin-testing discards the CLI's stdout); prints a summary line and returns go test's exit
# code.
acceptance() {
  local name=$1 cli=$2; shift 2
  local t rc tflogs=$CACHE/testacc-$name.tf
  acc_names+=("$name")
  stage "provider acceptance tests on $name ($("$cli" version | head -1))"
  t=$(date +%s)
  rm -rf "$tflogs" && mkdir -p "$tflogs"
  set +e
  env "$@" TF_ACC=1 TF_ACC_TERRAFORM_PATH="$cli" TF_ACC_LOG=WARN TF_LOG_PATH_MASK="$tflogs/%s.log" \
    go test ./provider/... -count=1 -timeout 30m -v 2>&1 | tee "$CACHE/testacc-$name.log" | test_lines
  rc=${PIPESTATUS[0]}
  set -e
  local failed_test
  for failed_test in $(sed -n 's/^ *--- FAIL: \([^ ]*\).*/\1/p' "$CACHE/testacc-$name.log" | sed 's|/|__|g' | sort -u); do
    [ -f "$tflogs/$failed_test.log" ] || continue
    log "$name: $failed_test: the CLI's warnings and errors (last 40 lines of .cache/testacc-$name.tf/$failed_test.log)"
    tail -40 "$tflogs/$failed_test.log" >&2
  done
  # The failed tests are named on the summary line, which is printed last: a CI log cut to its
  # head and tail still says which test failed.
  local failed_names
  failed_names=$(sed -n 's/^ *--- FAIL: \([^ ]*\).*/\1/p' "$CACHE/testacc-$name.log" | sort -u | paste -sd, -)
  summary+=("$(printf '%-16s %s in %ss: %s passed, %s failed, %s skipped%s' "$name" "$([ "$rc" = 0 ] && echo ok || echo FAILED)" \
    "$(( $(date +%s) - t ))" "$(grep -c '^    --- PASS\|^--- PASS' "$CACHE/testacc-$name.log")" \
    "$(grep -c '^    --- FAIL\|^--- FAIL' "$CACHE/testacc-$name.log")" "$(grep -c '^    --- SKIP\|^--- SKIP' "$CACHE/testacc-$name.log")" \
    "${failed_names:+ (failed: $failed_names)}")")
  return "$rc"
}

stage "release: GoReleaser artifacts, installed by terraform and tofu from a loopback network mirror"
bash hack/release-test.sh

log "provider acceptance tests (real Terraform and OpenTofu CLIs, reconciler running)"
# A TF_CLI_CONFIG_FILE naming a file that does not exist makes the newer CLIs print a warning
# on every command; the tests need no CLI configuration.
if [ -n "${TF_CLI_CONFIG_FILE:-}" ] && [ ! -f "$TF_CLI_CONFIG_FILE" ]; then unset TF_CLI_CONFIG_FILE; fi
# The first pass (Terraform 1.8) runs against the reconciler as it ships: a Pod from its image and
# Helm chart on the real node (generated RBAC, leader election, probes); the others against the
# reconciler as a process under the same RBAC. Without a real node, all three use the process.
summary=() acc_names=() failed=0
if bash hack/realnode.sh status >/dev/null 2>&1; then
  log "the reconciler as a Pod on the real node (Helm chart) for the Terraform 1.8 pass"
  bash hack/reconciler-pod.sh start
  first_reconciler="Pod on the real node"
else
  GANTRY_RECONCILER_RBAC=1 bash hack/reconciler.sh start
  first_reconciler="process ($(bash hack/realnode.sh status 2>&1 || true))"
fi
# The OpenTofu pass runs as the least-privilege Terraform runner (config/terraform-runner):
# the provider gets a kubeconfig holding only the runner's token; test fixtures use the admin one.
runner_kubeconfig=$(bash hack/runner-rbac.sh)
acceptance terraform-1.8 "$BIN/terraform" KUBE_CONFIG_PATH="$KUBECONFIG_PATH" || failed=1
summary[-1]="${summary[-1]} (reconciler: $first_reconciler)"
if bash hack/reconciler-pod.sh stop >/dev/null 2>&1; then :; fi
GANTRY_RECONCILER_RBAC=1 bash hack/reconciler.sh start
# The real-node tests (the slowest; what they test does not depend on the CLI) run on the first
# pass only, against the reconciler as it ships; the other passes skip them, naming that pass.
acceptance terraform-1.14 "$BIN/terraform-1.14" KUBE_CONFIG_PATH="$KUBECONFIG_PATH" GANTRY_TEST_REAL_NODE_PASS=terraform-1.8 || failed=1
acceptance tofu-runner-rbac "$BIN/tofu" KUBE_CONFIG_PATH="$runner_kubeconfig" GANTRY_TEST_REAL_NODE_PASS=terraform-1.8 \
  GANTRY_TEST_ADMIN_KUBECONFIG="$KUBECONFIG_PATH" GANTRY_TEST_RUNNER_SA=terraform-runner/gantry-runner \
  TF_ACC_PROVIDER_NAMESPACE=hashicorp TF_ACC_PROVIDER_HOST=registry.opentofu.org || failed=1
stage "module tests: terraform test of examples/modules/gpu-stack, applied to this cluster (hack/module-test.sh apply)"
bash hack/module-test.sh apply || failed=1
stage "state upgrade: every provider/testdata/state-upgrade fixture's state, upgraded by this provider, plans no change (hack/state-upgrade.sh check)"
STATE_UPGRADE_PROVIDER="$BIN/terraform-provider-gantry" bash hack/state-upgrade.sh check || failed=1
log "acceptance summary"
printf '  %s\n' "${summary[@]}" >&2
# Each failed test's own words again, last: the lines its test file printed just before its
# "--- FAIL" (go test -v streams them), so a log cut to its tail still says why.
for acc_name in "${acc_names[@]}"; do
  acc_log=$CACHE/testacc-$acc_name.log
  for failed_test in $(sed -n 's/^--- FAIL: \([^ ]*\).*/\1/p' "$acc_log" | sort -u); do
    log "$acc_name: $failed_test failed; its last lines:"
    grep -B40 -- "^--- FAIL: $failed_test " "$acc_log" | grep -E '_test\.go:[0-9]+:|Error|error' | tail -12 >&2 || true
  done
done
# The README's teardown, as a user runs it after `make demo` and the tests: `make down` must
# succeed and leave nothing of the cluster or the real node behind (a teardown that stopped half
# way once left containerd, the node's mount namespace and the gantry0 bridge).
if [ "$started_cluster" = 1 ]; then
  stage "the README's teardown: make down (must leave no process, mount, bridge or state)"
  started_cluster=0
  make --no-print-directory down
  bash hack/cluster.sh leftovers || { log "make down left the above behind"; exit 1; }
  log "make down left nothing behind"
fi
test "$failed" = 0
