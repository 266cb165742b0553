package executor

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// executorPod is one of the Deployment's pods as the API server shows it: Failed at `at` with
// its container killed (exit 137); mod adds why.
func executorPod(name string, at time.Time, mod func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(at.Add(-time.Hour))},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyAlways},
		Status: corev1.PodStatus{Phase: corev1.PodFailed,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 137, FinishedAt: metav1.NewTime(at)}}}}},
	}
	if mod != nil {
		mod(&p)
	}
	return p
}

func preempted(at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: "PreemptionByScheduler", Message: "Scheduler: preempting to accommodate a higher priority pod", LastTransitionTime: metav1.NewTime(at)})
	}
}

// TestDisruptions: the Deployment's pods ended from outside are facts; a plain deletion (the
// ReplicaSet controller's own, on every rollout) and a container's own failure are not.
func TestDisruptions(t *testing.T) {
	at := t0.Add(-time.Minute)
	now := metav1.NewTime(at)
	pods := []corev1.Pod{
		executorPod("executor-x-1", at, preempted(at)),
		executorPod("executor-x-2", at, func(p *corev1.Pod) { p.Status.ContainerStatuses[0].State.Terminated.ExitCode = 1 }),
		executorPod("executor-x-3", at, func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning; p.DeletionTimestamp = &now }),
		executorPod("executor-x-4", at, func(p *corev1.Pod) {
			p.Status.Reason, p.Status.Message = "Evicted", "The node had condition: [DiskPressure]."
		}),
	}
	got := Disruptions(pods)
	if len(got) != 2 || got[0].Pod != "executor-x-1" || got[0].Reason != "PreemptionByScheduler" || got[1].Pod != "executor-x-4" || got[1].Reason != "Evicted" {
		t.Errorf("Disruptions = %+v", got)
	}
}

// TestDecidePodEndedFromOutside: a Running executor whose pod ended from outside is Scaling
// with reason PodDisrupted while the ReplicaSet replaces it, never Failed; beyond the bound
// (3 per replica within 10 minutes) it is Failed with reason PodDisruptedRepeatedly.
func TestDecidePodEndedFromOutside(t *testing.T) {
	now := t0.Add(10 * time.Second)
	at := now.Add(-5 * time.Second)
	// One of two replicas was preempted; its replacement is not Ready yet.
	replacing := complete("r2", 2)
	replacing.ReadyReplicas, replacing.AvailableReplicas, replacing.UnavailableReplicas = 1, 1, 1
	preemptedPod := Disruptions([]corev1.Pod{executorPod("executor-x-abc", at, preempted(at))})
	lingering := Disruptions([]corev1.Pod{executorPod("executor-x-old", now.Add(-time.Hour), preempted(now.Add(-time.Hour)))})
	six := &v1alpha1.PodDisruptions{Count: 6, Since: metav1.NewTime(now.Add(-8 * time.Minute)), LastAt: metav1.NewTime(now.Add(-time.Minute)),
		LastPod: "executor-x-prev", LastPodUID: "uid-executor-x-prev", LastReason: "EvictionByEvictionAPI"}
	base := func(prev Phase, prevReason string, mod func(*Facts)) Facts {
		f := base()
		f.Now, f.LastGoodRevision, f.Conditions = now, "r2", was(prev, prevReason, false)
		mod(&f)
		return f
	}
	tests := []struct {
		name    string
		f       Facts
		phase   Phase
		reason  string
		msg     string
		count   int32
		stalled bool
	}{
		{"Running → Scaling (PodDisrupted): a replica preempted, waiting for its replacement",
			base(v1alpha1.ExecutorRunning, ReasonAvailable, func(f *Facts) { f.Deployment, f.Disrupted = replacing, preemptedPod }),
			v1alpha1.ExecutorScaling, ReasonPodDisrupted,
			"pod executor-x-abc ended from outside (PreemptionByScheduler: Scheduler: preempting to accommodate a higher priority pod); waiting for its replacement (1 of at most 6 pods ended from outside within 10m0s); revision r2: 2/2 replicas updated, 1 ready",
			1, false},
		{"Scaling (PodDisrupted) → Running once the replacement is available; the pod left behind is counted once",
			base(v1alpha1.ExecutorScaling, ReasonPodDisrupted, func(f *Facts) {
				f.Deployment, f.Disrupted = complete("r2", 2), preemptedPod
				f.PodDisruptions = &v1alpha1.PodDisruptions{Count: 1, Since: metav1.NewTime(at), LastAt: metav1.NewTime(at), LastPod: "executor-x-abc", LastPodUID: "uid-executor-x-abc", LastReason: "PreemptionByScheduler"}
			}),
			v1alpha1.ExecutorRunning, ReasonAvailable, "2/2 replicas ready", 1, false},
		{"an update keeps its reason and says which pod ended",
			base(v1alpha1.ExecutorUpdating, ReasonUpdateInProgress, func(f *Facts) {
				f.LastGoodRevision = "r1"
				f.Deployment, f.Disrupted = replacing, preemptedPod
			}),
			v1alpha1.ExecutorUpdating, ReasonUpdateInProgress, "pod executor-x-abc ended from outside (PreemptionByScheduler", 1, false},
		{"a pod ended from outside an hour ago (left behind Failed) is neither counted nor named",
			base(v1alpha1.ExecutorRunning, ReasonAvailable, func(f *Facts) { f.Deployment, f.Disrupted = replacing, lingering }),
			v1alpha1.ExecutorScaling, ReasonScaling, "revision r2: 2/2 replicas updated, 1 ready", 0, false},
		{"Running → Failed: a seventh pod ended from outside within 10 minutes (2 replicas: bound 6)",
			base(v1alpha1.ExecutorRunning, ReasonAvailable, func(f *Facts) { f.Deployment, f.Disrupted, f.PodDisruptions = replacing, preemptedPod, six }),
			v1alpha1.ExecutorFailed, ReasonPodDisruptedRepeatedly,
			"7 pods ended from outside within 10m0s, more than the 6 (3 per replica) waited through; the last: pod executor-x-abc ended from outside (PreemptionByScheduler",
			7, true},
		{"beyond the bound but every replica available: Running",
			base(v1alpha1.ExecutorFailed, ReasonPodDisruptedRepeatedly, func(f *Facts) {
				f.Deployment, f.PodDisruptions = complete("r2", 2), six.DeepCopy()
				f.PodDisruptions.Count = 7
			}),
			v1alpha1.ExecutorRunning, ReasonAvailable, "2/2 replicas ready", 7, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var active metav1.Condition
			for _, c := range d.Conditions[:3] {
				if c.Status == metav1.ConditionTrue {
					active = c
				}
			}
			if d.Phase != tt.phase || active.Reason != tt.reason || !strings.Contains(active.Message, tt.msg) {
				t.Errorf("got %s %s %q, want %s %s containing %q", d.Phase, active.Reason, active.Message, tt.phase, tt.reason, tt.msg)
			}
			var count int32
			if d.PodDisruptions != nil {
				count = d.PodDisruptions.Count
			}
			if count != tt.count {
				t.Errorf("podDisruptions = %+v, want count %d", d.PodDisruptions, tt.count)
			}
			if stalled := d.Conditions[2].Status == metav1.ConditionTrue; stalled != tt.stalled {
				t.Errorf("Stalled = %v, want %v", stalled, tt.stalled)
			}
			invariant.Check(t, invariants, tt.f, d)
		})
	}
}

// TestDecideOwnPodFailureNotDisruption: a container that keeps crashing is the executor's own
// failure, reported as before (the rollout's progress quotes the kubelet; the deadline fails
// it), not waited for as a pod ended from outside.
func TestDecideOwnPodFailureNotDisruption(t *testing.T) {
	crash := executorPod("executor-x-abc", t0, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}
	})
	if got := Disruptions([]corev1.Pod{crash}); len(got) != 0 {
		t.Fatalf("a crashing pod is a disruption: %+v", got)
	}
	f := base()
	f.Now, f.LastGoodRevision, f.Conditions = t0, "r1", was(v1alpha1.ExecutorUpdating, ReasonUpdateInProgress, false)
	f.Deployment, f.RollbackEnabled, f.PodProblems = deadline("r2", 2), false, PodProblems([]corev1.Pod{crash})
	d, err := Decide(f)
	if err != nil {
		t.Fatal(err)
	}
	if d.Phase != v1alpha1.ExecutorFailed || d.Conditions[2].Reason != ReasonProgressDeadlineExceeded || !strings.Contains(d.Conditions[2].Message, "CrashLoopBackOff") {
		t.Errorf("got %s %+v", d.Phase, d.Conditions[2])
	}
	if d.PodDisruptions != nil {
		t.Errorf("podDisruptions = %+v", d.PodDisruptions)
	}
}
