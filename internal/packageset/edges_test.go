package packageset

import (
	"slices"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestNodeEdgeCycle(t *testing.T) {
	e := func(before, after string) v1alpha1.NodeEdge { return v1alpha1.NodeEdge{Before: before, After: after} }
	for _, tc := range []struct {
		name  string
		edges []v1alpha1.NodeEdge
		want  []string
	}{
		{"none", nil, nil},
		{"a chain", []v1alpha1.NodeEdge{e("a", "b"), e("b", "c")}, nil},
		{"a diamond", []v1alpha1.NodeEdge{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d")}, nil},
		{"two nodes", []v1alpha1.NodeEdge{e("a", "b"), e("b", "a")}, []string{"a", "b", "a"}},
		{"three nodes after a tail", []v1alpha1.NodeEdge{e("x", "a"), e("a", "b"), e("b", "c"), e("c", "a")}, []string{"a", "b", "c", "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := NodeEdgeCycle(tc.edges); !slices.Equal(got, tc.want) {
				t.Errorf("NodeEdgeCycle = %v, want %v", got, tc.want)
			}
		})
	}
}

// Node edges (NixFleet's edges between hosts), budget every node, a soak: node-2 starts no
// stage before node-0 and node-1 (its before nodes) are Converged, soak included, while they
// run side by side; status names who waits for whom while node-2 waits.
func TestNodeEdgesOrderTheRollout(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Soak = 4 * BackoffMin
	s.facts.NodeEdges = []v1alpha1.NodeEdge{{Before: "node-0", After: "node-2"}, {Before: "node-1", After: "node-2"}}
	started := map[string]int{}
	converged := map[string]int{}
	for i := 0; i < 200; i++ {
		d := s.pass()
		if i == 0 {
			if !slices.Equal(d.NodeEdgeWaits, []string{"node-2 waits for node-0, node-1"}) {
				t.Errorf("pass 0: node edge waits %v", d.NodeEdgeWaits)
			}
			if c := cond(t, d, v1alpha1.ConditionReady); !strings.Contains(c.Message, "node edges: node-2 waits for node-0, node-1") {
				t.Errorf("pass 0: Ready message %q", c.Message)
			}
		}
		for _, name := range s.nodeNames() {
			n := s.nodes[name]
			if _, ok := started[name]; !ok && len(n.jobs) > 0 {
				started[name] = i
			}
			if _, ok := converged[name]; !ok && n.rec != nil && n.rec.Rollout == v1alpha1.RolloutConverged {
				converged[name] = i
			}
		}
		if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
			if len(d.NodeEdgeWaits) != 0 {
				t.Errorf("complete, node edge waits %v", d.NodeEdgeWaits)
			}
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if len(converged) != 3 {
		t.Fatalf("converged %v", converged)
	}
	if started["node-0"] != 0 || started["node-1"] != 0 {
		t.Errorf("node-0 and node-1 started at passes %d and %d, want 0 (no edge holds them)", started["node-0"], started["node-1"])
	}
	if started["node-2"] <= converged["node-0"] || started["node-2"] <= converged["node-1"] {
		t.Errorf("node-2 started at pass %d, before nodes converged at %d and %d", started["node-2"], converged["node-0"], converged["node-1"])
	}
}

// An edge to a node the set does not select is ignored; a cycle is an invalid spec.
func TestNodeEdgesIgnoredAndCycle(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.NodeEdges = []v1alpha1.NodeEdge{{Before: "elsewhere", After: "node-1"}}
	d := s.pass()
	if len(d.NodeEdgeWaits) != 0 || len(s.nodes["node-1"].jobs) == 0 {
		t.Errorf("an edge from an unselected node holds node-1: waits %v jobs %d", d.NodeEdgeWaits, len(s.nodes["node-1"].jobs))
	}

	s = newSim(t, 2, tool("1.0.0"))
	s.facts.NodeEdges = []v1alpha1.NodeEdge{{Before: "node-0", After: "node-1"}, {Before: "node-1", After: "node-0"}}
	d = s.pass()
	c := cond(t, d, v1alpha1.ConditionStalled)
	if d.Status != v1alpha1.StatusUnknown || c.Status != "True" || c.Reason != ReasonInvalidSpec ||
		!strings.Contains(c.Message, "spec.rollout.nodeEdges form a cycle, node-0 → node-1 → node-0") {
		t.Errorf("status %s, Stalled %+v", d.Status, c)
	}
	if len(s.pendingJobs()) != 0 {
		t.Errorf("jobs %v started with a cycle", s.pendingJobs())
	}
}

// An edge's reason (NixFleet's edges[].reason) is carried where the node waits: status lines
// and the Ready condition name each before node with its reason ("<before> (<reason>)"; a
// before without one stays bare), befores sorted by name.
func TestNodeEdgeReasonInWaits(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.NodeEdges = []v1alpha1.NodeEdge{
		{Before: "node-1", After: "node-2", Reason: "  database primary before its replica "},
		{Before: "node-0", After: "node-2"},
		{Before: "node-1", After: "node-2", Reason: "a second edge between the same nodes"},
	}
	d := s.pass()
	want := "node-2 waits for node-0, node-1 (database primary before its replica)"
	if !slices.Equal(d.NodeEdgeWaits, []string{want}) {
		t.Errorf("node edge waits %q, want %q", d.NodeEdgeWaits, want)
	}
	if c := cond(t, d, v1alpha1.ConditionReady); !strings.Contains(c.Message, "node edges: "+want) {
		t.Errorf("Ready message %q", c.Message)
	}
}
