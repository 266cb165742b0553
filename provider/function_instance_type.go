package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

var _ function.Function = (*instanceTypeFunction)(nil)

// NewInstanceTypeFunction is provider::gantry::instance_type(name): a cloud GPU instance type
// from the catalog gantry_workspace's resource.instance_type is resolved with (internal/hardware
// instancetypes.yaml; KAITO's resource.instanceType).
func NewInstanceTypeFunction() function.Function { return &instanceTypeFunction{} }

type instanceTypeFunction struct{}

// instanceTypeInfo is instance_type's result. GPU memory is in GiB (2^30 bytes).
type instanceTypeInfo struct {
	Name              string  `tfsdk:"name"`
	Cloud             string  `tfsdk:"cloud"`
	GPUCount          int64   `tfsdk:"gpu_count"`
	GPUProduct        string  `tfsdk:"gpu_product"`
	GPUMemory         string  `tfsdk:"gpu_memory"`
	GPUMemoryGiB      float64 `tfsdk:"gpu_memory_gib"`
	TotalGPUMemoryGiB float64 `tfsdk:"total_gpu_memory_gib"`
}

var instanceTypeAttrTypes = map[string]attr.Type{
	"name":                 types.StringType,
	"cloud":                types.StringType,
	"gpu_count":            types.Int64Type,
	"gpu_product":          types.StringType,
	"gpu_memory":           types.StringType,
	"gpu_memory_gib":       types.Float64Type,
	"total_gpu_memory_gib": types.Float64Type,
}

func (f *instanceTypeFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "instance_type"
}

func (f *instanceTypeFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "A cloud GPU instance type's GPUs, as KAITO's resource.instanceType selects nodes",
		Description: "Returns a cloud GPU instance type (the node.kubernetes.io/instance-type value gantry_workspace's " +
			"resource.instance_type takes, as KAITO's resource.instanceType) from the provider's instance type catalog, with no " +
			"cluster: an object with name, cloud (azure, aws or gcp), gpu_count (nvidia.com/gpu devices of one node), gpu_product " +
			"(the nvidia.com/gpu.product label GPU feature discovery sets), gpu_memory (one GPU's memory as the catalog writes it, " +
			"e.g. 80Gi), gpu_memory_gib (one GPU's memory in GiB) and total_gpu_memory_gib (gpu_count x gpu_memory_gib). The name " +
			"is matched exactly, case-sensitive as the node label is; an unknown name is an error on the name argument naming the " +
			"closest types.",
		MarkdownDescription: "Returns a cloud GPU instance type (the `node.kubernetes.io/instance-type` value `gantry_workspace`'s " +
			"`resource.instance_type` takes, as KAITO's `resource.instanceType`; see the [Instance types](../guides/instance-types.md) " +
			"guide) from the provider's instance type catalog, with no cluster. The object's attributes:\n\n" +
			"- `name`, `cloud` (`azure`, `aws` or `gcp`);\n" +
			"- `gpu_count`: the `nvidia.com/gpu` devices of one node of the type;\n" +
			"- `gpu_product`: the GPU as GPU feature discovery labels it (`nvidia.com/gpu.product`), e.g. `NVIDIA-H100-80GB-HBM3`;\n" +
			"- `gpu_memory`: one GPU's memory as the catalog writes it (`\"80Gi\"`), and `gpu_memory_gib`, the same in GiB " +
			"(2^30 bytes); `total_gpu_memory_gib` is `gpu_count` × `gpu_memory_gib`.\n\n" +
			"The name is matched exactly, case-sensitive as the node label is; an unknown name is an error on the `name` " +
			"argument naming the closest types.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "name", Description: "An instance type, e.g. Standard_NC24ads_A100_v4 or p4d.24xlarge.",
				MarkdownDescription: "An instance type, e.g. `Standard_NC24ads_A100_v4` or `p4d.24xlarge`."},
		},
		Return: function.ObjectReturn{AttributeTypes: instanceTypeAttrTypes},
	}
}

func (f *instanceTypeFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var name string
	if resp.Error = req.Arguments.Get(ctx, &name); resp.Error != nil {
		return
	}
	it, ok := hardware.LookupInstanceType(name)
	if !ok {
		resp.Error = function.NewArgumentFuncError(0, hardware.UnknownInstanceTypeError(name).Error())
		return
	}
	mem, err := gib(it.GPUMemory)
	if err != nil {
		resp.Error = function.NewFuncError(fmt.Sprintf("instance type %q: gpuMemory %q in the catalog: %v; please report this issue to the provider developers", it.Name, it.GPUMemory, err))
		return
	}
	resp.Error = resp.Result.Set(ctx, instanceTypeInfo{Name: it.Name, Cloud: it.Cloud, GPUCount: int64(it.GPUCount), GPUProduct: it.GPUProduct,
		GPUMemory: it.GPUMemory, GPUMemoryGiB: mem, TotalGPUMemoryGiB: mem * float64(it.GPUCount)})
}
