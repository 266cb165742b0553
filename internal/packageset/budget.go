package packageset

// Rule: the interruption budget and the gates a node waits on before it may start work (Skyhook's interruptionBudget, priority order between sets, pause, taints).

import (
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// countSelected is the number of nodes the selector picks.
func countSelected(nodes []NodeFacts) int {
	selected := 0
	for _, n := range nodes {
		if n.Selected {
			selected++
		}
	}
	return selected
}

// rolloutCounts counts the nodes in flight (a rollout state InFlight says so, or cordoned)
// and the cordoned nodes, and says whether any node's rollout Failed (which halts the rollout).
func rolloutCounts(nodes []NodeFacts) (inflight, cordoned int, failed bool) {
	for _, n := range nodes {
		if n.Cordoned {
			cordoned++
		}
		if n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned) {
			inflight++
		}
		if n.Record != nil && n.Record.Rollout == v1alpha1.RolloutFailed {
			failed = true
		}
	}
	return inflight, cordoned, failed
}

// nodeHold is the status that holds node n this pass ("" for none); when the node is
// blocked, the "<node>: <taint>" line for the set's condition; when it waits for taints a
// controller removes (NodeFacts.WaitFor), status waiting and the "<node>: <taints>" line in
// waitFor; when a paused set gates a selected node, the "<node> (by <set>)" entry for
// PausedBy. Deleting holds nothing.
func nodeHold(f SetFacts, n NodeFacts, specErr error) (hold Status, blocked, waitFor, pausedBy string) {
	switch {
	case f.Deleting:
		return "", "", "", ""
	case specErr != nil:
		return v1alpha1.StatusUnknown, "", "", ""
	case n.Blocked != "" && n.Selected:
		return v1alpha1.StatusBlocked, n.Name + ": " + n.Blocked, "", ""
	case n.WaitFor != "" && n.Selected:
		return v1alpha1.StatusWaiting, "", n.Name + ": " + n.WaitFor, ""
	case f.Disabled:
		return v1alpha1.StatusDisabled, "", "", ""
	case f.Paused:
		return v1alpha1.StatusPaused, "", "", ""
	case n.Gate == GatePaused:
		if n.Selected {
			return v1alpha1.StatusWaiting, "", "", n.Name + " (by " + n.GateSet + ")"
		}
		return v1alpha1.StatusWaiting, "", "", ""
	case n.Gate == GateWaiting:
		return v1alpha1.StatusWaiting, "", "", ""
	}
	return "", "", "", ""
}

// grant decides whether the pass may start new stages on the node: a node already in flight
// keeps its grant; another gets one of the budget's slots (inflight counts them) when nothing
// holds it, it has work to do and the rollout is not halted.
func (p *nodePass) grant(wasInFlight bool, inflight *int, budget int, halted bool) {
	p.granted = wasInFlight
	if !p.granted && p.hold == "" && p.needsWork() && *inflight < budget && !halted {
		p.granted = true
		*inflight++
	}
}

// canStart: new stages may start on the node (budget granted, nothing holds it).
func (p *nodePass) canStart() bool { return p.granted && p.hold == "" }
