package reconciler

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// Autoscaling that Terraform never fights (issue 40 item 4; KAITO's asks kaito-project/kaito
// #1380 and #1659). The local cluster has no metrics server, so the HorizontalPodAutoscaler
// the reconciler creates never scales by itself: the tests scale the Deployment through its
// scale subresource as the HPA (or KEDA) does, under their own field manager.

// vllmQueue is spec.autoscaling scaling between lo and hi on vLLM's queue length (a Pods metric).
func vllmQueue(lo, hi int32) *v1alpha1.Autoscaling {
	return &v1alpha1.Autoscaling{MinReplicas: lo, MaxReplicas: hi,
		Metric: &v1alpha1.AutoscalingMetric{Pods: &v1alpha1.AutoscalingMetricSource{Name: "vllm:num_requests_waiting", AverageValue: "5"}}}
}

// scaleAs sets the Deployment workspace-<ws>'s replicas through its scale subresource, as
// manager (the HPA controller, KEDA's operator).
func (e *testEnv) scaleAs(t *testing.T, ws string, replicas int32, manager string) {
	t.Helper()
	e.scaleDeploymentAs(t, workspace.ObjectName(ws), replicas, manager)
}

// scaleDeploymentAs sets the Deployment name's replicas through its scale subresource, as
// manager.
func (e *testEnv) scaleDeploymentAs(t *testing.T, name string, replicas int32, manager string) {
	t.Helper()
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		scale := &autoscalingv1.Scale{}
		if err := e.c.SubResource("scale").Get(ctx, dep, scale); err != nil {
			return false, err
		}
		scale.Spec.Replicas = replicas
		err := e.c.SubResource("scale").Update(ctx, dep, client.WithSubResourceBody(scale), client.FieldOwner(manager))
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("scale %s to %d: %v", dep.Name, replicas, err)
	}
}

func (e *testEnv) deployment(t *testing.T, ws string) *appsv1.Deployment {
	t.Helper()
	return e.deploymentNamed(t, workspace.ObjectName(ws))
}

func (e *testEnv) deploymentNamed(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	var dep appsv1.Deployment
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: name}, &dep); err != nil {
		t.Fatal(err)
	}
	return &dep
}

// replicasOwners are the field managers that own the Deployment's spec.replicas (its
// managedFields; the test client reads them uncached).
func replicasOwners(t *testing.T, dep *appsv1.Deployment) []string {
	t.Helper()
	var out []string
	for _, mf := range dep.ManagedFields {
		if mf.FieldsV1 == nil {
			continue
		}
		var fields map[string]map[string]any
		if err := json.Unmarshal(mf.FieldsV1.Raw, &fields); err != nil {
			t.Fatalf("managedFields of %s: %v", mf.Manager, err)
		}
		if _, ok := fields["f:spec"]["f:replicas"]; ok {
			out = append(out, mf.Manager)
		}
	}
	return out
}

// holdsReplicas polls for d that the Deployment keeps want replicas, owned by manager alone, and
// fails as soon as the reconciler (or anyone) writes them back.
func (e *testEnv) holdsReplicas(t *testing.T, ws string, want int32, manager string, d time.Duration) {
	t.Helper()
	e.deploymentHolds(t, workspace.ObjectName(ws), want, manager, d, func() string { return e.wsEvents(ws) })
}

// deploymentHolds is holdsReplicas for the Deployment name; events says what happened.
func (e *testEnv) deploymentHolds(t *testing.T, name string, want int32, manager string, d time.Duration, events func() string) {
	t.Helper()
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		dep := e.deploymentNamed(t, name)
		if *dep.Spec.Replicas != want {
			t.Fatalf("the Deployment's replicas went from %d to %d: the autoscaler's count was taken back\nevents:\n%s", want, *dep.Spec.Replicas, events())
		}
		if owners := replicasOwners(t, dep); !slices.Equal(owners, []string{manager}) {
			t.Fatalf("spec.replicas owned by %v, want only the autoscaler %s", owners, manager)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// A workspace with spec.autoscaling (a Pods metric): the reconciler creates the Deployment
// with minReplicas and a HorizontalPodAutoscaler workspace-<name> it controls, targeting it with
// the bounds and the metric. The HPA (simulated) scales the Deployment to 3: the reconciler
// never writes the count back, not even when it rolls a new pod template out (a label of the
// workspace changes), the autoscaler's manager alone owns spec.replicas, the workspace stays
// Ready throughout the scale (Pending → Ready, no NotReady), and status reports 3 current and
// desired replicas. Removing autoscaling deletes the HPA and gives the count back to
// spec.resource.count.
func TestWorkspaceAutoscalingHPA(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	spec := inferenceSpec(1, 1, a100)
	spec.Autoscaling = vllmQueue(1, 3)
	w := e.newWorkspace("hpa", nil, spec)
	rec := e.recordStates(t, w.Name)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: workspace.ObjectName(w.Name)}, &hpa); err != nil {
		t.Fatalf("HorizontalPodAutoscaler: %v", err)
	}
	if ref := metav1.GetControllerOf(&hpa); ref == nil || ref.UID != got.UID {
		t.Errorf("HPA controller %+v", ref)
	}
	s := hpa.Spec
	if s.ScaleTargetRef.Kind != "Deployment" || s.ScaleTargetRef.Name != workspace.ObjectName(w.Name) || s.MinReplicas == nil || *s.MinReplicas != 1 || s.MaxReplicas != 3 ||
		len(s.Metrics) != 1 || s.Metrics[0].Pods == nil || s.Metrics[0].Pods.Metric.Name != "vllm:num_requests_waiting" || s.Metrics[0].Pods.Target.AverageValue.String() != "5" {
		t.Errorf("HPA spec %+v", s)
	}
	if dep := e.deployment(t, w.Name); *dep.Spec.Replicas != 1 {
		t.Errorf("Deployment created with %d replicas, want minReplicas 1", *dep.Spec.Replicas)
	}

	e.scaleAs(t, w.Name, 3, "test-autoscaler")
	got = e.waitWS(t, w.Name, "3 replicas reported", func(w *v1alpha1.Workspace) bool {
		return w.Status.CurrentReplicas == 3 && w.Status.DesiredReplicas == 3 && w.Status.ReadyReplicas == 3
	})
	e.holdsReplicas(t, w.Name, 3, "test-autoscaler", 5*time.Second)
	if s := rec.seen(); !slices.Equal(s, []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateReady}) {
		t.Errorf("states through the scale %v, want Pending, Ready", s)
	}
	if c := wsCond(got, workspace.ConditionInferenceReady); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "autoscaled between 1 and 3") {
		t.Errorf("InferenceReady %+v", c)
	}

	// A new pod template (the workspace's labels reach the pods): rolled out, count kept.
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: w.Name}, "workspace", func(w *v1alpha1.Workspace) {
		w.Labels = map[string]string{"gantry.dev/template": "2"}
	})
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return e.deployment(t, w.Name).Spec.Template.Labels["gantry.dev/template"] == "2", nil
	}); err != nil {
		t.Fatalf("the new pod template was not rolled out: %v", err)
	}
	e.waitWS(t, w.Name, "Ready after the rollout", stateIs(v1alpha1.WorkspaceStateReady))
	e.holdsReplicas(t, w.Name, 3, "test-autoscaler", 3*time.Second)

	// Autoscaling removed: the HPA goes, the count is spec.resource.count's again.
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: w.Name}, "workspace", func(w *v1alpha1.Workspace) {
		w.Spec.Autoscaling, w.Spec.Resource.Count = nil, 2
	})
	e.waitGone(t, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: workspace.ObjectName(w.Name), Namespace: e.ns}})
	got = e.waitWS(t, w.Name, "Ready with 2 replicas", func(w *v1alpha1.Workspace) bool {
		return stateIs(v1alpha1.WorkspaceStateReady)(w) && w.Status.DesiredReplicas == 2 && w.Status.CurrentReplicas == 2
	})
	if dep := e.deployment(t, w.Name); *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas %d after autoscaling was removed, want spec.resource.count 2", *dep.Spec.Replicas)
	}
	_ = e.c.Delete(ctx, got)
}

// An external autoscaler (spec.autoscaling.external, a KEDA ScaledObject): no
// HorizontalPodAutoscaler is made, the count KEDA sets (4) is kept and reported, the workspace
// stays Ready; switching to a metric creates the reconciler's HPA, still without touching the
// count.
func TestWorkspaceAutoscalingExternal(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	spec := inferenceSpec(1, 1, a100)
	spec.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 4, External: true}
	w := e.newWorkspace("keda", nil, spec)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	hpaKey := types.NamespacedName{Namespace: e.ns, Name: workspace.ObjectName(w.Name)}
	if err := e.c.Get(ctx, hpaKey, &autoscalingv2.HorizontalPodAutoscaler{}); !apierrors.IsNotFound(err) {
		t.Errorf("an HPA exists with an external autoscaler (%v)", err)
	}
	e.scaleAs(t, w.Name, 4, "keda-operator")
	e.waitWS(t, w.Name, "4 replicas reported", func(w *v1alpha1.Workspace) bool {
		return w.Status.CurrentReplicas == 4 && w.Status.DesiredReplicas == 4 && w.Status.State == v1alpha1.WorkspaceStateReady
	})
	e.holdsReplicas(t, w.Name, 4, "keda-operator", 3*time.Second)

	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: w.Name}, "workspace", func(w *v1alpha1.Workspace) {
		w.Spec.Autoscaling = vllmQueue(1, 4)
	})
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return e.c.Get(ctx, hpaKey, &autoscalingv2.HorizontalPodAutoscaler{}) == nil, nil
	}); err != nil {
		t.Fatalf("no HPA after switching to a metric: %v", err)
	}
	got := e.waitWS(t, w.Name, "Ready with the HPA", stateIs(v1alpha1.WorkspaceStateReady))
	e.holdsReplicas(t, w.Name, 4, "keda-operator", 2*time.Second)
	_ = e.c.Delete(ctx, got)
	e.waitGone(t, &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: hpaKey.Name, Namespace: e.ns}})
}

// The API server refuses what spec.autoscaling cannot mean (the CRD's rules; dry run, nothing
// stored), and the reconciler stalls a multi-node model with autoscaling (InvalidSpec) without creating anything.
func TestWorkspaceAutoscalingRefused(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	two := vllmQueue(1, 2)
	two.Metric.CPUAverageValue = "1"
	tuning := tuningSpec()
	tuning.Autoscaling = vllmQueue(1, 2)
	for name, tc := range map[string]struct {
		spec v1alpha1.WorkspaceSpec
		a    *v1alpha1.Autoscaling
		want string
	}{
		"max below min":        {inferenceSpec(1, 1, a100), vllmQueue(3, 2), "spec.autoscaling.maxReplicas must be at least minReplicas"},
		"no metric":            {inferenceSpec(1, 1, a100), &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 2}, "spec.autoscaling needs a metric"},
		"metric with external": {inferenceSpec(1, 1, a100), &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 2, External: true, Metric: vllmQueue(1, 2).Metric}, "spec.autoscaling needs a metric"},
		"two metrics":          {inferenceSpec(1, 1, a100), two, "exactly one of cpuAverageValue, pods and external"},
		"above 64":             {inferenceSpec(1, 1, a100), vllmQueue(1, 65), "spec.autoscaling.maxReplicas"},
		"tuning":               {tuning, tuning.Autoscaling, "spec.autoscaling scales inference replicas"},
	} {
		spec := tc.spec
		spec.Autoscaling = tc.a
		bad := e.newWorkspace("as-bad", nil, spec)
		if err := e.c.Create(ctx, bad, client.DryRunAll); err == nil || !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: create %v, want Invalid: %q", name, err, tc.want)
		}
	}

	group := inferenceSpec(1, 1, a100)
	group.Inference.ModelGPUs = 2
	group.Autoscaling = vllmQueue(2, 4)
	w := e.newWorkspace("as-group", nil, group)
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Status == metav1.ConditionTrue
	})
	if st := wsCond(got, v1alpha1.ConditionStalled); st.Reason != workspace.ReasonInvalidSpec || !strings.Contains(st.Message, "cannot be autoscaled") {
		t.Errorf("multi-node with autoscaling: %s", describeWS(got))
	}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &appsv1.StatefulSet{}, &autoscalingv2.HorizontalPodAutoscaler{}} {
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: workspace.ObjectName(w.Name)}, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T exists for an invalid autoscaled workspace (%v)", obj, err)
		}
	}
	_ = e.c.Delete(ctx, got)
}
