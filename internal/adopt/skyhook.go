// Package adopt translates objects of the upstream systems Gantry replaces (NVIDIA Skyhook /
// NodeWright `Skyhook`, KAITO `Workspace`, Hourglass `Performer`) into Gantry objects, for
// `terraform query` with `from = "skyhook"` on the gantry_package_set list resource,
// `from = "kaito"` on the gantry_workspace one and `from = "hourglass"` on the
// gantry_performer one: pure functions over the upstream objects as the
// dynamic client reads them (unstructured), returning the Gantry object and a warning per
// upstream field that does not map. It imports neither the Terraform framework nor
// controller-runtime.
package adopt

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// SkyhookGVR is Skyhook's (and NodeWright's) cluster-scoped kind: skyhook.nvidia.com/v1alpha1
// skyhooks.
var SkyhookGVR = schema.GroupVersionResource{Group: "skyhook.nvidia.com", Version: "v1alpha1", Resource: "skyhooks"}

// DefaultSkyhookAgentImage is the agent image of the Skyhook operator's Helm chart
// (NodeWright chart values controller.agent, v6.4.1): what runs a package's stages when the
// package sets no agentImageOverride and the operator was installed with the chart's default.
const DefaultSkyhookAgentImage = "nvcr.io/nvidia/skyhook/agent:v6.4.1"

// skyhookSpec is the part of Skyhook's spec the translation reads (NodeWright
// operator/api/v1alpha1/skyhook_types.go); fields it does not know are found by
// unknownFields and warned about.
type skyhookSpec struct {
	Serial                  bool                  `json:"serial,omitempty"`
	PodNonInterruptLabels   *metav1.LabelSelector `json:"podNonInterruptLabels,omitempty"`
	NodeSelector            metav1.LabelSelector  `json:"nodeSelectors,omitempty"`
	DeploymentPolicy        string                `json:"deploymentPolicy,omitempty"`
	DeploymentPolicyOptions *struct {
		ResetBatchStateOnCompletion *bool `json:"resetBatchStateOnCompletion,omitempty"`
	} `json:"deploymentPolicyOptions,omitempty"`
	InterruptionBudget struct {
		Percent *int32 `json:"percent,omitempty"`
		Count   *int32 `json:"count,omitempty"`
	} `json:"interruptionBudget,omitempty"`
	Packages              map[string]skyhookPackage `json:"packages,omitempty"`
	AdditionalTolerations []corev1.Toleration       `json:"additionalTolerations,omitempty"`
	RuntimeRequired       bool                      `json:"runtimeRequired,omitempty"`
	AutoTaintNewNodes     bool                      `json:"autoTaintNewNodes,omitempty"`
	Priority              int32                     `json:"priority,omitempty"`
	Sequencing            string                    `json:"sequencing,omitempty"`
}

type skyhookPackage struct {
	Name               string                        `json:"name,omitempty"`
	Version            string                        `json:"version"`
	Image              string                        `json:"image"`
	ContainerSHA       string                        `json:"containerSHA,omitempty"`
	AgentImageOverride string                        `json:"agentImageOverride,omitempty"`
	Interrupt          *v1alpha1.Interrupt           `json:"interrupt,omitempty"`
	DependsOn          map[string]string             `json:"dependsOn,omitempty"`
	ConfigInterrupts   map[string]v1alpha1.Interrupt `json:"configInterrupts,omitempty"`
	ConfigMap          map[string]string             `json:"configMap,omitempty"`
	Env                []corev1.EnvVar               `json:"env,omitempty"`
	Resources          *struct {
		CPURequest    *resource.Quantity `json:"cpuRequest,omitempty"`
		CPULimit      *resource.Quantity `json:"cpuLimit,omitempty"`
		MemoryRequest *resource.Quantity `json:"memoryRequest,omitempty"`
		MemoryLimit   *resource.Quantity `json:"memoryLimit,omitempty"`
	} `json:"resources,omitempty"`
	GracefulShutdown *metav1.Duration `json:"gracefulShutdown,omitempty"`
	Uninstall        *struct {
		Enabled bool `json:"enabled"`
		Apply   bool `json:"apply"`
	} `json:"uninstall,omitempty"`
}

// skyhookSpecFields and skyhookPackageFields are the JSON fields the translation reads.
var (
	skyhookSpecFields = []string{"serial", "podNonInterruptLabels", "nodeSelectors", "deploymentPolicy", "deploymentPolicyOptions",
		"interruptionBudget", "packages", "additionalTolerations", "runtimeRequired", "autoTaintNewNodes", "priority", "sequencing"}
	skyhookPackageFields = []string{"name", "version", "image", "containerSHA", "agentImageOverride", "interrupt", "dependsOn",
		"configInterrupts", "configMap", "env", "resources", "gracefulShutdown", "uninstall"}
)

// FromSkyhook translates a Skyhook (as listed by the dynamic client) into the PackageSet that
// replaces it, annotated gantry.dev/adopt-from-skyhook=<skyhook> so that the reconciler takes
// over the nodes Skyhook completed (packageset.AdoptSkyhook) instead of running their
// packages again. Packages keep Skyhook's images unchanged and run with Skyhook's agent
// (`skyhook { agent_image }`: the package's agentImageOverride, else agentImage, else
// DefaultSkyhookAgentImage). warnings name each Skyhook field that does not carry over, and
// why; they are sorted. Error: the object's spec is not a Skyhook spec.
func FromSkyhook(u *unstructured.Unstructured, agentImage string) (*v1alpha1.PackageSet, []string, error) {
	name := u.GetName()
	raw, err := json.Marshal(u.Object["spec"])
	if err != nil {
		return nil, nil, err
	}
	var sp skyhookSpec
	if err := json.Unmarshal(raw, &sp); err != nil {
		return nil, nil, fmt.Errorf("skyhook %s: spec is not a Skyhook spec: %w", name, err)
	}
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	specMap, _ := u.Object["spec"].(map[string]any)
	for _, f := range unknownFields(specMap, skyhookSpecFields) {
		w("spec.%s: not known to Gantry; left out", f)
	}

	ps := &v1alpha1.PackageSet{}
	ps.APIVersion, ps.Kind = v1alpha1.GroupVersion.String(), "PackageSet"
	ps.Name = name
	if l := u.GetLabels(); len(l) > 0 {
		ps.Labels = l
	}
	ps.Annotations = map[string]string{v1alpha1.AnnotationAdoptFromSkyhook: name}
	s := &ps.Spec
	ann := u.GetAnnotations()
	s.Paused = ann["skyhook.nvidia.com/pause"] == "true"
	s.Disabled = ann["skyhook.nvidia.com/disable"] == "true"
	s.NodeSelector = sp.NodeSelector
	s.Serial = sp.Serial
	s.Priority = sp.Priority
	if s.Priority == 0 {
		s.Priority = v1alpha1.DefaultPackageSetPriority // Skyhook's CRD default
	}
	s.Sequencing = v1alpha1.Sequencing(sp.Sequencing)
	s.RuntimeRequired, s.AutoTaintNewNodes = sp.RuntimeRequired, sp.AutoTaintNewNodes
	if b := sp.InterruptionBudget; b.Percent != nil || b.Count != nil {
		s.InterruptionBudget = &v1alpha1.InterruptionBudget{Percent: b.Percent, Count: b.Count}
	}
	if pl := sp.PodNonInterruptLabels; pl != nil && (len(pl.MatchLabels) > 0 || len(pl.MatchExpressions) > 0) {
		if len(pl.MatchExpressions) > 0 {
			w("spec.podNonInterruptLabels.matchExpressions: pod_non_interrupt_labels takes match labels only; left out")
		}
		if len(pl.MatchLabels) > 0 {
			s.PodNonInterruptLabels = &metav1.LabelSelector{MatchLabels: pl.MatchLabels}
		}
	}
	s.AdditionalTolerations = sp.AdditionalTolerations
	if sp.DeploymentPolicy != "" {
		w("spec.deploymentPolicy: names the DeploymentPolicy %q, a separate object; write its compartments inline as deployment_policy { ... }", sp.DeploymentPolicy)
	}
	if o := sp.DeploymentPolicyOptions; o != nil && o.ResetBatchStateOnCompletion != nil {
		w("spec.deploymentPolicyOptions.resetBatchStateOnCompletion: goes with the deployment policy (deployment_policy.reset_batch_state_on_completion); left out")
	}

	pkgMaps, _ := specMap["packages"].(map[string]any)
	for _, key := range sortedKeys(sp.Packages) {
		p := sp.Packages[key]
		if pm, ok := pkgMaps[key].(map[string]any); ok {
			for _, f := range unknownFields(pm, skyhookPackageFields) {
				w("spec.packages.%s.%s: not known to Gantry; left out", key, f)
			}
		}
		gp, pw := fromSkyhookPackage(key, p, agentImage)
		warn = append(warn, pw...)
		s.Packages = append(s.Packages, gp)
	}
	sort.Strings(warn)
	return ps, warn, nil
}

// fromSkyhookPackage translates Skyhook's package at key spec.packages.<key>.
func fromSkyhookPackage(key string, p skyhookPackage, agentImage string) (v1alpha1.Package, []string) {
	var warn []string
	w := func(format string, a ...any) {
		warn = append(warn, fmt.Sprintf("spec.packages.%s.", key)+fmt.Sprintf(format, a...))
	}
	name := p.Name
	if name == "" {
		name = key // Skyhook: the map key names the package
	}
	// Skyhook drops a tag written in the image (the version is the tag); a digest is
	// containerSHA.
	image := p.Image
	if last := image[strings.LastIndex(image, "/")+1:]; strings.Contains(last, ":") && !strings.Contains(image, "@") {
		image = image[:len(image)-len(last)+strings.Index(last, ":")]
	}
	if p.ContainerSHA != "" {
		image += "@" + p.ContainerSHA
	}
	agent := p.AgentImageOverride
	if agent == "" {
		agent = agentImage
	}
	if agent == "" {
		agent = DefaultSkyhookAgentImage
	}
	gp := v1alpha1.Package{Name: name, Version: p.Version, Image: image, Interrupt: p.Interrupt, ConfigInterrupts: p.ConfigInterrupts,
		Config: p.ConfigMap, DependsOn: p.DependsOn, GracefulShutdown: p.GracefulShutdown,
		Skyhook: &v1alpha1.SkyhookExecution{AgentImage: agent}}
	if p.Uninstall != nil {
		gp.Uninstall = &v1alpha1.Uninstall{Enabled: p.Uninstall.Enabled, Apply: p.Uninstall.Apply}
	}
	if r := p.Resources; r != nil {
		set := func(l *corev1.ResourceList, n corev1.ResourceName, q *resource.Quantity) {
			if q == nil || q.IsZero() {
				return
			}
			if *l == nil {
				*l = corev1.ResourceList{}
			}
			(*l)[n] = *q
		}
		set(&gp.Resources.Requests, corev1.ResourceCPU, r.CPURequest)
		set(&gp.Resources.Limits, corev1.ResourceCPU, r.CPULimit)
		set(&gp.Resources.Requests, corev1.ResourceMemory, r.MemoryRequest)
		set(&gp.Resources.Limits, corev1.ResourceMemory, r.MemoryLimit)
	}
	for _, e := range p.Env {
		switch vf := e.ValueFrom; {
		case vf == nil:
			if gp.Env == nil {
				gp.Env = map[string]string{}
			}
			gp.Env[e.Name] = e.Value
		case vf.SecretKeyRef != nil:
			gp.EnvFrom = append(gp.EnvFrom, v1alpha1.EnvFromRef{Name: e.Name, SecretKeyRef: &v1alpha1.KeyRef{Name: vf.SecretKeyRef.Name, Key: vf.SecretKeyRef.Key}})
		case vf.ConfigMapKeyRef != nil:
			gp.EnvFrom = append(gp.EnvFrom, v1alpha1.EnvFromRef{Name: e.Name, ConfigMapKeyRef: &v1alpha1.KeyRef{Name: vf.ConfigMapKeyRef.Name, Key: vf.ConfigMapKeyRef.Key}})
		default:
			w("env %s: valueFrom other than secretKeyRef or configMapKeyRef (field or resource references) is not supported; left out", e.Name)
		}
	}
	return gp, warn
}

// unknownFields are obj's keys not in known, sorted.
func unknownFields(obj map[string]any, known []string) []string {
	var out []string
	for k := range obj {
		found := false
		for _, kk := range known {
			if k == kk {
				found = true
				break
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
