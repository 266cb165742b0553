// Package lifecycle is what the four lifecycle machines (internal/executor,
// internal/performer, internal/workspace, internal/packageset) share: a transition table
// with its check, the one error an illegal transition returns, and the phase lookup from
// kstatus conditions. It is pure: it imports neither client-go, controller-runtime nor the
// Terraform framework, so the machines may import it (depguard rule "machines").
package lifecycle

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// TransitionError is a change of phase or state that a machine's table does not draw. The
// machines return it from Decide (or Plan) only when the conditions or records they were
// given were not written by them (a status edited by hand); the reconciler then emits the
// Warning event IllegalTransition with Error() as its message and does not retry.
type TransitionError struct {
	// Kind names what changes, e.g. "Executor phase", "inference workspace state",
	// "rollout", "stage" or "state".
	Kind string
	// From and To are the two ends; "" reads as "(none)" in From (no status yet). An empty
	// To (a value that has no next value) leaves out the arrow.
	From, To string
	// Why, when set, says whose drawing the change is not in; it ends the message.
	Why string
}

// Error is "illegal <Kind> transition <From> → <To>[: <Why>]".
func (e *TransitionError) Error() string {
	from := e.From
	if from == "" {
		from = "(none)"
	}
	msg := fmt.Sprintf("illegal %s transition %s → %s", e.Kind, from, e.To)
	if e.To == "" {
		msg = fmt.Sprintf("illegal %s transition from %s", e.Kind, from)
	}
	if e.Why != "" {
		msg += ": " + e.Why
	}
	return msg
}

// Transitions is a transition table, From → {To}. Staying is legal only where it is listed
// (every machine's table lists it).
type Transitions[S ~string] map[S][]S

// Allows reports whether from → to is in t.
func (t Transitions[S]) Allows(from, to S) bool { return slices.Contains(t[from], to) }

// Table is a named transition table: what its TransitionError says.
type Table[S ~string] struct {
	Kind  string // TransitionError.Kind
	Why   string // TransitionError.Why; may be ""
	Edges Transitions[S]
}

// Check returns nil when from → to is an edge of t, otherwise a *TransitionError naming
// t.Kind, both ends and t.Why.
func (t Table[S]) Check(from, to S) error {
	if t.Edges.Allows(from, to) {
		return nil
	}
	return &TransitionError{Kind: t.Kind, From: string(from), To: string(to), Why: t.Why}
}

// Phases maps kstatus conditions to a machine's phase (Executor, Performer): Ready=True →
// Ready, otherwise Stalled=True → Stalled, otherwise Reconciling=True → the phase its reason
// names in Reconciling, otherwise "" (never reconciled, or conditions written by someone else).
// Ready wins over Stalled: an Executor rolled back to its last good revision is Running with
// Stalled=True keeping the failure.
type Phases[S ~string] struct {
	Ready, Stalled S
	Reconciling    map[string]S
}

// Of returns the phase conds stand for.
func (p Phases[S]) Of(conds []metav1.Condition) S {
	switch {
	case isTrue(conds, v1alpha1.ConditionReady):
		return p.Ready
	case isTrue(conds, v1alpha1.ConditionStalled):
		return p.Stalled
	}
	for _, c := range conds {
		if c.Type == v1alpha1.ConditionReconciling && c.Status == metav1.ConditionTrue {
			return p.Reconciling[c.Reason]
		}
	}
	return ""
}

func isTrue(conds []metav1.Condition, typ string) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool {
		return c.Type == typ && c.Status == metav1.ConditionTrue
	})
}
