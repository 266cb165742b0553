package workspace

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// livePod is a workspace pod as the API server shows it: Failed at `at` on node gpu-1 with
// its container killed (exit 137, reason Error, as the kubelet reports it); mod adds why. It
// is read through PodFacts (and so the classifier) with its node gone (nodeReady false).
func livePod(name string, at time.Time, mod func(*corev1.Pod)) Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(at.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "gpu-1", RestartPolicy: corev1.RestartPolicyAlways},
		Status: corev1.PodStatus{Phase: corev1.PodFailed,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at)}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "model", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: "Error", ExitCode: 137, FinishedAt: metav1.NewTime(at)}}}}},
	}
	if mod != nil {
		mod(p)
	}
	return PodFacts(p, false)
}

func withDisruptionTarget(reason, msg string, at time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)})
	}
}

// TestDecidePodEndedFromOutside: an inference replica or a tuning pod ended from outside
// (evicted, its node gone) is waited for (Reconciling, reason PodDisrupted), not a start
// failure or a lost node that stalls the workspace; beyond the bound it is Stalled with reason
// PodDisruptedRepeatedly; the container's own failure stalls as before.
func TestDecidePodEndedFromOutside(t *testing.T) {
	now := t0
	at := now.Add(-10 * time.Second)
	gcEvicted := livePod("workspace-x-abc", at, withDisruptionTarget("EvictionByPodGC", "PodGC: node no longer exists", at))
	shutdown := livePod("workspace-x-abc", at, func(p *corev1.Pod) {
		p.Status.Reason, p.Status.Message = "Terminated", "Pod was terminated in response to imminent node shutdown."
	})
	ownFailure := livePod("workspace-x-abc", at, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 40s"}}
		p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	})
	ownFailure.NodeReady = true // its node is fine: the container crashes
	replacement := Pod{Name: "workspace-x-def", Phase: corev1.PodPending, NodeName: "gpu-2", NodeReady: true}
	tuningEvicted := livePod("workspace-t-abc", at, func(p *corev1.Pod) {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		withDisruptionTarget("EvictionByEvictionAPI", "Eviction API: evicting", at)(p)
	})
	// six earlier pods ended from outside within the window (2 replicas: bound 6)
	six := &v1alpha1.PodDisruptions{Count: 6, Since: metav1.NewTime(now.Add(-9 * time.Minute)), LastAt: metav1.NewTime(now.Add(-time.Minute)),
		LastPod: "workspace-x-prev", LastPodUID: "uid-workspace-x-prev", LastReason: "EvictionByEvictionAPI"}

	tests := []struct {
		name     string
		f        Facts
		state    State
		active   string // the True kstatus condition's reason
		stalled  bool
		progress string // InferenceReady / JobStarted reason
		msg      string // in the active condition's message
		count    int32
	}{
		{"Ready → NotReady: a replica's node went away (PodGC): waiting for the replacement, not stalled",
			infFacts(sReady, func(f *Facts) { f.Pods = []Pod{readyPod("p-a", "gpu-0"), gcEvicted, replacement} }),
			sNotReady, ReasonPodDisrupted, false, ReasonPodDisrupted,
			"pod workspace-x-abc ended from outside (EvictionByPodGC: PodGC: node no longer exists); waiting for its replacement (1 of at most 6 pods ended from outside within 10m0s); 1/2 replicas Ready", 1},
		{"Ready → NotReady: the node shut down (status.reason Terminated)",
			infFacts(sReady, func(f *Facts) { f.Pods = []Pod{readyPod("p-a", "gpu-0"), shutdown, replacement} }),
			sNotReady, ReasonPodDisrupted, false, ReasonPodDisrupted, "(Terminated: Pod was terminated in response to imminent node shutdown.)", 1},
		{"NotReady → Ready: the replacement is Ready; the Failed pod left behind stalls nothing",
			infFacts(sNotReady, func(f *Facts) {
				f.Pods = []Pod{readyPod("p-a", "gpu-0"), gcEvicted, readyPod("workspace-x-def", "gpu-2")}
				f.PodDisruptions = &v1alpha1.PodDisruptions{Count: 1, Since: metav1.NewTime(at), LastAt: metav1.NewTime(at), LastPod: "workspace-x-abc", LastPodUID: "uid-workspace-x-abc"}
			}),
			sReady, ReasonWorkspaceReady, false, ReasonInferenceReady, "inference is serving", 1},
		{"Ready → NotReady, Stalled: a seventh pod ended from outside within 10 minutes",
			infFacts(sReady, func(f *Facts) {
				f.Pods = []Pod{readyPod("p-a", "gpu-0"), gcEvicted, replacement}
				f.PodDisruptions = six
			}),
			sNotReady, ReasonPodDisruptedRepeatedly, true, ReasonPodDisruptedRepeatedly,
			"7 pods ended from outside within 10m0s, more than the 6 (3 per replica) waited through; the last: pod workspace-x-abc ended from outside (EvictionByPodGC", 7},
		{"the container's own crash still stalls (ContainerStartFailed)",
			infFacts(sReady, func(f *Facts) { f.Pods = []Pod{readyPod("p-a", "gpu-0"), ownFailure} }),
			sNotReady, ReasonContainerStartFailed, true, ReasonContainerStartFailed, "CrashLoopBackOff", 0},
		{"tuning Running → Running: the job's pod was evicted; the job runs a new one",
			tunFacts(sRunning, func(f *Facts) {
				f.Job = &Job{Active: 1}
				f.Pods = []Pod{tuningEvicted, {Name: "workspace-t-def", Phase: corev1.PodPending}}
			}),
			sRunning, ReasonPodDisrupted, false, ReasonJobStarted, "pod workspace-t-abc ended from outside (EvictionByEvictionAPI: Eviction API: evicting); waiting for its replacement (1 of at most 3", 1},
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
			if d.State != tt.state || active.Reason != tt.active || !strings.Contains(active.Message, tt.msg) {
				t.Errorf("got %s %s %q, want %s %s containing %q", d.State, active.Reason, active.Message, tt.state, tt.active, tt.msg)
			}
			if stalled := condOf(d, v1alpha1.ConditionStalled).Status == metav1.ConditionTrue; stalled != tt.stalled {
				t.Errorf("Stalled = %v, want %v", stalled, tt.stalled)
			}
			if got := condOf(d, progressType(tt.f.Mode)).Reason; got != tt.progress {
				t.Errorf("%s reason = %s, want %s", progressType(tt.f.Mode), got, tt.progress)
			}
			if got := condOf(d, ConditionResourceReady); got.Reason == ReasonNodeLost {
				t.Errorf("a pod ended from outside read as a lost node: %+v", got)
			}
			var count int32
			if d.PodDisruptions != nil {
				count = d.PodDisruptions.Count
			}
			if count != tt.count {
				t.Errorf("podDisruptions = %+v, want count %d", d.PodDisruptions, tt.count)
			}
			invariant.Check(t, invariants, tt.f, d)
		})
	}
}

// TestPodFactsDisrupted: PodFacts keeps the classifier's verdict, but not a plain deletion
// (the Deployment's and Job's controllers delete pods themselves).
func TestPodFactsDisrupted(t *testing.T) {
	at := t0.Add(-time.Minute)
	if p := livePod("x", at, withDisruptionTarget("PreemptionByScheduler", "Scheduler: preempting", at)); p.Disrupted == nil || p.Disrupted.Reason != "PreemptionByScheduler" {
		t.Errorf("preempted: %+v", p.Disrupted)
	}
	deleting := livePod("x", at, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		ts := metav1.NewTime(at)
		p.DeletionTimestamp = &ts
	})
	if deleting.Disrupted != nil {
		t.Errorf("a plain deletion is a disruption: %+v", deleting.Disrupted)
	}
}

// TestDesiredJobIgnoresDisruptions: the tuning Job does not count a pod ended from outside
// against its backoff limit (podFailurePolicy Ignore on DisruptionTarget=True).
func TestDesiredJobIgnoresDisruptions(t *testing.T) {
	w := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "ns"}}
	w.Spec.Tuning = &v1alpha1.WorkspaceTuning{}
	job, err := DesiredJob(w)
	if err != nil {
		t.Skipf("a bare tuning spec does not build here (%v); the rule is checked on what builds", err)
	}
	pfp := job.Spec.PodFailurePolicy
	if pfp == nil || len(pfp.Rules) != 1 || pfp.Rules[0].Action != batchv1.PodFailurePolicyActionIgnore ||
		len(pfp.Rules[0].OnPodConditions) != 1 || pfp.Rules[0].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("podFailurePolicy = %+v", pfp)
	}
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("podFailurePolicy needs restartPolicy Never, got %s", job.Spec.Template.Spec.RestartPolicy)
	}
}
