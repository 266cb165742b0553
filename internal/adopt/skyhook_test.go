package adopt

import (
	"os"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func readSkyhook(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/skyhook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

// Every Skyhook field that maps lands in the PackageSet; each that does not is a warning
// naming it.
func TestFromSkyhook(t *testing.T) {
	ps, warn, err := FromSkyhook(readSkyhook(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if ps.Name != "gpu-tuning" || ps.Labels["team"] != "ml" || ps.Annotations[v1alpha1.AnnotationAdoptFromSkyhook] != "gpu-tuning" {
		t.Errorf("metadata: %+v", ps.ObjectMeta)
	}
	s := ps.Spec
	if !s.Paused || s.Disabled || !s.Serial || s.Priority != 150 || s.Sequencing != v1alpha1.SequencingAll || !s.RuntimeRequired {
		t.Errorf("spec flags: paused %v disabled %v serial %v priority %d sequencing %q runtimeRequired %v", s.Paused, s.Disabled, s.Serial, s.Priority, s.Sequencing, s.RuntimeRequired)
	}
	if s.NodeSelector.MatchLabels["nvidia.com/gpu.present"] != "true" || len(s.NodeSelector.MatchExpressions) != 1 || s.NodeSelector.MatchExpressions[0].Key != "pool" {
		t.Errorf("node selector: %+v", s.NodeSelector)
	}
	if s.InterruptionBudget == nil || s.InterruptionBudget.Percent == nil || *s.InterruptionBudget.Percent != 25 || s.InterruptionBudget.Count != nil {
		t.Errorf("budget: %+v", s.InterruptionBudget)
	}
	if s.PodNonInterruptLabels == nil || s.PodNonInterruptLabels.MatchLabels["app"] != "training" {
		t.Errorf("podNonInterruptLabels: %+v", s.PodNonInterruptLabels)
	}
	if len(s.AdditionalTolerations) != 1 || s.AdditionalTolerations[0].Key != "nvidia.com/gpu" {
		t.Errorf("tolerations: %+v", s.AdditionalTolerations)
	}
	if len(s.Packages) != 2 || s.Packages[0].Name != "shellscript" || s.Packages[1].Name != "tuned" {
		t.Fatalf("packages: %+v", s.Packages)
	}
	sh, tu := s.Packages[0], s.Packages[1]
	if sh.Version != "1.3" || sh.Image != "ghcr.io/nvidia/skyhook-packages/shellscript@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef" ||
		sh.Skyhook == nil || sh.Skyhook.AgentImage != "nvcr.io/nvidia/skyhook/agent:v6.3.0" || sh.DependsOn["tuned"] != "1.2.0" {
		t.Errorf("shellscript: %+v", sh)
	}
	want := v1alpha1.Package{Name: "tuned", Version: "1.2.0", Image: "ghcr.io/nvidia/skyhook-packages/tuned",
		Interrupt:        &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"tuned"}},
		ConfigInterrupts: map[string]v1alpha1.Interrupt{"tuned.conf": {Type: v1alpha1.InterruptService, Services: []string{"tuned"}}},
		Config:           map[string]string{"tuned.conf": "[main]\n"},
		Env:              map[string]string{"MODE": "fast"},
		EnvFrom:          []v1alpha1.EnvFromRef{{Name: "TOKEN", SecretKeyRef: &v1alpha1.KeyRef{Name: "creds", Key: "token"}}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}},
		GracefulShutdown: &metav1.Duration{Duration: 30e9},
		Uninstall:        &v1alpha1.Uninstall{Enabled: true},
		Skyhook:          &v1alpha1.SkyhookExecution{AgentImage: DefaultSkyhookAgentImage}}
	if !reflect.DeepEqual(tu, want) {
		t.Errorf("tuned:\n got %+v\nwant %+v", tu, want)
	}
	wantWarn := []string{
		"spec.deploymentPolicy: names the DeploymentPolicy \"safe-rollout\", a separate object; write its compartments inline as deployment_policy { ... }",
		"spec.packages.shellscript.futureField: not known to Gantry; left out",
		"spec.packages.tuned.env NODE: valueFrom other than secretKeyRef or configMapKeyRef (field or resource references) is not supported; left out",
	}
	if !reflect.DeepEqual(warn, wantWarn) {
		t.Errorf("warnings:\n got %q\nwant %q", warn, wantWarn)
	}
}

// The agent image given replaces the chart default; a package's agentImageOverride wins.
func TestFromSkyhookAgentImage(t *testing.T) {
	ps, _, err := FromSkyhook(readSkyhook(t), "registry.local/skyhook/agent:v6.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.Spec.Packages[1].Skyhook.AgentImage; got != "registry.local/skyhook/agent:v6.4.0" {
		t.Errorf("tuned agent image %q", got)
	}
	if got := ps.Spec.Packages[0].Skyhook.AgentImage; got != "nvcr.io/nvidia/skyhook/agent:v6.3.0" {
		t.Errorf("shellscript agent image %q (agentImageOverride must win)", got)
	}
}

// A spec that is not Skyhook's is an error, not a half translation.
func TestFromSkyhookBadSpec(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}, "spec": map[string]any{"packages": "nope"}}}
	if _, _, err := FromSkyhook(u, ""); err == nil {
		t.Error("no error for packages that are not a map")
	}
}

// A Skyhook without priority has Skyhook's default, 200 (the CRD's default), not 0.
func TestFromSkyhookDefaultPriority(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "x"}, "spec": map[string]any{}}}
	ps, _, err := FromSkyhook(u, "")
	if err != nil {
		t.Fatal(err)
	}
	if ps.Spec.Priority != v1alpha1.DefaultPackageSetPriority {
		t.Errorf("priority %d", ps.Spec.Priority)
	}
}
