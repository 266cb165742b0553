package packageset

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// A fleet budget of 2 shared with another set that has node-0 in flight: node-0 counts once
// (it starts for this set too), node-1 takes the last slot, node-2 waits; status says which
// budget, how many in flight across which sets, and how many nodes it holds.
func TestFleetBudgetHolds(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Fleet = &FleetFacts{Name: "gpu-fleet", Max: 2, Sets: []string{"gpu-drivers", "other"}, Others: map[string][]string{"node-0": {"other"}}}
	d := s.pass()
	if len(s.nodes["node-0"].jobs) == 0 || len(s.nodes["node-1"].jobs) == 0 || len(s.nodes["node-2"].jobs) != 0 {
		t.Fatalf("jobs: node-0 %d node-1 %d node-2 %d; want node-0 and node-1 started, node-2 held",
			len(s.nodes["node-0"].jobs), len(s.nodes["node-1"].jobs), len(s.nodes["node-2"].jobs))
	}
	want := &v1alpha1.FleetBudgetStatus{Name: "gpu-fleet", MaxInFlight: 2, InFlight: 2, Sets: []string{"gpu-drivers", "other"},
		Nodes: []string{"node-0 (gpu-drivers, other)", "node-1 (gpu-drivers)"}, Waiting: 1}
	if got := d.Fleet; got == nil || got.Name != want.Name || got.MaxInFlight != want.MaxInFlight || got.InFlight != want.InFlight ||
		!slices.Equal(got.Sets, want.Sets) || !slices.Equal(got.Nodes, want.Nodes) || got.Waiting != want.Waiting {
		t.Errorf("fleet status %+v, want %+v", got, want)
	}
	msg := cond(t, d, v1alpha1.ConditionReady).Message
	if !strings.Contains(msg, "fleet budget gpu-fleet holds 1 nodes: 2/2 nodes in flight across sets gpu-drivers, other: node-0 (gpu-drivers, other); node-1 (gpu-drivers)") {
		t.Errorf("Ready message %q", msg)
	}
}

// Another set of the budget keeps a node this set does not select in flight, limit 2: this
// set never has more than one node in flight at once, and completes.
func TestFleetBudgetLimitsAcrossSets(t *testing.T) {
	s := newSim(t, 4, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Fleet = &FleetFacts{Name: "gpu-fleet", Max: 2, Sets: []string{"gpu-drivers", "other"}, Others: map[string][]string{"node-9": {"other"}}}
	most := 0
	for i := 0; i < 100; i++ {
		d := s.pass()
		most = max(most, s.inFlight())
		if d.Fleet.InFlight > 2 {
			t.Fatalf("pass %d: %d nodes in flight across the budget, limit 2", i, d.Fleet.InFlight)
		}
		if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if most != 1 {
		t.Errorf("at most %d of this set's nodes in flight at once, want 1", most)
	}
	for _, n := range s.nodeNames() {
		if s.nodes[n].rec == nil || s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("%s not converged", n)
		}
	}
}

// The pass's node facts come from a cache that has not yet seen this set's last admission
// (node-2), which the fleet budget's own read has: node-2 still counts, so under a budget of 1
// neither node-0 nor node-1 starts, and node-2 (in flight) goes on.
func TestFleetBudgetCountsOwnAdmissionTheCacheMissed(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Fleet = &FleetFacts{Name: "gpu-fleet", Max: 1, Sets: []string{"gpu-drivers", "other"}, Others: map[string][]string{}, Own: []string{"node-2"}}
	d := s.pass()
	if len(s.nodes["node-0"].jobs) != 0 || len(s.nodes["node-1"].jobs) != 0 || len(s.nodes["node-2"].jobs) == 0 {
		t.Fatalf("jobs: node-0 %d node-1 %d node-2 %d; want node-0 and node-1 held, node-2 (in flight by the budget's own read) started",
			len(s.nodes["node-0"].jobs), len(s.nodes["node-1"].jobs), len(s.nodes["node-2"].jobs))
	}
	if d.Fleet == nil || d.Fleet.InFlight != 1 || d.Fleet.Waiting != 2 || !slices.Equal(d.Fleet.Nodes, []string{"node-2 (gpu-drivers)"}) {
		t.Errorf("fleet status %+v, want node-2 in flight, 2 waiting", d.Fleet)
	}
}

func TestInFlightFor(t *testing.T) {
	for _, tc := range []struct {
		rec      *NodeRecord
		cordoned bool
		want     bool
	}{
		{nil, false, false},
		{nil, true, true},
		{&NodeRecord{Rollout: v1alpha1.RolloutConverged}, false, false},
		{&NodeRecord{Rollout: v1alpha1.RolloutSoaking}, false, true},
		{&NodeRecord{Rollout: v1alpha1.RolloutFailed}, false, true},
	} {
		if got := InFlightFor(tc.rec, tc.cordoned); got != tc.want {
			t.Errorf("InFlightFor(%+v, %v) = %v", tc.rec, tc.cordoned, got)
		}
	}
}

// FleetFactsOf: the sets naming the same budget, the lowest maxInFlight, and the nodes the
// other sets have in flight from their annotations (a set of another budget does not count).
func TestFleetFactsOf(t *testing.T) {
	set := func(name, budget string, limit int32) v1alpha1.PackageSet {
		s := v1alpha1.PackageSet{}
		s.Name = name
		if budget != "" {
			s.Spec.Rollout = &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: budget, MaxInFlight: limit}}
		}
		return s
	}
	node := func(name string, unschedulable bool, ann map[string]string) corev1.Node {
		n := corev1.Node{}
		n.Name, n.Annotations, n.Spec.Unschedulable = name, ann, unschedulable
		return n
	}
	me := set("a", "fleet", 3)
	sets := []v1alpha1.PackageSet{me, set("b", "fleet", 2), set("c", "other", 1), set("d", "", 0)}
	nodes := []corev1.Node{
		node("n1", false, map[string]string{v1alpha1.AnnotationNodeStatePrefix + "b": `{"rollout":"Soaking"}`}),
		node("n2", true, map[string]string{v1alpha1.AnnotationCordonPrefix + "b": ""}),
		node("n3", false, map[string]string{v1alpha1.AnnotationCordonPrefix + "b": "", v1alpha1.AnnotationNodeStatePrefix + "b": `{"rollout":"Converged"}`}),
		node("n4", false, map[string]string{v1alpha1.AnnotationNodeStatePrefix + "c": `{"rollout":"Activating"}`}),
		node("n5", false, map[string]string{v1alpha1.AnnotationNodeStatePrefix + "b": `not json`}),
		node("n6", false, map[string]string{v1alpha1.AnnotationNodeStatePrefix + "a": `{"rollout":"Activating"}`}),
		node("n7", false, map[string]string{v1alpha1.AnnotationNodeStatePrefix + "a": `{"rollout":"Converged"}`}),
	}
	ff := FleetFactsOf(&me, sets, nodes)
	if ff == nil || ff.Name != "fleet" || ff.Max != 2 || !slices.Equal(ff.Sets, []string{"a", "b"}) {
		t.Fatalf("fleet facts %+v", ff)
	}
	want := map[string][]string{"n1": {"b"}, "n2": {"b"}, "n5": {"b"}}
	if len(ff.Others) != len(want) {
		t.Errorf("others %v, want %v", ff.Others, want)
	}
	for n, s := range want {
		if !slices.Equal(ff.Others[n], s) {
			t.Errorf("others[%s] = %v, want %v", n, ff.Others[n], s)
		}
	}
	if !slices.Equal(ff.Own, []string{"n6"}) {
		t.Errorf("own %v, want [n6] (this set's record Activating on n6; Converged on n7 is not in flight)", ff.Own)
	}
	if FleetFactsOf(&sets[3], sets, nodes) != nil {
		t.Error("a set without a fleet budget has fleet facts")
	}
}

// maxInFlightPct (NixFleet's disruptionBudgets[].maxInFlightPct) is a percentage of the nodes
// the sets sharing the budget select together (each node once), floor, at least 1; each set's
// value resolves to a count and the lowest wins, a count against a percentage too.
func TestFleetFactsOfPercent(t *testing.T) {
	set := func(name, pool string, fb v1alpha1.FleetBudget) v1alpha1.PackageSet {
		s := v1alpha1.PackageSet{}
		s.Name = name
		s.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}
		fb.Name = "fleet"
		s.Spec.Rollout = &v1alpha1.Rollout{FleetBudget: &fb}
		return s
	}
	var nodes []corev1.Node
	for i := 0; i < 20; i++ { // 8 in pool a, 8 in pool b, 4 in pool c
		n := corev1.Node{}
		n.Name = fmt.Sprintf("n%02d", i)
		n.Labels = map[string]string{"pool": []string{"a", "b", "c"}[min(i/8, 2)]}
		nodes = append(nodes, n)
	}
	pct := func(p int32) v1alpha1.FleetBudget { return v1alpha1.FleetBudget{MaxInFlightPct: &p} }
	for _, tc := range []struct {
		name string
		sets []v1alpha1.PackageSet
		want int
	}{
		{"25% of pool a alone", []v1alpha1.PackageSet{set("x", "a", pct(25))}, 2},
		{"25% of pools a and b together", []v1alpha1.PackageSet{set("x", "a", pct(25)), set("y", "b", pct(25))}, 4},
		{"the same pool twice counts once", []v1alpha1.PackageSet{set("x", "a", pct(25)), set("y", "a", pct(50))}, 2},
		{"floor, at least 1", []v1alpha1.PackageSet{set("x", "c", pct(10))}, 1},
		{"a lower count wins", []v1alpha1.PackageSet{set("x", "a", pct(50)), set("y", "b", v1alpha1.FleetBudget{MaxInFlight: 3})}, 3},
		{"a lower percentage wins", []v1alpha1.PackageSet{set("x", "a", v1alpha1.FleetBudget{MaxInFlight: 5}), set("y", "b", pct(10))}, 1},
		{"100% of every selected node", []v1alpha1.PackageSet{set("x", "a", pct(100)), set("y", "c", pct(100))}, 12},
	} {
		ff := FleetFactsOf(&tc.sets[0], tc.sets, nodes)
		if ff == nil || ff.Max != tc.want {
			t.Errorf("%s: fleet facts %+v, want max %d", tc.name, ff, tc.want)
		}
	}
}
