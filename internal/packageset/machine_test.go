package packageset

import (
	"errors"
	"fmt"
	"slices"
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
		{nil, 5, 5}, {nil, 0, 1}, {&v1alpha1.InterruptionBudget{Count: p(2)}, 5, 2}, {&v1alpha1.InterruptionBudget{Percent: p(10)}, 5, 1},
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

// The soak schedule: SoakInterval's default (soak/3, at least 5s) and explicit floor (1s);
// rounds at 0, interval, 2·interval, ... and the last one at the window's end.
func TestSoakSchedule(t *testing.T) {
	for _, tc := range []struct {
		soak, interval, want time.Duration
	}{
		{time.Minute, 0, 20 * time.Second}, {9 * time.Second, 0, 5 * time.Second}, {2 * time.Second, 0, 5 * time.Second},
		{time.Minute, 10 * time.Second, 10 * time.Second}, {time.Minute, 100 * time.Millisecond, time.Second},
		{time.Minute, 2 * time.Minute, 2 * time.Minute},
	} {
		if got := SoakInterval(tc.soak, tc.interval); got != tc.want {
			t.Errorf("SoakInterval(%s, %s) = %s, want %s", tc.soak, tc.interval, got, tc.want)
		}
	}
	for _, tc := range []struct {
		soak, interval time.Duration
		starts         string
	}{
		{time.Minute, 20 * time.Second, "[0s 20s 40s 1m0s]"},
		{time.Minute, 25 * time.Second, "[0s 25s 50s 1m0s]"},
		{2 * time.Second, 5 * time.Second, "[0s 2s]"},
		{time.Minute, 2 * time.Minute, "[0s 1m0s]"},
		{0, 5 * time.Second, "[0s]"},
	} {
		var starts []time.Duration
		for k := 0; k <= SoakRounds(tc.soak, tc.interval); k++ {
			starts = append(starts, SoakRoundStart(k, tc.soak, tc.interval))
		}
		if fmt.Sprint(starts) != tc.starts {
			t.Errorf("soak %s interval %s: rounds start %v, want %s", tc.soak, tc.interval, starts, tc.starts)
		}
	}
	if SoakRoundStart(1<<40, time.Hour, time.Second) != time.Hour {
		t.Error("a huge round index overflows")
	}
	a := SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 0, 0, 1)
	if a != SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 0, 0, 1) || len(a) > 49 || a == SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 0, 0, 2) ||
		a == SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 1, 0, 1) || a == SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 3, 0, 1, 1) || a == SoakJobName("gpu-drivers", "node-1", "nvidia-driver", 4, 0, 0, 1) {
		t.Errorf("SoakJobName %q not deterministic or collides", a)
	}
}

// Soak rounds (seed 001 Soaking: "probes have started; soak window has not yet elapsed";
// Converged: "soak elapsed, probes passing"), one pass each from a node record: soak 60s,
// interval 20s, rounds at 0s, 20s, 40s and 60s. jobs gives the outcome of round k's Job ("ok",
// "fail", "run"; absent: not created).
func TestSoakRounds(t *testing.T) {
	const soak, interval = time.Minute, 20 * time.Second
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name    string
		prev    v1alpha1.RolloutState
		round   int
		elapsed time.Duration
		jobs    map[int]string
		policy  v1alpha1.HealthFailurePolicy
		// want
		rollout  v1alpha1.RolloutState
		newRound int
		created  []int // rounds whose Job this pass creates
		requeue  time.Duration
		message  string
	}{
		{name: "stages done: Soaking, round 0 starts at once", prev: v1alpha1.RolloutActivating, rollout: v1alpha1.RolloutSoaking, created: []int{0}, requeue: Poll},
		{name: "round 0 running", prev: v1alpha1.RolloutSoaking, elapsed: 10 * time.Second, jobs: map[int]string{0: "run"}, rollout: v1alpha1.RolloutSoaking, requeue: Poll},
		{name: "round 0 passed, round 1 not due", prev: v1alpha1.RolloutSoaking, elapsed: 10 * time.Second, jobs: map[int]string{0: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 1, requeue: 10 * time.Second},
		{name: "round 1 due: repeats", prev: v1alpha1.RolloutSoaking, round: 1, elapsed: 20 * time.Second, jobs: map[int]string{0: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 1, created: []int{1}, requeue: Poll},
		{name: "round 0 passed late: round 1 starts in the same pass", prev: v1alpha1.RolloutSoaking, elapsed: 21 * time.Second, jobs: map[int]string{0: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 1, created: []int{1}, requeue: Poll},
		{name: "round 1 fails mid-window: Failed", prev: v1alpha1.RolloutSoaking, round: 1, elapsed: 25 * time.Second, jobs: map[int]string{0: "ok", 1: "fail"},
			rollout: v1alpha1.RolloutFailed, requeue: BackoffMin, message: "soak check config-check failed in round 1/3: BackoffLimitExceeded"},
		{name: "round 1 fails mid-window, rollback: Failed", prev: v1alpha1.RolloutSoaking, round: 1, elapsed: 25 * time.Second, jobs: map[int]string{1: "fail"},
			policy: v1alpha1.HealthFailureRollback, rollout: v1alpha1.RolloutFailed, requeue: BackoffMin, message: "soak check config-check failed in round 1/3"},
		{name: "round 2 passed: the last round waits for the window's end", prev: v1alpha1.RolloutSoaking, round: 2, elapsed: 45 * time.Second, jobs: map[int]string{2: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 3, requeue: 15 * time.Second},
		{name: "window elapsed: the last round starts", prev: v1alpha1.RolloutSoaking, round: 3, elapsed: soak, jobs: map[int]string{2: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 3, created: []int{3}, requeue: Poll},
		{name: "last round running after the window", prev: v1alpha1.RolloutSoaking, round: 3, elapsed: 70 * time.Second, jobs: map[int]string{3: "run"},
			rollout: v1alpha1.RolloutSoaking, newRound: 3, requeue: Poll},
		{name: "last round passed: Converged", prev: v1alpha1.RolloutSoaking, round: 3, elapsed: 70 * time.Second, jobs: map[int]string{3: "ok"},
			rollout: v1alpha1.RolloutConverged},
		{name: "last round fails: Failed", prev: v1alpha1.RolloutSoaking, round: 3, elapsed: 70 * time.Second, jobs: map[int]string{3: "fail"},
			rollout: v1alpha1.RolloutFailed, requeue: BackoffMin, message: "soak check config-check failed in round 3/3"},
		{name: "reconciler away past the window: missed rounds skipped, the last starts", prev: v1alpha1.RolloutSoaking, elapsed: 5 * time.Minute, jobs: map[int]string{0: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 3, created: []int{3}, requeue: Poll},
		{name: "reconciler away mid-window: the latest due round", prev: v1alpha1.RolloutSoaking, elapsed: 45 * time.Second, jobs: map[int]string{0: "ok"},
			rollout: v1alpha1.RolloutSoaking, newRound: 2, created: []int{2}, requeue: Poll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &NodeRecord{Rollout: tc.prev, Since: t0, SoakRound: tc.round, Flows: 2, Packages: map[string]*PackageRecord{
				"tool": {Version: "1.1.0", Image: "ghcr.io/x/tool:1.1.0", Stage: conf, State: v1alpha1.StateComplete, Done: true, Flow: 2, Since: t0,
					Prev: &Applied{Version: "1.0.0", Image: "ghcr.io/x/tool:1.0.0"}}}}
			jobs := map[string]JobFact{JobName("gpu-drivers", "node-0", "tool", 2, conf, 0): {Succeeded: true}}
			for k, o := range tc.jobs {
				jobs[SoakJobName("gpu-drivers", "node-0", "tool", 2, 0, 0, k)] = map[string]JobFact{"ok": {Succeeded: true}, "run": {},
					"fail": {Failed: true, Reason: "BackoffLimitExceeded", Message: "check failed"}}[o]
			}
			f := SetFacts{Now: t0.Add(tc.elapsed), Name: "gpu-drivers", Generation: 1, Wants: []Want{tool("1.1.0")}, Soak: soak, SoakInterval: interval,
				OnHealthFailure: tc.policy, Nodes: []NodeFacts{{Name: "node-0", Selected: true, Record: rec, Jobs: jobs}}}
			d, err := Plan(f)
			if err != nil {
				t.Fatal(err)
			}
			np := d.Nodes[0]
			if np.Record.Rollout != tc.rollout || np.Record.SoakRound != tc.newRound {
				t.Errorf("rollout %s round %d, want %s round %d", np.Record.Rollout, np.Record.SoakRound, tc.rollout, tc.newRound)
			}
			var created []int
			for _, j := range np.Jobs {
				if !j.SoakCheck || j.Stage != conf || j.Version != "1.1.0" || j.Name != SoakJobName("gpu-drivers", "node-0", "tool", 2, 0, np.Record.Soaks, j.SoakRound) {
					t.Errorf("job %+v", j)
				}
				created = append(created, j.SoakRound)
			}
			if fmt.Sprint(created) != fmt.Sprint(tc.created) && (len(created) != 0 || len(tc.created) != 0) {
				t.Errorf("created rounds %v, want %v", created, tc.created)
			}
			if d.RequeueAfter != tc.requeue && tc.requeue != 0 {
				t.Errorf("requeue %s, want %s", d.RequeueAfter, tc.requeue)
			}
			if tc.prev == v1alpha1.RolloutActivating && !np.Record.Since.Equal(f.Now) {
				t.Errorf("soak window starts at %s, want %s", np.Record.Since, f.Now)
			}
			if tc.prev == v1alpha1.RolloutSoaking && tc.rollout == v1alpha1.RolloutSoaking && !np.Record.Since.Equal(t0) {
				t.Errorf("soak window moved to %s", np.Record.Since)
			}
			switch {
			case tc.message != "":
				p := np.Record.Packages["tool"]
				if p.State != v1alpha1.StateErroring || p.Done || p.Restarts != 1 || !strings.Contains(p.Message, tc.message) ||
					len(d.Failures) != 1 || !strings.Contains(d.Failures[0].String(), "node node-0 package tool stage config: "+tc.message) {
					t.Errorf("package %+v failures %v, want erroring with %q", p, d.Failures, tc.message)
				}
				if d.Status != v1alpha1.StatusErroring {
					t.Errorf("status %s", d.Status)
				}
			case tc.rollout == v1alpha1.RolloutConverged:
				if d.Status != v1alpha1.StatusComplete || np.Record.SoakRound != 0 {
					t.Errorf("status %s round %d", d.Status, np.Record.SoakRound)
				}
			default:
				if d.Status != v1alpha1.StatusInProgress {
					t.Errorf("status %s while soaking", d.Status)
				}
			}

			// Restart idempotence: a restarted reconciler (the same record and Now, the Jobs
			// this pass created now existing) creates no Job again and plans the same record;
			// one that lost the Job list (the same record, Now) recomputes the same names.
			again := f
			again.Nodes = []NodeFacts{{Name: "node-0", Selected: true, Record: np.Record.Clone(), Jobs: copyJobs(jobs)}}
			for _, j := range np.Jobs {
				again.Nodes[0].Jobs[j.Name] = JobFact{}
			}
			d2, err := Plan(again)
			if err != nil {
				t.Fatal(err)
			}
			if tc.rollout == v1alpha1.RolloutSoaking {
				if len(d2.Nodes[0].Jobs) != 0 || d2.Nodes[0].Record.SoakRound != np.Record.SoakRound || d2.Nodes[0].Record.Rollout != v1alpha1.RolloutSoaking {
					t.Errorf("after a restart: jobs %v round %d %s", d2.Nodes[0].Jobs, d2.Nodes[0].Record.SoakRound, d2.Nodes[0].Record.Rollout)
				}
				lost := f
				lost.Nodes = []NodeFacts{{Name: "node-0", Selected: true, Record: np.Record.Clone(), Jobs: copyJobs(jobs)}}
				d3, _ := Plan(lost)
				if fmt.Sprint(d3.Nodes[0].Jobs) != fmt.Sprint(np.Jobs) {
					t.Errorf("recomputed jobs %v, want %v", d3.Nodes[0].Jobs, np.Jobs)
				}
			}
		})
	}
}

// Soak through the machine (seed 001), budget 1: a node is Soaking (in flight: the next node
// waits) with its check re-run in rounds from the start of the window; a round failing
// mid-window makes it Failed, erroring naming the soak check and its round, and the policy
// applies: halt retries the stage (a new flow attempt soaks again with new Jobs), rollback
// reverts to the previous version (or, for a new package, uninstalls it) and quarantines.
func TestSoak(t *testing.T) {
	for _, tc := range []struct {
		policy v1alpha1.HealthFailurePolicy
		fresh  bool // tool is a new package (uninstall enabled)
	}{{"", false}, {v1alpha1.HealthFailureHalt, false}, {v1alpha1.HealthFailureRollback, false}, {v1alpha1.HealthFailureRollback, true}} {
		t.Run(fmt.Sprintf("policy=%s,new=%v", tc.policy, tc.fresh), func(t *testing.T) {
			s := newSim(t, 2)
			if !tc.fresh {
				s.facts.Wants = []Want{tool("1.0.0")}
				s.run(v1alpha1.StatusComplete)
				s.reset()
			}
			s.facts.Soak, s.facts.SoakInterval = time.Minute, 20*time.Second
			s.facts.OnHealthFailure = tc.policy
			next := tool("1.1.0")
			next.Uninstall = tc.fresh
			s.facts.Wants = []Want{next}
			soakFails := false
			var soakJobs []JobSpec
			s.fail = func(j JobSpec, _ int) bool {
				if j.SoakCheck {
					soakJobs = append(soakJobs, j)
					return j.Node == "node-0" && soakFails
				}
				return false
			}
			// Node-0's stages with the clock standing still: Soaking, round 0 created at once.
			for i := 0; i < 6; i++ {
				s.pass()
				s.settle()
			}
			if r := s.nodes["node-0"].rec; r.Rollout != v1alpha1.RolloutSoaking || r.SoakRound != 1 {
				t.Fatalf("node-0 rollout %s round %d, want Soaking round 1 (round 0 passed)", r.Rollout, r.SoakRound)
			}
			if len(soakJobs) != 1 || soakJobs[0].SoakRound != 0 || soakJobs[0].Stage != conf || soakJobs[0].Version != "1.1.0" || s.ran["node-1"] != nil {
				t.Fatalf("soak jobs %+v, node-1 ran %v", soakJobs, s.ran["node-1"])
			}
			// 20s later round 1 runs and passes; 20s more, round 2 fails mid-window.
			s.now = s.now.Add(20 * time.Second)
			s.pass()
			s.settle()
			soakFails = true
			s.now = s.now.Add(20 * time.Second)
			s.pass()
			s.settle()
			d := s.pass()
			if len(soakJobs) != 3 || soakJobs[1].SoakRound != 1 || soakJobs[2].SoakRound != 2 || soakJobs[1].Name == soakJobs[2].Name {
				t.Fatalf("soak jobs %+v", soakJobs)
			}
			if got := s.nodes["node-0"].rec.Rollout; got != v1alpha1.RolloutFailed {
				t.Fatalf("after a failed round: rollout %s", got)
			}
			if len(d.Failures) == 0 || !strings.Contains(d.Failures[0].Message, "soak check config-check failed in round 2/3") {
				t.Errorf("failures %v", d.Failures)
			}
			soakFails = false
			if tc.policy == v1alpha1.HealthFailureRollback {
				for i := 0; i < 10; i++ {
					s.settle()
					d = s.pass()
				}
				r := s.nodes["node-0"].rec
				if r.Rollout != v1alpha1.RolloutReverted {
					t.Fatalf("rollback: rollout %s", r.Rollout)
				}
				want := "upgrade,config,config,config,config,apply,config" // three soak checks, then the rollback
				if tc.fresh {
					want = "apply,config,config,config,config,uninstall"
					if r.Packages["tool"] != nil || r.Withdrawn["tool"] != "1.1.0" {
						t.Errorf("new package not withdrawn: %+v %v", r.Packages["tool"], r.Withdrawn)
					}
				} else if r.Packages["tool"].Version != "1.0.0" {
					t.Errorf("rolled back to %s", r.Packages["tool"].Version)
				}
				if got := s.stages("node-0", "tool"); got != want {
					t.Errorf("stages %s, want %s", got, want)
				}
				if fmt.Sprint(d.Quarantined) != "[tool@1.1.0]" || s.ran["node-1"] != nil || len(soakJobs) != 3 {
					t.Errorf("quarantined %v, node-1 ran %v, soak jobs %d", d.Quarantined, s.ran["node-1"], len(soakJobs))
				}
				return
			}
			// Halt: node-1 does not start while node-0 is Failed; the retry (after backoff)
			// re-runs config, soaks again from round 0 with new Jobs, and the rollout completes.
			if s.ran["node-1"] != nil {
				t.Fatalf("node-1 started during the failure: %v", s.ran["node-1"])
			}
			s.run(v1alpha1.StatusComplete)
			for _, n := range s.nodeNames() {
				if s.nodes[n].rec.Rollout != v1alpha1.RolloutConverged || s.nodes[n].rec.Packages["tool"].Version != "1.1.0" {
					t.Errorf("%s: %s %s", n, s.nodes[n].rec.Rollout, s.nodes[n].rec.Packages["tool"].Version)
				}
			}
			// node-0: rounds 0-2, then after the retry rounds 0 and 3 (the clock moves 5m per
			// pass: missed rounds skipped); node-1 the same two.
			rounds := map[string][]int{}
			names := map[string]bool{}
			for _, j := range soakJobs {
				rounds[j.Node] = append(rounds[j.Node], j.SoakRound)
				if names[j.Name] {
					t.Errorf("soak job %s twice", j.Name)
				}
				names[j.Name] = true
			}
			if fmt.Sprint(rounds["node-0"]) != "[0 1 2 0 3]" || fmt.Sprint(rounds["node-1"]) != "[0 3]" {
				t.Errorf("soak rounds %v", rounds)
			}
		})
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
