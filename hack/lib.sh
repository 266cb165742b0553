# hack/lib.sh — shared paths for the hack/ scripts. Source it; it sets:
#   ROOT (repo), BIN (ROOT/bin, first on PATH), CACHE (ROOT/.cache),
#   KUBECONFIG_PATH (the local cluster's kubeconfig, written by hack/cluster.sh up).
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN="$ROOT/bin"
CACHE="$ROOT/.cache"
KUBECONFIG_PATH="$CACHE/cluster/kubeconfig"
export PATH="$BIN:$PATH"
mkdir -p "$CACHE"

# log MSG...: a progress line on stderr.
log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }
