# Sourced by the step scripts of the ghcr.io/gantry-dev/test-package images (hack/images):
# `step STAGE [ARGS...]` does STAGE's work, all of it driven by the environment.
#
# Every step prints "<stage>: package <p> version <v> node <n>" on stdout. With
# GANTRY_MARKER_DIR set (a directory, created if missing; on a node, under the package's
# root_mount_path), it appends "<stage> <version>" to $GANTRY_MARKER_DIR/$GANTRY_PACKAGE.log
# first (so the order of stages, failed ones included, can be asserted), then:
#
#   apply                 writes <pkg>.installed: version=<version>, node=<node>
#   apply-check           <pkg>.installed exists and says version=<version>
#   config                writes <pkg>.config: a <name>=<content> line per file in
#                         GANTRY_CONFIG_DIR (sorted by name; empty without it)
#   config-check          <pkg>.config holds exactly that
#   uninstall             removes <pkg>.installed and <pkg>.config
#   uninstall-check       both are gone
#   upgrade               rewrites <pkg>.installed with version=<version> (and upgraded_from=)
#   upgrade-check         as apply-check
#   post-interrupt        appends "post-interrupt version=<v> node=<n>" to <pkg>.post-interrupt
#   post-interrupt-check  <pkg>.post-interrupt is not empty
#   interrupt             appends "interrupt <type> <services...>" (its arguments) to
#                         <pkg>.interrupts; never reboots or restarts anything, except:
#                         with GANTRY_INTERRUPT_KILL=<process name>, sends SIGTERM to the
#                         node's processes of that name (killall; the interrupt Pod shares
#                         the host's PID namespace), as a driver package's restart of
#                         nvidia's device plugin does; fails when none has it
#
# Without GANTRY_MARKER_DIR a step only prints and exits 0. GANTRY_FAIL_STAGE=<stage>[,<stage>]
# makes those stages print "<stage>: failing on purpose (GANTRY_FAIL_STAGE=...)" on stderr and
# exit 2 (after the log line). A failed check exits 1. Whenever a step fails, its last stderr
# line is also written to /dev/termination-log (GANTRY_TERMINATION_LOG overrides the path) if
# that is writable, so the kubelet's termination message quotes it.
set -u
LC_ALL=C
export LC_ALL

GANTRY_PACKAGE=${GANTRY_PACKAGE:-test-package}
GANTRY_VERSION=${GANTRY_VERSION:-unknown}
GANTRY_NODE=${GANTRY_NODE:-unknown}
STAGE=${STAGE:-step}
LAST_ERR=

# err prints "<stage>: <message>" on stderr and remembers it for the termination log.
err() {
	LAST_ERR="$STAGE: $*"
	echo "$LAST_ERR" >&2
}

# die fails the step (exit 1) with a message.
die() {
	err "$@"
	exit 1
}

on_exit() {
	rc=$?
	if [ "$rc" -ne 0 ]; then
		[ -n "$LAST_ERR" ] || err "failed with exit code $rc"
		tl=${GANTRY_TERMINATION_LOG:-/dev/termination-log}
		if [ -w "$tl" ]; then
			echo "$LAST_ERR" >"$tl" 2>/dev/null
		fi
	fi
	exit "$rc"
}
trap on_exit EXIT

# config_lines prints "<name>=<content>" for every file in GANTRY_CONFIG_DIR, sorted by name.
# A ConfigMap volume's keys are symbolic links to ..data/<key>; the glob skips the dot entries.
config_lines() {
	[ -n "${GANTRY_CONFIG_DIR:-}" ] || return 0
	for f in "$GANTRY_CONFIG_DIR"/*; do
		[ -f "$f" ] || continue
		printf '%s=%s\n' "${f##*/}" "$(cat "$f")"
	done
}

check_installed() {
	[ -f "$installed" ] || die "$installed does not exist (want version=$GANTRY_VERSION)"
	grep -qx "version=$GANTRY_VERSION" "$installed" ||
		die "$installed says $(grep '^version=' "$installed" | head -n 1), want version=$GANTRY_VERSION"
	echo "$STAGE: $installed says version=$GANTRY_VERSION"
}

write_installed() {
	{
		echo "version=$GANTRY_VERSION"
		echo "node=$GANTRY_NODE"
		[ -z "${1:-}" ] || echo "upgraded_from=$1"
	} >"$installed" || die "cannot write $installed"
	echo "$STAGE: wrote $installed"
}

step() {
	STAGE=$1
	shift
	echo "$STAGE: package $GANTRY_PACKAGE version $GANTRY_VERSION node $GANTRY_NODE${*:+ args $*}"
	m=${GANTRY_MARKER_DIR:-}
	if [ -n "$m" ]; then
		mkdir -p "$m" || die "cannot create GANTRY_MARKER_DIR $m"
		echo "$STAGE $GANTRY_VERSION" >>"$m/$GANTRY_PACKAGE.log" || die "cannot write $m/$GANTRY_PACKAGE.log"
	fi
	case ",${GANTRY_FAIL_STAGE:-}," in
	*",$STAGE,"*)
		err "failing on purpose (GANTRY_FAIL_STAGE=$GANTRY_FAIL_STAGE)"
		exit 2
		;;
	esac
	if [ -z "$m" ]; then
		echo "$STAGE: GANTRY_MARKER_DIR is not set: nothing to do"
		exit 0
	fi
	p=$m/$GANTRY_PACKAGE
	installed=$p.installed
	config=$p.config
	case $STAGE in
	apply) write_installed ;;
	apply-check | upgrade-check) check_installed ;;
	config)
		if [ -n "${GANTRY_CONFIG_DIR:-}" ] && [ ! -d "$GANTRY_CONFIG_DIR" ]; then
			die "GANTRY_CONFIG_DIR $GANTRY_CONFIG_DIR is not a directory"
		fi
		config_lines >"$config" || die "cannot write $config"
		echo "$STAGE: wrote $config ($(wc -l <"$config") lines)"
		;;
	config-check)
		[ -f "$config" ] || die "$config does not exist"
		want=$(config_lines) || die "cannot read GANTRY_CONFIG_DIR ${GANTRY_CONFIG_DIR:-}"
		[ "$(cat "$config")" = "$want" ] || die "$config does not match GANTRY_CONFIG_DIR ${GANTRY_CONFIG_DIR:-(unset)}"
		echo "$STAGE: $config matches"
		;;
	uninstall)
		rm -f "$installed" "$config" || die "cannot remove $installed and $config"
		echo "$STAGE: removed $installed and $config"
		;;
	uninstall-check)
		[ ! -e "$installed" ] || die "$installed still exists"
		[ ! -e "$config" ] || die "$config still exists"
		echo "$STAGE: $installed and $config are gone"
		;;
	upgrade)
		from=
		[ ! -f "$installed" ] || from=$(sed -n 's/^version=//p' "$installed" | head -n 1)
		write_installed "$from"
		;;
	post-interrupt)
		echo "post-interrupt version=$GANTRY_VERSION node=$GANTRY_NODE" >>"$p.post-interrupt" || die "cannot write $p.post-interrupt"
		echo "$STAGE: appended to $p.post-interrupt"
		;;
	post-interrupt-check)
		[ -s "$p.post-interrupt" ] || die "$p.post-interrupt is missing or empty"
		echo "$STAGE: $p.post-interrupt is there"
		;;
	interrupt)
		echo "interrupt${*:+ $*}" >>"$p.interrupts" || die "cannot write $p.interrupts"
		echo "$STAGE: recorded \"interrupt${*:+ $*}\" in $p.interrupts (nothing is rebooted)"
		if [ -n "${GANTRY_INTERRUPT_KILL:-}" ]; then
			killall -TERM "$GANTRY_INTERRUPT_KILL" || die "no process named GANTRY_INTERRUPT_KILL=$GANTRY_INTERRUPT_KILL"
			echo "$STAGE: sent SIGTERM to the processes named $GANTRY_INTERRUPT_KILL"
		fi
		;;
	*) die "unknown stage" ;;
	esac
	exit 0
}
