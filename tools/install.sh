#!/usr/bin/env bash
# tools/install.sh — build the pinned tools from Go modules and link them into bin/.
#
# Each tool is built once per name and version into a cache outside the clone
# ($GANTRY_TOOLS_CACHE, default: $XDG_CACHE_HOME/gantry/tools or ~/.cache/gantry/tools),
# so every clone on the same machine reuses it. bin/<tool> is a symlink into that cache.
# Versions are pinned here and in tools/*/go.mod; nothing is downloaded but Go modules.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cache=${GANTRY_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gantry/tools}
bin="$root/bin"
mkdir -p "$cache" "$bin"

TERRAFORM_VERSION=v1.8.5
# Newer CLIs the acceptance suite also runs on, built from the pinned main modules
# tools/terraform (stand-ins for the nested backend modules the proxy's zip leaves out) and
# tools/tofu (see clibuild below).
# modversion MODDIR MODULE: the version tools/MODDIR/go.mod requires of MODULE.
modversion() { awk -v m="$2" '$1=="require" && $2==m {print $3; exit} $1==m {print $2; exit}' "$root/tools/$1/go.mod"; }
TERRAFORM_NEW_VERSION=$(modversion terraform github.com/hashicorp/terraform)
TOFU_VERSION=$(modversion tofu github.com/opentofu/opentofu)
KWOK_VERSION=v0.7.0
CONTROLLER_GEN_VERSION=v0.18.0
TFPLUGINDOCS_VERSION=v0.25.0
GOLANGCI_LINT_VERSION=v2.15.0
# GoReleaser for make release: v2.13.0 is the newest that builds here (later releases need Go
# newer than 1.26.8, or a module the proxy refuses: go.digitalxero.dev/go-msix).
GORELEASER_VERSION=v2.13.0
# Helm for the reconciler's chart (charts/gantry-reconciler): lint, template, server dry run.
HELM_VERSION=v3.22.0
# The real node's test images' busybox (hack/images): Debian's static busybox 1.37 (trixie),
# fetched as its pinned .deb from Debian's archive and checked against this SHA-256. Debian 12's
# own 1.35 segfaults on `wget -T` (the timeout Gantry's httpGet health checks pass).
BUSYBOX_VERSION=1.37.0-6+b9
BUSYBOX_DEB=https://deb.debian.org/debian/pool/main/b/busybox/busybox-static_${BUSYBOX_VERSION}_amd64.deb
BUSYBOX_SHA256=598a3fd92bdafc34cd81196b2952ad36e910e47a4ecf162f8ce5e8e262598e53
# Karpenter's kwok cloud provider (hack/karpenter.sh): turns the NodeClaims workspaces create
# (spec.resource.provisionNodes) into kwok nodes. v1.13.0 is the newest whose module builds with
# the Go here (v1.14+ need Go >= 1.26.9). Its CRDs are copied from the module next to the binary.
KARPENTER_VERSION=v1.13.0
KUBE_VERSION=$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3}' "$root/tools/kube/go.mod")
ETCD_VERSION=$(awk '$1=="require" && $2=="go.etcd.io/etcd/server/v3" {print $3}' "$root/tools/etcd/go.mod")

export CGO_ENABLED=0
ldflags="-s -w"

# with_lock DIR CMD...: run CMD while holding DIR.lock, so two clones building the
# same tool at once do not race; the second finds the first one's result.
with_lock() {
  local dir=$1; shift
  exec 9>"$dir.lock"
  flock 9
  "$@"
  exec 9>&-
}

# goinstall NAME VERSION PKG: go install PKG@VERSION into $cache/NAME-VERSION.
goinstall() {
  local name=$1 version=$2 pkg=$3 dir="$cache/$1-$2"
  build() {
    [ -x "$dir/$name" ] && return 0
    echo "tools: building $name $version (first run only)" >&2
    local t=$(date +%s)
    GOBIN="$dir.tmp" go install -trimpath -ldflags="$ldflags" "$pkg@$version"
    local base=${pkg##*/}
    case $base in v[0-9]*) base=${pkg%/*}; base=${base##*/} ;; esac # module path's major version suffix
    mkdir -p "$dir" && mv "$dir.tmp/$base" "$dir/$name" && rm -rf "$dir.tmp"
    echo "tools: $name built in $(( $(date +%s) - t ))s" >&2
  }
  with_lock "$dir" build
  ln -sfn "$dir/$name" "$bin/$name"
}

# binname PKG: the file name `go build` gives PKG's binary (a major-version suffix such as
# /v3 is skipped: go.etcd.io/etcd/server/v3 builds "server").
binname() {
  local b; b=$(basename "$1")
  [[ $b =~ ^v[0-9]+$ ]] && b=$(basename "$(dirname "$1")")
  echo "$b"
}

# modbuild NAME VERSION MODDIR LDFLAGS PKG...: go build the main packages PKG... from the
# pinned module tools/MODDIR with extra LDFLAGS into $cache/NAME-VERSION (one build: the
# packages share the compile cache).
modbuild() {
  local name=$1 version=$2 moddir=$3 extra=$4; shift 4
  local dir="$cache/$name-$version"
  local pkgs=("$@")
  build() {
    local missing=0 p
    for p in "${pkgs[@]}"; do [ -x "$dir/$(binname "$p")" ] || missing=1; done
    [ $missing = 0 ] && return 0
    echo "tools: building ${pkgs[*]} $version (first run only, several minutes)" >&2
    local t=$(date +%s)
    mkdir -p "$dir.tmp"
    (cd "$root/tools/$moddir" && go build -trimpath -ldflags="$ldflags $extra" -o "$dir.tmp/" "${pkgs[@]}")
    mkdir -p "$dir" && mv "$dir.tmp"/* "$dir/" && rm -rf "$dir.tmp"
    echo "tools: $name built in $(( $(date +%s) - t ))s" >&2
  }
  with_lock "$dir" build
  for p in "${pkgs[@]}"; do ln -sfn "$dir/$(binname "$p")" "$bin/$(binname "$p")"; done
}

# clibuild NAME VERSION MODDIR PKG LDFLAGS LINK: go build the CLI PKG from the pinned main module
# tools/MODDIR into $cache/NAME-VERSION/NAME and link it as bin/LINK.
clibuild() {
  local name=$1 version=$2 moddir=$3 pkg=$4 extra=$5 link=$6 dir="$cache/$1-$2"
  build() {
    [ -x "$dir/$name" ] && return 0
    echo "tools: building $name $version (first run only, several minutes)" >&2
    local t=$(date +%s)
    mkdir -p "$dir.tmp"
    (cd "$root/tools/$moddir" && go build -trimpath -ldflags="$ldflags $extra" -o "$dir.tmp/$name" "$pkg")
    mkdir -p "$dir" && mv "$dir.tmp/$name" "$dir/$name" && rm -rf "$dir.tmp"
    echo "tools: $name built in $(( $(date +%s) - t ))s" >&2
  }
  with_lock "$dir" build
  ln -sfn "$dir/$name" "$bin/$link"
}

# cold_estimate TOOL: seconds a cold build of TOOL took on a 2-core machine of this project's
# kind (empty Go module and build caches, another build beside it; measured 2026-11-29, make
# demo's four then make test's eight on a fresh machine).
cold_estimate() {
  case $1 in
    terraform) echo 360 ;; terraform-new) echo 645 ;; tofu) echo 670 ;; kwok) echo 610 ;;
    kube) echo 740 ;; etcd) echo 350 ;; controller-gen) echo 40 ;; tfplugindocs) echo 35 ;;
    golangci-lint) echo 200 ;; goreleaser) echo 370 ;; helm) echo 245 ;; karpenter) echo 380 ;; *) echo 0 ;;
  esac
}

# cached TOOL: TOOL's binaries are already in the cache (nothing to build).
cached() {
  local d
  case $1 in
    terraform) [ -x "$cache/terraform-$TERRAFORM_VERSION/terraform" ] ;;
    terraform-new) [ -x "$cache/terraform-$TERRAFORM_NEW_VERSION/terraform" ] ;;
    tofu) [ -x "$cache/tofu-$TOFU_VERSION/tofu" ] ;;
    kwok) [ -x "$cache/kwok-$KWOK_VERSION/kwok" ] && [ -x "$cache/kwokctl-$KWOK_VERSION/kwokctl" ] ;;
    kube) d="$cache/kube-$KUBE_VERSION-1"
          [ -x "$d/kube-apiserver" ] && [ -x "$d/kube-controller-manager" ] && [ -x "$d/kube-scheduler" ] && [ -x "$d/kubectl" ] && [ -x "$d/kubelet" ] ;;
    etcd) [ -x "$cache/etcd-$ETCD_VERSION/server" ] ;;
    controller-gen) [ -x "$cache/controller-gen-$CONTROLLER_GEN_VERSION/controller-gen" ] ;;
    tfplugindocs) [ -x "$cache/tfplugindocs-$TFPLUGINDOCS_VERSION/tfplugindocs" ] ;;
    golangci-lint) [ -x "$cache/golangci-lint-$GOLANGCI_LINT_VERSION/golangci-lint" ] ;;
    goreleaser) [ -x "$cache/goreleaser-$GORELEASER_VERSION/goreleaser" ] ;;
    helm) [ -x "$cache/helm-$HELM_VERSION/helm" ] ;;
    busybox) [ -x "$cache/busybox-$BUSYBOX_VERSION/busybox" ] ;;
    karpenter) [ -x "$cache/karpenter-$KARPENTER_VERSION/karpenter" ] && [ -d "$cache/karpenter-$KARPENTER_VERSION/crds" ] ;;
    *) return 1 ;;
  esac
}

# kube_vflags: the version stamp of the Kubernetes release build, so `kubectl version`, the API
# server's /version and the kubelet report v1.33.x rather than v0.0.0-master.
kube_vflags() {
  local minor vflags="" p
  minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    vflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "$vflags"
}

# busybox_fetch: the pinned busybox-static .deb, checked, unpacked into the cache.
busybox_fetch() {
  local d="$cache/busybox-$BUSYBOX_VERSION" tmp
  [ -x "$d/busybox" ] && return 0
  [ "$(uname -m)" = x86_64 ] || { echo "tools: busybox: only amd64 is pinned (this is $(uname -m))" >&2; return 1; }
  tmp=$(mktemp -d)
  curl -fsSL --retry 3 -o "$tmp/busybox.deb" "$BUSYBOX_DEB" || { echo "tools: could not download $BUSYBOX_DEB" >&2; rm -rf "$tmp"; return 1; }
  echo "$BUSYBOX_SHA256  $tmp/busybox.deb" | sha256sum -c --quiet - >&2 || { echo "tools: $BUSYBOX_DEB does not match its pinned SHA-256" >&2; rm -rf "$tmp"; return 1; }
  dpkg-deb -x "$tmp/busybox.deb" "$tmp/x" && mkdir -p "$d" && install -m 0755 "$tmp/x/usr/bin/busybox" "$d/busybox.new" && mv "$d/busybox.new" "$d/busybox"
  local rc=$?; rm -rf "$tmp"; return $rc
}

# karpenter_crds: Karpenter's CRDs (karpenter.sh NodeClaim, NodePool, NodeOverlay; the kwok
# provider's KWOKNodeClass) from the pinned module into the cache, beside the binary.
karpenter_crds() {
  local d="$cache/karpenter-$KARPENTER_VERSION/crds" mod
  [ -d "$d" ] && return 0
  mod=$(cd /tmp && go mod download -json "sigs.k8s.io/karpenter@$KARPENTER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$mod" ] || { echo "tools: karpenter: module sigs.k8s.io/karpenter@$KARPENTER_VERSION not found" >&2; return 1; }
  mkdir -p "$d.tmp" && cp "$mod"/pkg/apis/crds/*.yaml "$mod"/kwok/apis/crds/*.yaml "$d.tmp/" && chmod 0644 "$d.tmp"/* && mv "$d.tmp" "$d"
}

# one TOOL: build (or reuse) TOOL and link it into bin/.
one() {
  case $1 in
    terraform) goinstall terraform "$TERRAFORM_VERSION" github.com/hashicorp/terraform ;;
    terraform-new) clibuild terraform "$TERRAFORM_NEW_VERSION" terraform github.com/hashicorp/terraform \
                     "-X github.com/hashicorp/terraform/version.dev=no" "terraform-$(echo "$TERRAFORM_NEW_VERSION" | sed -E 's/^v([0-9]+[.][0-9]+).*/\1/')" ;;
    tofu) clibuild tofu "$TOFU_VERSION" tofu github.com/opentofu/opentofu/cmd/tofu \
            "-X github.com/opentofu/opentofu/version.dev=no" tofu ;;
    kwok)
      goinstall kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
      goinstall kwokctl "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwokctl ;;
    kube)
      # The "-1" in the cache key marks binaries built with kube_vflags. The real node's kubelet
      # (hack/realnode.sh) is built in the same go build: it shares most packages.
      modbuild kube "$KUBE_VERSION-1" kube "$(kube_vflags)" k8s.io/kubernetes/cmd/kube-apiserver \
            k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
            k8s.io/kubernetes/cmd/kubectl k8s.io/kubernetes/cmd/kubelet ;;
    etcd)
      modbuild etcd "$ETCD_VERSION" etcd "" go.etcd.io/etcd/server/v3
      ln -sfn "$cache/etcd-$ETCD_VERSION/server" "$bin/etcd"; rm -f "$bin/server" ;;
    controller-gen) goinstall controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    tfplugindocs) goinstall tfplugindocs "$TFPLUGINDOCS_VERSION" github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs ;;
    golangci-lint) goinstall golangci-lint "$GOLANGCI_LINT_VERSION" github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
    goreleaser) goinstall goreleaser "$GORELEASER_VERSION" github.com/goreleaser/goreleaser/v2 ;;
    helm) goinstall helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm ;;
    karpenter)
      goinstall karpenter "$KARPENTER_VERSION" sigs.k8s.io/karpenter/kwok
      with_lock "$cache/karpenter-$KARPENTER_VERSION/crds" karpenter_crds
      ln -sfn "$cache/karpenter-$KARPENTER_VERSION/crds" "$bin/karpenter-crds" ;;
    busybox) with_lock "$cache/busybox-$BUSYBOX_VERSION" busybox_fetch; ln -sfn "$cache/busybox-$BUSYBOX_VERSION/busybox" "$bin/busybox" ;;
    debs) # Debian packages the release path uses (signing, zip checks), installed when missing
      local missing
      missing=$(for c in gpg:gnupg zip:zip unzip:unzip; do command -v "${c%%:*}" >/dev/null || echo "${c#*:}"; done)
      if [ -n "$missing" ]; then
        echo "tools: apt-get install $missing" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >/dev/null ||
          { echo "tools: could not install $missing (apt-get as root)" >&2; exit 1; }
      fi ;;
    *) echo "tools: unknown tool $1" >&2; exit 2 ;;
  esac
}

# fmt_secs N: "4m05s".
fmt_secs() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# Tool sets. `demo` is what make demo runs (one Terraform CLI, the control plane and the real
# node's kubelet, etcd, kwok and the release path), never a test or lint tool; `all` is what make test
# needs. Each list starts with its longest build.
ALL_TOOLS=(kube terraform terraform-new tofu kwok etcd karpenter controller-gen tfplugindocs golangci-lint goreleaser helm busybox debs)
DEMO_TOOLS=(debs kube etcd kwok goreleaser terraform)

if [ "${1:-}" = --one ]; then one "$2"; exit; fi

want=()
for w in "${@:-all}"; do
  case $w in
    all) want+=("${ALL_TOOLS[@]}") ;;
    demo) want+=("${DEMO_TOOLS[@]}") ;;
    *) want+=("$w") ;;
  esac
done

# Cached tools are only linked; the rest are built, GANTRY_TOOLS_JOBS at a time (default 2: on a
# cold machine one build downloads modules while the other compiles), with a progress line
# every 30 s naming what is building, how many are left and the time so far.
todo=() total_est=0
for w in "${want[@]}"; do
  if [ "$w" = debs ] || [ "$w" = busybox ] || cached "$w"; then one "$w"; else todo+=("$w"); total_est=$((total_est + $(cold_estimate "$w"))); fi
done
[ ${#todo[@]} = 0 ] && exit 0

jobs=${GANTRY_TOOLS_JOBS:-2}
[ "$jobs" -ge 1 ] 2>/dev/null || jobs=1
n=${#todo[@]}
# The builds share the cores: about the longest one or the total over the cores, whichever is more.
longest=0
for w in "${todo[@]}"; do [ "$(cold_estimate "$w")" -gt "$longest" ] && longest=$(cold_estimate "$w"); done
est=$((total_est / $(nproc 2>/dev/null || echo 1)))
[ "$est" -ge "$longest" ] || est=$longest
echo "tools: $n to build (${todo[*]}) into $cache, $jobs at a time; from nothing cached this takes about $(( (est + 59) / 60 )) min on a 2-core machine (once: cached afterwards)" >&2
progress=$(mktemp -d)
started=$SECONDS
(
  set +e
  while sleep 30; do
    building=() left=0 done_n=0
    for w in "${todo[@]}"; do
      if [ -f "$progress/$w.done" ]; then done_n=$((done_n + 1))
      elif [ -f "$progress/$w.start" ]; then building+=("$w ($(fmt_secs $(( $(date +%s) - $(cat "$progress/$w.start") ))))")
      else left=$((left + 1)); fi
    done
    echo "tools: $(fmt_secs $((SECONDS - started))) elapsed; $done_n/$n done; building ${building[*]:-nothing}; $left waiting" >&2
  done
) &
ticker=$!
trap 'kill $ticker 2>/dev/null; rm -rf "$progress"' EXIT

# wait_one: wait for one build to end (not the ticker); a failed build sets failed=1.
wait_one() {
  local pid rc
  wait -n -p pid; rc=$?
  [ "$pid" = "$ticker" ] || [ "$rc" = 0 ] || failed=1
}
running() { jobs -rp | grep -vc "^$ticker\$" || true; }

# The first (longest) build runs at normal priority, the others niced: the longest one is the
# critical path, the others fill the cores it leaves idle (downloads, links).
i=0 failed=0
for w in "${todo[@]}"; do
  while [ "$(running)" -ge "$jobs" ]; do wait_one; done
  i=$((i + 1))
  echo "tools: [$i/$n] building $w (about $(fmt_secs "$(cold_estimate "$w")") cold)" >&2
  prio=0; [ "$i" = 1 ] || prio=10
  (
    date +%s >"$progress/$w.start"
    t=$SECONDS
    if nice -n "$prio" bash "$0" --one "$w"; then
      touch "$progress/$w.done"
      echo "tools: [done] $w in $(fmt_secs $((SECONDS - t)))" >&2
    else
      echo "tools: building $w FAILED" >&2; exit 1
    fi
  ) &
done
while [ "$(running)" -gt 0 ]; do wait_one; done
[ "$failed" = 0 ] || { echo "tools: some tools failed to build (see above)" >&2; exit 1; }
echo "tools: built ${todo[*]} in $(fmt_secs $((SECONDS - started)))" >&2
