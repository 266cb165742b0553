package packageset

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// rackNodes are n nodes labelled rack=a (the first half, rounded up) or rack=b, named n0..;
// ann adds annotations per node name.
func rackNodes(n int, ann map[string]map[string]string) []corev1.Node {
	var out []corev1.Node
	for i := 0; i < n; i++ {
		name, rack := fmt.Sprintf("n%d", i), "a"
		if i >= (n+1)/2 {
			rack = "b"
		}
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"rack": rack}, Annotations: ann[name]}})
	}
	return out
}

// budgetSet is a set selecting every node, naming fleet budget "fleet" with fb's limit and
// nodeSelector rack=<rack> ("" for none).
func budgetSet(name, rack string, fb v1alpha1.FleetBudget) v1alpha1.PackageSet {
	s := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	fb.Name = "fleet"
	if rack != "" {
		fb.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rack": rack}}
	}
	s.Spec.Rollout = &v1alpha1.Rollout{FleetBudget: &fb}
	return s
}

// A budget with a nodeSelector (NixFleet's disruptionBudgets[].selector) counts only the nodes
// it matches: another set's nodes in flight outside rack a are not in Others, the selector is
// in the facts and Members names rack a's nodes.
func TestFleetFactsOfSelector(t *testing.T) {
	activating := func(set string) map[string]string {
		return map[string]string{v1alpha1.AnnotationNodeStatePrefix + set: `{"rollout":"Activating"}`}
	}
	nodes := rackNodes(6, map[string]map[string]string{"n1": activating("b"), "n4": activating("b"), "n5": activating("a")})
	a, b := budgetSet("a", "a", v1alpha1.FleetBudget{MaxInFlight: 1}), budgetSet("b", "a", v1alpha1.FleetBudget{MaxInFlight: 1})
	ff := FleetFactsOf(&a, []v1alpha1.PackageSet{a, b}, nodes)
	if ff == nil || ff.Max != 1 || ff.Selector != "rack=a" {
		t.Fatalf("fleet facts %+v, want max 1, selector rack=a", ff)
	}
	if len(ff.Others) != 1 || !slices.Equal(ff.Others["n1"], []string{"b"}) {
		t.Errorf("others %v, want only n1 (b's n4 is in rack b)", ff.Others)
	}
	if len(ff.Own) != 0 {
		t.Errorf("own %v, want none (a's n5 is in rack b)", ff.Own)
	}
	for _, n := range []string{"n0", "n1", "n2"} {
		if !ff.counts(n) {
			t.Errorf("%s (rack a) not counted", n)
		}
	}
	for _, n := range []string{"n3", "n4", "n5"} {
		if ff.counts(n) {
			t.Errorf("%s (rack b) counted", n)
		}
	}
	// Without a selector every node counts.
	c := budgetSet("c", "", v1alpha1.FleetBudget{MaxInFlight: 5})
	if ff := FleetFactsOf(&c, []v1alpha1.PackageSet{c}, nodes); ff.Members != nil || ff.Selector != "" || !ff.counts("n5") {
		t.Errorf("no selector: facts %+v, want every node counted", ff)
	}
}

// The rule in force when the sets of a budget disagree: the lowest limit with its set's
// selector, the same from every set; a tie goes to the set first by name; maxInFlightPct is a
// percentage of the nodes the sets select that the rule's selector matches; a rule whose
// selector does not parse is left out (its own set is an invalid spec: SpecFacts).
func TestFleetRuleAcrossSets(t *testing.T) {
	nodes := rackNodes(8, nil) // rack a: n0-n3, rack b: n4-n7
	pct := func(p int32) v1alpha1.FleetBudget { return v1alpha1.FleetBudget{MaxInFlightPct: &p} }
	bad := budgetSet("a", "", v1alpha1.FleetBudget{MaxInFlight: 1})
	bad.Spec.Rollout.FleetBudget.NodeSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "rack", Operator: "In"}}}
	for _, tc := range []struct {
		name    string
		sets    []v1alpha1.PackageSet
		max     int
		sel     string
		members []string
	}{
		{"the lower limit brings its selector", []v1alpha1.PackageSet{budgetSet("a", "a", v1alpha1.FleetBudget{MaxInFlight: 2}),
			budgetSet("b", "b", v1alpha1.FleetBudget{MaxInFlight: 1})}, 1, "rack=b", []string{"n4", "n5", "n6", "n7"}},
		{"a tie goes to the set first by name", []v1alpha1.PackageSet{budgetSet("b", "b", v1alpha1.FleetBudget{MaxInFlight: 1}),
			budgetSet("a", "a", v1alpha1.FleetBudget{MaxInFlight: 1})}, 1, "rack=a", []string{"n0", "n1", "n2", "n3"}},
		{"a percentage of the matching nodes", []v1alpha1.PackageSet{budgetSet("a", "a", pct(50))}, 2, "rack=a", []string{"n0", "n1", "n2", "n3"}},
		{"a selector beats no selector by its lower percentage", []v1alpha1.PackageSet{budgetSet("a", "", pct(50)), budgetSet("b", "b", pct(50))},
			2, "rack=b", []string{"n4", "n5", "n6", "n7"}},
		{"an unparsable rule is left out", []v1alpha1.PackageSet{bad, budgetSet("b", "b", v1alpha1.FleetBudget{MaxInFlight: 3})}, 3, "rack=b",
			[]string{"n4", "n5", "n6", "n7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range tc.sets {
				ff := FleetFactsOf(&tc.sets[i], tc.sets, nodes)
				if ff == nil || ff.Max != tc.max || ff.Selector != tc.sel || !slices.Equal(sortedKeys(ff.Members), tc.members) {
					t.Errorf("from %s: facts %+v, want max %d selector %q members %v", tc.sets[i].Name, ff, tc.max, tc.sel, tc.members)
				}
			}
		})
	}
	f := SetFacts{}
	SpecFacts(&bad, &f)
	if !strings.HasPrefix(f.SpecError, "spec.rollout.fleetBudget.nodeSelector: ") {
		t.Errorf("spec error %q, want the fleet budget nodeSelector's", f.SpecError)
	}
}

// Under a rack-a budget of 1 that another set fills with node-0: node-0 (shared) starts,
// node-1 (rack a) is held, node-2 and node-3 (outside the selector) are not limited by the
// budget; status and the Ready message name the selector.
func TestFleetBudgetSelectorHoldsOnlyMatchingNodes(t *testing.T) {
	s := newSim(t, 4, tool("1.0.0"))
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(4))}
	s.facts.Fleet = &FleetFacts{Name: "rack-a", Max: 1, Sets: []string{"gpu-drivers", "other"}, Others: map[string][]string{"node-0": {"other"}},
		Members: map[string]bool{"node-0": true, "node-1": true}, Selector: "rack=a"}
	d := s.pass()
	for n, started := range map[string]bool{"node-0": true, "node-1": false, "node-2": true, "node-3": true} {
		if got := len(s.nodes[n].jobs) > 0; got != started {
			t.Errorf("%s started %v, want %v", n, got, started)
		}
	}
	if d.Fleet == nil || d.Fleet.InFlight != 1 || d.Fleet.Waiting != 1 || d.Fleet.NodeSelector != "rack=a" ||
		!slices.Equal(d.Fleet.Nodes, []string{"node-0 (gpu-drivers, other)"}) {
		t.Errorf("fleet status %+v, want node-0 alone in flight, 1 waiting, selector rack=a", d.Fleet)
	}
	if msg := cond(t, d, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "fleet budget rack-a (nodes rack=a) holds 1 nodes: 1/1 nodes in flight") {
		t.Errorf("Ready message %q", msg)
	}
	// The rollout finishes: rack a one node at a time.
	for i := 0; i < 100; i++ {
		s.settle()
		s.now = s.now.Add(BackoffMin)
		s.facts.Fleet.Others = map[string][]string{}
		if d = s.pass(); d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
			break
		}
		if d.Fleet.InFlight > 1 {
			t.Fatalf("pass %d: %d rack-a nodes in flight, limit 1", i, d.Fleet.InFlight)
		}
	}
	if d.Status != v1alpha1.StatusComplete {
		t.Errorf("status %s, want complete", d.Status)
	}
}

// The preview shows a node the budget's selector matches as blocked by the full budget, and
// not one outside it; the constraints name the selector.
func TestPreviewRollout_fleetBudgetSelector(t *testing.T) {
	set := previewSet(3)
	set.Spec.Rollout = &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: "gpu", MaxInFlight: 1,
		NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"rack": "a"}}}}
	other := previewSet(3)
	other.Name, other.Spec.Rollout = "firmware", set.Spec.Rollout.DeepCopy()
	other.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"pool": "b"}}
	nodes := append(previewNodes(2, func(i int) map[string]string { return map[string]string{"rack": []string{"a", "b"}[i]} }),
		corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b-0", Labels: map[string]string{"pool": "b", "rack": "a"},
			Annotations: map[string]string{v1alpha1.AnnotationNodeStatePrefix + "firmware": `{"rollout":"Activating","since":"2026-01-01T00:00:00Z","flows":1}`}}})
	p, err := PreviewRollout(PreviewFacts{Set: set, Sets: []v1alpha1.PackageSet{*other}, Nodes: nodes, Now: time.Unix(1_700_000_000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Blocked) != 1 || p.Blocked[0].Node != "gpu-00" || !strings.Contains(p.Blocked[0].Reason, "fleet budget gpu (nodes rack=a) is full: 1/1") {
		t.Fatalf("blocked %+v, want gpu-00 alone, by the rack-a budget", p.Blocked)
	}
	if !slices.ContainsFunc(p.Constraints, func(c string) bool {
		return strings.Contains(c, "fleet budget gpu (nodes rack=a): at most 1 nodes in flight")
	}) {
		t.Errorf("constraints %q lack the budget's selector", p.Constraints)
	}
}
