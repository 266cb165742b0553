package provider

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// An Hourglass Performer translated for `terraform query` (from = "hourglass") maps to the
// gantry_performer model, and that model applies exactly the Performer adopt.FromHourglass made
// (up to the defaults a refresh reads): what the generated configuration writes is the
// translation, for each of Hourglass's example Performers.
func TestAdoptHourglassModelRoundTrip(t *testing.T) {
	for _, f := range []string{"hourglass-basic.yaml", "hourglass-minimal.yaml", "hourglass-gpu.yaml", "hourglass-gpu-ref.yaml", "hourglass-tee.yaml",
		"hourglass-tee-ref.yaml", "hourglass-bottlerocket.yaml", "hourglass-complex.yaml", "hourglass-ponos.yaml"} {
		t.Run(f, func(t *testing.T) {
			hp := fixture(t, f, nil)
			u, _, err := hourglassAsPerformer(hp)
			if err != nil {
				t.Fatal(err)
			}
			m, err := flattenPerformer(u, &performerModelV0{})
			if err != nil {
				t.Fatal(err)
			}
			if m.Name.ValueString() != hp.GetName() || m.Namespace.ValueString() != hp.GetNamespace() || !m.Phase.IsNull() {
				t.Errorf("name %s namespace %s phase %s", m.Name, m.Namespace, m.Phase)
			}
			out, err := expandPerformer(m)
			if err != nil {
				t.Fatal(err)
			}
			var got, want v1alpha1.Performer
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(out.Object, &got); err != nil {
				t.Fatal(err)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &want); err != nil {
				t.Fatal(err)
			}
			// The defaults a refresh reads back.
			if want.Spec.Strategy == "" {
				want.Spec.Strategy = v1alpha1.PerformerRecreate
			}
			if want.Spec.ImagePullPolicy == "" {
				want.Spec.ImagePullPolicy = corev1.PullIfNotPresent
			}
			gb, _ := yaml.Marshal(got.Spec)
			wb, _ := yaml.Marshal(want.Spec)
			if string(gb) != string(wb) {
				t.Errorf("applied spec differs from the translation:\n got %s\nwant %s", gb, wb)
			}
			if !reflect.DeepEqual(got.Labels, want.Labels) || !reflect.DeepEqual(got.Annotations, want.Annotations) {
				t.Errorf("metadata: got %v %v, want %v %v", got.Labels, got.Annotations, want.Labels, want.Annotations)
			}
		})
	}
}
