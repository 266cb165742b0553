#!/usr/bin/env bash
# hack/runner-rbac.sh — sets up the least-privilege Terraform runner of config/terraform-runner on
# the local cluster and prints the path of a kubeconfig that holds only its token:
# ServiceAccount terraform-runner/gantry-runner, the ClusterRoles applied, the package-set,
# inventory and rollout-preview ClusterRoles bound cluster-wide. The namespaced ClusterRole is bound per namespace by the
# acceptance tests (provider testNamespace, GANTRY_TEST_RUNNER_SA), as a platform team binds it
# in each namespace its configuration manages.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
kc() { kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }
kc apply -f "$ROOT/config/terraform-runner/rbac.yaml" >/dev/null
out=$(sa_kubeconfig terraform-runner gantry-runner "$CACHE/runner.kubeconfig")
kc create clusterrolebinding gantry-terraform-runner-packagesets --clusterrole=gantry-terraform-runner-packagesets \
  --serviceaccount=terraform-runner:gantry-runner --dry-run=client -o yaml | kc apply -f - >/dev/null
kc create clusterrolebinding gantry-terraform-runner-inventory --clusterrole=gantry-terraform-runner-inventory \
  --serviceaccount=terraform-runner:gantry-runner --dry-run=client -o yaml | kc apply -f - >/dev/null
kc create clusterrolebinding gantry-terraform-runner-rollout-preview --clusterrole=gantry-terraform-runner-rollout-preview \
  --serviceaccount=terraform-runner:gantry-runner --dry-run=client -o yaml | kc apply -f - >/dev/null
echo "$out"
