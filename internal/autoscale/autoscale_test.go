package autoscale

import (
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The count rules shared by workspaces and performers: without autoscaling the fixed count is
// written and desired; with it minReplicas at creation, then the live count as it is; the
// desired replicas are the HPA's once it has computed them, else the Deployment's, else
// minReplicas; an external autoscaler never reads the HPA's.
func TestReplicaRules(t *testing.T) {
	a := &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 5, Metric: &v1alpha1.AutoscalingMetric{CPUAverageValue: "1"}}
	ext := &v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 5, External: true}
	four := int32(4)
	for _, tc := range []struct {
		name   string
		got    int32
		expect int32
	}{
		{"fixed", *ReplicasToWrite(nil, 3, true, &four), 3},
		{"autoscaled, created", *ReplicasToWrite(a, 1, false, nil), 2},
		{"autoscaled, live kept", *ReplicasToWrite(a, 1, true, &four), 4},
		{"desired fixed", Desire(nil, 3, Object{}, 7, 4), 3},
		{"desired from the HPA", Desire(a, 1, Object{Exists: true, UpToDate: true}, 5, 4), 5},
		{"HPA not computed yet: the Deployment's", Desire(a, 1, Object{Exists: true}, 0, 4), 4},
		{"foreign HPA ignored", Desire(a, 1, Object{Exists: true, Foreign: true}, 5, 0), 2},
		{"external: the Deployment's", Desire(ext, 1, Object{Exists: true}, 5, 3), 3},
	} {
		if tc.got != tc.expect {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.expect)
		}
	}
	if err := Check(&v1alpha1.Autoscaling{MinReplicas: 3, MaxReplicas: 2, External: true}); err == nil {
		t.Error("max below min accepted")
	}
}
