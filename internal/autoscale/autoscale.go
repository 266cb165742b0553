// Package autoscale is autoscaling that Terraform never fights, shared by Workspaces
// (internal/workspace, issue 40 item 4) and Performers (internal/performer, issue 40 item 8):
// spec.autoscaling (v1alpha1.Autoscaling) becomes a HorizontalPodAutoscaler (autoscaling/v2)
// the object owns, scaling its Deployment between minReplicas and maxReplicas on one metric
// (Desired), or, with external, nothing (the user's KEDA ScaledObject scales it). Whoever
// scales, the reconciler writes the Deployment's spec.replicas only when it creates it
// (ReplicasToWrite), so the autoscaler's count is never taken back. Pure functions, no
// controller-runtime.
package autoscale

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

// Target is what an autoscaler is built for: the HorizontalPodAutoscaler's name, namespace and
// labels, and the Deployment it scales (same namespace).
type Target struct {
	Name, Namespace string
	Labels          map[string]string
	Deployment      string
}

// WantsAutoscaler reports whether a (nil: no autoscaling) wants the reconciler's
// HorizontalPodAutoscaler: spec.autoscaling without external.
func WantsAutoscaler(a *v1alpha1.Autoscaling) bool {
	return a != nil && !a.External
}

// ReplicasToWrite is the spec.replicas the reconciler writes on an object's Deployment: fixed
// without autoscaling (a nil); under autoscaling minReplicas when it creates the Deployment
// (exists false), and afterwards live, the Deployment's own value, as it is: the autoscaler's
// count is never taken back.
func ReplicasToWrite(a *v1alpha1.Autoscaling, fixed int32, exists bool, live *int32) *int32 {
	switch {
	case a == nil:
		return &fixed
	case !exists || live == nil:
		n := max(a.MinReplicas, 1)
		return &n
	}
	v := *live
	return &v
}

// Check refuses what HorizontalPodAutoscaler cannot do with a: maxReplicas below minReplicas,
// a metric whose target is not a quantity above 0 (nil a: nothing to check).
func Check(a *v1alpha1.Autoscaling) error {
	if a == nil {
		return nil
	}
	if a.MaxReplicas < a.MinReplicas {
		return fmt.Errorf("spec.autoscaling.maxReplicas: %d is below minReplicas %d", a.MaxReplicas, a.MinReplicas)
	}
	if a.External || a.Metric == nil {
		return nil
	}
	_, err := MetricSpec(*a.Metric)
	return err
}

// Desired is the HorizontalPodAutoscaler t.Name of a when it wants one (WantsAutoscaler; nil
// otherwise): it scales the Deployment t.Deployment between a's bounds on its metric,
// labelled t.Labels and annotated with the hash of its spec (v1alpha1.AnnotationSpecHash). No
// owner reference (the controller adds it).
func Desired(a *v1alpha1.Autoscaling, t Target) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	if !WantsAutoscaler(a) {
		return nil, nil
	}
	if a.Metric == nil {
		return nil, fmt.Errorf("spec.autoscaling.metric: a HorizontalPodAutoscaler needs a metric (or set spec.autoscaling.external)")
	}
	m, err := MetricSpec(*a.Metric)
	if err != nil {
		return nil, err
	}
	lo := a.MinReplicas
	spec := autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: t.Deployment},
		MinReplicas:    &lo,
		MaxReplicas:    a.MaxReplicas,
		Metrics:        []autoscalingv2.MetricSpec{m},
	}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: t.Name, Namespace: t.Namespace, Labels: maps.Clone(t.Labels),
			Annotations: map[string]string{v1alpha1.AnnotationSpecHash: hashOf(spec)}},
		Spec: spec,
	}, nil
}

// MetricSpec is m as an autoscaling/v2 MetricSpec with an AverageValue target.
func MetricSpec(m v1alpha1.AutoscalingMetric) (autoscalingv2.MetricSpec, error) {
	switch {
	case m.CPUAverageValue != "":
		q, err := PositiveQuantity("spec.autoscaling.metric.cpuAverageValue", m.CPUAverageValue)
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

func metricSource(field string, s v1alpha1.AutoscalingMetricSource) (autoscalingv2.MetricIdentifier, autoscalingv2.MetricTarget, error) {
	q, err := PositiveQuantity(field+".averageValue", s.AverageValue)
	if err != nil {
		return autoscalingv2.MetricIdentifier{}, autoscalingv2.MetricTarget{}, err
	}
	id := autoscalingv2.MetricIdentifier{Name: s.Name}
	if len(s.Selector) > 0 {
		id.Selector = &metav1.LabelSelector{MatchLabels: maps.Clone(s.Selector)}
	}
	return id, autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &q}, nil
}

// PositiveQuantity parses s (field names it in the error) as a quantity above 0, as the
// HorizontalPodAutoscaler's averageValue must be.
func PositiveQuantity(field, s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return q, fmt.Errorf("%s: %q is not a quantity such as 5 or 500m", field, s)
	}
	if q.Sign() <= 0 {
		return q, fmt.Errorf("%s: %q must be above 0", field, s)
	}
	return q, nil
}

// Object is what a pass knows of a live HorizontalPodAutoscaler: it exists, is someone else's
// (Foreign), is the desired one (UpToDate).
type Object struct {
	Exists, Foreign, UpToDate bool
}

// Facts reads a live HorizontalPodAutoscaler (nil: absent) against the desired one (nil: none
// wanted): whether it is there, someone else's, up to date (its spec hash, bounds, target and
// metrics are the desired ones), and its status.desiredReplicas.
func Facts(have, want *autoscalingv2.HorizontalPodAutoscaler, owner types.UID) (Object, int32) {
	if have == nil {
		return Object{}, 0
	}
	if ref := metav1.GetControllerOf(have); ref == nil || ref.UID != owner {
		return Object{Exists: true, Foreign: true}, 0
	}
	up := want != nil && have.DeletionTimestamp == nil && have.Annotations[v1alpha1.AnnotationSpecHash] == want.Annotations[v1alpha1.AnnotationSpecHash] &&
		equality.Semantic.DeepEqual(have.Spec, want.Spec)
	return Object{Exists: true, UpToDate: up}, have.Status.DesiredReplicas
}

// DeploymentReplicas are a live Deployment's spec.replicas (what the autoscaler last set, or
// the fixed count) and status.replicas (its pods now); 0, 0 when it is nil.
func DeploymentReplicas(d *appsv1.Deployment) (spec, current int32) {
	if d == nil {
		return 0, 0
	}
	spec = 1
	if d.Spec.Replicas != nil {
		spec = *d.Spec.Replicas
	}
	return spec, d.Status.Replicas
}

// Desire is status.desiredReplicas of an autoscaled object: the HorizontalPodAutoscaler's
// desired replicas once it has computed them (hpa: its facts, hpaDesired: its
// status.desiredReplicas), else (an external autoscaler, or before the HPA's first pass) the
// Deployment's spec.replicas (deployReplicas, 0 without one), else minReplicas; without
// autoscaling (a nil) fixed.
func Desire(a *v1alpha1.Autoscaling, fixed int32, hpa Object, hpaDesired, deployReplicas int32) int32 {
	switch {
	case a == nil:
		return fixed
	case WantsAutoscaler(a) && hpa.Exists && !hpa.Foreign && hpaDesired > 0:
		return hpaDesired
	case deployReplicas > 0:
		return deployReplicas
	}
	return max(a.MinReplicas, 1)
}

// Bounds is the replica part of a Ready message under autoscaling: "3 replicas Ready, at
// least 1 needed (autoscaled between 1 and 4)".
func Bounds(a *v1alpha1.Autoscaling, ready int32) string {
	return fmt.Sprintf("%d replicas Ready, at least %d needed (autoscaled between %d and %d)", ready, Needed(a), a.MinReplicas, a.MaxReplicas)
}

// Needed is how many Ready replicas an object under spec.autoscaling a (not nil) needs to
// serve: minReplicas, at least 1. Whatever count the autoscaler sets between the bounds, the
// object is Ready while this many serve.
func Needed(a *v1alpha1.Autoscaling) int32 {
	return max(a.MinReplicas, 1)
}

// Serving is how many of an autoscaled object's ready Ready replicas count toward Needed
// once it serves: no more than target, the replicas the autoscaler asks for (the Deployment's
// spec.replicas as the autoscaler last set it; a negative target is unknown and caps nothing).
// Ready pods beyond the target are on their way out (the pods a scale-down removes and the
// cache does not show deleted yet). Never below 0.
func Serving(ready, target int32) int32 {
	if target >= 0 {
		ready = min(ready, target)
	}
	return max(ready, 0)
}

// Staying is how many of an autoscaled object's ready Ready replicas are sure to stay, for an
// object not serving yet (a new pod template rolling out): active are its pods not going (not
// deleted, not ended; the Deployment's count of pods), target the replicas the autoscaler asks
// for. The active pods beyond the target are about to go (the old pod template's pods a rollout
// still keeps, its surge pod), and each may be a Ready one: they are taken off ready, so what
// counts cannot drop when they go. Counted, they made an object Ready on a pod that went a
// moment later (its Deployment below minReplicas until the autoscaler's first pass raised it,
// rolled out with one surge pod beside the old one). Capped at target (Serving); a negative
// target (unknown) counts ready as it is. Never below 0.
func Staying(ready, active, target int32) int32 {
	if target >= 0 && active > target {
		ready -= active - target
	}
	return Serving(ready, target)
}

// Scaling is the part of a Ready message that says the autoscaler is moving the count, ""
// when it is not: "; scaling up to 3 replicas (1 Ready)" while fewer than target (the
// Deployment's spec.replicas) are Ready, "; scaling down to 1 replica" while more than target
// pods remain (current, its status.replicas). A negative target (unknown) says nothing. The
// scale is not a failure: the object stays Ready while Needed replicas serve.
func Scaling(target, current, ready int32) string {
	switch {
	case target < 0:
		return ""
	case ready < target:
		return fmt.Sprintf("; scaling up to %d %s (%d Ready)", target, plural(target, "replica"), ready)
	case current > target:
		return fmt.Sprintf("; scaling down to %d %s", target, plural(target, "replica"))
	}
	return ""
}

func plural(n int32, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

func hashOf(v any) string {
	b, _ := json.Marshal(v) // plain API structs: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}
