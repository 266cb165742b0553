package workspace

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/autoscale"
)

// Autoscaling that Terraform never fights (KAITO's asks: kaito-project/kaito #1380, #1659). With
// spec.autoscaling an autoscaler owns the inference Deployment's spec.replicas: the reconciler's
// HorizontalPodAutoscaler (DesiredAutoscaler) or, with external, the user's own (e.g. KEDA). The
// reconciler writes replicas only on create (ReplicasToWrite) and leaves them out of the spec
// hash and up-to-date check, so it never takes the count back; minReplicas must be Ready for
// the workspace to be Ready.

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
// it is: the autoscaler's count is never taken back (autoscale.ReplicasToWrite).
func ReplicasToWrite(w *v1alpha1.Workspace, exists bool, live *int32) *int32 {
	if !Autoscaled(w) {
		n := Replicas(w)
		return &n
	}
	return autoscale.ReplicasToWrite(w.Spec.Autoscaling, Replicas(w), exists, live)
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
	case out.Spec.Inference != nil && out.Spec.Inference.ModelGPUs > out.Spec.Resource.GPUCount:
		return fmt.Errorf("spec.autoscaling: the model needs %d GPUs but one replica has %d (spec.resource.gpuCount): a multi-node group serves one model with a fixed number of pods and cannot be autoscaled; give each replica the model's GPUs",
			out.Spec.Inference.ModelGPUs, out.Spec.Resource.GPUCount)
	}
	return autoscale.Check(a)
}

// DesiredAutoscaler is the HorizontalPodAutoscaler workspace-<name> of w (resolved) when it
// wants one (WantsAutoscaler; nil otherwise): it scales the Deployment workspace-<name> between
// spec.autoscaling's bounds on its metric, labelled as the other owned objects and annotated
// with the hash of its spec (autoscale.Desired). No owner reference (the controller adds it).
func DesiredAutoscaler(w *v1alpha1.Workspace) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	if !WantsAutoscaler(w) {
		return nil, nil
	}
	return autoscale.Desired(w.Spec.Autoscaling, autoscale.Target{Name: ObjectName(w.Name), Namespace: w.Namespace, Labels: Labels(w), Deployment: ObjectName(w.Name)})
}

// AutoscalerFacts reads a live HorizontalPodAutoscaler workspace-<name> (nil: absent) against
// the desired one (nil: none wanted): autoscale.Facts.
func AutoscalerFacts(have, want *autoscalingv2.HorizontalPodAutoscaler, owner types.UID) (Object, int32) {
	o, desired := autoscale.Facts(have, want, owner)
	return Object{Exists: o.Exists, Foreign: o.Foreign, UpToDate: o.UpToDate}, desired
}

// WorkloadReplicas are a live Deployment's spec.replicas (what the autoscaler last set, or
// spec.resource.count) and status.replicas (its pods now); 0, 0 when it is nil.
func WorkloadReplicas(d *appsv1.Deployment) (spec, current int32) {
	return autoscale.DeploymentReplicas(d)
}

// wantsAutoscaler: the pass's spec wants the reconciler's HorizontalPodAutoscaler.
func wantsAutoscaler(f Facts) bool {
	return f.Mode == v1alpha1.WorkspaceModeInference && f.Autoscaling != nil && !f.Autoscaling.External
}

// servesMinimum: an autoscaled workspace's Deployment is up to date and rolled out and at
// least minReplicas (f.Replicas) of the replicas the autoscaler asks for serve (serving: Ready
// on Ready nodes, sure to stay). The workspace is then ready whatever the autoscaler's further
// replicas do (wait for a node, pull, start).
func servesMinimum(f Facts, pods podProblems) bool {
	return f.Autoscaling != nil && serving(f, pods) >= f.Replicas && f.Workload != nil && !f.Workload.Foreign && f.Workload.UpToDate && rolledOut(f)
}

// target is the replica count the autoscaler asks of an autoscaled workspace's workload: the
// Deployment's spec.replicas as the autoscaler last set it (Workload.Replicas); -1 (unknown)
// without spec.autoscaling or without a workload of the workspace's own.
func target(f Facts) int32 {
	if f.Autoscaling == nil || f.Workload == nil || f.Workload.Foreign {
		return -1
	}
	return f.Workload.Replicas
}

// serving is how many replicas count toward the f.Replicas the workspace needs Ready: the Ready
// pods on Ready nodes (all of them without spec.autoscaling); under spec.autoscaling only those sure to stay among the replicas the
// autoscaler asks for (autoscale.Staying: the pods beyond its count, an old template's pods a
// rollout still keeps, a surge pod, are taken off), and once the workspace serves this
// generation (servingGeneration) no more than it asks for (autoscale.Serving: a scale-down's
// pods not shown deleted yet may be the ones not Ready). Counting every Ready pod made a
// workspace whose Deployment was still below minReplicas, before the HorizontalPodAutoscaler's
// first pass raised it, Ready on the old pod and the rollout's surge pod, and NotReady a moment
// later, after its apply had returned.
func serving(f Facts, pods podProblems) int32 {
	if servingGeneration(f) {
		return autoscale.Serving(pods.readyOnReadyNode, target(f))
	}
	return autoscale.Staying(pods.readyOnReadyNode, pods.active, target(f))
}

// surplus is, for an autoscaled workspace not serving this generation yet, how many of its
// pods are beyond the autoscaler's count (about to go: serving does not count them); 0
// otherwise.
func surplus(f Facts, pods podProblems) int32 {
	if t := target(f); t >= 0 && !servingGeneration(f) {
		return max(pods.active-t, 0)
	}
	return 0
}

// servingGeneration: the workspace is autoscaled and was already serving this generation of
// its spec (InferenceReady=True at f.Generation, the machine's memory): what the autoscaler
// does to the count since (and its Deployment controller's observing it a moment later) does
// not undo that. The reconciler changes the Deployment's template only for a new spec, or
// after a pass that found it not up to date and set InferenceReady=False.
func servingGeneration(f Facts) bool {
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

// placing is how many replicas must be bound to a node for ResourceReady: f.Replicas, under
// spec.autoscaling no more than the autoscaler has asked for yet (target): while the
// Deployment is below minReplicas the scheduler has no more pods to place; InferenceReady says
// that the autoscaler is awaited (autoscalerWait).
func placing(f Facts) int32 {
	if t := target(f); t >= 0 {
		return min(f.Replicas, t)
	}
	return f.Replicas
}

// autoscalerWait is the part of a not Ready autoscaled workspace's InferenceReady message that
// says what the replicas counted wait for ("" without autoscaling): the autoscaler, while it
// keeps the Deployment below minReplicas (the HorizontalPodAutoscaler raises it on its next
// pass; an external autoscaler should, its own minimum may be lower), and the pods beyond its
// count that are not counted (surplus) to go.
func autoscalerWait(f Facts, pods podProblems) string {
	t := target(f)
	if t < 0 {
		return ""
	}
	msg := ""
	if t < f.Replicas {
		msg = fmt.Sprintf("; the deployment is at %d replica(s), below minReplicas: waiting for the autoscaler to scale it up", t)
	}
	if n := surplus(f, pods); n > 0 {
		msg += fmt.Sprintf("; %d pod(s) beyond the deployment's %d replica(s) going, not counted", n, t)
	}
	return msg
}

// rolledOut: the Deployment's rollout is done (Workload.RolledOut). Under spec.autoscaling
// the autoscaler's scaling bumps the Deployment's generation too, and its controller observes
// that a moment later: an autoscaled workspace already serving this generation of its spec
// (servingGeneration) counts as rolled out, so a scale never flips it to NotReady.
func rolledOut(f Facts) bool {
	if f.Workload == nil {
		return false
	}
	return f.Workload.RolledOut || servingGeneration(f)
}

// replicasReady is the replica part of InferenceReady's message: "2/3 replicas Ready", or under
// spec.autoscaling "3 replicas Ready, at least 1 needed (autoscaled between 1 and 4)".
func replicasReady(f Facts, ready int32) string {
	if a := f.Autoscaling; a != nil {
		return autoscale.Bounds(a, ready)
	}
	return fmt.Sprintf("%d/%d replicas Ready", ready, f.Replicas)
}

// scaling is the part of a Ready workspace's InferenceReady message that says its autoscaler is
// moving the count ("; scaling up to 3 replicas (1 Ready)", "; scaling down to 1 replica";
// autoscale.Scaling of ready, the replicas serving), "" when it is not or without
// spec.autoscaling. The scale is no failure.
func scaling(f Facts, ready int32) string {
	t := target(f)
	if t < 0 {
		return ""
	}
	return autoscale.Scaling(t, f.Workload.CurrentReplicas, ready)
}

// replicaCounts are status.currentReplicas and status.desiredReplicas of an inference pass:
// the workspace's workload's pods now; autoscale.Desire: without spec.autoscaling
// spec.resource.count (f.Replicas), else the HorizontalPodAutoscaler's desired replicas once
// it has computed them, else (an external autoscaler, or before the HPA's first pass) the
// Deployment's spec.replicas, else minReplicas (at least 1: f.Replicas under autoscaling). 0, 0
// for tuning.
func replicaCounts(f Facts) (current, desired int32) {
	if f.Mode != v1alpha1.WorkspaceModeInference {
		return 0, 0
	}
	var deployReplicas int32
	if w := f.Workload; w != nil && !w.Foreign {
		current, deployReplicas = w.CurrentReplicas, w.Replicas
	}
	return current, autoscale.Desire(f.Autoscaling, f.Replicas, autoscale.Object(f.Autoscaler), f.AutoscalerDesired, deployReplicas)
}
