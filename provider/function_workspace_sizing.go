package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

var _ function.Function = (*workspaceSizingFunction)(nil)

// NewWorkspaceSizingFunction is provider::gantry::workspace_sizing(preset, instance_type,
// count): the sizing of an inference workspace of a model preset on an instance type with
// resource.count pods, worked out by the code the reconciler runs (workspace.Resolve, then
// workspace.SizingOf: GPUs per pod, KAITO's multi-node inference, pods per node and the
// Karpenter NodeClaims node provisioning creates, as KAITO's gpu-provisioner does). Its
// attribute names and meanings are those of gantry_workspace's computed sizing, in KAITO's
// terms: a replica is one copy of the model, spanning nodes_per_replica nodes.
func NewWorkspaceSizingFunction() function.Function { return &workspaceSizingFunction{} }

type workspaceSizingFunction struct{}

// workspaceSizing is workspace_sizing's result.
type workspaceSizing struct {
	Preset          string `tfsdk:"preset"`
	InstanceType    string `tfsdk:"instance_type"`
	Count           int64  `tfsdk:"count"`
	GPUProduct      string `tfsdk:"gpu_product"`
	Replicas        int64  `tfsdk:"replicas"`
	NodesPerReplica int64  `tfsdk:"nodes_per_replica"`
	GPUsPerNode     int64  `tfsdk:"gpus_per_node"`
	GPUsPerReplica  int64  `tfsdk:"gpus_per_replica"`
	ModelGPUs       int64  `tfsdk:"model_gpus"`
	MultiNode       bool   `tfsdk:"multi_node"`
	PodsPerNode     int64  `tfsdk:"pods_per_node"`
	TotalNodes      int64  `tfsdk:"total_nodes"`
	TotalGPUs       int64  `tfsdk:"total_gpus"`
	NodeClaims      int64  `tfsdk:"node_claims"`
}

var workspaceSizingAttrTypes = map[string]attr.Type{
	"preset":            types.StringType,
	"instance_type":     types.StringType,
	"count":             types.Int64Type,
	"gpu_product":       types.StringType,
	"replicas":          types.Int64Type,
	"nodes_per_replica": types.Int64Type,
	"gpus_per_node":     types.Int64Type,
	"gpus_per_replica":  types.Int64Type,
	"model_gpus":        types.Int64Type,
	"multi_node":        types.BoolType,
	"pods_per_node":     types.Int64Type,
	"total_nodes":       types.Int64Type,
	"total_gpus":        types.Int64Type,
	"node_claims":       types.Int64Type,
}

// Argument positions of workspace_sizing.
const (
	argSizingPreset int64 = iota
	argSizingInstanceType
	argSizingCount
)

func (f *workspaceSizingFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "workspace_sizing"
}

func (f *workspaceSizingFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "The sizing of a KAITO preset's inference workspace on an instance type",
		Description: "Returns how an inference gantry_workspace with inference.preset = preset, resource.instance_type = " +
			"instance_type and resource.count = count is sized, worked out with no cluster by the same code the Gantry " +
			"reconciler runs, following KAITO (preset GPU counts, resource.instanceType, multi-node inference and the Karpenter " +
			"NodeClaims of its gpu-provisioner); the attributes shared with gantry_workspace's computed sizing mean the same. In " +
			"KAITO's terms a replica is one copy of the model. The object has preset, instance_type, count, gpu_product, replicas " +
			"(copies of the model serving side by side: count, or 1 when the pods form one multi-node group), nodes_per_replica " +
			"(KAITO's perReplicaNodeCount: count in a multi-node group, else 1), gpus_per_node (nvidia.com/gpu each pod requests, " +
			"all on one node), gpus_per_replica (gpus_per_node x nodes_per_replica), model_gpus (GPUs the model needs, as " +
			"inference.model_gpus resolves), multi_node, pods_per_node, total_nodes (nodes of the type the pods need), " +
			"total_gpus (count x gpus_per_node) and node_claims (NodeClaims resource.provision_nodes creates on a cluster with no " +
			"matching free GPUs). Errors name the argument: an unknown preset or instance type, count outside 1-64, a preset " +
			"whose GPUs do not fit one node of the type with count 1 (instance_type), or pods whose GPUs together cannot hold " +
			"the model (count).",
		MarkdownDescription: "Returns how an inference `gantry_workspace` with `inference.preset = preset`, " +
			"`resource.instance_type = instance_type` and `resource.count = count` is sized, worked out with no cluster by the " +
			"same code the Gantry reconciler runs to resolve a workspace, following KAITO: the preset's GPU count, " +
			"`resource.instanceType`, KAITO's multi-node inference (a preset needing more GPUs than a node has, spread over " +
			"`count` nodes) and the Karpenter NodeClaims its gpu-provisioner creates, one per missing node. The attributes it " +
			"shares with `gantry_workspace`'s computed `sizing` mean the same; in KAITO's terms a *replica* is one copy of the " +
			"model. See the [Model presets](../guides/model-presets.md), [Instance types](../guides/instance-types.md) and " +
			"[Node provisioning](../guides/node-provisioning.md) guides. The object's attributes:\n\n" +
			"- `preset`, `instance_type`, `count`: the arguments; `gpu_product`: the instance type's GPU " +
			"(`nvidia.com/gpu.product`);\n" +
			"- `replicas`: copies of the model serving side by side: `count`, or 1 when the pods form one multi-node group;\n" +
			"- `nodes_per_replica`: the nodes one replica spans (KAITO's `perReplicaNodeCount`): `count` in a multi-node group " +
			"(one pod per node, pod 0 leading), else 1;\n" +
			"- `gpus_per_node`: `nvidia.com/gpu` each pod requests, all on one node (`resource.gpu_count` as resolved);\n" +
			"- `gpus_per_replica`: `gpus_per_node` × `nodes_per_replica`;\n" +
			"- `model_gpus`: the GPUs the model needs (`inference.model_gpus` as resolved; at most `gpus_per_replica`);\n" +
			"- `multi_node`: the pods serve ONE model together across nodes (vLLM tensor parallel within a node, pipeline " +
			"parallel across nodes);\n" +
			"- `pods_per_node`: pods one node of the type holds (its GPUs / `gpus_per_node`);\n" +
			"- `total_nodes`: nodes of the type the pods need, `ceil(count / pods_per_node)`;\n" +
			"- `total_gpus`: `count` × `gpus_per_node`, the GPUs the workspace requests in all;\n" +
			"- `node_claims`: the Karpenter NodeClaims `resource.provision_nodes` (default `true`) creates for the workspace " +
			"on a cluster where no matching node has free GPUs (fewer where matching Ready nodes have free GPUs).\n\n" +
			"Errors name the argument: an unknown `preset` or `instance_type` (with the closest names), `count` outside 1-64, " +
			"a preset whose GPUs do not fit one node of the type with `count` 1 (`instance_type`), or pods whose GPUs " +
			"together cannot hold the model (`count`). GPU memory is not checked, as the reconciler does not check it: compare " +
			"`preset_sizing(...).gpu_memory_gib` with `instance_type(...).total_gpu_memory_gib` where that matters. A gated " +
			"preset's model access Secret is not needed here.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "preset", Description: "A model preset name (inference.preset), e.g. falcon-40b-instruct.",
				MarkdownDescription: "A model preset name (`inference.preset`), e.g. `falcon-40b-instruct`."},
			function.StringParameter{Name: "instance_type", Description: "A GPU instance type (resource.instance_type), e.g. Standard_NC80adis_H100_v5.",
				MarkdownDescription: "A GPU instance type (`resource.instance_type`), e.g. `Standard_NC80adis_H100_v5`."},
			function.Int64Parameter{Name: "count", Description: "The workspace's pods (resource.count), 1-64.",
				MarkdownDescription: "The workspace's pods (`resource.count`), 1-64."},
		},
		Return: function.ObjectReturn{AttributeTypes: workspaceSizingAttrTypes},
	}
}

func (f *workspaceSizingFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var preset, instanceType string
	var count int64
	if resp.Error = req.Arguments.Get(ctx, &preset, &instanceType, &count); resp.Error != nil {
		return
	}
	out, err := sizeWorkspace(preset, instanceType, count)
	if err != nil {
		resp.Error = err
		return
	}
	resp.Error = resp.Result.Set(ctx, out)
}

// sizeWorkspace resolves an inference workspace of preset on instanceType with count pods
// (workspace.Resolve, as the reconciler and the provider's plan-time check do) and reads its
// sizing (workspace.SizingOf). Errors are argument errors: unknown names, count outside the
// CRD's 1-64, and Resolve's own, translated to Terraform attribute names.
func sizeWorkspace(preset, instanceType string, count int64) (workspaceSizing, *function.FuncError) {
	if _, ok := workspace.LookupPreset(preset); !ok {
		return workspaceSizing{}, function.NewArgumentFuncError(argSizingPreset, workspace.UnknownPresetError(preset, false).Error())
	}
	it, ok := hardware.LookupInstanceType(instanceType)
	if !ok {
		return workspaceSizing{}, function.NewArgumentFuncError(argSizingInstanceType, hardware.UnknownInstanceTypeError(instanceType).Error())
	}
	if count < 1 || count > maxWorkspaceCount {
		return workspaceSizing{}, function.NewArgumentFuncError(argSizingCount,
			fmt.Sprintf("count (a workspace's resource.count) must be between 1 and %d, got %d", maxWorkspaceCount, count))
	}
	w := &v1alpha1.Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "sizing", Namespace: "default"},
		Spec: v1alpha1.WorkspaceSpec{
			Resource: v1alpha1.WorkspaceResource{Count: int32(count), InstanceType: it.Name},
			// A gated preset needs a model access Secret to resolve; its name sizes nothing.
			Inference: &v1alpha1.WorkspaceInference{Preset: preset, ModelAccessSecret: "sizing"},
		},
	}
	rw, err := workspace.Resolve(w)
	if err != nil {
		at, msg := specErrorAttribute(err.Error())
		arg := argSizingPreset
		switch at.String() {
		case "resource.gpu_count":
			arg = argSizingInstanceType
		case "inference.model_gpus":
			arg = argSizingCount
		}
		msg = strings.NewReplacer("resource.count × gpuCount", "count × GPUs per pod", "resource.count", "count",
			"GPUs per replica", "GPUs per pod").Replace(msg)
		return workspaceSizing{}, function.NewArgumentFuncError(arg, fmt.Sprintf("preset %q on %d pod(s) of %s: %s", preset, count, it.Name, msg))
	}
	s := workspace.SizingOf(rw)
	return workspaceSizing{
		Preset: preset, InstanceType: it.Name, Count: int64(s.Pods), GPUProduct: it.GPUProduct,
		Replicas: int64(s.ModelReplicas), NodesPerReplica: int64(s.NodesPerModelReplica),
		GPUsPerNode: int64(s.GPUsPerPod), GPUsPerReplica: int64(s.GPUsPerPod) * int64(s.NodesPerModelReplica),
		ModelGPUs: int64(s.ModelGPUs), MultiNode: s.MultiNode, PodsPerNode: int64(s.PodsPerNode),
		TotalNodes: int64(s.Nodes), TotalGPUs: int64(s.Pods) * int64(s.GPUsPerPod), NodeClaims: int64(s.NodeClaims),
	}, nil
}
