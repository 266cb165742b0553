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

# sa_kubeconfig NAMESPACE SA OUT: creates the namespace and ServiceAccount if missing, writes to
# OUT a kubeconfig for the local cluster holding only a token of that ServiceAccount
# (TokenRequest, 24h), and prints OUT.
sa_kubeconfig() {
  local ns=$1 sa=$2 out=$3 server ca token
  kc() { kubectl --kubeconfig "$KUBECONFIG_PATH" "$@"; }
  kc get namespace "$ns" >/dev/null 2>&1 || kc create namespace "$ns" >/dev/null
  kc -n "$ns" get serviceaccount "$sa" >/dev/null 2>&1 || kc -n "$ns" create serviceaccount "$sa" >/dev/null
  token=$(kc -n "$ns" create token "$sa" --duration=24h)
  server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  ca=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.certificate-authority}')
  (umask 077; cat >"$out" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "$server", certificate-authority: "$ca"}}]
users: [{name: $sa, user: {token: "$token"}}]
contexts: [{name: local, context: {cluster: local, user: $sa}}]
current-context: local
EOF
  )
  echo "$out"
}

# pid_alive PIDFILE: the process recorded in PIDFILE runs.
pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

# stop_group PIDFILE NAME: stops the background process recorded in PIDFILE with its process
# group (started with setsid): TERM, up to 5 s, then KILL; says "NAME stopped" when it ran, and
# removes PIDFILE.
stop_group() {
  local pidfile=$1 name=$2 pid
  if pid_alive "$pidfile"; then
    pid=$(cat "$pidfile"); kill -- "-$pid" 2>/dev/null || kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 -- "-$pid" 2>/dev/null || true
    echo "$name stopped"
  fi
  rm -f "$pidfile"
}
