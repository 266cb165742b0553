package packageset

import (
	"errors"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Budget: unset is every selected node (at least 1); a count as is (at least 1); a percent
// of the selected nodes rounded down (Skyhook's ceiling max(1, floor(nodes*percent/100))).
func TestBudget(t *testing.T) {
	p := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		name  string
		b     *v1alpha1.InterruptionBudget
		nodes int
		want  int
	}{
		{"unset: every selected node", nil, 5, 5},
		{"unset, no node: at least 1", nil, 0, 1},
		{"count", &v1alpha1.InterruptionBudget{Count: p(2)}, 5, 2},
		{"count above the nodes: as is", &v1alpha1.InterruptionBudget{Count: p(10)}, 3, 10},
		{"count 0 (the CRD rejects it): at least 1", &v1alpha1.InterruptionBudget{Count: p(0)}, 5, 1},
		{"percent below one node: at least 1", &v1alpha1.InterruptionBudget{Percent: p(10)}, 5, 1},
		{"percent rounds down: 50% of 5", &v1alpha1.InterruptionBudget{Percent: p(50)}, 5, 2},
		{"percent rounds down: 99% of 7", &v1alpha1.InterruptionBudget{Percent: p(99)}, 7, 6},
		{"percent exact: 10% of 1000", &v1alpha1.InterruptionBudget{Percent: p(10)}, 1000, 100},
		{"percent 100: every node", &v1alpha1.InterruptionBudget{Percent: p(100)}, 7, 7},
		{"percent, no node: at least 1", &v1alpha1.InterruptionBudget{Percent: p(100)}, 0, 1},
		{"count wins over percent (the CRD rejects both)", &v1alpha1.InterruptionBudget{Count: p(3), Percent: p(100)}, 10, 3},
		{"neither count nor percent (the CRD rejects it): 1", &v1alpha1.InterruptionBudget{}, 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Budget(tc.b, tc.nodes); got != tc.want {
				t.Errorf("Budget(%+v, %d) = %d, want %d", tc.b, tc.nodes, got, tc.want)
			}
		})
	}
}

// InFlight: the rollout states that hold a budget slot.
func TestInFlight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state v1alpha1.RolloutState
		want  bool
	}{
		{"no rollout yet", "", false},
		{"Pending: queued for a slot", v1alpha1.RolloutPending, false},
		{"Activating", v1alpha1.RolloutActivating, true},
		{"Deferred: interrupt pending", v1alpha1.RolloutDeferred, true},
		{"Soaking", v1alpha1.RolloutSoaking, true},
		{"Failed: may hold its cordon, retried", v1alpha1.RolloutFailed, true},
		{"Converged", v1alpha1.RolloutConverged, false},
		{"Reverted", v1alpha1.RolloutReverted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := InFlight(tc.state); got != tc.want {
				t.Errorf("InFlight(%q) = %v, want %v", tc.state, got, tc.want)
			}
		})
	}
}

// countSelected and rolloutCounts over the nodes of a pass: selected nodes; nodes in flight
// (their rollout state, or a cordon on a node with a record), cordoned nodes, and whether a
// node's rollout Failed (the rollout halts).
func TestRolloutCounts(t *testing.T) {
	rec := func(s v1alpha1.RolloutState) *NodeRecord { return &NodeRecord{Rollout: s} }
	for _, tc := range []struct {
		name                        string
		nodes                       []NodeFacts
		selected, inflight, cordons int
		failed                      bool
	}{
		{"no nodes", nil, 0, 0, 0, false},
		{"new nodes: nothing in flight", []NodeFacts{{Name: "a", Selected: true}, {Name: "b", Selected: true}}, 2, 0, 0, false},
		{"unselected nodes are not counted as selected", []NodeFacts{{Name: "a", Selected: true}, {Name: "b"}}, 1, 0, 0, false},
		{"Activating and Soaking in flight, Converged and Pending not",
			[]NodeFacts{{Name: "a", Selected: true, Record: rec(v1alpha1.RolloutActivating)}, {Name: "b", Selected: true, Record: rec(v1alpha1.RolloutSoaking)},
				{Name: "c", Selected: true, Record: rec(v1alpha1.RolloutConverged)}, {Name: "d", Selected: true, Record: rec(v1alpha1.RolloutPending)}}, 4, 2, 0, false},
		{"a cordoned Converged node is in flight", []NodeFacts{{Name: "a", Selected: true, Record: rec(v1alpha1.RolloutConverged), Cordoned: true}}, 1, 1, 1, false},
		{"a cordoned node without a record is cordoned, not in flight", []NodeFacts{{Name: "a", Selected: true, Cordoned: true}}, 1, 0, 1, false},
		{"cordoned and Deferred counts once", []NodeFacts{{Name: "a", Selected: true, Record: rec(v1alpha1.RolloutDeferred), Cordoned: true}}, 1, 1, 1, false},
		{"Failed: in flight and halts", []NodeFacts{{Name: "a", Selected: true, Record: rec(v1alpha1.RolloutFailed)}, {Name: "b", Selected: true}}, 2, 1, 0, true},
		{"Reverted: neither in flight nor halting", []NodeFacts{{Name: "a", Selected: true, Record: rec(v1alpha1.RolloutReverted)}}, 1, 0, 0, false},
		{"an unselected node in flight (removing its packages) still holds its slot",
			[]NodeFacts{{Name: "a", Record: rec(v1alpha1.RolloutActivating)}}, 0, 1, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countSelected(tc.nodes); got != tc.selected {
				t.Errorf("countSelected = %d, want %d", got, tc.selected)
			}
			inflight, cordoned, failed := rolloutCounts(tc.nodes)
			if inflight != tc.inflight || cordoned != tc.cordons || failed != tc.failed {
				t.Errorf("rolloutCounts = %d, %d, %v; want %d, %d, %v", inflight, cordoned, failed, tc.inflight, tc.cordons, tc.failed)
			}
		})
	}
}

// nodeHold, case by case in its order: deleting holds nothing; a spec error holds every node
// (unknown); a selected node with an untolerated taint is blocked (named for the condition);
// then disabled, paused, and the gate of earlier sets (a paused earlier set names the
// selected node for PausedBy).
func TestNodeHold(t *testing.T) {
	specErr := errors.New("bad selector")
	node := func(mod func(*NodeFacts)) NodeFacts {
		n := NodeFacts{Name: "node-0", Selected: true}
		if mod != nil {
			mod(&n)
		}
		return n
	}
	tainted := func(n *NodeFacts) { n.Blocked = "nvidia.com/gpu=present:NoSchedule" }
	waits := func(n *NodeFacts) { n.WaitFor = "example.com/driver=installing:NoSchedule" }
	for _, tc := range []struct {
		name              string
		f                 SetFacts
		n                 NodeFacts
		specErr           error
		hold              Status
		blocked, pausedBy string
		waitFor           string
	}{
		{"nothing holds", SetFacts{}, node(nil), nil, "", "", "", ""},
		{"deleting holds nothing, whatever else", SetFacts{Deleting: true, Paused: true, Disabled: true}, node(tainted), specErr, "", "", "", ""},
		{"spec error: unknown", SetFacts{}, node(nil), specErr, v1alpha1.StatusUnknown, "", "", ""},
		{"spec error before a taint", SetFacts{}, node(tainted), specErr, v1alpha1.StatusUnknown, "", "", ""},
		{"taint on a selected node: blocked", SetFacts{}, node(tainted), nil, v1alpha1.StatusBlocked, "node-0: nvidia.com/gpu=present:NoSchedule", "", ""},
		{"blocked before disabled and paused", SetFacts{Disabled: true, Paused: true}, node(tainted), nil, v1alpha1.StatusBlocked, "node-0: nvidia.com/gpu=present:NoSchedule", "", ""},
		{"taint on an unselected node: no hold", SetFacts{}, node(func(n *NodeFacts) { tainted(n); n.Selected = false }), nil, "", "", "", ""},
		{"taint on an unselected node of a paused set: paused", SetFacts{Paused: true}, node(func(n *NodeFacts) { tainted(n); n.Selected = false }), nil, v1alpha1.StatusPaused, "", "", ""},
		{"disabled", SetFacts{Disabled: true}, node(nil), nil, v1alpha1.StatusDisabled, "", "", ""},
		{"disabled before paused", SetFacts{Disabled: true, Paused: true}, node(nil), nil, v1alpha1.StatusDisabled, "", "", ""},
		{"paused", SetFacts{Paused: true}, node(nil), nil, v1alpha1.StatusPaused, "", "", ""},
		{"paused before a gate", SetFacts{Paused: true}, node(func(n *NodeFacts) { n.Gate, n.GateSet = GatePaused, "base" }), nil, v1alpha1.StatusPaused, "", "", ""},
		{"gate paused, selected: waiting, named for PausedBy", SetFacts{}, node(func(n *NodeFacts) { n.Gate, n.GateSet = GatePaused, "base" }), nil,
			v1alpha1.StatusWaiting, "", "node-0 (by base)", ""},
		{"gate paused, unselected: waiting, not named", SetFacts{}, node(func(n *NodeFacts) { n.Gate, n.GateSet, n.Selected = GatePaused, "base", false }), nil,
			v1alpha1.StatusWaiting, "", "", ""},
		{"gate waiting", SetFacts{}, node(func(n *NodeFacts) { n.Gate, n.GateSet = GateWaiting, "base" }), nil, v1alpha1.StatusWaiting, "", "", ""},
		{"gate open", SetFacts{}, node(func(n *NodeFacts) { n.Gate = GateOpen }), nil, "", "", "", ""},
		// Taints a controller removes (TaintHold's waitFor): waiting, named, never blocked.
		{"waits for a taint: waiting, named", SetFacts{}, node(waits), nil, v1alpha1.StatusWaiting, "", "", "node-0: example.com/driver=installing:NoSchedule"},
		{"waits for a taint before disabled and paused", SetFacts{Disabled: true, Paused: true}, node(waits), nil, v1alpha1.StatusWaiting, "", "", "node-0: example.com/driver=installing:NoSchedule"},
		{"blocked wins over waiting", SetFacts{}, node(func(n *NodeFacts) { tainted(n); waits(n) }), nil, v1alpha1.StatusBlocked, "node-0: nvidia.com/gpu=present:NoSchedule", "", ""},
		{"waits on an unselected node: no hold", SetFacts{}, node(func(n *NodeFacts) { waits(n); n.Selected = false }), nil, "", "", "", ""},
		{"deleting does not wait for a taint", SetFacts{Deleting: true}, node(waits), nil, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hold, blocked, waitFor, pausedBy := nodeHold(tc.f, tc.n, tc.specErr)
			if hold != tc.hold || blocked != tc.blocked || waitFor != tc.waitFor || pausedBy != tc.pausedBy {
				t.Errorf("nodeHold = %q, %q, %q, %q; want %q, %q, %q, %q", hold, blocked, waitFor, pausedBy, tc.hold, tc.blocked, tc.waitFor, tc.pausedBy)
			}
		})
	}
}

// grant: a node in flight keeps its grant (even over a shrunk budget, even when held: then it
// cannot start); another takes a free slot only when nothing holds it, it has work to do and
// the rollout is not halted.
func TestGrant(t *testing.T) {
	settledRec := &NodeRecord{Packages: map[string]*PackageRecord{"tool": {Version: "1.0.0", State: v1alpha1.StateComplete, Done: true}}}
	for _, tc := range []struct {
		name        string
		wasInFlight bool
		hold        Status
		rec         *NodeRecord // nil: a new node (tool 1.0.0 to install)
		inflight    int
		budget      int
		halted      bool
		// want
		granted     bool
		inflightOut int
		canStart    bool
	}{
		{"free slot: granted, takes it", false, "", nil, 0, 1, false, true, 1, true},
		{"last free slot", false, "", nil, 2, 3, false, true, 3, true},
		{"no free slot", false, "", nil, 1, 1, false, false, 1, false},
		{"held (waiting): no slot taken", false, v1alpha1.StatusWaiting, nil, 0, 1, false, false, 0, false},
		{"held (paused): no slot taken", false, v1alpha1.StatusPaused, nil, 0, 1, false, false, 0, false},
		{"nothing to do: no slot taken", false, "", settledRec, 0, 1, false, false, 0, false},
		{"halted: no slot taken", false, "", nil, 0, 1, true, false, 0, false},
		{"in flight keeps its grant without a slot", true, "", nil, 1, 1, false, true, 1, true},
		{"in flight over a shrunk budget", true, "", nil, 3, 1, false, true, 3, true},
		{"in flight while halted (it finishes, or rolls back)", true, "", nil, 1, 1, true, true, 1, true},
		{"in flight with nothing to do", true, "", settledRec, 1, 1, false, true, 1, true},
		{"in flight but held: granted, cannot start", true, v1alpha1.StatusPaused, nil, 1, 1, false, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := 1
			p := newNodePass(&SetFacts{Name: "s"}, NodeFacts{Name: "node-0", Selected: true, Record: tc.rec}, []Want{tool("1.0.0")}, &slots, map[string]bool{})
			p.hold = tc.hold
			inflight := tc.inflight
			p.grant(tc.wasInFlight, &inflight, tc.budget, tc.halted)
			if p.granted != tc.granted || inflight != tc.inflightOut || p.canStart() != tc.canStart {
				t.Errorf("granted %v, inflight %d, canStart %v; want %v, %d, %v", p.granted, inflight, p.canStart(), tc.granted, tc.inflightOut, tc.canStart)
			}
		})
	}
}

// Holds: blocked, disabled, paused, waiting.
func TestHolds(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	s.nodes["node-1"].blocked = "nvidia.com/gpu=present:NoSchedule"
	s.facts.Budget = &v1alpha1.InterruptionBudget{Percent: ptr(int32(100))}
	d := s.run(v1alpha1.StatusBlocked)
	if d.Conditions[2].Status != "True" || !strings.Contains(d.Conditions[3].Message, "node-1: nvidia.com/gpu") || d.CompleteNodes != "1/2" {
		t.Errorf("blocked conditions %+v complete %s", d.Conditions, d.CompleteNodes)
	}
	s.nodes["node-1"].blocked = ""
	s.nodes["node-1"].gate = GateWaiting
	if d = s.run(v1alpha1.StatusWaiting); s.ran["node-1"] != nil {
		t.Error("waiting node ran stages")
	}
	s.nodes["node-1"].gate = GateOpen
	s.facts.Paused = true
	if d = s.run(v1alpha1.StatusPaused); s.ran["node-1"] != nil {
		t.Error("paused set ran stages")
	}
	s.facts.Paused, s.facts.Disabled = false, true
	s.run(v1alpha1.StatusDisabled)
	s.facts.Disabled = false
	s.run(v1alpha1.StatusComplete)
}
