package workspace

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
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
	sort.SliceStable(names, func(i, j int) bool { return distance(name, names[i]) < distance(name, names[j]) })
	close := names[:0:0]
	for _, n := range names {
		if len(close) < 3 && distance(name, n) <= max(3, len(name)/3) {
			close = append(close, n)
		}
	}
	if len(close) > 0 {
		return fmt.Errorf("unknown preset %q; did you mean %s? (the presets are listed in the Model presets guide)", name, strings.Join(close, ", "))
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

// distance is the Levenshtein distance between a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Resolve returns w with its preset applied: a deep copy in which every field the preset
// provides and w leaves empty (inference model, image, args; tuning baseModel, image;
// resource.gpuCount when 0) holds the preset's value. A workspace without a preset is returned
// as a copy unchanged. Errors: an unknown preset (UnknownPresetError), a tuning preset that
// cannot be tuned, or a workspace that still lacks a model or image (neither given nor from a
// preset), each naming the field.
func Resolve(w *v1alpha1.Workspace) (*v1alpha1.Workspace, error) {
	out := w.DeepCopy()
	if inf := out.Spec.Inference; inf != nil {
		if inf.Preset != "" {
			p, ok := LookupPreset(inf.Preset)
			if !ok {
				return out, fmt.Errorf("spec.inference.preset: %w", UnknownPresetError(inf.Preset, false))
			}
			inf.Model = or(inf.Model, p.Model)
			inf.Image = or(inf.Image, p.Image)
			if len(inf.Args) == 0 {
				inf.Args = append([]string{"--served-model-name=" + inf.Model, "--port=$(PORT)"}, p.Args...)
			}
			if out.Spec.Resource.GPUCount == 0 {
				out.Spec.Resource.GPUCount = p.GPUCount
			}
			if p.Gated && inf.ModelAccessSecret == "" {
				return out, fmt.Errorf("spec.inference.modelAccessSecret: preset %q is a gated model (its weights are downloaded from a gated Hugging Face repository): name a Secret whose key %s holds a token", p.Name, ModelAccessKey)
			}
		}
		if inf.Model == "" || inf.Image == "" {
			return out, fmt.Errorf("spec.inference: model and image are required without a preset")
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
	return out, nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
