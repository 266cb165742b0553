#!/usr/bin/env bash
# hack/module-test.sh — `terraform test` of the GPU-stack module (examples/modules/gpu-stack).
#
#   hack/module-test.sh mock [CLI...]    the mocked-provider tests (tests/*.tftest.hcl, and for
#                                        OpenTofu tests/*.tofutest.hcl): plan only, no cluster;
#                                        every KUBE_*, GANTRY_* and KUBECONFIG variable is removed
#                                        from the CLI's environment. CLIs: terraform-1.14 tofu.
#   hack/module-test.sh apply [CLI...]   the apply test (tests/cluster/apply.tftest.hcl) against
#                                        the local cluster (KUBE_CONFIG_PATH=.cache/cluster/
#                                        kubeconfig), which must be up with the reconciler running
#                                        (make reconciler): it creates a namespace with the
#                                        operator key Secret (kubectl) and the stack, asserts that
#                                        every resource reached its success summary, and destroys
#                                        all of it. CLI: terraform-1.14.
#
# CLI: a CLI in bin/ (terraform-1.14, tofu, terraform; make tools). The provider is
# bin/terraform-provider-gantry (built by make build when missing), served to the CLIs from a
# filesystem mirror of this script's own (.cache/module-test/plugins, under registry.terraform.io
# and registry.opentofu.org). Each CLI runs init and test in its own copy of the module
# (.cache/module-test/<mode>-<cli>/gpu-stack): the module directory gets no .terraform or lock
# file, and Terraform and OpenTofu do not share one. Prints each CLI's test output; exits 1 when
# a test failed (after running every CLI).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

mode=${1:-}
case $mode in
  mock) default_clis=(terraform-1.14 tofu) ;;
  apply) default_clis=(terraform-1.14) ;;
  *) echo "usage: $0 mock|apply [CLI...]" >&2; exit 2 ;;
esac
shift
clis=("$@")
[ ${#clis[@]} -gt 0 ] || clis=("${default_clis[@]}")
module="$ROOT/examples/modules/gpu-stack"
work="$CACHE/module-test"
version=0.1.0

# The OpenTofu copy of a test file must be its Terraform copy without the override_during lines
# (see tests/outputs.tftest.hcl; whitespace aside: fmt aligns the lines around them): a change
# made to one copy only fails here.
override_line='^[[:space:]]*override_during[[:space:]]*='
for tofu_file in "$module"/tests/*.tofutest.hcl; do
  [ -e "$tofu_file" ] || continue
  tf_file=${tofu_file%.tofutest.hcl}.tftest.hcl
  if [ -f "$tf_file" ] && ! diff -u -b <(grep -Ev "$override_line" "$tf_file") <(grep -Ev "$override_line" "$tofu_file") >&2; then
    log "module tests: ${tofu_file#"$ROOT"/} is not ${tf_file#"$ROOT"/} without its override_during lines (diff above)"
    exit 1
  fi
done

[ -x "$BIN/terraform-provider-gantry" ] || make --no-print-directory build
platform="$(go env GOOS)_$(go env GOARCH)"
rm -rf "$work/plugins"
for host in registry.terraform.io registry.opentofu.org; do
  dir="$work/plugins/$host/gantry-dev/gantry/$version/$platform"
  mkdir -p "$dir"
  cp "$BIN/terraform-provider-gantry" "$dir/terraform-provider-gantry_v$version"
done
cat >"$work/terraformrc" <<RC
provider_installation {
  filesystem_mirror {
    path    = "$work/plugins"
    include = ["registry.terraform.io/gantry-dev/gantry", "registry.opentofu.org/gantry-dev/gantry"]
  }
  direct {
    exclude = ["registry.terraform.io/gantry-dev/gantry", "registry.opentofu.org/gantry-dev/gantry"]
  }
}
RC

# The CLI's environment: no connection settings from this shell (mock: none at all; apply: the
# local cluster's kubeconfig only), this script's CLI configuration, no state or data directory
# from elsewhere.
unset_env=(-u TF_DATA_DIR -u TF_WORKSPACE -u TF_CLI_ARGS -u TF_CLI_ARGS_init -u TF_CLI_ARGS_test)
for v in $(compgen -e); do
  case $v in KUBE_*|GANTRY_*|KUBECONFIG) unset_env+=(-u "$v") ;; esac
done
set_env=(TF_CLI_CONFIG_FILE="$work/terraformrc" TF_IN_AUTOMATION=1 CHECKPOINT_DISABLE=1)
dir_args=() # the test directory: tests (the default) or tests/cluster
if [ "$mode" = apply ]; then
  [ -f "$KUBECONFIG_PATH" ] || { log "module tests: no local cluster ($KUBECONFIG_PATH): start it and the reconciler with 'make reconciler'"; exit 1; }
  set_env+=(KUBE_CONFIG_PATH="$KUBECONFIG_PATH")
  dir_args=(-test-directory=tests/cluster)
fi

failed=0
for cli in "${clis[@]}"; do
  tf="$BIN/$cli"
  [ -x "$tf" ] || { log "module tests: no $tf (make tools)"; failed=1; continue; }
  logs="$work/$mode-$cli" d="$work/$mode-$cli/gpu-stack"
  rm -rf "$logs" && mkdir -p "$d"
  cp -R "$module"/. "$d"/
  rm -rf "$d/.terraform" "$d/.terraform.lock.hcl" "$d"/terraform.tfstate*
  run() { (cd "$d" && env "${unset_env[@]}" "${set_env[@]}" "$tf" "$@"); }
  log "module tests ($mode) on $(run version | head -1): examples/modules/gpu-stack"
  t=$(date +%s)
  if ! run init -input=false -no-color "${dir_args[@]}" >"$logs/init.log" 2>&1; then
    cat "$logs/init.log" >&2
    log "module tests ($mode): $cli init failed (log: ${logs#"$ROOT"/}/init.log)"
    failed=1; continue
  fi
  set +e
  run test -no-color "${dir_args[@]}" 2>&1 | tee "$logs/test.log"
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" = 0 ]; then
    log "module tests ($mode) on $cli passed in $(( $(date +%s) - t ))s"
  else
    log "module tests ($mode) on $cli FAILED (exit $rc; log: ${logs#"$ROOT"/}/test.log)"
    failed=1
  fi
done
exit "$failed"
