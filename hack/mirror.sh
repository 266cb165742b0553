#!/usr/bin/env bash
# hack/mirror.sh — serve a release directory (hack/release.sh) as a provider network mirror on
# loopback over HTTPS (hack/mirror), and write a CLI configuration that installs Gantry from it.
#
#   hack/mirror.sh start DIR   prints the CLI configuration's path; also writes
#                              .cache/mirror/ca.pem (for SSL_CERT_FILE) and .cache/mirror/url
#   hack/mirror.sh stop
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
state="$CACHE/mirror"

case ${1:-} in
  start)
    dir=${2:?release directory}
    bash "$0" stop
    mkdir -p "$state"
    go build -o "$state/mirror" ./hack/mirror
    rm -f "$state/url"
    "$state/mirror" -dir "$dir" -ca-out "$state/ca.pem" -url-out "$state/url" >"$state/mirror.log" 2>&1 &
    echo $! >"$state/pid"
    for _ in $(seq 100); do [ -s "$state/url" ] && break; sleep 0.1; done
    [ -s "$state/url" ] || { cat "$state/mirror.log" >&2; log "mirror did not start"; exit 1; }
    cat >"$state/terraformrc" <<RC
provider_installation {
  network_mirror {
    url = "$(cat "$state/url")"
  }
}
RC
    echo "$state/terraformrc"
    ;;
  stop)
    if [ -f "$state/pid" ]; then kill "$(cat "$state/pid")" 2>/dev/null || true; rm -f "$state/pid"; fi
    ;;
  *) echo "usage: $0 start DIR | stop" >&2; exit 2 ;;
esac
