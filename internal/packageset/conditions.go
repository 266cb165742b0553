package packageset

// Rule: the set's summary status and conditions (kstatus, TaintNotTolerable, DrainBlocked) from the per-node outcomes.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Condition types and reasons besides the kstatus ones.
const (
	ConditionTaintNotTolerable = "TaintNotTolerable" // Skyhook's; True while some node is blocked
	ConditionDrainBlocked      = "DrainBlocked"      // True while an eviction is refused (PDB, ...)
	// ConditionHealthChecksObserved is True while a node's latest soak window has a failed
	// run of an observe-mode health check (NixFleet's observe mode): informational, it
	// neither fails nor holds the set.
	ConditionHealthChecksObserved = "HealthChecksObserved"
	ReasonComplete                = "Complete"
	ReasonInProgress              = "InProgress"
	ReasonWaiting                 = "Waiting"
	ReasonErroring                = "StageErroring"
	ReasonBlocked                 = "TaintNotTolerable"
	// ReasonWaitingForTaint: nodes wait for taints their stage pods do not tolerate that a
	// controller in the cluster removes (TaintHold): progress, not Stalled (as Skyhook waits).
	ReasonWaitingForTaint = "WaitingForTaint"
	ReasonPaused          = "Paused"
	ReasonDisabled        = "Disabled"
	ReasonInvalidSpec     = "InvalidSpec"
	ReasonDeleting        = "Uninstalling"
	// ReasonUninstallFailed: the set is being deleted and an uninstall stage fails (Stalled:
	// the deletion cannot finish until the package is fixed or uninstallOnDelete is false).
	ReasonUninstallFailed = "UninstallFailed"
	// ReasonWaitingForPausedSet: the set's nodes wait for an earlier set that is paused
	// (Reconciling=False: nothing moves until that set is resumed).
	ReasonWaitingForPausedSet = "WaitingForPausedSet"
	ReasonDrainBlocked        = "DrainBlocked"
	// ReasonVersionQuarantined: the spec asks for a version a rollback quarantined (Stalled).
	ReasonVersionQuarantined = "VersionQuarantined"
	// ReasonDeploymentStopped: a deployment policy compartment stopped after failed batches
	// (Stalled until the package versions change).
	ReasonDeploymentStopped = "DeploymentStopped"
)

// MaxFailuresListed is how many failing node/package/stage lines a message names before it
// says how many more there are.
const MaxFailuresListed = 12

// setStatus is the set's one-word summary: disabled or paused when the user asked (unless
// deleting), unknown for a spec error, else the aggregate of the selected nodes' statuses,
// with erroring instead of waiting/unknown when a wanted version is quarantined (stalled).
func setStatus(f SetFacts, specErr error, statuses []Status, stalled []string) Status {
	switch {
	case f.Disabled && !f.Deleting:
		return v1alpha1.StatusDisabled
	case f.Paused && !f.Deleting:
		return v1alpha1.StatusPaused
	case specErr != nil:
		return v1alpha1.StatusUnknown
	}
	st := Aggregate(statuses)
	if len(stalled) > 0 && (st == v1alpha1.StatusWaiting || st == v1alpha1.StatusUnknown || st == v1alpha1.StatusComplete) {
		st = v1alpha1.StatusErroring // nothing will move until the version changes
	}
	return st
}

// drainWait says what a cordoned node's drain waits for in the facts ("" if nothing): running
// non-interrupt pods first (the drain has not started), else the pods spec.drain keeps ("pod
// ns/p: uses emptyDir data (drain.deleteEmptyDirData is false)") and evicted pods still
// terminating.
func drainWait(n NodeFacts) string {
	switch {
	case !n.Cordoned:
		return ""
	case len(n.NonInterrupt) > 0:
		return "waiting for non-interrupt pods: " + strings.Join(n.NonInterrupt, ", ")
	case n.Drained:
		return ""
	}
	var parts []string
	for _, u := range n.Unevictable {
		parts = append(parts, "pod "+u)
	}
	if len(n.Terminating) > 0 {
		parts = append(parts, "waiting for evicted pods to terminate: "+strings.Join(n.Terminating, ", "))
	}
	return strings.Join(parts, "; ")
}

// AddDrainRefusals folds what refused this pass's evictions (node → message, e.g. "pod ns/a:
// Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget
// pdb-a needs 1 healthy pods and has 1 currently)") into DrainBlockers and the DrainBlocked
// condition. The controller drains after Plan, so the refusals of a pass reach its status this
// way; every pass that drains retries the evictions, so they are found again after a restart
// and nothing about them is kept between passes.
func (d *Decision) AddDrainRefusals(refusals map[string]string) {
	if len(refusals) == 0 {
		return
	}
	if d.DrainBlockers == nil {
		d.DrainBlockers = map[string]string{}
	}
	for node, msg := range refusals {
		if old := d.DrainBlockers[node]; old != "" {
			msg = old + "; " + msg
		}
		d.DrainBlockers[node] = msg
	}
	for i := range d.Conditions {
		if d.Conditions[i].Type == ConditionDrainBlocked {
			d.Conditions[i] = drainCondition(d.Conditions[i].ObservedGeneration, d.DrainBlockers)
		}
	}
}

// drainCondition is DrainBlocked: True naming each blocked node and what blocks it ("<node>:
// <message>", by node name, at most MaxFailuresListed), else False.
func drainCondition(generation int64, blockers map[string]string) metav1.Condition {
	if len(blockers) == 0 {
		return metav1.Condition{Type: ConditionDrainBlocked, Status: metav1.ConditionFalse, Reason: "NoDrainBlocked", ObservedGeneration: generation}
	}
	return metav1.Condition{Type: ConditionDrainBlocked, Status: metav1.ConditionTrue, Reason: ReasonDrainBlocked,
		Message: listMessage(nodeLines(blockers)), ObservedGeneration: generation}
}

// nodeLines is "<node>: <line>" for each node of lines, by node name.
func nodeLines(lines map[string]string) []string {
	items := make([]string, 0, len(lines))
	for _, n := range slices.Sorted(maps.Keys(lines)) {
		items = append(items, n+": "+lines[n])
	}
	return items
}

// FailureMessage names each failure (at most MaxFailuresListed, then how many more).
func FailureMessage(fs []Failure) string {
	var b strings.Builder
	for i, f := range fs {
		if i == MaxFailuresListed {
			fmt.Fprintf(&b, "; and %d more", len(fs)-MaxFailuresListed)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.String())
	}
	return b.String()
}

// conditions are the set's Ready, Reconciling, Stalled, TaintNotTolerable and DrainBlocked.
// blocked are the "<node>: <taint>" lines of blocked nodes (Stalled); waitFor the "<node>:
// <taints>" lines of nodes waiting for taints a controller removes (TaintHold): while the set
// is waiting or unknown they give Ready and Reconciling the reason WaitingForTaint, and they
// are named in the message of a set still at work; TaintNotTolerable is True for both (its
// reason TaintNotTolerable when any node is blocked, else WaitingForTaint).
func conditions(f SetFacts, d Decision, specErr error, blocked, waitFor []string) []metav1.Condition {
	g := f.Generation
	cond := func(t string, s bool, reason, msg string) metav1.Condition { return condition(g, t, s, reason, msg) }
	var ready, reconciling, stalled metav1.Condition
	switch {
	case specErr != nil && !f.Deleting:
		ready = cond(v1alpha1.ConditionReady, false, ReasonInvalidSpec, specErr.Error())
		reconciling = cond(v1alpha1.ConditionReconciling, false, ReasonInvalidSpec, "")
		stalled = cond(v1alpha1.ConditionStalled, true, ReasonInvalidSpec, specErr.Error())
	case f.Deleting && len(d.Failures) > 0:
		// An uninstall fails: the deletion cannot finish by itself (it retries with backoff).
		msg := "deletion blocked, uninstall failing: " + FailureMessage(d.Failures) +
			"; fix the package (its retry runs the spec recorded on the node) or set uninstallOnDelete to false to delete without uninstalling"
		ready = cond(v1alpha1.ConditionReady, false, ReasonUninstallFailed, msg)
		reconciling = cond(v1alpha1.ConditionReconciling, false, ReasonUninstallFailed, "")
		stalled = cond(v1alpha1.ConditionStalled, true, ReasonUninstallFailed, msg)
	case f.Deleting:
		ready = cond(v1alpha1.ConditionReady, false, ReasonDeleting, "uninstalling and releasing nodes")
		reconciling = cond(v1alpha1.ConditionReconciling, true, ReasonDeleting, "uninstalling and releasing nodes")
		stalled = cond(v1alpha1.ConditionStalled, false, ReasonDeleting, "")
	default:
		ready, reconciling, stalled = statusConditions(g, d, blocked, waitFor)
	}
	if reason, msg := stallReason(f, d, specErr); reason != "" {
		ready = cond(v1alpha1.ConditionReady, false, reason, msg)
		stalled = cond(v1alpha1.ConditionStalled, true, reason, msg)
		// Stalled excludes Reconciling (kstatus reads the first of them that is True).
		reconciling = cond(v1alpha1.ConditionReconciling, false, reason, "")
	}
	return []metav1.Condition{ready, reconciling, stalled, taintCondition(g, blocked, waitFor), drainCondition(g, d.DrainBlockers), observedCondition(g, d.Nodes)}
}

// condition is the condition t of generation g, True when s.
func condition(g int64, t string, s bool, reason, msg string) metav1.Condition {
	st := metav1.ConditionFalse
	if s {
		st = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg, ObservedGeneration: g}
}

// statusConditions are Ready, Reconciling and Stalled of a live set with a valid spec, from its
// status d.Status: the reason and message name the complete nodes, the failures (erroring),
// the blocked nodes (blocked), the sets paused ahead of it, the rollout's holds, the nodes
// re-gating after a reboot outside Gantry and the taints waited for (waitFor, while waiting,
// unknown or in progress).
func statusConditions(g int64, d Decision, blocked, waitFor []string) (ready, reconciling, stalled metav1.Condition) {
	s := d.Status
	reason := map[Status]string{v1alpha1.StatusComplete: ReasonComplete, v1alpha1.StatusInProgress: ReasonInProgress,
		v1alpha1.StatusWaiting: ReasonWaiting, v1alpha1.StatusErroring: ReasonErroring, v1alpha1.StatusBlocked: ReasonBlocked,
		v1alpha1.StatusPaused: ReasonPaused, v1alpha1.StatusDisabled: ReasonDisabled, v1alpha1.StatusUnknown: ReasonInProgress}[s]
	msg := fmt.Sprintf("%s nodes complete", d.CompleteNodes)
	switch s {
	case v1alpha1.StatusErroring:
		msg = FailureMessage(d.Failures)
	case v1alpha1.StatusBlocked:
		msg = "stage pods do not tolerate the taints of " + listMessage(blocked)
	}
	if len(d.PausedBy) > 0 {
		reason, msg = ReasonWaitingForPausedSet, "waiting for a paused package set on "+listMessage(d.PausedBy)
	}
	if len(d.PausedBy) == 0 {
		msg += rolloutHoldMessage(d) + regateMessage(d.Nodes)
	}
	if len(d.DeviceWaits) > 0 && s == v1alpha1.StatusInProgress {
		msg += "; nodes kept cordoned until the devices they had return after the interrupt: " + listMessage(nodeLines(d.DeviceWaits))
	}
	if len(waitFor) > 0 && len(d.PausedBy) == 0 && (s == v1alpha1.StatusWaiting || s == v1alpha1.StatusUnknown || s == v1alpha1.StatusInProgress) {
		msg += "; waiting for the removal of taints the stage pods do not tolerate: " + listMessage(waitFor)
		if s != v1alpha1.StatusInProgress {
			reason = ReasonWaitingForTaint
		}
	}
	// erroring and blocked are Stalled (kstatus Failed, the provider fails the apply);
	// erroring stages are still retried with backoff, and a fix heals the set.
	failed := s == v1alpha1.StatusBlocked || s == v1alpha1.StatusErroring
	ready = condition(g, v1alpha1.ConditionReady, s == v1alpha1.StatusComplete, reason, msg)
	work := (s == v1alpha1.StatusInProgress || s == v1alpha1.StatusWaiting || s == v1alpha1.StatusUnknown) && len(d.PausedBy) == 0
	reconciling = condition(g, v1alpha1.ConditionReconciling, work, reason, "")
	if work {
		reconciling.Message = msg
	}
	stalled = condition(g, v1alpha1.ConditionStalled, failed, reason, "")
	if failed {
		stalled.Message = msg
	}
	return ready, reconciling, stalled
}

// taintCondition is TaintNotTolerable: True naming the blocked nodes and those waiting for a
// taint's removal, else False.
func taintCondition(g int64, blocked, waitFor []string) metav1.Condition {
	taint := condition(g, ConditionTaintNotTolerable, len(blocked)+len(waitFor) > 0, "TaintsTolerated", "")
	switch {
	case len(blocked) > 0 && len(waitFor) > 0:
		taint.Reason, taint.Message = ReasonBlocked, listMessage(blocked)+"; waiting for removal: "+listMessage(waitFor)
	case len(blocked) > 0:
		taint.Reason, taint.Message = ReasonBlocked, listMessage(blocked)
	case len(waitFor) > 0:
		taint.Reason, taint.Message = ReasonWaitingForTaint, "waiting for removal: "+listMessage(waitFor)
	}
	return taint
}

// observedCondition is HealthChecksObserved: True naming "<node>: <failed run>" for every
// observe-mode failure the nodes' records keep (by node, then check; at most
// MaxFailuresListed), else False.
func observedCondition(generation int64, nodes []NodePlan) metav1.Condition {
	var items []string
	for _, n := range nodes {
		if n.Record == nil {
			continue
		}
		for _, check := range slices.Sorted(maps.Keys(n.Record.Observed)) {
			items = append(items, n.Name+": "+n.Record.Observed[check])
		}
	}
	if len(items) == 0 {
		return metav1.Condition{Type: ConditionHealthChecksObserved, Status: metav1.ConditionFalse, Reason: "NoObservedFailures", ObservedGeneration: generation}
	}
	return metav1.Condition{Type: ConditionHealthChecksObserved, Status: metav1.ConditionTrue, Reason: "ObservedFailures",
		Message: listMessage(items), ObservedGeneration: generation}
}

// stallReason is the reason and message that make the set Stalled in place of its status's:
// a quarantined version or config the spec asks for (VersionQuarantined) or a deployment
// policy compartment stopped by failed batches (DeploymentStopped, which wins over it), a
// release refused (ReleaseNotVerified or ReleaseStale, which wins over both); "" when
// neither applies, or the set is paused or disabled (held by the user: the apply returns at
// once for them), deleting, or its spec is invalid.
func stallReason(f SetFacts, d Decision, specErr error) (reason, msg string) {
	if specErr != nil || f.Deleting || f.Paused || f.Disabled {
		return "", ""
	}
	failures := ""
	if len(d.Failures) > 0 {
		failures = "; " + FailureMessage(d.Failures)
	}
	if d.Release != nil {
		return d.Release.Reason, d.Release.Message + failures
	}
	if len(d.Stopped) > 0 {
		return ReasonDeploymentStopped, strings.Join(d.Stopped, "; ") + failures
	}
	if len(d.Stalled) == 0 {
		return "", ""
	}
	var cfg, ver bool
	for _, q := range d.Stalled {
		c := strings.Contains(q, "#config-")
		cfg, ver = cfg || c, ver || !c
	}
	change := "the version"
	switch {
	case cfg && ver:
		change = "the version (for a #config-<hash>: the config)"
	case cfg:
		change = "the config (or the version)"
	}
	return ReasonVersionQuarantined, "quarantined by a rollback, change " + change + " to continue: " + strings.Join(d.Stalled, ", ") + failures
}

// rolloutHoldMessage is what spec.afterConverged, node edges and the fleet budget hold this
// pass, to append to the message of a set at work ("" when they hold nothing): "; after
// converged: package set a (reason) is in_progress (1/3 nodes complete)", "; node edges: b
// waits for a; ..." and "; fleet budget <name> holds N nodes: ..." (FleetMessage).
func rolloutHoldMessage(d Decision) string {
	var out string
	if len(d.ConvergedWaits) > 0 {
		out += "; after converged: " + listMessage(d.ConvergedWaits)
	}
	if len(d.NodeEdgeWaits) > 0 {
		out += "; node edges: " + listMessage(d.NodeEdgeWaits)
	}
	if m := FleetMessage(d.Fleet); m != "" {
		out += "; " + m
	}
	return out
}

func listMessage(items []string) string {
	if len(items) > MaxFailuresListed {
		return strings.Join(items[:MaxFailuresListed], "; ") + fmt.Sprintf("; and %d more", len(items)-MaxFailuresListed)
	}
	return strings.Join(items, "; ")
}

// statusCount is how many of statuses are s.
func statusCount(statuses []Status, s Status) int {
	n := 0
	for _, x := range statuses {
		if x == s {
			n++
		}
	}
	return n
}
