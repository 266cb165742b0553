package failure

import (
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestProblems(t *testing.T) {
	refs := []Ref{
		{Kind: "Secret", Namespace: "ns", Name: "gone", Keys: []string{"a"}},
		{Kind: "Secret", Namespace: "ns", Name: "keys", Keys: []string{"ecdsa", "bls"}, Exists: true, HasKey: map[string]bool{"ecdsa": true}},
		{Kind: "ConfigMap", Namespace: "ns", Name: "cfg", Exists: true},
		{Kind: "ConfigMap", Namespace: "ns", Name: "nocfg"},
	}
	want := []string{"Secret ns/gone not found", "Secret ns/keys has no key bls", "ConfigMap ns/nocfg not found"}
	if got := Problems(refs); !reflect.DeepEqual(got, want) {
		t.Fatalf("Problems = %q, want %q", got, want)
	}
	if got := Problems([]Ref{{Kind: "Secret", Name: "x", Exists: true, Keys: []string{"k"}, HasKey: map[string]bool{"k": true}}}); got != nil {
		t.Fatalf("Problems = %q, want none", got)
	}
}

func TestRejection(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := &Rejection{Action: "CreatePod", Kind: "Pod", Name: "ns/performer-x", Reason: "Forbidden", Message: `pods "performer-x" is forbidden: x`, RetryAt: t0.Add(5 * time.Second)}
	if got, want := r.ConditionMessage(), `creating Pod ns/performer-x was rejected (Forbidden): pods "performer-x" is forbidden: x`; got != want {
		t.Errorf("ConditionMessage = %q, want %q", got, want)
	}
	for _, c := range []struct {
		now  time.Time
		hold bool
		wait time.Duration
	}{{t0, true, 5 * time.Second}, {t0.Add(5 * time.Second), false, 0}, {t0.Add(time.Minute), false, 0}} {
		if r.Holds(c.now) != c.hold || r.Wait(c.now) != c.wait {
			t.Errorf("at %v: holds %v wait %v, want %v %v", c.now, r.Holds(c.now), r.Wait(c.now), c.hold, c.wait)
		}
	}
	var none *Rejection
	if none.Holds(t0) || none.Wait(t0) != 0 {
		t.Error("a nil rejection holds")
	}
	if got := Without([]string{"A", "B", "A"}, "A"); !reflect.DeepEqual(got, []string{"B"}) {
		t.Errorf("Without = %v", got)
	}
	if got := Without([]string{"A"}, "A"); got != nil {
		t.Errorf("Without = %v, want nil", got)
	}
}

func TestBackoff(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stalled := func(since time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: "Stalled", Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-since))}}
	}
	for _, c := range []struct {
		conds []metav1.Condition
		want  time.Duration
	}{
		{nil, 5 * time.Second},
		{stalled(time.Second), 5 * time.Second},
		{stalled(40 * time.Second), 40 * time.Second},
		{stalled(time.Hour), 5 * time.Minute},
		{[]metav1.Condition{{Type: "Stalled", Status: metav1.ConditionFalse, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}, 5 * time.Second},
	} {
		if got := Backoff(c.conds, "Stalled", t0, 5*time.Second, 5*time.Minute); got != c.want {
			t.Errorf("Backoff(%v) = %v, want %v", c.conds, got, c.want)
		}
	}
}

func TestJobOutcome(t *testing.T) {
	job := func(conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{Status: batchv1.JobStatus{Conditions: conds}}
	}
	type out struct {
		complete, failed bool
		reason, message  string
	}
	for name, c := range map[string]struct {
		j    *batchv1.Job
		want out
	}{
		"running":  {job(), out{}},
		"complete": {job(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}), out{complete: true}},
		"failed": {job(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}),
			out{failed: true, reason: "BackoffLimitExceeded", message: "Job has reached the specified backoff limit"}},
		"failure target only": {job(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}, batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionFalse}), out{}},
	} {
		var got out
		got.complete, got.failed, got.reason, got.message = JobOutcome(c.j)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", name, got, c.want)
		}
	}
}

func TestPodOutcome(t *testing.T) {
	now := time.Unix(1000, 0)
	deadline := int64(60)
	pod := func(phase corev1.PodPhase, created time.Time, mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline}, Status: corev1.PodStatus{Phase: phase}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	type out struct {
		succeeded, failed, stop bool
		reason, message         string
	}
	recent := now.Add(-time.Second)
	for name, c := range map[string]struct {
		p    *corev1.Pod
		want out
	}{
		"pending":          {pod(corev1.PodPending, recent, nil), out{}},
		"running":          {pod(corev1.PodRunning, recent, nil), out{}},
		"succeeded":        {pod(corev1.PodSucceeded, now.Add(-time.Hour), nil), out{succeeded: true}},
		"container failed": {pod(corev1.PodFailed, recent, nil), out{failed: true, reason: ReasonPodFailed}},
		"kubelet deadline": {pod(corev1.PodFailed, recent, func(p *corev1.Pod) {
			p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		}), out{failed: true, reason: "DeadlineExceeded", message: "Pod was active on the node longer than the specified deadline"}},
		"past the deadline, still running": {pod(corev1.PodRunning, now.Add(-61*time.Second), nil),
			out{failed: true, stop: true, reason: ReasonDeadlineExceeded, message: "Pod was active on the node longer than the specified deadline (60s)"}},
		"at the deadline": {pod(corev1.PodRunning, now.Add(-60*time.Second), nil), out{}},
		"deleted while running": {pod(corev1.PodRunning, recent, func(p *corev1.Pod) { t := metav1.NewTime(now); p.DeletionTimestamp = &t }),
			out{failed: true, reason: ReasonPodDeleted, message: "the pod was deleted before it finished"}},
		"succeeded while deleted": {pod(corev1.PodSucceeded, recent, func(p *corev1.Pod) { t := metav1.NewTime(now); p.DeletionTimestamp = &t }),
			out{succeeded: true}},
	} {
		var got out
		got.succeeded, got.failed, got.stop, got.reason, got.message = PodOutcome(c.p, now)
		if got != c.want {
			t.Errorf("%s: %+v, want %+v", name, got, c.want)
		}
	}
}

func TestKStatus(t *testing.T) {
	// The types are v1alpha1's (not imported by this package: it imports only k8s.io types).
	if got := KStatus(true, false, "R", "m", 1); got[0].Type != v1alpha1.ConditionReady || got[1].Type != v1alpha1.ConditionReconciling || got[2].Type != v1alpha1.ConditionStalled {
		t.Fatalf("types %s %s %s", got[0].Type, got[1].Type, got[2].Type)
	}
	status := func(c []metav1.Condition) string {
		var s string
		for _, x := range c {
			s += x.Type + "=" + string(x.Status) + " "
		}
		return s
	}
	for _, c := range []struct {
		ready, stalled bool
		want           string
	}{
		{true, false, "Ready=True Reconciling=False Stalled=False "},
		{false, false, "Ready=False Reconciling=True Stalled=False "},
		{false, true, "Ready=False Reconciling=False Stalled=True "},
		{true, true, "Ready=True Reconciling=False Stalled=True "},
	} {
		got := KStatus(c.ready, c.stalled, "R", "m", 3)
		if status(got) != c.want {
			t.Errorf("KStatus(%v, %v) = %s, want %s", c.ready, c.stalled, status(got), c.want)
		}
		for _, x := range got {
			if x.Reason != "R" || x.Message != "m" || x.ObservedGeneration != 3 {
				t.Errorf("condition %+v", x)
			}
		}
	}
}

func TestLastLine(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"container failed", "container failed"},
		{"installing\nstep 2\napply: failing on purpose (GANTRY_FAIL_STAGE=apply)\n", "apply: failing on purpose (GANTRY_FAIL_STAGE=apply)"},
		{"a\n\n  b  \n\n", "b"},
		{strings.Repeat("x", 400), strings.Repeat("x", 300) + "…"},
	} {
		if got := LastLine(c.in); got != c.want {
			t.Errorf("LastLine(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// WaitsForVolumeBinding: the scheduler's "unbound immediate PersistentVolumeClaims" is progress
// (the PersistentVolume controller binds the claims; KAITO waits); every other unschedulable
// message, a missing claim's included, is not.
func TestWaitsForVolumeBinding(t *testing.T) {
	for _, c := range []struct {
		msg  string
		want bool
	}{
		{"0/7 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling.", true},
		{"pod has unbound immediate PersistentVolumeClaims", true},
		{`0/7 nodes are available: persistentvolumeclaim "train-data" not found. preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling.`, false},
		{"0/7 nodes are available: 3 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector.", false},
		{"0/7 nodes are available: 7 node(s) didn't find available persistent volumes to bind.", false},
		{"", false},
	} {
		if got := WaitsForVolumeBinding(c.msg); got != c.want {
			t.Errorf("WaitsForVolumeBinding(%q) = %v, want %v", c.msg, got, c.want)
		}
	}
}
