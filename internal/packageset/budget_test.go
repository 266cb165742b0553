package packageset

import (
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestBudget(t *testing.T) {
	p := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		b     *v1alpha1.InterruptionBudget
		nodes int
		want  int
	}{
		{nil, 5, 5}, {nil, 0, 1}, {&v1alpha1.InterruptionBudget{Count: p(2)}, 5, 2}, {&v1alpha1.InterruptionBudget{Percent: p(10)}, 5, 1},
		{&v1alpha1.InterruptionBudget{Percent: p(10)}, 1000, 100}, {&v1alpha1.InterruptionBudget{Percent: p(100)}, 7, 7},
	} {
		if got := Budget(tc.b, tc.nodes); got != tc.want {
			t.Errorf("Budget(%v, %d) = %d, want %d", tc.b, tc.nodes, got, tc.want)
		}
	}
}

// Holds: blocked, disabled, paused, waiting.
func TestHolds(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	s.nodes["node-1"].blocked = "nvidia.com/gpu=present:NoSchedule"
	s.facts.Budget = &v1alpha1.InterruptionBudget{Percent: ptr(int32(100))}
	d := s.run(v1alpha1.StatusBlocked)
	if d.Conditions[2].Status != "True" || !strings.Contains(d.Conditions[3].Message, "node-1: nvidia.com/gpu") || d.CompleteNodes != "1/2" {
		t.Errorf("blocked conditions %+v complete %s", d.Conditions, d.CompleteNodes)
	}
	s.nodes["node-1"].blocked = ""
	s.nodes["node-1"].gate = GateWaiting
	if d = s.run(v1alpha1.StatusWaiting); s.ran["node-1"] != nil {
		t.Error("waiting node ran stages")
	}
	s.nodes["node-1"].gate = GateOpen
	s.facts.Paused = true
	if d = s.run(v1alpha1.StatusPaused); s.ran["node-1"] != nil {
		t.Error("paused set ran stages")
	}
	s.facts.Paused, s.facts.Disabled = false, true
	s.run(v1alpha1.StatusDisabled)
	s.facts.Disabled = false
	s.run(v1alpha1.StatusComplete)
}
