package lifecycle

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type phase string

func TestCheck(t *testing.T) {
	tbl := Table[phase]{Kind: "Test phase", Edges: Transitions[phase]{"": {"A"}, "A": {"A", "B"}}}
	for _, ok := range [][2]phase{{"", "A"}, {"A", "A"}, {"A", "B"}} {
		if err := tbl.Check(ok[0], ok[1]); err != nil {
			t.Errorf("Check(%q, %q) = %v, want nil", ok[0], ok[1], err)
		}
	}
	cases := []struct {
		tbl      Table[phase]
		from, to phase
		want     string
	}{
		{tbl, "", "B", "illegal Test phase transition (none) → B"},
		{tbl, "B", "A", "illegal Test phase transition B → A"},
		{Table[phase]{Kind: "rollout", Why: "not NixFleet's"}, "A", "B", "illegal rollout transition A → B: not NixFleet's"},
	}
	for _, c := range cases {
		err := c.tbl.Check(c.from, c.to)
		var te *TransitionError
		if !errors.As(err, &te) || te.From != string(c.from) || te.To != string(c.to) || err.Error() != c.want {
			t.Errorf("Check(%q, %q) = %v, want %q", c.from, c.to, err, c.want)
		}
	}
	noTo := &TransitionError{Kind: "stage", From: "interrupt", Why: "interrupt stage in a flow without interrupt"}
	if got, want := noTo.Error(), "illegal stage transition from interrupt: interrupt stage in a flow without interrupt"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestPhasesOf(t *testing.T) {
	p := Phases[phase]{Ready: "Running", Stalled: "Failed", Reconciling: map[string]phase{"Creating": "Creating"}}
	c := func(typ string, on bool, reason string) metav1.Condition {
		s := metav1.ConditionFalse
		if on {
			s = metav1.ConditionTrue
		}
		return metav1.Condition{Type: typ, Status: s, Reason: reason}
	}
	cases := []struct {
		conds []metav1.Condition
		want  phase
	}{
		{nil, ""},
		{[]metav1.Condition{c("Ready", true, "Ready")}, "Running"},
		{[]metav1.Condition{c("Stalled", true, "RolledBack"), c("Ready", true, "Ready")}, "Running"},
		{[]metav1.Condition{c("Ready", false, "X"), c("Stalled", true, "ImagePullBackOff")}, "Failed"},
		{[]metav1.Condition{c("Ready", false, "X"), c("Reconciling", true, "Creating")}, "Creating"},
		{[]metav1.Condition{c("Reconciling", true, "SomeoneElses")}, ""},
		{[]metav1.Condition{c("Reconciling", false, "Creating")}, ""},
	}
	for i, tc := range cases {
		if got := p.Of(tc.conds); got != tc.want {
			t.Errorf("case %d: Of = %q, want %q", i, got, tc.want)
		}
	}
}
