#!/usr/bin/env bash
# hack/release.sh — the provider's release artifacts, as the Terraform Registry expects them,
# built by GoReleaser (.goreleaser.yml) into .cache/release/<version>/:
#
#   terraform-provider-gantry_<version>_<os>_<arch>.zip   (linux, darwin, windows × amd64, arm64)
#   terraform-provider-gantry_<version>_SHA256SUMS
#   terraform-provider-gantry_<version>_SHA256SUMS.sig    (detached GPG signature)
#   terraform-provider-gantry_<version>_manifest.json     (terraform-registry-manifest.json)
#
# and checks them: every zip's checksum, the signature, each zip holding
# terraform-provider-gantry_v<version>. The signing key is a test key generated here on first
# use (.cache/release/gnupg, no passphrase, never committed); a real release signs with the
# key registered in the Terraform Registry (GNUPGHOME and GPG_FINGERPRINT from the
# environment win).
#
#   hack/release.sh [VERSION]            all six platforms (make release)
#   RELEASE_HOST_ONLY=1 hack/release.sh  only this machine's platform (make test: faster)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
die() { log "release: $*"; exit 1; }

version=${1:-${VERSION:-0.1.0}}
out="$CACHE/release/$version"
name=terraform-provider-gantry
bash tools/install.sh goreleaser debs >/dev/null

export GNUPGHOME=${GNUPGHOME:-$CACHE/release/gnupg}
# Signing starts a gpg-agent for this GNUPGHOME; stop it when the release is done, so nothing
# of the release outlives it (make down's leftovers check does not look for it).
trap 'gpgconf --kill gpg-agent >/dev/null 2>&1 || true' EXIT
if [ -z "${GPG_FINGERPRINT:-}" ]; then
  mkdir -p "$GNUPGHOME" && chmod 700 "$GNUPGHOME"
  if ! gpg --batch --list-secret-keys release@gantry.invalid >/dev/null 2>&1; then
    log "generating the test release signing key (GNUPGHOME=$GNUPGHOME)"
    gpg --batch --quiet --passphrase '' --quick-gen-key "Gantry Test Release <release@gantry.invalid>" rsa3072 sign 1y
  fi
  GPG_FINGERPRINT=$(gpg --batch --with-colons --list-secret-keys release@gantry.invalid | awk -F: '$1=="fpr" {print $10; exit}')
fi
export GPG_FINGERPRINT VERSION=$version

config=.goreleaser.yml
if [ "${RELEASE_HOST_ONLY:-}" = 1 ]; then
  config="$CACHE/release/goreleaser-host.yml"
  mkdir -p "$CACHE/release"
  sed -e "s/goos: \[linux, darwin, windows\]/goos: [$(go env GOOS)]/" -e "s/goarch: \[amd64, arm64\]/goarch: [$(go env GOARCH)]/" .goreleaser.yml >"$config"
fi
log "goreleaser ($version, $( [ "$config" = .goreleaser.yml ] && echo 'all platforms' || echo "$(go env GOOS)_$(go env GOARCH) only"))"
rm -rf "$CACHE/release/dist"
goreleaser release --config "$config" --snapshot --clean --skip=publish,validate >"$CACHE/release/goreleaser.log" 2>&1 ||
  { cat "$CACHE/release/goreleaser.log" >&2; die "goreleaser failed"; }

rm -rf "$out" && mkdir -p "$out"
cp "$CACHE/release/dist/${name}_${version}"_*.zip "$CACHE/release/dist/${name}_${version}_SHA256SUMS" \
   "$CACHE/release/dist/${name}_${version}_SHA256SUMS.sig" "$out/"
cp terraform-registry-manifest.json "$out/${name}_${version}_manifest.json"

log "verifying the release in $out"
(cd "$out" && sha256sum --quiet -c "${name}_${version}_SHA256SUMS")
gpg --batch --quiet --verify "$out/${name}_${version}_SHA256SUMS.sig" "$out/${name}_${version}_SHA256SUMS" 2>/dev/null ||
  die "the SHA256SUMS signature does not verify"
for z in "$out/${name}_${version}"_*.zip; do
  exe="${name}_v${version}"
  case $z in *_windows_*) exe="$exe.exe" ;; esac # Terraform runs terraform-provider-<name>_v<version>.exe on Windows
  unzip -Z1 "$z" | grep -qx "$exe" || die "$(basename "$z") does not hold $exe"
done
grep -q "${name}_${version}_manifest.json" "$out/${name}_${version}_SHA256SUMS" || die "the manifest is not in SHA256SUMS"
ls -1 "$out" | sed 's/^/  /' >&2
echo "$out"
