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
		return autoscale.Bounds(a, ready)
	}
	return fmt.Sprintf("%d/%d replicas Ready", ready, f.Replicas)
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
