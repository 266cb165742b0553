// Package hardware maps a Performer's hardware requirements and scheduling fields to Pod
// placement (GPU requests and limits, node selector, tolerations, runtime class) as pure
// functions over the API types. Label keys are those the upstream components set, so selectors
// match real clusters: the NVIDIA device plugin and GPU feature discovery (nvidia.com/gpu,
// nvidia.com/gpu.present, nvidia.com/gpu.product), node-feature-discovery's TEE labels and
// confidential-containers' runtime classes. Unlike Hourglass's operator, a GPU type is a node
// selector on the product label, not an invented nvidia.com/<type> resource; Hourglass documented
// TEE placement but never implemented it.
package hardware

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Label, resource and taint keys used for placement.
const (
	// ResourceGPU is the NVIDIA device plugin's extended resource.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
	// LabelGPUPresent is set to "true" by GPU feature discovery on nodes with an NVIDIA GPU.
	LabelGPUPresent = "nvidia.com/gpu.present"
	// LabelGPUProduct is GPU feature discovery's product label, e.g. NVIDIA-H100-80GB-HBM3.
	LabelGPUProduct = "nvidia.com/gpu.product"
	// TaintGPU is the taint key GPU nodes commonly carry (nvidia.com/gpu=present:NoSchedule).
	TaintGPU = "nvidia.com/gpu"

	// LabelSGX, LabelSEVSNP and LabelTDX are node-feature-discovery's CPU security labels.
	LabelSGX    = "feature.node.kubernetes.io/cpu-security.sgx.enabled"
	LabelSEVSNP = "feature.node.kubernetes.io/cpu-security.sev.snp.enabled"
	LabelTDX    = "feature.node.kubernetes.io/cpu-security.tdx.enabled"

	// RuntimeClassSGX, RuntimeClassSEVSNP and RuntimeClassTDX are confidential-containers'
	// runtime classes for each TEE type.
	RuntimeClassSGX    = "enclave-cc"
	RuntimeClassSEVSNP = "kata-qemu-snp"
	RuntimeClassTDX    = "kata-qemu-tdx"
)

// teeLabels gives, per TEE type, the node label that must be "true" and the default runtime class.
var teeLabels = map[v1alpha1.TEEType]struct{ label, runtimeClass string }{
	v1alpha1.TEESGX:    {LabelSGX, RuntimeClassSGX},
	v1alpha1.TEESEVSNP: {LabelSEVSNP, RuntimeClassSEVSNP},
	v1alpha1.TEETDX:    {LabelTDX, RuntimeClassTDX},
}

// Placement is where and how a Performer's Pod must run.
type Placement struct {
	// Requests and Limits hold the extended resources the hardware implies (nvidia.com/gpu: N);
	// nil when none. Merge them into the container with ContainerResources.
	Requests corev1.ResourceList
	Limits   corev1.ResourceList
	// NodeSelector is the merged selector: hardware-implied labels, customLabels and the user's
	// scheduling.nodeSelector. nil when empty.
	NodeSelector map[string]string
	// Tolerations are the hardware-implied tolerations plus the user's, without duplicates,
	// sorted by (key, operator, value, effect, tolerationSeconds). nil when empty.
	Tolerations []corev1.Toleration
	// RuntimeClassName is scheduling.runtimeClassName if set, else the TEE type's runtime
	// class, else nil.
	RuntimeClassName *string
	// Affinity and PriorityClassName are copied from scheduling unchanged.
	Affinity          *corev1.Affinity
	PriorityClassName string
}

// ConflictError reports a node selector key that two sources require with different values,
// e.g. scheduling.nodeSelector["nvidia.com/gpu.product"]="A" while hardwareRequirements.gpuType
// implies "B". Field is the later source (the one that cannot be honoured), Source the earlier.
type ConflictError struct {
	// Field is the spec path of the conflicting entry, e.g.
	// `spec.scheduling.nodeSelector["nvidia.com/gpu.product"]`.
	Field string
	// Value is what Field asks for.
	Value string
	// Source is the spec path that implies the other value, e.g. paths.GPUType.
	Source string
	// Implied is the value Source implies.
	Implied string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s is %q but %s requires %q", e.Field, e.Value, e.Source, e.Implied)
}

// InvalidError reports hardware requirements that cannot be mapped (the CRD's validation rules
// normally reject them first): teeRequired without a known teeType, teeType without teeRequired,
// gpuType without gpuCount, a negative gpuCount, or a GPU resource set in spec.resources that
// differs from gpuCount.
type InvalidError struct {
	// Field is the spec path at fault, e.g. paths.TEEType.
	Field string
	// Detail says what is wrong.
	Detail string
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Detail }

// selectorEntry remembers which spec field put a key in the node selector, for error messages.
type selectorEntry struct{ value, source string }

// Place maps hardware requirements and scheduling fields to a Placement: GPUs as nvidia.com/gpu
// requests with the GPU feature discovery labels and the nvidia.com/gpu toleration, a TEE as its
// node-feature-discovery label and runtime class (scheduling.runtimeClassName wins), then
// customLabels and scheduling.nodeSelector merged. Errors: *ConflictError (one key, two values),
// *InvalidError (inconsistent requirements), *MIGProfileError (a MIG profile the GPU lacks).
func Place(hw v1alpha1.HardwareRequirements, s v1alpha1.Scheduling) (Placement, error) {
	return PlaceAt(hw, s, PerformerPaths)
}

// Paths are the spec paths error messages name for each input of PlaceAt, so a kind whose
// spec spells the requirements differently (Workspace: spec.resource.gpuProduct, ...) gets
// errors naming its own fields. CustomLabels and NodeSelector are prefixes completed with
// [%q] of the key. GPUResource, when set, turns on the MIG rule: a MIG resource
// (nvidia.com/mig-<profile>) with a GPUType must be a profile that GPU offers
// (CheckMIGProfile); a kind that checks its profile itself (Workspace, in Resolve) leaves it
// empty.
type Paths struct {
	GPUCount, GPUType, GPUResource, TEEType, CustomLabels, NodeSelector string
}

// PerformerPaths are a Performer's spec paths (the ones Place uses).
var PerformerPaths = Paths{
	GPUCount:     "spec.hardwareRequirements.gpuCount",
	GPUType:      "spec.hardwareRequirements.gpuType",
	GPUResource:  "spec.hardwareRequirements.gpuResource",
	TEEType:      "spec.hardwareRequirements.teeType",
	CustomLabels: "spec.hardwareRequirements.customLabels",
	NodeSelector: "spec.scheduling.nodeSelector",
}

// PlaceAt is Place with errors naming the given spec paths.
func PlaceAt(hw v1alpha1.HardwareRequirements, s v1alpha1.Scheduling, paths Paths) (Placement, error) {
	var p Placement
	sel := map[string]selectorEntry{}
	add := func(key, value, source string) error {
		if prev, ok := sel[key]; ok {
			if prev.value != value {
				return &ConflictError{Field: source, Value: value, Source: prev.source, Implied: prev.value}
			}
			return nil
		}
		sel[key] = selectorEntry{value, source}
		return nil
	}
	var tolerations []corev1.Toleration

	switch {
	case hw.GPUCount < 0:
		return Placement{}, &InvalidError{Field: paths.GPUCount, Detail: fmt.Sprintf("must be >= 0, got %d", hw.GPUCount)}
	case hw.GPUType != "" && hw.GPUCount == 0:
		return Placement{}, &InvalidError{Field: paths.GPUType, Detail: "requires gpuCount > 0"}
	case hw.GPUResource != "" && hw.GPUCount == 0:
		return Placement{}, &InvalidError{Field: paths.GPUCount, Detail: "must be > 0 with gpuResource " + hw.GPUResource}
	}
	if err := checkMIGResource(hw, paths); err != nil {
		return Placement{}, err
	}
	if hw.GPUCount > 0 {
		q := *resource.NewQuantity(int64(hw.GPUCount), resource.DecimalSI)
		name := ResourceGPU
		if hw.GPUResource != "" {
			name = corev1.ResourceName(hw.GPUResource) // Hourglass: nvidia.com/<gpuType>
		}
		p.Requests = corev1.ResourceList{name: q}
		p.Limits = corev1.ResourceList{name: q.DeepCopy()}
		_ = add(LabelGPUPresent, "true", paths.GPUCount)
		tolerations = append(tolerations, corev1.Toleration{Key: TaintGPU, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		if hw.GPUType != "" {
			_ = add(LabelGPUProduct, hw.GPUType, paths.GPUType)
		}
	}

	switch {
	case hw.TEERequired:
		t, ok := teeLabels[hw.TEEType]
		if !ok {
			return Placement{}, &InvalidError{Field: paths.TEEType, Detail: fmt.Sprintf("teeRequired needs teeType sgx, sev-snp or tdx, got %q", hw.TEEType)}
		}
		if err := add(t.label, "true", paths.TEEType); err != nil {
			return Placement{}, err
		}
		rc := t.runtimeClass
		p.RuntimeClassName = &rc
	case hw.TEEType != "":
		return Placement{}, &InvalidError{Field: paths.TEEType, Detail: "requires teeRequired: true"}
	}

	for _, k := range sortedKeys(hw.CustomLabels) {
		if err := add(k, hw.CustomLabels[k], fmt.Sprintf("%s[%q]", paths.CustomLabels, k)); err != nil {
			return Placement{}, err
		}
	}
	for _, k := range sortedKeys(s.NodeSelector) {
		if err := add(k, s.NodeSelector[k], fmt.Sprintf("%s[%q]", paths.NodeSelector, k)); err != nil {
			return Placement{}, err
		}
	}
	if len(sel) > 0 {
		p.NodeSelector = make(map[string]string, len(sel))
		for k, e := range sel {
			p.NodeSelector[k] = e.value
		}
	}

	p.Tolerations = mergeTolerations(tolerations, s.Tolerations)
	if s.RuntimeClassName != nil {
		rc := *s.RuntimeClassName
		p.RuntimeClassName = &rc
	}
	if s.Affinity != nil {
		p.Affinity = s.Affinity.DeepCopy()
	}
	if s.PriorityClassName != nil {
		p.PriorityClassName = *s.PriorityClassName
	}
	return p, nil
}

// checkMIGResource applies CheckMIGProfile to a MIG gpuResource (nvidia.com/mig-<profile>) and
// gpuType, when paths.GPUResource names the field: nil otherwise, and for any other resource.
func checkMIGResource(hw v1alpha1.HardwareRequirements, paths Paths) error {
	profile, ok := MIGProfileOfResource(hw.GPUResource)
	if !ok || paths.GPUResource == "" || hw.GPUType == "" {
		return nil
	}
	return CheckMIGProfile(paths.GPUResource, profile, hw.GPUType, paths.GPUType)
}

// ContainerResources merges the Placement's GPU requests and limits into the user's container
// resources (spec.resources). A GPU resource the user already set with a different quantity is
// an *InvalidError naming spec.resources; an equal one is kept. The input is not modified.
func (p Placement) ContainerResources(user corev1.ResourceRequirements) (corev1.ResourceRequirements, error) {
	out := *user.DeepCopy()
	merge := func(dst *corev1.ResourceList, src corev1.ResourceList, field string) error {
		for name, q := range src {
			if have, ok := (*dst)[name]; ok {
				if have.Cmp(q) != 0 {
					return &InvalidError{Field: fmt.Sprintf("spec.resources.%s[%q]", field, name), Detail: fmt.Sprintf("is %s but hardwareRequirements.gpuCount requires %s; set GPUs only through gpuCount", have.String(), q.String())}
				}
				continue
			}
			if *dst == nil {
				*dst = corev1.ResourceList{}
			}
			(*dst)[name] = q.DeepCopy()
		}
		return nil
	}
	if err := merge(&out.Requests, p.Requests, "requests"); err != nil {
		return corev1.ResourceRequirements{}, err
	}
	if err := merge(&out.Limits, p.Limits, "limits"); err != nil {
		return corev1.ResourceRequirements{}, err
	}
	return out, nil
}

// mergeTolerations returns hw and user tolerations without exact duplicates, sorted so the
// result (and so the Pod spec hash) does not depend on input order.
func mergeTolerations(hw, user []corev1.Toleration) []corev1.Toleration {
	if len(hw)+len(user) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, 0, len(hw)+len(user))
	seen := map[string]bool{}
	for _, list := range [][]corev1.Toleration{hw, user} {
		for _, t := range list {
			k := tolerationKey(t)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, *t.DeepCopy())
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return tolerationKey(out[i]) < tolerationKey(out[j]) })
	return out
}

func tolerationKey(t corev1.Toleration) string {
	secs := "-"
	if t.TolerationSeconds != nil {
		secs = fmt.Sprintf("%020d", *t.TolerationSeconds)
	}
	op := t.Operator
	if op == "" {
		op = corev1.TolerationOpEqual // the API's default
	}
	return t.Key + "\x00" + string(op) + "\x00" + t.Value + "\x00" + string(t.Effect) + "\x00" + secs
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// MissingLabels returns the entries of selector ("key=value", sorted) that no node in
// nodeLabels carries, each followed by what it stands for when it is a TEE or GPU label, e.g.
// "feature.node.kubernetes.io/cpu-security.tdx.enabled=true (TEE type tdx)". Empty when every
// entry is carried by some node (the nodes may still not carry them all at once).
func MissingLabels(nodeLabels []map[string]string, selector map[string]string) []string {
	var out []string
	for k, v := range selector {
		found := false
		for _, l := range nodeLabels {
			if have, ok := l[k]; ok && have == v {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k+"="+v+labelMeaning(k, v))
		}
	}
	sort.Strings(out)
	return out
}

func labelMeaning(k, v string) string {
	for t, x := range teeLabels {
		if x.label == k {
			return fmt.Sprintf(" (TEE type %s)", t)
		}
	}
	if k == LabelGPUProduct {
		return fmt.Sprintf(" (GPU type %s)", v)
	}
	return ""
}
