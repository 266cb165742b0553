package provider

// gantry_workspace's "any model": inference.model a Hugging Face model ID without a preset,
// sized by inference.model_size or by the config.json of inference.model_config's ConfigMap
// (workspace.AnyModel, workspace.EstimateModel). The plan shows the sizing: from model_size
// with no cluster at all; from model_config when the cluster answers at plan (the ConfigMap
// is read then), else it is known after apply, with a warning saying why.

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// wsModelSizeModel is inference.model_size.
type wsModelSizeModel struct {
	Parameters types.String `tfsdk:"parameters"`
	DType      types.String `tfsdk:"dtype"`
	GPUMemory  types.String `tfsdk:"gpu_memory"`
}

// wsModelConfigModel is inference.model_config.
type wsModelConfigModel struct {
	ConfigMap types.String `tfsdk:"config_map"`
	Key       types.String `tfsdk:"key"`
}

var (
	parametersRe     = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[KMBT]$`)
	gpuMemoryRe      = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(Mi|Gi|Ti|M|G|T)$`)
	modelConfigKeyRe = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)
)

// modelSizeAttributes are inference.model_size and inference.model_config.
func modelSizeAttributes() map[string]schema.Attribute {
	noPreset := []path.Expression{path.MatchRelative().AtParent().AtName("preset")}
	return map[string]schema.Attribute{
		"model_size": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "The size of a Hugging Face model served without a preset: `parameters` (with `dtype`), or `gpu_memory`.\n\n" +
				"With `model` a Hugging Face model ID (`org/name`) the GPUs per replica (`resource.gpu_count` when unset) follow from it and the memory of the GPU " +
				"(`resource.instance_type`'s, or `resource.gpu_product`'s from the [Instance types](../guides/instance-types.md) catalog): the weights " +
				"(parameters × bytes of `dtype`) plus 20% for the KV cache and activations, over as many GPUs as hold it, rounded up to a power of two. " +
				"A `gpu_count` that cannot hold it, or a model larger than the instance type's node, fails the plan. `sizing` shows the result. " +
				"See [Serving any Hugging Face model](../guides/model-presets.md#serving-any-hugging-face-model). Conflicts with `preset` and `model_config`.",
			Validators: []validator.Object{objectvalidator.ConflictsWith(append(noPreset, path.MatchRelative().AtParent().AtName("model_config"))...)},
			Attributes: map[string]schema.Attribute{
				"parameters": schema.StringAttribute{Optional: true, MarkdownDescription: "Parameter count with a `K`, `M`, `B` or `T` suffix, e.g. `7B`, `8.03B`, `500M`.",
					Validators: []validator.String{stringvalidator.RegexMatches(parametersRe, "must be a parameter count such as 7B or 500M"),
						stringvalidator.ExactlyOneOf(path.MatchRelative().AtParent().AtName("gpu_memory"))}},
				"dtype": schema.StringAttribute{Optional: true, MarkdownDescription: "The weights' data type: `bfloat16` (default), `float16`, `float32`, `fp8`, `int8` or `int4`.",
					Validators: []validator.String{stringvalidator.OneOf("float32", "float16", "bfloat16", "fp8", "int8", "int4"),
						stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("parameters"))}},
				"gpu_memory": schema.StringAttribute{Optional: true, MarkdownDescription: "GPU memory one copy of the model needs in all, e.g. `40Gi`, instead of `parameters`.",
					Validators: []validator.String{stringvalidator.RegexMatches(gpuMemoryRe, "must be a quantity such as 40Gi")}},
			},
		},
		"model_config": schema.SingleNestedAttribute{Optional: true,
			MarkdownDescription: "A ConfigMap key holding the Hugging Face model's `config.json`, from which its size is derived as from `model_size`.\n\n" +
				"No network is used: the estimator reads `hidden_size`, `num_hidden_layers`, `intermediate_size`, `vocab_size`, `num_attention_heads`, " +
				"`num_key_value_heads`, `torch_dtype` and `tie_word_embeddings` (a llama-style decoder: embeddings, attention with grouped-query heads, " +
				"a gated MLP, norms). The plan reads the ConfigMap when the cluster answers and shows `sizing`; otherwise `sizing` is known after apply. " +
				"The reconciler reads it too: a missing ConfigMap or key, or a `config.json` it cannot read, fails the apply naming `inference.model_config` " +
				"(the workspace is Stalled, InvalidSpec) and heals on its own once the ConfigMap is fixed. Conflicts with `preset` and `model_size`.",
			Validators: []validator.Object{objectvalidator.ConflictsWith(noPreset...)},
			Attributes: map[string]schema.Attribute{
				"config_map": schema.StringAttribute{Required: true, MarkdownDescription: "The ConfigMap's name, in the workspace's namespace.",
					Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a ConfigMap name")}},
				"key": schema.StringAttribute{Optional: true, MarkdownDescription: "The key holding `config.json` (default `config.json`).",
					Validators: []validator.String{stringvalidator.RegexMatches(modelConfigKeyRe, "must be a ConfigMap key")}},
			},
		},
	}
}

func expandModelSize(m *wsModelSizeModel) *v1alpha1.WorkspaceModelSize {
	if m == nil {
		return nil
	}
	return &v1alpha1.WorkspaceModelSize{Parameters: m.Parameters.ValueString(), DType: m.DType.ValueString(), GPUMemory: m.GPUMemory.ValueString()}
}

func flattenModelSize(s *v1alpha1.WorkspaceModelSize, prior *wsModelSizeModel) *wsModelSizeModel {
	if s == nil {
		return nil
	}
	if prior == nil {
		prior = &wsModelSizeModel{}
	}
	return &wsModelSizeModel{Parameters: optString(s.Parameters, prior.Parameters), DType: optString(s.DType, prior.DType), GPUMemory: optString(s.GPUMemory, prior.GPUMemory)}
}

func expandModelConfig(m *wsModelConfigModel) *v1alpha1.WorkspaceModelConfig {
	if m == nil {
		return nil
	}
	return &v1alpha1.WorkspaceModelConfig{ConfigMap: m.ConfigMap.ValueString(), Key: m.Key.ValueString()}
}

func flattenModelConfig(c *v1alpha1.WorkspaceModelConfig, prior *wsModelConfigModel) *wsModelConfigModel {
	if c == nil {
		return nil
	}
	if prior == nil {
		prior = &wsModelConfigModel{}
	}
	return &wsModelConfigModel{ConfigMap: types.StringValue(c.ConfigMap), Key: optString(c.Key, prior.Key)}
}

// readModelConfig reads the config.json of w's spec.inference.modelConfig at plan: nil and no
// error when w has none. Errors: no cluster, the ConfigMap or key missing, the read failed.
func readModelConfig(ctx context.Context, data *providerData, w *v1alpha1.Workspace) ([]byte, error) {
	name, key, ok := workspace.ModelConfigRef(w)
	if !ok || !workspace.AnyModel(w) {
		return nil, nil
	}
	if data == nil {
		return nil, fmt.Errorf("the provider is not configured")
	}
	c, _, err := data.get()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, candidateReadTimeout)
	defer cancel()
	cm, err := c.Core.CoreV1().ConfigMaps(w.Namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("ConfigMap %s/%s does not exist (yet)", w.Namespace, name)
	case err != nil:
		return nil, fmt.Errorf("reading ConfigMap %s/%s: %w", w.Namespace, name, err)
	}
	if v, ok := cm.Data[key]; ok {
		return []byte(v), nil
	}
	if v, ok := cm.BinaryData[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("ConfigMap %s/%s has no key %q (yet)", w.Namespace, name, key)
}
