package packageset

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

const (
	unin = v1alpha1.StageUninstall
	appl = v1alpha1.StageApply
	conf = v1alpha1.StageConfig
	upgr = v1alpha1.StageUpgrade
	intr = v1alpha1.StageInterrupt
	post = v1alpha1.StagePostInterrupt
)

// Seed 000 "Stage Flow": every arrow is a row.
func TestNextStage(t *testing.T) {
	for _, tc := range []struct {
		from      Stage
		interrupt bool
		next      Stage
		done      bool
		illegal   bool
	}{
		{unin, false, appl, false, false},
		{appl, false, conf, false, false},
		{upgr, false, conf, false, false},
		{conf, false, "", true, false},
		{unin, true, appl, false, false},
		{appl, true, conf, false, false},
		{upgr, true, conf, false, false},
		{conf, true, intr, false, false},
		{intr, true, post, false, false},
		{post, true, "", true, false},
		{intr, false, "", false, true},
		{post, false, "", false, true},
		{"apply-check", false, "", false, true},
	} {
		next, done, err := NextStage(tc.from, tc.interrupt)
		var te *TransitionError
		if tc.illegal != errors.As(err, &te) || next != tc.next || done != tc.done {
			t.Errorf("NextStage(%s, %v) = %s, %v, %v; want %s, %v, illegal=%v", tc.from, tc.interrupt, next, done, err, tc.next, tc.done, tc.illegal)
		}
	}
	for s, want := range map[Stage]string{appl: "apply-check", conf: "config-check", upgr: "upgrade-check", unin: "uninstall-check", post: "post-interrupt-check", intr: ""} {
		if got := CheckOf(s); got != want {
			t.Errorf("CheckOf(%s) = %q, want %q", s, got, want)
		}
	}
}

// Seed 000 "State": every legal (state, event) pair, and the illegal ones rejected.
func TestStateTable(t *testing.T) {
	ok := []struct {
		from State
		ev   Event
		to   State
	}{
		{"", EventStarted, v1alpha1.StateInProgress},
		{"", EventSkipped, v1alpha1.StateSkipped},
		{v1alpha1.StateUnknown, EventStarted, v1alpha1.StateInProgress},
		{v1alpha1.StateInProgress, EventStarted, v1alpha1.StateInProgress},
		{v1alpha1.StateInProgress, EventSucceeded, v1alpha1.StateComplete},
		{v1alpha1.StateInProgress, EventFailed, v1alpha1.StateErroring},
		{v1alpha1.StateErroring, EventRetry, v1alpha1.StateInProgress},
		{v1alpha1.StateErroring, EventFailed, v1alpha1.StateErroring},
		{v1alpha1.StateSkipped, EventPromoted, v1alpha1.StateComplete},
	}
	for _, tc := range ok {
		if got, err := Apply(tc.from, tc.ev); err != nil || got != tc.to {
			t.Errorf("Apply(%q, %s) = %s, %v; want %s", tc.from, tc.ev, got, err, tc.to)
		}
	}
	for _, tc := range []struct {
		from State
		ev   Event
	}{
		{"", EventSucceeded}, {v1alpha1.StateComplete, EventStarted}, {v1alpha1.StateComplete, EventFailed},
		{v1alpha1.StateSkipped, EventSucceeded}, {v1alpha1.StateErroring, EventSucceeded}, {"bogus", EventStarted},
	} {
		var te *TransitionError
		if _, err := Apply(tc.from, tc.ev); !errors.As(err, &te) {
			t.Errorf("Apply(%q, %s) = %v, want a TransitionError", tc.from, tc.ev, err)
		}
	}
}

func TestMergeInterrupts(t *testing.T) {
	svc := func(s ...string) v1alpha1.Interrupt {
		return v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: s}
	}
	reboot := v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	all := v1alpha1.Interrupt{Type: v1alpha1.InterruptRestartAllServices}
	noop := v1alpha1.Interrupt{Type: v1alpha1.InterruptNoop}
	for _, tc := range []struct {
		in     []v1alpha1.Interrupt
		want   v1alpha1.Interrupt
		winner int
	}{
		{[]v1alpha1.Interrupt{noop}, noop, 0},
		{[]v1alpha1.Interrupt{noop, svc("a")}, svc("a"), 1},
		{[]v1alpha1.Interrupt{svc("b"), svc("a", "b")}, svc("a", "b"), 0},
		{[]v1alpha1.Interrupt{svc("a"), all, noop}, all, 1},
		{[]v1alpha1.Interrupt{all, reboot, svc("x")}, reboot, 1},
		{[]v1alpha1.Interrupt{reboot, reboot}, reboot, 0},
	} {
		got, w, err := MergeInterrupts(tc.in)
		if err != nil || w != tc.winner || got.Type != tc.want.Type || strings.Join(got.Services, ",") != strings.Join(tc.want.Services, ",") {
			t.Errorf("MergeInterrupts(%v) = %v, %d, %v; want %v, %d", tc.in, got, w, err, tc.want, tc.winner)
		}
	}
	if _, _, err := MergeInterrupts(nil); err == nil {
		t.Error("empty merge accepted")
	}
	if _, _, err := MergeInterrupts([]v1alpha1.Interrupt{{Type: "kexec"}}); err == nil {
		t.Error("unknown type accepted")
	}
}

func TestAggregate(t *testing.T) {
	const (
		C = v1alpha1.StatusComplete
		B = v1alpha1.StatusBlocked
		W = v1alpha1.StatusWaiting
		D = v1alpha1.StatusDisabled
		P = v1alpha1.StatusPaused
		I = v1alpha1.StatusInProgress
		E = v1alpha1.StatusErroring
		U = v1alpha1.StatusUnknown
	)
	for _, tc := range []struct {
		in   []Status
		want Status
	}{
		{nil, C}, {[]Status{C, C}, C}, {[]Status{C, I, E}, I}, {[]Status{C, E, E}, E}, {[]Status{E, W, W}, E},
		{[]Status{B, C}, B}, {[]Status{B, W}, B}, {[]Status{W, W, C}, W}, {[]Status{P, P}, P}, {[]Status{D, C}, D},
		{[]Status{U, U}, U}, {[]Status{W, P}, U}, {[]Status{I}, I},
	} {
		if got := Aggregate(tc.in); got != tc.want {
			t.Errorf("Aggregate(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for s, want := range map[State]Status{v1alpha1.StateComplete: C, v1alpha1.StateErroring: E, v1alpha1.StateInProgress: I, v1alpha1.StateSkipped: U, v1alpha1.StateUnknown: U} {
		if got := StateToStatus(s); got != want {
			t.Errorf("StateToStatus(%s) = %s, want %s", s, got, want)
		}
	}
}

// Seed 001's host table, row by row, plus ours; and transitions it does not draw.
func TestRolloutTransitions(t *testing.T) {
	const (
		Pe = v1alpha1.RolloutPending
		Ac = v1alpha1.RolloutActivating
		De = v1alpha1.RolloutDeferred
		So = v1alpha1.RolloutSoaking
		Co = v1alpha1.RolloutConverged
		Fa = v1alpha1.RolloutFailed
		Re = v1alpha1.RolloutReverted
	)
	legal := [][2]v1alpha1.RolloutState{
		{"", Pe}, {Pe, Ac}, {Ac, So}, {Ac, Fa}, {Ac, De}, {De, So}, {So, Co}, {So, Fa}, {Fa, Re}, {Re, Pe},
		{Pe, Co}, {Co, Pe}, {Fa, Ac}, {De, Fa}, {Ac, Pe},
	}
	for _, tr := range legal {
		if err := RolloutTransition(tr[0], tr[1]); err != nil {
			t.Errorf("%s → %s: %v", tr[0], tr[1], err)
		}
	}
	for _, tr := range [][2]v1alpha1.RolloutState{{Pe, So}, {Pe, Fa}, {Co, Fa}, {Re, Co}, {Co, So}, {"", Co}, {De, Co}, {So, Ac}} {
		var te *TransitionError
		if err := RolloutTransition(tr[0], tr[1]); !errors.As(err, &te) {
			t.Errorf("%s → %s accepted", tr[0], tr[1])
		}
	}
}

func TestBudgetAndOrder(t *testing.T) {
	p := func(v int32) *int32 { return &v }
	for _, tc := range []struct {
		b     *v1alpha1.InterruptionBudget
		nodes int
		want  int
	}{
		{nil, 5, 1}, {&v1alpha1.InterruptionBudget{Count: p(2)}, 5, 2}, {&v1alpha1.InterruptionBudget{Percent: p(10)}, 5, 1},
		{&v1alpha1.InterruptionBudget{Percent: p(10)}, 1000, 100}, {&v1alpha1.InterruptionBudget{Percent: p(100)}, 7, 7},
	} {
		if got := Budget(tc.b, tc.nodes); got != tc.want {
			t.Errorf("Budget(%v, %d) = %d, want %d", tc.b, tc.nodes, got, tc.want)
		}
	}
	got, err := Order([]Want{{Name: "c", DependsOn: []string{"b"}}, {Name: "a"}, {Name: "b", DependsOn: []string{"a"}}})
	if err != nil || got[0].Name != "a" || got[1].Name != "b" || got[2].Name != "c" {
		t.Errorf("Order = %v, %v", got, err)
	}
	if _, err := Order([]Want{{Name: "a", DependsOn: []string{"c"}}, {Name: "b", DependsOn: []string{"a"}}, {Name: "c", DependsOn: []string{"b"}}}); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("3-cycle: %v", err)
	}
}

func TestJobNameDeterministic(t *testing.T) {
	a := JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 0)
	if a != JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 0) || len(a) > 49 {
		t.Fatalf("JobName %q", a)
	}
	for _, other := range []string{
		JobName("gpu-drivers", "node-2", "nvidia-driver", 3, appl, 0), JobName("gpu-drivers", "node-1", "nvidia-driver", 4, appl, 0),
		JobName("gpu-drivers", "node-1", "nvidia-driver", 3, conf, 0), JobName("gpu-drivers", "node-1", "nvidia-driver", 3, appl, 1),
	} {
		if other == a {
			t.Errorf("collision %s", a)
		}
	}
}

func driver(v string) Want {
	return Want{Name: "driver", Version: v, Image: "ghcr.io/x/driver:" + v, Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}, Uninstall: true, StageTimeout: DefaultStageTimeout}
}
func tool(v string) Want {
	return Want{Name: "tool", Version: v, Image: "ghcr.io/x/tool:" + v, StageTimeout: DefaultStageTimeout}
}

// Stage flows end to end through the machine: install, upgrade, downgrade, config change,
// removal, merged interrupts, deletion.
func TestFlows(t *testing.T) {
	s := newSim(t, 3, driver("1.0.0"), tool("1.0.0"))
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(1))}
	d := s.run(v1alpha1.StatusComplete)
	for _, n := range s.nodeNames() {
		if got := s.stages(n, "driver"); got != "apply,config,interrupt,post-interrupt" {
			t.Errorf("%s driver stages %s", n, got)
		}
		if got := s.stages(n, "tool"); got != "apply,config" {
			t.Errorf("%s tool stages %s", n, got)
		}
		if s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged || s.nodes[n].cordoned {
			t.Errorf("%s rollout %s cordoned %v", n, s.nodes[n].rec.Rollout, s.nodes[n].cordoned)
		}
	}
	if d.CompleteNodes != "3/3" || s.maxCord != 1 {
		t.Errorf("complete %s, max cordoned %d", d.CompleteNodes, s.maxCord)
	}

	// Upgrade: driver up → upgrade, config, interrupt, post-interrupt; tool untouched.
	s.reset()
	s.facts.Wants = []Want{driver("1.1.0"), tool("1.0.0")}
	s.run(v1alpha1.StatusComplete)
	for _, n := range s.nodeNames() {
		if got := s.stages(n, "driver") + "|" + s.stages(n, "tool"); got != "upgrade,config,interrupt,post-interrupt|" {
			t.Errorf("%s upgrade stages %s", n, got)
		}
	}
	// Downgrade with uninstall enabled: uninstall of the old, then apply of the new.
	s.reset()
	s.facts.Wants = []Want{driver("1.0.0"), tool("1.0.0")}
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "uninstall,apply,config,interrupt,post-interrupt" {
		t.Errorf("downgrade stages %s", got)
	}
	// Tool downgrade without uninstall: apply of the new.
	s.reset()
	s.facts.Wants = []Want{driver("1.0.0"), tool("0.9.0")}
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "tool"); got != "apply,config" {
		t.Errorf("tool downgrade stages %s", got)
	}
	// Config change on a key without config interrupt: config only.
	s.reset()
	tl := tool("0.9.0")
	tl.Config = ConfigHashes(map[string]string{"mode": "fast"})
	tl.ConfigInterrupts = map[string]v1alpha1.Interrupt{"kernel": {Type: v1alpha1.InterruptService, Services: []string{"containerd"}}}
	s.facts.Wants = []Want{driver("1.0.0"), tl}
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-1", "tool"); got != "config" {
		t.Errorf("config change stages %s", got)
	}
	// Config change on a key listed in configInterrupts: config, interrupt, post-interrupt.
	s.reset()
	tl.Config = ConfigHashes(map[string]string{"mode": "fast", "kernel": "6.8"})
	s.facts.Wants = []Want{driver("1.0.0"), tl}
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-1", "tool"); got != "config,interrupt,post-interrupt" {
		t.Errorf("config interrupt stages %s", got)
	}
	// Removal: driver (uninstall enabled) → uninstall; tool (not enabled) → forgotten.
	s.reset()
	s.facts.Wants = []Want{tool("0.9.0")}
	s.facts.Wants[0].Config, s.facts.Wants[0].ConfigInterrupts = tl.Config, tl.ConfigInterrupts
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-2", "driver"); got != "uninstall" {
		t.Errorf("removal stages %s", got)
	}
	if _, still := s.nodes["node-2"].rec.Packages["driver"]; still {
		t.Error("removed package still recorded")
	}
	// Deletion: records and cordons go; Finished.
	s.facts.Deleting = true
	d = s.run(v1alpha1.StatusComplete)
	for _, n := range s.nodeNames() {
		if s.nodes[n].rec != nil || s.nodes[n].cordoned {
			t.Errorf("%s after deletion: %+v cordoned %v", n, s.nodes[n].rec, s.nodes[n].cordoned)
		}
	}
	if !d.Finished {
		t.Error("deletion not finished")
	}
}

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

// A failing stage: erroring with the Job's message, the set erroring naming node/package/stage;
// budget 1 halts the rollout (no other node starts); a later success heals it.
func TestErroringHaltsAndHeals(t *testing.T) {
	s := newSim(t, 3, tool("1.0.0"))
	failing := true
	s.fail = func(j JobSpec, _ int) bool { return failing && j.Node == "node-0" && j.Stage == conf }
	d := s.run(v1alpha1.StatusErroring)
	if len(d.Failures) != 1 || d.Failures[0].Node != "node-0" || d.Failures[0].Package != "tool" || d.Failures[0].Stage != conf ||
		!strings.Contains(d.Failures[0].Message, "backoff limit") {
		t.Fatalf("failures %v", d.Failures)
	}
	if msg := d.Conditions[0].Message; !strings.Contains(msg, "node node-0 package tool stage config") {
		t.Errorf("Ready message %q", msg)
	}
	if s.ran["node-1"] != nil || s.ran["node-2"] != nil {
		t.Errorf("rollout not halted: %v", s.ran)
	}
	if s.nodes["node-0"].rec.Rollout != v1alpha1.RolloutFailed {
		t.Errorf("rollout %s", s.nodes["node-0"].rec.Rollout)
	}
	failing = false
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "tool"); !strings.HasPrefix(got, "apply,config,config") {
		t.Errorf("retry stages %s", got)
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

func ptr[T any](v T) *T { return &v }

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

// Rollback transitions in isolation: without uninstall the rollback applies the previous
// version directly; a new package (nothing to return to) and a config-only change halt like
// policy halt (Failed, retried), never Reverted; a failed interrupt of the new version reverts.
func TestRollbackRows(t *testing.T) {
	cases := []struct {
		name      string
		from, to  Want
		failStage Stage
		fresh     bool
		stages    string
		rollout   v1alpha1.RolloutState
	}{
		{"no uninstall: apply previous", tool("1.0.0"), tool("1.1.0"), conf, false, "upgrade,config,apply,config", v1alpha1.RolloutReverted},
		{"interrupt fails: reverts with previous interrupt", driver("1.0.0"), driver("1.1.0"), intr, false,
			"upgrade,config,interrupt,uninstall,apply,config,interrupt,post-interrupt", v1alpha1.RolloutReverted},
		{"new package: halt", Want{}, tool("1.1.0"), conf, true, "apply,config", v1alpha1.RolloutFailed},
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
			s.fail = func(j JobSpec, _ int) bool { return j.Version == c.to.Version && j.Stage == c.failStage }
			for i := 0; i < 60; i++ {
				s.pass()
				s.settle() // the clock stands still: no backoff elapses, no retry
			}
			if got := s.stages("node-0", c.to.Name); got != c.stages {
				t.Errorf("stages %s, want %s", got, c.stages)
			}
			if got := s.nodes["node-0"].rec.Rollout; got != c.rollout {
				t.Errorf("rollout %s, want %s", got, c.rollout)
			}
			if s.ran["node-1"] != nil {
				t.Errorf("node-1 started: %v", s.ran["node-1"])
			}
			if s.nodes["node-0"].cordoned {
				t.Error("cordon left behind")
			}
		})
	}
}

// Stage Jobs carry the spec of the version they run (Skyhook #186): a removed package's
// uninstall gets its last spec (a spec change that keeps version and config runs no stage but
// refreshes the recorded spec), a rollback's apply the previous version's, never the current
// spec's.
func TestJobSpecFollowsRecordedVersion(t *testing.T) {
	withSpec := func(w Want, spec string) Want { w.Spec = []byte(spec); return w }
	s := newSim(t, 1, withSpec(driver("1.0.0"), `{"env":"v1"}`), withSpec(tool("1.0.0"), `{"env":"t1"}`))
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	s.run(v1alpha1.StatusComplete)
	s.reset()
	s.facts.Wants = []Want{withSpec(driver("1.0.0"), `{"env":"v1b"}`), withSpec(tool("1.0.0"), `{"env":"t1"}`)}
	if d := s.pass(); len(s.ran) != 0 || d.Status != v1alpha1.StatusComplete {
		t.Fatalf("a spec-only change ran %v, status %s", s.ran, d.Status)
	}
	specs := map[string]string{} // stage@version → spec of its Job
	s.fail = func(j JobSpec, _ int) bool {
		specs[fmt.Sprintf("%s %s@%s", j.Package, j.Stage, j.Version)] = string(j.Spec)
		return j.Version == "1.1.0" && j.Stage == conf
	}
	// driver removed (uninstall enabled); tool upgraded to a failing 1.1.0 → rolled back.
	s.facts.Wants = []Want{withSpec(tool("1.1.0"), `{"env":"t2"}`)}
	for i := 0; i < 30; i++ {
		s.pass()
		s.settle()
	}
	want := map[string]string{
		"driver uninstall@1.0.0": `{"env":"v1b"}`,
		"tool upgrade@1.1.0":     `{"env":"t2"}`,
		"tool config@1.1.0":      `{"env":"t2"}`,
		"tool apply@1.0.0":       `{"env":"t1"}`,
		"tool config@1.0.0":      `{"env":"t1"}`,
	}
	for k, v := range want {
		if specs[k] != v {
			t.Errorf("%s ran with spec %q, want %q (all: %v)", k, specs[k], v, specs)
		}
	}
	if len(specs) != len(want) {
		t.Errorf("jobs %v", specs)
	}
}

// Soak (seed 001): after its last stage a node is Soaking for the soak window (in flight: with
// budget 1 the next node waits), then its last stage's check is re-run as a Job; success →
// Converged; failure → Failed, erroring naming the soak check, and the policy applies: halt
// retries the stage, rollback reverts to the previous version and quarantines.
func TestSoak(t *testing.T) {
	for _, policy := range []v1alpha1.HealthFailurePolicy{"", v1alpha1.HealthFailureHalt, v1alpha1.HealthFailureRollback} {
		t.Run("policy="+string(policy), func(t *testing.T) {
			s := newSim(t, 2, tool("1.0.0"))
			s.run(v1alpha1.StatusComplete)
			s.reset()
			s.facts.Soak = time.Minute
			s.facts.OnHealthFailure = policy
			s.facts.Wants = []Want{tool("1.1.0")}
			soakFails := true
			var soakJobs []JobSpec
			s.fail = func(j JobSpec, _ int) bool {
				if j.SoakCheck {
					soakJobs = append(soakJobs, j)
					return j.Node == "node-0" && soakFails
				}
				return false
			}
			// Upgrade node-0 with the clock standing still: Soaking, no soak check yet.
			for i := 0; i < 6; i++ {
				s.pass()
				s.settle()
			}
			if r := s.nodes["node-0"].rec; r.Rollout != v1alpha1.RolloutSoaking {
				t.Fatalf("node-0 rollout %s, want Soaking", r.Rollout)
			}
			if len(soakJobs) != 0 || s.ran["node-1"] != nil {
				t.Fatalf("before the window: soak jobs %v, node-1 ran %v", soakJobs, s.ran["node-1"])
			}
			// The window elapses: the soak check of config runs and fails.
			s.now = s.now.Add(time.Minute)
			d := s.pass()
			s.settle()
			if len(soakJobs) != 1 || soakJobs[0].Stage != conf || soakJobs[0].Node != "node-0" || soakJobs[0].Version != "1.1.0" {
				t.Fatalf("soak jobs %+v", soakJobs)
			}
			d = s.pass()
			if s.nodes["node-0"].rec.Rollout != v1alpha1.RolloutFailed && s.nodes["node-0"].rec.Rollout != v1alpha1.RolloutReverted {
				t.Fatalf("after a failed soak check: rollout %s", s.nodes["node-0"].rec.Rollout)
			}
			if len(d.Failures) == 0 || !strings.Contains(d.Failures[0].Message, "soak check config-check failed") {
				t.Errorf("failures %v", d.Failures)
			}
			soakFails = false
			if policy == v1alpha1.HealthFailureRollback {
				for i := 0; i < 10; i++ {
					s.settle()
					d = s.pass()
				}
				if r := s.nodes["node-0"].rec; r.Rollout != v1alpha1.RolloutReverted || r.Packages["tool"].Version != "1.0.0" {
					t.Fatalf("rollback: rollout %s version %s", r.Rollout, r.Packages["tool"].Version)
				}
				if got := s.stages("node-0", "tool"); got != "upgrade,config,config,apply,config" { // the third is the soak check
					t.Errorf("stages %s", got)
				}
				if fmt.Sprint(d.Quarantined) != "[tool@1.1.0]" || s.ran["node-1"] != nil {
					t.Errorf("quarantined %v, node-1 ran %v", d.Quarantined, s.ran["node-1"])
				}
				return
			}
			// Halt: node-1 does not start while node-0 is Failed; the retry (after backoff)
			// re-runs config, soaks again with a new check Job, and the rollout completes.
			if s.ran["node-1"] != nil {
				t.Fatalf("node-1 started during the failure: %v", s.ran["node-1"])
			}
			s.run(v1alpha1.StatusComplete)
			for _, n := range s.nodeNames() {
				if s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged || s.nodes[n].rec.Packages["tool"].Version != "1.1.0" {
					t.Errorf("%s: %s %s", n, s.nodes[n].rec.Rollout, s.nodes[n].rec.Packages["tool"].Version)
				}
			}
			if len(soakJobs) != 3 { // node-0 twice, node-1 once
				t.Errorf("soak jobs %d, want 3", len(soakJobs))
			}
		})
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
