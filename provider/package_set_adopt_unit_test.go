package provider

import (
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// A Skyhook translated for `terraform query` (from = "skyhook") maps to the gantry_package_set
// model with adopt_from_skyhook and Skyhook's agent, and that model applies exactly the
// PackageSet adopt.FromSkyhook made: what the generated configuration writes is the
// translation.
func TestAdoptSkyhookModelRoundTrip(t *testing.T) {
	b, err := os.ReadFile("../internal/adopt/testdata/skyhook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sky := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &sky.Object); err != nil {
		t.Fatal(err)
	}
	u, warnings, err := skyhookAsPackageSet(sky, "registry.local/agent:v6")
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 3 {
		t.Errorf("warnings %q, want 3", warnings)
	}
	m, err := flattenPackageSet(u, &packageSetModel{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Name.ValueString() != "gpu-tuning" || m.AdoptFromSkyhook.ValueString() != "gpu-tuning" || !m.Paused.ValueBool() {
		t.Errorf("name %s adopt_from_skyhook %s paused %s", m.Name, m.AdoptFromSkyhook, m.Paused)
	}
	if len(m.Packages) != 2 || m.Packages[1].Skyhook == nil || m.Packages[1].Skyhook.AgentImage.ValueString() != "registry.local/agent:v6" {
		t.Fatalf("packages %+v", m.Packages)
	}
	out, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.GetAnnotations()[v1alpha1.AnnotationAdoptFromSkyhook]; got != "gpu-tuning" {
		t.Errorf("expanded annotation %q", got)
	}
	var got, want v1alpha1.PackageSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, &got); err != nil {
		t.Fatal(err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &want); err != nil {
		t.Fatal(err)
	}
	gb, _ := yaml.Marshal(got.Spec)
	wb, _ := yaml.Marshal(want.Spec)
	if !reflect.DeepEqual(gb, wb) {
		t.Errorf("applied spec differs from the translation:\n got %s\nwant %s", gb, wb)
	}
	if _, _, err := adopt.FromSkyhook(sky, ""); err != nil {
		t.Fatal(err)
	}
}
