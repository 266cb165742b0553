package packageset

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestParseClearQuarantine(t *testing.T) {
	for in, want := range map[string]string{
		"":                               "[]",
		" , ,":                           "[]",
		"tool@1.1.0":                     "[tool@1.1.0]",
		" b@1 ,a@2#config-0badc0de, b@1": "[a@2#config-0badc0de b@1]",
	} {
		if got := fmt.Sprint(ParseClearQuarantine(in)); got != want {
			t.Errorf("ParseClearQuarantine(%q) = %s, want %s", in, got, want)
		}
	}
}

// testQuarantineLifted: after a rollback quarantined quarantine, lifting it
// (gantry.dev/clear-quarantine, SetFacts.ClearQuarantine) while the spec still asks for what
// failed makes the next flow try it again: the key leaves the decision's quarantine and the
// node records, the set is no longer Stalled, and once the cause is fixed (the Jobs succeed)
// every node converges on the target. Lifting while the rollback flow still runs is pending.
func testQuarantineLifted(t *testing.T, from, to Want, fresh bool, fail func(JobSpec) bool, quarantine string) {
	s := newSim(t, 2)
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	if !fresh {
		s.facts.Wants = []Want{from}
		s.run(v1alpha1.StatusComplete)
	}
	s.facts.Wants = []Want{to}
	s.fail = func(j JobSpec, _ int) bool { return fail(j) }
	var d Decision
	sawPending := false
	for i := 0; i < 60; i++ {
		// Asked while the rollback runs: pending, nothing lifted, the rollback goes on.
		s.facts.ClearQuarantine = nil
		for _, r := range s.nodes["node-0"].recPackages() {
			if r.Reverting && !r.Done {
				s.facts.ClearQuarantine = []string{quarantine}
			}
		}
		d = s.pass()
		if len(d.QuarantinePending) > 0 {
			sawPending = true
			if len(d.QuarantineLifted) != 0 {
				t.Fatalf("lifted %v while pending %v", d.QuarantineLifted, d.QuarantinePending)
			}
		}
		if len(d.QuarantineLifted) > 0 {
			t.Fatalf("lifted during the rollback at pass %d: %v", i, d.QuarantineLifted)
		}
		s.settle()
		if s.nodes["node-0"].rec.Rollout == v1alpha1.RolloutReverted && len(s.pendingJobs()) == 0 {
			break
		}
	}
	if !sawPending && (!fresh || to.Uninstall) { // a new package without uninstall is withdrawn at once
		t.Error("a lift asked during the rollback was never pending")
	}
	s.facts.ClearQuarantine = nil
	d = s.pass()
	if fmt.Sprint(d.Quarantined) != "["+quarantine+"]" {
		t.Fatalf("quarantined %v, want %s", d.Quarantined, quarantine)
	}
	s.facts.Quarantined = d.Quarantined

	// Lift with the cause fixed: the same target runs again and converges everywhere.
	s.fail = nil
	s.reset()
	s.facts.ClearQuarantine = []string{quarantine, "other@9.9.9"}
	d = s.pass()
	want := []string{quarantine, "other@9.9.9"}
	slices.Sort(want)
	if fmt.Sprint(d.QuarantineLifted) != fmt.Sprint(want) || len(d.QuarantinePending) != 0 || len(d.Quarantined) != 0 || len(d.Stalled) != 0 {
		t.Fatalf("lift: lifted %v pending %v quarantined %v stalled %v", d.QuarantineLifted, d.QuarantinePending, d.Quarantined, d.Stalled)
	}
	rec := s.nodes["node-0"].rec
	if rec.Withdrawn != nil {
		t.Errorf("withdrawn kept: %v", rec.Withdrawn)
	}
	if r := rec.Packages[to.Name]; r != nil && r.Reverting && r.Done {
		t.Errorf("reverted record kept its quarantine: %+v", r)
	}
	s.facts.ClearQuarantine, s.facts.Quarantined = nil, d.Quarantined // the controller drops the annotation
	s.settle()
	d = s.run(v1alpha1.StatusComplete)
	for _, n := range s.nodeNames() {
		r := s.nodes[n].rec.Packages[to.Name]
		if r == nil || r.Version != to.Version || fmt.Sprint(r.Config) != fmt.Sprint(to.Config) || s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("%s after the lift: %+v %s", n, r, s.nodes[n].rec.Rollout)
		}
	}
	if len(d.Quarantined) != 0 || len(d.Stalled) != 0 {
		t.Errorf("quarantined %v stalled %v", d.Quarantined, d.Stalled)
	}
}
