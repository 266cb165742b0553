package workspace

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// hfConfig is a Hugging Face config.json of a llama-style model, written by hand from the
// models' published config.json files.
func hfConfig(hidden, layers, inter, vocab, heads, kv int64, tie bool) []byte {
	b, _ := json.Marshal(map[string]any{
		"hidden_size": hidden, "num_hidden_layers": layers, "intermediate_size": inter, "vocab_size": vocab,
		"num_attention_heads": heads, "num_key_value_heads": kv, "torch_dtype": "bfloat16", "tie_word_embeddings": tie,
	})
	return b
}

// realConfigs: the preset each stands for, its config.json, and the published parameter
// count (model cards; Qwen2.5-14B's 14.77B includes q/k/v biases the estimator leaves out).
var realConfigs = []struct {
	model, preset string
	config        []byte
	params        float64
}{
	{"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b-instruct", hfConfig(4096, 32, 14336, 128256, 32, 8, false), 8.03e9},
	{"deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "deepseek-r1-distill-llama-8b", hfConfig(4096, 32, 14336, 128256, 32, 8, false), 8.03e9},
	{"mistralai/Mistral-7B-Instruct-v0.1", "mistral-7b-instruct", hfConfig(4096, 32, 14336, 32000, 32, 8, false), 7.24e9},
	{"microsoft/Phi-3-mini-4k-instruct", "phi-3-mini-4k-instruct", hfConfig(3072, 32, 8192, 32064, 32, 32, false), 3.82e9},
	{"deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "deepseek-r1-distill-qwen-14b", hfConfig(5120, 48, 13824, 152064, 40, 8, false), 14.77e9},
	{"microsoft/phi-4", "phi-4", hfConfig(5120, 40, 17920, 100352, 40, 10, false), 14.66e9},
	{"meta-llama/Llama-3.3-70B-Instruct", "llama-3.3-70b-instruct", hfConfig(8192, 80, 28672, 128256, 64, 8, false), 70.55e9},
}

// TestEstimatorParameters: the parameter count of each real config is within 1% of the
// published one (Llama-3.1-8B: 8,030,261,248 exactly).
func TestEstimatorParameters(t *testing.T) {
	for _, c := range realConfigs {
		mc, err := ParseModelConfig(c.config)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		got := float64(mc.Parameters())
		if math.Abs(got-c.params)/c.params > 0.01 {
			t.Errorf("%s: %s parameters, published %.2fB", c.model, FormatParameters(int64(got)), c.params/1e9)
		}
	}
	mc, _ := ParseModelConfig(realConfigs[0].config)
	if got := mc.Parameters(); got != 8030261248 {
		t.Errorf("Llama-3.1-8B: %d parameters, want 8030261248", got)
	}
}

// presetTolerance is how far the estimator's GPU memory may be from a preset's gpuMemory.
const presetTolerance = 0.25

// TestEstimatorAgainstPresets: the estimate of each real config lands within presetTolerance
// of KAITO's gpuMemory figure of the preset, and takes the preset's GPU count on 80 GiB GPUs.
func TestEstimatorAgainstPresets(t *testing.T) {
	per := int64(80) << 30
	for _, c := range realConfigs {
		mc, _ := ParseModelConfig(c.config)
		e, err := EstimateConfig(mc)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := LookupPreset(c.preset)
		if !ok {
			t.Fatalf("no preset %s", c.preset)
		}
		q := resource.MustParse(p.GPUMemory)
		want := q.Value()
		off := float64(e.GPUMemory-want) / float64(want)
		t.Logf("%-42s %s; preset %s: %s (%+.0f%%), %d GPU(s) of 80Gi (preset %d)", c.model, e, c.preset, p.GPUMemory, off*100, gpusFor(e.GPUMemory, per), p.GPUCount)
		if math.Abs(off) > presetTolerance {
			t.Errorf("%s: %s, preset %s says %s: %+.0f%%, beyond ±%.0f%%", c.model, e, c.preset, p.GPUMemory, off*100, presetTolerance*100)
		}
		if g := gpusFor(e.GPUMemory, per); g != p.GPUCount {
			t.Errorf("%s: %d GPUs of 80Gi, preset %s has %d", c.model, g, c.preset, p.GPUCount)
		}
	}
}

func TestParseModelConfig(t *testing.T) {
	for _, tc := range []struct {
		name, json, err string
		params          int64
		dtype           string
	}{
		{name: "missing hidden_size", json: `{"num_hidden_layers": 2}`, err: "no positive hidden_size"},
		{name: "not JSON", json: `hidden_size: 3`, err: "not a JSON config.json"},
		{name: "unknown dtype", json: `{"hidden_size":8,"num_hidden_layers":1,"intermediate_size":16,"vocab_size":10,"num_attention_heads":2,"torch_dtype":"float64"}`, err: `unknown dtype "float64"`},
		{name: "defaults: kv heads = heads, bfloat16, untied",
			json:   `{"hidden_size":8,"num_hidden_layers":1,"intermediate_size":16,"vocab_size":10,"num_attention_heads":2}`,
			params: 80 + 80 + (4*64 + 3*8*16 + 16) + 8, dtype: "bfloat16"},
		{name: "tied embeddings, GQA, float32",
			json:   `{"hidden_size":8,"num_hidden_layers":2,"intermediate_size":16,"vocab_size":10,"num_attention_heads":4,"num_key_value_heads":2,"torch_dtype":"float32","tie_word_embeddings":true}`,
			params: 80 + 2*(64+2*8*4+64+3*8*16+16) + 8, dtype: "float32"},
		{name: "text_config of a multimodal model, AWQ 4-bit",
			json:   `{"quantization_config":{"bits":4},"text_config":{"hidden_size":8,"num_hidden_layers":1,"intermediate_size":16,"vocab_size":10,"num_attention_heads":2}}`,
			params: 80 + 80 + (4*64 + 3*8*16 + 16) + 8, dtype: "int4"},
		{name: "mixture of experts (Mixtral's num_local_experts)",
			json:   `{"hidden_size":8,"num_hidden_layers":1,"intermediate_size":16,"vocab_size":10,"num_attention_heads":2,"num_local_experts":4}`,
			params: 80 + 80 + (4*64 + 4*3*8*16 + 8*4 + 16) + 8, dtype: "bfloat16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseModelConfig([]byte(tc.json))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Parameters(); got != tc.params {
				t.Errorf("parameters %d, want %d", got, tc.params)
			}
			if c.dtype() != tc.dtype {
				t.Errorf("dtype %s, want %s", c.dtype(), tc.dtype)
			}
		})
	}
}

func TestParseParameters(t *testing.T) {
	for in, want := range map[string]int64{"7B": 7e9, "8.03B": 8.03e9, "500M": 5e8, "1.5T": 1.5e12, "350K": 350e3} {
		if got, err := ParseParameters(in); err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "7", "B", "7b", "-1B", "0B"} {
		if _, err := ParseParameters(in); err == nil {
			t.Errorf("%q parsed", in)
		}
	}
}

func TestGPUsFor(t *testing.T) {
	g := int64(1) << 30
	for _, tc := range []struct {
		need, per int64
		want      int32
	}{{18 * g, 80 * g, 1}, {80 * g, 80 * g, 1}, {81 * g, 80 * g, 2}, {158 * g, 80 * g, 2}, {161 * g, 80 * g, 4}, {18 * g, 16 * g, 2}, {100 * g, 24 * g, 8}} {
		if got := gpusFor(tc.need, tc.per); got != tc.want {
			t.Errorf("gpusFor(%dGi, %dGi) = %d, want %d", tc.need/g, tc.per/g, got, tc.want)
		}
	}
}

// anyModel is an inference workspace of a Hugging Face model with no preset.
func anyModel(model string, size *v1alpha1.WorkspaceModelSize, res v1alpha1.WorkspaceResource) *v1alpha1.Workspace {
	return &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: res,
		Inference: &v1alpha1.WorkspaceInference{Model: model, ModelSize: size}}}
}

func TestResolveAnyModel(t *testing.T) {
	qwen := "Qwen/Qwen2.5-7B-Instruct"
	b7 := &v1alpha1.WorkspaceModelSize{Parameters: "7B"}
	for _, tc := range []struct {
		name   string
		w      *v1alpha1.Workspace
		config []byte
		gpus   int32
		model  int32
		args   []string
		image  string
		err    string
	}{
		{name: "7B bfloat16 on an L4 instance type (24Gi): 16Gi, 1 GPU, the default image and vLLM args",
			w: anyModel(qwen, b7, v1alpha1.WorkspaceResource{InstanceType: "g6.xlarge"}), gpus: 1, model: 1, image: DefaultModelImage,
			args: []string{"--served-model-name=" + qwen, "--port=$(PORT)", "--model=" + qwen}},
		{name: "8B (18Gi) on T4s (16Gi) of a 4-GPU instance type: 2 GPUs, tensor parallel 2",
			w: anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "8B"}, v1alpha1.WorkspaceResource{InstanceType: "g4dn.12xlarge"}), gpus: 2, model: 2, image: DefaultModelImage,
			args: []string{"--served-model-name=" + qwen, "--port=$(PORT)", "--model=" + qwen, "--tensor-parallel-size=2"}},
		{name: "gpuProduct's memory from the catalog: 70B (157Gi) on 80Gi GPUs",
			w: anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "70B"}, v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-A100-SXM4-80GB"}), gpus: 2, model: 2},
		{name: "gpuProduct's memory from the catalog: 100B (224Gi) on 80Gi GPUs, a power of two",
			w: anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "100B"}, v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-A100-SXM4-80GB"}), gpus: 4, model: 4},
		{name: "int4 weights take a quarter",
			w: anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "70B", DType: "int4"}, v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-A100-SXM4-80GB"}), gpus: 1, model: 1},
		{name: "gpuMemory given",
			w: anyModel(qwen, &v1alpha1.WorkspaceModelSize{GPUMemory: "100Gi"}, v1alpha1.WorkspaceResource{InstanceType: "p4d.24xlarge"}), gpus: 4, model: 4},
		{name: "the config.json of a ConfigMap: Llama-3.1-8B on a 1-GPU A10G",
			w: func() *v1alpha1.Workspace {
				w := anyModel("meta-llama/Llama-3.1-8B-Instruct", nil, v1alpha1.WorkspaceResource{InstanceType: "g5.xlarge"})
				w.Spec.Inference.ModelConfig = &v1alpha1.WorkspaceModelConfig{ConfigMap: "llama"}
				return w
			}(), config: realConfigs[0].config, gpus: 1, model: 1},
		{name: "too large for the instance type's node, one replica",
			w:   anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "70B"}, v1alpha1.WorkspaceResource{InstanceType: "g6.xlarge"}),
			err: "spec.inference.modelSize: 70.00B parameters (bfloat16) need 157Gi of GPU memory, 8 × NVIDIA-L4 (24Gi), but a g6.xlarge node has 1: choose a larger instance type, or set spec.resource.count to 8"},
		{name: "too large for the node: a multi-node group over count replicas",
			w: anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "70B"}, v1alpha1.WorkspaceResource{InstanceType: "g5.12xlarge", Count: 2}), gpus: 4, model: 8,
			args: []string{"--served-model-name=" + qwen, "--port=$(PORT)", "--model=" + qwen, "--tensor-parallel-size=4", "--pipeline-parallel-size=2"}},
		{name: "a gpuCount that cannot hold it",
			w:   anyModel(qwen, &v1alpha1.WorkspaceModelSize{Parameters: "14B"}, v1alpha1.WorkspaceResource{GPUCount: 1, GPUProduct: "NVIDIA-L4"}),
			err: "spec.resource.gpuCount: 14.00B parameters (bfloat16) need 32Gi of GPU memory, but 1 × NVIDIA-L4 (24Gi) hold 24Gi: set it to 2 or more"},
		{name: "a gpuCount that holds it is kept", w: anyModel(qwen, b7, v1alpha1.WorkspaceResource{GPUCount: 4, GPUProduct: "NVIDIA-L4"}), gpus: 4, model: 4},
		{name: "no GPU memory known",
			w:   anyModel(qwen, b7, v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-Unknown"}),
			err: "spec.resource.gpuProduct: 7.00B parameters (bfloat16) need 16Gi of GPU memory, but the GPU's memory is unknown"},
		{name: "no size and no GPUs",
			w:   anyModel(qwen, nil, v1alpha1.WorkspaceResource{}),
			err: `spec.inference.modelSize: Hugging Face model "Qwen/Qwen2.5-7B-Instruct" without a preset needs its size`},
		{name: "no size, gpuCount given: served as given", w: anyModel(qwen, nil, v1alpha1.WorkspaceResource{GPUCount: 2}), gpus: 2, model: 2, image: DefaultModelImage},
		{name: "modelConfig not read",
			w: func() *v1alpha1.Workspace {
				w := anyModel(qwen, nil, v1alpha1.WorkspaceResource{InstanceType: "g5.xlarge"})
				w.Spec.Inference.ModelConfig = &v1alpha1.WorkspaceModelConfig{ConfigMap: "qwen", Key: "qwen.json"}
				return w
			}(), err: `spec.inference.modelConfig: ConfigMap "qwen" key "qwen.json": the model's config.json was not read`},
		{name: "modelConfig unparseable",
			w: func() *v1alpha1.Workspace {
				w := anyModel(qwen, nil, v1alpha1.WorkspaceResource{InstanceType: "g5.xlarge"})
				w.Spec.Inference.ModelConfig = &v1alpha1.WorkspaceModelConfig{ConfigMap: "qwen"}
				return w
			}(), config: []byte(`{"hidden_size": 4096}`), err: `spec.inference.modelConfig: ConfigMap "qwen" key "config.json": config.json has no positive num_hidden_layers`},
		{name: "a MIG slice too small",
			w:   anyModel(qwen, b7, v1alpha1.WorkspaceResource{GPUProduct: "NVIDIA-A100-SXM4-40GB", Partition: &v1alpha1.WorkspacePartition{Mode: "mig", Profile: "1g.5gb"}}),
			err: "spec.resource.partition.profile: 7.00B parameters (bfloat16) need 16Gi of GPU memory, more than one slice of MIG profile 1g.5gb holds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rw, err := ResolveModel(tc.w, tc.config)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := rw.Spec.Resource.GPUCount; g != tc.gpus {
				t.Errorf("gpuCount %d, want %d", g, tc.gpus)
			}
			if g := rw.Spec.Inference.ModelGPUs; g != tc.model {
				t.Errorf("modelGPUs %d, want %d", g, tc.model)
			}
			if tc.image != "" && rw.Spec.Inference.Image != tc.image {
				t.Errorf("image %s, want %s", rw.Spec.Inference.Image, tc.image)
			}
			if tc.args != nil && strings.Join(rw.Spec.Inference.Args, " ") != strings.Join(tc.args, " ") {
				t.Errorf("args %q, want %q", rw.Spec.Inference.Args, tc.args)
			}
			if tc.w.Spec.Resource.GPUCount != 0 && tc.gpus != tc.w.Spec.Resource.GPUCount {
				t.Errorf("the input changed")
			}
		})
	}
}

// TestAnyModelNotACustomImage: a model "org/name" with an image of its own and no size is
// served as before (the user's image, no arguments added).
func TestAnyModelNotACustomImage(t *testing.T) {
	w := anyModel("org/name", nil, v1alpha1.WorkspaceResource{GPUCount: 1})
	w.Spec.Inference.Image = "example.com/server:1"
	rw, err := Resolve(w)
	if err != nil {
		t.Fatal(err)
	}
	if AnyModel(w) || len(rw.Spec.Inference.Args) != 0 || len(RuntimeArgs(rw)) != 0 {
		t.Errorf("a custom image got args %q / %q", rw.Spec.Inference.Args, RuntimeArgs(rw))
	}
}

// TestModelMemory: a preset's gpuMemory; a Hugging Face model's estimate; nothing for a
// custom image.
func TestModelMemory(t *testing.T) {
	e, ok, err := ModelMemory(&v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Inference: &v1alpha1.WorkspaceInference{Preset: "phi-4"}}}, nil)
	if err != nil || !ok || FormatGiB(e.GPUMemory) != "30Gi" || e.Parameters != 0 {
		t.Errorf("phi-4: %+v %v %v", e, ok, err)
	}
	e, ok, err = ModelMemory(anyModel("Qwen/Qwen2.5-7B-Instruct", &v1alpha1.WorkspaceModelSize{Parameters: "7.62B"}, v1alpha1.WorkspaceResource{}), nil)
	if err != nil || !ok || e.String() != "7.62B parameters (bfloat16) need 18Gi of GPU memory" {
		t.Errorf("qwen: %v %v %v", e, ok, err)
	}
	w := anyModel("org/name", nil, v1alpha1.WorkspaceResource{})
	w.Spec.Inference.Image = "example.com/server:1"
	if _, ok, _ := ModelMemory(w, nil); ok {
		t.Error("a custom image has a model memory")
	}
}
