package packageset

import (
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestAggregate(t *testing.T) {
	const (
		C = v1alpha1.StatusComplete
		B = v1alpha1.StatusBlocked
		W = v1alpha1.StatusWaiting
		D = v1alpha1.StatusDisabled
		P = v1alpha1.StatusPaused
		I = v1alpha1.StatusInProgress
		E = v1alpha1.StatusErroring
		U = v1alpha1.StatusUnknown
	)
	for _, tc := range []struct {
		in   []Status
		want Status
	}{
		{nil, C}, {[]Status{C, C}, C}, {[]Status{C, I, E}, I}, {[]Status{C, E, E}, E}, {[]Status{E, W, W}, E},
		{[]Status{B, C}, B}, {[]Status{B, W}, B}, {[]Status{W, W, C}, W}, {[]Status{P, P}, P}, {[]Status{D, C}, D},
		{[]Status{U, U}, U}, {[]Status{W, P}, U}, {[]Status{I}, I},
	} {
		if got := Aggregate(tc.in); got != tc.want {
			t.Errorf("Aggregate(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for s, want := range map[State]Status{v1alpha1.StateComplete: C, v1alpha1.StateErroring: E, v1alpha1.StateInProgress: I, v1alpha1.StateSkipped: U, v1alpha1.StateUnknown: U} {
		if got := StateToStatus(s); got != want {
			t.Errorf("StateToStatus(%s) = %s, want %s", s, got, want)
		}
	}
}

// A set's first pass over a fleet writes a record only to the nodes it starts: the others
// are queued (no record, listed as Pending) until the budget reaches them.
func TestFirstPassRecordsOnlyStartedNodes(t *testing.T) {
	s := newSim(t, 20, driver("1.0.0"))
	d := s.pass()
	var recorded, queued int
	for _, np := range d.Nodes {
		switch {
		case np.Record != nil:
			recorded++
			if np.Record.Rollout == v1alpha1.RolloutPending {
				t.Errorf("node %s: a Pending record was written", np.Name)
			}
		case np.Queued:
			queued++
			if np.Status != v1alpha1.StatusWaiting || RolloutOf(np) != v1alpha1.RolloutPending {
				t.Errorf("queued node %s: status %s, rollout %s; want waiting, Pending", np.Name, np.Status, RolloutOf(np))
			}
		default:
			t.Errorf("node %s: neither recorded nor queued", np.Name)
		}
	}
	if recorded != 1 || queued != 19 {
		t.Fatalf("first pass, budget 1: %d nodes recorded, %d queued; want 1 and 19", recorded, queued)
	}
	s.run(v1alpha1.StatusComplete)
	for name, n := range s.nodes {
		if n.rec == nil || n.rec.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("node %s after the rollout: record %+v, want Converged", name, n.rec)
		}
	}
}

// List bounds the nodes a status lists, the ones needing attention first, and counts all.
func TestListBounded(t *testing.T) {
	rec := func(r v1alpha1.RolloutState) *NodeRecord { return &NodeRecord{Rollout: r} }
	plans := []NodePlan{
		{Name: "a", Status: v1alpha1.StatusComplete, Record: rec(v1alpha1.RolloutConverged)},
		{Name: "b", Status: v1alpha1.StatusComplete, Record: rec(v1alpha1.RolloutConverged)},
		{Name: "c", Status: v1alpha1.StatusWaiting, Queued: true},
		{Name: "d", Status: v1alpha1.StatusInProgress, Record: rec(v1alpha1.RolloutActivating)},
		{Name: "e", Status: v1alpha1.StatusErroring, Record: rec(v1alpha1.RolloutFailed)},
		{Name: "f"}, // not selected, no record: not listed, not counted
	}
	l := List(plans, 3)
	var got []string
	for _, np := range l.Nodes {
		got = append(got, np.Name)
	}
	if strings.Join(got, ",") != "e,d,c" || l.Omitted != 2 {
		t.Errorf("List(max 3) = %v, %d omitted; want [e d c], 2", got, l.Omitted)
	}
	if l.Status[v1alpha1.StatusComplete] != 2 || l.Status[v1alpha1.StatusWaiting] != 1 || len(l.Status) != 4 {
		t.Errorf("status counts %v", l.Status)
	}
	if l.Rollout[v1alpha1.RolloutPending] != 1 || l.Rollout[v1alpha1.RolloutConverged] != 2 || len(l.Rollout) != 4 {
		t.Errorf("rollout counts %v", l.Rollout)
	}
	if all := List(plans, 0); len(all.Nodes) != 5 || all.Omitted != 0 {
		t.Errorf("List(no bound) = %d nodes, %d omitted; want 5, 0", len(all.Nodes), all.Omitted)
	}
}

// PackagesOf: a node's recorded packages as status.nodeState lists them; a queued node (no
// record) lists none, as an empty map.
func TestPackagesOf(t *testing.T) {
	if pk := PackagesOf(NodePlan{Name: "n"}); pk == nil || len(pk) != 0 {
		t.Errorf("queued node: %#v", pk)
	}
	rec := &NodeRecord{Packages: map[string]*PackageRecord{"driver": {Version: "2.0.0", Stage: v1alpha1.StageApply, State: v1alpha1.StateInProgress, Restarts: 1, Message: "m"}}}
	want := v1alpha1.PackageStatus{Version: "2.0.0", Stage: v1alpha1.StageApply, State: v1alpha1.StateInProgress, Restarts: 1, Message: "m"}
	if pk := PackagesOf(NodePlan{Name: "n", Record: rec}); len(pk) != 1 || pk["driver"] != want {
		t.Errorf("recorded node: %#v", pk)
	}
}
