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

// The readiness rule shared by workspaces and performers: an autoscaled object needs
// minReplicas (at least 1) Ready replicas, counting no more than the autoscaler asks for (the
// Deployment's spec.replicas; pods beyond it are going away: Serving) and, before it serves,
// only those sure to stay (Staying: each pod beyond the count may be a Ready one); whatever
// count it sets between the bounds, a Ready message says when it is moving (up while fewer than
// it are Ready, down while more pods than it remain), and nothing once it has settled or when
// it is unknown.
func TestReadinessRules(t *testing.T) {
	if n := Needed(&v1alpha1.Autoscaling{MinReplicas: 0, MaxReplicas: 3, External: true}); n != 1 {
		t.Errorf("Needed with minReplicas 0 = %d, want 1", n)
	}
	if n := Needed(&v1alpha1.Autoscaling{MinReplicas: 2, MaxReplicas: 3}); n != 2 {
		t.Errorf("Needed with minReplicas 2 = %d, want 2", n)
	}
	for _, tc := range []struct {
		name                   string
		target, current, ready int32
		// active are the pods not going (the pod cache's view of current)
		active           int32
		serving, staying int32
		scaling          string
	}{
		{"scaled down 4→1, one Ready, the other pods going", 1, 4, 1, 1, 1, 1, "; scaling down to 1 replica"},
		{"scaled down 4→1, four still Ready: one counts", 1, 4, 4, 4, 1, 1, "; scaling down to 1 replica"},
		{"scaled down 4→2, two Ready, the two not Ready not deleted yet", 2, 4, 2, 4, 2, 0, "; scaling down to 2 replicas"},
		{"scaling up 1→3, one Ready", 3, 3, 1, 3, 1, 1, "; scaling up to 3 replicas (1 Ready)"},
		{"scaling up, its pods not created yet", 3, 1, 1, 1, 1, 1, "; scaling up to 3 replicas (1 Ready)"},
		{"no Ready replica", 3, 3, 0, 3, 0, 0, "; scaling up to 3 replicas (0 Ready)"},
		{"settled", 3, 3, 3, 3, 3, 3, ""},
		{"a rollout's surge pod Ready beside the old one, the Deployment at 1", 1, 2, 2, 2, 1, 1, "; scaling down to 1 replica"},
		{"a rollout at 4: an old pod kept beside four new, three of them Ready", 4, 5, 4, 5, 4, 3, "; scaling down to 4 replicas"},
		{"a rollout at 4: an old pod kept, two new Ready, two waiting for room", 4, 5, 3, 5, 3, 2, "; scaling up to 4 replicas (3 Ready)"},
		{"target unknown: every Ready pod counts, nothing said", -1, 2, 2, 2, 2, 2, ""},
		{"scaled to zero", 0, 0, 0, 0, 0, 0, ""},
	} {
		if got := Serving(tc.ready, tc.target); got != tc.serving {
			t.Errorf("%s: Serving(%d, %d) = %d, want %d", tc.name, tc.ready, tc.target, got, tc.serving)
		}
		if got := Staying(tc.ready, tc.active, tc.target); got != tc.staying {
			t.Errorf("%s: Staying(%d, %d, %d) = %d, want %d", tc.name, tc.ready, tc.active, tc.target, got, tc.staying)
		}
		if got := Scaling(tc.target, tc.current, tc.ready); got != tc.scaling {
			t.Errorf("%s: Scaling(%d, %d, %d) = %q, want %q", tc.name, tc.target, tc.current, tc.ready, got, tc.scaling)
		}
	}
}
