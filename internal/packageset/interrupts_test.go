package packageset

import (
	"fmt"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Two packages with interrupts on a node merge into one interrupt Job (reboot wins); the other
// is skipped, then promoted to complete, and both run post-interrupt.
func TestMergedInterrupt(t *testing.T) {
	fw := Want{Name: "firmware", Version: "2.0.0", Image: "fw", Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"fm"}}, StageTimeout: DefaultStageTimeout}
	s := newSim(t, 1, fw, driver("1.0.0"))
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver") + "|" + s.stages("node-0", "firmware"); got != "apply,config,interrupt,post-interrupt|apply,config,post-interrupt" {
		t.Errorf("merged stages %s", got)
	}
	for name, r := range s.nodes["node-0"].rec.Packages {
		if r.State != v1alpha1.StateComplete || r.Stage != post {
			t.Errorf("%s = %s/%s", name, r.Stage, r.State)
		}
	}
}

// TestDrainMatters: Drained is read only while a package's interrupt is ahead and none runs.
func TestDrainMatters(t *testing.T) {
	reboot := &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	rec := func(ps ...*PackageRecord) *NodeRecord {
		r := &NodeRecord{Packages: map[string]*PackageRecord{}}
		for i, p := range ps {
			r.Packages[fmt.Sprint("p", i)] = p
		}
		return r
	}
	for _, c := range []struct {
		name string
		rec  *NodeRecord
		want bool
	}{
		{"no record", nil, false},
		{"no interrupt", rec(&PackageRecord{Stage: v1alpha1.StageConfig, State: v1alpha1.StateComplete}), false},
		{"interrupt ahead", rec(&PackageRecord{Stage: v1alpha1.StageConfig, State: v1alpha1.StateComplete, Interrupt: reboot}), true},
		{"config running", rec(&PackageRecord{Stage: v1alpha1.StageConfig, State: v1alpha1.StateInProgress, Interrupt: reboot}), true},
		{"interrupt running", rec(&PackageRecord{Stage: v1alpha1.StageInterrupt, State: v1alpha1.StateInProgress, Interrupt: reboot},
			&PackageRecord{Stage: v1alpha1.StageConfig, State: v1alpha1.StateComplete, Interrupt: reboot}), false},
		{"post-interrupt", rec(&PackageRecord{Stage: v1alpha1.StagePostInterrupt, State: v1alpha1.StateInProgress, Interrupt: reboot}), false},
		{"done", rec(&PackageRecord{Stage: v1alpha1.StagePostInterrupt, State: v1alpha1.StateComplete, Interrupt: reboot, Done: true}), false},
	} {
		if got := DrainMatters(c.rec); got != c.want {
			t.Errorf("%s: DrainMatters %v, want %v", c.name, got, c.want)
		}
	}
}
