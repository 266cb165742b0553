package packageset

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

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
