package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/function"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// callFunction runs f with args as the framework does (its Definition's return type, the
// arguments as attr.Values) and returns the result converted to Go values (an object as a
// map[string]any) or the function's error.
func callFunction(t *testing.T, f function.Function, args ...attr.Value) (any, *function.FuncError) {
	t.Helper()
	ctx := context.Background()
	var def function.DefinitionResponse
	f.Definition(ctx, function.DefinitionRequest{}, &def)
	if len(def.Definition.Parameters) != len(args) {
		t.Fatalf("%d arguments for %d parameters", len(args), len(def.Definition.Parameters))
	}
	resp := function.RunResponse{Result: function.NewResultData(unknownOf(def.Definition.Return.GetType()))}
	f.Run(ctx, function.RunRequest{Arguments: function.NewArgumentsData(args)}, &resp)
	if resp.Error != nil {
		return nil, resp.Error
	}
	return goValue(t, resp.Result.Value()), nil
}

func unknownOf(typ attr.Type) attr.Value {
	if o, ok := typ.(types.ObjectType); ok {
		return types.ObjectUnknown(o.AttrTypes)
	}
	return types.StringUnknown()
}

// goValue converts the attr.Values the functions return to plain Go values.
func goValue(t *testing.T, v attr.Value) any {
	t.Helper()
	switch v := v.(type) {
	case types.String:
		return v.ValueString()
	case types.Int64:
		return v.ValueInt64()
	case types.Float64:
		return v.ValueFloat64()
	case types.Bool:
		return v.ValueBool()
	case types.Object:
		out := map[string]any{}
		for k, a := range v.Attributes() {
			if a.IsNull() || a.IsUnknown() {
				t.Fatalf("attribute %s is null or unknown", k)
			}
			out[k] = goValue(t, a)
		}
		return out
	}
	t.Fatalf("unexpected value %T %v", v, v)
	return nil
}

// functionCase is one call: the arguments, and either the attributes expected in the result
// (want: all of them for an object, checked one by one) or the error (errArg, errText).
type functionCase struct {
	name    string
	args    []attr.Value
	want    any
	errArg  int64
	errText string
}

func runFunctionCases(t *testing.T, f func() function.Function, cases []functionCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ferr := callFunction(t, f(), tc.args...)
			if tc.errText != "" {
				checkFuncError(t, ferr, tc.errArg, tc.errText)
				return
			}
			if ferr != nil {
				t.Fatalf("error: %s", ferr.Text)
			}
			checkResult(t, got, tc.want)
		})
	}
}

func checkFuncError(t *testing.T, ferr *function.FuncError, arg int64, text string) {
	t.Helper()
	switch {
	case ferr == nil:
		t.Fatalf("no error, want one on argument %d containing %q", arg, text)
	case ferr.FunctionArgument == nil || *ferr.FunctionArgument != arg:
		t.Fatalf("error %q is not on argument %d (%v)", ferr.Text, arg, ferr.FunctionArgument)
	case !strings.Contains(ferr.Text, text):
		t.Fatalf("error %q does not contain %q", ferr.Text, text)
	}
}

func checkResult(t *testing.T, got, want any) {
	t.Helper()
	wm, ok := want.(map[string]any)
	if !ok {
		if got != want {
			t.Fatalf("got %#v, want %#v", got, want)
		}
		return
	}
	gm, ok := got.(map[string]any)
	if !ok {
		t.Fatalf("got %#v, want an object", got)
	}
	if len(gm) != len(wm) {
		t.Errorf("got attributes %v, want %v", keysOf(gm), keysOf(wm))
	}
	for k, w := range wm {
		if gm[k] != w {
			t.Errorf("%s = %#v, want %#v", k, gm[k], w)
		}
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func fstr(s string) attr.Value { return types.StringValue(s) }
func fnum(n int64) attr.Value  { return types.Int64Value(n) }

func TestFunctionPresetSizing(t *testing.T) {
	runFunctionCases(t, NewPresetSizingFunction, []functionCase{
		{name: "falcon-7b-instruct", args: []attr.Value{fstr("falcon-7b-instruct")}, want: map[string]any{
			"name": "falcon-7b-instruct", "model": "falcon-7b-instruct", "image": "mcr.microsoft.com/aks/kaito/kaito-falcon-7b-instruct:0.1.1",
			"gpu_count": int64(1), "gpu_memory": "14Gi", "gpu_memory_gib": 14.0, "gpu_memory_per_gpu_gib": 14.0, "tuning": true, "gated": false}},
		{name: "gated, two GPUs", args: []attr.Value{fstr("llama-3.3-70b-instruct")}, want: map[string]any{
			"name": "llama-3.3-70b-instruct", "model": "llama-3.3-70b-instruct", "image": "mcr.microsoft.com/aks/kaito/kaito-base:0.0.2",
			"gpu_count": int64(2), "gpu_memory": "150Gi", "gpu_memory_gib": 150.0, "gpu_memory_per_gpu_gib": 75.0, "tuning": false, "gated": true}},
		{name: "multi-node preset", args: []attr.Value{fstr("deepseek-r1-0528")}, want: map[string]any{
			"name": "deepseek-r1-0528", "model": "deepseek-r1-0528", "image": "mcr.microsoft.com/aks/kaito/kaito-base:0.0.2",
			"gpu_count": int64(12), "gpu_memory": "720Gi", "gpu_memory_gib": 720.0, "gpu_memory_per_gpu_gib": 60.0, "tuning": false, "gated": false}},
		{name: "typo", args: []attr.Value{fstr("falcon-7b-instrct")}, errArg: 0, errText: `unknown preset "falcon-7b-instrct"; did you mean falcon-7b-instruct`},
		{name: "empty", args: []attr.Value{fstr("")}, errArg: 0, errText: `unknown preset ""`},
	})
}

func TestFunctionInstanceType(t *testing.T) {
	runFunctionCases(t, NewInstanceTypeFunction, []functionCase{
		{name: "azure H100 NVL", args: []attr.Value{fstr("Standard_NC80adis_H100_v5")}, want: map[string]any{
			"name": "Standard_NC80adis_H100_v5", "cloud": "azure", "gpu_count": int64(2), "gpu_product": "NVIDIA-H100-NVL",
			"gpu_memory": "94Gi", "gpu_memory_gib": 94.0, "total_gpu_memory_gib": 188.0}},
		{name: "aws p4d", args: []attr.Value{fstr("p4d.24xlarge")}, want: map[string]any{
			"name": "p4d.24xlarge", "cloud": "aws", "gpu_count": int64(8), "gpu_product": "NVIDIA-A100-SXM4-40GB",
			"gpu_memory": "40Gi", "gpu_memory_gib": 40.0, "total_gpu_memory_gib": 320.0}},
		{name: "gcp L4", args: []attr.Value{fstr("g2-standard-4")}, want: map[string]any{
			"name": "g2-standard-4", "cloud": "gcp", "gpu_count": int64(1), "gpu_product": "NVIDIA-L4",
			"gpu_memory": "24Gi", "gpu_memory_gib": 24.0, "total_gpu_memory_gib": 24.0}},
		{name: "aws p5e H200", args: []attr.Value{fstr("p5e.48xlarge")}, want: map[string]any{
			"name": "p5e.48xlarge", "cloud": "aws", "gpu_count": int64(8), "gpu_product": "NVIDIA-H200",
			"gpu_memory": "143771Mi", "gpu_memory_gib": 140.4013671875, "total_gpu_memory_gib": 1123.2109375}},
		{name: "azure ND H200 v5", args: []attr.Value{fstr("Standard_ND96isr_H200_v5")}, want: map[string]any{
			"name": "Standard_ND96isr_H200_v5", "cloud": "azure", "gpu_count": int64(8), "gpu_product": "NVIDIA-H200",
			"gpu_memory": "143771Mi", "gpu_memory_gib": 140.4013671875, "total_gpu_memory_gib": 1123.2109375}},
		{name: "gcp a3-ultragpu", args: []attr.Value{fstr("a3-ultragpu-8g")}, want: map[string]any{
			"name": "a3-ultragpu-8g", "cloud": "gcp", "gpu_count": int64(8), "gpu_product": "NVIDIA-H200",
			"gpu_memory": "143771Mi", "gpu_memory_gib": 140.4013671875, "total_gpu_memory_gib": 1123.2109375}},
		{name: "typo", args: []attr.Value{fstr("p4d.24xlarg")}, errArg: 0, errText: `unknown GPU instance type "p4d.24xlarg"; did you mean p4d.24xlarge`},
		{name: "case-sensitive as the node label", args: []attr.Value{fstr("standard_nc6s_v3")}, errArg: 0, errText: `did you mean Standard_NC6s_v3`},
	})
}

// sizing is workspace_sizing's expected object: count pods of perNode GPUs, perNodePods to a
// node; multi (KAITO's multi-node inference) makes them one replica spanning count nodes.
func sizing(preset, it string, count int64, product string, perNode, modelGPUs int64, multi bool, podsPerNode, nodes int64) map[string]any {
	replicas, span := count, int64(1)
	if multi {
		replicas, span = 1, count
	}
	return map[string]any{
		"preset": preset, "instance_type": it, "count": count, "gpu_product": product,
		"replicas": replicas, "nodes_per_replica": span, "gpus_per_node": perNode, "gpus_per_replica": perNode * span,
		"model_gpus": modelGPUs, "multi_node": multi, "pods_per_node": podsPerNode,
		"total_nodes": nodes, "total_gpus": count * perNode, "node_claims": nodes,
	}
}

func TestFunctionWorkspaceSizing(t *testing.T) {
	args := func(preset, it string, n int64) []attr.Value { return []attr.Value{fstr(preset), fstr(it), fnum(n)} }
	runFunctionCases(t, NewWorkspaceSizingFunction, []functionCase{
		{name: "one GPU each, eight to a node", args: args("falcon-7b-instruct", "Standard_ND96asr_v4", 3),
			want: sizing("falcon-7b-instruct", "Standard_ND96asr_v4", 3, "NVIDIA-A100-SXM4-40GB", 1, 1, false, 8, 1)},
		{name: "two GPUs each, two to a node", args: args("falcon-40b-instruct", "Standard_NC96ads_A100_v4", 5),
			want: sizing("falcon-40b-instruct", "Standard_NC96ads_A100_v4", 5, "NVIDIA-A100-PCIE-80GB", 2, 2, false, 2, 3)},
		{name: "KAITO's deepseek-r1 example: 6 x NC80adis", args: args("deepseek-r1-0528", "Standard_NC80adis_H100_v5", 6),
			want: sizing("deepseek-r1-0528", "Standard_NC80adis_H100_v5", 6, "NVIDIA-H100-NVL", 2, 12, true, 1, 6)},
		{name: "multi-node on two p5", args: args("deepseek-r1-0528", "p5.48xlarge", 2),
			want: sizing("deepseek-r1-0528", "p5.48xlarge", 2, "NVIDIA-H100-80GB-HBM3", 8, 12, true, 1, 2)},
		{name: "multi-node on two p5en (H200)", args: args("deepseek-r1-0528", "p5en.48xlarge", 2),
			want: sizing("deepseek-r1-0528", "p5en.48xlarge", 2, "NVIDIA-H200", 8, 12, true, 1, 2)},
		{name: "two GPUs each, four to an a3-ultragpu node", args: args("falcon-40b-instruct", "a3-ultragpu-8g", 6),
			want: sizing("falcon-40b-instruct", "a3-ultragpu-8g", 6, "NVIDIA-H200", 2, 2, false, 4, 2)},
		{name: "gated preset needs no Secret here", args: args("llama-3.3-70b-instruct", "g6.xlarge", 2),
			want: sizing("llama-3.3-70b-instruct", "g6.xlarge", 2, "NVIDIA-L4", 1, 2, true, 1, 2)},
		{name: "unknown preset", args: args("falcon-7b-instrct", "p5.48xlarge", 1), errArg: 0, errText: `did you mean falcon-7b-instruct`},
		{name: "unknown instance type", args: args("falcon-7b", "p5.48xlarg", 1), errArg: 1, errText: `unknown GPU instance type "p5.48xlarg"`},
		{name: "no pods", args: args("falcon-7b", "p5.48xlarge", 0), errArg: 2, errText: `must be between 1 and 64, got 0`},
		{name: "too many pods", args: args("falcon-7b", "p5.48xlarge", 65), errArg: 2, errText: `must be between 1 and 64, got 65`},
		{name: "preset larger than a node", args: args("deepseek-r1-0528", "p5.48xlarge", 1), errArg: 1,
			errText: `preset "deepseek-r1-0528" on 1 pod(s) of p5.48xlarge: resource.gpu_count: 12 GPUs per pod, but a p5.48xlarge node has 8 (NVIDIA-H100-80GB-HBM3); choose a larger instance type, or set count above 1`},
		{name: "group too small", args: args("deepseek-r1-0528", "Standard_NC80adis_H100_v5", 4), errArg: 2,
			errText: `inference.model_gpus: the model needs 12 GPUs but 4 nodes × 2 GPUs (count × GPUs per pod) give 8`},
	})
}

// Every preset on every instance type, at a few counts: workspace_sizing either fails on the
// instance_type or count argument, or returns a sizing that a node of the type can hold, whose
// NodeClaims cover the pods, and whose replicas hold the model.
func TestFunctionWorkspaceSizing_wholeCatalog(t *testing.T) {
	ok := 0
	for _, p := range workspace.Presets() {
		for _, it := range hardware.InstanceTypes() {
			for _, n := range []int64{1, 2, 3, 6, 64} {
				s, ferr := sizeWorkspace(p.Name, it.Name, n)
				if ferr != nil {
					if ferr.FunctionArgument == nil || *ferr.FunctionArgument == argSizingPreset {
						t.Errorf("%s on %s × %d: %s (not on instance_type or count)", p.Name, it.Name, n, ferr.Text)
					}
					continue
				}
				ok++
				what := fmt.Sprintf("%s on %s × %d", p.Name, it.Name, n)
				checkSizing(t, what, s, int64(it.GPUCount))
				checkSameAsResource(t, what, s)
			}
		}
	}
	if ok == 0 {
		t.Fatal("no preset fits any instance type")
	}
}

// checkSameAsResource: the attributes workspace_sizing shares with gantry_workspace's computed
// sizing (resolveWorkspaceSizing) have the same values for the same workspace.
func checkSameAsResource(t *testing.T, what string, s workspaceSizing) {
	t.Helper()
	w := &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{
		Resource:  v1alpha1.WorkspaceResource{Count: int32(s.Count), InstanceType: s.InstanceType},
		Inference: &v1alpha1.WorkspaceInference{Preset: s.Preset},
	}}
	r, err := resolveWorkspaceSizing(w, nil)
	if err != nil {
		t.Fatalf("%s: the resource's sizing fails: %v", what, err)
	}
	want := wsSizing{Replicas: s.Replicas, NodesPerReplica: s.NodesPerReplica, GPUsPerNode: s.GPUsPerNode, GPUsPerReplica: s.GPUsPerReplica,
		NodeClaims: s.NodeClaims, InstanceType: s.InstanceType, GPUProduct: s.GPUProduct}
	r.Model, r.ModelGPUMemory = nil, "" // the model's memory is the resource's only
	if r != want {
		t.Errorf("%s: gantry_workspace's sizing is %+v, workspace_sizing's %+v", what, r, want)
	}
}

func checkSizing(t *testing.T, what string, s workspaceSizing, nodeGPUs int64) {
	t.Helper()
	checks := []struct {
		name string
		ok   bool
	}{
		{"a pod's GPUs fit one node", s.GPUsPerNode >= 1 && s.GPUsPerNode <= nodeGPUs},
		{"pods per node fit one node", s.PodsPerNode*s.GPUsPerNode <= nodeGPUs},
		{"the nodes hold the pods", s.TotalNodes*s.PodsPerNode >= s.Count && (s.TotalNodes-1)*s.PodsPerNode < s.Count},
		{"a NodeClaim per node", s.NodeClaims == s.TotalNodes},
		{"replicas × nodes per replica are the pods", s.Replicas*s.NodesPerReplica == s.Count},
		{"total GPUs", s.TotalGPUs == s.Count*s.GPUsPerNode && s.TotalGPUs == s.Replicas*s.GPUsPerReplica},
		{"a replica holds the model", s.GPUsPerReplica >= s.ModelGPUs},
		{"multi-node is one replica over nodes", s.MultiNode == (s.NodesPerReplica > 1) && (!s.MultiNode || s.PodsPerNode == 1)},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: %s: %+v", what, c.name, s)
		}
	}
}

func TestFunctionPackageImage(t *testing.T) {
	args := func(image, version string) []attr.Value { return []attr.Value{fstr(image), fstr(version)} }
	runFunctionCases(t, NewPackageImageFunction, []functionCase{
		{name: "version is the tag", args: args("ghcr.io/acme/tuned", "1.2"), want: "ghcr.io/acme/tuned:1.2"},
		{name: "written tag replaced", args: args("ghcr.io/acme/tuned:6.0", "1.2.3"), want: "ghcr.io/acme/tuned:1.2.3"},
		{name: "registry port is not a tag", args: args("localhost:5000/tuned", "2.0.0-rc.1"), want: "localhost:5000/tuned:2.0.0-rc.1"},
		{name: "digest kept", args: args("ghcr.io/acme/tuned@sha256:"+strings.Repeat("ab", 32), "1.2"), want: "ghcr.io/acme/tuned@sha256:" + strings.Repeat("ab", 32)},
		{name: "build metadata", args: args("ghcr.io/acme/tuned", "1.2.3+build.5"), want: "ghcr.io/acme/tuned:1.2.3_build.5"},
		{name: "empty image", args: args("", "1.2"), errArg: 0, errText: "image must be 1-512 characters, got 0"},
		{name: "long image", args: args(strings.Repeat("x", 513), "1.2"), errArg: 0, errText: "got 513"},
		{name: "not a version", args: args("ghcr.io/acme/tuned", "latest"), errArg: 1, errText: `"latest" must be a semantic version`},
		{name: "v prefix", args: args("ghcr.io/acme/tuned", "v1.2.3"), errArg: 1, errText: `"v1.2.3" must be a semantic version`},
	})
}

// The protocol server lists the four functions with their definitions, and a call through it
// returns an argument error at the argument's position.
func TestFunctionServer(t *testing.T) {
	ctx := context.Background()
	s := Server("test")
	fs, err := s.GetFunctions(ctx, &tfprotov6.GetFunctionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range fs.Diagnostics {
		t.Errorf("GetFunctions: %s: %s", d.Summary, d.Detail)
	}
	for _, name := range []string{"preset_sizing", "instance_type", "workspace_sizing", "package_image"} {
		f := fs.Functions[name]
		switch {
		case f == nil:
			t.Errorf("function %s is not served", name)
		case f.Summary == "" || f.Description == "" || !strings.Contains(f.Summary+f.Description, "KAITO") && !strings.Contains(f.Summary+f.Description, "Skyhook"):
			t.Errorf("function %s: the summary and description must name the upstream system: %q / %q", name, f.Summary, f.Description)
		}
	}
	arg := func(v string) *tfprotov6.DynamicValue {
		dv, err := tfprotov6.NewDynamicValue(tftypes.String, tftypes.NewValue(tftypes.String, v))
		if err != nil {
			t.Fatal(err)
		}
		return &dv
	}
	resp, err := s.CallFunction(ctx, &tfprotov6.CallFunctionRequest{Name: "package_image", Arguments: []*tfprotov6.DynamicValue{arg("ghcr.io/acme/tuned"), arg("1.x")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Error == nil || resp.Error.FunctionArgument == nil || *resp.Error.FunctionArgument != 1 {
		t.Fatalf("want an error on argument 1 (version), got %+v", resp.Error)
	}
}

// The functions run in the real CLI with no cluster: in outputs (asserted in the plan and in
// the state) and in a variable's validation block; an argument error and a failed validation
// fail the plan with their messages.
func TestFunctionCLI(t *testing.T) {
	requireTerraform(t)
	// Two replicas of a one-GPU preset share a two-GPU node; two of a two-GPU preset do not.
	const validated = `
variable "preset" {
  type    = string
  default = %q
  validation {
    condition     = provider::gantry::workspace_sizing(var.preset, "Standard_NC48ads_A100_v4", 2).total_nodes <= 1
    error_message = "Two replicas of this preset need more than one Standard_NC48ads_A100_v4 node."
  }
}
output "preset" {
  value = provider::gantry::preset_sizing(var.preset)
}
`
	outputs := fmt.Sprintf(validated, "falcon-7b-instruct") + `
output "instance_type" {
  value = provider::gantry::instance_type("Standard_NC80adis_H100_v5")
}
output "sizing" {
  value = provider::gantry::workspace_sizing("deepseek-r1-0528", "Standard_NC80adis_H100_v5", 6)
}
output "image" {
  value = provider::gantry::package_image("ghcr.io/acme/tuned:6.0", "1.2.3+build.5")
}
`
	checks := []struct {
		output string
		value  knownvalue.Check
	}{
		{"preset", knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": knownvalue.StringExact("falcon-7b-instruct"), "model": knownvalue.StringExact("falcon-7b-instruct"),
			"image":     knownvalue.StringExact("mcr.microsoft.com/aks/kaito/kaito-falcon-7b-instruct:0.1.1"),
			"gpu_count": knownvalue.Int64Exact(1), "gpu_memory": knownvalue.StringExact("14Gi"),
			"gpu_memory_gib": knownvalue.Float64Exact(14), "gpu_memory_per_gpu_gib": knownvalue.Float64Exact(14),
			"tuning": knownvalue.Bool(true), "gated": knownvalue.Bool(false)})},
		{"instance_type", knownvalue.ObjectExact(map[string]knownvalue.Check{
			"name": knownvalue.StringExact("Standard_NC80adis_H100_v5"), "cloud": knownvalue.StringExact("azure"),
			"gpu_count": knownvalue.Int64Exact(2), "gpu_product": knownvalue.StringExact("NVIDIA-H100-NVL"),
			"gpu_memory": knownvalue.StringExact("94Gi"), "gpu_memory_gib": knownvalue.Float64Exact(94),
			"total_gpu_memory_gib": knownvalue.Float64Exact(188)})},
		{"sizing", knownvalue.ObjectExact(map[string]knownvalue.Check{
			"preset": knownvalue.StringExact("deepseek-r1-0528"), "instance_type": knownvalue.StringExact("Standard_NC80adis_H100_v5"),
			"count": knownvalue.Int64Exact(6), "gpu_product": knownvalue.StringExact("NVIDIA-H100-NVL"),
			"replicas": knownvalue.Int64Exact(1), "nodes_per_replica": knownvalue.Int64Exact(6),
			"gpus_per_node": knownvalue.Int64Exact(2), "gpus_per_replica": knownvalue.Int64Exact(12), "model_gpus": knownvalue.Int64Exact(12),
			"multi_node": knownvalue.Bool(true), "pods_per_node": knownvalue.Int64Exact(1),
			"total_nodes": knownvalue.Int64Exact(6), "total_gpus": knownvalue.Int64Exact(12), "node_claims": knownvalue.Int64Exact(6)})},
		{"image", knownvalue.StringExact("ghcr.io/acme/tuned:1.2.3_build.5")},
	}
	var planChecks []plancheck.PlanCheck
	var stateChecks []statecheck.StateCheck
	for _, c := range checks {
		planChecks = append(planChecks, plancheck.ExpectKnownOutputValue(c.output, c.value))
		stateChecks = append(stateChecks, statecheck.ExpectKnownOutputValue(c.output, c.value))
	}
	resource.UnitTest(t, resource.TestCase{
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{tfversion.SkipBelow(tfversion.Version1_8_0)},
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config:            outputs,
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: planChecks},
				ConfigStateChecks: stateChecks,
			},
			{
				Config:      fmt.Sprintf(validated, "falcon-40b-instruct"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Two replicas of this preset need more than one\s+Standard_NC48ads_A100_v4\s+node`),
			},
			{
				Config:      `output "x" { value = provider::gantry::preset_sizing("falcon-7b-instrct") }`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)unknown preset "falcon-7b-instrct";\s+did\s+you\s+mean\s+falcon-7b-instruct`),
			},
		},
	})
}
