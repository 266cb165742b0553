package packageset

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// NixFleet's host table, row by row, plus ours; and transitions it does not draw.
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
		var te *lifecycle.TransitionError
		if err := RolloutTransition(tr[0], tr[1]); !errors.As(err, &te) {
			t.Errorf("%s → %s accepted", tr[0], tr[1])
		}
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

// Soak rounds (NixFleet Soaking: "probes have started; soak window has not yet elapsed";
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

// Soak through the machine (NixFleet), budget 1: a node is Soaking (in flight: the next node
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

// SoakInterval: an explicit interval (spec.rollout.soakCheckInterval) at least
// MinSoakCheckInterval; unset (0 or less) soak/3, at least MinDefaultSoakCheckInterval.
func TestSoakInterval(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		soak, interval, want time.Duration
	}{
		{"default: a third of the window", time.Minute, 0, 20 * time.Second},
		{"default: a third of 15s is the floor", 15 * time.Second, 0, 5 * time.Second},
		{"default: floor 5s", 9 * time.Second, 0, MinDefaultSoakCheckInterval},
		{"default without a window: floor", 0, 0, MinDefaultSoakCheckInterval},
		{"negative interval: the default", time.Minute, -time.Second, 20 * time.Second},
		{"explicit", time.Minute, 10 * time.Second, 10 * time.Second},
		{"explicit below the floor: 1s", time.Minute, 100 * time.Millisecond, MinSoakCheckInterval},
		{"explicit at the floor", time.Minute, time.Second, time.Second},
		{"explicit below the default's floor: kept", time.Minute, 2 * time.Second, 2 * time.Second},
		{"explicit longer than the window: kept", time.Minute, 2 * time.Minute, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SoakInterval(tc.soak, tc.interval); got != tc.want {
				t.Errorf("SoakInterval(%s, %s) = %s, want %s", tc.soak, tc.interval, got, tc.want)
			}
		})
	}
}

// SoakRounds is the index of the last round, ceil(soak/interval) (0 without a window); the
// last round starts when the window ends, the one before it before the end.
func TestSoakRoundsLast(t *testing.T) {
	for _, tc := range []struct {
		name           string
		soak, interval time.Duration
		want           int
	}{
		{"exact: 60s/20s", time.Minute, 20 * time.Second, 3},
		{"rounded up: 60s/25s", time.Minute, 25 * time.Second, 3},
		{"rounded up: 61s/20s", 61 * time.Second, 20 * time.Second, 4},
		{"window shorter than the interval", 2 * time.Second, 5 * time.Second, 1},
		{"window equal to the interval", 20 * time.Second, 20 * time.Second, 1},
		{"tiny window", time.Nanosecond, time.Hour, 1},
		{"no window", 0, 5 * time.Second, 0},
		{"negative window", -time.Minute, 5 * time.Second, 0},
		{"no interval", time.Minute, 0, 0},
		{"negative interval", time.Minute, -time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			last := SoakRounds(tc.soak, tc.interval)
			if last != tc.want {
				t.Fatalf("SoakRounds(%s, %s) = %d, want %d", tc.soak, tc.interval, last, tc.want)
			}
			if last == 0 {
				return
			}
			if got := SoakRoundStart(last, tc.soak, tc.interval); got != tc.soak {
				t.Errorf("last round %d starts at %s, want the window's end %s", last, got, tc.soak)
			}
			if got := SoakRoundStart(last-1, tc.soak, tc.interval); got >= tc.soak {
				t.Errorf("round %d starts at %s, not before the window's end %s", last-1, got, tc.soak)
			}
		})
	}
}

// SoakRoundStart: round k is due min(k·interval, soak) after the node began Soaking; round 0
// (and below) at once; without an interval, or past the last round, at the window's end;
// never overflowing for a huge k.
func TestSoakRoundStart(t *testing.T) {
	for _, tc := range []struct {
		name           string
		k              int
		soak, interval time.Duration
		want           time.Duration
	}{
		{"round 0 at once", 0, time.Minute, 20 * time.Second, 0},
		{"negative round: at once", -1, time.Minute, 20 * time.Second, 0},
		{"round 1", 1, time.Minute, 20 * time.Second, 20 * time.Second},
		{"round 2", 2, time.Minute, 20 * time.Second, 40 * time.Second},
		{"last round at the window's end", 3, time.Minute, 20 * time.Second, time.Minute},
		{"uneven: round 2 before the end", 2, time.Minute, 25 * time.Second, 50 * time.Second},
		{"uneven: the last round capped at the end", 3, time.Minute, 25 * time.Second, time.Minute},
		{"past the last round: the end", 10, time.Minute, 20 * time.Second, time.Minute},
		{"no interval: the end", 1, time.Minute, 0, time.Minute},
		{"negative interval: the end", 1, time.Minute, -time.Second, time.Minute},
		{"no window: round 1 at 0", 1, 0, 5 * time.Second, 0},
		{"huge round: no overflow", 1 << 40, time.Hour, time.Second, time.Hour},
		{"huge round, huge interval: no overflow", 1 << 40, time.Hour, time.Duration(1) << 62, time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SoakRoundStart(tc.k, tc.soak, tc.interval); got != tc.want {
				t.Errorf("SoakRoundStart(%d, %s, %s) = %s, want %s", tc.k, tc.soak, tc.interval, got, tc.want)
			}
		})
	}
}

// RolloutTransition over every pair of NixFleet's host states ("" for a node without one):
// exactly NixFleet's arrows and ours are legal (staying is always legal), every other pair is
// a TransitionError naming both states.
func TestRolloutTransitionPairs(t *testing.T) {
	const (
		Pe = v1alpha1.RolloutPending
		Ac = v1alpha1.RolloutActivating
		De = v1alpha1.RolloutDeferred
		So = v1alpha1.RolloutSoaking
		Co = v1alpha1.RolloutConverged
		Fa = v1alpha1.RolloutFailed
		Re = v1alpha1.RolloutReverted
	)
	legal := []struct {
		name     string
		from, to v1alpha1.RolloutState
	}{
		{"first rollout", "", Pe},
		{"NixFleet: activation starts", Pe, Ac},
		{"ours: nothing to do", Pe, Co},
		{"NixFleet: stages done", Ac, So},
		{"NixFleet: a stage fails", Ac, Fa},
		{"NixFleet: interrupt pending", Ac, De},
		{"ours: spec changed while activating", Ac, Pe},
		{"NixFleet: interrupt done", De, So},
		{"ours: interrupt failed", De, Fa},
		{"ours: spec changed while deferred", De, Pe},
		{"NixFleet: soak passed", So, Co},
		{"NixFleet: soak check failed", So, Fa},
		{"ours: spec changed while soaking", So, Pe},
		{"ours: spec changed after converging", Co, Pe},
		{"NixFleet: rolled back", Fa, Re},
		{"ours: retry (halt)", Fa, Ac},
		{"ours: retry of an interrupt", Fa, De},
		{"ours: spec changed after a failure", Fa, Pe},
		{"NixFleet: a new version after a rollback", Re, Pe},
	}
	states := []v1alpha1.RolloutState{"", Pe, Ac, De, So, Co, Fa, Re}
	ok := map[[2]v1alpha1.RolloutState]string{}
	for _, l := range legal {
		ok[[2]v1alpha1.RolloutState{l.from, l.to}] = l.name
	}
	for _, from := range states {
		for _, to := range states {
			why, isLegal := ok[[2]v1alpha1.RolloutState{from, to}]
			if from == to {
				why, isLegal = "stays", true
			}
			if !isLegal {
				why = "illegal"
			}
			t.Run(fmt.Sprintf("%q→%q %s", from, to, why), func(t *testing.T) {
				err := RolloutTransition(from, to)
				var te *lifecycle.TransitionError
				switch {
				case isLegal && err != nil:
					t.Errorf("rejected: %v", err)
				case !isLegal && !errors.As(err, &te):
					t.Errorf("accepted (err %v)", err)
				case !isLegal && (te.Kind != "rollout" || te.From != string(from) || te.To != string(to)):
					t.Errorf("error %+v does not name the transition", te)
				}
			})
		}
	}
	if len(ok) != len(legal) {
		t.Errorf("duplicate legal rows")
	}
}

// walk moves a node's rollout state to the target through the states NixFleet requires in
// between, stamps Since when it moved, and keeps the soak round only while Soaking; a target
// it cannot reach is an error that leaves the state alone.
func TestWalk(t *testing.T) {
	const (
		Pe = v1alpha1.RolloutPending
		Ac = v1alpha1.RolloutActivating
		De = v1alpha1.RolloutDeferred
		So = v1alpha1.RolloutSoaking
		Co = v1alpha1.RolloutConverged
		Fa = v1alpha1.RolloutFailed
		Re = v1alpha1.RolloutReverted
	)
	t0, now := time.Unix(1_700_000_000, 0), time.Unix(1_700_000_100, 0)
	for _, tc := range []struct {
		name         string
		prev, target v1alpha1.RolloutState
		err          bool
	}{
		{"stay Converged", Co, Co, false},
		{"stay Soaking", So, So, false},
		{"direct: Pending → Activating", Pe, Ac, false},
		{"new node with nothing to do: via Pending", "", Co, false},
		{"new node starting: via Pending", "", Ac, false},
		{"new node failing in its first pass: via Pending, Activating", "", Fa, false},
		{"new node withdrawn in its first pass: via Pending, Activating, Failed", "", Re, false},
		{"a spec change reopens: Converged → Pending → Activating", Co, Ac, false},
		{"Converged → Soaking: via Pending, Activating", Co, So, false},
		{"Reverted → Activating: via Pending", Re, Ac, false},
		{"no soak: Activating → Soaking → Converged", Ac, Co, false},
		{"no soak: Deferred → Soaking → Converged", De, Co, false},
		{"rolled back in the pass that saw the failure: via Failed", Ac, Re, false},
		{"Soaking → Reverted: via Failed", So, Re, false},
		{"a retry that completes in one pass: Failed → Activating → Soaking", Fa, So, false},
		{"a retry converging in one pass", Fa, Co, false},
		{"Pending → Reverted: via Activating, Failed", Pe, Re, false},
		{"unknown state in the record", "Bogus", Co, true},
		{"unknown target", Ac, "Bogus", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newNodePass(&SetFacts{Now: now}, NodeFacts{Name: "node-0"}, nil, new(int), nil)
			p.rec.Rollout, p.rec.Since, p.rec.SoakRound = tc.prev, t0, 2
			err := p.walk(tc.prev, tc.target)
			if tc.err {
				var te *lifecycle.TransitionError
				if !errors.As(err, &te) || p.rec.Rollout != tc.prev {
					t.Errorf("walk = %v, rollout %q; want a *lifecycle.TransitionError and %q kept", err, p.rec.Rollout, tc.prev)
				}
				return
			}
			if err != nil || p.rec.Rollout != tc.target {
				t.Fatalf("walk = %v, rollout %q; want %q", err, p.rec.Rollout, tc.target)
			}
			if moved := tc.prev != tc.target; moved != p.rec.Since.Equal(now) {
				t.Errorf("Since %s (moved %v)", p.rec.Since, moved)
			}
			if wantRound := map[bool]int{true: 2, false: 0}[tc.target == So]; p.rec.SoakRound != wantRound {
				t.Errorf("soak round %d, want %d", p.rec.SoakRound, wantRound)
			}
		})
	}
}
