package packageset

import (
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Health gates at soak 0 (NixFleet's healthGate with soakMinutes = 0): with health checks and
// no soak window, each node runs every health check once after its last stage, and only those
// (the packages' checks are not re-run); the node is Soaking, in flight and in_progress until
// they passed (RFC-0005 §1.4: a soak of 0 must not converge before any probe ran), then
// Converged. The second node starts only then (budget 1).
func TestHealthCheckNoSoakRunsOnce(t *testing.T) {
	for _, soak := range []time.Duration{0, -1} { // unset; a wave's "0s" over a rollout soak
		s := newSim(t, 2, tool("1.0.0"))
		s.facts.HealthChecks = []HealthCheck{{Name: "dcgm", Timeout: DefaultHealthCheckTimeout}, {Name: "cis", Timeout: DefaultHealthCheckTimeout, Observe: true}}
		if soak < 0 {
			s.facts.Soak, s.facts.WaveSoaks = 10*time.Minute, []time.Duration{0}
		}
		probes := map[string]int{}
		var soakChecks int
		s.fail = func(j JobSpec, _ int) bool {
			switch {
			case j.Probe != "":
				probes[j.Node+"/"+j.Probe]++
				if j.SoakRound != 0 || !j.SoakCheck {
					t.Errorf("probe job %+v, want round 0 of a soak check", j)
				}
			case j.SoakCheck:
				soakChecks++
			}
			return false
		}
		sawGate := false
		var d Decision
		for i := 0; i < 100; i++ {
			d = s.pass()
			for name, n := range s.nodes {
				if n.rec != nil && n.rec.Rollout == v1alpha1.RolloutSoaking {
					sawGate = true
					if len(n.pending) == 0 {
						t.Fatalf("pass %d: %s Soaking with no health check Job pending", i, name)
					}
					if d.Status == v1alpha1.StatusComplete {
						t.Fatalf("pass %d: complete while %s waits for its health gate", i, name)
					}
				}
			}
			if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
				break
			}
			s.settle()
			s.now = s.now.Add(BackoffMin)
		}
		if d.Status != v1alpha1.StatusComplete {
			t.Fatalf("soak %v: status %s, want complete (failures %v)", soak, d.Status, d.Failures)
		}
		if !sawGate {
			t.Errorf("soak %v: no node went through Soaking for its health gate", soak)
		}
		want := map[string]int{"node-0/dcgm": 1, "node-0/cis": 1, "node-1/dcgm": 1, "node-1/cis": 1}
		for k, v := range want {
			if probes[k] != v {
				t.Errorf("soak %v: %s ran %d times, want %d (all %v)", soak, k, probes[k], v, probes)
			}
		}
		if soakChecks != 0 {
			t.Errorf("soak %v: %d package soak checks, want none with no soak window", soak, soakChecks)
		}
		for name, n := range s.nodes {
			if n.rec.Rollout != v1alpha1.RolloutConverged {
				t.Errorf("%s %s, want Converged", name, n.rec.Rollout)
			}
		}
	}
}

// Without health checks, soak 0 stays as it was: no Soaking, no check Job after the stages.
func TestNoSoakNoHealthChecksConvergesAtOnce(t *testing.T) {
	s := newSim(t, 1, tool("1.0.0"))
	s.fail = func(j JobSpec, _ int) bool {
		if j.SoakCheck {
			t.Errorf("soak check %+v with no soak and no health checks", j)
		}
		return false
	}
	for i := 0; i < 100; i++ {
		d := s.pass()
		if r := s.nodes["node-0"].rec; r != nil && r.Rollout == v1alpha1.RolloutSoaking {
			t.Fatalf("pass %d: Soaking with no soak and no health checks", i)
		}
		if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
			return
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	t.Fatal("never complete")
}

// A failing health gate at soak 0 under halt: the changed package is erroring with "health
// check http failed after the last stage: ...", retried with backoff; the retried flow runs
// the gate again (a new Job) and, passing, converges.
func TestHealthCheckNoSoakHaltRetries(t *testing.T) {
	s := newSim(t, 1, tool("1.0.0"))
	s.facts.HealthChecks = []HealthCheck{{Name: "http", Timeout: DefaultHealthCheckTimeout}}
	failures, runs := 1, 0
	s.fail = func(j JobSpec, _ int) bool {
		if j.Probe != "" {
			runs++
			if failures > 0 {
				failures--
				return true
			}
		}
		return false
	}
	var msg string
	for i := 0; i < 200; i++ {
		d := s.pass()
		for _, f := range d.Failures {
			msg = f.Message
		}
		if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	n := s.nodes["node-0"]
	if n.rec.Rollout != v1alpha1.RolloutConverged || n.rec.Packages["tool"].Restarts != 1 || runs != 2 {
		t.Errorf("rollout %s, tool %+v, %d gate runs; want Converged after one retry and 2 runs", n.rec.Rollout, *n.rec.Packages["tool"], runs)
	}
	if !strings.HasPrefix(msg, "health check http failed after the last stage: BackoffLimitExceeded") {
		t.Errorf("failure %q", msg)
	}
}

// A failing health gate at soak 0 under rollback: the changed package returns to its previous
// version and the failed one is quarantined, as for a failed soak round.
func TestHealthCheckNoSoakRollsBack(t *testing.T) {
	s := newSim(t, 1, tool("1.0.0"))
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	s.facts.HealthChecks = []HealthCheck{{Name: "dcgm", Timeout: DefaultHealthCheckTimeout}}
	s.run(v1alpha1.StatusComplete)
	s.facts.Wants = []Want{tool("1.1.0")}
	s.fail = func(j JobSpec, _ int) bool {
		return j.Probe == "dcgm" && s.nodes["node-0"].rec.Packages["tool"].Version == "1.1.0"
	}
	var d Decision
	for i := 0; i < 100; i++ {
		d = s.pass()
		if len(d.Quarantined) > 0 && len(s.pendingJobs()) == 0 && s.nodes["node-0"].rec.Packages["tool"].Done {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if want := []string{"tool@1.1.0"}; !equalStrings(d.Quarantined, want) {
		t.Fatalf("quarantined %v, want %v (status %s)", d.Quarantined, want, d.Status)
	}
	if v := s.nodes["node-0"].rec.Packages["tool"].Version; v != "1.0.0" {
		t.Errorf("tool at %s after the rollback, want 1.0.0", v)
	}
}
