package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// wsSpec is a Workspace of spec, as the provider expands one.
func wsSpec(spec v1alpha1.WorkspaceSpec) *v1alpha1.Workspace {
	return &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "default"}, Spec: spec}
}

// The sizing of presets and instance types from the real catalogs (presets.yaml, KAITO's
// preset GPU counts; instancetypes.yaml), as the reconciler resolves them.
func TestWorkspaceSizing_catalog(t *testing.T) {
	for name, c := range map[string]struct {
		spec v1alpha1.WorkspaceSpec
		want wsSizing
	}{
		// falcon-40b-instruct takes 2 GPUs; a g5.12xlarge has 4 NVIDIA-A10G: 2 pods per node.
		"preset on a larger type": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 3, InstanceType: "g5.12xlarge"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}},
			wsSizing{Replicas: 3, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, InstanceType: "g5.12xlarge", GPUProduct: "NVIDIA-A10G", NodeClaims: 2, ModelGPUMemory: "90Gi"}},
		// KAITO's own example: deepseek-r1-0528 (12 GPUs) on 6 × Standard_NC80adis_H100_v5
		// (2 NVIDIA-H100-NVL each): one replica over 6 nodes, one NodeClaim per node.
		"multi-node preset": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 6, InstanceType: "Standard_NC80adis_H100_v5"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "deepseek-r1-0528"}},
			wsSizing{Replicas: 1, NodesPerReplica: 6, GPUsPerNode: 2, GPUsPerReplica: 12, InstanceType: "Standard_NC80adis_H100_v5", GPUProduct: "NVIDIA-H100-NVL", NodeClaims: 6, ModelGPUMemory: "720Gi"}},
		// A preset model spread over 1-GPU pods of a product: a group of 2, no provisioning.
		"multi-node by gpu_count": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, GPUCount: 1, GPUProduct: "NVIDIA-L4"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}},
			wsSizing{Replicas: 1, NodesPerReplica: 2, GPUsPerNode: 1, GPUsPerReplica: 2, GPUProduct: "NVIDIA-L4", ModelGPUMemory: "90Gi"}},
		// The instance type's GPUs per node when nothing else says; existing nodes only.
		"instance type default, no provisioning": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, InstanceType: "p4d.24xlarge", ProvisionNodes: boolPtr(false)},
			Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}},
			wsSizing{Replicas: 2, NodesPerReplica: 1, GPUsPerNode: 8, GPUsPerReplica: 8, InstanceType: "p4d.24xlarge", GPUProduct: "NVIDIA-A100-SXM4-40GB"}},
		"one-GPU type": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, InstanceType: "Standard_NC24ads_A100_v4"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "phi-3-mini-4k-instruct"}},
			wsSizing{Replicas: 2, NodesPerReplica: 1, GPUsPerNode: 1, GPUsPerReplica: 1, InstanceType: "Standard_NC24ads_A100_v4", GPUProduct: "NVIDIA-A100-PCIE-80GB", NodeClaims: 2, ModelGPUMemory: "9Gi"}},
		"mig": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 3, GPUProduct: "NVIDIA-A100-SXM4-80GB",
			Partition: &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.10gb"}},
			Inference: &v1alpha1.WorkspaceInference{Preset: "phi-3-mini-4k-instruct"}},
			wsSizing{Replicas: 3, NodesPerReplica: 1, GPUProduct: "NVIDIA-A100-SXM4-80GB", MIGProfile: "1g.10gb", ModelGPUMemory: "9Gi"}},
		// deepseek-r1-0528 (12 GPUs) on 2 × p5e.48xlarge (8 NVIDIA-H200 each): one replica over 2 nodes.
		"multi-node preset on H200": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, InstanceType: "p5e.48xlarge"},
			Inference: &v1alpha1.WorkspaceInference{Preset: "deepseek-r1-0528"}},
			wsSizing{Replicas: 1, NodesPerReplica: 2, GPUsPerNode: 8, GPUsPerReplica: 16, InstanceType: "p5e.48xlarge", GPUProduct: "NVIDIA-H200", NodeClaims: 2, ModelGPUMemory: "720Gi"}},
		"mig on an H200 instance type": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 3, InstanceType: "a3-ultragpu-8g", ProvisionNodes: boolPtr(false),
			Partition: &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.18gb"}},
			Inference: &v1alpha1.WorkspaceInference{Preset: "phi-3-mini-4k-instruct"}},
			wsSizing{Replicas: 3, NodesPerReplica: 1, InstanceType: "a3-ultragpu-8g", GPUProduct: "NVIDIA-H200", MIGProfile: "1g.18gb", ModelGPUMemory: "9Gi"}},
		"tuning": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, InstanceType: "g6.xlarge"},
			Tuning: &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningMethod("lora"), Preset: "phi-3-mini-4k-instruct"}},
			wsSizing{Replicas: 1, NodesPerReplica: 1, GPUsPerNode: 1, GPUsPerReplica: 1, InstanceType: "g6.xlarge", GPUProduct: "NVIDIA-L4", NodeClaims: 1, ModelGPUMemory: "9Gi"}},
		// Any Hugging Face model, sized by hand: 7.62B bfloat16 parameters need 18Gi; a T4 has 16Gi,
		// so 2 of a g4dn.12xlarge's 4 (tensor parallel 2), two pods per node.
		"any model by parameters": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, InstanceType: "g4dn.12xlarge"},
			Inference: &v1alpha1.WorkspaceInference{Model: "Qwen/Qwen2.5-7B-Instruct", ModelSize: &v1alpha1.WorkspaceModelSize{Parameters: "7.62B"}}},
			wsSizing{Replicas: 2, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, InstanceType: "g4dn.12xlarge", GPUProduct: "Tesla-T4", NodeClaims: 1,
				ModelParameters: 7620000000, ModelGPUMemory: "18Gi"}},
		"any model by GPU memory": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, GPUProduct: "NVIDIA-L4"},
			Inference: &v1alpha1.WorkspaceInference{Model: "org/model", ModelSize: &v1alpha1.WorkspaceModelSize{GPUMemory: "40Gi"}}},
			wsSizing{Replicas: 1, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, GPUProduct: "NVIDIA-L4", ModelGPUMemory: "40Gi"}},
		// A gated preset's Secret sizes nothing: its absence does not hide the sizing.
		"gated preset": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1},
			Inference: &v1alpha1.WorkspaceInference{Preset: "llama-3.3-70b-instruct"}},
			wsSizing{Replicas: 1, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, ModelGPUMemory: "150Gi"}},
	} {
		t.Run(name, func(t *testing.T) {
			w := wsSpec(c.spec)
			before := w.DeepCopy()
			got, err := resolveWorkspaceSizing(w, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !got.value().Equal(c.want.value()) {
				t.Errorf("sizing\n got %+v\nwant %+v", got, c.want)
			}
			if !reflect.DeepEqual(before, w) {
				t.Error("resolveWorkspaceSizing changed its argument")
			}
		})
	}
}

// What does not resolve has no sizing (null): the reconciler reports it and the apply fails.
func TestWorkspaceSizing_unresolved(t *testing.T) {
	for name, spec := range map[string]v1alpha1.WorkspaceSpec{
		"unknown preset": {Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-7b-instrct"}},
		"too many GPUs":  {Resource: v1alpha1.WorkspaceResource{GPUCount: 4, InstanceType: "g6.xlarge"}, Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}},
		"untunable":      {Tuning: &v1alpha1.WorkspaceTuning{Method: "lora", Preset: "falcon-40b"}},
		"a MIG profile the GPU lacks": {Resource: v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-H200", Partition: &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "3g.40gb"}},
			Inference: &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}},
	} {
		t.Run(name, func(t *testing.T) {
			if v := workspaceSizingValue(wsSpec(spec)); !v.IsNull() {
				t.Errorf("sizing %s, want null", v)
			}
		})
	}
}

func workspaceSchema(t *testing.T) schema.Schema {
	t.Helper()
	var resp fwresource.SchemaResponse
	NewWorkspaceResource().Schema(context.Background(), fwresource.SchemaRequest{}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	return resp.Schema
}

// wsPlan is a plan of s with the attributes of set (paths to values), the rest null.
func wsPlan(t *testing.T, s schema.Schema, set map[string]attr.Value) tfsdk.Plan {
	t.Helper()
	ctx := context.Background()
	typ := s.Type().TerraformType(ctx).(tftypes.Object) //nolint:forcetypeassert // a resource schema is an object
	vals := map[string]tftypes.Value{}
	for n, at := range typ.AttributeTypes {
		vals[n] = tftypes.NewValue(at, nil)
	}
	p := tfsdk.Plan{Schema: s, Raw: tftypes.NewValue(typ, vals)}
	for at, v := range set {
		if d := p.SetAttribute(ctx, wsPath(at), v); d.HasError() {
			t.Fatalf("%s: %v", at, d)
		}
	}
	return p
}

// wsPath is "a.b" as a path.
func wsPath(at string) path.Path {
	p := path.Empty()
	start := 0
	for i := 0; i <= len(at); i++ {
		if i == len(at) || at[i] == '.' {
			p = p.AtName(at[start:i])
			start = i + 1
		}
	}
	return p
}

// modifyPlan runs gantry_workspace's ModifyPlan on the plan mk builds against state and
// returns the planned sizing. The rest of the plan must come back as mk builds it.
func modifyPlan(t *testing.T, mk func() tfsdk.Plan, state tfsdk.State) types.Object {
	t.Helper()
	ctx := context.Background()
	plan := mk()
	resp := fwresource.ModifyPlanResponse{Plan: plan}
	r, _ := NewWorkspaceResource().(*workspaceResource)
	r.ModifyPlan(ctx, fwresource.ModifyPlanRequest{Plan: plan, State: state, Config: tfsdk.Config(plan)}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var got types.Object
	if d := resp.Plan.GetAttribute(ctx, path.Root("sizing"), &got); d.HasError() {
		t.Fatal(d)
	}
	want := mk()
	if d := want.SetAttribute(ctx, path.Root("sizing"), got); d.HasError() {
		t.Fatal(d)
	}
	if !resp.Plan.Raw.Equal(want.Raw) {
		t.Errorf("ModifyPlan changed more than sizing:\n got %s\nwant %s", resp.Plan.Raw, want.Raw)
	}
	return got
}

func nullState(s schema.Schema) tfsdk.State {
	return tfsdk.State{Schema: s, Raw: tftypes.NewValue(s.Type().TerraformType(context.Background()), nil)}
}

// At plan: the sizing is known when its inputs are, whatever else is unknown; unknown when an
// input is; a plan that changes nothing keeps the state's value.
func TestWorkspaceSizing_plan(t *testing.T) {
	s := workspaceSchema(t)
	base := func() map[string]attr.Value {
		return map[string]attr.Value{"name": str("w"), "namespace": str("default"), "resource.count": types.Int64Value(3),
			"resource.provision_nodes": types.BoolValue(true), "resource.instance_type": str("g5.12xlarge"),
			"inference.preset": str("falcon-40b-instruct"), "inference.port": types.Int64Value(8000)}
	}
	want := wsSizing{Replicas: 3, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, InstanceType: "g5.12xlarge", GPUProduct: "NVIDIA-A10G", NodeClaims: 2, ModelGPUMemory: "90Gi"}.value()
	unknownList := types.ListUnknown(types.StringType)
	for name, c := range map[string]struct {
		set   map[string]attr.Value
		known bool
	}{
		"all known":                  {nil, true},
		"unknown image":              {map[string]attr.Value{"inference.image": types.StringUnknown()}, true},
		"unknown model access":       {map[string]attr.Value{"inference.model_access_secret": types.StringUnknown()}, true},
		"unknown args":               {map[string]attr.Value{"inference.args": unknownList}, true},
		"unknown labels":             {map[string]attr.Value{"labels": types.MapUnknown(types.StringType)}, true},
		"unknown gpu_count":          {map[string]attr.Value{"resource.gpu_count": types.Int64Unknown()}, false},
		"unknown instance type":      {map[string]attr.Value{"resource.instance_type": types.StringUnknown()}, false},
		"unknown label selector":     {map[string]attr.Value{"resource.label_selector": types.MapUnknown(types.StringType)}, false},
		"unknown preset":             {map[string]attr.Value{"inference.preset": types.StringUnknown()}, false},
		"unknown model_gpus":         {map[string]attr.Value{"inference.model_gpus": types.Int64Unknown()}, false},
		"unknown provisioning":       {map[string]attr.Value{"resource.provision_nodes": types.BoolUnknown()}, false},
		"unknown tuning (mode open)": {map[string]attr.Value{"tuning": types.ObjectUnknown(tuningAttrTypes(t, s))}, false},
	} {
		t.Run(name, func(t *testing.T) {
			set := base()
			for k, v := range c.set {
				set[k] = v
			}
			got := modifyPlan(t, func() tfsdk.Plan { return wsPlan(t, s, set) }, nullState(s))
			switch {
			case c.known && !got.Equal(want):
				t.Errorf("sizing %s, want %s", got, want)
			case !c.known && !got.IsUnknown():
				t.Errorf("sizing %s, want unknown", got)
			}
		})
	}

	// A plan equal to the state keeps the state's sizing, even one the catalog would now
	// give differently: a no-op plan stays empty.
	set := base()
	stale := wsSizing{Replicas: 3, NodesPerReplica: 1, GPUsPerNode: 4, GPUsPerReplica: 4, InstanceType: "g5.12xlarge", NodeClaims: 3}.value()
	set["sizing"], set["state"] = stale, str("Ready")
	p := wsPlan(t, s, set)
	if got := modifyPlan(t, func() tfsdk.Plan { return wsPlan(t, s, set) }, tfsdk.State{Schema: s, Raw: p.Raw}); !got.Equal(stale) {
		t.Errorf("no-op plan: sizing %s, want the state's %s", got, stale)
	}
	// Any change plans the sizing of the configuration.
	changed := base()
	changed["sizing"], changed["labels"] = types.ObjectUnknown(wsSizingAttrTypes), types.MapValueMust(types.StringType, map[string]attr.Value{"a": str("b")})
	if got := modifyPlan(t, func() tfsdk.Plan { return wsPlan(t, s, changed) }, tfsdk.State{Schema: s, Raw: p.Raw}); !got.Equal(want) {
		t.Errorf("update: sizing %s, want %s", got, want)
	}
}

func tuningAttrTypes(t *testing.T, s schema.Schema) map[string]attr.Type {
	t.Helper()
	typ, d := s.TypeAtPath(context.Background(), path.Root("tuning"))
	if d.HasError() {
		t.Fatal(d)
	}
	return typ.(types.ObjectType).AttrTypes //nolint:forcetypeassert // tuning is a single nested attribute
}

// A refresh keeps the sizing the apply stored; an import (no prior sizing) resolves it from the
// object read, as the plan resolves it from the configuration.
func TestWorkspaceSizing_read(t *testing.T) {
	m := wsModel()
	m.Resource.InstanceType, m.Resource.Count = str("g5.12xlarge"), types.Int64Value(3)
	m.Inference.Preset = str("falcon-40b-instruct")
	u := wsRoundTrip(t, m)
	planned := sizingOfModel(&m)
	if planned.IsNull() || planned.IsUnknown() {
		t.Fatalf("planned sizing %s", planned)
	}

	prior := m
	prior.Sizing = types.ObjectNull(wsSizingAttrTypes)
	imported, err := flattenWorkspaceSized(u, &prior)
	if err != nil {
		t.Fatal(err)
	}
	if !imported.Sizing.Equal(planned) {
		t.Errorf("import: sizing %s, want the plan's %s", imported.Sizing, planned)
	}

	kept := wsSizing{Replicas: 9}.value()
	prior.Sizing = kept
	refreshed, err := flattenWorkspaceSized(u, &prior)
	if err != nil {
		t.Fatal(err)
	}
	if !refreshed.Sizing.Equal(kept) {
		t.Errorf("refresh: sizing %s, want the prior's %s", refreshed.Sizing, kept)
	}

	// The apply stores the planned value; one left unknown is resolved from the plan.
	apply := m
	apply.Sizing = types.ObjectUnknown(wsSizingAttrTypes)
	if d := prepareWorkspaceSizing(context.Background(), nil, tfsdk.Config{}, &apply, nil); d.HasError() || !apply.Sizing.Equal(planned) {
		t.Errorf("apply: sizing %s, want %s (%v)", apply.Sizing, planned, d)
	}
}

// A Hugging Face model's plan: its sizing with a "Model Sizing" warning summarising it
// (model_size); with model_config and no cluster to read the ConfigMap from, an unknown
// sizing and a warning saying why.
func TestWorkspaceSizing_anyModelWarning(t *testing.T) {
	s := workspaceSchema(t)
	ctx := context.Background()
	sizeType := map[string]attr.Type{"parameters": types.StringType, "dtype": types.StringType, "gpu_memory": types.StringType}
	cfgType := map[string]attr.Type{"config_map": types.StringType, "key": types.StringType}
	for name, c := range map[string]struct {
		set             map[string]attr.Value
		summary, detail string
		unknown         bool
	}{
		"model_size": {map[string]attr.Value{"inference.model_size": types.ObjectValueMust(sizeType, map[string]attr.Value{
			"parameters": str("7.62B"), "dtype": types.StringNull(), "gpu_memory": types.StringNull()})},
			"Model Sizing", "7.62B parameters (bfloat16) need 18Gi of GPU memory: 2 × Tesla-T4 per replica, 2 replica(s).", false},
		"model_config without a cluster": {map[string]attr.Value{"inference.model_config": types.ObjectValueMust(cfgType, map[string]attr.Value{
			"config_map": str("qwen"), "key": types.StringNull()})},
			"Model Sizing Known After Apply", "The model's config.json (inference.model_config) was not read at plan: the provider is not configured.", true},
	} {
		t.Run(name, func(t *testing.T) {
			set := map[string]attr.Value{"name": str("w"), "namespace": str("default"), "resource.count": types.Int64Value(2),
				"resource.provision_nodes": types.BoolValue(true), "resource.instance_type": str("g4dn.12xlarge"),
				"inference.model": str("Qwen/Qwen2.5-7B-Instruct"), "inference.port": types.Int64Value(8000)}
			for k, v := range c.set {
				set[k] = v
			}
			plan := wsPlan(t, s, set)
			resp := fwresource.ModifyPlanResponse{Plan: plan}
			r, _ := NewWorkspaceResource().(*workspaceResource)
			r.ModifyPlan(ctx, fwresource.ModifyPlanRequest{Plan: plan, State: nullState(s), Config: tfsdk.Config(plan)}, &resp)
			if resp.Diagnostics.HasError() || resp.Diagnostics.WarningsCount() != 1 {
				t.Fatalf("diagnostics %v, want one warning", resp.Diagnostics)
			}
			w := resp.Diagnostics.Warnings()[0]
			if w.Summary() != c.summary || !strings.HasPrefix(w.Detail(), c.detail) {
				t.Errorf("warning %q: %q\nwant %q: %q", w.Summary(), w.Detail(), c.summary, c.detail)
			}
			var got types.Object
			resp.Plan.GetAttribute(ctx, path.Root("sizing"), &got)
			if got.IsUnknown() != c.unknown {
				t.Errorf("sizing %s, unknown %v", got, c.unknown)
			}
		})
	}
}
