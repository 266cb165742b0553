package workspace

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The catalog is well-formed: at least ten presets, unique names, each with a model, an image,
// GPUs and a GPU memory quantity; several can be tuned; gated ones are marked.
func TestPresetCatalog(t *testing.T) {
	ps := Presets()
	if len(ps) < 10 {
		t.Fatalf("%d presets, want at least 10", len(ps))
	}
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Name] {
			t.Errorf("preset %s twice", p.Name)
		}
		seen[p.Name] = true
		if p.Model == "" || p.Image == "" || p.GPUCount < 1 {
			t.Errorf("preset %+v: model, image and gpuCount are required", p)
		}
		if _, err := resource.ParseQuantity(p.GPUMemory); err != nil {
			t.Errorf("preset %s gpuMemory %q: %v", p.Name, p.GPUMemory, err)
		}
	}
	if len(TuningPresets()) < 3 {
		t.Errorf("tuning presets %v", TuningPresets())
	}
}

func TestResolve(t *testing.T) {
	inference := func(in v1alpha1.WorkspaceInference, gpus int32) *v1alpha1.Workspace {
		return &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{GPUCount: gpus}, Inference: &in}}
	}
	// A preset fills what is empty.
	got, err := Resolve(inference(v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}, 0))
	if err != nil {
		t.Fatal(err)
	}
	in := got.Spec.Inference
	if in.Model != "falcon-40b-instruct" || in.Image != "mcr.microsoft.com/aks/kaito/kaito-falcon-40b-instruct:0.1.1" || got.Spec.Resource.GPUCount != 2 ||
		!slices.Equal(in.Args, []string{"--served-model-name=falcon-40b-instruct", "--port=$(PORT)", "--tensor-parallel-size=2"}) {
		t.Errorf("resolved %+v gpus %d", in, got.Spec.Resource.GPUCount)
	}
	// Field by field, the user's values win.
	got, err = Resolve(inference(v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct", Image: "registry.example/falcon:mine", Args: []string{"--x"}}, 4))
	if err != nil || got.Spec.Inference.Image != "registry.example/falcon:mine" || got.Spec.Resource.GPUCount != 4 || !slices.Equal(got.Spec.Inference.Args, []string{"--x"}) ||
		got.Spec.Inference.Model != "falcon-40b-instruct" {
		t.Errorf("overrides: %+v %v", got.Spec.Inference, err)
	}
	// The input is not changed.
	orig := inference(v1alpha1.WorkspaceInference{Preset: "phi-2"}, 0)
	if _, err := Resolve(orig); err != nil || orig.Spec.Inference.Model != "" || orig.Spec.Resource.GPUCount != 0 {
		t.Errorf("Resolve changed its input: %+v", orig.Spec)
	}
	// Unknown names list the close ones.
	_, err = Resolve(inference(v1alpha1.WorkspaceInference{Preset: "falcon-7b-instrct"}, 0))
	if err == nil || !strings.Contains(err.Error(), "spec.inference.preset") || !strings.Contains(err.Error(), "did you mean falcon-7b-instruct") {
		t.Errorf("unknown preset: %v", err)
	}
	_, err = Resolve(inference(v1alpha1.WorkspaceInference{Preset: "gpt-17"}, 0))
	if err == nil || !strings.Contains(err.Error(), "the presets are: deepseek-r1-0528, deepseek-r1-distill-llama-8b") {
		t.Errorf("far-off preset: %v", err)
	}
	// KAITO's current presets: phi-4-mini-instruct on one GPU; deepseek-r1-0528 as KAITO's own
	// example serves it, 6 × Standard_NC80adis_H100_v5 (2 GPUs each) in one multi-node group.
	if got, err := Resolve(inference(v1alpha1.WorkspaceInference{Preset: "phi-4-mini-instruct"}, 0)); err != nil ||
		got.Spec.Inference.Image != "mcr.microsoft.com/aks/kaito/kaito-phi-4-mini-instruct:0.2.0" || got.Spec.Resource.GPUCount != 1 {
		t.Errorf("phi-4-mini-instruct: %+v %v", got.Spec, err)
	}
	r1 := inference(v1alpha1.WorkspaceInference{Preset: "deepseek-r1-0528"}, 0)
	six := int32(6)
	r1.Spec.Resource.Count, r1.Spec.Resource.InstanceType = six, "Standard_NC80adis_H100_v5"
	if got, err := Resolve(r1); err != nil || got.Spec.Inference.ModelGPUs != 12 || got.Spec.Resource.GPUCount != 2 ||
		!slices.Contains(got.Spec.Inference.Args, "--model=deepseek-ai/DeepSeek-R1-0528") {
		t.Errorf("deepseek-r1-0528 on 6 × NC80adis: %+v %v", got.Spec, err)
	}
	// Neither preset nor model.
	if _, err := Resolve(inference(v1alpha1.WorkspaceInference{Image: "x"}, 1)); err == nil || !strings.Contains(err.Error(), "spec.inference.model: required without a preset") {
		t.Errorf("no preset, no model: %v", err)
	}
	// A gated preset needs a model access Secret.
	if _, err := Resolve(inference(v1alpha1.WorkspaceInference{Preset: "llama-3.1-8b-instruct"}, 0)); err == nil || !strings.Contains(err.Error(), "spec.inference.modelAccessSecret") {
		t.Errorf("gated without secret: %v", err)
	}
	if _, err := Resolve(inference(v1alpha1.WorkspaceInference{Preset: "llama-3.1-8b-instruct", ModelAccessSecret: "hf"}, 0)); err != nil {
		t.Errorf("gated with secret: %v", err)
	}
	// Tuning: only tunable presets.
	tuning := func(preset string) *v1alpha1.Workspace {
		return &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Tuning: &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningLoRA, Preset: preset}}}
	}
	got, err = Resolve(tuning("phi-3-mini-4k-instruct"))
	if err != nil || got.Spec.Tuning.BaseModel != "phi-3-mini-4k-instruct" || got.Spec.Tuning.Image == "" || got.Spec.Resource.GPUCount != 1 {
		t.Errorf("tuning preset: %+v %v", got.Spec.Tuning, err)
	}
	if _, err := Resolve(tuning("falcon-40b")); err == nil || !strings.Contains(err.Error(), "cannot be fine-tuned") || !strings.Contains(err.Error(), "phi-2") {
		t.Errorf("untunable preset: %v", err)
	}
}

// An instance type (KAITO's resource.instanceType) adds its node label, sets gpuCount to the
// node's GPUs when none is asked, refuses more GPUs than one node has and unknown types.
func TestResolveInstanceType(t *testing.T) {
	ws := func(r v1alpha1.WorkspaceResource, in v1alpha1.WorkspaceInference) *v1alpha1.Workspace {
		return &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: r, Inference: &in}}
	}
	got, err := Resolve(ws(v1alpha1.WorkspaceResource{InstanceType: "Standard_NC48ads_A100_v4"}, v1alpha1.WorkspaceInference{Model: "m", Image: "i"}))
	if err != nil || got.Spec.Resource.GPUCount != 2 || got.Spec.Resource.LabelSelector["node.kubernetes.io/instance-type"] != "Standard_NC48ads_A100_v4" {
		t.Errorf("instance type: %+v %v", got.Spec.Resource, err)
	}
	// The preset's GPU need wins over the node's GPUs; it must fit on one node.
	got, err = Resolve(ws(v1alpha1.WorkspaceResource{InstanceType: "p4d.24xlarge"}, v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}))
	if err != nil || got.Spec.Resource.GPUCount != 2 {
		t.Errorf("preset on p4d: %+v %v", got.Spec.Resource, err)
	}
	_, err = Resolve(ws(v1alpha1.WorkspaceResource{InstanceType: "Standard_NC24ads_A100_v4"}, v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}))
	if err == nil || !strings.Contains(err.Error(), "2 GPUs per replica, but a Standard_NC24ads_A100_v4 node has 1") {
		t.Errorf("too many GPUs: %v", err)
	}
	_, err = Resolve(ws(v1alpha1.WorkspaceResource{InstanceType: "Standard_NC24ads_A100"}, v1alpha1.WorkspaceInference{Model: "m", Image: "i"}))
	if err == nil || !strings.Contains(err.Error(), "did you mean Standard_NC24ads_A100_v4") {
		t.Errorf("unknown type: %v", err)
	}
	_, err = Resolve(ws(v1alpha1.WorkspaceResource{InstanceType: "g5.xlarge", LabelSelector: map[string]string{"node.kubernetes.io/instance-type": "g5.12xlarge"}}, v1alpha1.WorkspaceInference{Model: "m", Image: "i"}))
	if err == nil || !strings.Contains(err.Error(), "contradicts") {
		t.Errorf("contradicting label: %v", err)
	}
}

// GPU products that contradict one another, and multi-node tuning, are spec errors naming
// the field; agreeing products resolve.
func TestResolveContradictions(t *testing.T) {
	inf := &v1alpha1.WorkspaceInference{Model: "m", Image: "i"}
	tuning := &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningQLoRA, Preset: "phi-3-mini-4k-instruct",
		Input: v1alpha1.WorkspaceDataSource{Image: "d"}, Output: v1alpha1.WorkspaceDataDestination{Image: "o"}}
	for name, c := range map[string]struct {
		spec v1alpha1.WorkspaceSpec
		want string // "" resolves
	}{
		"product agrees with the instance type": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{InstanceType: "p4d.24xlarge", GPUProduct: "NVIDIA-A100-SXM4-40GB"}, Inference: inf}, ""},
		"product contradicts the instance type": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{InstanceType: "p4d.24xlarge", GPUProduct: "NVIDIA-L4"}, Inference: inf},
			`spec.resource.gpuProduct = "NVIDIA-L4" contradicts spec.resource.instanceType "p4d.24xlarge" (NVIDIA-A100-SXM4-40GB): no node carries both GPUs`},
		"label selector contradicts the product": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-L4", LabelSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}}, Inference: inf},
			`spec.resource.labelSelector["nvidia.com/gpu.product"] = "NVIDIA-H200" contradicts spec.resource.gpuProduct (NVIDIA-L4)`},
		"node selector contradicts the instance type": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{InstanceType: "g6.xlarge"}, Inference: inf,
			Scheduling: v1alpha1.Scheduling{NodeSelector: map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}}},
			`spec.scheduling.nodeSelector["nvidia.com/gpu.product"] = "NVIDIA-H200" contradicts spec.resource.instanceType "g6.xlarge" (NVIDIA-L4)`},
		"tuning on one node": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, GPUCount: 1}, Tuning: tuning}, ""},
		"tuning on two nodes": {v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 2, GPUCount: 1}, Tuning: tuning},
			"spec.resource.count: 2, but a tuning workspace runs one pod on one node"},
	} {
		_, err := Resolve(&v1alpha1.Workspace{Spec: c.spec})
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// Multi-node inference (KAITO): when the model needs more GPUs than one replica has and
// count > 1, the replicas form one group (MultiNode); not enough GPUs in all, or one replica,
// is a spec error naming the field.
func TestResolveGroup(t *testing.T) {
	ws := func(count, gpus int32, in v1alpha1.WorkspaceInference, instanceType string) *v1alpha1.Workspace {
		return &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: count, GPUCount: gpus, InstanceType: instanceType}, Inference: &in}}
	}
	model := v1alpha1.WorkspaceInference{Model: "m", Image: "i"}
	withGPUs := func(n int32) v1alpha1.WorkspaceInference { m := model; m.ModelGPUs = n; return m }
	for _, tc := range []struct {
		name       string
		w          *v1alpha1.Workspace
		group      bool
		modelGPUs  int32
		gpuCount   int32
		err        string
		argsSuffix []string
	}{
		{name: "copies: model fits one replica", w: ws(3, 2, model, ""), modelGPUs: 2, gpuCount: 2},
		{name: "explicit: 4 GPUs over 2 replicas of 2", w: ws(2, 2, withGPUs(4), ""), group: true, modelGPUs: 4, gpuCount: 2},
		{name: "explicit: more than count × gpuCount", w: ws(2, 1, withGPUs(4), ""), err: "spec.inference.modelGPUs: the model needs 4 GPUs but 2 nodes × 1 GPUs"},
		{name: "explicit: one replica cannot hold it", w: ws(1, 2, withGPUs(4), ""), err: "set spec.resource.count to 2 or more"},
		{name: "preset spread over smaller replicas", w: ws(2, 1, v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}, ""), group: true, modelGPUs: 2, gpuCount: 1,
			argsSuffix: []string{"--tensor-parallel-size=1", "--pipeline-parallel-size=2"}},
		{name: "preset on one replica keeps the preset's GPUs and serves across them (tensor parallelism, as KAITO)", w: ws(1, 0, v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"}, ""), modelGPUs: 2, gpuCount: 2,
			argsSuffix: []string{"--port=$(PORT)", "--tensor-parallel-size=2"}},
		{name: "instance type too small for the model, count 2: a group of whole nodes",
			w: ws(2, 2, model, "Standard_NC24ads_A100_v4"), group: true, modelGPUs: 2, gpuCount: 1},
		{name: "instance type too small, one replica: refused", w: ws(1, 2, model, "Standard_NC24ads_A100_v4"), err: "serve the model across nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.w)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if MultiNode(got) != tc.group || got.Spec.Inference.ModelGPUs != tc.modelGPUs || got.Spec.Resource.GPUCount != tc.gpuCount {
				t.Errorf("group %v modelGPUs %d gpuCount %d", MultiNode(got), got.Spec.Inference.ModelGPUs, got.Spec.Resource.GPUCount)
			}
			if a := got.Spec.Inference.Args; tc.argsSuffix != nil && !slices.Equal(a[len(a)-2:], tc.argsSuffix) {
				t.Errorf("args %v", a)
			}
			if svc := DesiredService(got); tc.group != (svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] == ObjectName(got.Name)+"-0") {
				t.Errorf("service selector %v", svc.Spec.Selector)
			}
		})
	}
}
