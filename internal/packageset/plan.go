package packageset

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Backoff bounds for retrying an erroring stage: BackoffMin·2^(restarts-1), at most BackoffMax.
const (
	BackoffMin = 5 * time.Second
	BackoffMax = 5 * time.Minute
	// DefaultStageTimeout bounds one stage attempt when the package sets no stageTimeout.
	DefaultStageTimeout = 10 * time.Minute
	// Poll is the requeue delay while work is under way (Pod and Node watches normally trigger
	// a pass earlier).
	Poll = 5 * time.Second
	// MinDefaultSoakCheckInterval is the floor of the default soak check interval
	// (soakDuration/3, at least this; SoakInterval).
	MinDefaultSoakCheckInterval = 5 * time.Second
	// MinSoakCheckInterval is the floor of an explicit spec.rollout.soakCheckInterval (the CRD
	// rejects less; the machine clamps a smaller value to it).
	MinSoakCheckInterval = time.Second
)

// Plan is one pass of the machine over every node of the set. Errors: an illegal transition
// (a bug or a hand-edited annotation; the caller reports it and changes nothing).
func Plan(f SetFacts) (Decision, error) {
	var d Decision
	wants, specErr := Order(f.Wants)
	if f.SpecError != "" {
		specErr = errors.New(f.SpecError)
	}
	specErr = edgeSpecErr(specErr, f)
	nodes := append([]NodeFacts(nil), f.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	selected := countSelected(nodes)
	budget := Budget(f.Budget, selected)
	var listed []string
	nodes, listed, d.QuarantineLifted, d.QuarantinePending = clearQuarantine(f.ClearQuarantine, f.Quarantined, nodes)
	quarantine := quarantineSet(listed, nodes)
	inflight, cordoned, failed := rolloutCounts(nodes)
	stalled := stalledWants(wants, quarantine) != nil && !f.Deleting
	halted := failed || stalled
	var pol *policyPass
	if f.Policy != nil {
		// Failures halt per compartment (or by the strategy's thresholds), not the whole set.
		pol, halted = newPolicyPass(f.Policy, nodes, wants), stalled
	}
	halted = halted || f.Release.Stale() && !f.Deleting // a stale release starts no new node

	wave := math.MaxInt
	if len(f.Waves) > 0 && !f.Deleting {
		wave = currentWave(f, nodes, wants)
	}

	// Cordons are bounded by the budget on their own too: after the budget shrinks, nodes
	// already in flight finish their stages but no more than the budget are interrupted.
	cordonSlots := budget - cordoned
	statuses := make([]Status, 0, len(nodes))
	var lines holdLines
	waits := edgeWaits(f, nodes, wants)
	fleet := newFleetPass(f, nodes)
	for _, n := range nodes {
		var nodeWants []Want
		if n.Selected && !f.Deleting {
			nodeWants = wants
		}
		p := newNodePass(&f, n, nodeWants, &cordonSlots, quarantine)
		if f.Deleting && f.KeepInstalled {
			// uninstallOnDelete false: leave the packages, release the node.
			d.Nodes = append(d.Nodes, NodePlan{Name: n.Name, Uncordon: n.Cordoned})
			continue
		}
		wasInFlight := n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned)
		var blockedMsg, waitMsg, pausedMsg string
		p.hold, blockedMsg, waitMsg, pausedMsg = nodeHold(f, n, specErr)
		holdForRelease(f, &p, specErr)
		edgeMsg := holdForEdges(&p, waits[n.Name], wasInFlight)
		convHeld := holdForConverged(&p, f.ConvergedWaits, wasInFlight)
		fleetHeld := fleet.hold(&p, wasInFlight)
		admit(&p, wave, wasInFlight, pol, &inflight, budget, halted)
		if p.granted && !wasInFlight {
			fleet.take(n.Name)
		}
		plan, err := p.run()
		if err != nil {
			return d, fmt.Errorf("node %s: %w", n.Name, err)
		}
		d.addNode(n, plan, &p)
		lines.add(blockedMsg, waitMsg, pausedMsg, plan.Status)
		lines.addRollout(edgeMsg, fleetHeld, convHeld, fleet, plan.Status)
		if n.Selected {
			statuses = append(statuses, plan.Status)
		}
	}
	d.Quarantined = sortedKeys(quarantine)
	d.NodeEdgeWaits, d.Fleet = lines.edges, fleet.status()
	if lines.converged {
		d.ConvergedWaits = f.ConvergedWaits
	}
	if pol != nil {
		d.policy(pol, nodes)
	}
	if wave != math.MaxInt {
		d.Wave = WaveName(f.Waves, waveAfter(nodes, d.Nodes))
	}
	if !f.Deleting && specErr == nil {
		d.Stalled = stalledWants(wants, quarantine)
	}
	d.summarize(f, specErr, statuses, selected, lines)
	return d, nil
}

// summarize fills the set-wide part of d once every node is planned: node counts, the
// release refusal, the one-word status, whether a deletion is finished, the requeue, the
// paused-by lines and the conditions (statuses: the selected nodes' plan statuses).
func (d *Decision) summarize(f SetFacts, specErr error, statuses []Status, selected int, lines holdLines) {
	d.CompleteNodes = fmt.Sprintf("%d/%d", statusCount(statuses, v1alpha1.StatusComplete), selected)
	d.NodesInProgress = int32(statusCount(statuses, v1alpha1.StatusInProgress))
	d.Release = releaseRefused(f, specErr, statuses)
	stalledBy := append(append([]string(nil), d.Stalled...), d.Stopped...)
	if d.Release != nil {
		stalledBy = append(stalledBy, d.Release.Reason)
	}
	d.Status = setStatus(f, specErr, statuses, stalledBy)
	if f.Deleting {
		d.Finished = deleteFinished(d.Nodes)
	}
	if d.Status != v1alpha1.StatusComplete && d.RequeueAfter == 0 {
		d.RequeueAfter = Poll
	}
	if d.Status == v1alpha1.StatusWaiting && len(lines.pausedBy) == statusCount(statuses, v1alpha1.StatusWaiting) && len(lines.pausedBy) > 0 {
		d.PausedBy = lines.pausedBy
	}
	d.Conditions = conditions(f, *d, specErr, lines.blocked, lines.waitFor)
}

// holdLines are the lines a pass collects from nodeHold for the set's conditions: blocked
// ("<node>: <taint>"), waitFor ("<node>: <taints>") and pausedBy ("<node> (by <set>)"), node
// edges' lines, and whether spec.afterConverged held a node (converged).
type holdLines struct {
	blocked, waitFor, pausedBy, edges []string
	converged                         bool
}

// addRollout records, for a node that ended the pass waiting, its node edges' line and whether
// spec.afterConverged (convHeld) or the fleet budget held it.
func (h *holdLines) addRollout(edge string, fleetHeld, convHeld bool, fleet *fleetPass, status Status) {
	if status != v1alpha1.StatusWaiting {
		return
	}
	if edge != "" {
		h.edges = append(h.edges, edge)
	}
	h.converged = h.converged || convHeld
	if fleetHeld {
		fleet.waiting++
	}
}

// add records one node's nodeHold lines once its plan's status is known: blocked always;
// waitFor and pausedBy only when the node ended the pass waiting (not when it is done or still
// finishing stages it had started).
func (h *holdLines) add(blocked, waitFor, pausedBy string, status Status) {
	if blocked != "" {
		h.blocked = append(h.blocked, blocked)
	}
	if status != v1alpha1.StatusWaiting {
		return
	}
	if waitFor != "" {
		h.waitFor = append(h.waitFor, waitFor)
	}
	if pausedBy != "" {
		h.pausedBy = append(h.pausedBy, pausedBy)
	}
}

// admit holds a node of a wave after the current one (Waiting) unless it is in flight, then
// grants it a slot: of its deployment policy compartment (pol), else of the budget.
func admit(p *nodePass, wave int, wasInFlight bool, pol *policyPass, inflight *int, budget int, halted bool) {
	if p.hold == "" && p.n.Selected && p.n.Wave > wave && !wasInFlight {
		p.hold = v1alpha1.StatusWaiting // an earlier wave is not done
	}
	if pol != nil {
		pol.grant(p, p.n, wasInFlight, halted, p.f.Deleting)
		return
	}
	p.grant(wasInFlight, inflight, budget, halted)
}

// policy adds the deployment policy's outcome: the compartments' status, the stopped ones, and
// a short requeue when a batch finished (the next one starts without waiting for Poll).
func (d *Decision) policy(pol *policyPass, nodes []NodeFacts) {
	selected := map[string]bool{}
	for _, n := range nodes {
		selected[n.Name] = n.Selected
	}
	var finished bool
	d.Compartments, d.Stopped, finished = pol.finish(d.Nodes, selected)
	if finished && (d.RequeueAfter == 0 || d.RequeueAfter > BatchPause) {
		d.RequeueAfter = BatchPause
	}
}

// sortedKeys is the set's keys in order (nil for an empty set).
func sortedKeys(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// addNode adds node n's plan to the decision with what its pass found: the drain's blocker (a
// failed drain's timeout, else what the facts say it waits for), what happened at its
// timeout, the re-gate it started, the failures and the earliest requeue.
func (d *Decision) addNode(n NodeFacts, plan NodePlan, p *nodePass) {
	msg := drainWait(n)
	if p.drainFailed() {
		msg = p.rec.Drain.Message
	}
	if msg != "" && !plan.Uncordon {
		if d.DrainBlockers == nil {
			d.DrainBlockers = map[string]string{}
		}
		d.DrainBlockers[n.Name] = msg
	}
	if p.drainTimeout != "" {
		if d.DrainTimeouts == nil {
			d.DrainTimeouts = map[string]string{}
		}
		d.DrainTimeouts[n.Name] = p.drainTimeout
	}
	if p.regated && plan.Record != nil && plan.Record.Regate != nil {
		if d.Regated == nil {
			d.Regated = map[string]string{}
		}
		d.Regated[n.Name] = "node " + n.Name + " " + plan.Record.Regate.Message()
	}
	if len(p.adopted) > 0 {
		if d.Adopted == nil {
			d.Adopted = map[string]string{}
		}
		d.Adopted[n.Name] = fmt.Sprintf("node %s: adopted from Skyhook %s, recorded complete without running a stage: %s", n.Name, p.f.AdoptFrom, strings.Join(p.adopted, ", "))
	}
	if skipped := p.adoptSkipped; len(skipped) > 0 || n.SkyhookUnreadable != "" {
		if n.SkyhookUnreadable != "" {
			skipped = []string{n.SkyhookUnreadable}
		}
		if d.AdoptSkipped == nil {
			d.AdoptSkipped = map[string]string{}
		}
		d.AdoptSkipped[n.Name] = fmt.Sprintf("node %s: not adopted from Skyhook %s, these run under Gantry: %s", n.Name, p.f.AdoptFrom, strings.Join(skipped, "; "))
	}
	if plan.DevicesWait != "" {
		if d.DeviceWaits == nil {
			d.DeviceWaits = map[string]string{}
		}
		d.DeviceWaits[n.Name] = plan.DevicesWait
	}
	d.Nodes = append(d.Nodes, plan)
	d.Failures = append(d.Failures, p.failures...)
	if p.requeue > 0 && (d.RequeueAfter == 0 || p.requeue < d.RequeueAfter) {
		d.RequeueAfter = p.requeue
	}
}

// deleteFinished says whether a deleting set is done: no node keeps a record, a cordon or a Pod.
func deleteFinished(nodes []NodePlan) bool {
	for _, np := range nodes {
		if np.Record != nil || np.Cordon || len(np.Jobs) > 0 {
			return false
		}
	}
	return true
}
