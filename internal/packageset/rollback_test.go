package packageset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Policy rollback (NixFleet rollback-and-halt): a stage of the new version fails on
// the first node → that node is Failed while Skyhook's downgrade flow runs (uninstall of the
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

// Rollback transitions in isolation (policy rollback, NixFleet Failed → Reverted): every flow
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
	withConfig := withModeConfig
	withUninstall := func(w Want) Want { w.Uninstall = true; return w }
	badConfig := func(j JobSpec) bool { return string(j.Spec) == `{"mode":"bad"}` }
	cases := []rollbackRow{
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
			c.checkRolledBack(t, s)
			c.checkQuarantined(t, d)
			// The quarantine is kept by the node record alone (a lost status write).
			c.checkQuarantineInRecords(t, s)
			// A change of what failed ends the stall: the rollout proceeds on both nodes.
			c.checkFixEndsStall(t, s, d.Quarantined)
		})
		t.Run(c.name+"/quarantine lifted", func(t *testing.T) {
			testQuarantineLifted(t, c.from, c.to, c.fresh, c.fail, c.quarantine)
		})
	}
}

// rollbackRow is one row of TestRollbackRows: from is what node-0 ran (unless fresh), to the
// spec that fails by fail.
type rollbackRow struct {
	name       string
	from, to   Want
	fresh      bool
	fail       func(j JobSpec) bool
	stages     string
	rollout    v1alpha1.RolloutState
	version    string // the package's recorded version after the rollback; "" no record
	quarantine string
}

// withModeConfig is w with the config mode=mode (and its spec), the config key mode
// interrupting service svc when interrupt.
func withModeConfig(w Want, mode string, interrupt bool) Want {
	w.Config = ConfigHashes(map[string]string{"mode": mode})
	w.Spec = []byte(`{"mode":"` + mode + `"}`)
	if interrupt {
		w.ConfigInterrupts = map[string]v1alpha1.Interrupt{"mode": {Type: v1alpha1.InterruptService, Services: []string{"svc"}}}
	}
	return w
}

// checkRolledBack: node-0 ran the row's stages and its record is rolled back (or withdrawn),
// node-1 never started, no cordon is left.
func (c rollbackRow) checkRolledBack(t *testing.T, s *sim) {
	t.Helper()
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
	if s.ran["node-1"] != nil {
		t.Errorf("node-1 started: %v", s.ran["node-1"])
	}
	if s.nodes["node-0"].cordoned {
		t.Error("cordon left behind")
	}
}

// checkQuarantined: d quarantines and stalls on the row's key, and Stalled says what rolled
// back and what to change.
func (c rollbackRow) checkQuarantined(t *testing.T, d Decision) {
	t.Helper()
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
}

// checkQuarantineInRecords: planned from the node records alone (no quarantine in status), the
// quarantine is the same and node-1 gets no Job.
func (c rollbackRow) checkQuarantineInRecords(t *testing.T, s *sim) {
	t.Helper()
	f := s.facts
	f.Now, f.Quarantined = s.now, nil
	for _, name := range s.nodeNames() {
		f.Nodes = append(f.Nodes, NodeFacts{Name: name, Selected: true, Record: s.nodes[name].rec.Clone(), Jobs: s.nodes[name].jobs})
	}
	if d2, err := Plan(f); err != nil || fmt.Sprint(d2.Quarantined) != "["+c.quarantine+"]" || len(d2.Nodes[1].Jobs) > 0 {
		t.Errorf("from the records alone: quarantined %v, node-1 jobs %v, %v", d2.Quarantined, d2.Nodes[1].Jobs, err)
	}
}

// checkFixEndsStall: with quarantined in status, a spec that changes what failed (the config,
// or the version) converges on both nodes and ends the stall.
func (c rollbackRow) checkFixEndsStall(t *testing.T, s *sim, quarantined []string) {
	t.Helper()
	s.reset()
	s.facts.Quarantined = quarantined
	next := c.to
	if c.to.Config != nil && c.to.Version == c.from.Version {
		next = withModeConfig(c.to, "fixed", c.to.ConfigInterrupts != nil)
	} else {
		next.Version, next.Image = "3.0.0", "img:3.0.0"
	}
	s.facts.Wants = []Want{next}
	d := s.run(v1alpha1.StatusComplete)
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

// revertOf: how a failing flow rolls back under policy rollback, row by row in its order;
// revertNone (halt: retried with backoff) for every flow it does not roll back.
func TestRevertOf(t *testing.T) {
	good, bad := map[string]string{"mode": "good"}, map[string]string{"mode": "bad"}
	upgrade := func(mod func(*PackageRecord)) *PackageRecord { // 1.0.0 → 1.1.0 failing at config
		r := &PackageRecord{Version: "1.1.0", Stage: conf, State: v1alpha1.StateErroring, Flow: 2, Prev: &Applied{Version: "1.0.0"}}
		if mod != nil {
			mod(r)
		}
		return r
	}
	downgrade := func(r *PackageRecord) { // 2.0.0 → 1.0.0: the uninstall of 2.0.0 failing
		r.Version, r.Stage, r.Uninstall, r.Prev = "2.0.0", unin, true, &Applied{Version: "2.0.0", Uninstall: true}
	}
	for _, tc := range []struct {
		name    string
		policy  v1alpha1.HealthFailurePolicy
		want    string // the wanted version of tool; "" not wanted
		r       *PackageRecord
		hold    Status
		noGrant bool
		kind    revertKind
	}{
		{"policy halt (default)", "", "1.1.0", upgrade(nil), "", false, revertNone},
		{"policy halt", v1alpha1.HealthFailureHalt, "1.1.0", upgrade(nil), "", false, revertNone},
		{"upgrade fails: back to the previous version", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(nil), "", false, revertVersion},
		{"an interrupt of the upgrade fails", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(func(r *PackageRecord) { r.Stage = intr }), "", false, revertVersion},
		{"a version change with a config change: the version", v1alpha1.HealthFailureRollback, "1.1.0",
			upgrade(func(r *PackageRecord) { r.Config, r.Prev.Config = bad, good }), "", false, revertVersion},
		{"in progress: nothing failed", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(func(r *PackageRecord) { r.State = v1alpha1.StateInProgress }), "", false, revertNone},
		{"complete: nothing failed", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(func(r *PackageRecord) { r.State = v1alpha1.StateComplete }), "", false, revertNone},
		{"the rollback flow fails itself: retried", v1alpha1.HealthFailureRollback, "1.1.0",
			upgrade(func(r *PackageRecord) { r.Reverting, r.RevertedFrom = true, "1.2.0" }), "", false, revertNone},
		{"a removal's uninstall fails: retried", v1alpha1.HealthFailureRollback, "", upgrade(func(r *PackageRecord) { r.Removing, r.Stage = true, unin }), "", false, revertNone},
		{"held (paused): no rollback starts", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(nil), v1alpha1.StatusPaused, false, revertNone},
		{"no budget grant: no rollback starts", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(nil), "", true, revertNone},
		{"new package: withdrawn", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(func(r *PackageRecord) { r.New, r.Prev = true, nil }), "", false, revertNew},
		{"new package failing at post-interrupt: withdrawn", v1alpha1.HealthFailureRollback, "1.1.0",
			upgrade(func(r *PackageRecord) { r.New, r.Prev, r.Stage = true, nil, post }), "", false, revertNew},
		{"nothing recorded to return to (an older record): retried", v1alpha1.HealthFailureRollback, "1.1.0", upgrade(func(r *PackageRecord) { r.Prev = nil }), "", false, revertNone},
		{"re-apply of the same version and config: retried", v1alpha1.HealthFailureRollback, "1.1.0",
			upgrade(func(r *PackageRecord) { r.Stage, r.Prev = appl, &Applied{Version: "1.1.0"} }), "", false, revertNone},
		{"config-only change fails: back to the previous config", v1alpha1.HealthFailureRollback, "1.0.0",
			upgrade(func(r *PackageRecord) {
				r.Version, r.Config, r.Prev = "1.0.0", bad, &Applied{Version: "1.0.0", Config: good}
			}), "", false, revertConfig},
		{"downgrade's uninstall fails: the installed version again", v1alpha1.HealthFailureRollback, "1.0.0", upgrade(downgrade), "", false, revertDowngrade},
		{"downgrade's uninstall fails, the spec moved up: retried", v1alpha1.HealthFailureRollback, "3.0.0", upgrade(downgrade), "", false, revertNone},
		{"downgrade's uninstall fails, the spec asks for the installed version: retried", v1alpha1.HealthFailureRollback, "2.0.0", upgrade(downgrade), "", false, revertNone},
		{"downgrade's uninstall fails, the package left the spec: retried", v1alpha1.HealthFailureRollback, "", upgrade(downgrade), "", false, revertNone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var wants []Want
			if tc.want != "" {
				wants = []Want{tool(tc.want)}
			}
			p := newNodePass(&SetFacts{Name: "s", OnHealthFailure: tc.policy}, NodeFacts{Name: "node-0", Selected: true}, wants, new(int), map[string]bool{})
			p.granted, p.hold = !tc.noGrant, tc.hold
			if got := p.revertOf("tool", tc.r); got != tc.kind {
				t.Errorf("revertOf = %d, want %d", got, tc.kind)
			}
		})
	}
}

// revert, kind by kind: the flow that replaces the failed one (what it runs first, with which
// version, image and spec, what it reverted from), the Job it creates, the quarantine, and
// what it adds to the package's failure (and only to that package's).
func TestRevert(t *testing.T) {
	good, bad := map[string]string{"mode": "good"}, map[string]string{"mode": "bad"}
	reboot := &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	upgrade := func(uninstall bool) *PackageRecord {
		return &PackageRecord{Version: "1.1.0", Image: "img:1.1.0", Stage: conf, State: v1alpha1.StateErroring, Flow: 4, Uninstall: uninstall, Spec: []byte("s-1.1.0"),
			Prev: &Applied{Version: "1.0.0", Image: "img:1.0.0", Interrupt: reboot, Spec: []byte("s-1.0.0")}}
	}
	newPkg := func(uninstall bool) *PackageRecord {
		return &PackageRecord{Version: "1.1.0", Image: "img:1.1.0", Stage: conf, State: v1alpha1.StateErroring, Flow: 4, New: true, Uninstall: uninstall, Spec: []byte("s-1.1.0")}
	}
	configChange := &PackageRecord{Version: "1.0.0", Image: "img:1.0.0", Config: bad, Stage: conf, State: v1alpha1.StateErroring, Flow: 4, Spec: []byte("s-bad"),
		Prev: &Applied{Version: "1.0.0", Image: "img:1.0.0", Config: good, Spec: []byte("s-good")}}
	downgrade := &PackageRecord{Version: "2.0.0", Image: "img:2.0.0", Stage: unin, State: v1alpha1.StateErroring, Flow: 4, Uninstall: true, Interrupt: reboot, Spec: []byte("s-2.0.0"),
		Prev: &Applied{Version: "2.0.0", Image: "img:2.0.0", Uninstall: true, Interrupt: reboot, Spec: []byte("s-2.0.0")}}
	type flow struct {
		stage                              Stage
		version, image, spec, from, config string
		uninstall                          bool
		prev, interrupt                    string
	}
	for _, tc := range []struct {
		name       string
		r          *PackageRecord
		kind       revertKind
		want       Want
		flow       *flow // nil: no record left
		quarantine string
		note       string
		withdrawn  string
		err        bool
	}{
		{"version, no uninstall: apply of the previous version", upgrade(false), revertVersion, tool("1.1.0"),
			&flow{stage: appl, version: "1.0.0", image: "img:1.0.0", spec: "s-1.0.0", from: "1.1.0", interrupt: "reboot"},
			"tool@1.1.0", "rolling back to 1.0.0", "", false},
		{"version, uninstall: uninstall of the failed version, with its spec", upgrade(true), revertVersion, tool("1.1.0"),
			&flow{stage: unin, version: "1.1.0", image: "img:1.1.0", spec: "s-1.1.0", from: "1.1.0", uninstall: true, prev: "1.0.0", interrupt: "reboot"},
			"tool@1.1.0", "rolling back to 1.0.0", "", false},
		{"new package, no uninstall: dropped at once", newPkg(false), revertNew, tool("1.1.0"), nil,
			"tool@1.1.0", "removing the new package (uninstall not enabled: nothing to run)", "1.1.0", false},
		{"new package, uninstall: uninstalled", newPkg(true), revertNew, tool("1.1.0"),
			&flow{stage: unin, version: "1.1.0", image: "img:1.1.0", spec: "s-1.1.0", from: "1.1.0", uninstall: true},
			"tool@1.1.0", "uninstalling the new package", "", false},
		{"config: the previous config, no config interrupt", configChange, revertConfig, tool("1.0.0"),
			&flow{stage: conf, version: "1.0.0", image: "img:1.0.0", spec: "s-good", from: "1.0.0", config: ConfigKey(bad)},
			ConfigQuarantine("tool", "1.0.0", bad), "rolling back to the previous config", "", false},
		{"config: the previous config with the changed key's interrupt", configChange, revertConfig,
			func() Want {
				w := tool("1.0.0")
				w.ConfigInterrupts = map[string]v1alpha1.Interrupt{"mode": {Type: v1alpha1.InterruptService, Services: []string{"svc"}}}
				return w
			}(),
			&flow{stage: conf, version: "1.0.0", image: "img:1.0.0", spec: "s-good", from: "1.0.0", config: ConfigKey(bad), interrupt: "service"},
			ConfigQuarantine("tool", "1.0.0", bad), "rolling back to the previous config", "", false},
		{"downgrade's uninstall: the installed version applied again, the target quarantined", downgrade, revertDowngrade, tool("1.0.0"),
			&flow{stage: appl, version: "2.0.0", image: "img:2.0.0", spec: "s-2.0.0", from: "1.0.0", uninstall: true, interrupt: "reboot"},
			"tool@1.0.0", "the downgrade to 1.0.0 needs it: re-applying 2.0.0", "", false},
		{"no rollback: an error, nothing changes", upgrade(false), revertNone, tool("1.1.0"),
			&flow{stage: conf, version: "1.1.0", image: "img:1.1.0", spec: "s-1.1.0", prev: "1.0.0"}, "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newNodePass(&SetFacts{Name: "s", Now: time.Unix(1_700_000_000, 0), OnHealthFailure: v1alpha1.HealthFailureRollback},
				NodeFacts{Name: "node-0", Selected: true}, []Want{tc.want}, new(int), map[string]bool{})
			p.granted = true
			c := *tc.r // the rows share records
			r := &c
			p.rec.Packages["tool"], p.rec.Flows = r, 4
			p.failures = []Failure{{"node-0", "tool", r.Stage, "BackoffLimitExceeded: failed"}, {"node-0", "fw", appl, "other"}}
			err := p.revert("tool", r, tc.kind)
			if tc.err {
				if err == nil || len(p.plan.Jobs) != 0 || len(p.quarantine) != 0 || p.rec.Packages["tool"] != r || p.failures[0].Message != "BackoffLimitExceeded: failed" {
					t.Errorf("revert = %v, jobs %v, quarantine %v, record %+v", err, p.plan.Jobs, p.quarantine, p.rec.Packages["tool"])
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !p.quarantine[tc.quarantine] || len(p.quarantine) != 1 {
				t.Errorf("quarantine %v, want %s", p.quarantine, tc.quarantine)
			}
			if want := "BackoffLimitExceeded: failed; " + tc.note + ", " + tc.quarantine + " quarantined"; p.failures[0].Message != want || p.failures[1].Message != "other" {
				t.Errorf("failures %v, want %q on tool only", p.failures, want)
			}
			nr := p.rec.Packages["tool"]
			if tc.flow == nil {
				if nr != nil || len(p.plan.Jobs) != 0 || p.rec.Withdrawn["tool"] != tc.withdrawn || !p.reverted {
					t.Errorf("record %+v, jobs %v, withdrawn %v, reverted %v; want dropped, none, %s, true", nr, p.plan.Jobs, p.rec.Withdrawn, p.reverted, tc.withdrawn)
				}
				return
			}
			got := flow{stage: nr.Stage, version: nr.Version, image: nr.Image, spec: string(nr.Spec), from: nr.RevertedFrom, config: nr.RevertedConfig, uninstall: nr.Uninstall}
			if nr.Prev != nil {
				got.prev = nr.Prev.Version
			}
			if nr.Interrupt != nil {
				got.interrupt = string(nr.Interrupt.Type)
			}
			if got != *tc.flow {
				t.Errorf("flow %+v\nwant %+v", got, *tc.flow)
			}
			if !nr.Reverting || nr.State != v1alpha1.StateInProgress || nr.Flow != 5 || p.rec.Flows != 5 || nr.Done {
				t.Errorf("record %+v (flows %d): want a new reverting flow 5 in progress", nr, p.rec.Flows)
			}
			if tc.kind == revertConfig && fmt.Sprint(nr.Config) != fmt.Sprint(good) {
				t.Errorf("config %v, want %v", nr.Config, good)
			}
			if len(p.plan.Jobs) != 1 {
				t.Fatalf("jobs %+v, want one", p.plan.Jobs)
			}
			j := p.plan.Jobs[0]
			if j.Stage != tc.flow.stage || j.Version != tc.flow.version || j.Image != tc.flow.image || string(j.Spec) != tc.flow.spec ||
				j.Name != JobName("s", "node-0", "tool", 5, tc.flow.stage, 0) {
				t.Errorf("job %+v", j)
			}
		})
	}
}

// revertedMessage: what a finished rollback did and the quarantine that holds the node.
func TestRevertedMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *PackageRecord
		q    string
		want string
	}{
		{"version", &PackageRecord{Version: "1.0.0", Reverting: true, RevertedFrom: "1.1.0"}, "tool@1.1.0",
			"rolled back to 1.0.0 after the change to 1.1.0 failed; tool@1.1.0 is quarantined"},
		{"config", &PackageRecord{Version: "1.0.0", Reverting: true, RevertedFrom: "1.0.0", RevertedConfig: "abcd1234"}, "tool@1.0.0#config-abcd1234",
			"rolled back to the previous config of 1.0.0 after config abcd1234 failed; tool@1.0.0#config-abcd1234 is quarantined (change the config to continue)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := revertedMessage(tc.r, tc.q); got != tc.want {
				t.Errorf("%q\nwant %q", got, tc.want)
			}
		})
	}
}

// rollingBackMessage for each kind of running rollback: where to, from what, why, the key.
func TestRollingBackMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    PackageRecord
		want string
	}{
		{"version, uninstall first", PackageRecord{Reverting: true, Version: "1.1.0", RevertedFrom: "1.1.0", Prev: &Applied{Version: "1.0.0"}, Cause: "health check dcgm failed"},
			"rolling back to 1.0.0 after the change to 1.1.0 failed (health check dcgm failed); tool@1.1.0 is quarantined"},
		{"version, apply of the previous", PackageRecord{Reverting: true, Version: "1.0.0", RevertedFrom: "1.1.0"},
			"rolling back to 1.0.0 after the change to 1.1.0 failed; tool@1.1.0 is quarantined"},
		{"new package uninstalled", PackageRecord{Reverting: true, Version: "1.1.0", RevertedFrom: "1.1.0", Uninstall: true, Cause: "boom"},
			"uninstalling 1.1.0 after it failed (boom); tool@1.1.0 is quarantined"},
		{"config", PackageRecord{Reverting: true, Version: "1.0.0", RevertedFrom: "1.0.0", RevertedConfig: "abcd1234"},
			"rolling back to the previous config of 1.0.0 after config abcd1234 failed; tool@1.0.0#config-abcd1234 is quarantined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := rollingBackMessage("tool", &tc.r); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// noteRollingBack: a running rollback (Reverting, not Done, not erroring) adds one failure
// naming its cause; none when the package already reports a failure, when the rollback is
// done or erroring, or while the set is deleted.
func TestNoteRollingBack(t *testing.T) {
	running := func(mut func(*PackageRecord)) *PackageRecord {
		r := &PackageRecord{Reverting: true, Version: "1.0.0", RevertedFrom: "1.1.0", Stage: appl, State: v1alpha1.StateInProgress, Cause: "boom"}
		if mut != nil {
			mut(r)
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		r        *PackageRecord
		deleting bool
		existing []Failure
		want     int
	}{
		{"running", running(nil), false, nil, 1},
		{"done", running(func(r *PackageRecord) { r.Done, r.State = true, v1alpha1.StateComplete }), false, nil, 0},
		{"erroring reports itself", running(func(r *PackageRecord) { r.State = v1alpha1.StateErroring }), false, nil, 0},
		{"already a failure for it", running(nil), false, []Failure{{"node-0", "tool", appl, "x"}}, 1},
		{"not a rollback", running(func(r *PackageRecord) { r.Reverting = false }), false, nil, 0},
		{"deleting", running(nil), true, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := nodePass{f: &SetFacts{Deleting: tc.deleting}, n: NodeFacts{Name: "node-0"}, rec: &NodeRecord{Packages: map[string]*PackageRecord{"tool": tc.r}}, failures: tc.existing}
			p.noteRollingBack()
			if len(p.failures) != tc.want {
				t.Fatalf("failures %v, want %d", p.failures, tc.want)
			}
			if tc.want == 1 && tc.existing == nil && !strings.Contains(p.failures[0].Message, "(boom)") {
				t.Errorf("failure %q lacks the cause", p.failures[0].Message)
			}
		})
	}
}
