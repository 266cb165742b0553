#!/usr/bin/env bash
# hack/release-test.sh — the release path end to end (part of make test): hack/release.sh
# builds and signs the release (this machine's platform only, to stay quick; make release
# builds all six) and checks checksums and signature; hack/mirror.sh serves it as a provider
# network mirror on loopback; `terraform init` (Terraform 1.14.9) and `tofu init` (OpenTofu
# 1.12.6) install Gantry from it, the lock file must carry the h1: hash of the released zip
# (computed here, independently of the CLI), `validate` runs the installed binary, a second init
# verifies against the kept lock file, a lock file with a wrong hash is refused, and a mirror
# serving a zip that is not the released one (its hashes no longer match) is refused.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
fail() { log "release test: $*"; exit 1; }
version=0.1.0
name=terraform-provider-gantry
platform="$(go env GOOS)_$(go env GOARCH)"

out=$(RELEASE_HOST_ONLY=1 bash hack/release.sh "$version")
rc=$(bash hack/mirror.sh start "$out")
trap 'bash hack/mirror.sh stop' EXIT
sha=$(awk -v f="${name}_${version}_${platform}.zip" '$2==f {print $1}' "$out/${name}_${version}_SHA256SUMS")
[ -n "$sha" ] || fail "no $platform zip in SHA256SUMS"
h1=$("$CACHE/mirror/mirror" -print-h1 "$out/${name}_${version}_${platform}.zip")

work="$CACHE/release-test"
for cli in terraform-1.14 tofu; do
  d="$work/$cli"
  rm -rf "$d" && mkdir -p "$d"
  cat >"$d/main.tf" <<TF
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry", version = "= $version" }
  }
}
provider "gantry" {}
TF
  run() { env -u TF_CLI_CONFIG_FILE TF_CLI_CONFIG_FILE="$rc" SSL_CERT_FILE="$CACHE/mirror/ca.pem" CHECKPOINT_DISABLE=1 \
            "$BIN/$cli" -chdir="$d" "$@" -no-color; }
  log "$cli init from the loopback network mirror"
  run init -input=false >"$d/init.log" 2>&1 || { cat "$d/init.log" >&2; fail "$cli init failed"; }
  grep -q "\"$h1\"" "$d/.terraform.lock.hcl" || { cat "$d/.terraform.lock.hcl" >&2; fail "$cli: the lock file lacks the released zip's $h1"; }
  run validate >"$d/validate.log" 2>&1 || { cat "$d/validate.log" >&2; fail "$cli validate failed (installed provider)"; }
  rm -rf "$d/.terraform"
  run init -input=false >"$d/init2.log" 2>&1 || { cat "$d/init2.log" >&2; fail "$cli init against the kept lock file failed"; }
  sed -i "s/zh:[0-9a-f]*/zh:$(printf '0%.0s' {1..64})/; s/\"h1:[^\"]*\"/\"h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"/" "$d/.terraform.lock.hcl"
  rm -rf "$d/.terraform"
  if run init -input=false >"$d/init3.log" 2>&1; then fail "$cli installed a provider whose hashes do not match the lock file"; fi
  grep -qi "checksum\|hash" "$d/init3.log" || { cat "$d/init3.log" >&2; fail "$cli refused the tampered lock file for another reason"; }
  log "$cli: installed ${name} $version ($platform) from the mirror, ${h1:0:15}… in the lock file; a wrong hash is refused"
done

# A mirror whose zip was replaced after it published the release's hashes is refused.
bad="$work/tampered"
rm -rf "$bad" && cp -r "$out" "$bad"
rc=$(bash hack/mirror.sh start "$bad")
(cd "$work" && echo tampered >EXTRA && zip -q "$bad/${name}_${version}_${platform}.zip" EXTRA && rm EXTRA)
for cli in terraform-1.14 tofu; do
  d="$work/$cli-tampered"
  rm -rf "$d" && mkdir -p "$d" && cp "$work/$cli/main.tf" "$d/"
  if run init -input=false >"$d/init.log" 2>&1; then fail "$cli installed a zip whose checksum does not match the mirror's"; fi
  grep -qi "checksum\|hash\|does not match" "$d/init.log" || { cat "$d/init.log" >&2; fail "$cli refused the tampered zip for another reason"; }
  log "$cli: a zip that is not the released one is refused ($(grep -oi 'checksum[^.]*\|does not match[^.]*' "$d/init.log" | head -1))"
done
