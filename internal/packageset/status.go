package packageset

import (
	"sort"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// StateToStatus maps a package state to a node status (Skyhook StateToStatus):
// complete → complete, erroring → erroring, in_progress → in_progress, anything else → unknown.
func StateToStatus(s State) Status {
	switch s {
	case v1alpha1.StateComplete:
		return v1alpha1.StatusComplete
	case v1alpha1.StateErroring:
		return v1alpha1.StatusErroring
	case v1alpha1.StateInProgress:
		return v1alpha1.StatusInProgress
	}
	return v1alpha1.StatusUnknown
}

// Aggregate is the set's status from its nodes' statuses (Skyhook CollectNodeStatus, Skyhook):
// no nodes or all complete → complete; else any in_progress → in_progress; then, over the
// nodes that are not complete: any erroring → erroring; any blocked → blocked; all paused →
// paused; all disabled → disabled; all waiting → waiting; all unknown or a mix → unknown.
//
// Deviation from Skyhook, on purpose: Skyhook reports erroring (and blocked) only when *all*
// remaining nodes are; a halted rollout (one failed node, the others waiting) then reads
// "unknown" and hides the failure ( #541, #633). Here one erroring node
// makes the set erroring once nothing is in progress, so the provider fails the apply.
func Aggregate(nodes []Status) Status {
	count := map[Status]int{}
	for _, s := range nodes {
		count[s]++
	}
	remaining := len(nodes) - count[v1alpha1.StatusComplete]
	switch {
	case remaining == 0:
		return v1alpha1.StatusComplete
	case count[v1alpha1.StatusInProgress] > 0:
		return v1alpha1.StatusInProgress
	case count[v1alpha1.StatusErroring] > 0:
		return v1alpha1.StatusErroring
	case count[v1alpha1.StatusBlocked] > 0:
		return v1alpha1.StatusBlocked
	}
	for _, s := range []Status{v1alpha1.StatusPaused, v1alpha1.StatusDisabled, v1alpha1.StatusWaiting} {
		if count[s] == remaining {
			return s
		}
	}
	return v1alpha1.StatusUnknown
}

// rolloutTable is NixFleet's per-host transitions (NixFleet RFC-0005 §3), plus the ones marked
// "ours" that a declarative set needs: a spec change opens a new rollout (→ Pending), a node
// with nothing to do converges at once, and a failed stage retries with backoff under halt.
var rolloutTable = lifecycle.Table[v1alpha1.RolloutState]{Kind: "rollout", Why: "not a transition of NixFleet's host rollout states", Edges: lifecycle.Transitions[v1alpha1.RolloutState]{
	"":                         {v1alpha1.RolloutPending},
	v1alpha1.RolloutPending:    {v1alpha1.RolloutActivating, v1alpha1.RolloutConverged /* ours: nothing to do */},
	v1alpha1.RolloutActivating: {v1alpha1.RolloutSoaking, v1alpha1.RolloutFailed, v1alpha1.RolloutDeferred, v1alpha1.RolloutPending /* ours: spec changed */},
	v1alpha1.RolloutDeferred:   {v1alpha1.RolloutSoaking, v1alpha1.RolloutFailed /* ours: interrupt failed */, v1alpha1.RolloutPending /* ours */},
	v1alpha1.RolloutSoaking:    {v1alpha1.RolloutConverged, v1alpha1.RolloutFailed, v1alpha1.RolloutPending /* ours */},
	v1alpha1.RolloutConverged:  {v1alpha1.RolloutPending /* ours: spec changed */},
	v1alpha1.RolloutFailed:     {v1alpha1.RolloutReverted, v1alpha1.RolloutActivating /* ours: retry (halt) */, v1alpha1.RolloutDeferred /* ours: retry */, v1alpha1.RolloutPending /* ours */},
	v1alpha1.RolloutReverted:   {v1alpha1.RolloutPending /* NixFleet: a new version opens a new rollout */},
}}

// RolloutTransition checks from → to against NixFleet's table (to == from is always fine).
func RolloutTransition(from, to v1alpha1.RolloutState) error {
	if from == to {
		return nil
	}
	return rolloutTable.Check(from, to)
}

// InFlight reports whether a node in rollout state s uses the interruption budget: Activating,
// Deferred, Soaking, and Failed (a failed node may still hold its cordon and is retried).
func InFlight(s v1alpha1.RolloutState) bool {
	switch s {
	case v1alpha1.RolloutActivating, v1alpha1.RolloutDeferred, v1alpha1.RolloutSoaking, v1alpha1.RolloutFailed:
		return true
	}
	return false
}

// Budget resolves an interruption budget against the number of selected nodes: count as is;
// percent as max(1, floor(nodes*percent/100)) (Skyhook DeploymentPolicy ceiling); unset →
// every selected node at once (at least 1), Skyhook's default (its legacy default compartment
// is 100%).
func Budget(b *v1alpha1.InterruptionBudget, nodes int) int {
	switch {
	case b == nil:
		return max(1, nodes)
	case b.Count != nil:
		return max(1, int(*b.Count))
	case b.Percent != nil:
		return max(1, nodes*int(*b.Percent)/100)
	}
	return 1
}

func sortStrings(s []string) { sort.Strings(s) }

// MaxListedNodes bounds the nodes a PackageSet's status lists one by one (nodeStatus,
// nodeState, nodeRollout). At about 230 bytes a node, 500 nodes keep the status near 110 KiB,
// far below etcd's 1.5 MiB object limit, whatever the fleet's size (Skyhook lists every node
// and hits that limit near 7,000 nodes).
const MaxListedNodes = 500

// listOrder ranks node statuses for the bounded list: what needs attention first.
var listOrder = map[Status]int{
	v1alpha1.StatusErroring: 0, v1alpha1.StatusBlocked: 1, v1alpha1.StatusInProgress: 2,
	v1alpha1.StatusPaused: 3, v1alpha1.StatusUnknown: 4, v1alpha1.StatusWaiting: 5,
	v1alpha1.StatusDisabled: 6, v1alpha1.StatusComplete: 7,
}

// Listing is what a set's status says node by node: the listed nodes' plans (at most the limit) and
// the counts over every listable node.
type Listing struct {
	// Nodes are the listed nodes' plans: erroring, blocked, in_progress, paused, unknown,
	// waiting, disabled, then complete; by name within each status.
	Nodes []NodePlan
	// Status and Rollout count every listable node by status and by rollout state (a queued
	// node is Pending).
	Status  map[Status]int32
	Rollout map[v1alpha1.RolloutState]int32
	// Omitted is how many listable nodes Nodes leaves out.
	Omitted int
}

// List picks the nodes a set's status lists from a pass's plans: the nodes holding a record
// or queued (NodePlan.Queued), at most limit of them (limit <= 0: no bound), counted by status
// and rollout state.
func List(plans []NodePlan, limit int) Listing {
	l := Listing{Status: map[Status]int32{}, Rollout: map[v1alpha1.RolloutState]int32{}}
	for _, np := range plans {
		if np.Record == nil && !np.Queued {
			continue
		}
		l.Nodes = append(l.Nodes, np)
		l.Status[np.Status]++
		l.Rollout[RolloutOf(np)]++
	}
	if limit <= 0 || len(l.Nodes) <= limit {
		return l
	}
	sort.SliceStable(l.Nodes, func(i, j int) bool {
		a, b := l.Nodes[i], l.Nodes[j]
		if listOrder[a.Status] != listOrder[b.Status] {
			return listOrder[a.Status] < listOrder[b.Status]
		}
		return a.Name < b.Name
	})
	l.Omitted = len(l.Nodes) - limit
	l.Nodes = l.Nodes[:limit:limit]
	return l
}

// RolloutOf is a planned node's rollout state: its record's, Pending for a queued node.
func RolloutOf(np NodePlan) v1alpha1.RolloutState {
	if np.Record == nil {
		return v1alpha1.RolloutPending
	}
	return np.Record.Rollout
}

// PackagesOf is a planned node's packages as status.nodeState lists them (version, stage,
// state, restarts, message of its record; empty, not nil, for a queued node).
func PackagesOf(np NodePlan) map[string]v1alpha1.PackageStatus {
	pk := map[string]v1alpha1.PackageStatus{}
	if np.Record != nil {
		for name, p := range np.Record.Packages {
			pk[name] = v1alpha1.PackageStatus{Version: p.Version, Stage: p.Stage, State: p.State, Restarts: p.Restarts, Message: p.Message}
		}
	}
	return pk
}
