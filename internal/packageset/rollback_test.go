package packageset

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Policy rollback (seed 001 / NixFleet rollback-and-halt): a stage of the new version fails on
// the first node → that node is Failed while seed 000's downgrade flow runs (uninstall of the
// bad version, apply and config of the previous one), then Reverted; the version is
// quarantined, no other node starts it, the set is erroring and Stalled naming package and
// version; a new version clears it and the rollout proceeds everywhere.
func TestRollbackQuarantine(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	s.facts.Wants[0].Uninstall = true
	s.run(v1alpha1.StatusComplete)

	s.reset()
	bad := tool("1.1.0")
	bad.Uninstall = true
	s.facts.Wants = []Want{bad}
	s.fail = func(j JobSpec, _ int) bool { return j.Version == "1.1.0" && j.Stage == conf }
	var d Decision
	sawFailed := false
	for i := 0; i < 50; i++ {
		d = s.pass()
		if r := s.nodes["node-0"].rec; r.Rollout == v1alpha1.RolloutFailed {
			sawFailed = true
		}
		if s.nodes["node-0"].rec.Rollout == v1alpha1.RolloutReverted && len(s.pendingJobs()) == 0 {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	r := s.nodes["node-0"].rec
	if !sawFailed || r.Rollout != v1alpha1.RolloutReverted {
		t.Fatalf("node-0 rollout %s (saw Failed %v)", r.Rollout, sawFailed)
	}
	if got := s.stages("node-0", "tool"); got != "upgrade,config,uninstall,apply,config" {
		t.Errorf("node-0 stages %s", got)
	}
	if p := r.Packages["tool"]; p.Version != "1.0.0" || !p.Done || p.Image != "ghcr.io/x/tool:1.0.0" {
		t.Errorf("node-0 tool record %+v", p)
	}
	if s.ran["node-1"] != nil || s.ran["node-2"] != nil {
		t.Errorf("rollout not stopped: %v", s.ran)
	}
	if fmt.Sprint(d.Quarantined) != "[tool@1.1.0]" || fmt.Sprint(d.Stalled) != "[tool@1.1.0]" || d.Status != v1alpha1.StatusErroring {
		t.Fatalf("quarantined %v stalled %v status %s", d.Quarantined, d.Stalled, d.Status)
	}
	var stalled metav1.Condition
	for _, c := range d.Conditions {
		if c.Type == v1alpha1.ConditionStalled {
			stalled = c
		}
	}
	if stalled.Status != metav1.ConditionTrue || stalled.Reason != ReasonVersionQuarantined || !strings.Contains(stalled.Message, "tool@1.1.0") ||
		!strings.Contains(stalled.Message, "rolled back to 1.0.0") {
		t.Errorf("Stalled %+v", stalled)
	}

	// Quarantine survives the node records (it is in status): a fresh pass with the
	// quarantine only in the facts still stalls and starts nothing.
	s.facts.Quarantined = d.Quarantined
	for _, n := range s.nodes {
		for _, p := range n.rec.Packages {
			p.Reverting, p.RevertedFrom = false, ""
		}
	}
	d = s.pass()
	if len(s.pendingJobs()) != 0 || fmt.Sprint(d.Stalled) != "[tool@1.1.0]" || d.Status != v1alpha1.StatusErroring {
		t.Fatalf("quarantine from status: jobs %v stalled %v status %s", s.pendingJobs(), d.Stalled, d.Status)
	}

	// A new version: Stalled ends, every node upgrades.
	s.reset()
	good := tool("1.2.0")
	good.Uninstall = true
	s.facts.Wants = []Want{good}
	d = s.run(v1alpha1.StatusComplete)
	for _, n := range s.nodeNames() {
		if got := s.stages(n, "tool"); got != "upgrade,config" {
			t.Errorf("%s stages %s", n, got)
		}
		if s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged {
			t.Errorf("%s rollout %s", n, s.nodes[n].rec.Rollout)
		}
	}
	if len(d.Stalled) != 0 || fmt.Sprint(d.Quarantined) != "[tool@1.1.0]" {
		t.Errorf("stalled %v quarantined %v", d.Stalled, d.Quarantined)
	}
	// Asking for the quarantined version again stalls at once, nothing runs.
	s.reset()
	s.facts.Wants = []Want{bad}
	d = s.pass()
	if len(s.pendingJobs()) != 0 || d.Status != v1alpha1.StatusErroring || len(d.Stalled) != 1 {
		t.Errorf("back to quarantined: jobs %v status %s stalled %v", s.pendingJobs(), d.Status, d.Stalled)
	}
}

// Rollback transitions in isolation (policy rollback, seed 001 Failed → Reverted): every flow
// with something to return to reverts, the node is Reverted, what failed is quarantined and
// the other node never starts it; the rollback itself never leaves a cordon behind.
//   - version up, no uninstall: apply of the previous version;
//   - a failed interrupt of the new version: uninstall, apply of the previous one with its
//     interrupt;
//   - a new package (nothing to return to): uninstall when enabled, then the record is
//     dropped (Withdrawn); without uninstall nothing runs;
//   - a config-only change: a config flow back to the previous config (with the config
//     interrupt of the changed key when it has one); the config, not the version, is
//     quarantined ("<pkg>@<version>#config-<hash>");
//   - a downgrade whose uninstall of the installed version fails: the installed version is
//     applied again (apply → config → interrupt → post-interrupt), the target is quarantined.
func TestRollbackRows(t *testing.T) {
	withConfig := func(w Want, mode string, interrupt bool) Want {
		w.Config = ConfigHashes(map[string]string{"mode": mode})
		w.Spec = []byte(`{"mode":"` + mode + `"}`)
		if interrupt {
			w.ConfigInterrupts = map[string]v1alpha1.Interrupt{"mode": {Type: v1alpha1.InterruptService, Services: []string{"svc"}}}
		}
		return w
	}
	withUninstall := func(w Want) Want { w.Uninstall = true; return w }
	badConfig := func(j JobSpec) bool { return string(j.Spec) == `{"mode":"bad"}` }
	cases := []struct {
		name       string
		from, to   Want
		fresh      bool
		fail       func(j JobSpec) bool
		stages     string
		rollout    v1alpha1.RolloutState
		version    string // the package's recorded version after the rollback; "" no record
		quarantine string
	}{
		{"no uninstall: apply previous", tool("1.0.0"), tool("1.1.0"), false, func(j JobSpec) bool { return j.Version == "1.1.0" && j.Stage == conf },
			"upgrade,config,apply,config", v1alpha1.RolloutReverted, "1.0.0", "tool@1.1.0"},
		{"interrupt fails: reverts with previous interrupt", driver("1.0.0"), driver("1.1.0"), false, func(j JobSpec) bool { return j.Version == "1.1.0" && j.Stage == intr },
			"upgrade,config,interrupt,uninstall,apply,config,interrupt,post-interrupt", v1alpha1.RolloutReverted, "1.0.0", "driver@1.1.0"},
		{"new package, no uninstall: dropped", Want{}, tool("1.1.0"), true, func(j JobSpec) bool { return j.Version == "1.1.0" && j.Stage == conf },
			"apply,config", v1alpha1.RolloutReverted, "", "tool@1.1.0"},
		{"new package, uninstall: uninstalled and dropped", Want{}, withUninstall(tool("1.1.0")), true, func(j JobSpec) bool { return j.Version == "1.1.0" && j.Stage == conf },
			"apply,config,uninstall", v1alpha1.RolloutReverted, "", "tool@1.1.0"},
		{"new package with interrupt fails at post-interrupt: uninstalled", Want{}, driver("1.1.0"), true, func(j JobSpec) bool { return j.Version == "1.1.0" && j.Stage == post },
			"apply,config,interrupt,post-interrupt,uninstall", v1alpha1.RolloutReverted, "", "driver@1.1.0"},
		{"config change: previous config", withConfig(tool("1.0.0"), "good", false), withConfig(tool("1.0.0"), "bad", false), false, badConfig,
			"config,config", v1alpha1.RolloutReverted, "1.0.0", ConfigQuarantine("tool", "1.0.0", ConfigHashes(map[string]string{"mode": "bad"}))},
		{"config change with config interrupt: previous config and its interrupt", withConfig(tool("1.0.0"), "good", true), withConfig(tool("1.0.0"), "bad", true), false,
			func(j JobSpec) bool { return badConfig(j) && j.Stage == post },
			"config,interrupt,post-interrupt,config,interrupt,post-interrupt", v1alpha1.RolloutReverted, "1.0.0",
			ConfigQuarantine("tool", "1.0.0", ConfigHashes(map[string]string{"mode": "bad"}))},
		{"downgrade, uninstall of the installed version fails: re-applied", driver("2.0.0"), driver("1.0.0"), false, func(j JobSpec) bool { return j.Version == "2.0.0" && j.Stage == unin },
			"uninstall,apply,config,interrupt,post-interrupt", v1alpha1.RolloutReverted, "2.0.0", "driver@1.0.0"},
		{"downgrade, apply of the target fails: back to the installed version", driver("2.0.0"), driver("1.0.0"), false, func(j JobSpec) bool { return j.Version == "1.0.0" && j.Stage == appl },
			"uninstall,apply,uninstall,apply,config,interrupt,post-interrupt", v1alpha1.RolloutReverted, "2.0.0", "driver@1.0.0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, 2)
			s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
			if !c.fresh {
				s.facts.Wants = []Want{c.from}
				s.run(v1alpha1.StatusComplete)
				s.reset()
			}
			s.facts.Wants = []Want{c.to}
			s.fail = func(j JobSpec, _ int) bool { return c.fail(j) }
			var d Decision
			for i := 0; i < 60; i++ {
				d = s.pass()
				s.settle() // the clock stands still: no backoff elapses, no retry
			}
			if got := s.stages("node-0", c.to.Name); got != c.stages {
				t.Errorf("stages %s, want %s", got, c.stages)
			}
			rec := s.nodes["node-0"].rec
			if got := rec.Rollout; got != c.rollout {
				t.Errorf("rollout %s, want %s", got, c.rollout)
			}
			r := rec.Packages[c.to.Name]
			switch {
			case c.version == "" && r != nil:
				t.Errorf("record kept: %+v", r)
			case c.version == "" && rec.Withdrawn[c.to.Name] != c.to.Version:
				t.Errorf("withdrawn %v", rec.Withdrawn)
			case c.version != "" && (r == nil || r.Version != c.version || !r.Done || r.State != v1alpha1.StateComplete || !r.Reverting):
				t.Errorf("record %+v, want reverted to %s", r, c.version)
			case c.version != "" && c.from.Config != nil && fmt.Sprint(r.Config) != fmt.Sprint(c.from.Config):
				t.Errorf("config %v, want %v", r.Config, c.from.Config)
			}
			if fmt.Sprint(d.Quarantined) != "["+c.quarantine+"]" || fmt.Sprint(d.Stalled) != "["+c.quarantine+"]" || d.Status != v1alpha1.StatusErroring {
				t.Errorf("quarantined %v stalled %v status %s, want %s", d.Quarantined, d.Stalled, d.Status, c.quarantine)
			}
			var stalled metav1.Condition
			for _, cond := range d.Conditions {
				if cond.Type == v1alpha1.ConditionStalled {
					stalled = cond
				}
			}
			if stalled.Status != metav1.ConditionTrue || stalled.Reason != ReasonVersionQuarantined || !strings.Contains(stalled.Message, c.quarantine) ||
				!strings.Contains(stalled.Message, "node node-0 package "+c.to.Name) || !strings.Contains(stalled.Message, "rolled back") {
				t.Errorf("Stalled %+v", stalled)
			}
			if strings.Contains(c.quarantine, "#config-") != strings.Contains(stalled.Message, "change the config") {
				t.Errorf("Stalled does not say what to change: %q", stalled.Message)
			}
			if s.ran["node-1"] != nil {
				t.Errorf("node-1 started: %v", s.ran["node-1"])
			}
			if s.nodes["node-0"].cordoned {
				t.Error("cordon left behind")
			}
			// The quarantine is kept by the node record alone (a lost status write).
			f := s.facts
			f.Now, f.Quarantined = s.now, nil
			for _, name := range s.nodeNames() {
				f.Nodes = append(f.Nodes, NodeFacts{Name: name, Selected: true, Record: s.nodes[name].rec.Clone(), Jobs: s.nodes[name].jobs})
			}
			if d2, err := Plan(f); err != nil || fmt.Sprint(d2.Quarantined) != "["+c.quarantine+"]" || len(d2.Nodes[1].Jobs) > 0 {
				t.Errorf("from the records alone: quarantined %v, node-1 jobs %v, %v", d2.Quarantined, d2.Nodes[1].Jobs, err)
			}

			// A change of what failed ends the stall: the rollout proceeds on both nodes.
			s.reset()
			s.facts.Quarantined = d.Quarantined
			next := c.to
			if c.to.Config != nil && c.to.Version == c.from.Version {
				next = withConfig(c.to, "fixed", c.to.ConfigInterrupts != nil)
			} else {
				next.Version, next.Image = "3.0.0", "img:3.0.0"
			}
			s.facts.Wants = []Want{next}
			d = s.run(v1alpha1.StatusComplete)
			for _, n := range s.nodeNames() {
				r := s.nodes[n].rec.Packages[next.Name]
				if r == nil || r.Version != next.Version || fmt.Sprint(r.Config) != fmt.Sprint(next.Config) || s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged ||
					s.nodes[n].rec.Withdrawn != nil {
					t.Errorf("%s after the fix: %+v %s %v", n, r, s.nodes[n].rec.Rollout, s.nodes[n].rec.Withdrawn)
				}
			}
			if c.version == "" && s.stages("node-0", next.Name) != s.stages("node-1", next.Name) {
				t.Errorf("withdrawn package not installed anew: node-0 %s, node-1 %s", s.stages("node-0", next.Name), s.stages("node-1", next.Name))
			}
			if len(d.Stalled) != 0 {
				t.Errorf("still stalled %v", d.Stalled)
			}
		})
		t.Run(c.name+"/quarantine lifted", func(t *testing.T) {
			testQuarantineLifted(t, c.from, c.to, c.fresh, c.fail, c.quarantine)
		})
	}
}

// Under halt, the same failures never roll back: the node stays Failed and retries.
func TestHaltNeverReverts(t *testing.T) {
	s := newSim(t, 1)
	s.facts.OnHealthFailure = v1alpha1.HealthFailureHalt
	s.facts.Wants = []Want{driver("1.0.0")}
	s.fail = func(j JobSpec, _ int) bool { return j.Stage == conf }
	for i := 0; i < 10; i++ {
		s.pass()
		s.settle()
	}
	if r := s.nodes["node-0"].rec; r.Rollout != v1alpha1.RolloutFailed || r.Packages["driver"] == nil || r.Withdrawn != nil {
		t.Errorf("halt: %+v", r)
	}
}

// A downgrade whose uninstall fails while the spec has moved on to a higher version (found by
// FuzzPlan, testdata f21c5e839cd747b8) is no failed downgrade: nothing is quarantined, the
// uninstall is retried (halt) and the flow goes on to the version asked for.
func TestDowngradeUninstallSpecMovedUp(t *testing.T) {
	s := newSim(t, 1, driver("2.0.0"))
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	s.run(v1alpha1.StatusComplete)
	s.reset()
	s.facts.Wants = []Want{driver("1.0.0")}
	failing := true
	s.fail = func(j JobSpec, _ int) bool { return failing && j.Stage == unin }
	s.pass() // uninstall of 2.0.0 created
	s.settle()
	s.facts.Wants = []Want{driver("3.0.0")}
	d := s.pass() // it failed; the spec now asks for 3.0.0
	if r := s.nodes["node-0"].rec; r.Rollout != v1alpha1.RolloutFailed || r.Packages["driver"].Reverting || len(d.Quarantined) != 0 {
		t.Fatalf("rollout %s record %+v quarantined %v", r.Rollout, r.Packages["driver"], d.Quarantined)
	}
	failing = false
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "uninstall,uninstall,apply,config,interrupt,post-interrupt" {
		t.Errorf("stages %s", got)
	}
	if r := s.nodes["node-0"].rec.Packages["driver"]; r.Version != "3.0.0" {
		t.Errorf("version %s", r.Version)
	}
}
