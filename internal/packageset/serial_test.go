package packageset

import (
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// maxUnfinished runs the sim to want and returns the most package flows unfinished (records
// not Done) at once on one node after any pass, and the package whose flow started first on
// node-0.
func maxUnfinished(t *testing.T, s *sim, want Status) (most int, first string) {
	t.Helper()
	for i := 0; i < 400; i++ {
		d := s.pass()
		for name, n := range s.nodes {
			c := 0
			for pkg, r := range n.recPackages() {
				if !r.Done {
					c++
					if first == "" && name == "node-0" {
						first = pkg
					}
				}
			}
			most = max(most, c)
		}
		if d.Status == want && len(s.pendingJobs()) == 0 {
			return most, first
		}
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	t.Fatalf("status not %s after 400 passes", want)
	return most, first
}

// TestSerial: spec.serial (Skyhook's serial) runs one package flow at a time on a node, in the
// user's order, for installs and for uninstalls; without it independent packages run side by
// side (the rows without serial prove the check can fail).
func TestSerial(t *testing.T) {
	for _, tc := range []struct {
		name   string
		serial bool
		// remove: after the install, the spec drops both packages (driver uninstalls, tool
		// is forgotten) with a third package added, so two flows could overlap again.
		remove   bool
		wantMost int
	}{
		{"parallel install", false, false, 2},
		{"serial install", true, false, 1},
		{"parallel change", false, true, 2},
		{"serial change", true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSim(t, 2, tool("1.0.0"), driver("1.0.0"))
			s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(2))}
			s.facts.Serial = tc.serial
			most, first := maxUnfinished(t, s, v1alpha1.StatusComplete)
			if tc.remove {
				s.reset()
				extra := tool("2.0.0")
				extra.Name = "agent"
				s.facts.Wants = []Want{extra}
				most, _ = maxUnfinished(t, s, v1alpha1.StatusComplete)
				// The driver's reboot runs after its uninstall (NodeWright's uninstall-interrupt).
				if got := s.stages("node-0", "driver") + "|" + s.stages("node-0", "agent"); got != "uninstall,uninstall-interrupt|apply,config" {
					t.Errorf("stages %s", got)
				}
			} else if tc.serial && first != "tool" {
				t.Errorf("first flow %q, want tool (the user's order)", first)
			}
			if most != tc.wantMost {
				t.Errorf("most flows unfinished at once on a node %d, want %d", most, tc.wantMost)
			}
			for _, n := range s.nodeNames() {
				if s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged {
					t.Errorf("%s rollout %s", n, s.nodes[n].rec.Rollout)
				}
			}
		})
	}
}

// TestSerialBusy: which records hold a serial set's next flow on a node.
func TestSerialBusy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		serial bool
		recs   map[string]*PackageRecord
		want   bool
	}{
		{"not serial", false, map[string]*PackageRecord{"a": {State: v1alpha1.StateInProgress}}, false},
		{"no other record", true, map[string]*PackageRecord{}, false},
		{"own record unfinished", true, map[string]*PackageRecord{"b": {State: v1alpha1.StateErroring}}, false},
		{"other in progress", true, map[string]*PackageRecord{"a": {State: v1alpha1.StateInProgress}}, true},
		{"other erroring", true, map[string]*PackageRecord{"a": {State: v1alpha1.StateErroring}}, true},
		{"other skipped for a merged interrupt", true, map[string]*PackageRecord{"a": {State: v1alpha1.StateSkipped}}, true},
		{"other done", true, map[string]*PackageRecord{"a": {State: v1alpha1.StateComplete, Done: true}}, false},
		{"other done though erroring (abandoned)", true, map[string]*PackageRecord{"a": {State: v1alpha1.StateErroring, Done: true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := nodePass{f: &SetFacts{Serial: tc.serial}, rec: &NodeRecord{Packages: tc.recs}}
			if got := p.serialBusy("b"); got != tc.want {
				t.Errorf("serialBusy = %v, want %v", got, tc.want)
			}
		})
	}
}
