package performer

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/autoscale"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

func tasksMetric(lo, hi int32) *v1alpha1.Autoscaling {
	return &v1alpha1.Autoscaling{MinReplicas: lo, MaxReplicas: hi,
		Metric: &v1alpha1.AutoscalingMetric{Pods: &v1alpha1.AutoscalingMetricSource{Name: "tasks_in_flight", AverageValue: "4"}}}
}

// autoscaledFacts are the facts of a RollingUpdate performer under spec.autoscaling a whose
// Deployment (hash A, spec.replicas replicas, current pods) and Service are up to date, newest
// its status pod and ready its Ready pods of the current spec.
func autoscaledFacts(a *v1alpha1.Autoscaling, hpa autoscale.Object, replicas, current, ready int32, newest *Pod) Facts {
	return Facts{Now: t0, Generation: 1, HasFinalizer: true, Conditions: wasRunning, RunningImage: imgA, DesiredImage: imgA, DesiredHash: hashA,
		RollingUpdate: true, Deployment: &Deployment{SpecHash: hashA, Replicas: replicas, CurrentReplicas: current}, Pod: newest, Service: svcOK,
		Autoscaling: a, Autoscaler: hpa, ReadyReplicas: ready}
}

var (
	hpaOK      = autoscale.Object{Exists: true, UpToDate: true}
	hpaStale   = autoscale.Object{Exists: true}
	hpaForeign = autoscale.Object{Exists: true, Foreign: true}
)

// The performer machine under spec.autoscaling: the HorizontalPodAutoscaler is ensured while
// it is wanted and deleted when not (autoscaling removed or external), a foreign one is an
// OwnershipConflict; Running needs minReplicas Ready pods of the current spec (and the HPA in
// place), and stays Running while the autoscaler's further replicas start; without autoscaling
// a Deployment scaled away from 1 is scaled back; the replica counts are reported.
func TestDecideAutoscaling(t *testing.T) {
	for _, tc := range []struct {
		name                      string
		f                         Facts
		phase                     Phase
		reason, msg               string
		actions                   []Action
		desired, current, readyRp int32
	}{
		{name: "HPA missing: created, Running waits for it", f: autoscaledFacts(tasksMetric(1, 3), autoscale.Object{}, 1, 1, 1, podReady(hashA)),
			phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "creating or updating the HorizontalPodAutoscaler",
			actions: acts(ActionEnsureAutoscaler), desired: 1, current: 1, readyRp: 1},
		{name: "Deployment status behind its Ready pod: current is at least the Ready pods", f: autoscaledFacts(tasksMetric(1, 3), hpaOK, 1, 0, 1, podReady(hashA)),
			phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, desired: 1, current: 1, readyRp: 1},
		{name: "HPA edited: put back", f: autoscaledFacts(tasksMetric(1, 3), hpaStale, 1, 1, 1, podReady(hashA)),
			phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, actions: acts(ActionEnsureAutoscaler), desired: 1, current: 1, readyRp: 1},
		{name: "minimum Ready: Running", f: autoscaledFacts(tasksMetric(1, 3), hpaOK, 1, 1, 1, podReady(hashA)),
			phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, msg: "1 replicas Ready, at least 1 needed (autoscaled between 1 and 3)", desired: 1, current: 1, readyRp: 1},
		{name: "scaled to 3, one still starting: stays Running", f: func() Facts {
			f := autoscaledFacts(tasksMetric(1, 3), hpaOK, 3, 3, 2, podReady(hashA))
			f.AutoscalerDesired = 3
			return f
		}(), phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, msg: "2 replicas Ready", desired: 3, current: 3, readyRp: 2},
		{name: "HPA scaled down 4→1, one Ready of the current spec: stays Running, the scale said", f: func() Facts {
			f := autoscaledFacts(tasksMetric(1, 4), hpaOK, 1, 4, 1, podReady(hashA))
			f.AutoscalerDesired = 1
			return f
		}(), phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, msg: "1 replicas Ready, at least 1 needed (autoscaled between 1 and 4); scaling down to 1 replica", desired: 1, current: 4, readyRp: 1},
		{name: "HPA scaling up 1→3, one Ready: stays Running, the scale said", f: func() Facts {
			f := autoscaledFacts(tasksMetric(1, 4), hpaOK, 3, 3, 1, podReady(hashA))
			f.AutoscalerDesired = 3
			return f
		}(), phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, msg: "scaling up to 3 replicas (1 Ready)", desired: 3, current: 3, readyRp: 1},
		{name: "an external autoscaler below minReplicas, two Ready pods one of them going: Scheduling", f: autoscaledFacts(&v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 4, External: true}, autoscale.Object{}, 1, 2, 2, podReady(hashA)),
			phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "1 replicas Ready, at least 2 needed (autoscaled between 2 and 4)", desired: 1, current: 2, readyRp: 2},
		{name: "no Ready replica while the HPA scales: Scheduling", f: func() Facts {
			f := autoscaledFacts(tasksMetric(1, 4), hpaOK, 3, 3, 0, podBound(hashA))
			f.AutoscalerDesired = 3
			return f
		}(), phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, desired: 3, current: 3, readyRp: 0},
		{name: "below minReplicas: Scheduling with the bounds", f: autoscaledFacts(tasksMetric(2, 4), hpaOK, 2, 2, 1, podReady(hashA)),
			phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "1 replicas Ready, at least 2 needed (autoscaled between 2 and 4)", desired: 2, current: 2, readyRp: 1},
		{name: "foreign HPA: OwnershipConflict", f: autoscaledFacts(tasksMetric(1, 3), hpaForeign, 1, 1, 1, podReady(hashA)),
			phase: v1alpha1.PerformerFailed, reason: ReasonOwnershipConflict, msg: "HorizontalPodAutoscaler", desired: 1, current: 1, readyRp: 1},
		{name: "external (KEDA): no HPA, its count reported", f: autoscaledFacts(&v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 4, External: true}, autoscale.Object{}, 4, 4, 4, podReady(hashA)),
			phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, desired: 4, current: 4, readyRp: 4},
		{name: "made external: our HPA deleted", f: autoscaledFacts(&v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 4, External: true}, hpaOK, 2, 2, 2, podReady(hashA)),
			phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, actions: acts(ActionDeleteAutoscaler), desired: 2, current: 2, readyRp: 2},
		{name: "autoscaling removed: HPA deleted, count back to 1", f: func() Facts {
			f := autoscaledFacts(nil, hpaOK, 3, 3, 3, podReady(hashA))
			f.Deployment.ScaleDiffers = true
			return f
		}(), phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, actions: acts(ActionDeleteAutoscaler, ActionApplyDeployment), desired: 1, current: 3, readyRp: 3},
		{name: "spec error: no HPA written", f: func() Facts {
			f := autoscaledFacts(tasksMetric(1, 3), autoscale.Object{}, 1, 1, 1, podReady(hashA))
			f.SpecError, f.DesiredHash = `spec.autoscaling.metric.pods.averageValue: "0" must be above 0`, ""
			return f
		}(), phase: v1alpha1.PerformerFailed, reason: ReasonInvalidSpec, desired: 1, current: 1, readyRp: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.f)
			if err != nil {
				t.Fatal(err)
			}
			active := activeCondition(d.Conditions)
			if d.Phase != tc.phase || active.Reason != tc.reason || !strings.Contains(active.Message, tc.msg) {
				t.Errorf("phase %s reason %s message %q, want %s %s containing %q", d.Phase, active.Reason, active.Message, tc.phase, tc.reason, tc.msg)
			}
			if !slices.Equal(d.Actions, tc.actions) {
				t.Errorf("actions %v, want %v", d.Actions, tc.actions)
			}
			if d.DesiredReplicas != tc.desired || d.CurrentReplicas != tc.current || d.ReadyReplicas != tc.readyRp {
				t.Errorf("replicas desired %d current %d ready %d, want %d %d %d", d.DesiredReplicas, d.CurrentReplicas, d.ReadyReplicas, tc.desired, tc.current, tc.readyRp)
			}
			invariant.Check(t, invariants, tc.f, d)
		})
	}
}

func rsPod(name string, created int64, hash string, ready bool) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), CreationTimestamp: metav1.Unix(created, 0),
		Annotations: map[string]string{v1alpha1.AnnotationSpecHash: hash}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}
	return p
}

// Of several replicas the status names the newest Ready one of the current spec (a replica
// the autoscaler just added is newer but not Ready yet); ReadyPods counts the Ready ones of the
// current spec; a pod the ReplicaSet deletes on a scale-down is no disruption under
// autoscaling (an eviction still is).
func TestReplicaPods(t *testing.T) {
	pods := []corev1.Pod{rsPod("a", 100, hashA, true), rsPod("b", 200, hashA, true), rsPod("c", 300, hashA, false), rsPod("old", 400, hashB, true)}
	if got := NewestPod(pods, "perf-uid", hashA); got == nil || got.Name != "b" {
		t.Errorf("NewestPod = %v, want b (the newest Ready)", got)
	}
	if n := ReadyPods(pods, "perf-uid", hashA); n != 2 {
		t.Errorf("ReadyPods = %d, want 2", n)
	}
	now := metav1.Unix(500, 0)
	scaledDown := rsPod("d", 150, hashA, true)
	scaledDown.DeletionTimestamp = &now
	evicted := rsPod("e", 160, hashA, false)
	evicted.Status.Phase, evicted.Status.Reason = corev1.PodFailed, "Evicted"
	all := append(pods, scaledDown, evicted)
	names := func(ds []failure.Disruption) (out []string) {
		for _, d := range ds {
			out = append(out, d.Pod)
		}
		return out
	}
	if got := names(EndedPods(all, "perf-uid", &pods[1], true)); !slices.Equal(got, []string{"e"}) {
		t.Errorf("EndedPods autoscaled = %v, want only the evicted e", got)
	}
	if got := names(EndedPods(all, "perf-uid", &pods[1], false)); !slices.Equal(got, []string{"d", "e"}) {
		t.Errorf("EndedPods = %v, want d and e", got)
	}
}

// The Deployment and HorizontalPodAutoscaler of an autoscaled performer: the Deployment has no
// replica count (the autoscaler's; written only at creation, to minReplicas), the HPA targets
// it with the bounds and the metric; none with external or Recreate; a bad target is an error
// naming the field; a Deployment whose count is not 1 without autoscaling differs.
func TestAutoscaledObjects(t *testing.T) {
	p := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"},
		Spec: v1alpha1.PerformerSpec{Image: imgA, Strategy: v1alpha1.PerformerRollingUpdate, Autoscaling: tasksMetric(2, 5)}}
	pod, err := DesiredPod(p)
	if err != nil {
		t.Fatal(err)
	}
	dep := DesiredDeployment(p, pod)
	if dep.Spec.Replicas != nil {
		t.Errorf("autoscaled Deployment replicas %d, want none", *dep.Spec.Replicas)
	}
	if n := ReplicasToWrite(p, false, nil); *n != 2 {
		t.Errorf("ReplicasToWrite at creation = %d, want minReplicas 2", *n)
	}
	five := int32(5)
	if n := ReplicasToWrite(p, true, &five); *n != 5 {
		t.Errorf("ReplicasToWrite later = %d, want the live 5", *n)
	}
	hpa, err := DesiredAutoscaler(p)
	if err != nil || hpa == nil {
		t.Fatalf("DesiredAutoscaler = %v, %v", hpa, err)
	}
	if r := hpa.Spec.ScaleTargetRef; hpa.Name != "performer-x" || r.Kind != "Deployment" || r.Name != "performer-x" || *hpa.Spec.MinReplicas != 2 || hpa.Spec.MaxReplicas != 5 ||
		hpa.Spec.Metrics[0].Pods.Metric.Name != "tasks_in_flight" || hpa.Labels[v1alpha1.LabelPerformer] != "x" {
		t.Errorf("HPA %+v", hpa)
	}
	live := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &five, Template: dep.Spec.Template}}
	if f := DeploymentFacts(live, dep, ""); f.ScaleDiffers || f.Replicas != 5 {
		t.Errorf("autoscaled facts %+v: the autoscaler's 5 is no difference", f)
	}

	for name, mod := range map[string]func(*v1alpha1.Performer){
		"external": func(p *v1alpha1.Performer) {
			p.Spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 2, External: true}
		},
		"recreate": func(p *v1alpha1.Performer) { p.Spec.Strategy = v1alpha1.PerformerRecreate },
		"none":     func(p *v1alpha1.Performer) { p.Spec.Autoscaling = nil },
	} {
		q := p.DeepCopy()
		mod(q)
		if hpa, err := DesiredAutoscaler(q); hpa != nil || err != nil {
			t.Errorf("%s: HPA %v, %v; want none", name, hpa, err)
		}
	}
	fixed := p.DeepCopy()
	fixed.Spec.Autoscaling = nil
	if f := DeploymentFacts(live, DesiredDeployment(fixed, pod), ""); !f.ScaleDiffers {
		t.Errorf("5 replicas without autoscaling: facts %+v, want ScaleDiffers", f)
	}
	bad := p.DeepCopy()
	bad.Spec.Autoscaling.Metric.Pods.AverageValue = "0"
	if _, err := DesiredAutoscaler(bad); err == nil || !strings.Contains(err.Error(), "spec.autoscaling.metric.pods.averageValue") {
		t.Errorf("zero target: %v", err)
	}
}
