package packageset

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// withSpec gives w the API spec JSON the provider writes (WantOf), so records keep the
// package's interrupt as a real set's do.
func withSpec(w Want) Want {
	p := v1alpha1.Package{Name: w.Name, Version: w.Version, Image: w.Image, Interrupt: w.Interrupt}
	w.Spec, _ = json.Marshal(p)
	return w
}

// TestUninstallInterrupt: NodeWright's interrupt after an uninstall. A package with an
// interrupt that is uninstalled (removed from the set, uninstall.apply, or the set deleted)
// has its node cordoned and drained within the budget before the uninstall stage, runs its
// interrupt after it (uninstall-interrupt), then its record goes and the node is uncordoned;
// a package without an interrupt is uninstalled without a cordon.
func TestUninstallInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		interrupt bool
		deleting  bool
		want      string
	}{
		{"removed, reboot", true, false, "uninstall,uninstall-interrupt"},
		{"set deleted, reboot", true, true, "uninstall,uninstall-interrupt"},
		{"removed, no interrupt", false, false, "uninstall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := withSpec(driver("1.0.0"))
			if !tc.interrupt {
				d.Interrupt = nil
				d = withSpec(d)
			}
			s := newSim(t, 3, d)
			s.run(v1alpha1.StatusComplete)
			s.reset()
			s.maxCord = 0
			s.facts.Wants = nil
			s.facts.Deleting = tc.deleting
			var dec Decision
			for i := 0; i < 100; i++ {
				dec = s.pass()
				if tc.deleting && dec.Finished || !tc.deleting && dec.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
					break
				}
				s.settle()
				s.now = s.now.Add(BackoffMax)
			}
			for _, n := range s.nodeNames() {
				if got := s.stages(n, "driver"); got != tc.want {
					t.Errorf("%s: stages %q, want %q", n, got, tc.want)
				}
				if s.nodes[n].cordoned {
					t.Errorf("%s still cordoned", n)
				}
				if len(s.nodes[n].recPackages()) != 0 {
					t.Errorf("%s keeps records %v", n, s.nodes[n].recPackages())
				}
			}
			wantCord := 0
			if tc.interrupt {
				wantCord = 1 // the budget: one node at a time
			}
			if s.maxCord != wantCord {
				t.Errorf("at most %d nodes cordoned at once, want %d", s.maxCord, wantCord)
			}
		})
	}
}

// TestUninstallInterruptWaitsForDrain: the uninstall stage of a package with an interrupt
// starts only once the node is cordoned, its non-interrupt pods are gone and it is drained
// (NodeWright EnsureNodeIsReadyForInterrupt before the uninstall).
func TestUninstallInterruptWaitsForDrain(t *testing.T) {
	s := newSim(t, 1, withSpec(driver("1.0.0")))
	s.run(v1alpha1.StatusComplete)
	s.reset()
	n := s.nodes["node-0"]
	n.nonInterrupt = []string{"ml/train-0"}
	n.undrained = true
	s.facts.Wants = nil
	for i := 0; i < 3; i++ {
		d := s.pass()
		if got := s.stages("node-0", "driver"); got != "" {
			t.Fatalf("pass %d: stages %q before the node drained", i, got)
		}
		if d.Status != v1alpha1.StatusInProgress {
			t.Errorf("pass %d: status %s, want in_progress", i, d.Status)
		}
		if i > 0 && !strings.Contains(d.DrainBlockers["node-0"], "ml/train-0") { // cordoned by pass 0
			t.Errorf("pass %d: drain blockers %v", i, d.DrainBlockers)
		}
	}
	if !n.cordoned || n.drains != 0 {
		t.Fatalf("cordoned %v, drains %d: want cordoned, no drain while the non-interrupt pod runs", n.cordoned, n.drains)
	}
	n.nonInterrupt = nil
	s.pass()
	if n.drains != 1 || s.stages("node-0", "driver") != "" {
		t.Fatalf("drains %d stages %q: want one drain, no stage yet", n.drains, s.stages("node-0", "driver"))
	}
	n.undrained = false
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "uninstall,uninstall-interrupt" {
		t.Errorf("stages %q", got)
	}
}

// TestUninstallInterruptUncancellable: once the uninstall stage completed, the interrupt runs
// even if the package is wanted again (NodeWright: uninstall-interrupt is uncancellable);
// then the package is installed anew.
func TestUninstallInterruptUncancellable(t *testing.T) {
	d := withSpec(driver("1.0.0"))
	s := newSim(t, 1, d)
	s.run(v1alpha1.StatusComplete)
	s.reset()
	s.facts.Wants = nil
	for i := 0; i < 20 && s.stages("node-0", "driver") != "uninstall"; i++ {
		s.pass()
	}
	s.settle() // the uninstall Job succeeded
	s.facts.Wants = []Want{d}
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "uninstall,uninstall-interrupt,apply,config,interrupt,post-interrupt" {
		t.Errorf("stages %q", got)
	}
}

// TestUninstallInterruptReboot: a reboot after an uninstall is done when the node's boot ID
// changed, even if its Job was lost with the reboot.
func TestUninstallInterruptReboot(t *testing.T) {
	spec := withSpec(driver("1.0.0")).Spec
	rec := &NodeRecord{Rollout: v1alpha1.RolloutActivating, Flows: 2, Packages: map[string]*PackageRecord{"driver": {Version: "1.0.0", Stage: v1alpha1.StageUninstallInterrupt,
		State: v1alpha1.StateErroring, Removing: true, Uninstall: true, Flow: 2, Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}, BootID: "boot-1", Spec: spec}}}
	f := SetFacts{Name: "gpu-drivers", Now: time.Unix(1_700_000_000, 0), Nodes: []NodeFacts{{Name: "node-0", Selected: true, Record: rec, Cordoned: true, BootID: "boot-2", Jobs: map[string]JobFact{}}}}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	np := d.Nodes[0]
	if np.Record != nil && len(np.Record.Packages) > 0 {
		t.Fatalf("record %+v, want the removal done", np.Record.Packages["driver"])
	}
	if !np.Uncordon {
		t.Error("node not uncordoned")
	}
}

func TestRemovalInterrupt(t *testing.T) {
	reboot := &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	svc := &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"a"}}
	spec, _ := json.Marshal(v1alpha1.Package{Name: "p", Version: "1", Interrupt: reboot})
	noIt, _ := json.Marshal(v1alpha1.Package{Name: "p", Version: "1"})
	for _, tc := range []struct {
		name string
		r    PackageRecord
		want *v1alpha1.Interrupt
	}{
		{"the spec's interrupt", PackageRecord{Spec: spec, Interrupt: svc}, reboot},
		{"a config interrupt is not the package's", PackageRecord{Spec: noIt, Interrupt: svc}, nil},
		{"no spec kept: the record's", PackageRecord{Interrupt: svc}, svc},
		{"no spec kept, a config change: none", PackageRecord{Interrupt: svc, Prev: &Applied{}}, nil},
		{"none", PackageRecord{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RemovalInterrupt(&tc.r)
			if (got == nil) != (tc.want == nil) || got != nil && got.Type != tc.want.Type {
				t.Errorf("RemovalInterrupt = %+v, want %+v", got, tc.want)
			}
		})
	}
}
