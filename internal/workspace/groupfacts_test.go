package workspace

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// GroupFacts reads a multi-node group: a StatefulSet or a group Service controlled by someone
// else is a foreign workload (OwnershipConflict), never adopted.
func TestGroupFacts(t *testing.T) {
	const uid, other = types.UID("ws-uid"), types.UID("someone-else")
	yes := true
	owned := func(u types.UID) metav1.ObjectMeta {
		return metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{UID: u, Controller: &yes, Kind: "Workspace", Name: "w", APIVersion: "gantry.dev/v1alpha1"}},
			Annotations: map[string]string{v1alpha1.AnnotationSpecHash: "h1"}, Generation: 1}
	}
	two := int32(2)
	sts := func(u types.UID) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{ObjectMeta: owned(u), Spec: appsv1.StatefulSetSpec{Replicas: &two},
			Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, UpdatedReplicas: 2}}
	}
	svc := func(u types.UID) *corev1.Service { return &corev1.Service{ObjectMeta: owned(u)} }
	want := sts(uid)
	for _, tc := range []struct {
		name                       string
		have                       *appsv1.StatefulSet
		groupSvc                   *corev1.Service
		wantNil, foreign, upToDate bool
	}{
		{"absent", nil, nil, true, false, false},
		{"ours, with our group Service: up to date", sts(uid), svc(uid), false, false, true},
		{"ours, no group Service yet: not up to date", sts(uid), nil, false, false, false},
		{"a foreign StatefulSet", sts(other), svc(uid), false, true, false},
		{"ours, a foreign group Service", sts(uid), svc(other), false, true, false},
		{"ours, an unowned group Service", sts(uid), &corev1.Service{}, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := GroupFacts(tc.have, want, tc.groupSvc, uid)
			if tc.wantNil {
				if f != nil {
					t.Fatalf("%+v, want nil", *f)
				}
				return
			}
			if f == nil || f.Foreign != tc.foreign || f.UpToDate != tc.upToDate {
				t.Errorf("GroupFacts = %+v, want foreign=%v upToDate=%v", f, tc.foreign, tc.upToDate)
			}
		})
	}
}
