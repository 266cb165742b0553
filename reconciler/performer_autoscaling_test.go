package reconciler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// Performer autoscaling (issue 40 item 8; Hourglass's roadmap 6.3 "HPA integration for
// performers"), on the workspaces' model (workspace_autoscaling_test.go): the local cluster
// has no metrics server, so the tests scale the Deployment performer-<name> through its scale
// subresource as the HPA (or KEDA) does, under their own field manager.

// tasksInFlight is spec.autoscaling scaling between lo and hi on a per-pod metric.
func tasksInFlight(lo, hi int32) *v1alpha1.Autoscaling {
	return &v1alpha1.Autoscaling{MinReplicas: lo, MaxReplicas: hi,
		Metric: &v1alpha1.AutoscalingMetric{Pods: &v1alpha1.AutoscalingMetricSource{Name: "performer_tasks_in_flight", AverageValue: "4"}}}
}

// A RollingUpdate performer with spec.autoscaling: the reconciler creates the Deployment with
// minReplicas and a HorizontalPodAutoscaler performer-<name> it controls, targeting it. The
// HPA (simulated) scales to 3: the reconciler never writes the count back, not even when an
// image change rolls the pods, the autoscaler's manager alone owns spec.replicas, the
// performer stays Running through the scale, and status reports 3 desired, current and Ready
// replicas and names a Ready pod. Removing autoscaling deletes the HPA and gives the
// Deployment its one replica back.
func TestPerformerAutoscalingHPA(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.newPerformer("hpa", v1alpha1.PerformerSpec{Image: imageV1, Strategy: v1alpha1.PerformerRollingUpdate, Autoscaling: tasksInFlight(1, 3)})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	name := performer.ObjectName(p.Name)
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: name}, &hpa); err != nil {
		t.Fatalf("HorizontalPodAutoscaler: %v", err)
	}
	if ref := metav1.GetControllerOf(&hpa); ref == nil || ref.UID != got.UID || ref.Kind != "Performer" {
		t.Errorf("HPA controller %+v", ref)
	}
	s := hpa.Spec
	if s.ScaleTargetRef.Kind != "Deployment" || s.ScaleTargetRef.Name != name || s.MinReplicas == nil || *s.MinReplicas != 1 || s.MaxReplicas != 3 ||
		len(s.Metrics) != 1 || s.Metrics[0].Pods == nil || s.Metrics[0].Pods.Metric.Name != "performer_tasks_in_flight" || s.Metrics[0].Pods.Target.AverageValue.String() != "4" {
		t.Errorf("HPA spec %+v", s)
	}
	if hpa.Labels[v1alpha1.LabelPerformer] != p.Name || hpa.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy {
		t.Errorf("HPA labels %v", hpa.Labels)
	}
	if dep := e.deploymentNamed(t, name); *dep.Spec.Replicas != 1 {
		t.Errorf("Deployment created with %d replicas, want minReplicas 1", *dep.Spec.Replicas)
	}

	rec := e.recordPhases(t, p.Name)
	e.scaleDeploymentAs(t, name, 3, "test-autoscaler")
	got = e.waitFor(t, p.Name, "3 replicas reported", func(p *v1alpha1.Performer) bool {
		return running(p) && p.Status.CurrentReplicas == 3 && p.Status.DesiredReplicas == 3 && p.Status.ReadyReplicas == 3
	})
	e.deploymentHolds(t, name, 3, "test-autoscaler", 4*time.Second, func() string { return e.events(p.Name) })
	if ph := rec.seen(); slices.ContainsFunc(ph, func(x v1alpha1.PerformerPhase) bool { return x != v1alpha1.PerformerRunning }) {
		t.Errorf("phases through the scale %v, want Running only", ph)
	}
	if c := condition(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "autoscaled between 1 and 3") {
		t.Errorf("Ready %+v", c)
	}
	if pn := got.Status.PodName; pn == "" || pn == name || got.Status.NodeName == "" {
		t.Errorf("status podName %q nodeName %q: want one of the Deployment's Ready pods and its node", pn, got.Status.NodeName)
	} else if pod := e.podNamed(t, pn); !podReady(pod) {
		t.Errorf("status.podName %s is not Ready", pn)
	}

	// A new image rolls the pods: the count is kept.
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.Image = imageV2 })
	e.waitFor(t, p.Name, "Running on the new image with 3 replicas", func(p *v1alpha1.Performer) bool {
		return running(p) && p.Status.Image == imageV2 && p.Status.ReadyReplicas == 3
	})
	e.deploymentHolds(t, name, 3, "test-autoscaler", 2*time.Second, func() string { return e.events(p.Name) })

	// Autoscaling removed: the HPA goes, the Deployment is back to one replica.
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.Autoscaling = nil })
	e.waitGone(t, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}})
	got = e.waitFor(t, p.Name, "Running with 1 replica", func(p *v1alpha1.Performer) bool {
		return running(p) && p.Status.DesiredReplicas == 1 && p.Status.CurrentReplicas == 1
	})
	if dep := e.deploymentNamed(t, name); *dep.Spec.Replicas != 1 {
		t.Errorf("Deployment replicas %d after autoscaling was removed, want 1", *dep.Spec.Replicas)
	}
	_ = e.c.Delete(ctx, got)
}

// An external autoscaler (spec.autoscaling.external, a KEDA ScaledObject) with minReplicas 2:
// no HorizontalPodAutoscaler, the Deployment starts with 2 replicas and the performer is
// Running with both Ready; the count KEDA sets (4) is kept and reported; switching to a metric
// creates the reconciler's HPA, still without touching the count.
func TestPerformerAutoscalingExternal(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.newPerformer("keda", v1alpha1.PerformerSpec{Image: imageV1, Strategy: v1alpha1.PerformerRollingUpdate,
		Autoscaling: &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 4, External: true}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	if got.Status.ReadyReplicas < 2 {
		t.Errorf("Running with %d Ready replicas, want at least minReplicas 2", got.Status.ReadyReplicas)
	}
	name := performer.ObjectName(p.Name)
	hpaKey := types.NamespacedName{Namespace: e.ns, Name: name}
	if err := e.c.Get(ctx, hpaKey, &autoscalingv2.HorizontalPodAutoscaler{}); !apierrors.IsNotFound(err) {
		t.Errorf("an HPA exists with an external autoscaler (%v)", err)
	}
	if dep := e.deploymentNamed(t, name); *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment created with %d replicas, want minReplicas 2", *dep.Spec.Replicas)
	}
	e.scaleDeploymentAs(t, name, 4, "keda-operator")
	e.waitFor(t, p.Name, "4 replicas reported", func(p *v1alpha1.Performer) bool {
		return running(p) && p.Status.CurrentReplicas == 4 && p.Status.DesiredReplicas == 4
	})
	e.deploymentHolds(t, name, 4, "keda-operator", 3*time.Second, func() string { return e.events(p.Name) })

	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.Autoscaling = tasksInFlight(2, 4) })
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return e.c.Get(ctx, hpaKey, &autoscalingv2.HorizontalPodAutoscaler{}) == nil, nil
	}); err != nil {
		t.Fatalf("no HPA after switching to a metric: %v", err)
	}
	got = e.waitFor(t, p.Name, "Running with the HPA", running)
	e.deploymentHolds(t, name, 4, "keda-operator", 2*time.Second, func() string { return e.events(p.Name) })
	_ = e.c.Delete(ctx, got)
	e.waitGone(t, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}})
}

// The API server refuses what spec.autoscaling of a performer cannot mean (the CRD's rules;
// dry run, nothing stored): strategy Recreate (given or defaulted), bounds, metrics.
func TestPerformerAutoscalingRefused(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	for name, tc := range map[string]struct {
		strategy v1alpha1.PerformerStrategy
		a        *v1alpha1.Autoscaling
		want     string
	}{
		"recreate":      {v1alpha1.PerformerRecreate, tasksInFlight(1, 2), "spec.autoscaling needs spec.strategy RollingUpdate"},
		"default":       {"", tasksInFlight(1, 2), "spec.autoscaling needs spec.strategy RollingUpdate"},
		"max below min": {v1alpha1.PerformerRollingUpdate, tasksInFlight(3, 2), "spec.autoscaling.maxReplicas must be at least minReplicas"},
		"no metric":     {v1alpha1.PerformerRollingUpdate, &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 2}, "spec.autoscaling needs a metric"},
	} {
		bad := e.newPerformer("as-bad", v1alpha1.PerformerSpec{Image: imageV1, Strategy: tc.strategy, Autoscaling: tc.a})
		if err := e.c.Create(ctx, bad, client.DryRunAll); err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: create %v, want Invalid: %q", name, err, tc.want)
		}
	}
}

func (e *testEnv) podNamed(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &pod); err != nil {
		t.Fatalf("get pod %s: %v", name, err)
	}
	return &pod
}
