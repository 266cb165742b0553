package packageset

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// cond returns d's condition of type t (fails the test when missing).
func cond(t *testing.T, d Decision, typ string) metav1.Condition {
	t.Helper()
	for _, c := range d.Conditions {
		if c.Type == typ {
			return c
		}
	}
	t.Fatalf("no %s condition in %+v", typ, d.Conditions)
	return metav1.Condition{}
}

// checkKstatusShape: Stalled and Reconciling are never both True (kstatus reads the first
// True one), and want is the one that is True ("" for neither).
func checkKstatusShape(t *testing.T, d Decision, want string) {
	t.Helper()
	st, rc := cond(t, d, v1alpha1.ConditionStalled), cond(t, d, v1alpha1.ConditionReconciling)
	got := ""
	switch {
	case st.Status == metav1.ConditionTrue && rc.Status == metav1.ConditionTrue:
		t.Fatalf("Stalled and Reconciling both True: %+v", d.Conditions)
	case st.Status == metav1.ConditionTrue:
		got = v1alpha1.ConditionStalled
	case rc.Status == metav1.ConditionTrue:
		got = v1alpha1.ConditionReconciling
	}
	if got != want {
		t.Errorf("status %s: %q is True, want %q (%+v)", d.Status, got, want, d.Conditions)
	}
}

// An erroring set is Stalled (kstatus Failed) naming node, package, stage and message, and
// not Reconciling; it still retries with backoff and heals once the stage passes.
func TestErroringIsStalled(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	failing := true
	s.fail = func(j JobSpec, _ int) bool { return failing && j.Node == "node-0" && j.Stage == conf }
	d := s.run(v1alpha1.StatusErroring)
	checkKstatusShape(t, d, v1alpha1.ConditionStalled)
	if c := cond(t, d, v1alpha1.ConditionStalled); c.Reason != ReasonErroring ||
		!strings.Contains(c.Message, "node node-0 package tool stage config: BackoffLimitExceeded: Job has reached the specified backoff limit") {
		t.Errorf("Stalled %+v", c)
	}
	failing = false
	d = s.run(v1alpha1.StatusComplete)
	checkKstatusShape(t, d, "")
	if c := cond(t, d, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v", c)
	}
}

// A spec the controller finds invalid before it can read nodes (a node selector the API
// rejects): Stalled InvalidSpec with the message, no stage; a deletion still releases the
// nodes that carry records and finishes.
func TestSpecErrorStalls(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	s.run(v1alpha1.StatusComplete)
	s.facts.SpecError = `spec.nodeSelector: key: Invalid value: "bad key"`
	for _, n := range s.nodes {
		n.selected = false // the controller selects nothing with a broken selector
	}
	s.reset()
	d := s.pass()
	checkKstatusShape(t, d, v1alpha1.ConditionStalled)
	if c := cond(t, d, v1alpha1.ConditionStalled); c.Reason != ReasonInvalidSpec || c.Message != s.facts.SpecError {
		t.Errorf("Stalled %+v", c)
	}
	if len(s.ran) != 0 {
		t.Errorf("stages ran with an invalid spec: %v", s.ran)
	}
	s.facts.Deleting = true
	for i := 0; i < 20 && !d.Finished; i++ {
		d = s.pass()
		s.settle()
	}
	if !d.Finished {
		t.Fatalf("deletion with an invalid spec not finished: %+v", d)
	}
	for name, n := range s.nodes {
		if n.rec != nil {
			t.Errorf("%s keeps a record", name)
		}
	}
}

// Deleting a set whose uninstall fails: Stalled UninstallFailed naming node, package, stage
// uninstall and message, not finished; uninstallOnDelete false (KeepInstalled) then finishes
// in one pass without a stage, dropping every record and cordon.
func TestDeleteUninstallFailsThenKeepInstalled(t *testing.T) {
	s := newSim(t, 2, driver("1.0.0"))
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(2))}
	s.run(v1alpha1.StatusComplete)
	s.facts.Deleting = true
	s.fail = func(j JobSpec, _ int) bool { return j.Stage == unin && j.Node == "node-1" }
	for i := 0; i < 10; i++ {
		s.pass()
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	s.pass() // the retry
	s.settle()
	d := s.pass() // it failed again, in backoff
	if d.Finished {
		t.Fatal("finished although an uninstall fails")
	}
	checkKstatusShape(t, d, v1alpha1.ConditionStalled)
	c := cond(t, d, v1alpha1.ConditionStalled)
	if c.Reason != ReasonUninstallFailed || !strings.Contains(c.Message, "node node-1 package driver stage uninstall: BackoffLimitExceeded") ||
		!strings.Contains(c.Message, "uninstallOnDelete") {
		t.Errorf("Stalled %+v", c)
	}
	s.nodes["node-1"].cordoned = true // as if its interrupt held it
	s.facts.KeepInstalled = true
	s.reset()
	d = s.pass()
	if !d.Finished || len(s.ran) != 0 {
		t.Fatalf("keep installed: finished %v, stages %v", d.Finished, s.ran)
	}
	for name, n := range s.nodes {
		if n.rec != nil || n.cordoned {
			t.Errorf("%s keeps record %+v cordoned %v", name, n.rec, n.cordoned)
		}
	}
}

// A set whose nodes wait only for a paused earlier set says so (WaitingForPausedSet, naming
// node and set) and is not Reconciling (nothing moves until the set is resumed); waiting for
// an earlier set that is merely not complete yet is Reconciling.
func TestWaitingForPausedSet(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	s.nodes["node-1"].gate, s.nodes["node-1"].gateSet = GatePaused, "base"
	s.nodes["node-0"].gate, s.nodes["node-0"].gateSet = GatePaused, "base"
	d := s.run(v1alpha1.StatusWaiting)
	checkKstatusShape(t, d, "")
	if c := cond(t, d, v1alpha1.ConditionReady); c.Reason != ReasonWaitingForPausedSet || c.Message != "waiting for a paused package set on node-0 (by base); node-1 (by base)" {
		t.Errorf("Ready %+v", c)
	}
	if len(d.PausedBy) != 2 {
		t.Errorf("PausedBy %v", d.PausedBy)
	}
	s.nodes["node-0"].gate = GateWaiting
	d = s.run(v1alpha1.StatusWaiting)
	checkKstatusShape(t, d, v1alpha1.ConditionReconciling)
	if c := cond(t, d, v1alpha1.ConditionReady); c.Reason != ReasonWaiting || d.PausedBy != nil {
		t.Errorf("Ready %+v PausedBy %v", c, d.PausedBy)
	}
	s.nodes["node-0"].gate, s.nodes["node-1"].gate = GateOpen, GateOpen
	s.run(v1alpha1.StatusComplete)
}

// Cordon: a set uncordons only a node it cordoned; an operator's cordon survives every set's
// release, whichever set releases last.
func TestCordon(t *testing.T) {
	const a, b = v1alpha1.AnnotationCordonPrefix + "a", v1alpha1.AnnotationCordonPrefix + "b"
	type step struct {
		key           string
		take, release bool
	}
	for _, tc := range []struct {
		name          string
		unschedulable bool // before the first step
		steps         []step
		wantAnn       map[string]string // after the last step
		wantUnsched   bool
	}{
		{"take and release", false, []step{{a, true, false}, {a, false, true}}, map[string]string{}, false},
		{"take", false, []step{{a, true, false}}, map[string]string{a: "true"}, true},
		{"hand-cordoned: take", true, []step{{a, true, false}}, map[string]string{a: v1alpha1.CordonOperator}, true},
		{"hand-cordoned: take and release", true, []step{{a, true, false}, {a, false, true}}, map[string]string{}, true},
		{"two sets", false, []step{{a, true, false}, {b, true, false}, {a, false, true}}, map[string]string{b: "true"}, true},
		{"two sets, both released", false, []step{{a, true, false}, {b, true, false}, {b, false, true}, {a, false, true}}, map[string]string{}, false},
		{"hand-cordoned, two sets, first released first", true, []step{{a, true, false}, {b, true, false}, {a, false, true}, {b, false, true}}, map[string]string{}, true},
		{"hand-cordoned, two sets, last released first", true, []step{{a, true, false}, {b, true, false}, {b, false, true}, {a, false, true}}, map[string]string{}, true},
		{"hand-cordoned, handed over", true, []step{{a, true, false}, {b, true, false}, {a, false, true}}, map[string]string{b: v1alpha1.CordonOperator}, true},
		{"release without a cordon", false, []step{{a, false, true}}, map[string]string{}, false},
		{"release without a cordon, hand-cordoned", true, []step{{a, false, true}}, map[string]string{}, false},
	} {
		ann := map[string]string{"other": "x"}
		u := tc.unschedulable
		for _, st := range tc.steps {
			u = Cordon(ann, u, st.key, st.take, st.release)
		}
		delete(ann, "other")
		if u != tc.wantUnsched || len(ann) != len(tc.wantAnn) {
			t.Errorf("%s: unschedulable %v annotations %v, want %v %v", tc.name, u, ann, tc.wantUnsched, tc.wantAnn)
			continue
		}
		for k, v := range tc.wantAnn {
			if ann[k] != v {
				t.Errorf("%s: %s=%q, want %q", tc.name, k, ann[k], v)
			}
		}
	}
}

// A node cordoned by runtimeRequiredCordonAfter (AnnotationRuntimeRequiredCordon) stays
// unschedulable when a set takes and releases its own cordon for an interrupt, whatever the
// order; without the annotation the same steps uncordon it.
func TestCordonKeepsRuntimeRequiredCordon(t *testing.T) {
	const a, b = v1alpha1.AnnotationCordonPrefix + "a", v1alpha1.AnnotationCordonPrefix + "b"
	for _, keep := range []bool{true, false} {
		ann := map[string]string{}
		if keep {
			ann[v1alpha1.AnnotationRuntimeRequiredCordon] = "bring-up"
		}
		u := keep // the runtime-required cordon made it unschedulable
		u = Cordon(ann, u, a, true, false)
		u = Cordon(ann, u, b, true, false)
		u = Cordon(ann, u, a, false, true)
		u = Cordon(ann, u, b, false, true)
		if u != keep {
			t.Errorf("runtime-required cordon %v: unschedulable after both releases = %v", keep, u)
		}
		if _, held := ann[a]; held {
			t.Errorf("set a's cordon annotation left: %v", ann)
		}
	}
	// Released without holding a cordon (a set finishing on a node it never cordoned).
	ann := map[string]string{v1alpha1.AnnotationRuntimeRequiredCordon: "bring-up"}
	if !Cordon(ann, true, a, false, true) {
		t.Error("a release without a cordon uncordoned a runtime-required-cordoned node")
	}
}
