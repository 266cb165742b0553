package workspace

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// Any model, not only presets: an inference workspace without a preset whose model is a
// Hugging Face model ID ("org/name") and that gives its size (spec.inference.modelSize) or
// its config.json (spec.inference.modelConfig), or leaves the image out, is served by vLLM as
// KAITO serves generic Hugging Face models: the image defaults to KAITO's base image, the
// arguments are built as a preset's, and the GPUs per replica follow from the size
// (EstimateModel) and the memory of the GPU the workspace runs on.

// DefaultModelImage is the vLLM image a Hugging Face model without a preset and without an
// image runs on: KAITO's base image, on which its presets that download their weights at
// start run too (presets.yaml).
const DefaultModelImage = "mcr.microsoft.com/aks/kaito/kaito-base:0.0.2"

// DefaultModelConfigKey is spec.inference.modelConfig.key's default.
const DefaultModelConfigKey = "config.json"

// MemoryHeadroom is the GPU memory a model needs per byte of its weights: 20% on top of them
// for vLLM's KV cache, activations and the CUDA context. KAITO's presets carry GPU memory
// figures of 1.0-1.5 × their bf16 weights; 1.2 lands within 25% of those of
// Llama-3.1-8B, Mistral-7B, Phi-3-mini, DeepSeek-R1-Distill-Qwen-14B, Phi-4 and
// Llama-3.3-70B, and gives each the preset's GPU count on 80 GiB GPUs (modelsize_test.go).
const MemoryHeadroom = 1.2

const gib = int64(1) << 30

var hfModelRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$`)

// IsHFModelID reports whether model is a Hugging Face model ID, "org/name".
func IsHFModelID(model string) bool { return hfModelRe.MatchString(model) }

// AnyModel reports whether w's inference serves a Hugging Face model without a preset the
// way KAITO serves generic models (see the package comment above): no preset, an "org/name"
// model, and a modelSize, a modelConfig, or no image (or the default one, once resolved).
func AnyModel(w *v1alpha1.Workspace) bool {
	in := w.Spec.Inference
	if in == nil || in.Preset != "" || !IsHFModelID(in.Model) {
		return false
	}
	return in.ModelSize != nil || in.ModelConfig != nil || in.Image == "" || in.Image == DefaultModelImage
}

// ModelConfigRef returns the ConfigMap name and key of spec.inference.modelConfig (the key
// defaulted); ok is false without one.
func ModelConfigRef(w *v1alpha1.Workspace) (name, key string, ok bool) {
	in := w.Spec.Inference
	if in == nil || in.ModelConfig == nil {
		return "", "", false
	}
	return in.ModelConfig.ConfigMap, or(in.ModelConfig.Key, DefaultModelConfigKey), true
}

// ModelConfig is what the estimator reads of a Hugging Face config.json (a llama-style
// decoder: Llama, Mistral, Qwen2, Phi-3, Gemma; text_config is read for multimodal ones).
type ModelConfig struct {
	HiddenSize        int64  `json:"hidden_size"`
	NumHiddenLayers   int64  `json:"num_hidden_layers"`
	IntermediateSize  int64  `json:"intermediate_size"`
	VocabSize         int64  `json:"vocab_size"`
	NumAttentionHeads int64  `json:"num_attention_heads"`
	NumKeyValueHeads  int64  `json:"num_key_value_heads"`
	HeadDim           int64  `json:"head_dim"`
	TorchDType        string `json:"torch_dtype"`
	DType             string `json:"dtype"`
	TieWordEmbeddings bool   `json:"tie_word_embeddings"`
	// Mixture of experts (Mixtral's num_local_experts, Qwen-MoE's num_experts with
	// moe_intermediate_size): each layer's MLP is one per expert.
	NumLocalExperts     int64 `json:"num_local_experts"`
	NumExperts          int64 `json:"num_experts"`
	MoEIntermediateSize int64 `json:"moe_intermediate_size"`
	// QuantizationConfig: bits (GPTQ, AWQ) or quant_method fp8 set the bytes per weight.
	QuantizationConfig *struct {
		Bits        int    `json:"bits"`
		QuantMethod string `json:"quant_method"`
	} `json:"quantization_config"`
	TextConfig *ModelConfig `json:"text_config"`
}

// ParseModelConfig reads config.json. Errors name the first missing or invalid field
// (hidden_size, num_hidden_layers, intermediate_size, vocab_size, num_attention_heads must
// be positive; num_key_value_heads defaults to num_attention_heads, head_dim to
// hidden_size / num_attention_heads, the dtype to bfloat16).
func ParseModelConfig(b []byte) (ModelConfig, error) {
	var c ModelConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("not a JSON config.json: %v", err)
	}
	if c.HiddenSize == 0 && c.TextConfig != nil {
		t := *c.TextConfig
		t.TorchDType, t.DType = or(t.TorchDType, c.TorchDType), or(t.DType, c.DType)
		if t.QuantizationConfig == nil {
			t.QuantizationConfig = c.QuantizationConfig
		}
		c = t
	}
	for _, f := range []struct {
		name string
		v    int64
	}{{"hidden_size", c.HiddenSize}, {"num_hidden_layers", c.NumHiddenLayers}, {"intermediate_size", c.IntermediateSize},
		{"vocab_size", c.VocabSize}, {"num_attention_heads", c.NumAttentionHeads}} {
		if f.v <= 0 {
			return c, fmt.Errorf("config.json has no positive %s (a llama-style decoder config is needed; or give modelSize instead)", f.name)
		}
	}
	if c.NumKeyValueHeads <= 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim <= 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if _, err := bytesPerParam(c.dtype()); err != nil {
		return c, fmt.Errorf("config.json torch_dtype: %v", err)
	}
	return c, nil
}

// dtype is the weights' data type: the quantization's, else torch_dtype (or dtype), else
// bfloat16.
func (c ModelConfig) dtype() string {
	if q := c.QuantizationConfig; q != nil {
		switch {
		case q.Bits == 4:
			return "int4"
		case q.Bits == 8:
			return "int8"
		case strings.EqualFold(q.QuantMethod, "fp8"):
			return "fp8"
		}
	}
	return or(or(c.TorchDType, c.DType), "bfloat16")
}

// Parameters is the parameter count of a llama-style decoder: the token embeddings, the
// output head unless tied to them, and per layer the attention (q and o of
// num_attention_heads × head_dim, k and v of num_key_value_heads × head_dim: grouped-query
// attention), the gated MLP (gate, up and down projections, one set per expert plus the
// router for a mixture of experts) and two RMS norms; then the final norm. Biases are left
// out (under 0.1% where a model has them).
func (c ModelConfig) Parameters() int64 {
	h, q, kv := c.HiddenSize, c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim
	attn := h*q + 2*h*kv + q*h
	mlp := 3 * h * c.IntermediateSize
	if experts := max(c.NumLocalExperts, c.NumExperts); experts > 1 {
		inter := c.IntermediateSize
		if c.MoEIntermediateSize > 0 {
			inter = c.MoEIntermediateSize
		}
		mlp = experts*3*h*inter + h*experts
	}
	layer := attn + mlp + 2*h
	emb := c.VocabSize * h
	head := emb
	if c.TieWordEmbeddings {
		head = 0
	}
	return emb + head + c.NumHiddenLayers*layer + h
}

// ModelEstimate is the GPU memory a model needs, worked out by EstimateModel.
type ModelEstimate struct {
	// Parameters is the parameter count; 0 when the size was given as GPU memory.
	Parameters int64
	// DType is the weights' data type ("" when the size was given as GPU memory).
	DType string
	// GPUMemory is the bytes of GPU memory one copy of the model needs across its GPUs: the
	// weights × MemoryHeadroom, rounded up to a whole GiB, or modelSize.gpuMemory.
	GPUMemory int64
}

// String is e.g. "8.03B parameters (bfloat16) need 18Gi of GPU memory".
func (e ModelEstimate) String() string {
	if e.Parameters == 0 {
		return fmt.Sprintf("the model needs %s of GPU memory", FormatGiB(e.GPUMemory))
	}
	return fmt.Sprintf("%s parameters (%s) need %s of GPU memory", FormatParameters(e.Parameters), e.DType, FormatGiB(e.GPUMemory))
}

// FormatParameters is n as "8.03B", "494M".
func FormatParameters(n int64) string {
	switch {
	case n >= 1e12:
		return strconv.FormatFloat(float64(n)/1e12, 'f', 2, 64) + "T"
	case n >= 1e9:
		return strconv.FormatFloat(float64(n)/1e9, 'f', 2, 64) + "B"
	case n >= 1e6:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 0, 64) + "M"
	}
	return strconv.FormatInt(n, 10)
}

// FormatGiB is b bytes as a quantity in whole Gi, rounded up ("18Gi").
func FormatGiB(b int64) string { return fmt.Sprintf("%dGi", (b+gib-1)/gib) }

// bytesPerParam is the bytes one weight of dtype takes.
func bytesPerParam(dtype string) (float64, error) {
	switch strings.ToLower(dtype) {
	case "float32", "fp32":
		return 4, nil
	case "float16", "fp16", "half", "bfloat16", "bf16":
		return 2, nil
	case "fp8", "float8", "int8":
		return 1, nil
	case "int4", "fp4":
		return 0.5, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (float32, float16, bfloat16, fp8, int8, int4)", dtype)
}

// estimate is the memory of params weights of dtype: weights × MemoryHeadroom, whole GiB.
func estimate(params int64, dtype string) (ModelEstimate, error) {
	bpp, err := bytesPerParam(dtype)
	if err != nil {
		return ModelEstimate{}, err
	}
	need := int64(math.Ceil(float64(params) * bpp * MemoryHeadroom / float64(gib)))
	return ModelEstimate{Parameters: params, DType: strings.ToLower(dtype), GPUMemory: need * gib}, nil
}

// EstimateConfig is the estimate of a parsed config.json (ParseModelConfig).
func EstimateConfig(c ModelConfig) (ModelEstimate, error) { return estimate(c.Parameters(), c.dtype()) }

// ParseParameters reads "7B", "8.03B", "500M", "1.5T", "350K".
func ParseParameters(s string) (int64, error) {
	mult := map[byte]float64{'K': 1e3, 'M': 1e6, 'B': 1e9, 'T': 1e12}
	if len(s) < 2 || mult[s[len(s)-1]] == 0 {
		return 0, fmt.Errorf("%q is not a parameter count such as 7B or 500M", s)
	}
	f, err := strconv.ParseFloat(s[:len(s)-1], 64)
	if err != nil || f <= 0 {
		return 0, fmt.Errorf("%q is not a parameter count such as 7B or 500M", s)
	}
	return int64(math.Round(f * mult[s[len(s)-1]])), nil
}

// EstimateModel is the estimate of w's spec.inference.modelSize, or of config (the bytes of
// spec.inference.modelConfig's key, read by the caller). ok is false when w gives neither
// (or has a modelConfig but config is nil: not read). Errors name the field.
func EstimateModel(w *v1alpha1.Workspace, config []byte) (e ModelEstimate, ok bool, err error) {
	in := w.Spec.Inference
	switch {
	case in == nil:
		return e, false, nil
	case in.ModelSize != nil && in.ModelSize.GPUMemory != "":
		q, err := resource.ParseQuantity(in.ModelSize.GPUMemory)
		if err != nil || q.Sign() <= 0 {
			return e, true, fmt.Errorf("spec.inference.modelSize.gpuMemory: %q is not a positive quantity such as 40Gi", in.ModelSize.GPUMemory)
		}
		return ModelEstimate{GPUMemory: q.Value()}, true, nil
	case in.ModelSize != nil:
		n, err := ParseParameters(in.ModelSize.Parameters)
		if err != nil {
			return e, true, fmt.Errorf("spec.inference.modelSize.parameters: %w", err)
		}
		e, err = estimate(n, or(in.ModelSize.DType, "bfloat16"))
		if err != nil {
			return e, true, fmt.Errorf("spec.inference.modelSize.dtype: %w", err)
		}
		return e, true, nil
	case in.ModelConfig != nil && config != nil:
		name, key, _ := ModelConfigRef(w)
		c, err := ParseModelConfig(config)
		if err == nil {
			e, err = EstimateConfig(c)
		}
		if err != nil {
			return e, true, fmt.Errorf("spec.inference.modelConfig: ConfigMap %q key %q: %w", name, key, err)
		}
		return e, true, nil
	}
	return e, false, nil
}

// GPUMemoryOf is the memory of one GPU (or MIG slice) the resolved-so-far w runs on, in
// bytes, and the source naming it: a partition's MIG profile ("1g.10gb": 10 GB), the instance
// type's GPU, or the catalog's memory of resource.gpuProduct (hardware.GPUProductMemory);
// false when none says.
func GPUMemoryOf(w *v1alpha1.Workspace) (int64, string, bool) {
	r := w.Spec.Resource
	if p := r.Partition; p != nil {
		if m := migMemRe.FindStringSubmatch(p.Profile); m != nil {
			gb, _ := strconv.Atoi(m[1])
			return int64(gb) * 1e9, "MIG profile " + p.Profile, true
		}
		return 0, "", false
	}
	if it, ok := hardware.LookupInstanceType(r.InstanceType); ok {
		if q, err := resource.ParseQuantity(it.GPUMemory); err == nil {
			return q.Value(), fmt.Sprintf("%s (%s)", it.GPUProduct, it.GPUMemory), true
		}
	}
	if m, ok := hardware.GPUProductMemory(r.GPUProduct); ok {
		return m, fmt.Sprintf("%s (%s)", r.GPUProduct, FormatGiB(m)), true
	}
	return 0, "", false
}

var migMemRe = regexp.MustCompile(`^[0-9]+g\.([0-9]+)gb`)

// gpusFor is the GPUs one copy of a model of need bytes takes on GPUs of per bytes: the
// fewest that hold it, rounded up to a power of two (vLLM's tensor parallelism splits the
// attention heads evenly over the GPUs, and models' head counts are multiples of powers of
// two, not of 3, 5, ...).
func gpusFor(need, per int64) int32 {
	n := (need + per - 1) / per
	p := int64(1)
	for p < n {
		p *= 2
	}
	return int32(min(p, math.MaxInt32))
}

// maxGPUsPerReplica is the Workspace CRD's maximum of spec.resource.gpuCount.
const maxGPUsPerReplica = 64

// resolveAnyModel applies AnyModel to out (not resolved yet, the preset step skipped): the
// default image and the vLLM arguments (--served-model-name, --port, --model; resolveGroup
// adds the parallelism), then the GPUs per replica from the estimate when resource.gpuCount
// is 0 (a partition: the slice must hold it), or a check that the gpuCount given holds it.
// est is the estimate (nil without a size). gpus is the GPUs one copy of the model needs, for
// resolveGroup (0 when not worked out); argsBuilt says the arguments are ours.
func resolveAnyModel(out *v1alpha1.Workspace, est *ModelEstimate) (gpus int32, argsBuilt bool, err error) {
	inf, r := out.Spec.Inference, &out.Spec.Resource
	inf.Image = or(inf.Image, DefaultModelImage)
	if len(inf.Args) == 0 {
		inf.Args = []string{"--served-model-name=" + inf.Model, "--port=$(PORT)", "--model=" + inf.Model}
		argsBuilt = true
	}
	if est == nil {
		if r.GPUCount == 0 && r.Partition == nil && r.InstanceType == "" {
			return 0, argsBuilt, fmt.Errorf("spec.inference.modelSize: Hugging Face model %q without a preset needs its size (modelSize or modelConfig), or spec.resource.gpuCount or instanceType", inf.Model)
		}
		return 0, argsBuilt, nil
	}
	per, gpu, ok := GPUMemoryOf(out)
	switch {
	case !ok && r.GPUCount == 0 && r.InstanceType == "":
		return 0, argsBuilt, fmt.Errorf("spec.resource.gpuProduct: %s, but the GPU's memory is unknown: set spec.resource.instanceType or a gpuProduct of the Instance types guide, or spec.resource.gpuCount", est)
	case !ok:
		return 0, argsBuilt, nil // a gpuCount or instance type of its own, with a GPU of unknown memory
	case r.Partition != nil:
		if est.GPUMemory > per {
			return 0, argsBuilt, fmt.Errorf("spec.resource.partition.profile: %s, more than one slice of %s holds; choose a larger profile or whole GPUs", est, gpu)
		}
		return 0, argsBuilt, nil
	}
	gpus = gpusFor(est.GPUMemory, per)
	if r.GPUCount != 0 {
		if have := int64(max(r.GPUCount, inf.ModelGPUs)) * per; have < est.GPUMemory && Replicas(out) <= 1 {
			return 0, argsBuilt, fmt.Errorf("spec.resource.gpuCount: %s, but %d × %s hold %s: set it to %d or more (or leave it out to size it from the model)",
				est, max(r.GPUCount, inf.ModelGPUs), gpu, FormatGiB(have), gpus)
		}
		return gpus, argsBuilt, nil
	}
	field := sizeField(out)
	if it, ok := hardware.LookupInstanceType(r.InstanceType); ok && gpus > it.GPUCount && Replicas(out) <= 1 {
		return 0, argsBuilt, fmt.Errorf("%s: %s, %d × %s, but a %s node has %d: choose a larger instance type, or set spec.resource.count to %d to serve it across nodes",
			field, est, gpus, gpu, it.Name, it.GPUCount, ceilDiv(gpus, it.GPUCount))
	}
	r.GPUCount = gpus
	if gpus > maxGPUsPerReplica {
		if Replicas(out) <= 1 {
			return 0, argsBuilt, fmt.Errorf("%s: %s, %d × %s, more than the %d GPUs a replica can have: set spec.resource.count above 1 to serve it across nodes", field, est, gpus, gpu, maxGPUsPerReplica)
		}
		r.GPUCount = ceilDiv(gpus, Replicas(out)) // a multi-node group (resolveGroup)
	}
	return gpus, argsBuilt, nil
}

// applyAnyModel is ResolveModel's step for AnyModel: the estimate (EstimateModel; with a
// modelConfig not read, ErrModelConfigNotRead), then resolveAnyModel.
func applyAnyModel(out *v1alpha1.Workspace, modelConfig []byte) (gpus int32, argsBuilt bool, err error) {
	est, ok, err := EstimateModel(out, modelConfig)
	switch {
	case err != nil:
		return 0, false, err
	case !ok && out.Spec.Inference.ModelConfig != nil:
		name, key, _ := ModelConfigRef(out)
		return 0, false, fmt.Errorf("spec.inference.modelConfig: ConfigMap %q key %q: %w", name, key, ErrModelConfigNotRead)
	case !ok:
		return resolveAnyModel(out, nil)
	}
	return resolveAnyModel(out, &est)
}

// sizeField is the spec field a model's size comes from.
func sizeField(w *v1alpha1.Workspace) string {
	if w.Spec.Inference != nil && w.Spec.Inference.ModelConfig != nil {
		return "spec.inference.modelConfig"
	}
	return "spec.inference.modelSize"
}
