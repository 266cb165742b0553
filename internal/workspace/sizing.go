package workspace

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Sizing is what a resolved workspace (Resolve) asks of the nodes of its instance type, as the
// machine works it out: the GPUs of each pod, whether the pods serve one model together
// (KAITO's multi-node inference, MultiNode), how many pods share a node (ReplicasPerNode), and
// how many Karpenter NodeClaims node provisioning creates on a cluster with no matching free
// GPUs (claimsToCreate, as KAITO's gpu-provisioner creates one NodeClaim per missing node).
//
// Pods are what this package calls replicas (Replicas: spec.resource.count); ModelReplicas
// and NodesPerModelReplica are KAITO's replicas: copies of the model serving side by side, one
// of which spans NodesPerModelReplica nodes (KAITO's perReplicaNodeCount).
type Sizing struct {
	// Pods is spec.resource.count (Replicas: always 1 for tuning).
	Pods int32
	// GPUsPerPod is spec.resource.gpuCount after Resolve: the nvidia.com/gpu devices each pod
	// requests, all on one node (with a MIG partition: 0 GPUs, one slice instead).
	GPUsPerPod int32
	// ModelGPUs is the GPUs one copy of the model is served across: spec.inference.modelGPUs
	// after Resolve for inference, GPUsPerPod for tuning.
	ModelGPUs int32
	// MultiNode: the pods form one group serving one model (MultiNode).
	MultiNode bool
	// ModelReplicas is the copies of the model serving side by side: Pods, or 1 when MultiNode.
	ModelReplicas int32
	// NodesPerModelReplica is the nodes one copy of the model spans: Pods when MultiNode (the
	// pods' GROUP_SIZE), else 1.
	NodesPerModelReplica int32
	// PodsPerNode is how many pods one node of the instance type holds (ReplicasPerNode; 1
	// without an instance type).
	PodsPerNode int32
	// Nodes is the nodes the pods need: ceil(Pods / PodsPerNode).
	Nodes int32
	// NodeClaims is how many NodeClaims the machine creates for the workspace on a cluster
	// where no matching node has free GPUs and no claim exists yet (claimsToCreate); 0 when
	// node provisioning is not wanted (WantsProvisioning).
	NodeClaims int32
}

// SizingOf returns the Sizing of w, which must be resolved (Resolve): the functions the
// reconciler uses decide each field, so a change to the machine's rules shows here too.
func SizingOf(w *v1alpha1.Workspace) Sizing {
	s := Sizing{
		Pods:                 Replicas(w),
		GPUsPerPod:           w.Spec.Resource.GPUCount,
		ModelGPUs:            w.Spec.Resource.GPUCount,
		MultiNode:            MultiNode(w),
		NodesPerModelReplica: 1,
		PodsPerNode:          max(ReplicasPerNode(w), 1),
	}
	if inf := w.Spec.Inference; inf != nil && inf.ModelGPUs > 0 {
		s.ModelGPUs = inf.ModelGPUs
	}
	s.ModelReplicas = s.Pods
	if s.MultiNode {
		s.ModelReplicas, s.NodesPerModelReplica = 1, s.Pods
	}
	s.Nodes = (s.Pods + s.PodsPerNode - 1) / s.PodsPerNode
	if WantsProvisioning(w) {
		f := Facts{Replicas: s.Pods, Provisioning: Provisioning{
			Wanted: true, Available: true, InstanceType: w.Spec.Resource.InstanceType, ReplicasPerNode: s.PodsPerNode}}
		s.NodeClaims = int32(len(claimsToCreate(f, w.Namespace, w.Name)))
	}
	return s
}

// ModelMemory is the GPU memory one copy of w's model needs, as far as the spec says: the
// estimate of a Hugging Face model's size (AnyModel, EstimateModel with modelConfig, the bytes
// of spec.inference.modelConfig's key), or a preset's gpuMemory (Parameters 0). ok is false
// when neither says (a custom image, a config not read, an unknown preset); err is
// EstimateModel's.
func ModelMemory(w *v1alpha1.Workspace, modelConfig []byte) (e ModelEstimate, ok bool, err error) {
	if AnyModel(w) {
		return EstimateModel(w, modelConfig)
	}
	name := ""
	if w.Spec.Inference != nil {
		name = w.Spec.Inference.Preset
	} else if w.Spec.Tuning != nil {
		name = w.Spec.Tuning.Preset
	}
	p, found := LookupPreset(name)
	if !found {
		return e, false, nil
	}
	if q, perr := resource.ParseQuantity(p.GPUMemory); perr == nil {
		return ModelEstimate{GPUMemory: q.Value()}, true, nil
	}
	return e, false, nil
}
