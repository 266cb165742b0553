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
# tools/tofu; see ../shared/reference/terraform-cli-builds.md.
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

want=${*:-all}
for w in $want; do
  case $w in
    all) set -- terraform terraform-new tofu kwok kube etcd controller-gen tfplugindocs golangci-lint goreleaser helm debs; "$0" "$@"; exit ;;
    terraform) goinstall terraform "$TERRAFORM_VERSION" github.com/hashicorp/terraform ;;
    terraform-new) clibuild terraform "$TERRAFORM_NEW_VERSION" terraform github.com/hashicorp/terraform \
                     "-X github.com/hashicorp/terraform/version.dev=no" "terraform-$(echo "$TERRAFORM_NEW_VERSION" | sed -E 's/^v([0-9]+[.][0-9]+).*/\1/')" ;;
    tofu) clibuild tofu "$TOFU_VERSION" tofu github.com/opentofu/opentofu/cmd/tofu \
            "-X github.com/opentofu/opentofu/version.dev=no" tofu ;;
    kwok)
      goinstall kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
      goinstall kwokctl "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwokctl ;;
    kube)
      # Stamp the version the way the Kubernetes release build does, so `kubectl version` and
      # the API server's /version report v1.33.x rather than v0.0.0-master. The "-1" in the
      # cache key marks binaries built with these flags.
      minor=$(echo "$KUBE_VERSION" | cut -d. -f2)
      vflags=""
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        vflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
      done
      modbuild kube "$KUBE_VERSION-1" kube "$vflags" k8s.io/kubernetes/cmd/kube-apiserver \
            k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler \
            k8s.io/kubernetes/cmd/kubectl ;;
    etcd)
      modbuild etcd "$ETCD_VERSION" etcd "" go.etcd.io/etcd/server/v3
      ln -sfn "$cache/etcd-$ETCD_VERSION/server" "$bin/etcd"; rm -f "$bin/server" ;;
    controller-gen) goinstall controller-gen "$CONTROLLER_GEN_VERSION" sigs.k8s.io/controller-tools/cmd/controller-gen ;;
    tfplugindocs) goinstall tfplugindocs "$TFPLUGINDOCS_VERSION" github.com/hashicorp/terraform-plugin-docs/cmd/tfplugindocs ;;
    golangci-lint) goinstall golangci-lint "$GOLANGCI_LINT_VERSION" github.com/golangci/golangci-lint/v2/cmd/golangci-lint ;;
    goreleaser) goinstall goreleaser "$GORELEASER_VERSION" github.com/goreleaser/goreleaser/v2 ;;
    helm) goinstall helm "$HELM_VERSION" helm.sh/helm/v3/cmd/helm ;;
    debs) # Debian packages the release path uses (signing, zip checks), installed when missing
      missing=$(for c in gpg:gnupg zip:zip unzip:unzip; do command -v "${c%%:*}" >/dev/null || echo "${c#*:}"; done)
      if [ -n "$missing" ]; then
        echo "tools: apt-get install $missing" >&2
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >/dev/null ||
          { echo "tools: could not install $missing (apt-get as root)" >&2; exit 1; }
      fi ;;
    *) echo "tools: unknown tool $w" >&2; exit 2 ;;
  esac
done
