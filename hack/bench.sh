#!/usr/bin/env bash
# hack/bench.sh — what `make bench` runs: build, local cluster, reconciler, then
# hack/bench (Go) which times, in BENCH_ROUNDS rounds (default 3), 100 gantry_performer (plan,
# apply, no-op plan, destroy) beside the limit (the same 100 Performers created, watched until
# Running, deleted and watched until gone by a client-go program at QPS 200: no Terraform; and
# the same at Terraform's -parallelism, 10 workers each waiting for its object) and
# Terraform's floor (100 terraform_data), one table of ranges and per-round ratios, round 1 with a
# per-object trace and the API server's time by request (hack/bench/trace.go); measures
# kwok's pod ready delay and the end-to-end wait latency (reconciler writes Running/Ready →
# the provider's Create returns); then
# hack/bench/packageset: a 2-package PackageSet over PS_BENCH_NODES kwok nodes (default 200),
# variants PS_BENCH_VARIANTS (default "a,b,c": a = no interrupt, budget 100%; b = reboot
# interrupt, budget 10%; c = 3 compartments of a deployment policy, 25% each, exponential
# batches; d = c with a reboot interrupt, for 10,000 nodes; h = soak with a health check every
# 10 s, with/without checks and a check failing mid-rollout), each after its single-node
# baseline, ending in rows of the common | figure | value | limit | target | ratio | table;
# then hack/bench/scale:
# SCALE_BENCH_PERFORMERS (default 1000) gantry_performer applied, planned and destroyed beside
# a client-go limit (the same Performers created by a parallel client at the same QPS); then
# hack/bench/schemafloor: the same no-op plan with a provider that serves Gantry's schema and
# does no work (Terraform's own cost of the schema); then
# hack/bench/preview: the package set rollout preview over PREVIEW_BENCH_NODES synthetic nodes
# (default 1000), the provider's computation at plan.
# Prints numbers; it does not pass or fail on them. Each program also records its figures
# (hack/bench/table) in $GANTRY_BENCH_ROWS; the run ends with them as one table, each figure
# beside its limit measured in the same run and its target.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
# 5,000 kwok nodes or more: slower simulated heartbeats (hack/cluster.sh), or kwok cannot renew
# every node's Lease in time on a small machine and the nodes turn unreachable mid-run; and more
# of kwok's Pod stage changes at once, or kwok's 4 calls in flight bound the rollout.
if [ "${PS_BENCH_NODES:-200}" -ge 5000 ]; then
  export GANTRY_KWOK_HEARTBEAT_FACTOR=${GANTRY_KWOK_HEARTBEAT_FACTOR:-30}
  export GANTRY_KWOK_POD_PARALLELISM=${GANTRY_KWOK_POD_PARALLELISM:-16}
fi
make --no-print-directory install >/dev/null
bash hack/cluster.sh up >/dev/null
bash hack/reconciler.sh stop >/dev/null 2>&1 || true
bash hack/reconciler.sh start >/dev/null
export GANTRY_BENCH_ROWS="$CACHE/bench/rows.jsonl"
mkdir -p "$CACHE/bench" && : > "$GANTRY_BENCH_ROWS"
go run ./hack/bench -kubeconfig "$KUBECONFIG_PATH" -terraform "$BIN/terraform" \
  -tfrc "$CACHE/terraformrc" -workdir "$CACHE/bench" -reconciler-log "$CACHE/reconciler.log" -rounds "${BENCH_ROUNDS:-3}" "$@"
# PackageSet: its own reconciler process per run (peak RSS, CPU, API requests per node-stage)
# over PS_BENCH_NODES kwok nodes (default 200; the issue's number is 1000).
bash hack/reconciler.sh stop >/dev/null 2>&1 || true
# Karpenter (hack/karpenter.sh, for workspaces' NodeClaims) watches every node: at 10,000 kwok
# nodes it took 2.2 GiB and a third of a core; no package set uses it.
if [ "${PS_BENCH_NODES:-200}" -ge 5000 ]; then bash hack/karpenter.sh stop >/dev/null 2>&1 || true; fi
go run ./hack/bench/packageset -kubeconfig "$KUBECONFIG_PATH" -reconciler "$BIN/gantry-reconciler" \
  -nodes "${PS_BENCH_NODES:-200}" -variants "${PS_BENCH_VARIANTS:-a,b,c}"
# Scale: its own reconciler process (peak RSS, CPU) and its own kwok nodes.
go run ./hack/bench/scale -kubeconfig "$KUBECONFIG_PATH" -terraform "$BIN/terraform" -tfrc "$CACHE/terraformrc" \
  -reconciler "$BIN/gantry-reconciler" -workdir "$CACHE/bench/scale" -n "${SCALE_BENCH_PERFORMERS:-1000}"
# Terraform's own cost of Gantry's schema: the same N gantry_performer served by a provider that
# does no work (hack/bench/schemafloor), beside N terraform_data; no cluster.
go run ./hack/bench/schemafloor -terraform "$BIN/terraform" -workdir "$CACHE/bench/schemafloor" -n "${SCALE_BENCH_PERFORMERS:-1000}" -parallelism 200
# The package set rollout preview the provider computes at plan (no cluster: the computation).
go run ./hack/bench/preview -nodes "${PREVIEW_BENCH_NODES:-1000}"
echo
echo "== make bench: every figure beside its limit and target =="
go run ./hack/bench/table/cmd "$GANTRY_BENCH_ROWS"
