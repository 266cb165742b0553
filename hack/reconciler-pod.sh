#!/usr/bin/env bash
# hack/reconciler-pod.sh start|stop|status|logs|image — the reconciler as it runs in a real cluster: a
# Pod from its own image (hack/image), installed with its Helm chart (charts/gantry-reconciler,
# release "gantry" in gantry-system: its generated RBAC, leader election, probes), on the local
# cluster's real node (hack/realnode.sh).
#
# The image is built for this machine's platform and imported into the real node's containerd
# (there is no registry); its tag is dev-<hash of the binary>, so a rebuilt reconciler rolls the
# Pod. The local cluster runs no kube-proxy and its API server listens on 127.0.0.1 only, so the
# Pod runs in the node's network namespace (hostNetwork) with KUBERNETES_SERVICE_HOST/PORT set to
# that address, one replica, metrics and health on ports 10380/10381 of the node.
#
# `start` exits 3, saying why, when there is no real node (hack/realnode.sh status); the caller
# then runs the reconciler as a process (hack/reconciler.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
release=gantry
ns=gantry-system
kc() { kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }
say() { echo "reconciler-pod: $*" >&2; }

# diagnose: what keeps the Pod from running, in the kubelet's and scheduler's words.
diagnose() {
  kc -n "$ns" get pods -l app.kubernetes.io/instance=$release -o wide >&2 || true
  kc -n "$ns" describe pods -l app.kubernetes.io/instance=$release 2>/dev/null | sed -n '/^Events:/,$p' | tail -20 >&2 || true
  kc -n "$ns" logs -l app.kubernetes.io/instance=$release --tail=30 --all-containers 2>/dev/null >&2 || true
}

# image: builds the reconciler for this machine's platform and its image archive
# ($dir/$tag.tar, kept while the binary is unchanged); sets dir, tag and repo. Needs no cluster
# (make demo runs it while the cluster starts).
image() {
  arch=$(go env GOARCH)
  dir="$CACHE/image/pod"
  mkdir -p "$dir"
  CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath -ldflags "-s -w" -o "$dir/gantry-reconciler" ./reconciler/cmd/gantry-reconciler
  tag="dev-$(sha256sum "$dir/gantry-reconciler" | cut -c1-12)"
  repo=ghcr.io/gantry-dev/gantry-reconciler
  if [ ! -f "$dir/$tag.tar" ]; then
    rm -f "$dir"/dev-*.tar
    go run ./hack/image -binary "$dir/gantry-reconciler" -platform "linux/$arch" -version "$tag" -tag "$repo:$tag" -out "$dir/$tag.tar" >/dev/null
  fi
}

case ${1:-status} in
  image)
    image ;;
  start)
    if ! st=$(bash hack/realnode.sh status); then say "no real node ($st)"; exit 3; fi
    bash tools/install.sh helm
    image
    server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
    host=${server#https://}; port=${host##*:}; host=${host%:*}
    node_class=$(bash hack/karpenter.sh node-class)
    # What the release is made of: the image, the chart's files and the values below. When the
    # release already runs exactly that and its Deployment is available, there is nothing to do
    # (a second `make demo` neither imports the image nor upgrades the release).
    fingerprint=$({ echo "$tag $server $node_class"; find charts/gantry-reconciler -type f | LC_ALL=C sort | xargs sha256sum; } | sha256sum | cut -c1-16)
    if [ "$(cat "$CACHE/reconciler-pod.fingerprint" 2>/dev/null)" = "$fingerprint" ] &&
       helm --kubeconfig "$KUBECONFIG_PATH" -n "$ns" status "$release" 2>/dev/null | grep -q '^STATUS: deployed' &&
       kc -n "$ns" rollout status deployment/$release-gantry-reconciler --timeout=5s >/dev/null 2>&1; then
      say "unchanged ($repo:$tag, chart as installed): $(kc -n "$ns" get pods -l app.kubernetes.io/instance=$release -o jsonpath='{range .items[*]}{.metadata.name} on {.spec.nodeName} ({.status.phase}){"\n"}{end}')"
      exit 0
    fi
    rm -f "$CACHE/reconciler-pod.fingerprint"
    bash hack/realnode.sh import "$dir/$tag.tar"
    # Not two reconcilers: the host process (hack/reconciler.sh) goes.
    bash hack/reconciler.sh stop >/dev/null 2>&1 || true
    say "helm upgrade --install $release charts/gantry-reconciler ($repo:$tag on the real node)"
    if ! helm --kubeconfig "$KUBECONFIG_PATH" upgrade --install "$release" charts/gantry-reconciler -n "$ns" --create-namespace \
        --set image.repository="$repo" --set image.tag="$tag" --set image.pullPolicy=Never \
        --set nodeProvisioning.nodeClass="$node_class" \
        --set replicaCount=1 --set hostNetwork=true --set metrics.port=10380 --set healthPort=10381 \
        --set-json "extraEnv=[{\"name\":\"KUBERNETES_SERVICE_HOST\",\"value\":\"$host\"},{\"name\":\"KUBERNETES_SERVICE_PORT\",\"value\":\"$port\"}]" \
        --set-json 'nodeSelector={"gantry.dev/node-pool":"real"}' \
        --set-json 'tolerations=[{"key":"gantry.dev/real-node","operator":"Exists","effect":"NoSchedule"}]' \
        --wait --timeout 3m >"$CACHE/reconciler-pod-helm.log" 2>&1; then
      cat "$CACHE/reconciler-pod-helm.log" >&2; diagnose; say "the reconciler Pod did not become ready"; exit 1
    fi
    kc -n "$ns" rollout status deployment/$release-gantry-reconciler --timeout=2m >/dev/null || { diagnose; exit 1; }
    # Ready once its controllers run (it leads): its log says "Starting workers".
    for _ in $(seq 120); do
      kc -n "$ns" logs deployment/$release-gantry-reconciler 2>/dev/null | grep -q 'Starting workers' && break
      sleep 0.5
    done
    echo "$fingerprint" >"$CACHE/reconciler-pod.fingerprint"
    say "running: $(kc -n "$ns" get pods -l app.kubernetes.io/instance=$release -o jsonpath='{range .items[*]}{.metadata.name} on {.spec.nodeName} ({.status.phase}){"\n"}{end}')"
    ;;
  stop)
    if [ -f "$KUBECONFIG_PATH" ] && command -v helm >/dev/null && helm --kubeconfig "$KUBECONFIG_PATH" -n "$ns" status "$release" >/dev/null 2>&1; then
      helm --kubeconfig "$KUBECONFIG_PATH" -n "$ns" uninstall "$release" --wait --timeout 2m >/dev/null
      say "uninstalled"
    fi ;;
  status)
    kc -n "$ns" get pods -l app.kubernetes.io/instance=$release -o wide ;;
  logs)
    kc -n "$ns" logs deployment/$release-gantry-reconciler --tail="${2:-100}" ;;
  *) echo "usage: $0 start|stop|status|logs [N]|image" >&2; exit 2 ;;
esac
