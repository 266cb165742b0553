package packageset

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// ConvergedWaits follows NixFleet's channel-edge gate (RFC-0005 §6): a predecessor that does
// not exist or has no history is open, one converged for its generation is open, one halted,
// paused or rolling out holds, with the reason; disabled and deleting sets do not hold (as
// spec.after).
func TestConvergedWaits(t *testing.T) {
	node := func(status string, record bool) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0", Labels: map[string]string{"gpu": "true"}, Annotations: map[string]string{}}}
		if status != "" {
			n.Annotations[v1alpha1.AnnotationNodeStatusPrefix+"canary"] = status
		}
		if record {
			n.Annotations[v1alpha1.AnnotationNodeStatePrefix+"canary"] = `{"rollout":"Converged"}`
		}
		return n
	}
	done := []corev1.Node{node("complete", true)}
	pred := func(gen, observed int64, status v1alpha1.PackageSetStatusValue, edit func(*v1alpha1.PackageSet)) v1alpha1.PackageSet {
		s := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "canary", Generation: gen}}
		s.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"gpu": "true"}}
		s.Status = v1alpha1.PackageSetStatus{ObservedGeneration: observed, Status: status, CompleteNodes: "1/3"}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	me := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}}
	me.Spec.AfterConverged = []v1alpha1.ConvergedEdge{{Name: "canary", Reason: "canary first"}}
	now := metav1.Now()
	for _, tc := range []struct {
		name  string
		sets  []v1alpha1.PackageSet
		nodes []corev1.Node
		want  string // "" for open
	}{
		{"no such set", nil, done, ""},
		{"no history", []v1alpha1.PackageSet{pred(1, 0, "", nil)}, []corev1.Node{node("", false)}, ""},
		{"converged", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusComplete, nil)}, done, ""},
		{"rolling out", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusInProgress, nil)}, done, "is in_progress (1/3 nodes complete)"},
		{"waiting counts as rolling out", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusWaiting, nil)}, done, "is waiting (1/3 nodes complete)"},
		{"a new generation not yet reconciled", []v1alpha1.PackageSet{pred(3, 2, v1alpha1.StatusComplete, nil)}, done, "has not rolled out generation 3 yet"},
		{"records but no status yet", []v1alpha1.PackageSet{pred(1, 0, "", nil)}, done, "has not rolled out generation 1 yet"},
		{"halted: erroring", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusErroring, nil)}, done, "is halted: erroring (1/3 nodes complete)"},
		{"halted: Stalled", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusWaiting, func(s *v1alpha1.PackageSet) {
			s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: "VersionQuarantined", Message: "quarantined: tool@2"}}
		})}, done, "is halted: VersionQuarantined: quarantined: tool@2"},
		{"status complete, a node not yet", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusComplete, nil)}, []corev1.Node{node("in_progress", true)},
			"is not complete on every node it selects"},
		{"paused before converging", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusPaused, func(s *v1alpha1.PackageSet) { s.Spec.Paused = true })},
			[]corev1.Node{node("in_progress", true)}, "is paused"},
		{"paused once converged", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusPaused, func(s *v1alpha1.PackageSet) { s.Spec.Paused = true })}, done, ""},
		{"disabled", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusErroring, func(s *v1alpha1.PackageSet) { s.Spec.Disabled = true })}, done, ""},
		{"deleting", []v1alpha1.PackageSet{pred(2, 2, v1alpha1.StatusErroring, func(s *v1alpha1.PackageSet) { s.DeletionTimestamp = &now })}, done, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ConvergedWaits(&me, append(tc.sets, me), tc.nodes)
			var want []string
			if tc.want != "" {
				want = []string{"package set canary (canary first) " + tc.want}
			}
			if !slices.Equal(got, want) {
				t.Errorf("ConvergedWaits = %q, want %q", got, want)
			}
		})
	}
}

// A set held by afterConverged starts no node (waiting; the Ready message and
// Decision.ConvergedWaits name the set and reason), a node already in flight finishes, and once
// the predecessor converges the rollout goes on and completes.
func TestAfterConvergedHoldsNewRollout(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	d := s.pass() // node-0 starts (budget 1)
	if len(s.nodes["node-0"].jobs) == 0 || d.ConvergedWaits != nil {
		t.Fatalf("first pass: node-0 jobs %d, waits %q", len(s.nodes["node-0"].jobs), d.ConvergedWaits)
	}
	inFlight := s.nodes["node-0"].rec.Rollout
	waits := []string{"package set canary (canary first) is in_progress (1/3 nodes complete)"}
	s.facts.ConvergedWaits = waits
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(3))}
	for i := 0; i < 20; i++ {
		s.settle()
		s.now = s.now.Add(BackoffMin)
		d = s.pass()
	}
	if !InFlight(inFlight) {
		t.Fatalf("node-0 was %s after the first pass, want in flight", inFlight)
	}
	if r := s.nodes["node-0"].rec; r == nil || r.Rollout != v1alpha1.RolloutConverged {
		t.Errorf("node-0 (in flight before the hold) did not finish: %+v", r)
	}
	for _, n := range []string{"node-1", "node-2"} {
		if len(s.nodes[n].jobs) != 0 {
			t.Errorf("%s started under the afterConverged hold", n)
		}
	}
	if d.Status != v1alpha1.StatusWaiting || !slices.Equal(d.ConvergedWaits, waits) {
		t.Errorf("status %s waits %q, want waiting, %q", d.Status, d.ConvergedWaits, waits)
	}
	if msg := cond(t, d, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "after converged: package set canary (canary first) is in_progress") {
		t.Errorf("Ready message %q", msg)
	}
	s.facts.ConvergedWaits = nil
	for i := 0; i < 50 && d.Status != v1alpha1.StatusComplete; i++ {
		s.settle()
		s.now = s.now.Add(BackoffMin)
		d = s.pass()
	}
	if d.Status != v1alpha1.StatusComplete || d.ConvergedWaits != nil {
		t.Errorf("after the predecessor converged: status %s waits %q, want complete", d.Status, d.ConvergedWaits)
	}
}

// A deletion's uninstalls wait for no afterConverged set: it finishes under the hold.
func TestAfterConvergedDoesNotHoldDeletion(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(2))}
	s.run(v1alpha1.StatusComplete)
	s.facts.ConvergedWaits = []string{"package set canary is in_progress (0/1 nodes complete)"}
	s.facts.Deleting = true
	var d Decision
	for i := 0; i < 30 && !d.Finished; i++ {
		d = s.pass()
		if d.ConvergedWaits != nil {
			t.Fatalf("deleting: waits %q", d.ConvergedWaits)
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if !d.Finished {
		t.Errorf("deletion under an afterConverged hold not finished: %+v", d)
	}
}

// afterConverged edges count in the cycle check with after edges; the message says which
// kinds of edges form it.
func TestAfterCycleWithAfterConverged(t *testing.T) {
	set := func(name string, after []string, conv ...string) v1alpha1.PackageSet {
		s := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
		s.Spec.After = after
		for _, c := range conv {
			s.Spec.AfterConverged = append(s.Spec.AfterConverged, v1alpha1.ConvergedEdge{Name: c})
		}
		return s
	}
	a, b := set("a", nil, "b"), set("b", []string{"a"})
	sets := []v1alpha1.PackageSet{a, b}
	c := AfterCycle(&a, sets)
	if !slices.Equal(c, []string{"a", "b", "a"}) {
		t.Fatalf("AfterCycle = %q, want a b a", c)
	}
	if msg := AfterCycleMessage(c, &a, sets); !strings.HasPrefix(msg, "spec.after and spec.afterConverged form a cycle, a → b → a") {
		t.Errorf("message %q", msg)
	}
	x, y := set("x", []string{"y"}), set("y", []string{"x"})
	if msg := AfterCycleMessage(AfterCycle(&x, []v1alpha1.PackageSet{x, y}), &x, []v1alpha1.PackageSet{x, y}); !strings.HasPrefix(msg, "spec.after forms a cycle, x → y → x") {
		t.Errorf("after-only message %q", msg)
	}
	p, q := set("p", nil, "q"), set("q", nil)
	if AfterCycle(&p, []v1alpha1.PackageSet{p, q}) != nil {
		t.Error("a chain is not a cycle")
	}
}

// The preview lists every selected node as blocked by an afterConverged set that holds, and
// names the edge in its constraints.
func TestPreviewRollout_afterConverged(t *testing.T) {
	set := previewSet(3)
	set.Spec.AfterConverged = []v1alpha1.ConvergedEdge{{Name: "canary", Reason: "canary first"}}
	canary := previewSet(3)
	canary.Name, canary.Generation, canary.Spec.Priority = "canary", 2, 300 // later by priority: no per-node gate
	canary.Status = v1alpha1.PackageSetStatus{ObservedGeneration: 2, Status: v1alpha1.StatusInProgress, CompleteNodes: "0/2"}
	p, err := PreviewRollout(PreviewFacts{Set: set, Sets: []v1alpha1.PackageSet{*canary}, Nodes: previewNodes(2, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Blocked) != 2 || !strings.Contains(p.Blocked[0].Reason, "after converged: package set canary (canary first) is in_progress (0/2 nodes complete)") {
		t.Fatalf("blocked %+v, want both nodes held by canary", p.Blocked)
	}
	if len(p.Nodes) != 0 || p.Complete {
		t.Errorf("preview started nodes %+v under the hold", p.Nodes)
	}
	if !slices.ContainsFunc(p.Constraints, func(c string) bool {
		return c == "after package sets canary (canary first) converged (on every node they select)"
	}) {
		t.Errorf("constraints %q", p.Constraints)
	}
}

// A set that waits for another to converge overrides the priority order on shared nodes: the
// other set (later by priority) does not wait for it per node, which would deadlock both.
func TestAfterConvergedOverridesPriorityGate(t *testing.T) {
	a := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "prod"}, Spec: v1alpha1.PackageSetSpec{Priority: 100,
		AfterConverged: []v1alpha1.ConvergedEdge{{Name: "canary"}}}}
	b := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "canary"}, Spec: v1alpha1.PackageSetSpec{Priority: 200}}
	if g, by := GateOf(&b, []v1alpha1.PackageSet{a, b}, nil, map[string]string{}, nil); g != GateOpen {
		t.Errorf("GateOf(canary) = %v by %q, want open (prod waits for canary to converge)", g, by)
	}
	a.Spec.AfterConverged = nil
	if g, _ := GateOf(&b, []v1alpha1.PackageSet{a, b}, nil, map[string]string{}, nil); g != GateWaiting {
		t.Errorf("without the edge GateOf(canary) = %v, want waiting (priority)", g)
	}
}
