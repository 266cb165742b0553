package packageset

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Every transition of a node's drain (drainStep) as a row: the record before (none, draining
// since, failed since), the facts (drained or not), the time elapsed and spec.drain; the answer
// (interrupt now?), whether the evictions are planned, the record after, and what the pass
// reports (a failure, a DrainTimeouts line, the requeue).
func TestDrainStep(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	fail := DrainSpec{Timeout: 10 * time.Minute, OnTimeout: v1alpha1.DrainTimeoutFail, DeleteEmptyDirData: true, Force: true}
	cont := DrainSpec{Timeout: 10 * time.Minute, OnTimeout: v1alpha1.DrainTimeoutContinue, DeleteEmptyDirData: true, Force: true}
	today := DrainSpecOf(nil)
	failed := func(n int32, since time.Time) *DrainRecord {
		return &DrainRecord{Since: since, Failures: n, Message: "drain timed out after 10m0s; pods left: app/web (not evicted yet)"}
	}
	for _, tc := range []struct {
		name      string
		spec      DrainSpec
		rec       *DrainRecord
		drained   bool
		elapsed   time.Duration // now - t0
		ok, evict bool
		after     *DrainRecord // nil: none
		failure   string       // the failure's message ("" none)
		timeout   string       // a part of the DrainTimeouts line ("" none)
		requeue   time.Duration
	}{
		{name: "drained at once: interrupt, no record", spec: fail, drained: true, ok: true},
		{name: "first pass: draining since now, evictions, requeue at the timeout", spec: fail, evict: true,
			after: &DrainRecord{Since: t0}, requeue: 10 * time.Minute},
		{name: "no timeout: draining, no requeue of its own", spec: today, evict: true, after: &DrainRecord{Since: t0}},
		{name: "no timeout: still draining a day later", spec: today, rec: &DrainRecord{Since: t0}, elapsed: 24 * time.Hour, evict: true,
			after: &DrainRecord{Since: t0}},
		{name: "draining before the timeout: evictions again", spec: fail, rec: &DrainRecord{Since: t0}, elapsed: 4 * time.Minute, evict: true,
			after: &DrainRecord{Since: t0}, requeue: 6 * time.Minute},
		{name: "drained before the timeout: interrupt, record gone", spec: fail, rec: &DrainRecord{Since: t0}, elapsed: 9 * time.Minute, drained: true, ok: true},
		{name: "timeout, Fail: failed, erroring, retried after 5s", spec: fail, rec: &DrainRecord{Since: t0}, elapsed: 10 * time.Minute,
			after:   &DrainRecord{Since: t0.Add(10 * time.Minute), Failures: 1, Message: "drain timed out after 10m0s; pods left: app/web (eviction refused: Cannot evict pod)"},
			failure: "drain timed out after 10m0s; pods left: app/web (eviction refused: Cannot evict pod)",
			timeout: "onTimeout Fail: the node is erroring and stays cordoned, its drain is tried again in 5s", requeue: 5 * time.Second},
		{name: "timeout, Continue: interrupt with the pods left", spec: cont, rec: &DrainRecord{Since: t0}, elapsed: 11 * time.Minute, ok: true,
			timeout: "drain timed out after 10m0s; pods left: app/web (eviction refused: Cannot evict pod); onTimeout Continue: the interrupt runs with them on the node"},
		{name: "drained at the timeout: interrupt, no timeout reported", spec: fail, rec: &DrainRecord{Since: t0}, elapsed: time.Hour, drained: true, ok: true},
		{name: "failed, in the backoff: no evictions, failure reported", spec: fail, rec: failed(2, t0), elapsed: 9 * time.Second,
			after: failed(2, t0), failure: "drain timed out after 10m0s; pods left: app/web (not evicted yet)", requeue: time.Second},
		{name: "failed, backoff over: draining again since now", spec: fail, rec: failed(2, t0), elapsed: 10 * time.Second, evict: true,
			after: &DrainRecord{Since: t0.Add(10 * time.Second), Failures: 2}, requeue: 10 * time.Minute},
		{name: "failed, pods gone by themselves: interrupt", spec: fail, rec: failed(1, t0), elapsed: time.Second, drained: true, ok: true},
		{name: "second timeout: backoff doubles", spec: fail, rec: &DrainRecord{Since: t0, Failures: 1}, elapsed: 10 * time.Minute,
			after:   &DrainRecord{Since: t0.Add(10 * time.Minute), Failures: 2, Message: "drain timed out after 10m0s; pods left: app/web (eviction refused: Cannot evict pod)"},
			failure: "drain timed out", timeout: "tried again in 10s", requeue: 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &SetFacts{Now: t0.Add(tc.elapsed), Drain: tc.spec}
			rec := &NodeRecord{Packages: map[string]*PackageRecord{"driver": {Version: "1.0.0", Stage: conf, State: v1alpha1.StateComplete,
				Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}}}}
			if tc.rec != nil {
				d := *tc.rec
				rec.Drain = &d
			}
			n := NodeFacts{Name: "node-0", Cordoned: true, Drained: tc.drained, Record: rec}
			if !tc.drained {
				n.Evicting = []string{"app/web"}
				if DrainTimedOut(rec, tc.spec, f.Now) {
					n.EvictRefusals = map[string]string{"app/web": "Cannot evict pod"}
				}
			}
			p := newNodePass(f, n, nil, ptr(1), nil)
			p.plan = NodePlan{Name: n.Name}
			ok := p.drained()
			if again := p.drained(); again != ok {
				t.Errorf("second call %v, first %v", again, ok)
			}
			if ok != tc.ok || p.plan.Drain != tc.evict {
				t.Errorf("ok %v evict %v, want %v %v", ok, p.plan.Drain, tc.ok, tc.evict)
			}
			if got := p.rec.Drain; (got == nil) != (tc.after == nil) || got != nil && *got != *tc.after {
				t.Errorf("record %+v, want %+v", got, tc.after)
			}
			switch {
			case tc.failure == "" && len(p.failures) > 0:
				t.Errorf("failures %v", p.failures)
			case tc.failure != "" && (len(p.failures) != 1 || !strings.Contains(p.failures[0].Message, tc.failure) ||
				p.failures[0].Package != "driver" || p.failures[0].Stage != intr):
				t.Errorf("failures %+v, want one for driver at interrupt with %q", p.failures, tc.failure)
			}
			if tc.timeout == "" && p.drainTimeout != "" || !strings.Contains(p.drainTimeout, tc.timeout) {
				t.Errorf("drainTimeout %q, want %q", p.drainTimeout, tc.timeout)
			}
			if p.requeue != tc.requeue {
				t.Errorf("requeue %s, want %s", p.requeue, tc.requeue)
			}
		})
	}
}

// stuck cordons node-0 of s (a driver with a reboot interrupt) and leaves a pod the Eviction
// API refuses on it: it returns once the first drain was planned.
func stuck(t *testing.T, s *sim) *simNode {
	t.Helper()
	n := s.nodes["node-0"]
	n.evicting = []string{"app/web"}
	n.refusals = map[string]string{"app/web": "Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget web needs 1 healthy pods and has 1 currently)"}
	for i := 0; i < 20 && n.drains == 0; i++ {
		s.pass()
		s.settle()
	}
	if n.drains == 0 || !n.cordoned {
		t.Fatalf("never drained: cordoned %v", n.cordoned)
	}
	return n
}

// drainTimeoutSet is a one-node set whose driver reboots, with spec.drain.
func drainTimeoutSet(t *testing.T, d *v1alpha1.Drain) *sim {
	s := newSim(t, 1, driver("1.0.0"))
	s.facts.Drain = DrainSpecOf(d)
	return s
}

// onTimeout Fail: a drain a PodDisruptionBudget refuses is retried every pass until the
// timeout; then the node is erroring (the set erroring, the failure naming the pod and the
// budget, the DrainBlocked condition too, a DrainTimeout line once), stays cordoned, runs no
// interrupt and evicts nothing during the backoff; after it the drain runs again with a new
// clock; once the pod is gone the interrupt runs and the set completes, uncordoned, no drain
// left in the record.
func TestDrainTimeoutFail(t *testing.T) {
	s := drainTimeoutSet(t, &v1alpha1.Drain{Timeout: &metav1.Duration{Duration: 10 * time.Minute}})
	n := stuck(t, s)
	start := n.rec.Drain.Since
	for i := 0; i < 9; i++ {
		s.now = s.now.Add(time.Minute)
		if d := s.pass(); d.Status != v1alpha1.StatusInProgress || len(d.DrainTimeouts) > 0 {
			t.Fatalf("before the timeout: status %s, timeouts %v", d.Status, d.DrainTimeouts)
		}
	}
	if n.drains != 10 || !n.rec.Drain.Since.Equal(start) {
		t.Fatalf("%d drains (want one a pass), drain %+v", n.drains, n.rec.Drain)
	}
	s.now = start.Add(10 * time.Minute)
	d := s.pass()
	want := "drain timed out after 10m0s; pods left: app/web (eviction refused: Cannot evict pod as it would violate the pod's disruption budget. " +
		"(The disruption budget web needs 1 healthy pods and has 1 currently))"
	if d.Status != v1alpha1.StatusErroring || len(d.Failures) != 1 || d.Failures[0].String() != "node node-0 package driver stage interrupt: "+want {
		t.Fatalf("at the timeout: status %s, failures %v", d.Status, d.Failures)
	}
	if msg := d.DrainTimeouts["node-0"]; !strings.HasPrefix(msg, want+"; onTimeout Fail") {
		t.Errorf("DrainTimeouts %v", d.DrainTimeouts)
	}
	if c := drainCond(t, d); c.Status != metav1.ConditionTrue || c.Message != "node-0: "+want {
		t.Errorf("DrainBlocked %+v", c)
	}
	for _, c := range d.Conditions {
		if c.Type == v1alpha1.ConditionStalled && (c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "app/web (eviction refused")) {
			t.Errorf("Stalled %+v", c)
		}
	}
	if n.drains != 10 || !n.cordoned || n.rec.Rollout != v1alpha1.RolloutFailed || strings.Contains(s.stages("node-0", "driver"), "interrupt") {
		t.Fatalf("drains %d cordoned %v rollout %s stages %s", n.drains, n.cordoned, n.rec.Rollout, s.stages("node-0", "driver"))
	}
	// The backoff (5s): still erroring, nothing evicted, no second DrainTimeouts line.
	s.now = s.now.Add(4 * time.Second)
	if d := s.pass(); d.Status != v1alpha1.StatusErroring || len(d.DrainTimeouts) > 0 || n.drains != 10 || d.RequeueAfter != time.Second {
		t.Fatalf("in the backoff: status %s, timeouts %v, drains %d, requeue %s", d.Status, d.DrainTimeouts, n.drains, d.RequeueAfter)
	}
	s.now = s.now.Add(time.Second)
	if d := s.pass(); d.Status != v1alpha1.StatusInProgress || n.drains != 11 || !n.rec.Drain.Since.Equal(s.now) || n.rec.Drain.Failures != 1 {
		t.Fatalf("after the backoff: status %s, drains %d, drain %+v", d.Status, n.drains, n.rec.Drain)
	}
	n.evicting = nil
	s.now = s.now.Add(time.Second)
	s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "apply,config,interrupt,post-interrupt" || n.cordoned || n.rec.Drain != nil {
		t.Errorf("stages %s, cordoned %v, drain %+v", got, n.cordoned, n.rec.Drain)
	}
}

// onTimeout Continue: at the timeout the interrupt runs with the refused pod still on the node,
// once, with a DrainTimeouts line saying so; the set completes without ever erroring.
func TestDrainTimeoutContinue(t *testing.T) {
	s := drainTimeoutSet(t, &v1alpha1.Drain{Timeout: &metav1.Duration{Duration: 5 * time.Minute}, OnTimeout: v1alpha1.DrainTimeoutContinue})
	n := stuck(t, s)
	s.now = n.rec.Drain.Since.Add(5 * time.Minute)
	d := s.pass()
	if msg := d.DrainTimeouts["node-0"]; !strings.Contains(msg, "pods left: app/web (eviction refused: ") || !strings.HasSuffix(msg, "onTimeout Continue: the interrupt runs with them on the node") {
		t.Fatalf("DrainTimeouts %v", d.DrainTimeouts)
	}
	if !strings.Contains(s.stages("node-0", "driver"), "interrupt") || n.rec.Drain != nil || d.Status == v1alpha1.StatusErroring {
		t.Fatalf("stages %s, drain %+v, status %s", s.stages("node-0", "driver"), n.rec.Drain, d.Status)
	}
	for i := 0; i < 20; i++ {
		s.settle()
		s.now = s.now.Add(time.Minute)
		d = s.pass()
		if d.Status == v1alpha1.StatusErroring || len(d.DrainTimeouts) > 0 {
			t.Fatalf("after Continue: status %s, timeouts %v", d.Status, d.DrainTimeouts)
		}
		if d.Status == v1alpha1.StatusComplete {
			break
		}
	}
	if d.Status != v1alpha1.StatusComplete || n.cordoned || n.drains != 1 {
		t.Errorf("status %s, cordoned %v, drains %d", d.Status, n.cordoned, n.drains)
	}
}

// Without spec.drain the drain is today's: a refused eviction holds the node cordoned and in
// progress for as long as it takes (a day here), never erroring, and the record's drain clock
// does not change the drain; pods spec.drain keeps hold it too and DrainBlocked names them.
func TestDrainWithoutTimeout(t *testing.T) {
	s := drainTimeoutSet(t, nil)
	n := stuck(t, s)
	for i := 0; i < 24; i++ {
		s.now = s.now.Add(time.Hour)
		if d := s.pass(); d.Status != v1alpha1.StatusInProgress || len(d.DrainTimeouts) > 0 || len(d.Failures) > 0 {
			t.Fatalf("hour %d: status %s, timeouts %v, failures %v", i, d.Status, d.DrainTimeouts, d.Failures)
		}
	}
	if n.drains != 25 || strings.Contains(s.stages("node-0", "driver"), "interrupt") {
		t.Fatalf("drains %d, stages %s", n.drains, s.stages("node-0", "driver"))
	}
	n.evicting, n.unevictable = nil, []string{"app/cache: uses emptyDir data (drain.deleteEmptyDirData is false)"}
	d := s.pass()
	if c := drainCond(t, d); c.Message != "node-0: pod app/cache: uses emptyDir data (drain.deleteEmptyDirData is false)" {
		t.Errorf("DrainBlocked %+v", c)
	}
	n.unevictable = nil
	s.run(v1alpha1.StatusComplete)
	if n.cordoned || n.rec.Drain != nil {
		t.Errorf("cordoned %v, drain %+v", n.cordoned, n.rec.Drain)
	}
}

// A drain's clock belongs to one interrupt: after a drain that ended, the next interrupt (a
// new version, hours later) starts a new clock instead of timing out at once; a record written
// before spec.drain existed (no drain in it) drains as before.
func TestDrainClockPerInterrupt(t *testing.T) {
	s := drainTimeoutSet(t, &v1alpha1.Drain{Timeout: &metav1.Duration{Duration: 10 * time.Minute}})
	n := s.nodes["node-0"]
	n.evicting = []string{"app/web"}
	stuck(t, s)
	n.evicting = nil
	s.run(v1alpha1.StatusComplete)
	if n.rec.Drain != nil {
		t.Fatalf("drain left in the record: %+v", n.rec.Drain)
	}
	s.now = s.now.Add(24 * time.Hour)
	s.facts.Wants = []Want{driver("1.1.0")}
	n.evicting = []string{"app/web"}
	drains := n.drains
	for i := 0; i < 20 && n.drains == drains; i++ {
		s.pass()
		s.settle()
	}
	if d := s.pass(); d.Status != v1alpha1.StatusInProgress || len(d.DrainTimeouts) > 0 || !n.rec.Drain.Since.Equal(s.now) {
		t.Fatalf("second interrupt's drain: status %s, timeouts %v, drain %+v (now %s)", d.Status, d.DrainTimeouts, n.rec.Drain, s.now)
	}
}

// The drain before the uninstall of a package with an interrupt (NodeWright) has the same
// timeout: under Fail the removal's node is erroring at stage uninstall, no uninstall runs.
func TestDrainTimeoutRemoval(t *testing.T) {
	s := drainTimeoutSet(t, &v1alpha1.Drain{Timeout: &metav1.Duration{Duration: time.Minute}})
	n := s.nodes["node-0"]
	s.run(v1alpha1.StatusComplete)
	s.facts.Wants = []Want{tool("1.0.0")}
	n.evicting = []string{"app/web"}
	drains := n.drains
	for i := 0; i < 20 && n.drains == drains; i++ {
		s.pass()
		s.settle()
	}
	s.now = n.rec.Drain.Since.Add(time.Minute)
	d := s.pass()
	if d.Status != v1alpha1.StatusErroring || len(d.Failures) != 1 || d.Failures[0].Package != "driver" || d.Failures[0].Stage != v1alpha1.StageUninstall ||
		!strings.Contains(d.Failures[0].Message, "app/web (not evicted yet)") {
		t.Fatalf("status %s, failures %+v", d.Status, d.Failures)
	}
	if strings.Contains(s.stages("node-0", "driver"), "uninstall") {
		t.Fatalf("uninstall ran: %s", s.stages("node-0", "driver"))
	}
	n.evicting = nil
	s.run(v1alpha1.StatusComplete)
	if n.cordoned || n.rec.Packages["driver"] != nil {
		t.Errorf("cordoned %v, driver %+v", n.cordoned, n.rec.Packages["driver"])
	}
}

// spec.drain.nonInterruptTimeout (NVIDIA/nodewright #543): a cordoned node waits for its
// podNonInterruptLabels pods until the timeout; then Fail makes it erroring, naming the pods,
// and it waits on (the interrupt starts once they finish), while Drain evicts them with the
// drain and the interrupt runs.
func TestNonInterruptTimeout(t *testing.T) {
	w := Want{Name: "driver", Version: "1", Image: "ghcr.io/x/driver:1", StageTimeout: DefaultStageTimeout,
		Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"kubelet"}}}
	for _, action := range []v1alpha1.NonInterruptTimeoutAction{v1alpha1.NonInterruptTimeoutFail, v1alpha1.NonInterruptTimeoutDrain} {
		t.Run(string(action), func(t *testing.T) {
			s := newSim(t, 1, w)
			s.facts.Drain = DrainSpec{DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail, NonInterruptTimeout: time.Hour, OnNonInterruptTimeout: action}
			n := s.nodes["node-0"]
			n.nonInterrupt = []string{"ml/train-0"}
			var d Decision
			var erroredAt time.Duration
			start := s.now
			for i := 0; i < 40 && !strings.Contains(s.stages("node-0", "driver"), string(intr)); i++ {
				d = s.pass()
				s.settle()
				if d.Status == v1alpha1.StatusErroring && erroredAt == 0 {
					erroredAt = s.now.Sub(start)
				}
				if n.cordoned && s.now.Sub(start) < time.Hour && (d.Status == v1alpha1.StatusErroring || strings.Contains(s.stages("node-0", "driver"), string(intr))) {
					t.Fatalf("before the timeout: status %s, stages %s", d.Status, s.stages("node-0", "driver"))
				}
				if action == v1alpha1.NonInterruptTimeoutFail && s.now.Sub(start) >= 2*time.Hour {
					break
				}
				s.now = s.now.Add(10 * time.Minute)
			}
			switch action {
			case v1alpha1.NonInterruptTimeoutFail:
				if d.Status != v1alpha1.StatusErroring || len(d.Failures) != 1 || !strings.Contains(d.Failures[0].Message, "non-interrupt pods still running after 1h0m0s (drain.nonInterruptTimeout, onNonInterruptTimeout Fail): ml/train-0") {
					t.Fatalf("past the timeout: status %s, failures %v", d.Status, d.Failures)
				}
				if strings.Contains(s.stages("node-0", "driver"), string(intr)) || n.drains != 0 {
					t.Fatalf("the node was drained (%d) or interrupted (%s) with the non-interrupt pod running", n.drains, s.stages("node-0", "driver"))
				}
				n.nonInterrupt = nil // the training finishes
				s.run(v1alpha1.StatusComplete)
			case v1alpha1.NonInterruptTimeoutDrain:
				if !strings.Contains(s.stages("node-0", "driver"), string(intr)) || n.drains == 0 || erroredAt != 0 {
					t.Fatalf("past the timeout under Drain: stages %s, drains %d, erroring at %s", s.stages("node-0", "driver"), n.drains, erroredAt)
				}
				s.run(v1alpha1.StatusComplete)
			}
			if n.cordoned || n.rec.NonInterruptSince != nil {
				t.Errorf("after: cordoned %v, nonInterruptSince %v", n.cordoned, n.rec.NonInterruptSince)
			}
		})
	}
}
