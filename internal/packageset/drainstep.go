package packageset

// Rule: the drain of a cordoned node before its interrupt, with spec.drain's timeout (kubectl
// drain --timeout, NodeWright's drain timeout): the drain runs until the node is drained; past
// the timeout onTimeout decides: Fail makes the node erroring (naming the pods left and why) and
// tries the drain again after the backoff of a failed stage, Continue runs the interrupt with
// the pods left on the node. Without a timeout the drain waits as long as it takes.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// maxPodsLeft is how many of the pods left a drain timeout names before it counts the rest.
const maxPodsLeft = 5

// DrainTimedOut says whether the drain recorded in rec has run past spec.timeout at now (a
// timeout set, the drain under way and not failed): the pass at now decides the timeout, so
// the controller reads why the pods left did not leave (NodeFacts.EvictRefusals) for it.
func DrainTimedOut(rec *NodeRecord, spec DrainSpec, now time.Time) bool {
	return rec != nil && rec.Drain != nil && rec.Drain.Message == "" && spec.Timeout > 0 && now.Sub(rec.Drain.Since) >= spec.Timeout
}

// drainFailed: the node's drain timed out under onTimeout Fail and waits for its next try (the
// node is erroring).
func (p *nodePass) drainFailed() bool {
	return p.rec.Drain != nil && p.rec.Drain.Message != ""
}

// drained says whether the cordoned node, its non-interrupt pods gone, may be interrupted as far
// as its drain goes (drainStep). Callers in one pass get the first answer. A yes ends the drain:
// its record goes, as the caller starts the interrupt (or the removal's uninstall) now.
func (p *nodePass) drained() bool {
	if p.drainDecision == nil {
		ok := p.drainStep()
		p.drainDecision = &ok
		if ok {
			p.rec.Drain = nil
		}
	}
	return *p.drainDecision
}

// drainStep is one pass of the drain (its record's states: none → draining → drained, or
// draining → failed → draining after the backoff):
//   - drained (the facts) → yes, whatever the record says (pods that left by themselves end a
//     failed drain too);
//   - no record → draining since now: plan the evictions;
//   - failed → wait out backoff(Failures) from the failure (the node reports the failure),
//     then draining again since now: plan the evictions;
//   - draining past spec.drain.timeout → drainTimedOut;
//   - draining → plan the evictions (again: a refused eviction is retried every pass).
func (p *nodePass) drainStep() bool {
	if p.n.Drained {
		return true
	}
	spec, now, d := p.f.Drain, p.f.Now, p.rec.Drain
	switch {
	case d == nil:
		d = &DrainRecord{Since: now}
		p.rec.Drain = d
	case d.Message != "":
		if wait := backoff(d.Failures) - now.Sub(d.Since); wait > 0 {
			p.requeueIn(wait)
			p.failures = append(p.failures, p.drainFailure(d.Message))
			return false
		}
		d.Since, d.Message = now, "" // the next try
	case DrainTimedOut(p.rec, spec, now):
		return p.drainTimedOut(d)
	}
	p.plan.Drain = true
	p.plan.DrainNonInterrupt = NonInterruptExpired(p.rec, spec, now)
	if spec.Timeout > 0 {
		p.requeueIn(spec.Timeout - now.Sub(d.Since)) // the pass that decides the timeout
	}
	return false
}

// drainTimedOut decides a drain past spec.drain.timeout: Continue → yes (the interrupt runs
// with the pods left); Fail → the drain fails (Failures+1, the node erroring with "drain timed
// out after <timeout>; pods left: <pod> (<why>), ..." until the next try after the backoff).
// Either way the pass reports it (DrainTimeouts: one Warning event).
func (p *nodePass) drainTimedOut(d *DrainRecord) bool {
	spec := p.f.Drain
	msg := fmt.Sprintf("drain timed out after %s; pods left: %s", spec.Timeout, podsLeft(p.n))
	if spec.OnTimeout == v1alpha1.DrainTimeoutContinue {
		p.drainTimeout = msg + "; onTimeout Continue: the interrupt runs with them on the node"
		return true
	}
	d.Failures++
	d.Since, d.Message = p.f.Now, msg
	wait := backoff(d.Failures)
	p.requeueIn(wait)
	p.failures = append(p.failures, p.drainFailure(msg))
	p.drainTimeout = fmt.Sprintf("%s; onTimeout Fail: the node is erroring and stays cordoned, its drain is tried again in %s", msg, wait)
	return false
}

// drainFailure is the failure a failed drain reports: the first package (by name) waiting for
// the drain, at stage interrupt (or uninstall, for a removal with an interrupt).
func (p *nodePass) drainFailure(msg string) Failure {
	f := Failure{Node: p.n.Name, Stage: v1alpha1.StageInterrupt, Message: msg}
	for _, name := range p.sortedRecords() {
		r := p.rec.Packages[name]
		switch {
		case removalGated(r):
			f.Package, f.Stage = name, v1alpha1.StageUninstall
		case r.Interrupt != nil && !r.Done && !r.Removing && r.Stage == v1alpha1.StageConfig && r.State == v1alpha1.StateComplete:
			f.Package = name
		default:
			continue
		}
		return f
	}
	return f
}

// podsLeft names the pods that keep node n from being drained and why, at most maxPodsLeft
// then how many more: those spec.drain keeps ("ns/p (uses emptyDir data ...)"), those the
// Eviction API refuses ("ns/p (eviction refused: <its words>)", or "(not evicted yet)" when
// the refusal is unknown) and those still terminating.
func podsLeft(n NodeFacts) string {
	var left []string
	for _, u := range n.Unevictable {
		name, why, _ := strings.Cut(u, ": ")
		left = append(left, fmt.Sprintf("%s (%s)", name, why))
	}
	for _, pod := range n.Evicting {
		why := "not evicted yet"
		if r := n.EvictRefusals[pod]; r != "" {
			why = "eviction refused: " + r
		}
		left = append(left, fmt.Sprintf("%s (%s)", pod, why))
	}
	for _, pod := range n.Terminating {
		left = append(left, pod+" (still terminating)")
	}
	if len(left) == 0 {
		return "none named"
	}
	sort.Strings(left)
	if len(left) > maxPodsLeft {
		left = append(left[:maxPodsLeft], fmt.Sprintf("and %d more", len(left)-maxPodsLeft))
	}
	return strings.Join(left, ", ")
}

// NonInterruptExpired says whether the node whose record is rec has waited for its
// podNonInterruptLabels pods past spec.nonInterruptTimeout at now under onNonInterruptTimeout
// Drain: the controller then sorts those pods like any other (to evict), so the drain takes them.
func NonInterruptExpired(rec *NodeRecord, spec DrainSpec, now time.Time) bool {
	return rec != nil && rec.NonInterruptSince != nil && spec.NonInterruptTimeout > 0 &&
		spec.OnNonInterruptTimeout == v1alpha1.NonInterruptTimeoutDrain && now.Sub(*rec.NonInterruptSince) >= spec.NonInterruptTimeout
}

// nonInterruptHold says whether the cordoned node still waits for its podNonInterruptLabels
// pods (NodeFacts.NonInterrupt) before its drain, as Skyhook waits, bounded by
// spec.drain.nonInterruptTimeout from the first pass that found them (NodeRecord.NonInterruptSince):
// before it, wait (and look again when it passes); past it under Fail, wait on as erroring,
// naming the pods; under Drain the controller no longer reports them (NonInterruptExpired), so
// there is nothing left to wait for. The clock is dropped with the cordon (nodePass.run).
func (p *nodePass) nonInterruptHold() bool {
	if len(p.n.NonInterrupt) == 0 {
		return false // the clock stays until the cordon goes: NonInterruptExpired holds for this drain
	}
	spec, now := p.f.Drain, p.f.Now
	if p.rec.NonInterruptSince == nil {
		p.rec.NonInterruptSince = &now
	}
	if spec.NonInterruptTimeout <= 0 {
		return true
	}
	if left := spec.NonInterruptTimeout - now.Sub(*p.rec.NonInterruptSince); left > 0 {
		p.requeueIn(left)
		return true
	}
	p.nonInterruptFailed = true
	p.failures = append(p.failures, p.drainFailure(fmt.Sprintf("non-interrupt pods still running after %s (drain.nonInterruptTimeout, onNonInterruptTimeout Fail): %s; "+
		"the node stays cordoned and waits for them", spec.NonInterruptTimeout, listMessage(p.n.NonInterrupt))))
	p.requeueIn(BackoffMax)
	return true
}
