package wait

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// State is the outcome of evaluating one copy of an object against its Spec.
type State int

const (
	// InProgress: keep waiting.
	InProgress State = iota
	// Succeeded: observedGeneration == generation and the summary is a success value.
	Succeeded
	// ReturnedAtOnce: observedGeneration == generation and the summary is a ReturnAtOnce value.
	ReturnedAtOnce
	// Failed: the summary is a failure value or Stalled=True (for the current generation), or
	// the object is being deleted.
	Failed
)

func (s State) String() string {
	switch s {
	case InProgress:
		return "InProgress"
	case Succeeded:
		return "Succeeded"
	case ReturnedAtOnce:
		return "ReturnedAtOnce"
	case Failed:
		return "Failed"
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Verdict is what Evaluate found.
type Verdict struct {
	State State
	// Summary is the value at Spec.SummaryPath ("" when absent).
	Summary string
	// Generation is metadata.generation; ObservedGeneration is status.observedGeneration
	// (HasObservedGeneration false when absent).
	Generation            int64
	ObservedGeneration    int64
	HasObservedGeneration bool
	// Conditions are status.conditions as found.
	Conditions []metav1.Condition
	// Failing is the condition that explains a Failed verdict: Stalled=True if present, else
	// Ready=False, else the first other False condition with a message; nil when none does.
	Failing *metav1.Condition
	// Why says in a few words why the verdict is what it is (for logs and errors).
	Why string
}

// Evaluate applies the status contract to one copy of an object (no API calls). In order:
// deletion → Failed; a status about an older spec (observedGeneration behind, or for a Handshake
// kind an unanswered reconcileRequestedAt annotation; a status without lastHandledReconcileAt,
// from an older reconciler, is not held to it) → InProgress, since neither its success nor its
// failure counts; Stalled=True or a Failure summary → Failed; Success → Succeeded; ReturnAtOnce,
// or Ready=False with a ReturnAtOnceReasons reason while not Reconciling → ReturnedAtOnce; else
// InProgress.
func Evaluate(spec Spec, obj *unstructured.Unstructured) Verdict {
	v := Verdict{Generation: obj.GetGeneration()}
	v.Summary, _, _ = unstructured.NestedString(obj.Object, spec.SummaryPath...)
	v.ObservedGeneration, v.HasObservedGeneration, _ = unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	v.Conditions = Conditions(obj)

	if obj.GetDeletionTimestamp() != nil {
		v.State = Failed
		v.Why = fmt.Sprintf("%s is being deleted (deletionTimestamp %s)", spec.Kind, obj.GetDeletionTimestamp().UTC().Format("2006-01-02T15:04:05Z"))
		return v
	}
	if !v.HasObservedGeneration {
		v.State = InProgress
		v.Why = "status.observedGeneration is not set yet: the reconciler has not reported on this object"
		return v
	}
	if v.ObservedGeneration != v.Generation {
		v.State = InProgress
		v.Why = fmt.Sprintf("waiting for the reconciler to observe generation %d (observedGeneration is %d)", v.Generation, v.ObservedGeneration)
		return v
	}
	if token := obj.GetAnnotations()[v1alpha1.AnnotationReconcileRequestedAt]; spec.Handshake && token != "" {
		// A status without the field is from a reconciler older than the handshake: it would
		// never answer, so the wait goes by observedGeneration alone (as before the handshake).
		if handled, found, _ := unstructured.NestedString(obj.Object, "status", "lastHandledReconcileAt"); found && handled != token {
			v.State = InProgress
			v.Why = fmt.Sprintf("waiting for the reconciler to handle %s=%s (status.lastHandledReconcileAt is %q): the status may be about the labels before this apply",
				v1alpha1.AnnotationReconcileRequestedAt, token, handled)
			return v
		}
	}
	if c := FindCondition(v.Conditions, v1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		v.State = Failed
		v.Failing = c
		v.Why = "stalled"
		return v
	}
	if slices.Contains(spec.Failure, v.Summary) {
		v.State = Failed
		v.Failing = failingCondition(v.Conditions)
		v.Why = fmt.Sprintf("%s is %s", spec.summaryField(), v.Summary)
		return v
	}
	if slices.Contains(spec.Success, v.Summary) {
		v.State = Succeeded
		v.Why = fmt.Sprintf("%s is %s", spec.summaryField(), v.Summary)
		return v
	}
	if slices.Contains(spec.ReturnAtOnce, v.Summary) {
		v.State = ReturnedAtOnce
		v.Why = fmt.Sprintf("%s is %s", spec.summaryField(), v.Summary)
		return v
	}
	if c := FindCondition(v.Conditions, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse && slices.Contains(spec.ReturnAtOnceReasons, c.Reason) {
		if r := FindCondition(v.Conditions, v1alpha1.ConditionReconciling); r == nil || r.Status != metav1.ConditionTrue {
			v.State = ReturnedAtOnce
			v.Why = fmt.Sprintf("%s is %s (%s: %s)", spec.summaryField(), v.Summary, c.Reason, c.Message)
			return v
		}
	}
	v.State = InProgress
	if v.Summary == "" {
		v.Why = fmt.Sprintf("%s is not set", spec.summaryField())
	} else {
		v.Why = fmt.Sprintf("%s is %s, waiting for %s", spec.summaryField(), v.Summary, strings.Join(spec.Success, " or "))
	}
	return v
}

// failingCondition picks the condition that best explains a failure summary.
func failingCondition(conds []metav1.Condition) *metav1.Condition {
	if c := FindCondition(conds, v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse {
		return c
	}
	for i := range conds {
		c := &conds[i]
		if c.Status == metav1.ConditionFalse && c.Message != "" && c.Type != v1alpha1.ConditionReconciling {
			return c
		}
	}
	return nil
}

// Conditions reads status.conditions of obj. Malformed entries are skipped; it never fails.
func Conditions(obj *unstructured.Unstructured) []metav1.Condition {
	raw, found, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
	if !found || err != nil {
		return nil
	}
	out := make([]metav1.Condition, 0, len(raw))
	for _, r := range raw {
		m, ok := r.(map[string]interface{})
		if !ok {
			continue
		}
		c := metav1.Condition{}
		c.Type, _ = m["type"].(string)
		if c.Type == "" {
			continue
		}
		s, _ := m["status"].(string)
		c.Status = metav1.ConditionStatus(s)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		switch g := m["observedGeneration"].(type) {
		case int64:
			c.ObservedGeneration = g
		case float64:
			c.ObservedGeneration = int64(g)
		}
		out = append(out, c)
	}
	return out
}

// FindCondition returns the condition of type t, or nil.
func FindCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// formatCondition renders "Type=Status (Reason: message)".
func formatCondition(c metav1.Condition) string {
	s := c.Type + "=" + string(c.Status)
	switch {
	case c.Reason != "" && c.Message != "":
		s += " (" + c.Reason + ": " + c.Message + ")"
	case c.Reason != "":
		s += " (" + c.Reason + ")"
	case c.Message != "":
		s += " (" + c.Message + ")"
	}
	return s
}

func formatConditions(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return "none"
	}
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = formatCondition(c)
	}
	return strings.Join(parts, "; ")
}

// StalledWhileDeleting returns the Stalled=True condition of an object being deleted when the
// reconciler wrote it after the deletion began (status.observedGeneration and the condition's
// observedGeneration equal metadata.generation, which the API server bumps when it sets
// deletionTimestamp on an object with finalizers); nil otherwise. Such an object cannot
// finish its finalizers without a change from the user (e.g. a PackageSet whose uninstall
// fails).
func StalledWhileDeleting(obj *unstructured.Unstructured) *metav1.Condition {
	if obj == nil || obj.GetDeletionTimestamp() == nil {
		return nil
	}
	og, ok, _ := unstructured.NestedInt64(obj.Object, "status", "observedGeneration")
	if !ok || og != obj.GetGeneration() {
		return nil
	}
	c := FindCondition(Conditions(obj), v1alpha1.ConditionStalled)
	if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != obj.GetGeneration() {
		return nil
	}
	return c
}
