package provider

import (
	"os"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// A KAITO Workspace translated for `terraform query` (from = "kaito") maps to the
// gantry_workspace model, and that model applies exactly the Workspace adopt.FromKAITO made
// (up to the defaults a refresh reads: count 1, port 8000, provision_nodes true): what the
// generated configuration writes is the translation.
func TestAdoptKAITOModelRoundTrip(t *testing.T) {
	for _, fixture := range []string{"kaito-inference.yaml", "kaito-template.yaml", "kaito-tuning.yaml", "kaito-tuning-pvc.yaml"} {
		t.Run(fixture, func(t *testing.T) {
			b, err := os.ReadFile("../internal/adopt/testdata/" + fixture)
			if err != nil {
				t.Fatal(err)
			}
			kw := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(b, &kw.Object); err != nil {
				t.Fatal(err)
			}
			u, _, err := kaitoAsWorkspace(kw)
			if err != nil {
				t.Fatal(err)
			}
			m, err := flattenWorkspaceSized(u, &workspaceModelV0{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Name.ValueString() != kw.GetName() || m.Namespace.ValueString() != "ml" || !m.State.IsNull() {
				t.Errorf("name %s namespace %s state %s", m.Name, m.Namespace, m.State)
			}
			out, err := expandWorkspace(m)
			if err != nil {
				t.Fatal(err)
			}
			var got, want v1alpha1.Workspace
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, &got); err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &want); err != nil {
				t.Fatal(err)
			}
			// The defaults a refresh reads back.
			ws := &want.Spec
			ws.Resource.Count = max(ws.Resource.Count, 1)
			if ws.Resource.ProvisionNodes == nil {
				yes := true
				ws.Resource.ProvisionNodes = &yes
			}
			if ws.Inference != nil && ws.Inference.Port == 0 {
				ws.Inference.Port = v1alpha1.DefaultInferencePort
			}
			if ws.Tuning != nil && ws.Tuning.BackoffLimit == nil {
				zero := int32(0)
				ws.Tuning.BackoffLimit = &zero
			}
			gb, _ := yaml.Marshal(got.Spec)
			wb, _ := yaml.Marshal(want.Spec)
			if !reflect.DeepEqual(gb, wb) {
				t.Errorf("applied spec differs from the translation:\n got %s\nwant %s", gb, wb)
			}
			if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Annotations, want.Annotations) {
				t.Errorf("metadata: got %v %v, want %v %v", got.Labels, got.Annotations, want.Labels, want.Annotations)
			}
		})
	}
}
