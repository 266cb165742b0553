package packageset

// Rule: rollback (NixFleet's Reverted): what a failed version reverts to, and the quarantine it leaves.

import (
	"fmt"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// revertKind is what a rollback of a failed flow returns the package to (revertOf).
type revertKind int

const (
	revertNone revertKind = iota
	// revertVersion: the flow moved the package to another version (upgrade, or a downgrade
	// past its uninstall): back to Prev's version.
	revertVersion
	// revertNew: the flow installed a new package: uninstall it (enabled) and drop its record.
	revertNew
	// revertConfig: the flow changed the config only: back to Prev's config.
	revertConfig
	// revertDowngrade: the uninstall of the installed version, the first stage of a downgrade,
	// failed: re-apply the installed version.
	revertDowngrade
)

// revertOf says how a failing flow rolls back (policy rollback), revertNone when it halts
// instead (retried with backoff like policy halt): a rollback flow itself, a removal, a flow
// without anything recorded to return to (a re-apply of the same version, a record written
// before Prev/New were kept), a downgrade's uninstall when the spec no longer asks for a lower
// version (the flow then goes on to the version asked for once the uninstall passes), or a
// node that may not start stages (hold, budget).
func (p *nodePass) revertOf(name string, r *PackageRecord) revertKind {
	if p.f.OnHealthFailure != v1alpha1.HealthFailureRollback || r.Reverting || r.Removing || r.State != v1alpha1.StateErroring || !p.canStart() {
		return revertNone
	}
	switch {
	case r.New:
		return revertNew
	case r.Prev == nil:
		return revertNone
	case r.Prev.Version != r.Version:
		return revertVersion
	case r.Stage == v1alpha1.StageUninstall:
		if w := p.want(name); w != nil {
			if cmp, err := compareVersions(w.Version, r.Version); err == nil && cmp < 0 {
				return revertDowngrade
			}
		}
	case !maps.Equal(r.Prev.Config, r.Config):
		return revertConfig
	}
	return revertNone
}

// revert quarantines what failed and replaces r's failed flow with one back to what the node had
// (NixFleet's rollback-and-halt: Failed while it runs, Reverted when done); the quarantine keeps
// other nodes from starting the failed change until the spec changes. revertVersion runs
// Skyhook's downgrade flow to r.Prev; revertNew uninstalls (when enabled) and drops the record;
// revertConfig restores r.Prev's config and quarantines only that config; revertDowngrade
// re-applies the installed version from apply, because a half-done uninstall leaves it in an
// unknown state that a config stage alone cannot be trusted to fix.
func (p *nodePass) revert(name string, r *PackageRecord, kind revertKind) error {
	var q, note string
	p.rec.Flows++
	nr := &PackageRecord{Flow: p.rec.Flows, Reverting: true, RevertedFrom: r.Version, Cause: causeOf(r.Message)}
	first := v1alpha1.StageApply
	switch kind {
	case revertVersion:
		q, note = Quarantine(name, r.Version), "rolling back to "+r.Prev.Version
		prev := *r.Prev
		nr.Interrupt = prev.Interrupt
		if r.Uninstall {
			nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Prev, nr.Spec = r.Version, r.Image, r.Config, true, &prev, r.Spec
			first = v1alpha1.StageUninstall
		} else {
			nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = prev.Version, prev.Image, prev.Config, prev.Uninstall, prev.Spec
		}
	case revertNew:
		q = Quarantine(name, r.Version)
		if !r.Uninstall {
			p.noteRevert(name, q, "removing the new package (uninstall not enabled: nothing to run)")
			delete(p.rec.Packages, name)
			p.withdraw(name, r.Version)
			return nil
		}
		note = "uninstalling the new package"
		nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = r.Version, r.Image, r.Config, true, r.Spec
		first = v1alpha1.StageUninstall
	case revertConfig:
		q, note = ConfigQuarantine(name, r.Version, r.Config), "rolling back to the previous config"
		prev := *r.Prev
		nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = prev.Version, prev.Image, prev.Config, prev.Uninstall, prev.Spec
		nr.RevertedConfig = ConfigKey(r.Config)
		cis := map[string]v1alpha1.Interrupt(nil)
		if w := p.want(name); w != nil {
			cis = w.ConfigInterrupts
		}
		it, err := configInterrupt(r.Config, prev.Config, cis)
		if err != nil {
			return err
		}
		nr.Interrupt = it
		first = v1alpha1.StageConfig
	case revertDowngrade:
		w := p.want(name)
		q, note = Quarantine(name, w.Version), fmt.Sprintf("the downgrade to %s needs it: re-applying %s", w.Version, r.Version)
		prev := *r.Prev
		nr.RevertedFrom = w.Version
		nr.Version, nr.Image, nr.Config, nr.Interrupt, nr.Uninstall, nr.Spec = prev.Version, prev.Image, prev.Config, prev.Interrupt, prev.Uninstall, prev.Spec
	default:
		return fmt.Errorf("package %s: no rollback for this flow", name)
	}
	p.noteRevert(name, q, note)
	p.rec.Packages[name] = nr
	p.begin(nr, first)
	p.createJob(name, nr)
	return nil
}

// noteRevert quarantines q and adds to this pass's failures of package name what the
// rollback does.
func (p *nodePass) noteRevert(name, q, note string) {
	p.quarantine[q] = true
	for i := range p.failures {
		if f := &p.failures[i]; f.Package == name {
			f.Message += fmt.Sprintf("; %s, %s quarantined", note, q)
		}
	}
}

// noteRollingBack keeps a rollback's cause in the set's failures while the rollback runs (a
// Reverting flow not yet Done, not erroring: that reports its own failure), so the Stalled
// condition says why the version is quarantined from the pass that starts the rollback to the
// pass that finishes it (then stepIdle reports revertedMessage). Not while the set is deleted
// (a failure there means a failing uninstall).
func (p *nodePass) noteRollingBack() {
	if p.f.Deleting {
		return
	}
	for _, name := range p.sortedRecords() {
		r := p.rec.Packages[name]
		if !r.Reverting || r.Done || r.State == v1alpha1.StateErroring || slices.ContainsFunc(p.failures, func(f Failure) bool { return f.Package == name }) {
			continue
		}
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, rollingBackMessage(name, r)})
	}
}

// rollingBackMessage is what a running rollback of package name says: where it returns to,
// from what, why (the cause kept from the failure), and the quarantine it holds
// (quarantineKey), e.g. "rolling back to 1.0.0 after the change to 1.1.0 failed (health check
// dcgm failed ...); tool@1.1.0 is quarantined".
func rollingBackMessage(name string, r *PackageRecord) string {
	cause := causeNote(r)
	var what string
	switch {
	case r.RevertedConfig != "":
		what = fmt.Sprintf("rolling back to the previous config of %s after config %s failed", r.Version, r.RevertedConfig)
	case r.Prev != nil: // uninstall of the failed version first
		what = fmt.Sprintf("rolling back to %s after the change to %s failed", r.Prev.Version, r.RevertedFrom)
	case r.Version == r.RevertedFrom: // a new package: uninstalled
		what = fmt.Sprintf("uninstalling %s after it failed", r.Version)
	default:
		what = fmt.Sprintf("rolling back to %s after the change to %s failed", r.Version, r.RevertedFrom)
	}
	return fmt.Sprintf("%s%s; %s is quarantined", what, cause, r.quarantineKey(name))
}

// withdraw records that package name's new version failed and was removed (revertNew): the
// node is Reverted and the version quarantined (the record survives a lost status write).
func (p *nodePass) withdraw(name, version string) {
	if p.rec.Withdrawn == nil {
		p.rec.Withdrawn = map[string]string{}
	}
	p.rec.Withdrawn[name] = version
	p.quarantine[Quarantine(name, version)] = true
	p.reverted = true
}

func (p *nodePass) unwithdraw(name string) {
	delete(p.rec.Withdrawn, name)
	if len(p.rec.Withdrawn) == 0 {
		p.rec.Withdrawn = nil
	}
}

// revertedMessage says what a done rollback flow r did and which quarantine q (the one
// stalling the wanted package) holds the node.
func revertedMessage(r *PackageRecord, q string) string {
	cause := causeNote(r)
	if r.RevertedConfig != "" {
		return fmt.Sprintf("rolled back to the previous config of %s after config %s failed%s; %s is quarantined (change the config to continue)",
			r.Version, r.RevertedConfig, cause, q)
	}
	return fmt.Sprintf("rolled back to %s after the change to %s failed%s; %s is quarantined", r.Version, r.RevertedFrom, cause, q)
}

// causeNote is " (<the failure a rollback keeps>)", or "" when it kept none.
func causeNote(r *PackageRecord) string {
	if r.Cause == "" {
		return ""
	}
	return " (" + r.Cause + ")"
}

// MaxCause bounds the failure message a rollback keeps (PackageRecord.Cause), in bytes.
const MaxCause = 300

// causeOf is msg cut to MaxCause bytes (on a rune boundary, "…" added when cut).
func causeOf(msg string) string {
	if len(msg) <= MaxCause {
		return msg
	}
	cut := MaxCause
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return msg[:cut] + "…"
}
