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

// scalingFacts is an inference pass of a workspace: minReplicas lo, maxReplicas 4 and the
// reconciler's HPA (nil a: no autoscaling, spec.resource.count lo), whose Deployment is up to
// date with spec.replicas target and status.replicas current (observed: rolled out to target)
// and whose pods are pods. serving says whether the previous pass found it serving this
// generation (InferenceReady=True at generation 1, the machine's memory); false leaves the
// InferenceReady=False of a pass that has just written a new pod template.
func scalingFacts(a *v1alpha1.Autoscaling, lo, target, current int32, serving bool, pods ...Pod) Facts {
	prev := sNotReady
	if serving {
		prev = sReady
	}
	return infFacts(prev, func(f *Facts) {
		f.Replicas, f.Autoscaling = lo, a
		if a != nil && !a.External {
			f.Autoscaler, f.AutoscalerDesired = Object{Exists: true, UpToDate: true}, target
		}
		f.Workload = &Workload{UpToDate: true, RolledOut: true, Replicas: target, CurrentReplicas: current}
		f.Pods = pods
		f.Conditions = append(f.Conditions, failure.Condition(ConditionInferenceReady, serving, ReasonInferenceReady, "", 1))
	})
}

// within is spec.autoscaling between lo and 4 on vLLM's queue (the reconciler's HPA).
func within(lo int32) *v1alpha1.Autoscaling {
	a := vllmQueue("5")
	a.MinReplicas = lo
	return a
}

func deletingPod(name, node string) Pod {
	p := readyPod(name, node)
	p.Deleting = true
	return p
}

func startingPod(name, node string) Pod {
	return Pod{Name: name, Phase: corev1.PodPending, NodeName: node, NodeReady: true, WaitingReason: "ContainerCreating"}
}

// Replicas the autoscaler sets are no failure (the acceptance table's autoscaled workspace went
// NotReady after its apply had returned Ready). While an autoscaler owns the replicas the
// workspace is Ready as long as minReplicas of the replicas it asks for (the Deployment's
// spec.replicas) are Ready: a scale down or up within the bounds keeps it Ready and the
// InferenceReady message says the count is moving; Ready pods beyond the autoscaler's count
// (the old template's pods a rollout retires, a rollout's surge pod) never make it Ready, so
// it cannot be Ready a moment before they go; no Ready replica is NotReady; without
// autoscaling the count is spec.resource.count as before.
func TestDecideAutoscalerOwnsReplicas(t *testing.T) {
	for _, tc := range []struct {
		name  string
		facts Facts
		state State
		// progress is InferenceReady's reason; contains are parts of its message, lacks what
		// it must not say; resource is ResourceReady's status.
		progress string
		contains []string
		lacks    string
		resource metav1.ConditionStatus
	}{
		{name: "HPA scaled down 4→1, one Ready, three going: Ready", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(1), 1, 1, 4, true, readyPod("p-a", "gpu-0"), deletingPod("p-b", "gpu-1"), deletingPod("p-c", "gpu-2"), deletingPod("p-d", "gpu-3")),
			contains: []string{"1 replicas Ready, at least 1 needed (autoscaled between 1 and 4)", "scaling down to 1 replica"}},
		{name: "HPA scaled down 4→1, its generation not observed yet, pods not marked going yet: Ready", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts: func() Facts {
				f := scalingFacts(within(1), 1, 1, 4, true, readyPod("p-a", "gpu-0"), readyPod("p-b", "gpu-1"), readyPod("p-c", "gpu-2"), readyPod("p-d", "gpu-3"))
				f.Workload.RolledOut = false
				return f
			}(),
			contains: []string{"1 replicas Ready, at least 1 needed", "scaling down to 1 replica"}},
		{name: "HPA scaling up 1→3, one Ready, two starting: Ready, the scale said", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts: func() Facts {
				f := scalingFacts(within(1), 1, 3, 3, true, readyPod("p-a", "gpu-0"), startingPod("p-b", "gpu-1"), startingPod("p-c", "gpu-2"))
				f.Workload.RolledOut = false // the new pods are not all of the ReplicaSet's status yet
				return f
			}(),
			contains: []string{"1 replicas Ready, at least 1 needed", "scaling up to 3 replicas (1 Ready)"}},
		{name: "HPA scaling up 2→4 with minReplicas 2, two Ready: Ready", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(2), 2, 4, 4, true, readyPod("p-a", "gpu-0"), readyPod("p-b", "gpu-1"), startingPod("p-c", "gpu-2"), startingPod("p-d", "gpu-3")),
			contains: []string{"2 replicas Ready, at least 2 needed (autoscaled between 2 and 4)", "scaling up to 4 replicas (2 Ready)"}},
		{name: "settled at the autoscaler's 3, all Ready: Ready, no scaling said", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(1), 1, 3, 3, true, readyPod("p-a", "gpu-0"), readyPod("p-b", "gpu-1"), readyPod("p-c", "gpu-2")),
			contains: []string{"3 replicas Ready, at least 1 needed"}, lacks: "scaling"},
		{name: "external autoscaler (KEDA) scaled 1→3, one Ready: Ready", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts: scalingFacts(&v1alpha1.Autoscaling{MinReplicas: 1, MaxReplicas: 4, External: true}, 1, 3, 3, true,
				readyPod("p-a", "gpu-0"), startingPod("p-b", "gpu-1"), startingPod("p-c", "gpu-2")),
			contains: []string{"scaling up to 3 replicas (1 Ready)"}},
		{name: "no Ready replica while the HPA scales: NotReady", state: sNotReady, progress: ReasonReplicasNotReady,
			facts:    scalingFacts(within(1), 1, 3, 3, true, startingPod("p-a", "gpu-0"), startingPod("p-b", "gpu-1"), startingPod("p-c", "gpu-2")),
			contains: []string{"0 replicas Ready, at least 1 needed"}},
		{name: "no Ready replica, the pods crash: NotReady and stalled", state: sNotReady, progress: ReasonContainerStartFailed,
			facts: func() Facts {
				crash := Pod{Name: "p-a", Phase: corev1.PodRunning, NodeName: "gpu-0", NodeReady: true, WaitingReason: "CrashLoopBackOff", Terminated: "Error (exit code 1): boom"}
				return scalingFacts(within(1), 1, 1, 1, true, crash)
			}(),
			contains: []string{"CrashLoopBackOff"}},
		// The acceptance table's transient: an apply switches a workspace from an external
		// autoscaler to an HPA with minReplicas 2 and a new pod template while its Deployment
		// is at 1. The rollout's new pod is Ready beside the old one: two Ready pods, but the
		// Deployment asks for one, so the old one goes next; not Ready until the HPA's first
		// pass has raised the Deployment to minReplicas and those replicas serve.
		{name: "new template, Deployment at 1 below minReplicas 2, the old pod and the surge pod Ready: not Ready", state: sNotReady, progress: ReasonReplicasNotReady,
			resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(2), 2, 1, 2, false, readyPod("old", "gpu-0"), readyPod("new", "gpu-1")),
			contains: []string{"1 replicas Ready, at least 2 needed (autoscaled between 2 and 4)", "below minReplicas: waiting for the autoscaler to scale it up"}},
		{name: "the old pod gone, Deployment still at 1: not Ready, the autoscaler awaited (not the scheduler)", state: sNotReady, progress: ReasonReplicasNotReady,
			resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(2), 2, 1, 1, false, readyPod("new", "gpu-1")),
			contains: []string{"1 replicas Ready, at least 2 needed", "waiting for the autoscaler to scale it up"}},
		{name: "the HPA raised it to 2, both Ready: Ready", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(2), 2, 2, 2, false, readyPod("new", "gpu-1"), readyPod("new-2", "gpu-2")),
			contains: []string{"2 replicas Ready, at least 2 needed"}},
		{name: "new template at the HPA's 4 = minReplicas, an old pod still there beside four new (three Ready): not Ready", state: sNotReady, progress: ReasonReplicasNotReady,
			resource: metav1.ConditionTrue,
			facts: scalingFacts(within(4), 4, 4, 5, false, readyPod("old", "gpu-0"), readyPod("n-1", "gpu-1"), readyPod("n-2", "gpu-2"), readyPod("n-3", "gpu-3"),
				startingPod("n-4", "gpu-4")),
			contains: []string{"3 replicas Ready, at least 4 needed", "1 pod(s) beyond the deployment's 4 replica(s) going, not counted"}},
		{name: "new template at the HPA's 4 = minReplicas, the old pod gone, four new Ready: Ready", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(within(4), 4, 4, 4, false, readyPod("n-1", "gpu-1"), readyPod("n-2", "gpu-2"), readyPod("n-3", "gpu-3"), readyPod("n-4", "gpu-4")),
			contains: []string{"4 replicas Ready, at least 4 needed"}, lacks: "scaling"},
		{name: "new template at the HPA's 4, minReplicas 1, two new pods wait for room, one old pod kept: Ready on the two new", state: sReady, progress: ReasonInferenceReady,
			resource: metav1.ConditionTrue,
			facts: scalingFacts(within(1), 1, 4, 5, false, readyPod("old", "gpu-0"), readyPod("n-1", "gpu-1"), readyPod("n-2", "gpu-2"),
				Pod{Name: "n-3", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."},
				Pod{Name: "n-4", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."}),
			contains: []string{"2 replicas Ready, at least 1 needed (autoscaled between 1 and 4)", "scaling up to 4 replicas (2 Ready)"}},
		{name: "no autoscaling, 1 of 2 Ready: NotReady as before", state: sNotReady, progress: ReasonReplicasNotReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(nil, 2, 2, 2, true, readyPod("p-a", "gpu-0"), startingPod("p-b", "gpu-1")),
			contains: []string{"1/2 replicas Ready"}},
		{name: "no autoscaling, 2 of 2 Ready and a third pod of the Deployment: Ready as before", state: sReady, progress: ReasonInferenceReady, resource: metav1.ConditionTrue,
			facts:    scalingFacts(nil, 2, 2, 3, false, readyPod("p-a", "gpu-0"), readyPod("p-b", "gpu-1"), readyPod("p-c", "gpu-2")),
			contains: []string{"3/2 replicas Ready"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Decide(tc.facts)
			if err != nil {
				t.Fatal(err)
			}
			invariant.Check(t, invariants, tc.facts, d)
			ready := condOf(d, v1alpha1.ConditionReady).Status == metav1.ConditionTrue
			if d.State != tc.state || ready != (tc.state == sReady) {
				t.Errorf("state %s, want %s\n%s", d.State, tc.state, dump(d))
			}
			c := condOf(d, ConditionInferenceReady)
			if c.Reason != tc.progress {
				t.Errorf("InferenceReady reason %q, want %q\n%s", c.Reason, tc.progress, dump(d))
			}
			for _, sub := range tc.contains {
				if !strings.Contains(c.Message, sub) {
					t.Errorf("InferenceReady message %q lacks %q", c.Message, sub)
				}
			}
			if tc.lacks != "" && strings.Contains(c.Message, tc.lacks) {
				t.Errorf("InferenceReady message %q says %q", c.Message, tc.lacks)
			}
			if r := condOf(d, ConditionResourceReady); tc.resource != "" && r.Status != tc.resource {
				t.Errorf("ResourceReady %s, want %s\n%s", r.Status, tc.resource, dump(d))
			}
			if slices.Contains(d.Actions, ActionEnsureWorkload) && tc.facts.Autoscaling != nil {
				t.Errorf("the Deployment is re-written under autoscaling: %v", d.Actions)
			}
		})
	}
}

// The acceptance table's batch, pass by pass, each pass's conditions the next one's memory:
// once Ready at the new generation, the workspace stays Ready through everything the
// HorizontalPodAutoscaler and the Deployment controller do afterwards (the old pod going, the
// HPA raising the count, its generation observed later, a scale down), so neither the
// provider's wait nor a refresh sees Ready and then NotReady.
func TestAutoscaledApplyNeverReadyThenNotReady(t *testing.T) {
	old, surge := readyPod("old", "gpu-0"), readyPod("new", "gpu-1")
	passes := []struct {
		name string
		mod  func(f *Facts)
	}{
		{"the new template written, the Deployment at 1", func(f *Facts) { f.Workload.UpToDate = false; f.Pods = []Pod{old} }},
		{"surge: the old pod and the new pod Ready", func(f *Facts) { f.Workload.CurrentReplicas, f.Pods = 2, []Pod{old, surge} }},
		{"the old pod going", func(f *Facts) { f.Pods = []Pod{deletingPod("old", "gpu-0"), surge} }},
		{"the old pod gone", func(f *Facts) { f.Pods = []Pod{surge} }},
		{"the HPA raises it to 2, not observed yet", func(f *Facts) {
			f.Workload.Replicas, f.Workload.RolledOut, f.AutoscalerDesired, f.Pods = 2, false, 2, []Pod{surge}
		}},
		{"the second replica starting", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.AutoscalerDesired, f.Pods = 2, 2, 2, []Pod{surge, startingPod("new-2", "gpu-2")}
		}},
		{"both Ready", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.AutoscalerDesired, f.Pods = 2, 2, 2, []Pod{surge, readyPod("new-2", "gpu-2")}
		}},
		{"the HPA scales up to 4, not observed yet", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.Workload.RolledOut, f.AutoscalerDesired = 4, 2, false, 4
			f.Pods = []Pod{surge, readyPod("new-2", "gpu-2")}
		}},
		{"two more starting, one waits for room", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.AutoscalerDesired = 4, 4, 4
			f.Pods = []Pod{surge, readyPod("new-2", "gpu-2"), startingPod("new-3", "gpu-3"),
				{Name: "new-4", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."}}
		}},
		{"the HPA scales down to 2, its two pods not Ready not shown going yet", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.Workload.RolledOut, f.AutoscalerDesired = 2, 4, false, 2
			f.Pods = []Pod{surge, readyPod("new-2", "gpu-2"), startingPod("new-3", "gpu-3"),
				{Name: "new-4", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."}}
		}},
		{"the HPA scales down to 2 (minReplicas), two pods going", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.Workload.RolledOut, f.AutoscalerDesired = 2, 4, false, 2
			f.Pods = []Pod{surge, readyPod("new-2", "gpu-2"), deletingPod("new-3", "gpu-3"), deletingPod("new-4", "gpu-4")}
		}},
		{"settled at 2", func(f *Facts) {
			f.Workload.Replicas, f.Workload.CurrentReplicas, f.AutoscalerDesired = 2, 2, 2
			f.Pods = []Pod{surge, readyPod("new-2", "gpu-2")}
		}},
	}
	conds := append(was(inf, sReady), failure.Condition(ConditionInferenceReady, true, ReasonInferenceReady, "", 1))
	var states []State
	for _, p := range passes {
		f := scalingFacts(within(2), 2, 1, 1, false)
		f.Generation, f.Conditions, f.AutoscalerDesired = 2, conds, 0
		p.mod(&f)
		d, err := Decide(f)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		invariant.Check(t, invariants, f, d)
		states = append(states, d.State)
		t.Logf("%-55s %-8s %s", p.name, d.State, condOf(d, ConditionInferenceReady).Message)
		conds = d.Conditions
	}
	first := slices.Index(states, sReady)
	if first < 0 {
		t.Fatalf("never Ready: %v", states)
	}
	if passes[first].name != "both Ready" {
		t.Errorf("first Ready in pass %q, want %q (states %v)", passes[first].name, "both Ready", states)
	}
	for i := first; i < len(states); i++ {
		if states[i] != sReady {
			t.Errorf("Ready, then %s in pass %q: states %v", states[i], passes[i].name, states)
		}
	}
}
