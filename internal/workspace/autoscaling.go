package workspace

import (
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Autoscaling that Terraform never fights (KAITO's asks: kaito-project/kaito #1380, a KEDA
// autoscaler for workspaces, and #1659, the InferenceSet that scales them). With
// spec.autoscaling an autoscaler owns the inference Deployment's spec.replicas: a
// HorizontalPodAutoscaler (autoscaling/v2) workspace-<name> the reconciler owns (DesiredAutoscaler),
// or, with spec.autoscaling.external, the user's own (a KEDA ScaledObject). The reconciler
// writes spec.replicas only when it creates the Deployment (ReplicasToWrite) and leaves it out
// of the spec hash and of the up-to-date check, so it never takes the autoscaler's count back;
// Replicas is minReplicas, the replicas that must be Ready for the workspace to be Ready.

// Autoscaled reports whether w hands its replicas to an autoscaler (spec.autoscaling, inference).
func Autoscaled(w *v1alpha1.Workspace) bool {
	return w.Spec.Autoscaling != nil && w.Spec.Inference != nil
}

// WantsAutoscaler reports whether w (resolved) wants the reconciler's HorizontalPodAutoscaler:
// spec.autoscaling without external.
func WantsAutoscaler(w *v1alpha1.Workspace) bool {
	return Autoscaled(w) && !w.Spec.Autoscaling.External
}

// ReplicasToWrite is the spec.replicas the reconciler writes on the workspace's Deployment:
// Replicas (spec.resource.count) without autoscaling; under spec.autoscaling minReplicas when
// it creates the Deployment (exists false), and afterwards live, the Deployment's own value, as
// it is: the autoscaler's count is never taken back.
func ReplicasToWrite(w *v1alpha1.Workspace, exists bool, live *int32) *int32 {
	n := Replicas(w)
	if !Autoscaled(w) || !exists || live == nil {
		return &n
	}
	v := *live
	return &v
}

// checkAutoscaling refuses what spec.autoscaling cannot do: scale a tuning workspace (one Job
// pod) or a multi-node group (its size is the model's, spec.inference.modelGPUs above one
// replica's spec.resource.gpuCount), and a metric whose target is not a quantity above 0.
func checkAutoscaling(out *v1alpha1.Workspace) error {
	a := out.Spec.Autoscaling
	if a == nil {
		return nil
	}
	switch {
	case out.Spec.Tuning != nil:
		return fmt.Errorf("spec.autoscaling: a tuning workspace runs one Job pod; autoscaling is for inference")
	case a.MaxReplicas < a.MinReplicas:
		return fmt.Errorf("spec.autoscaling.maxReplicas: %d is below minReplicas %d", a.MaxReplicas, a.MinReplicas)
	case out.Spec.Inference != nil && out.Spec.Inference.ModelGPUs > out.Spec.Resource.GPUCount:
		return fmt.Errorf("spec.autoscaling: the model needs %d GPUs but one replica has %d (spec.resource.gpuCount): a multi-node group serves one model with a fixed number of pods and cannot be autoscaled; give each replica the model's GPUs",
			out.Spec.Inference.ModelGPUs, out.Spec.Resource.GPUCount)
	}
	if a.External || a.Metric == nil {
		return nil
	}
	_, err := metricSpec(*a.Metric)
	return err
}

// DesiredAutoscaler is the HorizontalPodAutoscaler workspace-<name> of w (resolved) when it
// wants one (WantsAutoscaler; nil otherwise): it scales the Deployment workspace-<name> between
// spec.autoscaling's bounds on its metric, labelled as the other owned objects and annotated
// with the hash of its spec (AnnotationSpecHash). No owner reference (the controller adds it).
func DesiredAutoscaler(w *v1alpha1.Workspace) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	if !WantsAutoscaler(w) {
		return nil, nil
	}
	a := w.Spec.Autoscaling
	if a.Metric == nil {
		return nil, fmt.Errorf("spec.autoscaling.metric: a HorizontalPodAutoscaler needs a metric (or set spec.autoscaling.external)")
	}
	m, err := metricSpec(*a.Metric)
	if err != nil {
		return nil, err
	}
	lo := a.MinReplicas
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: ObjectName(w.Name)},
		MinReplicas:    &lo,
		MaxReplicas:    a.MaxReplicas,
		Metrics:        []autoscalingv2.MetricSpec{m},
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(w.Name), Namespace: w.Namespace, Labels: Labels(w),
			Annotations: map[string]string{v1alpha1.AnnotationSpecHash: hashOf(spec)}},
		Spec: spec,
	}, nil
}

// metricSpec is m as an autoscaling/v2 MetricSpec with an AverageValue target.
func metricSpec(m v1alpha1.WorkspaceMetric) (autoscalingv2.MetricSpec, error) {
	switch {
	case m.CPUAverageValue != "":
		q, err := positiveQuantity("spec.autoscaling.metric.cpuAverageValue", m.CPUAverageValue)
		if err != nil {
			return autoscalingv2.MetricSpec{}, err
		}
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}}}, nil
	case m.Pods != nil:
		id, target, err := metricSource("spec.autoscaling.metric.pods", *m.Pods)
		if err != nil {
			return autoscalingv2.MetricSpec{}, err
		}
		return autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: id, Target: target}}, nil
	case m.External != nil:
		id, target, err := metricSource("spec.autoscaling.metric.external", *m.External)
		if err != nil {
			return autoscalingv2.MetricSpec{}, err
		}
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{Metric: id, Target: target}}, nil
	}
	return autoscalingv2.MetricSpec{}, fmt.Errorf("spec.autoscaling.metric: needs one of cpuAverageValue, pods and external")
}

func metricSource(field string, s v1alpha1.WorkspaceMetricSource) (autoscalingv2.MetricIdentifier, autoscalingv2.MetricTarget, error) {
	q, err := positiveQuantity(field+".averageValue", s.AverageValue)
	if err != nil {
		return autoscalingv2.MetricIdentifier{}, autoscalingv2.MetricTarget{}, err
	}
	id := autoscalingv2.MetricIdentifier{Name: s.Name}
	if len(s.Selector) > 0 {
		id.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(s.Selector)}
	}
	return id, autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}, nil
}

// positiveQuantity parses s (field names it in the error) as a quantity above 0, as the
// HorizontalPodAutoscaler's averageValue must be.
func positiveQuantity(field, s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, fmt.Errorf("%s: %q is not a quantity such as 5 or 500m", field, s)
	}
	if q.Sign() <= 0 {
		return q, fmt.Errorf("%s: %q must be above 0", field, s)
	}
	return q, nil
}

// AutoscalerFacts reads a live HorizontalPodAutoscaler workspace-<name> (nil: absent) against
// the desired one (nil: none wanted): whether it is there, someone else's, up to date (its
// spec hash, bounds, target and metrics are the desired ones), and its status.desiredReplicas.
func AutoscalerFacts(have, want *autoscalingv2.HorizontalPodAutoscaler, owner types.UID) (Object, int32) {
	if have == nil {
		return Object{}, 0
	}
	if !controlledBy(have, owner) {
		return Object{Exists: true, Foreign: true}, 0
	}
	up := want != nil && have.DeletionTimestamp == nil && have.Annotations[v1alpha1.AnnotationSpecHash] == want.Annotations[v1alpha1.AnnotationSpecHash] &&
		equality.Semantic.DeepEqual(have.Spec, want.Spec)
	return Object{Exists: true, UpToDate: up}, have.Status.DesiredReplicas
}

// WorkloadReplicas are a live Deployment's spec.replicas (what the autoscaler last set, or
// spec.resource.count) and status.replicas (its pods now); 0, 0 when it is nil.
func WorkloadReplicas(d *appsv1.Deployment) (spec, current int32) {
	if d == nil {
		return 0, 0
	}
	spec = 1
	if d.Spec.Replicas != nil {
		spec = *d.Spec.Replicas
	}
	return spec, d.Status.Replicas
}

// wantsAutoscaler: the pass's spec wants the reconciler's HorizontalPodAutoscaler.
func wantsAutoscaler(f Facts) bool {
	return f.Mode == v1alpha1.WorkspaceModeInference && f.Autoscaling != nil && !f.Autoscaling.External
}

// servesMinimum: an autoscaled workspace's Deployment is up to date and rolled out and at
// least minReplicas (f.Replicas) replicas are Ready on Ready nodes. The workspace is then
// ready whatever the autoscaler's further replicas do (wait for a node, pull, start).
func servesMinimum(f Facts, pods podProblems) bool {
	return f.Autoscaling != nil && pods.readyOnReadyNode >= f.Replicas && f.Workload != nil && !f.Workload.Foreign && f.Workload.UpToDate && rolledOut(f)
}

// rolledOut: the Deployment's rollout is done (Workload.RolledOut). Under spec.autoscaling
// the autoscaler's scaling bumps the Deployment's generation too, and its controller observes
// that a moment later: an autoscaled workspace that was already serving this generation of its
// spec (InferenceReady=True at f.Generation, the machine's memory; the reconciler changes the
// Deployment's template only for a new spec, or after a pass that found it not up to date and
// set InferenceReady=False) counts as rolled out, so a scale never flips it to NotReady.
func rolledOut(f Facts) bool {
	if f.Workload == nil {
		return false
	}
	if f.Workload.RolledOut {
		return true
	}
	if f.Autoscaling == nil {
		return false
	}
	for _, c := range f.Conditions {
		if c.Type == ConditionInferenceReady {
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == f.Generation
		}
	}
	return false
}

// replicasReady is the replica part of InferenceReady's message: "2/3 replicas Ready", or under
// spec.autoscaling "3 replicas Ready, at least 1 needed (autoscaled between 1 and 4)".
func replicasReady(f Facts, ready int32) string {
	if a := f.Autoscaling; a != nil {
		return fmt.Sprintf("%d replicas Ready, at least %d needed (autoscaled between %d and %d)", ready, f.Replicas, a.MinReplicas, a.MaxReplicas)
	}
	return fmt.Sprintf("%d/%d replicas Ready", ready, f.Replicas)
}

// replicaCounts are status.currentReplicas and status.desiredReplicas of an inference pass:
// the workspace's workload's pods now; the HorizontalPodAutoscaler's desired replicas once it
// has computed them, else (an external autoscaler, or before the HPA's first pass) the
// Deployment's spec.replicas under spec.autoscaling, else spec.resource.count. 0, 0 for tuning.
func replicaCounts(f Facts) (current, desired int32) {
	if f.Mode != v1alpha1.WorkspaceModeInference {
		return 0, 0
	}
	w := f.Workload
	if w != nil && w.Foreign {
		w = nil
	}
	if w != nil {
		current = w.CurrentReplicas
	}
	switch {
	case f.Autoscaling == nil:
		desired = f.Replicas
	case wantsAutoscaler(f) && f.Autoscaler.Exists && !f.Autoscaler.Foreign && f.AutoscalerDesired > 0:
		desired = f.AutoscalerDesired
	case w != nil && w.Replicas > 0:
		desired = w.Replicas
	default:
		desired = f.Replicas
	}
	return current, desired
}
