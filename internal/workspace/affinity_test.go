package workspace

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// spec.resource.labelSelectorExpressions reach the pod template as required node affinity,
// ANDed into each of the user's required terms (which stay ORed); the spec is not modified.
func TestPlacementLabelSelectorExpressions(t *testing.T) {
	zone := metav1.LabelSelectorRequirement{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"z1", "z2"}}
	noSpot := metav1.LabelSelectorRequirement{Key: "spot", Operator: metav1.LabelSelectorOpDoesNotExist}
	want := []corev1.NodeSelectorRequirement{
		{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"z1", "z2"}},
		{Key: "spot", Operator: corev1.NodeSelectorOpDoesNotExist},
	}
	userTerm := func(k string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: k, Operator: corev1.NodeSelectorOpExists}}}
	}
	preferred := []corev1.PreferredSchedulingTerm{{Weight: 10, Preference: userTerm("fast")}}
	for _, tc := range []struct {
		name      string
		exprs     []metav1.LabelSelectorRequirement
		affinity  *corev1.Affinity
		wantTerms [][]corev1.NodeSelectorRequirement // nil: no required node affinity
	}{
		{"none", nil, nil, nil},
		{"no user affinity: one term", []metav1.LabelSelectorRequirement{zone, noSpot}, nil, [][]corev1.NodeSelectorRequirement{want}},
		{"user's preferred terms kept", []metav1.LabelSelectorRequirement{zone, noSpot},
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: preferred}},
			[][]corev1.NodeSelectorRequirement{want}},
		{"ANDed into each user term", []metav1.LabelSelectorRequirement{zone, noSpot},
			&corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{userTerm("a"), userTerm("b")}}}},
			[][]corev1.NodeSelectorRequirement{append(userTerm("a").MatchExpressions, want...), append(userTerm("b").MatchExpressions, want...)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}}
			w.Spec.Resource.LabelSelectorExpressions = v1alpha1.LabelRequirements(tc.exprs)
			w.Spec.Scheduling.Affinity = tc.affinity
			before := tc.affinity.DeepCopy()
			pl, err := Placement(w)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]corev1.NodeSelectorRequirement
			if a := pl.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
				for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
					got = append(got, term.MatchExpressions)
				}
			}
			if !reflect.DeepEqual(got, tc.wantTerms) {
				t.Errorf("required terms %v, want %v", got, tc.wantTerms)
			}
			if tc.affinity != nil && tc.affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil &&
				!reflect.DeepEqual(pl.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution, preferred) {
				t.Errorf("preferred terms lost: %v", pl.Affinity.NodeAffinity)
			}
			if !reflect.DeepEqual(tc.affinity, before) {
				t.Errorf("spec.scheduling.affinity modified: %v", tc.affinity)
			}
		})
	}
}
