package wait

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// newPerformer returns a Performer object without status.
func newPerformer(ns, name string, generation int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "gantry.dev/v1alpha1",
		"kind":       "Performer",
		"metadata":   map[string]interface{}{"name": name, "namespace": ns, "generation": generation, "uid": "uid-" + name},
		"spec":       map[string]interface{}{"image": "ghcr.io/acme/performer:1"},
	}}
	return u
}

func cond(t, s, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(s), Reason: reason, Message: msg}
}

// setStatus sets status.phase, status.observedGeneration (omitted when < 0) and conditions.
func setStatus(u *unstructured.Unstructured, phase string, observed int64, conds ...metav1.Condition) *unstructured.Unstructured {
	st := map[string]interface{}{}
	if phase != "" {
		st["phase"] = phase
	}
	if observed >= 0 {
		st["observedGeneration"] = observed
	}
	var cs []interface{}
	for _, c := range conds {
		cs = append(cs, map[string]interface{}{
			"type": c.Type, "status": string(c.Status), "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": "2026-01-01T00:00:00Z",
		})
	}
	if cs != nil {
		st["conditions"] = cs
	}
	u.Object["status"] = st
	return u
}

const unschedulable = "0/7 nodes are available: 4 Insufficient nvidia.com/gpu, 3 node(s) didn't match Pod's node affinity/selector."

// packageSetSpec is a PackageSet-like spec (status.status, return-at-once values), to check the
// engine is not Performer-specific.
var packageSetSpec = Spec{
	Kind:         "PackageSet",
	GVR:          schema.GroupVersionResource{Group: "gantry.dev", Version: "v1alpha1", Resource: "packagesets"},
	SummaryPath:  []string{"status", "status"},
	Success:      []string{"complete"},
	Failure:      []string{"erroring", "blocked"},
	ReturnAtOnce: []string{"paused", "disabled"},
}

func TestEvaluate(t *testing.T) {
	deleting := newPerformer("ns", "d", 1)
	now := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	deleting.SetDeletionTimestamp(&now)
	setStatus(deleting, "Running", 1, cond("Ready", "True", "Running", ""))

	ps := func(summary string, observed int64, conds ...metav1.Condition) *unstructured.Unstructured {
		u := newPerformer("", "ps", 3)
		u.Object["status"] = map[string]interface{}{"status": summary, "observedGeneration": observed}
		if len(conds) > 0 {
			setStatus(u, "", observed, conds...)
			u.Object["status"].(map[string]interface{})["status"] = summary
		}
		return u
	}

	// handshake: a Performer whose gantry.dev/reconcileRequestedAt is token and whose status
	// answers handled ("": the field empty; "-": no field).
	handshake := func(token, handled, phase string, conds ...metav1.Condition) *unstructured.Unstructured {
		u := setStatus(newPerformer("ns", "h", 1), phase, 1, conds...)
		u.SetAnnotations(map[string]string{"gantry.dev/reconcileRequestedAt": token})
		if handled != "-" { // "-": a reconciler older than the handshake writes no field
			u.Object["status"].(map[string]interface{})["lastHandledReconcileAt"] = handled
		}
		return u
	}
	running, stalled := cond("Ready", "True", "Running", ""), cond("Stalled", "True", "Unschedulable", unschedulable)

	cases := []struct {
		name        string
		spec        Spec
		obj         *unstructured.Unstructured
		want        State
		wantFailing string // condition type
		wantWhy     string
		kstatus     status.Status // "" = don't check
	}{
		{name: "no status", spec: Performer, obj: newPerformer("ns", "a", 1), want: InProgress, wantWhy: "not set yet"},
		{name: "old generation running", spec: Performer, obj: setStatus(newPerformer("ns", "a", 2), "Running", 1, cond("Ready", "True", "Running", "")), want: InProgress, wantWhy: "observe generation 2", kstatus: status.InProgressStatus},
		{name: "old generation failed does not fail", spec: Performer, obj: setStatus(newPerformer("ns", "a", 2), "Failed", 1, cond("Stalled", "True", "Unschedulable", unschedulable)), want: InProgress},
		{name: "scheduling", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Scheduling", 1, cond("Ready", "False", "Scheduling", ""), cond("Reconciling", "True", "Scheduling", "")), want: InProgress, wantWhy: "waiting for Running", kstatus: status.InProgressStatus},
		{name: "running", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Running", 1, cond("Ready", "True", "Running", "")), want: Succeeded, kstatus: status.CurrentStatus},
		{name: "failed names Stalled", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Failed", 1, cond("Ready", "False", "Unschedulable", unschedulable), cond("Stalled", "True", "Unschedulable", unschedulable)), want: Failed, wantFailing: "Stalled", kstatus: status.FailedStatus},
		{name: "failed names Ready=False", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Failed", 1, cond("Ready", "False", "ImagePullBackOff", "Back-off pulling image")), want: Failed, wantFailing: "Ready"},
		{name: "failed other condition", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Failed", 1, cond("Scheduled", "False", "Unschedulable", unschedulable)), want: Failed, wantFailing: "Scheduled"},
		{name: "stalled with non-failure phase", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Scheduling", 1, cond("Stalled", "True", "Unschedulable", unschedulable)), want: Failed, wantFailing: "Stalled", kstatus: status.FailedStatus},
		{name: "stalled false", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Running", 1, cond("Ready", "True", "Running", ""), cond("Stalled", "False", "Running", "")), want: Succeeded, kstatus: status.CurrentStatus},
		{name: "being deleted", spec: Performer, obj: deleting, want: Failed, wantWhy: "being deleted", kstatus: status.TerminatingStatus},
		{name: "unknown summary", spec: Performer, obj: setStatus(newPerformer("ns", "a", 1), "Upgrading", 1), want: InProgress},
		{name: "labels not handled yet: Running does not count", spec: Performer, obj: handshake("t2", "t1", "Running", running), want: InProgress, wantWhy: "reconcileRequestedAt=t2"},
		{name: "labels not handled yet: Stalled does not count", spec: Performer, obj: handshake("t2", "", "Failed", stalled), want: InProgress, wantWhy: `lastHandledReconcileAt is ""`},
		{name: "a reconciler older than the handshake: observedGeneration alone", spec: Performer, obj: handshake("t2", "-", "Running", running), want: Succeeded},
		{name: "labels handled: Running", spec: Performer, obj: handshake("t2", "t2", "Running", running), want: Succeeded},
		{name: "labels handled: Stalled fails", spec: Performer, obj: handshake("t2", "t2", "Failed", stalled), want: Failed, wantFailing: "Stalled"},
		{name: "no handshake for a kind without it", spec: packageSetSpec, obj: func() *unstructured.Unstructured {
			u := ps("complete", 3)
			u.SetAnnotations(map[string]string{"gantry.dev/reconcileRequestedAt": "t"})
			return u
		}(), want: Succeeded},
		{name: "packageset complete", spec: packageSetSpec, obj: ps("complete", 3), want: Succeeded},
		{name: "packageset paused returns at once", spec: packageSetSpec, obj: ps("paused", 3), want: ReturnedAtOnce},
		{name: "packageset erroring", spec: packageSetSpec, obj: ps("erroring", 3, cond("Ready", "False", "StageFailed", "apply failed on node-1")), want: Failed, wantFailing: "Ready"},
		{name: "packageset in progress", spec: packageSetSpec, obj: ps("in_progress", 3), want: InProgress},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Evaluate(tc.spec, tc.obj)
			if v.State != tc.want {
				t.Fatalf("state = %v (%s), want %v", v.State, v.Why, tc.want)
			}
			if tc.wantFailing != "" && (v.Failing == nil || v.Failing.Type != tc.wantFailing) {
				t.Errorf("failing = %+v, want %s", v.Failing, tc.wantFailing)
			}
			if tc.wantWhy != "" && !strings.Contains(v.Why, tc.wantWhy) {
				t.Errorf("why = %q, want it to contain %q", v.Why, tc.wantWhy)
			}
			if tc.kstatus != "" {
				got, msg, err := KStatus(tc.obj)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.kstatus {
					t.Errorf("kstatus = %s (%s), want %s", got, msg, tc.kstatus)
				}
			}
		})
	}
}

func TestFailedErrorMessage(t *testing.T) {
	c := cond("Stalled", "True", "Unschedulable", unschedulable)
	e := &FailedError{
		Kind:    "Performer",
		Target:  Target{Namespace: "ns", Name: "big"},
		Verdict: Verdict{State: Failed, Summary: "Failed", Why: "status.phase is Failed", Failing: &c},
		Events:  []Event{{Object: ObjectRef{Kind: "Pod", Name: "performer-big"}, Reason: "FailedScheduling", Message: unschedulable, Count: 3}},
	}
	got := e.Error()
	for _, want := range []string{"Performer ns/big failed", "Stalled=True (Unschedulable: 0/7 nodes are available: 4 Insufficient nvidia.com/gpu", "Pod/performer-big FailedScheduling (x3)"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
}

func TestTimeoutErrorMessage(t *testing.T) {
	e := &TimeoutError{
		Kind: "Performer", Target: Target{Namespace: "ns", Name: "slow"}, Waited: 90 * time.Second, Want: "status.phase Running",
		Seen: true, Last: Verdict{Summary: "Scheduling", Generation: 2, ObservedGeneration: 2, HasObservedGeneration: true,
			Conditions: []metav1.Condition{cond("Ready", "False", "Scheduling", "waiting for a node")}},
	}
	got := e.Error()
	for _, want := range []string{"timed out after 1m30s", "summary Scheduling", "observedGeneration 2", "Ready=False (Scheduling: waiting for a node)"} {
		if !strings.Contains(got, want) {
			t.Errorf("message %q lacks %q", got, want)
		}
	}
	e = &TimeoutError{Kind: "Performer", Target: Target{Namespace: "ns", Name: "x"}, Want: "gone", Seen: true, Last: Verdict{Generation: 1}, Finalizers: []string{"gantry.dev/finalizer"}}
	if got := e.Error(); !strings.Contains(got, "finalizers still present: gantry.dev/finalizer") || !strings.Contains(got, "gantry-reconciler running") {
		t.Errorf("delete timeout message: %q", got)
	}
}
