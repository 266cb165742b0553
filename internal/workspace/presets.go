package workspace

import (
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// Preset is one model preset of the catalog (presets.yaml): what a workspace naming it in
// spec.inference.preset or spec.tuning.preset gets for every field it leaves empty.
type Preset struct {
	// Name is the preset name users write (KAITO's preset names), e.g. "falcon-7b-instruct".
	Name string `json:"name"`
	// Model is the served model name: spec.inference.model / spec.tuning.baseModel.
	Model string `json:"model"`
	// Image is the serving (and tuning) container image.
	Image string `json:"image"`
	// GPUCount is nvidia.com/gpu per replica: spec.resource.gpuCount when 0.
	GPUCount int32 `json:"gpuCount"`
	// GPUMemory is the GPU memory the model needs across GPUCount GPUs, a quantity ("14Gi");
	// informational.
	GPUMemory string `json:"gpuMemory"`
	// Args are extra serving container arguments; a workspace with no args of its own runs
	// "--served-model-name=<model>", "--port=$(PORT)" (PORT: the container's port) and these.
	Args []string `json:"args,omitempty"`
	// Tuning: the preset can be fine-tuned (spec.tuning.preset).
	Tuning bool `json:"tuning,omitempty"`
	// Gated: the weights come from a gated hub repository at start; the workspace needs a
	// model access Secret.
	Gated bool `json:"gated,omitempty"`
}

//go:embed presets.yaml
var presetsYAML []byte

var presets = mustPresets(presetsYAML)

func mustPresets(b []byte) []Preset {
	var doc struct {
		Presets []Preset `json:"presets"`
	}
	if err := yaml.UnmarshalStrict(b, &doc); err != nil {
		panic(fmt.Sprintf("workspace: presets.yaml: %v", err))
	}
	return doc.Presets
}

// Presets returns the catalog, in presets.yaml's order (a copy).
func Presets() []Preset { return slices.Clone(presets) }

// LookupPreset returns the preset named name.
func LookupPreset(name string) (Preset, bool) {
	for _, p := range presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// UnknownPresetError is the message for a preset name the catalog lacks: it lists the closest
// names (edit distance, at most three) or, when none is close, every tuning or inference one.
func UnknownPresetError(name string, tuning bool) error {
	var names []string
	for _, p := range presets {
		if !tuning || p.Tuning {
			names = append(names, p.Name)
		}
	}
	if near := hardware.Closest(name, names, 3); len(near) > 0 {
		return fmt.Errorf("unknown preset %q; did you mean %s? (the presets are listed in the Model presets guide)", name, strings.Join(near, ", "))
	}
	sort.Strings(names)
	return fmt.Errorf("unknown preset %q; the presets are: %s", name, strings.Join(names, ", "))
}

// TuningPresets are the names of the presets that can be fine-tuned, sorted.
func TuningPresets() []string {
	var names []string
	for _, p := range presets {
		if p.Tuning {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	return names
}

// Resolve returns a deep copy of w with its preset, then its instance type, applied: preset
// values fill only what w leaves empty (resolveInstanceType adds the node label and GPU
// default). Errors name the field: an unknown preset (UnknownPresetError), a preset that cannot
// be tuned or lacks its model access Secret, a missing model or image, a multi-node tuning
// workspace, and the checks it runs (CheckPartition, checkGPUProduct, checkAutoscaling,
// checkRayGroup).
func Resolve(w *v1alpha1.Workspace) (*v1alpha1.Workspace, error) { return ResolveModel(w, nil) }

// ErrModelConfigNotRead is ResolveModel's error (wrapped, naming spec.inference.modelConfig)
// for a workspace whose size comes from a ConfigMap's config.json when modelConfig is nil:
// the caller did not (or could not) read it.
var ErrModelConfigNotRead = errors.New("the model's config.json was not read")

// ResolveModel is Resolve with modelConfig, the bytes of spec.inference.modelConfig's
// ConfigMap key (nil when w has none, or it was not read): a Hugging Face model without a
// preset (AnyModel) gets the default vLLM image, vLLM's arguments as a preset's, and its GPUs
// per replica from its size (EstimateModel, resolveAnyModel). Errors also: the size's
// (naming spec.inference.modelSize or modelConfig; ErrModelConfigNotRead), a GPU of unknown
// memory, a gpuCount, instance type or MIG slice that cannot hold the model.
func ResolveModel(w *v1alpha1.Workspace, modelConfig []byte) (*v1alpha1.Workspace, error) {
	out := w.DeepCopy()
	presetArgs, presetGPUs := false, int32(0)
	if inf := out.Spec.Inference; inf != nil {
		if AnyModel(out) {
			var err error
			if presetGPUs, presetArgs, err = applyAnyModel(out, modelConfig); err != nil {
				return out, err
			}
		}
		if inf.Preset != "" {
			p, ok := LookupPreset(inf.Preset)
			if !ok {
				return out, fmt.Errorf("spec.inference.preset: %w", UnknownPresetError(inf.Preset, false))
			}
			inf.Model = or(inf.Model, p.Model)
			inf.Image = or(inf.Image, p.Image)
			if len(inf.Args) == 0 {
				inf.Args = append([]string{"--served-model-name=" + inf.Model, "--port=$(PORT)"}, p.Args...)
				presetArgs = true
			}
			if out.Spec.Resource.Partition == nil { // a MIG slice per replica, not the preset's GPUs (as KAITO)
				if out.Spec.Resource.GPUCount == 0 {
					out.Spec.Resource.GPUCount = p.GPUCount
				}
				presetGPUs = p.GPUCount
			}
			if p.Gated && inf.ModelAccessSecret == "" {
				return out, fmt.Errorf("spec.inference.modelAccessSecret: preset %q is a gated model (its weights are downloaded from a gated Hugging Face repository): name a Secret whose key %s holds a token", p.Name, ModelAccessKey)
			}
		}
		switch {
		case inf.Model == "":
			return out, fmt.Errorf("spec.inference.model: required without a preset")
		case inf.Image == "":
			return out, fmt.Errorf("spec.inference.image: required without a preset, unless the model is a Hugging Face model ID (org/name) served on KAITO's base vLLM image")
		}
	}
	if tu := out.Spec.Tuning; tu != nil {
		if tu.Preset != "" {
			p, ok := LookupPreset(tu.Preset)
			switch {
			case !ok:
				return out, fmt.Errorf("spec.tuning.preset: %w", UnknownPresetError(tu.Preset, true))
			case !p.Tuning:
				return out, fmt.Errorf("spec.tuning.preset: preset %q cannot be fine-tuned; the presets that can are: %s", tu.Preset, strings.Join(TuningPresets(), ", "))
			}
			tu.BaseModel = or(tu.BaseModel, p.Model)
			tu.Image = or(tu.Image, p.Image)
			if out.Spec.Resource.GPUCount == 0 {
				out.Spec.Resource.GPUCount = p.GPUCount
			}
		}
		if tu.BaseModel == "" || tu.Image == "" {
			return out, fmt.Errorf("spec.tuning: baseModel and image are required without a preset")
		}
	}
	if out.Spec.Tuning != nil && out.Spec.Resource.Count > 1 {
		return out, fmt.Errorf("spec.resource.count: %d, but a tuning workspace runs one pod on one node (KAITO refuses multi-node tuning too): set it to 1", out.Spec.Resource.Count)
	}
	for _, step := range []func(*v1alpha1.Workspace) error{resolveInstanceType, CheckPartition, checkGPUProduct, checkAutoscaling} {
		if err := step(out); err != nil {
			return out, err
		}
	}
	return out, resolveGroup(out, presetGPUs, presetArgs)
}

// resolveGroup settles spec.inference.modelGPUs (multi-node inference) after the preset and
// the instance type: explicit, else the preset's GPUs when resource.count > 1 (a preset model
// spread over smaller replicas), else resource.gpuCount. A group (MultiNode) needs
// count × gpuCount ≥ modelGPUs; an explicit modelGPUs above one replica's GPUs needs count > 1.
// A preset's default args get vLLM's --tensor-parallel-size (GPUs per node: also for one
// replica of several GPUs, as KAITO) and, for a group, --pipeline-parallel-size (nodes). A
// group on KAITO's Ray cluster (RayGroup) cannot serve on a Ray port (checkRayGroup).
func resolveGroup(out *v1alpha1.Workspace, presetGPUs int32, presetArgs bool) error {
	inf, r := out.Spec.Inference, &out.Spec.Resource
	if inf == nil {
		return nil
	}
	count := Replicas(out)
	if Autoscaled(out) {
		count = 1 // autoscaled replicas are copies of the model, never a group (checkAutoscaling)
	}
	explicit := inf.ModelGPUs > 0
	if !explicit && count > 1 && presetGPUs > r.GPUCount {
		inf.ModelGPUs = presetGPUs
	}
	if inf.ModelGPUs == 0 || inf.ModelGPUs <= r.GPUCount {
		inf.ModelGPUs = r.GPUCount
		if presetArgs && r.GPUCount > 1 {
			// One replica of several GPUs serves across all of them, as KAITO sizes vLLM's
			// tensor parallelism to the node's GPUs (without it vLLM serves on one).
			inf.Args = append(inf.Args, fmt.Sprintf("--tensor-parallel-size=%d", r.GPUCount))
		}
		return nil
	}
	switch {
	case count <= 1:
		return fmt.Errorf("spec.inference.modelGPUs: the model needs %d GPUs but one replica has %d (spec.resource.gpuCount): set spec.resource.count to %d or more to serve it across nodes",
			inf.ModelGPUs, r.GPUCount, ceilDiv(inf.ModelGPUs, max(r.GPUCount, 1)))
	case r.GPUCount == 0 || count*r.GPUCount < inf.ModelGPUs:
		return fmt.Errorf("spec.inference.modelGPUs: the model needs %d GPUs but %d nodes × %d GPUs (spec.resource.count × gpuCount) give %d",
			inf.ModelGPUs, count, r.GPUCount, count*r.GPUCount)
	}
	if presetArgs {
		inf.Args = append(inf.Args, fmt.Sprintf("--tensor-parallel-size=%d", r.GPUCount), fmt.Sprintf("--pipeline-parallel-size=%d", count))
	}
	return checkRayGroup(out)
}

// checkGPUProduct refuses GPU products that contradict one another, as no node could carry
// both (the workspace would wait for nodes forever): spec.resource.gpuProduct, the instance
// type's GPU, spec.resource.labelSelector["nvidia.com/gpu.product"] and
// spec.scheduling.nodeSelector["nvidia.com/gpu.product"]. Errors name the later field and the
// one it contradicts.
func checkGPUProduct(out *v1alpha1.Workspace) error {
	r := &out.Spec.Resource
	type source struct{ field, product string }
	var sources []source
	if r.InstanceType != "" {
		if it, ok := hardware.LookupInstanceType(r.InstanceType); ok && it.GPUProduct != "" {
			sources = append(sources, source{fmt.Sprintf("spec.resource.instanceType %q", r.InstanceType), it.GPUProduct})
		}
	}
	if r.GPUProduct != "" {
		sources = append(sources, source{"spec.resource.gpuProduct", r.GPUProduct})
	}
	if v := r.LabelSelector[hardware.LabelGPUProduct]; v != "" {
		sources = append(sources, source{fmt.Sprintf("spec.resource.labelSelector[%q]", hardware.LabelGPUProduct), v})
	}
	if v := out.Spec.Scheduling.NodeSelector[hardware.LabelGPUProduct]; v != "" {
		sources = append(sources, source{fmt.Sprintf("spec.scheduling.nodeSelector[%q]", hardware.LabelGPUProduct), v})
	}
	for i := 1; i < len(sources); i++ {
		if sources[i].product != sources[0].product {
			return fmt.Errorf("%s = %q contradicts %s (%s): no node carries both GPUs", sources[i].field, sources[i].product, sources[0].field, sources[0].product)
		}
	}
	return nil
}

func ceilDiv(a, b int32) int32 { return (a + b - 1) / b }

// resolveInstanceType applies spec.resource.instanceType (hardware.LookupInstanceType) to out
// after the preset: the node label node.kubernetes.io/instance-type=<type> joins the label
// selector, gpuCount defaults to the type's GPUs per node. Errors: an unknown type, a
// labelSelector with another instance type, more GPUs per replica than a node of the type has.
func resolveInstanceType(out *v1alpha1.Workspace) error {
	r := &out.Spec.Resource
	if r.InstanceType == "" {
		return nil
	}
	it, ok := hardware.LookupInstanceType(r.InstanceType)
	if !ok {
		return fmt.Errorf("spec.resource.instanceType: %w", hardware.UnknownInstanceTypeError(r.InstanceType))
	}
	if v, set := r.LabelSelector[hardware.LabelInstanceType]; set && v != it.Name {
		return fmt.Errorf("spec.resource.labelSelector[%q] = %q contradicts spec.resource.instanceType %q", hardware.LabelInstanceType, v, it.Name)
	}
	if r.LabelSelector == nil {
		r.LabelSelector = map[string]string{}
	}
	r.LabelSelector[hardware.LabelInstanceType] = it.Name
	if r.Partition != nil {
		return nil // one MIG slice per replica on a node of the type, not its whole GPUs
	}
	if r.GPUCount == 0 {
		r.GPUCount = it.GPUCount
	}
	if r.GPUCount > it.GPUCount && out.Spec.Inference != nil && Replicas(out) > 1 && !Autoscaled(out) {
		// More GPUs than a node of the type has, over several replicas: one model served
		// across nodes (resolveGroup), each replica taking a whole node's GPUs.
		if out.Spec.Inference.ModelGPUs == 0 {
			out.Spec.Inference.ModelGPUs = r.GPUCount
		}
		r.GPUCount = it.GPUCount
	}
	if r.GPUCount > it.GPUCount {
		return fmt.Errorf("spec.resource.gpuCount: %d GPUs per replica, but a %s node has %d (%s); choose a larger instance type, or set spec.resource.count above 1 to serve the model across nodes", r.GPUCount, it.Name, it.GPUCount, it.GPUProduct)
	}
	return nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
