package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

var _ function.Function = (*presetSizingFunction)(nil)

// NewPresetSizingFunction is provider::gantry::preset_sizing(preset): a model preset's sizing
// from the catalog gantry_workspace resolves inference.preset and tuning.preset with
// (internal/workspace presets.yaml, KAITO's preset catalog).
func NewPresetSizingFunction() function.Function { return &presetSizingFunction{} }

type presetSizingFunction struct{}

// presetSizing is preset_sizing's result. GPU memory is in GiB (2^30 bytes).
type presetSizing struct {
	Name               string  `tfsdk:"name"`
	Model              string  `tfsdk:"model"`
	Image              string  `tfsdk:"image"`
	GPUCount           int64   `tfsdk:"gpu_count"`
	GPUMemory          string  `tfsdk:"gpu_memory"`
	GPUMemoryGiB       float64 `tfsdk:"gpu_memory_gib"`
	GPUMemoryPerGPUGiB float64 `tfsdk:"gpu_memory_per_gpu_gib"`
	Tuning             bool    `tfsdk:"tuning"`
	Gated              bool    `tfsdk:"gated"`
}

var presetSizingAttrTypes = map[string]attr.Type{
	"name":                   types.StringType,
	"model":                  types.StringType,
	"image":                  types.StringType,
	"gpu_count":              types.Int64Type,
	"gpu_memory":             types.StringType,
	"gpu_memory_gib":         types.Float64Type,
	"gpu_memory_per_gpu_gib": types.Float64Type,
	"tuning":                 types.BoolType,
	"gated":                  types.BoolType,
}

func (f *presetSizingFunction) Metadata(_ context.Context, _ function.MetadataRequest, resp *function.MetadataResponse) {
	resp.Name = "preset_sizing"
}

func (f *presetSizingFunction) Definition(_ context.Context, _ function.DefinitionRequest, resp *function.DefinitionResponse) {
	resp.Definition = function.Definition{
		Summary: "A KAITO model preset's sizing: GPUs, GPU memory, image",
		Description: "Returns what the model preset named preset (KAITO's preset names, as gantry_workspace's inference.preset " +
			"and tuning.preset take them) asks of a workspace, from the provider's preset catalog, with no cluster: an object with " +
			"name, model, image, gpu_count (nvidia.com/gpu per replica), gpu_memory (the catalog's quantity, e.g. 14Gi), " +
			"gpu_memory_gib (GPU memory the model needs across gpu_count GPUs, in GiB), gpu_memory_per_gpu_gib (gpu_memory_gib / " +
			"gpu_count), tuning (the preset can be fine-tuned) and gated (the weights come from a gated Hugging Face repository, " +
			"so the workspace needs inference.model_access_secret). An unknown preset is an error on the preset argument naming " +
			"the closest presets.",
		MarkdownDescription: "Returns what the model preset `preset` (KAITO's preset names, as `gantry_workspace`'s `inference.preset` " +
			"and `tuning.preset` take them; see the [Model presets](../guides/model-presets.md) guide) asks of a workspace, from the " +
			"provider's preset catalog, with no cluster. The object's attributes:\n\n" +
			"- `name`, `model`, `image`: the preset name, the served model name and the serving (and tuning) image KAITO publishes;\n" +
			"- `gpu_count`: `nvidia.com/gpu` per replica (`resource.gpu_count` when unset);\n" +
			"- `gpu_memory`: the GPU memory the model needs across `gpu_count` GPUs, as the catalog writes it (`\"14Gi\"`), and " +
			"`gpu_memory_gib`, the same in GiB (2^30 bytes); `gpu_memory_per_gpu_gib` is `gpu_memory_gib / gpu_count`;\n" +
			"- `tuning`: the preset can be fine-tuned (`tuning.preset`);\n" +
			"- `gated`: the weights are downloaded from a gated Hugging Face repository, so the workspace needs " +
			"`inference.model_access_secret`.\n\n" +
			"An unknown preset is an error on the `preset` argument naming the closest presets.",
		Parameters: []function.Parameter{
			function.StringParameter{Name: "preset", Description: "A model preset name, e.g. falcon-7b-instruct.",
				MarkdownDescription: "A model preset name, e.g. `falcon-7b-instruct`."},
		},
		Return: function.ObjectReturn{AttributeTypes: presetSizingAttrTypes},
	}
}

func (f *presetSizingFunction) Run(ctx context.Context, req function.RunRequest, resp *function.RunResponse) {
	var name string
	if resp.Error = req.Arguments.Get(ctx, &name); resp.Error != nil {
		return
	}
	p, ok := workspace.LookupPreset(name)
	if !ok {
		resp.Error = function.NewArgumentFuncError(0, workspace.UnknownPresetError(name, false).Error())
		return
	}
	mem, err := gib(p.GPUMemory)
	if err != nil {
		resp.Error = function.NewFuncError(fmt.Sprintf("preset %q: gpuMemory %q in the catalog: %v; please report this issue to the provider developers", p.Name, p.GPUMemory, err))
		return
	}
	out := presetSizing{Name: p.Name, Model: p.Model, Image: p.Image, GPUCount: int64(p.GPUCount), GPUMemory: p.GPUMemory,
		GPUMemoryGiB: mem, Tuning: p.Tuning, Gated: p.Gated}
	if p.GPUCount > 0 {
		out.GPUMemoryPerGPUGiB = mem / float64(p.GPUCount)
	}
	resp.Error = resp.Result.Set(ctx, out)
}

// gib is the Kubernetes quantity q ("14Gi", "80G") in GiB (2^30 bytes); "" is 0.
func gib(q string) (float64, error) {
	if q == "" {
		return 0, nil
	}
	v, err := k8sresource.ParseQuantity(q)
	if err != nil {
		return 0, err
	}
	return v.AsApproximateFloat64() / (1 << 30), nil
}
