package packageset

import (
	"strings"
	"testing"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Health checks (NixFleet's health gates) run in every soak round beside the packages'
// checks. Passing, the node converges; failing under rollback, only the package changed in the
// rollout (tool 1.0.0 → 1.1.0; driver untouched) goes back, and tool@1.1.0 is quarantined; the
// failure names the check and the round.
func TestHealthCheckRollsBackWhatChanged(t *testing.T) {
	s := newSim(t, 1, driver("1.0.0"), tool("1.0.0"))
	s.facts.Soak, s.facts.SoakInterval = 3*BackoffMin, BackoffMin
	s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	s.facts.HealthChecks = []HealthCheck{{Name: "dcgm", Timeout: DefaultHealthCheckTimeout}}
	probes := 0
	s.fail = func(j JobSpec, _ int) bool {
		if j.Probe != "" {
			probes++
			if j.Package != "" || j.Version != "" || !j.SoakCheck {
				t.Errorf("probe job %+v", j)
			}
		}
		return false
	}
	s.run(v1alpha1.StatusComplete)
	if probes < 2 {
		t.Fatalf("%d health check runs during the first soak, want one per round", probes)
	}
	s.facts.Wants = []Want{driver("1.0.0"), tool("1.1.0")}
	s.fail = func(j JobSpec, _ int) bool { return j.Probe == "dcgm" && j.SoakRound == 1 }
	stalledMsg := func(d Decision) string {
		for _, c := range d.Conditions {
			if c.Type == v1alpha1.ConditionStalled && c.Status == "True" {
				return c.Message
			}
		}
		return ""
	}
	var d Decision
	var failure string
	for i := 0; i < 60; i++ {
		d = s.pass()
		// From the pass that quarantines the version on, while the rollback runs and after
		// it, the set is Stalled and says why.
		if len(d.Quarantined) > 0 && !strings.Contains(stalledMsg(d), "health check dcgm failed") {
			t.Errorf("pass %d: Stalled %q, want the cause", i, stalledMsg(d))
		}
		for _, f := range d.Failures {
			if strings.Contains(f.Message, "health check") {
				failure = f.String()
			}
		}
		if len(d.Quarantined) > 0 && len(s.pendingJobs()) == 0 && d.Status == v1alpha1.StatusErroring {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if want := []string{"tool@1.1.0"}; !equalStrings(d.Quarantined, want) {
		t.Fatalf("quarantined %v, want %v (status %s)", d.Quarantined, want, d.Status)
	}
	if !strings.Contains(failure, "package tool") || !strings.Contains(failure, "health check dcgm failed in round 1/3") {
		t.Errorf("failure %q", failure)
	}
	n := s.nodes["node-0"]
	for i := 0; i < 30 && (n.rec.Packages["tool"].Version != "1.0.0" || !n.rec.Packages["tool"].Done); i++ {
		s.settle()
		s.now = s.now.Add(BackoffMin)
		if msg := stalledMsg(s.pass()); !strings.Contains(msg, "health check dcgm failed") {
			t.Errorf("pass %d of the rollback: Stalled %q, want the cause", i, msg)
		}
	}
	if v := n.rec.Packages["tool"].Version; v != "1.0.0" {
		t.Errorf("tool at %s after the rollback, want 1.0.0", v)
	}
	// Once the rollback is done, the set stays Stalled and still says why: the health check.
	s.settle()
	d = s.pass()
	if stalled := stalledMsg(d); !strings.Contains(stalled, "health check dcgm failed") || !strings.Contains(stalled, "tool@1.1.0") {
		t.Errorf("Stalled after the rollback %q, want the quarantine and its cause", stalledMsg(d))
	}
	if r := n.rec.Packages["driver"]; r.Version != "1.0.0" || r.Reverting {
		t.Errorf("driver (unchanged) was touched: %+v", *r)
	}
	if strings.Contains(s.stages("node-0", "driver"), "uninstall") {
		t.Errorf("driver stages %s", s.stages("node-0", "driver"))
	}
}

// Under halt, a failing health check makes the changed package erroring and retried; once the
// check passes, the node converges.
func TestHealthCheckHaltRetries(t *testing.T) {
	s := newSim(t, 1, tool("1.0.0"))
	s.facts.Soak, s.facts.SoakInterval = 2*BackoffMin, BackoffMin
	s.facts.HealthChecks = []HealthCheck{{Name: "http", Timeout: DefaultHealthCheckTimeout}}
	failures := 1
	s.fail = func(j JobSpec, _ int) bool {
		if j.Probe != "" && failures > 0 {
			failures--
			return true
		}
		return false
	}
	d := s.run(v1alpha1.StatusComplete)
	if r := s.nodes["node-0"].rec.Packages["tool"]; r.Restarts != 1 || len(d.Quarantined) != 0 {
		t.Errorf("tool %+v, quarantined %v", *r, d.Quarantined)
	}
}

// An observe-mode health check (NixFleet's observe mode) that fails in a soak round does not
// fail the node: the set completes, HealthChecksObserved is True naming the node, the check
// and the round (kept in the node's record after the failed Job is gone). An enforce-mode
// check beside it that passes changes nothing.
func TestHealthCheckObserveMode(t *testing.T) {
	s := newSim(t, 1, tool("1.0.0"))
	s.facts.Soak, s.facts.SoakInterval = 3*BackoffMin, BackoffMin
	s.facts.HealthChecks = []HealthCheck{{Name: "cis", Timeout: DefaultHealthCheckTimeout, Observe: true}, {Name: "dcgm", Timeout: DefaultHealthCheckTimeout}}
	s.fail = func(j JobSpec, _ int) bool { return j.Probe == "cis" && j.SoakRound == 1 }
	var d Decision
	for i := 0; i < 60; i++ {
		d = s.pass()
		if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if d.Status != v1alpha1.StatusComplete {
		t.Fatalf("status %s, want complete: an observe-mode check does not fail the node (failures %v)", d.Status, d.Failures)
	}
	var obs *string
	for _, c := range d.Conditions {
		if c.Type == ConditionHealthChecksObserved {
			if c.Status != "True" || c.Reason != "ObservedFailures" {
				t.Errorf("HealthChecksObserved %s/%s, want True/ObservedFailures", c.Status, c.Reason)
			}
			obs = &c.Message
		}
	}
	if obs == nil || !strings.Contains(*obs, "node-0: health check cis failed in round 1/3") {
		t.Errorf("HealthChecksObserved message %v, want the node, check and round", obs)
	}
}
