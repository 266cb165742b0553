package packageset

import (
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// reapply marks w reapplyOnReboot.
func reapply(w Want) Want {
	w.ReapplyOnReboot = true
	return w
}

// bootSim is a one-node sim whose node counts its boots (a reboot interrupt that succeeds
// reboots it), complete with wants.
func bootSim(t *testing.T, wants ...Want) (*sim, *simNode) {
	t.Helper()
	s := newSim(t, 1, wants...)
	n := s.nodes["node-0"]
	n.boots, n.boot = 1, "boot-1"
	s.run(v1alpha1.StatusComplete)
	return s, n
}

// NodeWright #180 (reapplyOnReboot): a node that boots outside Gantry's reboot interrupts runs
// its flagged packages' apply and config again, without their interrupt (no cordon, no drain,
// no second reboot), same version; the unflagged package does not run. Gantry's own reboot
// (the driver's interrupt) re-gates nothing. The Ready message and Decision.Regated name the
// node, the boot IDs and the packages; the record's re-gate goes once they ran.
func TestRegateReappliesFlaggedPackages(t *testing.T) {
	s, n := bootSim(t, reapply(driver("1.0.0")), tool("1.0.0"))
	if got := s.stages("node-0", "driver"); got != "apply,config,interrupt,post-interrupt" || n.boot != "boot-2" {
		t.Fatalf("first rollout: driver ran %s, node at %s", got, n.boot)
	}
	if n.rec.BootID != "boot-2" || n.rec.Regate != nil || n.rec.Packages["driver"].Reapply {
		t.Fatalf("Gantry's own reboot re-gated the node: bootID %q regate %+v", n.rec.BootID, n.rec.Regate)
	}
	s.reset()
	if d := s.pass(); len(s.ran) != 0 || d.Regated != nil || d.Status != v1alpha1.StatusComplete {
		t.Fatalf("after Gantry's reboot: ran %v regated %v status %s", s.ran, d.Regated, d.Status)
	}
	flow, drains := n.rec.Packages["driver"].Flow, n.drains

	n.reboot() // outside Gantry: boot-3
	d := s.pass()
	want := "node node-0 rebooted outside Gantry (boot ID boot-2 → boot-3): re-applying driver"
	if d.Regated["node-0"] != want || d.Status != v1alpha1.StatusInProgress {
		t.Fatalf("regated %q status %s, want %q in_progress", d.Regated["node-0"], d.Status, want)
	}
	if ready := cond(t, d, v1alpha1.ConditionReady); !strings.Contains(ready.Message, "re-gating: node-0 rebooted outside Gantry (boot ID boot-2 → boot-3): re-applying driver") {
		t.Errorf("Ready message %q does not name the re-gate", ready.Message)
	}
	if g := n.rec.Regate; g == nil || g.From != "boot-2" || g.To != "boot-3" || !reflect.DeepEqual(g.Packages, []string{"driver"}) {
		t.Fatalf("record regate %+v", g)
	}
	s.settle()
	d = s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "apply,config" {
		t.Errorf("re-apply ran %q, want apply,config (no interrupt)", got)
	}
	if got := s.stages("node-0", "tool"); got != "" {
		t.Errorf("the unflagged package ran %q", got)
	}
	r := n.rec.Packages["driver"]
	if n.cordoned || n.drains != drains || n.boot != "boot-3" || r.Flow <= flow || r.Version != "1.0.0" || r.Reapply || !r.Done {
		t.Errorf("after the re-apply: cordoned %v drains %d→%d boot %s record %+v", n.cordoned, drains, n.drains, n.boot, r)
	}
	if n.rec.Regate != nil || n.rec.BootID != "boot-3" || n.rec.Rollout != v1alpha1.RolloutConverged || d.Regated != nil {
		t.Errorf("record after the re-gate: regate %+v bootID %q rollout %s; regated %v", n.rec.Regate, n.rec.BootID, n.rec.Rollout, d.Regated)
	}
}

// Gantry's reboot interrupt never counts as a reboot outside Gantry, whichever is seen first:
// the node's new boot ID while the interrupt runs (Skyhook #633), or the interrupt Pod's success
// before the node reports its new boot ID (the record keeps the boot ID the reboot started
// from until then). The next boot ID change, with no reboot of the set under way, re-gates.
func TestRegateNotForGantrysReboot(t *testing.T) {
	for _, podFirst := range []bool{false, true} {
		n := newRebootNode(t)
		n.f.Wants = []Want{reapply(driver("1.0.0"))}
		job := n.untilInterrupt()
		if podFirst {
			n.jobs[job] = JobFact{Succeeded: true}
			n.untilComplete()
			if r := n.rec.Packages["driver"]; r.BootID != "boot-1" || n.rec.BootID != "boot-1" {
				t.Fatalf("pod first: package bootID %q node bootID %q, want both boot-1 (the reboot not seen yet)", r.BootID, n.rec.BootID)
			}
			n.boot = "boot-2" // the node reports its reboot late
		} else {
			n.boot = "boot-2"
		}
		d := n.untilComplete()
		if got := strings.Join(n.ran, ","); got != "apply,config,interrupt,post-interrupt" || d.Regated != nil || n.rec.Regate != nil {
			t.Fatalf("pod first %v: ran %s regated %v regate %+v", podFirst, got, d.Regated, n.rec.Regate)
		}
		if r := n.rec.Packages["driver"]; r.BootID != "" || n.rec.BootID != "boot-2" || r.Reapply {
			t.Fatalf("pod first %v: package bootID %q node bootID %q reapply %v", podFirst, r.BootID, n.rec.BootID, r.Reapply)
		}
		n.boot = "boot-3"
		if d := n.pass(); d.Regated["node-0"] == "" || d.Status != v1alpha1.StatusInProgress {
			t.Fatalf("pod first %v: a reboot outside Gantry after it: regated %v status %s", podFirst, d.Regated, d.Status)
		}
	}
}

// A node's first boot ID is recorded, never acted on; a node that reports none never re-gates
// (nor when it stops reporting one).
func TestRegateBootIDRecorded(t *testing.T) {
	n := newRebootNode(t)
	n.boot = ""
	n.f.Wants = []Want{reapply(tool("1.0.0"))}
	n.untilComplete()
	if n.rec.BootID != "" {
		t.Fatalf("bootID %q with none reported", n.rec.BootID)
	}
	n.boot = "boot-a" // first seen: recorded only
	if d := n.pass(); d.Regated != nil || n.rec.BootID != "boot-a" || d.Status != v1alpha1.StatusComplete {
		t.Fatalf("first boot ID: regated %v bootID %q status %s", d.Regated, n.rec.BootID, d.Status)
	}
	n.boot = "" // stops reporting: nothing changes
	if d := n.pass(); d.Regated != nil || n.rec.BootID != "boot-a" {
		t.Fatalf("no boot ID: regated %v bootID %q", d.Regated, n.rec.BootID)
	}
	n.boot = "boot-b"
	if d := n.pass(); d.Regated["node-0"] != "node node-0 rebooted outside Gantry (boot ID boot-a → boot-b): re-applying tool" {
		t.Fatalf("regated %v", d.Regated)
	}
	n.settle()
	n.untilComplete()
	if got := strings.Join(n.ran, ","); got != "apply,config,apply,config" {
		t.Errorf("ran %s", got)
	}
}

// A re-gate seen while the set is paused is recorded and waits; meanwhile a config change of
// the flagged package makes its next flow apply and config (the fresh OS lost the apply), a
// dependent flagged package runs after its dependency, an unflagged one never.
func TestRegateHeldThenApplyWithNewConfig(t *testing.T) {
	dep := reapply(tool("1.0.0"))
	dep.Name, dep.DependsOn = "tuned", []string{"tool"}
	s, n := bootSim(t, reapply(tool("1.0.0")), dep, driver("1.0.0"))
	s.reset()
	s.facts.Paused = true
	n.reboot()
	d := s.pass()
	if d.Status != v1alpha1.StatusPaused || len(s.ran) != 0 || d.Regated["node-0"] == "" {
		t.Fatalf("paused: status %s ran %v regated %v", d.Status, s.ran, d.Regated)
	}
	if g := n.rec.Regate; g == nil || !reflect.DeepEqual(g.Packages, []string{"tool", "tuned"}) || !n.rec.Packages["tool"].Reapply || n.rec.Packages["driver"].Reapply {
		t.Fatalf("paused: regate %+v", g)
	}
	s.facts.Paused = false
	s.facts.Wants[0].Config = map[string]string{"mode": "fast"}
	var order []string
	for i := 0; i < 40 && (i == 0 || len(s.pendingJobs()) > 0 || n.rec.Regate != nil); i++ {
		s.pass()
		for _, name := range s.nodeNames() {
			for _, j := range s.nodes[name].pending {
				order = append(order, j.Package+"/"+string(j.Stage))
			}
		}
		s.settle()
	}
	if got := s.stages("node-0", "tool"); got != "apply,config" {
		t.Errorf("tool (config changed while re-gating) ran %q, want apply,config", got)
	}
	if got := s.stages("node-0", "tuned"); got != "apply,config" {
		t.Errorf("tuned ran %q", got)
	}
	if got := s.stages("node-0", "driver"); got != "" {
		t.Errorf("driver (unflagged) ran %q", got)
	}
	if len(order) < 3 || !strings.HasPrefix(strings.Join(order, ","), "tool/apply,tool/config") {
		t.Errorf("order %v: tuned must wait for tool", order)
	}
	if n.rec.Regate != nil {
		t.Errorf("regate left: %+v", n.rec.Regate)
	}
}

// runtimeFactsOf are the PlanRuntime facts of a one-set sim as the controller gathers them
// (runtimeFacts): the node's taint, touched once it has a record, re-gating from its record,
// and this set holding it while its status is not complete.
func runtimeFactsOf(d Decision, tainted map[string]bool) RuntimeFacts {
	f := RuntimeFacts{RuntimeRequired: true}
	for _, np := range d.Nodes {
		rn := RuntimeNode{Name: np.Name, Selected: true, Tainted: tainted[np.Name], Touched: np.Record != nil, Required: 1,
			Regating: np.Record != nil && np.Record.Regate != nil}
		if np.Status != v1alpha1.StatusComplete {
			rn.Holding = []string{"gpu-drivers"}
		}
		f.Nodes = append(f.Nodes, rn)
	}
	return f
}

// runtimeRequired: the re-gating node is tainted again in the pass that sees the reboot (it is
// touched: autoTaintNewNodes would not), keeps it while the flagged package re-applies, and
// loses it once the set is complete there again.
func TestRegateRuntimeTaint(t *testing.T) {
	s, n := bootSim(t, reapply(tool("1.0.0")))
	tainted := map[string]bool{}
	n.reboot()
	d := s.pass()
	rt := PlanRuntime(runtimeFactsOf(d, tainted))
	if !reflect.DeepEqual(rt.Taint, []string{"node-0"}) || !rt.Regated["node-0"] {
		t.Fatalf("re-gate: taint %v regated %v", rt.Taint, rt.Regated)
	}
	tainted["node-0"] = true
	for i := 0; i < 20; i++ {
		s.settle()
		d = s.pass()
		rt = PlanRuntime(runtimeFactsOf(d, tainted))
		if d.Status == v1alpha1.StatusComplete {
			break
		}
		if len(rt.Untaint) > 0 || len(rt.Taint) > 0 {
			t.Fatalf("pass %d (%s): taint %v untaint %v", i, d.Status, rt.Taint, rt.Untaint)
		}
	}
	if d.Status != v1alpha1.StatusComplete || !reflect.DeepEqual(rt.Untaint, []string{"node-0"}) {
		t.Fatalf("complete again: status %s untaint %v", d.Status, rt.Untaint)
	}
	if c := RuntimeCondition(1, "t", rt.Held); c.Status != metav1.ConditionFalse {
		t.Errorf("condition %+v", c)
	}
}
