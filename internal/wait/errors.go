package wait

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FailedError is returned when an object reaches a failure state (summary in Spec.Failure,
// Stalled=True, or deletion) before success.
type FailedError struct {
	Kind   string
	Target Target
	// Verdict is the evaluation that failed, with the failing condition.
	Verdict Verdict
	// Detail is Spec.Detail's text, if any.
	Detail string
	// Events are the newest Warning events of the object and the objects it owns.
	Events []Event
	// EventsErr is why events could not be read, if they could not.
	EventsErr error
}

func (e *FailedError) Error() string {
	var b strings.Builder
	if c := e.Verdict.Failing; c != nil {
		fmt.Fprintf(&b, "%s %s failed (%s): %s", e.Kind, e.Target, e.Verdict.Why, formatCondition(*c))
	} else {
		fmt.Fprintf(&b, "%s %s failed: %s", e.Kind, e.Target, e.Verdict.Why)
	}
	if e.Detail != "" {
		b.WriteString("; " + e.Detail)
	}
	writeEvents(&b, e.Events, e.EventsErr)
	return b.String()
}

// TimeoutError is returned when the context ends before the object is done. It reports the
// last state the wait saw.
type TimeoutError struct {
	Kind   string
	Target Target
	// Waited is how long the wait ran.
	Waited time.Duration
	// Want describes what the wait was waiting for, e.g. "phase Running" or "deletion".
	Want string
	// Seen is false when the object was never read (e.g. the API server was unreachable).
	Seen bool
	// Last is the last verdict (for ready waits) or the last state (for delete waits).
	Last Verdict
	// Finalizers still on the object (delete waits).
	Finalizers []string
	// LastErr is the last API error the wait retried, if any.
	LastErr error
	// Events are the newest Warning events of the object and the objects it owns.
	Events    []Event
	EventsErr error
	// Cause is the context's error (context.DeadlineExceeded or context.Canceled).
	Cause error
}

func (e *TimeoutError) Error() string {
	var b strings.Builder
	verb := "timed out"
	if e.Cause != nil && !strings.Contains(e.Cause.Error(), "deadline") {
		verb = "gave up (" + e.Cause.Error() + ")"
	}
	fmt.Fprintf(&b, "%s after %s waiting for %s %s: %s", verb, e.Waited.Round(time.Second), e.Kind, e.Target, e.Want)
	switch {
	case !e.Seen:
		b.WriteString("; the object was never read")
	default:
		summary := e.Last.Summary
		if summary == "" {
			summary = "(none)"
		}
		obs := "not set"
		if e.Last.HasObservedGeneration {
			obs = fmt.Sprint(e.Last.ObservedGeneration)
		}
		fmt.Fprintf(&b, "; last seen: summary %s, generation %d, observedGeneration %s; conditions: %s",
			summary, e.Last.Generation, obs, formatConditions(e.Last.Conditions))
		if len(e.Finalizers) > 0 {
			fmt.Fprintf(&b, "; finalizers still present: %s", strings.Join(e.Finalizers, ", "))
		}
		if !e.Last.HasObservedGeneration || len(e.Finalizers) > 0 {
			b.WriteString(" (is gantry-reconciler running against this cluster?)")
		}
	}
	if e.LastErr != nil {
		fmt.Fprintf(&b, "; last API error: %v", e.LastErr)
	}
	writeEvents(&b, e.Events, e.EventsErr)
	return b.String()
}

func (e *TimeoutError) Unwrap() error { return e.Cause }

// DeletedError is returned by a ready wait when the object disappears (or is replaced by a
// new object of the same name) while it is being waited on.
type DeletedError struct {
	Kind   string
	Target Target
}

func (e *DeletedError) Error() string {
	return fmt.Sprintf("%s %s was deleted while waiting for it to become ready", e.Kind, e.Target)
}

func writeEvents(b *strings.Builder, events []Event, err error) {
	if len(events) > 0 {
		b.WriteString("\nRecent Warning events:")
		for _, ev := range events {
			b.WriteString("\n  - " + ev.String())
		}
	}
	if err != nil {
		fmt.Fprintf(b, "\n(Warning events could not be read: %v)", err)
	}
}

// conditionsCopy keeps the verdict independent of the object it was read from.
func conditionsCopy(c []metav1.Condition) []metav1.Condition {
	return append([]metav1.Condition(nil), c...)
}
