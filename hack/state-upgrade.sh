#!/usr/bin/env bash
# hack/state-upgrade.sh — the state-upgrade harness against the local cluster (DESIGN.md
# "Changing a resource's schema"). Fixtures live in provider/testdata/state-upgrade/v<N>/<type>/:
# main.tf (a small configuration of gantry_<type>) and terraform.tfstate (the state Terraform
# 1.14 wrote for it at schema version N).
#
#   hack/state-upgrade.sh generate [TYPE...]
#     writes v<N>/<type>/terraform.tfstate, N being the type's current schema version (asked of
#     the provider), for v<N>/<type>/main.tf (copied from the newest older version's when
#     missing): terraform-1.14 apply, a second apply (must change nothing; it saves the refreshed
#     state with the provider's private state), the state scrubbed (hack/stateupgrade fixture),
#     destroy. Without TYPEs: every type lacking a fixture at its current version. An existing
#     fixture is never overwritten (STATE_UPGRADE_FORCE=1 does): it stands for the states users
#     hold, and only the provider of its version can write it.
#   hack/state-upgrade.sh check [TYPE...]
#     for every fixture of TYPE (default: all), on each CLI: apply the type's newest main.tf
#     (v<newest>/<type>/main.tf: the same objects as every older fixture's, written for the
#     current schema, as a user's configuration is after an upgrade) with the current provider,
#     so the objects exist; replace the state by the fixture's (its lineage and serial set to
#     follow the working state; state push -force); `plan -detailed-exitcode` must exit 0 (the
#     upgraded state plans no change); destroy; nothing of it may be left. Exits 1 when any
#     failed.
#
# Objects go into the namespace stateupgrade (created when missing and then deleted at the end,
# with the Secret stateupgrade-operator-keys the executor fixture names) and, for the package
# set, one cluster-scoped PackageSet that selects no node. The cluster must be up with the
# reconciler running (make reconciler); kubeconfig .cache/cluster/kubeconfig.
#
# Environment: STATE_UPGRADE_CLIS (check; default "terraform-1.14 tofu", CLIs in bin/);
# STATE_UPGRADE_PROVIDER (a built terraform-provider-gantry; default: `go build` of this tree
# into .cache/state-upgrade/bin). The CLIs get the provider through dev_overrides in a CLI
# configuration of this script's own (.cache/state-upgrade/terraformrc) and no other KUBE_*,
# KUBECONFIG or TF_* setting of the caller's environment.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

mode=${1:-}
case $mode in generate | check) ;; *) echo "usage: $0 generate|check [TYPE...]" >&2; exit 2 ;; esac
shift
types=("$@")
fixtures="$ROOT/provider/testdata/state-upgrade"
work="$CACHE/state-upgrade"
ns=stateupgrade
keys_secret=stateupgrade-operator-keys
version=0.1.0
[ -f "$KUBECONFIG_PATH" ] || { log "state upgrade: no local cluster ($KUBECONFIG_PATH): start it and the reconciler with 'make reconciler'"; exit 1; }
kc() { kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }

mkdir -p "$work/bin"
if [ -n "${STATE_UPGRADE_PROVIDER:-}" ]; then
  [ "$(basename "$STATE_UPGRADE_PROVIDER")" = terraform-provider-gantry ] && [ -x "$STATE_UPGRADE_PROVIDER" ] ||
    { log "state upgrade: STATE_UPGRADE_PROVIDER must be an executable named terraform-provider-gantry"; exit 2; }
  provider_dir=$(cd "$(dirname "$STATE_UPGRADE_PROVIDER")" && pwd)
else
  go build -trimpath -ldflags "-X main.version=$version" -o "$work/bin/terraform-provider-gantry" .
  provider_dir="$work/bin"
fi
go build -o "$work/bin/stateupgrade" ./hack/stateupgrade
su() { "$work/bin/stateupgrade" "$@"; }
cat >"$work/terraformrc" <<RC
provider_installation {
  dev_overrides {
    "registry.terraform.io/gantry-dev/gantry" = "$provider_dir"
    "registry.opentofu.org/gantry-dev/gantry" = "$provider_dir"
  }
  direct {}
}
RC

# The CLIs' environment: the local cluster's kubeconfig only, this script's CLI configuration.
unset_env=(-u TF_DATA_DIR -u TF_WORKSPACE -u TF_CLI_ARGS -u TF_LOG -u TF_LOG_PATH)
for v in $(compgen -e); do
  case $v in KUBE_* | GANTRY_* | KUBECONFIG | TF_CLI_ARGS_*) unset_env+=(-u "$v") ;; esac
done
set_env=(TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1 KUBE_CONFIG_PATH="$KUBECONFIG_PATH")
# tf CLI DIR ARGS...: the CLI bin/CLI in DIR.
tf() { local cli=$1 d=$2; shift 2; (cd "$d" && env "${unset_env[@]}" "${set_env[@]}" "$BIN/$cli" "$@"); }

# The namespace and the executor's key Secret (dummy values: the executor checks only that the
# keys exist); removed at exit when this run created the namespace.
created_ns=0
if [ "$(kc get namespace "$ns" -o jsonpath='{.status.phase}' 2>/dev/null)" = Terminating ]; then # deleted by a run before
  kc wait --for=delete "namespace/$ns" --timeout=120s >/dev/null 2>&1 || { log "state upgrade: namespace $ns is still terminating"; exit 1; }
fi
if ! kc get namespace "$ns" >/dev/null 2>&1; then kc create namespace "$ns" >/dev/null; created_ns=1; fi
kc -n "$ns" create secret generic "$keys_secret" --from-literal=ecdsa=dummy --from-literal=bls=dummy \
  --dry-run=client -o yaml | kc apply -f - >/dev/null
cleanup() {
  local rc=$?
  kc -n "$ns" delete secret "$keys_secret" --ignore-not-found >/dev/null 2>&1 || true
  if [ "$created_ns" = 1 ]; then kc delete namespace "$ns" --timeout=120s >/dev/null 2>&1 || true; fi
  exit $rc
}
trap cleanup EXIT

# leftovers: waits up to 60 s until nothing the fixtures made is left (Gantry objects, the Pods,
# Services, Deployments, ConfigMaps and Secrets the reconciler creates for them, the fixture's
# PackageSet); prints what is left and returns 1 after that.
leftovers() {
  local left i
  for i in $(seq 1 60); do
    left=$({
      kc -n "$ns" get performers,executors,aggregators,workspaces,pods,services,deployments,statefulsets,replicasets,jobs,configmaps,secrets -o name 2>&1
      kc get packagesets -o name 2>&1 | awk '!/^packageset\.gantry\.dev\// || /^packageset\.gantry\.dev\/stateupgrade-/' # ours, or an error
    } | grep -v -e '^configmap/kube-root-ca.crt$' -e "^secret/$keys_secret\$" || true)
    [ -n "$left" ] || return 0
    sleep 1
  done
  log "state upgrade: left in namespace $ns after destroy:"; echo "$left" >&2
  return 1
}

# fixture_types: the TYPEs given, or every type with a fixture directory.
fixture_types() {
  if [ ${#types[@]} -gt 0 ]; then printf '%s\n' "${types[@]}"; return; fi
  find "$fixtures" -mindepth 2 -maxdepth 2 -type d -printf '%f\n' | sort -u
}

# generate_one TYPE EXPLICIT: the fixture of TYPE at its current schema version. An existing one
# fails when TYPE was named (EXPLICIT=1), else it is skipped.
generate_one() {
  local t=$1 explicit=$2 d="$work/generate/$1" cur src target v rc=0
  rm -rf "$d" && mkdir -p "$d" || return 1
  # The current schema version, from the provider itself (any fixture configuration of the type
  # names the provider; the newest is copied to the new version's directory when missing).
  src=$(find "$fixtures" -mindepth 2 -maxdepth 2 -type d -name "$t" | sort -V | tail -1)
  [ -n "$src" ] && [ -f "$src/main.tf" ] || { log "state upgrade: no $fixtures/v*/$t/main.tf: write the configuration first"; return 1; }
  cp "$src/main.tf" "$d/main.tf"
  tf terraform-1.14 "$d" providers schema -json >"$d/schema.json" 2>"$d/schema.log" || { cat "$d/schema.log" >&2; return 1; }
  cur=$(su schema-version "$d/schema.json" "gantry_$t") || return 1
  target="$fixtures/v$cur/$t"
  if [ -f "$target/terraform.tfstate" ] && [ "${STATE_UPGRADE_FORCE:-}" != 1 ]; then
    log "state upgrade: ${target#"$ROOT"/}/terraform.tfstate exists (schema version $cur); fixtures are generated once (STATE_UPGRADE_FORCE=1 overwrites)"
    [ "$explicit" = 0 ]; return
  fi
  mkdir -p "$target"
  [ -f "$target/main.tf" ] || cp "$src/main.tf" "$target/main.tf"
  cp "$target/main.tf" "$d/main.tf"
  log "state upgrade: generating ${target#"$ROOT"/} (gantry_$t, schema version $cur) with $(tf terraform-1.14 "$d" version | head -1)"
  for v in 1 2; do
    if ! tf terraform-1.14 "$d" apply -auto-approve -input=false -no-color >"$d/apply-$v.log" 2>&1; then
      cat "$d/apply-$v.log" >&2; log "state upgrade: apply $v of $t failed"; tf terraform-1.14 "$d" destroy -auto-approve -no-color >/dev/null 2>&1 || true; return 1
    fi
  done
  grep -q 'Resources: 0 added, 0 changed, 0 destroyed' "$d/apply-2.log" ||
    { cat "$d/apply-2.log" >&2; log "state upgrade: the second apply of $t changed something"; tf terraform-1.14 "$d" destroy -auto-approve -no-color >/dev/null 2>&1 || true; return 1; }
  # (Called in a || list, so errexit is off here: every step checks its own status.)
  su fixture "$d/terraform.tfstate" "$target/terraform.tfstate" || rc=1
  tf terraform-1.14 "$d" destroy -auto-approve -no-color >"$d/destroy.log" 2>&1 || { cat "$d/destroy.log" >&2; return 1; }
  leftovers || return 1
  [ "$rc" = 0 ] || return 1
  log "state upgrade: wrote ${target#"$ROOT"/}/terraform.tfstate"
}

# check_one CLI FIXTURE_DIR CONFIG_DIR: apply CONFIG_DIR/main.tf (the type's newest
# configuration: the same objects as every older fixture's, written for the current schema, as a
# user's configuration is after following an upgrade), push the fixture's state, plan (must exit
# 0), destroy.
check_one() {
  local cli=$1 fx=$2 config=$3 rel d rc=0 prc
  rel=${fx#"$fixtures"/}
  d="$work/check/$cli/$rel"
  rm -rf "$d" && mkdir -p "$d"
  cp "$config/main.tf" "$d/main.tf"
  if ! tf "$cli" "$d" apply -auto-approve -input=false -no-color >"$d/apply.log" 2>&1; then
    cat "$d/apply.log" >&2; log "state upgrade: $rel on $cli: apply of ${config#"$fixtures"/}/main.tf failed"; rc=1
  else
    if ! su push "$fx/terraform.tfstate" "$d/terraform.tfstate" "$d/fixture.tfstate" 2>"$d/push.log" ||
      ! tf "$cli" "$d" state push -force fixture.tfstate >>"$d/push.log" 2>&1; then
      cat "$d/push.log" >&2; log "state upgrade: $rel on $cli: state push of the fixture failed"; rc=1
    else
      set +e
      tf "$cli" "$d" plan -detailed-exitcode -input=false -no-color >"$d/plan.log" 2>&1
      prc=$?
      set -e
      case $prc in
        0) log "state upgrade: $rel on $cli: the fixture's state upgrades and plans no change ($(grep -m1 -o 'No changes\..*' "$d/plan.log"))" ;;
        2) cat "$d/plan.log" >&2; log "state upgrade: $rel on $cli: the fixture's state plans changes (above)"; rc=1 ;;
        *) cat "$d/plan.log" >&2; log "state upgrade: $rel on $cli: plan failed (exit $prc)"; rc=1 ;;
      esac
    fi
  fi
  if ! tf "$cli" "$d" destroy -auto-approve -no-color >"$d/destroy.log" 2>&1; then
    cat "$d/destroy.log" >&2; log "state upgrade: $rel on $cli: destroy failed"; rc=1
  fi
  leftovers || rc=1
  return $rc
}

failed=0 t0=$(date +%s)
if [ "$mode" = generate ]; then
  explicit=$([ ${#types[@]} -gt 0 ] && echo 1 || echo 0)
  for t in $(fixture_types); do generate_one "$t" "$explicit" || failed=1; done
  exit "$failed"
fi

read -r -a clis <<<"${STATE_UPGRADE_CLIS:-terraform-1.14 tofu}"
n=0
for cli in "${clis[@]}"; do
  [ -x "$BIN/$cli" ] || { log "state upgrade: no $BIN/$cli (make tools)"; failed=1; continue; }
  log "state upgrade check on $(tf "$cli" "$work" version | head -1)"
  for t in $(fixture_types); do
    dirs=$(find "$fixtures" -mindepth 2 -maxdepth 2 -type d -name "$t" | sort -V)
    newest=$(tail -1 <<<"$dirs")
    for fx in $dirs; do
      [ -f "$fx/terraform.tfstate" ] || { log "state upgrade: ${fx#"$ROOT"/} has no terraform.tfstate (hack/state-upgrade.sh generate $t)"; failed=1; continue; }
      n=$((n + 1))
      check_one "$cli" "$fx" "$newest" || failed=1
    done
  done
done
log "state upgrade check: $n fixture runs on ${clis[*]} in $(( $(date +%s) - t0 ))s: $([ "$failed" = 0 ] && echo passed || echo FAILED)"
exit "$failed"
