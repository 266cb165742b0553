package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// gantry_workspace's computed `sizing`: what the reconciler will run, worked out at plan by the
// reconciler's own functions (workspace.Resolve, Replicas, MultiNode, ...) in KAITO's terms,
// never from the cluster. ModifyPlan computes it when a plan changes something and keeps the
// state's value otherwise; Create and Update store the planned value; Read keeps the prior
// value, or computes it where there is none (import, list, older state).

// sizingAttribute is the schema of `sizing`.
func sizingAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Computed: true,
		MarkdownDescription: "How the workspace is sized and placed, resolved at plan time by the reconciler's own code.\n\nIt works from `resource`, the model preset " +
			"and `inference.model_gpus`, following KAITO's sizing: the preset's GPUs, then `resource.instance_type`'s GPUs per node, then KAITO's " +
			"multi-node inference, where the `resource.count` pods of a model too large for one node form ONE replica spanning `nodes_per_replica` " +
			"nodes (KAITO's `perReplicaNodeCount`); for a Hugging Face model without a preset, the GPUs its `inference.model_size` or " +
			"`inference.model_config` needs. Known in the plan whenever `resource`, `inference.preset`, `inference.model_gpus` and " +
			"`tuning.preset` are, and without a preset `inference.model`, `model_size` and `model_config` (otherwise \"known after apply\"); null when they do not resolve. " +
			"It does not look at the nodes, so it says what the apply asks for, not which nodes are free; the one read is `inference.model_config`'s ConfigMap " +
			"(when the cluster does not answer at plan, the sizing is known after apply).",
		Attributes: map[string]schema.Attribute{
			"replicas": schema.Int64Attribute{Computed: true, MarkdownDescription: "Replicas of the model serving side by side (KAITO's inference " +
				"replicas): `resource.count`, or 1 when the pods form one multi-node group; 1 for tuning."},
			"nodes_per_replica": schema.Int64Attribute{Computed: true, MarkdownDescription: "Nodes one replica spans (KAITO's `perReplicaNodeCount`): " +
				"`resource.count` in a multi-node group (one pod per node, pod 0 leading), else 1."},
			"gpus_per_node": schema.Int64Attribute{Computed: true, MarkdownDescription: "`nvidia.com/gpu` devices each pod requests, all on one node. " +
				"They are `resource.gpu_count`, else the preset's, else `resource.instance_type`'s GPUs per node (capped at them in a multi-node group); 0 with " +
				"`resource.partition` (a MIG slice instead) and for a workload without GPUs."},
			"gpus_per_replica": schema.Int64Attribute{Computed: true, MarkdownDescription: "`nvidia.com/gpu` devices one replica holds in all: " +
				"`gpus_per_node` × `nodes_per_replica`."},
			"instance_type": schema.StringAttribute{Computed: true, MarkdownDescription: "The instance type the pods' nodes must be " +
				"(`node.kubernetes.io/instance-type`): `resource.instance_type`; null without one."},
			"gpu_product": schema.StringAttribute{Computed: true, MarkdownDescription: "The GPU the pods run on, as `nvidia.com/gpu.product` " +
				"names it: `resource.gpu_product`, else `instance_type`'s GPU from the provider's catalog; null when neither says."},
			"mig_profile": schema.StringAttribute{Computed: true, MarkdownDescription: "With `resource.partition`: the MIG profile each replica " +
				"takes one slice of (`nvidia.com/mig-<profile>`, e.g. `1g.10gb`); null without a partition."},
			"model_parameters": schema.Int64Attribute{Computed: true, MarkdownDescription: "The model's parameter count, as the estimator works it out.\n\n" +
				"It comes from `inference.model_size` or `inference.model_config`'s `config.json`; null for a preset, a `model_size.gpu_memory` and a model of an image of your own."},
			"model_gpu_memory": schema.StringAttribute{Computed: true, MarkdownDescription: "GPU memory one replica of the model needs in all, e.g. `18Gi`.\n\n" +
				"It is the preset's figure, or for a Hugging Face model the estimate from `inference.model_size` or `inference.model_config` " +
				"(weights plus 20% headroom; `gpus_per_replica` GPUs hold it). Null for a model of an image of your own."},
			"node_claims": schema.Int64Attribute{Computed: true, MarkdownDescription: "The Karpenter NodeClaims the reconciler creates at most, with `resource.provision_nodes` (the default) and " +
				"`instance_type`.\n\nIt is one node of the type per as many pods as fit on it " +
				"(`ceil(pods / floor(the type's GPUs / gpus_per_node))`). As KAITO's gpu-provisioner, the apply creates only the nodes missing " +
				"then: fewer when matching Ready nodes have free GPUs, none where Karpenter or the reconciler's node class is missing. " +
				"0 when `provision_nodes` is false or without `instance_type`."},
		},
	}
}

// wsSizingAttrTypes are sizing's attribute types as the schema has them (withInputValidators
// gives every Int64 attribute its wholeNumberType).
var wsSizingAttrTypes = func() map[string]attr.Type {
	t, _ := withInputValidatorsAttr("sizing", sizingAttribute()).GetType().(types.ObjectType)
	return t.AttrTypes
}()

// wsSizing is sizing's value; "" strings are null.
type wsSizing struct {
	Replicas, NodesPerReplica, GPUsPerNode, GPUsPerReplica, NodeClaims, ModelParameters int64
	InstanceType, GPUProduct, MIGProfile, ModelGPUMemory                                string
	// Model is the model's size (workspace.ModelMemory) when known: the plan warning's words.
	Model *workspace.ModelEstimate
}

// sizingPlaceholder fills the fields that can only make workspace.Resolve fail without
// changing what it resolves (model, image, model access Secret, base model): with them
// filled the sizing follows from resource, the presets and model_gpus alone, so a value
// unknown at plan cannot change it at apply.
const sizingPlaceholder = "sizing"

// resolveWorkspaceSizing resolves w (not changed) as the reconciler does and returns its
// sizing. Errors are workspace.Resolve's (an unknown preset or instance type, GPUs that do not
// fit a node of the type, model_gpus the replicas cannot hold), naming spec fields.
//
// modelConfig is the bytes of inference.model_config's ConfigMap key (nil when there is none
// or it was not read: then such a workspace does not resolve, ErrModelConfigNotRead).
func resolveWorkspaceSizing(w *v1alpha1.Workspace, modelConfig []byte) (wsSizing, error) {
	w = w.DeepCopy()
	if inf := w.Spec.Inference; inf != nil {
		if !workspace.AnyModel(w) { // an "org/name" model without an image runs on the default one
			inf.Image = orPlaceholder(inf.Image)
		}
		inf.Model = orPlaceholder(inf.Model)
		inf.ModelAccessSecret = orPlaceholder(inf.ModelAccessSecret)
	}
	if tu := w.Spec.Tuning; tu != nil {
		tu.BaseModel, tu.Image = orPlaceholder(tu.BaseModel), orPlaceholder(tu.Image)
	}
	rw, err := workspace.ResolveModel(w, modelConfig)
	if err != nil {
		return wsSizing{}, err
	}
	r := rw.Spec.Resource
	z := workspace.SizingOf(rw) // the reconciler's sizing, as provider::gantry::workspace_sizing reads it
	s := wsSizing{Replicas: int64(z.ModelReplicas), NodesPerReplica: int64(z.NodesPerModelReplica), GPUsPerNode: int64(z.GPUsPerPod),
		InstanceType: r.InstanceType, GPUProduct: r.GPUProduct, NodeClaims: int64(z.NodeClaims)}
	s.GPUsPerReplica = s.GPUsPerNode * s.NodesPerReplica
	if it, ok := hardware.LookupInstanceType(r.InstanceType); ok && s.GPUProduct == "" {
		s.GPUProduct = it.GPUProduct
	}
	if r.Partition != nil {
		s.MIGProfile = r.Partition.Profile
	}
	if e, ok, err := workspace.ModelMemory(w, modelConfig); ok && err == nil {
		s.Model, s.ModelParameters, s.ModelGPUMemory = &e, e.Parameters, workspace.FormatGiB(e.GPUMemory)
	}
	return s, nil
}

// orPlaceholder is v, or sizingPlaceholder when v is empty (a value unknown at plan).
func orPlaceholder(v string) string {
	if v != "" {
		return v
	}
	return sizingPlaceholder
}

// value is s as the sizing attribute's value.
func (s wsSizing) value() types.Object {
	str := func(v string) attr.Value {
		if v == "" {
			return types.StringNull()
		}
		return types.StringValue(v)
	}
	i64 := func(v int64) attr.Value {
		if v == 0 {
			return types.Int64Null()
		}
		return types.Int64Value(v)
	}
	return types.ObjectValueMust(wsSizingAttrTypes, map[string]attr.Value{
		"replicas": types.Int64Value(s.Replicas), "nodes_per_replica": types.Int64Value(s.NodesPerReplica),
		"gpus_per_node": types.Int64Value(s.GPUsPerNode), "gpus_per_replica": types.Int64Value(s.GPUsPerReplica),
		"instance_type": str(s.InstanceType), "gpu_product": str(s.GPUProduct), "mig_profile": str(s.MIGProfile),
		"node_claims": types.Int64Value(s.NodeClaims), "model_gpu_memory": str(s.ModelGPUMemory), "model_parameters": i64(s.ModelParameters),
	})
}

// workspaceSizingValue is the sizing attribute of w: null when w does not resolve (the
// reconciler then reports the spec error and the apply fails naming it).
func workspaceSizingValue(w *v1alpha1.Workspace) types.Object {
	s, err := resolveWorkspaceSizing(w, nil)
	if err != nil {
		return types.ObjectNull(wsSizingAttrTypes)
	}
	return s.value()
}

// sizingOfModel is the sizing of m's resource, inference and tuning, mapped to the API type
// as the apply maps them (expandWorkspace); null when they do not map or resolve, and for a
// Hugging Face model sized from inference.model_config (its ConfigMap is not read here).
func sizingOfModel(m *workspaceModelV0) types.Object {
	v, _, _ := sizingOfModelRead(context.Background(), nil, m, false)
	return v
}

// sizingOfModelRead is sizingOfModel reading inference.model_config's ConfigMap through data
// when read (an unconfigured provider, data nil, cannot read it);
// s is the sizing (nil when null); readErr says why the ConfigMap could not be read (the value
// is then null, and the caller decides between unknown and null).
func sizingOfModelRead(ctx context.Context, data *providerData, m *workspaceModelV0, read bool) (v types.Object, s *wsSizing, readErr error) {
	null := types.ObjectNull(wsSizingAttrTypes)
	part := workspaceModelV0{Name: m.Name, Namespace: m.Namespace, Resource: m.Resource, Inference: m.Inference, Tuning: m.Tuning,
		RuntimeClassName: types.StringNull(), PriorityClassName: types.StringNull()}
	w, ok := expandForSizing(&part)
	if !ok {
		return null, nil, nil // the validators and the apply report the mapping error
	}
	var cfg []byte
	if read {
		if cfg, readErr = readModelConfig(ctx, data, w); readErr != nil {
			return null, nil, readErr
		}
	}
	if z, err := resolveWorkspaceSizing(w, cfg); err == nil {
		return z.value(), &z, nil
	}
	return null, nil, nil // what does not resolve has no sizing: the reconciler reports it
}

// expandForSizing is m as the Workspace the apply writes; false when it does not map.
func expandForSizing(m *workspaceModelV0) (*v1alpha1.Workspace, bool) {
	u, err := expandWorkspace(m)
	if err != nil {
		return nil, false
	}
	var w v1alpha1.Workspace
	return &w, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w) == nil
}

// sizingOfObject is the sizing of the Workspace u (as read from the cluster, or as expanded).
func sizingOfObject(u *unstructured.Unstructured) types.Object {
	var w v1alpha1.Workspace
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return types.ObjectNull(wsSizingAttrTypes)
	}
	return workspaceSizingValue(&w)
}

// sizingInputsKnown reports whether everything sizing depends on is known in the plan: all of
// resource; whether inference and tuning are set; their preset; inference.model_gpus.
func sizingInputsKnown(raw tftypes.Value) bool {
	root := configRoot(raw)
	if !root.Attr("resource").v.IsFullyKnown() {
		return false
	}
	for _, mode := range []string{"inference", "tuning"} {
		m := root.Attr(mode)
		switch {
		case m.Unknown():
			return false
		case m.Null():
			continue
		case m.Attr("preset").Unknown(), mode == "inference" && m.Attr("model_gpus").Unknown():
			return false
		case mode == "inference" && m.Attr("preset").Null():
			// Without a preset the model and its size decide (AnyModel), and the image for a
			// Hugging Face model ID (one without an image runs on the default).
			for _, a := range []string{"model", "model_size", "model_config"} {
				if !m.Attr(a).v.IsFullyKnown() {
					return false
				}
			}
			if model, _ := m.Attr("model").String(); workspace.IsHFModelID(model) && !m.Attr("image").v.IsFullyKnown() {
				return false
			}
		}
	}
	return true
}

// knownOrNull is v with what is unknown in it null: an unknown value, and a collection with
// an unknown element (a model cannot hold a null element) as a whole; objects are walked.
func knownOrNull(v tftypes.Value) tftypes.Value {
	if !v.IsKnown() {
		return tftypes.NewValue(v.Type(), nil)
	}
	if v.IsNull() || v.IsFullyKnown() {
		return v
	}
	obj, ok := v.Type().(tftypes.Object)
	if !ok {
		return tftypes.NewValue(v.Type(), nil)
	}
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		return tftypes.NewValue(v.Type(), nil)
	}
	out := make(map[string]tftypes.Value, len(attrs)) // As shares v's own map: never write to it
	for k, a := range attrs {
		out[k] = knownOrNull(a)
	}
	return tftypes.NewValue(obj, out)
}

// plannedSizing is the sizing of plan: unknown when an input is (sizingInputsKnown), else
// resolved from the plan with its unknown parts, which sizing does not depend on, null. A
// Hugging Face model sized from inference.model_config has its ConfigMap read through data:
// when that fails the sizing is unknown (known after apply) and why says why.
func plannedSizing(ctx context.Context, data *providerData, plan tfsdk.Plan) (v types.Object, s *wsSizing, why string, diags diag.Diagnostics) {
	if !sizingInputsKnown(plan.Raw) {
		return types.ObjectUnknown(wsSizingAttrTypes), nil, "", nil
	}
	var m workspaceModelV0
	diags = (&tfsdk.Plan{Schema: plan.Schema, Raw: knownOrNull(plan.Raw)}).Get(ctx, &m)
	if diags.HasError() {
		return types.ObjectUnknown(wsSizingAttrTypes), nil, "", diags
	}
	v, s, readErr := sizingOfModelRead(ctx, data, &m, true)
	if readErr != nil {
		return types.ObjectUnknown(wsSizingAttrTypes), nil, fmt.Sprintf("The model's config.json (inference.model_config) was not read at plan: %s. "+
			"sizing is known after apply, when the reconciler reads it (the apply fails naming inference.model_config if it cannot).", readErr), diags
	}
	return v, s, "", diags
}

// planWorkspaceSizing is ModifyPlan's sizing step: a plan that changes nothing keeps the
// state's sizing (so a no-op plan stays empty); any other plan, create included, gets the
// sizing of what it plans, and for a Hugging Face model without a preset a warning
// summarising it (or saying why it is known only after apply). Destroy plans are left alone.
func planWorkspaceSizing(ctx context.Context, data *providerData, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || (!req.State.Raw.IsNull() && req.Plan.Raw.Equal(req.State.Raw)) {
		return
	}
	v, s, why, diags := plannedSizing(ctx, data, resp.Plan)
	resp.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	at := path.Root("sizing")
	var prior types.Object
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, at, &prior)...)
	}
	switch {
	case why != "":
		resp.Diagnostics.AddAttributeWarning(at, "Model Sizing Known After Apply", why)
	case s != nil && s.Model != nil && anyModelPlanned(ctx, resp) && !v.Equal(prior):
		resp.Diagnostics.AddAttributeWarning(at, "Model Sizing", s.summary())
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, v)...)
}

// anyModelPlanned reports whether the planned workspace serves a Hugging Face model without
// a preset (workspace.AnyModel).
func anyModelPlanned(ctx context.Context, resp *resource.ModifyPlanResponse) bool {
	var m workspaceModelV0
	if resp.Plan.Get(ctx, &m).HasError() || m.Inference == nil || !m.Inference.Preset.IsNull() {
		return false
	}
	w := v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Inference: &v1alpha1.WorkspaceInference{Model: m.Inference.Model.ValueString(),
		Image: m.Inference.Image.ValueString(), ModelSize: expandModelSize(m.Inference.ModelSize), ModelConfig: expandModelConfig(m.Inference.ModelConfig)}}}
	return workspace.AnyModel(&w)
}

// summary is the plan warning's words: the model's size, then what each replica takes.
func (s wsSizing) summary() string {
	gpu := s.GPUProduct
	if gpu == "" {
		gpu = "GPUs"
	}
	out := fmt.Sprintf("%s: %d × %s per replica", s.Model, s.GPUsPerReplica, gpu)
	if s.NodesPerReplica > 1 {
		out += fmt.Sprintf(" (%d nodes × %d)", s.NodesPerReplica, s.GPUsPerNode)
	}
	return out + fmt.Sprintf(", %d replica(s).", s.Replicas)
}

// prepareWorkspaceSizing is gantry_workspace's kindOps.prepare: the planned sizing is what the
// state stores; only one still unknown at apply (never the case once the configuration is
// known, see planWorkspaceSizing) is resolved from the plan here.
func prepareWorkspaceSizing(ctx context.Context, data *providerData, _ tfsdk.Config, plan, _ *workspaceModelV0) diag.Diagnostics {
	if plan.Sizing.IsUnknown() {
		plan.Sizing, _, _ = sizingOfModelRead(ctx, data, plan, true) // null when the ConfigMap cannot be read
	}
	return nil
}

// flattenWorkspaceSized is flattenWorkspace with sizing: the prior's when it has one (a
// refresh keeps what the apply stored), else resolved from u (import, list, a state from
// before sizing).
func flattenWorkspaceSized(u *unstructured.Unstructured, prior *workspaceModelV0) (*workspaceModelV0, error) {
	m, err := flattenWorkspace(u, prior)
	if err != nil {
		return nil, err
	}
	if m.Sizing.IsNull() || m.Sizing.IsUnknown() {
		m.Sizing = sizingOfObject(u)
	}
	return m, nil
}
