package performer

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// livePod is the Performer's Pod performer-x (uid, spec hash h) as the API server shows it,
// Ready on a node; mod changes it. PodFacts reads it, so the tests go through the classifier
// (failure.EndedFromOutside) as the controller does.
func livePod(uid, h string, mod func(*corev1.Pod)) *Pod {
	ctrl := true
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "performer-x", Namespace: "ns", UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
			Annotations:       map[string]string{v1alpha1.AnnotationSpecHash: h},
			OwnerReferences:   []metav1.OwnerReference{{UID: "perf-uid", Controller: &ctrl}},
		},
		Spec: corev1.PodSpec{NodeName: "gantry-gpu-2", RestartPolicy: corev1.RestartPolicyAlways},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
	if mod != nil {
		mod(p)
	}
	return PodFacts(p, "perf-uid")
}

// ended makes p Failed and not Ready at `at`, with the containers killed (exit 137).
func ended(p *corev1.Pod, at time.Time) {
	p.Status.Phase = corev1.PodFailed
	p.Status.Conditions[1] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(at)}
	p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 137, FinishedAt: metav1.NewTime(at)}}
}

// disruptionTarget adds DisruptionTarget=True with reason and message at `at`.
func disruptionTarget(p *corev1.Pod, reason, msg string, at time.Time) {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(at)})
}

// deleted marks p as being deleted at `at` (grace period 30s).
func deleted(p *corev1.Pod, at time.Time) {
	grace := int64(30)
	ts := metav1.NewTime(at.Add(30 * time.Second))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
}

const memoryPressure = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."

// TestDecidePodEndedFromOutside: a Pod ended from outside (evicted, preempted, deleted, its
// node gone) leaves the Performer Creating with reason PodDisrupted, waiting for the
// replacement, and is counted in status.podDisruptions; more than the bound is Failed with
// reason PodDisruptedRepeatedly; a Pod that failed on its own is Failed as before.
func TestDecidePodEndedFromOutside(t *testing.T) {
	now := t0.Add(10 * time.Second)
	evictedAt := now.Add(-5 * time.Second)
	kubeletEvicted := livePod("uid-1", hashA, func(p *corev1.Pod) {
		ended(p, evictedAt)
		p.Status.Reason, p.Status.Message = "Evicted", memoryPressure
		disruptionTarget(p, "TerminationByKubelet", memoryPressure, evictedAt)
	})
	apiEvicted := livePod("uid-1", hashA, func(p *corev1.Pod) {
		deleted(p, evictedAt)
		disruptionTarget(p, "EvictionByEvictionAPI", "Eviction API: evicting", evictedAt)
	})
	kubectlDeleted := livePod("uid-1", hashA, func(p *corev1.Pod) { deleted(p, evictedAt) })
	// The incident: the Deployment's Pod ended Failed, no reason, no container of its own failed.
	noReason := livePod("uid-rs-1", hashA, func(p *corev1.Pod) {
		p.Name = "performer-x-7d9f-abcde"
		p.OwnerReferences = nil
		p.Status.Phase = corev1.PodFailed
		p.Status.Conditions[1].Status = corev1.ConditionFalse
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			Reason: "ContainerStatusUnknown", ExitCode: 137, Message: "The container could not be located when the pod was terminated", FinishedAt: metav1.NewTime(evictedAt)}}
	})
	noReason.Foreign = false // the ReplicaSet's, as performerFacts reads it
	oomKilled := livePod("uid-1", hashA, func(p *corev1.Pod) {
		ended(p, evictedAt)
		p.Status.ContainerStatuses[0].State.Terminated.Reason = "OOMKilled"
	})
	exited := livePod("uid-1", hashA, func(p *corev1.Pod) {
		ended(p, evictedAt)
		p.Status.ContainerStatuses[0].State.Terminated.ExitCode = 1
	})
	admission := livePod("uid-1", hashA, func(p *corev1.Pod) {
		ended(p, evictedAt)
		p.Status.Reason, p.Status.Message = "UnexpectedAdmissionError", "Allocate failed due to no healthy devices present"
	})
	oldHashDeleted := livePod("uid-0", hashA, func(p *corev1.Pod) { deleted(p, evictedAt) })
	lingering := livePod("uid-1", hashA, func(p *corev1.Pod) {
		at := now.Add(-20 * time.Minute)
		ended(p, at)
		disruptionTarget(p, "EvictionByPodGC", "PodGC: node no longer exists", at)
	})
	// three earlier Pods ended from outside within the window, the last a minute ago
	three := &v1alpha1.PodDisruptions{Count: 3, Since: metav1.NewTime(now.Add(-5 * time.Minute)), LastAt: metav1.NewTime(now.Add(-time.Minute)),
		LastPod: "performer-x", LastPodUID: "uid-0", LastReason: "EvictionByEvictionAPI", LastMessage: "Eviction API: evicting"}
	four := three.DeepCopy()
	four.Count = 4

	base := func(conds []metav1.Condition, pod *Pod) Facts {
		return Facts{Now: now, Generation: 2, HasFinalizer: true, Conditions: conds, RunningImage: imgA,
			DesiredImage: imgA, DesiredHash: hashA, Pod: pod, Service: svcOK}
	}
	with := func(f Facts, mod func(*Facts)) Facts { mod(&f); return f }
	type want struct {
		phase   Phase
		reason  string
		msg     string
		actions []Action
		count   int32 // status.podDisruptions.count after the pass (0: none)
		event   string
	}
	tests := []struct {
		name string
		f    Facts
		want want
	}{
		{"Running → Creating: evicted by the kubelet (node pressure): the reconciler deletes and re-creates the pod",
			base(wasRunning, kubeletEvicted),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, actions: acts(ActionDeletePod), event: corev1.EventTypeNormal,
				msg: "pod performer-x ended from outside (TerminationByKubelet: " + memoryPressure + "); waiting for its replacement (1 of at most 3 pods ended from outside within 10m0s); the reconciler deletes it and creates a new one"}},
		{"Running → Creating: evicted through the Eviction API (a drain): waits for the pod to go",
			base(wasRunning, apiEvicted),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, event: corev1.EventTypeNormal,
				msg: "pod performer-x ended from outside (EvictionByEvictionAPI: Eviction API: evicting); waiting for its replacement (1 of at most 3"}},
		{"Running → Creating: deleted by someone (kubectl delete pod)",
			base(wasRunning, kubectlDeleted),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, event: corev1.EventTypeNormal,
				msg: "pod performer-x ended from outside (Deleted: the pod is being deleted)"}},
		{"Creating (PodDisrupted) → Creating: the same pod seen again is not counted again",
			with(base(was(v1alpha1.PerformerCreating, ReasonPodDisrupted), apiEvicted), func(f *Facts) {
				f.PodDisruptions = &v1alpha1.PodDisruptions{Count: 1, Since: metav1.NewTime(evictedAt), LastAt: metav1.NewTime(evictedAt), LastPod: "performer-x", LastPodUID: "uid-1", LastReason: "EvictionByEvictionAPI"}
			}),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, msg: "(1 of at most 3"}},
		{"RollingUpdate: the deployment's pod ended Failed with no reason (the incident): waits, not Failed",
			with(base(wasRunning, noReason), func(f *Facts) { f.RollingUpdate, f.Deployment = true, &Deployment{SpecHash: hashA} }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, event: corev1.EventTypeNormal,
				msg: "pod performer-x-7d9f-abcde ended from outside (NoContainerFailure: the pod ended with no reason given and none of its containers failed); waiting for its replacement (1 of at most 3 pods ended from outside within 10m0s); the deployment replaces it"}},
		{"RollingUpdate: the evicted pod is Terminating beside its replacement (newest, not Ready yet): counted, said, not Failed",
			with(base(wasRunning, podBound(hashA, "ContainerCreating", "")), func(f *Facts) {
				f.RollingUpdate, f.Deployment = true, &Deployment{SpecHash: hashA}
				f.EndedPods = []failure.Disruption{*apiEvicted.Disrupted}
			}),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, event: corev1.EventTypeNormal,
				msg: "pod performer-x ended from outside (EvictionByEvictionAPI: Eviction API: evicting); waiting for its replacement (1 of at most 3 pods ended from outside within 10m0s); the deployment replaces it"}},
		{"RollingUpdate: the replacement Ready while the evicted pod still terminates: Running, counted",
			with(base(wasRunning, podReady(hashA)), func(f *Facts) {
				f.RollingUpdate, f.Deployment = true, &Deployment{SpecHash: hashA}
				f.EndedPods = []failure.Disruption{*apiEvicted.Disrupted}
			}),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, count: 1}},
		{"Upgrading stays Upgrading when the new pod is evicted",
			with(base(wasUpgrading, kubeletEvicted), func(f *Facts) { f.DesiredImage = imgB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, count: 1, actions: acts(ActionDeletePod),
				msg: "upgrading from " + imgA + " to " + imgB + ": pod performer-x ended from outside (TerminationByKubelet"}},
		{"the pod of an older spec deleted by the reconciler itself (an upgrade) is no disruption",
			with(base(wasUpgrading, oldHashDeleted), func(f *Facts) { f.DesiredImage, f.DesiredHash = imgB, hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, msg: "waiting for the old pod to be deleted"}},
		{"a pod ended from outside 20 minutes ago (left behind) is not counted, still waited for",
			base(wasRunning, lingering),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, actions: acts(ActionDeletePod), event: corev1.EventTypeNormal,
				msg: "(EvictionByPodGC: PodGC: node no longer exists); waiting for its replacement; the reconciler"}},
		// The bound: more than 3 within 10 minutes.
		{"Running → Failed: a fourth pod ended from outside within 10 minutes (PodDisruptedRepeatedly)",
			with(base(wasRunning, kubeletEvicted), func(f *Facts) { f.PodDisruptions = three }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodDisruptedRepeatedly, count: 4, actions: acts(ActionDeletePod), event: corev1.EventTypeWarning,
				msg: "4 pods ended from outside within 10m0s, more than the 3 (3 per replica) waited through; the last: pod performer-x ended from outside (TerminationByKubelet: " + memoryPressure + ")"}},
		{"Failed (PodDisruptedRepeatedly) holds while the replacement comes up",
			with(base(wasMsg(v1alpha1.PerformerFailed, ReasonPodDisruptedRepeatedly, "x"), podBound(hashA, "ContainerCreating", "")), func(f *Facts) { f.PodDisruptions = four }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodDisruptedRepeatedly, count: 4, event: corev1.EventTypeWarning, msg: "4 pods ended from outside"}},
		{"Failed (PodDisruptedRepeatedly) → Running once the replacement is Ready",
			with(base(wasMsg(v1alpha1.PerformerFailed, ReasonPodDisruptedRepeatedly, "x"), podReady(hashA)), func(f *Facts) { f.PodDisruptions = four }),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, count: 4, event: corev1.EventTypeNormal}},
		{"Failed (PodDisruptedRepeatedly) → Scheduling 10 minutes after the last one",
			with(base(wasMsg(v1alpha1.PerformerFailed, ReasonPodDisruptedRepeatedly, "x"), podBound(hashA, "ContainerCreating", "")), func(f *Facts) {
				f.PodDisruptions, f.Now = four, now.Add(10*time.Minute)
			}),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, count: 4, event: corev1.EventTypeNormal}},
		{"three within the window are waited through",
			with(base(wasRunning, kubeletEvicted), func(f *Facts) {
				two := three.DeepCopy()
				two.Count = 2
				f.PodDisruptions = two
			}),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 3, actions: acts(ActionDeletePod), event: corev1.EventTypeNormal, msg: "(3 of at most 3 pods"}},
		{"a disruption after the window starts a new count",
			with(base(wasRunning, kubeletEvicted), func(f *Facts) {
				old := four.DeepCopy()
				old.Since, old.LastAt = metav1.NewTime(now.Add(-30*time.Minute)), metav1.NewTime(now.Add(-25*time.Minute))
				f.PodDisruptions = old
			}),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonPodDisrupted, count: 1, actions: acts(ActionDeletePod), event: corev1.EventTypeNormal, msg: "(1 of at most 3"}},
		// The pod's own failures stay failures.
		{"Running → Failed: the container was OOMKilled (its own failure)",
			base(wasRunning, oomKilled),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodFailed, actions: acts(ActionDeletePod), event: corev1.EventTypeWarning, msg: "container performer terminated: OOMKilled (exit code 137)"}},
		{"Running → Failed: the container exited 1 (its own failure)",
			base(wasRunning, exited),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodFailed, actions: acts(ActionDeletePod), event: corev1.EventTypeWarning, msg: "Error (exit code 1)"}},
		{"Running → Failed: refused at admission (UnexpectedAdmissionError) is not from outside",
			base(wasRunning, admission),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodFailed, actions: acts(ActionDeletePod), event: corev1.EventTypeWarning, msg: "pod Failed: UnexpectedAdmissionError: Allocate failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.f)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			w := tt.want
			active := activeCondition(d.Conditions)
			if d.Phase != w.phase || active.Reason != w.reason || !strings.Contains(active.Message, w.msg) {
				t.Errorf("got %s %s %q, want %s %s containing %q", d.Phase, active.Reason, active.Message, w.phase, w.reason, w.msg)
			}
			if !slices.Equal(d.Actions, w.actions) {
				t.Errorf("actions = %v, want %v", d.Actions, w.actions)
			}
			var count int32
			if d.PodDisruptions != nil {
				count = d.PodDisruptions.Count
			}
			if count != w.count {
				t.Errorf("podDisruptions = %+v, want count %d", d.PodDisruptions, w.count)
			}
			switch {
			case w.event == "" && d.Event != nil:
				t.Errorf("unexpected event %+v", *d.Event)
			case w.event != "" && (d.Event == nil || d.Event.Type != w.event):
				t.Errorf("event = %+v, want type %s", d.Event, w.event)
			}
			invariant.Check(t, invariants, tt.f, d)
		})
	}
}

// TestPodFactsDisrupted: PodFacts reads the classifier's verdict into Pod.Disrupted, with the
// Pod's name and UID.
func TestPodFactsDisrupted(t *testing.T) {
	at := t0.Add(-time.Minute)
	p := livePod("uid-9", hashA, func(p *corev1.Pod) {
		ended(p, at)
		disruptionTarget(p, "PreemptionByScheduler", "Scheduler: preempting to accommodate a higher priority pod", at)
	})
	want := failure.Disruption{Pod: "performer-x", UID: "uid-9", Reason: "PreemptionByScheduler", Message: "Scheduler: preempting to accommodate a higher priority pod", At: at}
	if p.Disrupted == nil || *p.Disrupted != want || p.Name != "performer-x" || p.UID != "uid-9" {
		t.Errorf("Disrupted = %+v, want %+v", p.Disrupted, want)
	}
	if q := livePod("uid-9", hashA, nil); q.Disrupted != nil {
		t.Errorf("a running pod is disrupted: %+v", q.Disrupted)
	}
}
