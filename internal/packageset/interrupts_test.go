package packageset

import (
	"fmt"
	"maps"
	"slices"
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

// configInterrupt merges the configInterrupts of the keys that differ between two configs
// (changed, added, removed); nil when none of them has one.
func TestConfigInterrupt(t *testing.T) {
	svc := func(s ...string) v1alpha1.Interrupt {
		return v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: s}
	}
	cis := map[string]v1alpha1.Interrupt{
		"kernel": {Type: v1alpha1.InterruptReboot}, "runtime": svc("containerd"), "log": svc("journald", "containerd"), "bogus": {Type: "kexec"},
	}
	for _, tc := range []struct {
		name string
		a, b map[string]string
		cis  map[string]v1alpha1.Interrupt
		want string // "<type> <services>"; "" nil
		err  bool
	}{
		{"no configs", nil, nil, cis, "", false},
		{"no configInterrupts", map[string]string{"kernel": "2"}, map[string]string{"kernel": "1"}, nil, "", false},
		{"changed key without an interrupt", map[string]string{"mode": "2", "kernel": "1"}, map[string]string{"mode": "1", "kernel": "1"}, cis, "", false},
		{"unchanged key with an interrupt", map[string]string{"kernel": "1"}, map[string]string{"kernel": "1"}, cis, "", false},
		{"changed key with an interrupt", map[string]string{"kernel": "2"}, map[string]string{"kernel": "1"}, cis, "reboot []", false},
		{"added key", map[string]string{"runtime": "x"}, nil, cis, "service [containerd]", false},
		{"removed key", nil, map[string]string{"runtime": "x"}, cis, "service [containerd]", false},
		{"key emptied", map[string]string{"runtime": ""}, map[string]string{"runtime": "x"}, cis, "service [containerd]", false},
		{"two services merged, sorted, unique", map[string]string{"runtime": "y", "log": "y"}, map[string]string{"runtime": "x", "log": "x"}, cis,
			"service [containerd journald]", false},
		{"reboot wins", map[string]string{"runtime": "y", "kernel": "y"}, map[string]string{"runtime": "x", "kernel": "x"}, cis, "reboot []", false},
		{"unknown interrupt type", map[string]string{"bogus": "y"}, map[string]string{"bogus": "x"}, cis, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it, err := configInterrupt(tc.a, tc.b, tc.cis)
			got := ""
			if it != nil {
				got = fmt.Sprintf("%s %v", it.Type, it.Services)
			}
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("configInterrupt = %q, %v; want %q, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

// interruptPending: some package's flow still has its interrupt ahead or running (the node
// keeps its cordon); interruptCandidates: the packages ready for the merged interrupt (config
// complete), those in it, and whether every package with an interrupt has reached it.
func TestInterruptCandidates(t *testing.T) {
	reboot := &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	pr := func(stage Stage, state State, it *v1alpha1.Interrupt, done bool) *PackageRecord {
		return &PackageRecord{Stage: stage, State: state, Interrupt: it, Done: done}
	}
	for _, tc := range []struct {
		name           string
		pkgs           map[string]*PackageRecord
		pending        bool
		ready, running string
		reached        bool
	}{
		{"no packages", nil, false, "[]", "[]", true},
		{"no interrupts", map[string]*PackageRecord{"a": pr(conf, v1alpha1.StateComplete, nil, false)}, false, "[]", "[]", true},
		{"interrupt ahead, config running", map[string]*PackageRecord{"a": pr(conf, v1alpha1.StateInProgress, reboot, false)}, true, "[]", "[]", false},
		{"interrupt ahead, apply erroring", map[string]*PackageRecord{"a": pr(appl, v1alpha1.StateErroring, reboot, false)}, true, "[]", "[]", false},
		{"config complete: ready", map[string]*PackageRecord{"a": pr(conf, v1alpha1.StateComplete, reboot, false)}, true, "[a]", "[]", true},
		{"ready, sorted", map[string]*PackageRecord{"b": pr(conf, v1alpha1.StateComplete, reboot, false), "a": pr(conf, v1alpha1.StateComplete, reboot, false)},
			true, "[a b]", "[]", true},
		{"one ready, one not yet: none", map[string]*PackageRecord{"a": pr(conf, v1alpha1.StateComplete, reboot, false), "b": pr(upgr, v1alpha1.StateInProgress, reboot, false)},
			true, "[]", "[]", false},
		{"running, with the skipped one", map[string]*PackageRecord{"a": pr(intr, v1alpha1.StateInProgress, reboot, false), "b": pr(intr, v1alpha1.StateSkipped, reboot, false)},
			true, "[]", "[a b]", true},
		{"post-interrupt: past it", map[string]*PackageRecord{"a": pr(post, v1alpha1.StateInProgress, reboot, false)}, false, "[]", "[]", true},
		{"done flows do not count", map[string]*PackageRecord{"a": pr(post, v1alpha1.StateComplete, reboot, true), "b": pr(conf, v1alpha1.StateInProgress, reboot, true)},
			false, "[]", "[]", true},
		{"packages without an interrupt do not hold it up", map[string]*PackageRecord{"a": pr(conf, v1alpha1.StateComplete, reboot, false), "b": pr(appl, v1alpha1.StateInProgress, nil, false)},
			true, "[a]", "[]", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newNodePass(&SetFacts{Name: "s"}, NodeFacts{Name: "node-0", Record: &NodeRecord{Packages: tc.pkgs}}, nil, new(int), nil)
			if got := p.interruptPending(); got != tc.pending {
				t.Errorf("interruptPending = %v, want %v", got, tc.pending)
			}
			ready, running, reached := p.interruptCandidates()
			if fmt.Sprint(ready) != tc.ready || fmt.Sprint(running) != tc.running || reached != tc.reached {
				t.Errorf("interruptCandidates = %v, %v, %v; want %s, %s, %v", ready, running, reached, tc.ready, tc.running, tc.reached)
			}
		})
	}
}

// readyToInterrupt, step by step before the interrupt Job: no other stage of the set runs or
// errors on the node, a start is allowed, the node is cordoned (within the cordon slots), its
// non-interrupt pods are gone, and it is drained.
func TestReadyToInterrupt(t *testing.T) {
	for _, tc := range []struct {
		name          string
		other         State // state of another package of the set on the node
		hold          Status
		cordoned      bool
		slots         int
		nonInterrupt  []string
		drained       bool
		ready         bool
		cordon, drain bool
		slotsLeft     int
	}{
		{"another stage running", v1alpha1.StateInProgress, "", false, 1, nil, false, false, false, false, 1},
		{"another stage erroring", v1alpha1.StateErroring, "", true, 1, nil, true, false, false, false, 1},
		{"held", v1alpha1.StateComplete, v1alpha1.StatusPaused, false, 1, nil, false, false, false, false, 1},
		{"not cordoned: cordon, taking a slot", v1alpha1.StateComplete, "", false, 1, nil, false, false, true, false, 0},
		{"not cordoned, no cordon slot: wait", v1alpha1.StateComplete, "", false, 0, nil, false, false, false, false, 0},
		{"cordoned, non-interrupt pods running: no drain yet", v1alpha1.StateComplete, "", true, 1, []string{"ml/train-0"}, false, false, false, false, 1},
		{"cordoned, not drained: drain", v1alpha1.StateComplete, "", true, 1, nil, false, false, false, true, 1},
		{"cordoned and drained: ready", v1alpha1.StateComplete, "", true, 1, nil, true, true, false, false, 1},
		{"a skipped package does not hold it", v1alpha1.StateSkipped, "", true, 1, nil, true, true, false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := tc.slots
			rec := &NodeRecord{Packages: map[string]*PackageRecord{
				"driver": {Stage: conf, State: v1alpha1.StateComplete, Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}},
				"tool":   {Stage: appl, State: tc.other}}}
			p := newNodePass(&SetFacts{Name: "s"}, NodeFacts{Name: "node-0", Selected: true, Record: rec, Cordoned: tc.cordoned, NonInterrupt: tc.nonInterrupt, Drained: tc.drained},
				nil, &slots, nil)
			p.granted, p.hold = true, tc.hold
			if got := p.readyToInterrupt(); got != tc.ready || p.plan.Cordon != tc.cordon || p.plan.Drain != tc.drain || slots != tc.slotsLeft {
				t.Errorf("ready %v cordon %v drain %v slots %d; want %v %v %v %d", got, p.plan.Cordon, p.plan.Drain, slots, tc.ready, tc.cordon, tc.drain, tc.slotsLeft)
			}
		})
	}
}

// An abandoned erroring flow (Done) of a package no longer wanted does not hold the interrupt
// (a serial set starts its removal only after the flow waiting here; found by FuzzPlan); the
// same record of a package still wanted does (its retry or rollback is still to come).
func TestReadyToInterruptAbandoned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wanted bool
		done   bool
		ready  bool
	}{
		{"abandoned, no longer wanted", false, true, true},
		{"erroring, no longer wanted, not yet abandoned", false, false, false},
		{"done erroring, still wanted", true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slots := 1
			rec := &NodeRecord{Packages: map[string]*PackageRecord{
				"driver": {Stage: conf, State: v1alpha1.StateComplete, Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}},
				"tool":   {Stage: appl, State: v1alpha1.StateErroring, Done: tc.done}}}
			wants := []Want{driver("1.0.0")}
			if tc.wanted {
				wants = append(wants, tool("1.0.0"))
			}
			p := newNodePass(&SetFacts{Name: "s", Serial: true}, NodeFacts{Name: "node-0", Selected: true, Record: rec, Cordoned: true, Drained: true}, wants, &slots, nil)
			p.granted = true
			if got := p.readyToInterrupt(); got != tc.ready {
				t.Errorf("ready %v, want %v", got, tc.ready)
			}
		})
	}
}

// startInterrupt merges the ready packages' interrupts: the winner (first of the highest rank)
// runs one Job with the merged interrupt, the others are skipped; a reboot records the node's
// boot ID (reboot.go reads it back).
func TestStartInterrupt(t *testing.T) {
	svc := func(s ...string) *v1alpha1.Interrupt {
		return &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: s}
	}
	reboot := &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}
	for _, tc := range []struct {
		name   string
		its    map[string]*v1alpha1.Interrupt // package → its interrupt; started in name order
		winner string
		merged string // "<type> <services>"
		bootID string // recorded on the winner
		err    bool
	}{
		{"one service", map[string]*v1alpha1.Interrupt{"a": svc("x")}, "a", "service [x]", "", false},
		{"services merge", map[string]*v1alpha1.Interrupt{"a": svc("y"), "b": svc("x", "y")}, "a", "service [x y]", "", false},
		{"reboot wins and records the boot ID", map[string]*v1alpha1.Interrupt{"a": svc("x"), "b": reboot, "c": reboot}, "b", "reboot []", "boot-1", false},
		{"unknown type", map[string]*v1alpha1.Interrupt{"a": {Type: "kexec"}}, "", "", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &NodeRecord{Packages: map[string]*PackageRecord{}}
			for name, it := range tc.its {
				rec.Packages[name] = &PackageRecord{Version: "1.0.0", Stage: conf, State: v1alpha1.StateComplete, Interrupt: it, Restarts: 2, Message: "old", Flow: 1}
			}
			p := newNodePass(&SetFacts{Name: "s"}, NodeFacts{Name: "node-0", Selected: true, BootID: "boot-1"}, nil, new(int), nil)
			p.rec = rec
			names := slices.Sorted(maps.Keys(tc.its))
			err := p.startInterrupt(names)
			if tc.err {
				if err == nil || len(p.plan.Jobs) != 0 {
					t.Errorf("startInterrupt = %v, jobs %v; want an error, no Job", err, p.plan.Jobs)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				r := rec.Packages[name]
				wantState := v1alpha1.StateSkipped
				if name == tc.winner {
					wantState = v1alpha1.StateInProgress
				}
				if r.Stage != intr || r.State != wantState || r.Restarts != 0 || r.Message != "" {
					t.Errorf("%s: %s/%s restarts %d %q; want interrupt/%s, reset", name, r.Stage, r.State, r.Restarts, r.Message, wantState)
				}
				if wantBoot := map[bool]string{true: tc.bootID}[name == tc.winner]; r.BootID != wantBoot {
					t.Errorf("%s: boot ID %q, want %q", name, r.BootID, wantBoot)
				}
			}
			w := rec.Packages[tc.winner]
			if got := fmt.Sprintf("%s %v", w.Interrupt.Type, w.Interrupt.Services); got != tc.merged {
				t.Errorf("winner's interrupt %s, want %s", got, tc.merged)
			}
			if len(p.plan.Jobs) != 1 || p.plan.Jobs[0].Package != tc.winner || p.plan.Jobs[0].Stage != intr || p.plan.Jobs[0].Interrupt == nil ||
				fmt.Sprintf("%s %v", p.plan.Jobs[0].Interrupt.Type, p.plan.Jobs[0].Interrupt.Services) != tc.merged {
				t.Errorf("jobs %+v, want one interrupt Job of %s running %s", p.plan.Jobs, tc.winner, tc.merged)
			}
		})
	}
}
