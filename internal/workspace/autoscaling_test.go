package workspace

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// autoscaledWS is an inference workspace named chat in ns with spec.autoscaling a.
func autoscaledWS(a *v1alpha1.Autoscaling) *v1alpha1.Workspace {
	return &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: "ns", UID: "uid-1"},
		Spec: v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, GPUCount: 1, GPUProduct: "NVIDIA-A100-SXM4-80GB"},
			Inference: &v1alpha1.WorkspaceInference{Model: "falcon-7b-instruct", Image: "ghcr.io/gantry-dev/hello-model:1.0.0"}, Autoscaling: a}}
}

func vllmQueue(avg string) *v1alpha1.Autoscaling {
	return &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 4,
		Metric: &v1alpha1.AutoscalingMetric{Pods: &v1alpha1.AutoscalingMetricSource{Name: "vllm:num_requests_waiting", AverageValue: avg}}}
}

// The HorizontalPodAutoscaler is built from spec.autoscaling: it targets the Deployment
// workspace-<name>, carries the bounds and one metric with an AverageValue target of the kind
// asked (Resource cpu, Pods, External with its selector), the owned objects' labels and its
// spec hash; none without autoscaling or with an external autoscaler; a target that is not a
// quantity above 0 is an error naming the field.
func TestDesiredAutoscaler(t *testing.T) {
	five := resource.MustParse("5")
	for _, tc := range []struct {
		name    string
		a       *v1alpha1.Autoscaling
		want    *autoscalingv2.MetricSpec // nil: no HPA
		wantErr string
	}{
		{name: "no autoscaling"},
		{name: "external (KEDA)", a: &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 3, External: true}},
		{name: "pods metric", a: vllmQueue("5"), want: &autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "vllm:num_requests_waiting"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &five}}}},
		{name: "cpu", a: &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 8, Metric: &v1alpha1.AutoscalingMetric{CPUAverageValue: "1500m"}},
			want: &autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr(resource.MustParse("1500m"))}}}},
		{name: "external metric with a selector", a: &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 2, Metric: &v1alpha1.AutoscalingMetric{
			External: &v1alpha1.AutoscalingMetricSource{Name: "queue_depth", AverageValue: "5", Selector: map[string]string{"queue": "chat"}}}},
			want: &autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "chat"}}},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &five}}}},
		{name: "zero target", a: vllmQueue("0"), wantErr: `spec.autoscaling.metric.pods.averageValue: "0" must be above 0`},
		{name: "not a quantity", a: vllmQueue("lots"), wantErr: `spec.autoscaling.metric.pods.averageValue: "lots" is not a quantity`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := autoscaledWS(tc.a)
			hpa, err := DesiredAutoscaler(w)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				if _, rerr := Resolve(w); rerr == nil || !strings.Contains(rerr.Error(), tc.wantErr) {
					t.Errorf("Resolve: %v, want %q", rerr, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if hpa != nil {
					t.Fatalf("an HPA %+v, want none", hpa.Spec)
				}
				return
			}
			s := hpa.Spec
			if hpa.Name != "workspace-chat" || hpa.Namespace != "ns" || hpa.Labels[LabelWorkspace] != "chat" || hpa.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy ||
				hpa.Annotations[v1alpha1.AnnotationSpecHash] == "" {
				t.Errorf("metadata %+v", hpa.ObjectMeta)
			}
			if s.ScaleTargetRef != (autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "workspace-chat"}) ||
				s.MinReplicas == nil || *s.MinReplicas != tc.a.MinReplicas || s.MaxReplicas != tc.a.MaxReplicas || s.Behavior != nil {
				t.Errorf("spec %+v", s)
			}
			if len(s.Metrics) != 1 || !metricEqual(s.Metrics[0], *tc.want) {
				t.Errorf("metrics %+v, want %+v", s.Metrics, *tc.want)
			}
			// Up to date against itself; a changed bound is not.
			if o, _ := AutoscalerFacts(controlled(hpa.DeepCopy()), hpa, "uid-1"); !o.Exists || !o.UpToDate || o.Foreign {
				t.Errorf("facts of the desired HPA: %+v", o)
			}
			changed := controlled(hpa.DeepCopy())
			changed.Spec.MaxReplicas++
			if o, _ := AutoscalerFacts(changed, hpa, "uid-1"); o.UpToDate {
				t.Errorf("an HPA with another maxReplicas is up to date")
			}
		})
	}
}

func metricEqual(a, b autoscalingv2.MetricSpec) bool {
	qa, qb := targetOf(a), targetOf(b)
	a2, b2 := a.DeepCopy(), b.DeepCopy()
	for _, m := range []*autoscalingv2.MetricSpec{a2, b2} {
		setTarget(m, autoscalingv2.MetricTarget{})
	}
	return qa.Type == qb.Type && qa.AverageValue.Cmp(*qb.AverageValue) == 0 && a2.String() == b2.String()
}

func targetOf(m autoscalingv2.MetricSpec) autoscalingv2.MetricTarget {
	switch {
	case m.Resource != nil:
		return m.Resource.Target
	case m.Pods != nil:
		return m.Pods.Target
	}
	return m.External.Target
}

func setTarget(m *autoscalingv2.MetricSpec, t autoscalingv2.MetricTarget) {
	switch {
	case m.Resource != nil:
		m.Resource.Target = t
	case m.Pods != nil:
		m.Pods.Target = t
	default:
		m.External.Target = t
	}
}

func controlled[T metav1.Object](o T) T {
	yes := true
	o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "gantry.dev/v1alpha1", Kind: "Workspace", Name: "chat", UID: "uid-1", Controller: &yes}})
	return o
}

func ptr[T any](v T) *T { return &v }

// Under spec.autoscaling the desired Deployment leaves its replicas out (nil) and out of its
// spec hash: a change of the bounds rolls nothing, and a live Deployment at any count the
// autoscaler set is up to date (never taken back). Without autoscaling the count is in both, so
// `kubectl scale` is drift the next pass puts back.
func TestDeploymentReplicasLeftToTheAutoscaler(t *testing.T) {
	w := autoscaledWS(vllmQueue("5"))
	want, err := DesiredDeployment(w)
	if err != nil {
		t.Fatal(err)
	}
	if want.Spec.Replicas != nil {
		t.Fatalf("autoscaled Deployment replicas %d, want none (the autoscaler's)", *want.Spec.Replicas)
	}
	wider := autoscaledWS(&v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 9, External: true})
	if other, _ := DesiredDeployment(wider); other.Annotations[v1alpha1.AnnotationSpecHash] != want.Annotations[v1alpha1.AnnotationSpecHash] {
		t.Errorf("the bounds change the Deployment's spec hash")
	}
	live := controlled(want.DeepCopy())
	live.Spec.Replicas = ptr(int32(3)) // the HPA scaled it
	live.Status = appsv1.DeploymentStatus{ObservedGeneration: live.Generation, Replicas: 3, UpdatedReplicas: 3}
	got := WorkloadFacts(live, want, "uid-1")
	if !got.UpToDate || !got.RolledOut || got.Replicas != 3 || got.CurrentReplicas != 3 {
		t.Errorf("autoscaled Deployment at 3 replicas: %+v", got)
	}

	fixed := autoscaledWS(nil)
	fixed.Spec.Resource.Count = 2
	wantFixed, _ := DesiredDeployment(fixed)
	if wantFixed.Spec.Replicas == nil || *wantFixed.Spec.Replicas != 2 || wantFixed.Annotations[v1alpha1.AnnotationSpecHash] == want.Annotations[v1alpha1.AnnotationSpecHash] {
		t.Errorf("fixed Deployment replicas %v", wantFixed.Spec.Replicas)
	}
	scaled := controlled(wantFixed.DeepCopy())
	scaled.Spec.Replicas = ptr(int32(3))
	if WorkloadFacts(scaled, wantFixed, "uid-1").UpToDate {
		t.Errorf("a fixed-count Deployment scaled out of band is up to date")
	}
}

// ReplicasToWrite: the count without autoscaling, minReplicas when the Deployment is created
// under autoscaling, and afterwards the live count as it is, whatever it is.
func TestReplicasToWrite(t *testing.T) {
	fixed := autoscaledWS(nil)
	fixed.Spec.Resource.Count = 2
	auto := autoscaledWS(&v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 6, External: true})
	for _, tc := range []struct {
		name   string
		w      *v1alpha1.Workspace
		exists bool
		live   *int32
		want   int32
	}{
		{"fixed, create", fixed, false, nil, 2},
		{"fixed, scaled out of band: put back", fixed, true, ptr(int32(5)), 2},
		{"autoscaled, create: minReplicas", auto, false, nil, 2},
		{"autoscaled, scaled up by the autoscaler: kept", auto, true, ptr(int32(5)), 5},
		{"autoscaled, scaled below minReplicas by someone: kept (the autoscaler's to fix)", auto, true, ptr(int32(1)), 1},
	} {
		if got := ReplicasToWrite(tc.w, tc.exists, tc.live); got == nil || *got != tc.want {
			t.Errorf("%s: %v, want %d", tc.name, got, tc.want)
		}
	}
	if Replicas(auto) != 2 || Replicas(fixed) != 2 {
		t.Errorf("Replicas: autoscaled %d (want minReplicas 2), fixed %d", Replicas(auto), Replicas(fixed))
	}
}

// Resolve refuses what autoscaling cannot scale: a tuning workspace, and a model spread over a
// multi-node group; an autoscaled preset whose GPUs exceed gpuCount is not turned into a group.
func TestResolveAutoscaling(t *testing.T) {
	tuning := autoscaledWS(vllmQueue("5"))
	tuning.Spec.Inference = nil
	tuning.Spec.Tuning = &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningLoRA, BaseModel: "m", Image: "i",
		Input: v1alpha1.WorkspaceDataSource{URLs: []string{"https://x"}}, Output: v1alpha1.WorkspaceDataDestination{Image: "o"}}
	group := autoscaledWS(vllmQueue("5"))
	group.Spec.Inference.ModelGPUs = 2
	for name, tc := range map[string]struct {
		w    *v1alpha1.Workspace
		want string
	}{
		"tuning":     {tuning, "spec.autoscaling: a tuning workspace runs one Job pod"},
		"multi-node": {group, "spec.autoscaling: the model needs 2 GPUs but one replica has 1"},
	} {
		if _, err := Resolve(tc.w); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	preset := autoscaledWS(&v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 4, External: true})
	preset.Spec.Inference = &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"} // 2 GPUs
	out, err := Resolve(preset)
	if err != nil {
		t.Fatal(err)
	}
	if MultiNode(out) || SizingOf(out).Pods != 2 {
		t.Errorf("autoscaled preset: multi-node %v, sizing %+v", MultiNode(out), SizingOf(out))
	}
}

// asFacts is an inference pass of an autoscaled workspace (minReplicas 1, maxReplicas 4, the
// reconciler's HPA) that was Ready at this generation, its HPA scaled the Deployment to 3: one
// replica Ready, two waiting for room.
func asFacts(mod func(*Facts)) Facts {
	f := infFacts(sReady, func(f *Facts) {
		f.Replicas = 1
		f.Autoscaling = vllmQueue("5")
		f.Autoscaler, f.AutoscalerDesired = Object{Exists: true, UpToDate: true}, 3
		f.Workload = &Workload{UpToDate: true, RolledOut: true, Replicas: 3, CurrentReplicas: 3}
		f.Pods = []Pod{readyPod("p-a", "gpu-0"),
			{Name: "p-b", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."},
			{Name: "p-c", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."}}
		f.Conditions = append(f.Conditions, failure.Condition(ConditionInferenceReady, true, ReasonInferenceReady, "1 replicas Ready", 1))
	})
	if mod != nil {
		mod(&f)
	}
	return f
}

// The machine under spec.autoscaling: Ready stays tied to minReplicas Ready (the autoscaler's
// replicas waiting for room or a Deployment generation its controller has not observed yet
// after a scale do not flip it), the HPA is created, updated and deleted as the spec says,
// someone else's HPA of the name is an ownership conflict, the Deployment is never re-written
// for its count, and status reports the current and desired replicas.
func TestDecideAutoscaling(t *testing.T) {
	rows := []struct {
		name          string
		facts         Facts
		state         State
		ready         bool
		actions       []Action
		reasons       map[string]string
		contains      map[string]string
		current, want int32
	}{
		{name: "scaled to 3, one Ready, two waiting for room: Ready", facts: asFacts(nil), state: sReady, ready: true, actions: []Action{},
			contains: map[string]string{ConditionResourceReady: "replicas beyond minReplicas wait: pod p-b: 0/7", ConditionInferenceReady: "1 replicas Ready, at least 1 needed (autoscaled between 1 and 4)"},
			current:  3, want: 3},
		{name: "scale not observed by the Deployment controller yet: stays Ready", state: sReady, ready: true, actions: []Action{},
			facts: asFacts(func(f *Facts) { f.Workload.RolledOut = false }), current: 3, want: 3},
		{name: "a new spec not rolled out: not Ready", state: sNotReady, actions: []Action{},
			facts:   asFacts(func(f *Facts) { f.Generation = 2; f.Workload.RolledOut = false }),
			reasons: map[string]string{ConditionInferenceReady: ReasonReplicasNotReady}, current: 3, want: 3},
		{name: "below minReplicas: NotReady", state: sNotReady,
			facts:   asFacts(func(f *Facts) { f.Autoscaling.MinReplicas, f.Replicas = 2, 2 }),
			reasons: map[string]string{ConditionInferenceReady: ReasonReplicasNotReady}, current: 3, want: 3},
		{name: "no HPA yet: created, not Ready until it is", state: sNotReady, actions: []Action{ActionEnsureAutoscaler},
			facts:   asFacts(func(f *Facts) { f.Autoscaler, f.AutoscalerDesired = Object{}, 0 }),
			reasons: map[string]string{ConditionInferenceReady: ReasonAutoscalerNotReady}, current: 3, want: 3},
		{name: "HPA changed: updated", state: sNotReady, actions: []Action{ActionEnsureAutoscaler},
			facts: asFacts(func(f *Facts) { f.Autoscaler.UpToDate = false }), current: 3, want: 3},
		{name: "external autoscaler (KEDA): no HPA, desired is the Deployment's", state: sReady, ready: true, actions: []Action{},
			facts: asFacts(func(f *Facts) {
				f.Autoscaling = &v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 4, External: true}
				f.Autoscaler, f.AutoscalerDesired, f.Workload.Replicas = Object{}, 0, 2
			}), current: 3, want: 2},
		{name: "made external: our HPA deleted", state: sReady, ready: true, actions: []Action{ActionDeleteAutoscaler},
			facts: asFacts(func(f *Facts) { f.Autoscaling.External, f.Autoscaling.Metric = true, nil }), current: 3, want: 3},
		{name: "autoscaling removed: HPA deleted, count back", state: sNotReady, actions: []Action{ActionEnsureWorkload, ActionDeleteAutoscaler},
			facts: asFacts(func(f *Facts) {
				f.Autoscaling, f.Replicas, f.Workload.UpToDate = nil, 1, false
			}), current: 3, want: 1},
		{name: "someone else's HPA of the name: ownership conflict", state: sNotReady, actions: []Action{},
			facts:   asFacts(func(f *Facts) { f.Autoscaler = Object{Exists: true, Foreign: true} }),
			reasons: map[string]string{v1alpha1.ConditionStalled: ReasonOwnershipConflict}, contains: map[string]string{v1alpha1.ConditionStalled: "HorizontalPodAutoscaler"}, current: 3, want: 3},
		{name: "deleting: HPA deleted with the rest", state: sReady, actions: []Action{ActionDeleteWorkload, ActionDeleteService, ActionDeleteAutoscaler},
			facts: asFacts(func(f *Facts) { f.Deleting = true }), current: 3, want: 3},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			d, err := Decide(r.facts)
			if err != nil {
				t.Fatal(err)
			}
			invariant.Check(t, invariants, r.facts, d)
			if d.State != r.state || (condOf(d, v1alpha1.ConditionReady).Status == metav1.ConditionTrue) != r.ready {
				t.Errorf("state %s ready %v, want %s %v\n%s", d.State, condOf(d, v1alpha1.ConditionReady).Status, r.state, r.ready, dump(d))
			}
			if r.actions != nil && !slices.Equal(d.Actions, r.actions) && (len(r.actions) != 0 || len(d.Actions) != 0) {
				t.Errorf("actions %v, want %v", d.Actions, r.actions)
			}
			if slices.Contains(d.Actions, ActionEnsureWorkload) && r.facts.Autoscaling != nil {
				t.Errorf("the Deployment is re-written under autoscaling: %v", d.Actions)
			}
			for typ, reason := range r.reasons {
				if c := condOf(d, typ); c.Reason != reason {
					t.Errorf("%s reason %q, want %q (%s)", typ, c.Reason, reason, c.Message)
				}
			}
			for typ, sub := range r.contains {
				if c := condOf(d, typ); !strings.Contains(c.Message, sub) {
					t.Errorf("%s message %q lacks %q", typ, c.Message, sub)
				}
			}
			if d.CurrentReplicas != r.current || d.DesiredReplicas != r.want {
				t.Errorf("current/desired %d/%d, want %d/%d", d.CurrentReplicas, d.DesiredReplicas, r.current, r.want)
			}
		})
	}
}
