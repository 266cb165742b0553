package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	fwresource "github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// candidateCluster is the local cluster's shape (hack/cluster): gpu-0 and gpu-1 A100, gpu-2
// H100, 8 GPUs each behind the nvidia.com/gpu taint, and a CPU node; pods are added per test.
func candidateCluster(pods ...*corev1.Pod) *kubefake.Clientset {
	var objs []runtime.Object
	for _, n := range []struct{ name, product string }{{"gpu-0", "NVIDIA-A100-SXM4-80GB"}, {"gpu-1", "NVIDIA-A100-SXM4-80GB"}, {"gpu-2", "NVIDIA-H100-80GB-HBM3"}} {
		alloc := corev1.ResourceList{hardware.ResourceGPU: k8sresource.MustParse("8"), corev1.ResourceCPU: k8sresource.MustParse("64")}
		objs = append(objs, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{hardware.LabelGPUPresent: "true", hardware.LabelGPUProduct: n.product}},
			Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: hardware.TaintGPU, Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
			Status:     corev1.NodeStatus{Allocatable: alloc, Capacity: alloc},
		})
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("16")}
	objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-0"}, Status: corev1.NodeStatus{Allocatable: cpu, Capacity: cpu}})
	for _, p := range pods {
		objs = append(objs, p)
	}
	return kubefake.NewSimpleClientset(objs...)
}

// gpuPod is a running pod bound to node requesting gpus nvidia.com/gpu, with labels.
func gpuPod(ns, name, node string, gpus int64, labels map[string]string) *corev1.Pod {
	q := *k8sresource.NewQuantity(gpus, k8sresource.DecimalSI)
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{hardware.ResourceGPU: q}, Limits: corev1.ResourceList{hardware.ResourceGPU: q}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

// candidateResource is gantry_performer with clients over core (nil: the provider cannot
// build clients, with that error).
func candidateResource(core *kubefake.Clientset) *performerResource {
	lazy := kube.NewLazy(func() (*kube.Clients, error) {
		if core == nil {
			return nil, errors.New("no cluster configured")
		}
		return &kube.Clients{Core: core, Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())}, nil
	})
	r, _ := NewPerformerResource().(*performerResource)
	r.data = newProviderData(lazy)
	return r
}

// gpuPerformer is a performer asking for gpus nvidia.com/gpu of product ("" any).
func gpuPerformer(gpus int64, product string) performerModelV0 {
	m := minimalModel()
	m.HardwareRequirements = &hardwareModel{GPUCount: types.Int64Value(gpus)}
	if product != "" {
		m.HardwareRequirements.GPUType = str(product)
	}
	return m
}

// performerValue is m as a plan value of r's schema (timeouts null).
func performerValue(t *testing.T, r *performerResource, m performerModelV0) tfsdk.Plan {
	t.Helper()
	ctx := context.Background()
	var sr fwresource.SchemaResponse
	r.Schema(ctx, fwresource.SchemaRequest{}, &sr)
	m.Timeouts = timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{"create": types.StringType, "update": types.StringType, "delete": types.StringType})}
	p := tfsdk.Plan{Schema: sr.Schema, Raw: tftypes.NewValue(sr.Schema.Type().TerraformType(ctx), nil)}
	if d := p.Set(ctx, &m); d.HasError() {
		t.Fatal(d)
	}
	return p
}

// planPerformer runs ModifyPlan for plan m against state (nil: create) with the
// configuration config (nil: m's own values, candidate_nodes null) and returns the planned candidate_nodes and the
// warnings.
func planPerformer(t *testing.T, r *performerResource, m performerModelV0, state *performerModelV0, config *tfsdk.Plan) (types.Int64, diag.Diagnostics) {
	t.Helper()
	ctx := context.Background()
	plan := performerValue(t, r, m)
	st := tfsdk.State{Schema: plan.Schema, Raw: tftypes.NewValue(plan.Raw.Type(), nil)}
	if state != nil {
		st.Raw = performerValue(t, r, *state).Raw
	}
	asConfig := m // a configuration holds no computed value
	asConfig.CandidateNodes = types.Int64Null()
	cfg := tfsdk.Config{Schema: plan.Schema, Raw: performerValue(t, r, asConfig).Raw}
	if config != nil {
		cfg.Raw = config.Raw
	}
	resp := fwresource.ModifyPlanResponse{Plan: plan}
	r.ModifyPlan(ctx, fwresource.ModifyPlanRequest{Plan: plan, State: st, Config: cfg}, &resp)
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var got types.Int64
	if d := resp.Plan.GetAttribute(ctx, path.Root("candidate_nodes"), &got); d.HasError() {
		t.Fatal(d)
	}
	return got, resp.Diagnostics
}

// applyCount is the count an apply of m (candidate_nodes planned unknown) stores: what
// prepareCandidates sets from r's cluster reads.
func applyCount(t *testing.T, r *performerResource, m performerModelV0) types.Int64 {
	t.Helper()
	m.CandidateNodes = types.Int64Unknown()
	if d := prepareCandidates(context.Background(), r.data, tfsdk.Config{}, &m, nil); d.HasError() {
		t.Fatal(d)
	}
	return m.CandidateNodes
}

// oneWarning checks diags hold exactly one warning, on candidate_nodes, with summary and
// every part of want in its detail.
func oneWarning(t *testing.T, diags diag.Diagnostics, summary string, want ...string) {
	t.Helper()
	if len(diags) != 1 || diags[0].Severity() != diag.SeverityWarning || diags[0].Summary() != summary {
		t.Fatalf("want one warning %q, got %v", summary, diags)
	}
	if d, ok := diags[0].(diag.DiagnosticWithPath); !ok || !d.Path().Equal(path.Root("candidate_nodes")) {
		t.Errorf("warning not on candidate_nodes: %v", diags[0])
	}
	for _, w := range want {
		if !strings.Contains(diags[0].Detail(), w) {
			t.Errorf("warning lacks %q:\n%s", w, diags[0].Detail())
		}
	}
}

// A create plans candidate_nodes unknown (known after apply: Terraform's plan at apply must
// reproduce any value known at plan, and nodes come and go) and warns when no node fits; the
// apply counts the nodes that fit: every GPU node for one GPU, the H100 node for an H100, none
// for a product the cluster lacks (the plan's warning names what is asked and the nearest nodes).
func TestPerformerCandidates_create(t *testing.T) {
	for _, tc := range []struct {
		name    string
		m       performerModelV0
		want    int64
		summary string
		detail  []string
	}{
		{name: "one GPU", m: gpuPerformer(1, ""), want: 3},
		{name: "H100", m: gpuPerformer(2, "NVIDIA-H100-80GB-HBM3"), want: 1},
		{name: "no GPU: the untainted CPU node", m: minimalModel(), want: 1},
		{name: "a product no node has", m: gpuPerformer(1, "NVIDIA-H200"), want: 0, summary: "No Node Can Take Performer", detail: []string{
			"no node can take performer default/p: it asks for node selector nvidia.com/gpu.present=true, nvidia.com/gpu.product=NVIDIA-H200; " +
				"tolerations nvidia.com/gpu:NoSchedule (Exists); requests nvidia.com/gpu: 1, and none of the cluster's 4 node(s) has all of it; nearest: " +
				"gpu-0 (label nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB, not NVIDIA-H200 (GPU type NVIDIA-H200)), gpu-1 (",
			"the performer goes Failed with the scheduler's message and the apply fails, unless such a node joins first."}},
		{name: "more GPUs than a node has", m: gpuPerformer(16, ""), want: 0, summary: "No Node Can Take Performer", detail: []string{
			"gpu-0 (nvidia.com/gpu: 8 allocatable, 16 asked)", "cpu-0 ("}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := candidateResource(candidateCluster())
			got, diags := planPerformer(t, r, tc.m, nil, nil)
			if !got.IsUnknown() {
				t.Errorf("planned candidate_nodes = %s, want unknown (known after apply)", got)
			}
			if n := applyCount(t, r, tc.m); !n.Equal(types.Int64Value(tc.want)) {
				t.Errorf("applied candidate_nodes = %s, want %d", n, tc.want)
			}
			if tc.summary == "" {
				if len(diags) != 0 {
					t.Errorf("unexpected diagnostics: %v", diags)
				}
				return
			}
			oneWarning(t, diags, tc.summary, tc.detail...)
		})
	}
}

// Nodes that fit but have no room now leave the count as it is and warn, naming each node's
// free GPUs; the performer's own Pod does not count against it with Recreate (it is deleted
// first), and does with RollingUpdate (the new Pod is placed beside it).
func TestPerformerCandidates_busy(t *testing.T) {
	full := []*corev1.Pod{gpuPod("ml", "train-0", "gpu-0", 8, nil), gpuPod("ml", "train-1", "gpu-1", 8, nil)}
	mine := gpuPod("default", "performer-p", "gpu-2", 8, map[string]string{v1alpha1.LabelPerformer: "p"})

	busy := candidateResource(candidateCluster(append(full, gpuPod("ml", "train-2", "gpu-2", 7, nil))...))
	got, diags := planPerformer(t, busy, gpuPerformer(2, ""), nil, nil)
	if n := applyCount(t, busy, gpuPerformer(2, "")); !got.IsUnknown() || !n.Equal(types.Int64Value(3)) {
		t.Errorf("candidate_nodes planned %s, applied %s; want unknown, then 3 (room is not counted)", got, n)
	}
	oneWarning(t, diags, "No Node Has Room for Performer Now",
		"none of the 3 node(s) that fit can take performer default/p now (it requests nvidia.com/gpu: 2): "+
			"gpu-0 (nvidia.com/gpu: 0 of 8 free, 2 asked), gpu-1 (nvidia.com/gpu: 0 of 8 free, 2 asked), gpu-2 (nvidia.com/gpu: 1 of 8 free, 2 asked).",
		"the apply fails unless room frees up first")

	recreate := gpuPerformer(2, "")
	if _, diags := planPerformer(t, candidateResource(candidateCluster(append(full, mine)...)), recreate, nil, nil); len(diags) != 0 {
		t.Errorf("Recreate: the performer's own Pod must not count against it: %v", diags)
	}
	rolling := gpuPerformer(2, "")
	rolling.Strategy = str(string(v1alpha1.PerformerRollingUpdate))
	_, diags = planPerformer(t, candidateResource(candidateCluster(append(full, mine)...)), rolling, nil, nil)
	oneWarning(t, diags, "No Node Has Room for Performer Now", "gpu-2 (nvidia.com/gpu: 0 of 8 free, 2 asked)")
}

// A plan that does not change the spec keeps the state's count and reads nothing; one that
// does counts again. A labels-only change is not a spec change.
func TestPerformerCandidates_update(t *testing.T) {
	state := gpuPerformer(1, "")
	state.CandidateNodes = types.Int64Value(7) // counted when the cluster had 7 GPU nodes
	core := candidateCluster()
	relabelled := state
	relabelled.Labels = map[string]string{"team": "avs"}
	relabelled.CandidateNodes = types.Int64Unknown()
	got, diags := planPerformer(t, candidateResource(core), relabelled, &state, nil)
	if !got.Equal(types.Int64Value(7)) || len(diags) != 0 {
		t.Errorf("unchanged spec: candidate_nodes = %s (%v), want the state's 7", got, diags)
	}
	if a := core.Actions(); len(a) != 0 {
		t.Errorf("unchanged spec: the plan called the API: %v", a)
	}

	imported := state
	imported.CandidateNodes = types.Int64Null()
	if got, _ := planPerformer(t, candidateResource(core), imported, &imported, nil); !got.IsNull() {
		t.Errorf("imported, unchanged: candidate_nodes = %s, want null", got)
	}

	changed := gpuPerformer(1, "NVIDIA-A100-SXM4-80GB")
	changed.CandidateNodes = types.Int64Unknown()
	r := candidateResource(core)
	if got, _ := planPerformer(t, r, changed, &state, nil); !got.IsUnknown() {
		t.Errorf("changed spec: planned candidate_nodes = %s, want unknown", got)
	}
	if n := applyCount(t, r, changed); !n.Equal(types.Int64Value(2)) {
		t.Errorf("changed spec: applied candidate_nodes = %s, want 2", n)
	}
}

// Unknown, with one warning saying why, when the configuration has a value known only at apply
// or the nodes cannot be listed: the apply's plan counts again, and unknown is the only
// planned value it may replace.
func TestPerformerCandidates_skipped(t *testing.T) {
	m := gpuPerformer(1, "")
	r := candidateResource(candidateCluster())
	config := performerValue(t, r, m)
	if d := config.SetAttribute(context.Background(), path.Root("image"), types.StringUnknown()); d.HasError() {
		t.Fatal(d)
	}
	got, diags := planPerformer(t, r, m, nil, &config)
	if !got.IsUnknown() {
		t.Errorf("unknown configuration: candidate_nodes = %s, want unknown", got)
	}
	oneWarning(t, diags, candidatesSkipped, "a value of it is known only at apply")

	forbidden := candidateCluster()
	forbidden.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", errors.New(`User "runner" cannot list resource "nodes"`))
	})
	got, diags = planPerformer(t, candidateResource(forbidden), m, nil, nil)
	if !got.IsUnknown() {
		t.Errorf("forbidden: candidate_nodes = %s, want unknown", got)
	}
	oneWarning(t, diags, candidatesSkipped, "The nodes that can take performer default/p were not counted: listing nodes: nodes is forbidden")

	got, diags = planPerformer(t, candidateResource(nil), m, nil, nil)
	if !got.IsUnknown() {
		t.Errorf("no cluster: candidate_nodes = %s, want unknown", got)
	}
	oneWarning(t, diags, candidatesSkipped, "no cluster configured")
}

// A pods list that fails leaves the count and says room was not checked.
func TestPerformerCandidates_podsForbidden(t *testing.T) {
	core := candidateCluster()
	core.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
	})
	r := candidateResource(core)
	_, diags := planPerformer(t, r, gpuPerformer(1, ""), nil, nil)
	if n := applyCount(t, r, gpuPerformer(1, "")); !n.Equal(types.Int64Value(3)) {
		t.Errorf("applied candidate_nodes = %s, want 3", n)
	}
	oneWarning(t, diags, "Performer Room Not Checked", "3 node(s) can take performer default/p; whether one has nvidia.com/gpu: 1 free now was not checked: listing pods:")
}

// The planned count reaches the state (an apply copies the plan) and a refresh keeps it; an
// import or a list result (no prior) has none; an apply whose plan could not count stores null.
func TestPerformerCandidates_state(t *testing.T) {
	m := gpuPerformer(1, "")
	obj := apiRoundTrip(t, m)
	prior := m
	prior.CandidateNodes = types.Int64Value(3)
	for name, tc := range map[string]struct {
		prior *performerModelV0
		want  types.Int64
	}{
		"refresh keeps the planned count": {&prior, types.Int64Value(3)},
		"import":                          {&performerModelV0{Name: str("p"), Namespace: str("default")}, types.Int64Null()},
		"list":                            {nil, types.Int64Null()},
	} {
		got, err := flattenPerformer(obj, tc.prior)
		if err != nil {
			t.Fatal(err)
		}
		if !got.CandidateNodes.Equal(tc.want) {
			t.Errorf("%s: candidate_nodes = %s, want %s", name, got.CandidateNodes, tc.want)
		}
	}
	for planned, want := range map[types.Int64]types.Int64{types.Int64Value(3): types.Int64Value(3), types.Int64Unknown(): types.Int64Null(), types.Int64Null(): types.Int64Null()} {
		applied := m
		applied.CandidateNodes = planned
		setAppliedPerformerStatus(&applied, &unstructured.Unstructured{Object: obj.Object})
		if !applied.CandidateNodes.Equal(want) {
			t.Errorf("applied with planned %s: candidate_nodes = %s, want %s", planned, applied.CandidateNodes, want)
		}
	}
}

// The plans of many performers in one provider process list the nodes and the pods once.
func TestPerformerCandidates_listedOnce(t *testing.T) {
	core := candidateCluster()
	r := candidateResource(core)
	for _, m := range []performerModelV0{gpuPerformer(1, ""), gpuPerformer(2, "NVIDIA-H100-80GB-HBM3"), gpuPerformer(4, "")} {
		planPerformer(t, r, m, nil, nil)
		if n := applyCount(t, r, m); n.IsUnknown() || n.IsNull() {
			t.Fatalf("candidate_nodes = %s", n)
		}
	}
	var lists []string
	for _, a := range core.Actions() {
		lists = append(lists, a.GetVerb()+" "+a.GetResource().Resource)
	}
	if strings.Join(lists, ", ") != "list nodes, list pods" {
		t.Errorf("API calls of three plans and applies: %v, want one list of nodes and one of pods", lists)
	}
}
