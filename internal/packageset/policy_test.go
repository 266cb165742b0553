package packageset

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func strategy(t v1alpha1.StrategyType, initial int32) *v1alpha1.DeploymentStrategy {
	return &v1alpha1.DeploymentStrategy{Type: t, InitialBatch: &initial}
}

func TestBatchSize(t *testing.T) {
	fixed3 := strategy(v1alpha1.StrategyFixed, 3)
	lin := strategy(v1alpha1.StrategyLinear, 2)
	lin.Delta = ptr(int32(3))
	exp := strategy(v1alpha1.StrategyExponential, 1)
	exp3 := strategy(v1alpha1.StrategyExponential, 2)
	exp3.GrowthFactor = ptr(int32(3))
	for _, tc := range []struct {
		name  string
		s     *v1alpha1.DeploymentStrategy
		total int
		st    v1alpha1.BatchState
		want  int
	}{
		{"empty compartment", fixed3, 0, v1alpha1.BatchState{}, 0},
		{"default initial batch is 1", &v1alpha1.DeploymentStrategy{Type: v1alpha1.StrategyFixed}, 10, v1alpha1.BatchState{}, 1},
		{"fixed first", fixed3, 10, v1alpha1.BatchState{}, 3},
		{"fixed keeps its size", fixed3, 10, v1alpha1.BatchState{LastBatchSize: 3, CompletedNodes: 3}, 3},
		{"fixed capped by the nodes left", fixed3, 10, v1alpha1.BatchState{LastBatchSize: 3, CompletedNodes: 9}, 1},
		{"fixed initial above the compartment", fixed3, 2, v1alpha1.BatchState{}, 2},
		{"linear first", lin, 20, v1alpha1.BatchState{}, 2},
		{"linear grows by delta", lin, 20, v1alpha1.BatchState{LastBatchSize: 2, CompletedNodes: 2}, 5},
		{"linear shrinks by delta after a failed batch", lin, 20, v1alpha1.BatchState{LastBatchSize: 5, LastBatchFailed: true, CompletedNodes: 2, FailedNodes: 3}, 2},
		{"linear shrinks to at least 1", lin, 20, v1alpha1.BatchState{LastBatchSize: 2, LastBatchFailed: true, FailedNodes: 2}, 1},
		{"linear grows after a failed batch past the safety limit", lin, 20, v1alpha1.BatchState{LastBatchSize: 5, LastBatchFailed: true, CompletedNodes: 8, FailedNodes: 2}, 8},
		{"exponential first", exp, 100, v1alpha1.BatchState{}, 1},
		{"exponential doubles", exp, 100, v1alpha1.BatchState{LastBatchSize: 4, CompletedNodes: 7}, 8},
		{"exponential growth factor 3", exp3, 100, v1alpha1.BatchState{LastBatchSize: 6, CompletedNodes: 8}, 18},
		{"exponential halves after a failed batch", exp, 100, v1alpha1.BatchState{LastBatchSize: 8, LastBatchFailed: true, CompletedNodes: 7, FailedNodes: 8}, 4},
		{"exponential capped by the nodes left", exp, 100, v1alpha1.BatchState{LastBatchSize: 64, CompletedNodes: 63}, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := BatchSize(tc.s, tc.total, tc.st); got != tc.want {
				t.Errorf("BatchSize = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEvaluateBatch(t *testing.T) {
	s := strategy(v1alpha1.StrategyFixed, 2)
	s.BatchThreshold = ptr(int32(50))
	s.FailureThreshold = ptr(int32(2))
	for _, tc := range []struct {
		name                    string
		st                      v1alpha1.BatchState
		size, success, failure  int
		total                   int
		wantFailed, wantStop    bool
		wantConsecutive         int32
		wantCompleted, wantFail int32
	}{
		{"all complete", v1alpha1.BatchState{ConsecutiveFailures: 1}, 2, 2, 0, 10, false, false, 0, 2, 0},
		{"at the threshold succeeds", v1alpha1.BatchState{}, 2, 1, 1, 10, false, false, 0, 1, 1},
		{"below the threshold fails", v1alpha1.BatchState{}, 4, 1, 3, 10, true, false, 1, 1, 3},
		{"second failure in a row stops below the safety limit", v1alpha1.BatchState{ConsecutiveFailures: 1, FailedNodes: 2}, 2, 0, 2, 10, true, true, 2, 0, 4},
		{"second failure past the safety limit goes on", v1alpha1.BatchState{ConsecutiveFailures: 1, CompletedNodes: 4, FailedNodes: 2}, 2, 0, 2, 10, true, false, 2, 4, 4},
		{"empty batch records nothing", v1alpha1.BatchState{ConsecutiveFailures: 1}, 0, 0, 0, 10, false, false, 1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.st
			EvaluateBatch(s, &st, tc.size, tc.success, tc.failure, tc.total)
			if st.LastBatchFailed != tc.wantFailed || st.ShouldStop != tc.wantStop || st.ConsecutiveFailures != tc.wantConsecutive ||
				st.CompletedNodes != tc.wantCompleted || st.FailedNodes != tc.wantFail {
				t.Errorf("state %+v; want failed=%v stop=%v consecutive=%d completed=%d failed=%d", st, tc.wantFailed, tc.wantStop,
					tc.wantConsecutive, tc.wantCompleted, tc.wantFail)
			}
		})
	}
}

func TestCompartmentMatcher(t *testing.T) {
	spec := &v1alpha1.DeploymentPolicy{Compartments: []v1alpha1.Compartment{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}},
		{Name: "zone-a", Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "a2"}}}}},
	}}
	of, err := CompartmentMatcher(spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   string
	}{
		{map[string]string{"zone": "a"}, "zone-a"},
		{map[string]string{"zone": "a2", "canary": "true"}, "canary"}, // the first that matches
		{map[string]string{"zone": "b"}, DefaultCompartment},
		{nil, DefaultCompartment},
	} {
		if got := of(tc.labels); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.labels, got, tc.want)
		}
	}
	bad := &v1alpha1.DeploymentPolicy{Compartments: []v1alpha1.Compartment{{Name: "x", Selector: metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "Near"}}}}}}
	if _, err := CompartmentMatcher(bad); err == nil || !strings.Contains(err.Error(), "compartments[0] (x).selector") {
		t.Errorf("bad selector: %v", err)
	}
}

// policySim is a sim of nodes spread over compartments: per compartment name → node count.
func policySim(t *testing.T, policy *v1alpha1.DeploymentPolicy, comps map[string]int, wants ...Want) *sim {
	total := 0
	for _, n := range comps {
		total += n
	}
	s := newSim(t, 0, wants...)
	s.facts.Budget = nil
	s.policy = policy
	for name, n := range comps {
		for i := 0; i < n; i++ {
			s.nodes[fmt.Sprintf("%s-%02d", name, i)] = &simNode{jobs: map[string]JobFact{}, pending: map[string]JobSpec{}, selected: true, compartment: name}
		}
	}
	return s
}

// trace runs the sim until the set is complete (or the passes run out), recording per
// compartment the size of every batch as it starts and the most nodes in flight at once.
func (s *sim) trace(passes int) (batches map[string][]int, peak map[string]int, d Decision) {
	batches, peak = map[string][]int{}, map[string]int{}
	seen := map[string]int32{}
	for i := 0; i < passes; i++ {
		d = s.pass()
		inflight := map[string]int{}
		for _, n := range s.nodes {
			if n.rec != nil && InFlight(n.rec.Rollout) {
				inflight[n.compartment]++
			}
		}
		for c, k := range inflight {
			peak[c] = max(peak[c], k)
		}
		for _, c := range d.Compartments {
			if c.Batch != nil && c.Batch.CurrentBatch > seen[c.Name] && len(c.Batch.Nodes) > 0 {
				seen[c.Name] = c.Batch.CurrentBatch
				batches[c.Name] = append(batches[c.Name], len(c.Batch.Nodes))
			}
			if int(c.InProgress) > int(c.Ceiling) {
				s.t.Fatalf("compartment %s: %d in progress above its ceiling %d", c.Name, c.InProgress, c.Ceiling)
			}
		}
		if d.Status == v1alpha1.StatusComplete && len(s.pendingJobs()) == 0 || len(d.Stopped) > 0 {
			return batches, peak, d
		}
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	return batches, peak, d
}

func TestPolicyCompartmentsAndStrategies(t *testing.T) {
	exp := strategy(v1alpha1.StrategyExponential, 1)
	lin := strategy(v1alpha1.StrategyLinear, 1)
	lin.Delta = ptr(int32(2))
	policy := &v1alpha1.DeploymentPolicy{
		Default: &v1alpha1.PolicyDefault{Budget: &v1alpha1.InterruptionBudget{Count: ptr(int32(2))}},
		Compartments: []v1alpha1.Compartment{
			{Name: "a", Budget: v1alpha1.InterruptionBudget{Count: ptr(int32(4))}, Strategy: exp},
			{Name: "b", Budget: v1alpha1.InterruptionBudget{Percent: ptr(int32(50))}, Strategy: strategy(v1alpha1.StrategyFixed, 2)},
			{Name: "c", Budget: v1alpha1.InterruptionBudget{Percent: ptr(int32(100))}, Strategy: lin},
		},
	}
	s := policySim(t, policy, map[string]int{"a": 12, "b": 6, "c": 9, DefaultCompartment: 5}, tool("1.0.0"), driver("1.0.0"))
	batches, peak, d := s.trace(400)
	if d.Status != v1alpha1.StatusComplete {
		t.Fatalf("status %s, stopped %v", d.Status, d.Stopped)
	}
	want := map[string][]int{
		"a": {1, 2, 4, 4, 1}, // exponential, capped by the ceiling 4, then the one left
		"b": {2, 2, 2},       // fixed 2 (ceiling 3)
		"c": {1, 3, 5},       // linear +2
	}
	for c, w := range want {
		if !slices.Equal(batches[c], w) {
			t.Errorf("compartment %s batches %v, want %v", c, batches[c], w)
		}
	}
	if len(batches[DefaultCompartment]) != 0 || peak[DefaultCompartment] != 2 {
		t.Errorf("default compartment (no strategy, count 2): batches %v, peak %d", batches[DefaultCompartment], peak[DefaultCompartment])
	}
	if peak["a"] > 4 || peak["b"] > 3 {
		t.Errorf("peaks %v above the ceilings", peak)
	}
	for _, c := range d.Compartments {
		if c.Completed != c.Matched || c.ProgressPercent != 100 {
			t.Errorf("compartment %+v not complete", c)
		}
		if c.Batch != nil && c.Batch.CurrentBatch != 0 {
			t.Errorf("compartment %s: batch state not reset on completion: %+v", c.Name, *c.Batch)
		}
	}
}

func TestPolicyFailedBatchesStopACompartment(t *testing.T) {
	s3 := strategy(v1alpha1.StrategyExponential, 1)
	s3.FailureThreshold = ptr(int32(2))
	policy := &v1alpha1.DeploymentPolicy{Compartments: []v1alpha1.Compartment{
		{Name: "bad", Budget: v1alpha1.InterruptionBudget{Count: ptr(int32(5))}, Strategy: s3},
		{Name: "good", Budget: v1alpha1.InterruptionBudget{Count: ptr(int32(5))}, Strategy: strategy(v1alpha1.StrategyFixed, 2)},
	}}
	s := policySim(t, policy, map[string]int{"bad": 10, "good": 4}, tool("1.0.0"))
	s.fail = func(j JobSpec, _ int) bool { return strings.HasPrefix(j.Node, "bad-") }
	batches, _, d := s.trace(200)
	if len(d.Stopped) != 1 || !strings.Contains(d.Stopped[0], "compartment bad stopped after 2 failed batches in a row with 2/10 nodes done") {
		t.Fatalf("stopped %v", d.Stopped)
	}
	if !slices.Equal(batches["bad"], []int{1, 1}) {
		t.Errorf("bad batches %v, want [1 1] (the second halved after a failure, at least 1)", batches["bad"])
	}
	// The good compartment is not held by the bad one's failures.
	for i := 0; i < 40 && d.Compartments[1].Completed < 4; i++ {
		s.settle()
		s.now = s.now.Add(BackoffMax)
		d = s.pass()
	}
	if d.Compartments[1].Completed != 4 {
		t.Errorf("good compartment %+v", d.Compartments[1])
	}
	started := 0 // nodes a stage Job ran on
	for name := range s.nodes {
		if strings.HasPrefix(name, "bad-") && len(s.ran[name]) > 0 {
			started++
		}
	}
	if started != 2 {
		t.Errorf("%d bad nodes started, want 2 (no batch after the stop)", started)
	}
	ready, stalled := conditionOf(d, v1alpha1.ConditionReady), conditionOf(d, v1alpha1.ConditionStalled)
	if ready.Status != metav1.ConditionFalse || stalled.Status != metav1.ConditionTrue || stalled.Reason != ReasonDeploymentStopped ||
		!strings.Contains(stalled.Message, "change the package versions") {
		t.Errorf("Ready %+v Stalled %+v", ready, stalled)
	}
	// A new version starts the batches over.
	s.fail = nil
	s.facts.Wants = []Want{tool("1.1.0")}
	if d = s.run(v1alpha1.StatusComplete); len(d.Stopped) != 0 {
		t.Errorf("after a version change: stopped %v", d.Stopped)
	}
}

func TestPolicyBatchSurvivesRestart(t *testing.T) {
	// The batch under way is in status: a pass that starts from it (a restarted reconciler)
	// starts no other node until the batch's nodes are done.
	policy := &v1alpha1.DeploymentPolicy{Default: &v1alpha1.PolicyDefault{Strategy: strategy(v1alpha1.StrategyFixed, 2)}}
	s := policySim(t, policy, map[string]int{DefaultCompartment: 6}, tool("1.0.0"))
	d := s.pass()
	b := d.Compartments[0].Batch
	if b == nil || b.CurrentBatch != 1 || len(b.Nodes) != 2 {
		t.Fatalf("first pass: %+v", d.Compartments)
	}
	for i := 0; i < 3; i++ { // jobs not settled: the same batch, no new node
		d = s.pass()
		if got := d.Compartments[0].Batch; got.CurrentBatch != 1 || !slices.Equal(got.Nodes, b.Nodes) || s.inFlight() != 2 {
			t.Fatalf("pass %d: %+v, %d in flight", i, *got, s.inFlight())
		}
	}
	s.settle()
	d = s.pass() // the batch's nodes finish their flow (more stages) ...
	for i := 0; i < 10 && d.Compartments[0].Batch.CurrentBatch < 2; i++ {
		s.settle()
		d = s.pass()
	}
	if got := d.Compartments[0].Batch; got.CurrentBatch != 2 || got.CompletedNodes != 2 || slices.Equal(got.Nodes, b.Nodes) {
		t.Fatalf("second batch: %+v", *got)
	}
}

func conditionOf(d Decision, typ string) metav1.Condition {
	for _, c := range d.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

func TestPolicyAdoptsNodesALostStatusLeftOut(t *testing.T) {
	// A pass's status write is lost (a conflict): the next pass reads the state before it,
	// while the nodes it started are in flight. They are taken into a batch: no other node
	// starts beside them, and the batch is evaluated when they are done.
	policy := &v1alpha1.DeploymentPolicy{Default: &v1alpha1.PolicyDefault{Strategy: strategy(v1alpha1.StrategyFixed, 2)}}
	s := policySim(t, policy, map[string]int{DefaultCompartment: 6}, tool("1.0.0"))
	s.pass()
	s.comps = nil // the status of that pass was never written
	d := s.pass()
	b := d.Compartments[0].Batch
	if b.CurrentBatch != 1 || len(b.Nodes) != 2 || s.inFlight() != 2 {
		t.Fatalf("after a lost status: %+v, %d in flight", *b, s.inFlight())
	}
	d = s.run(v1alpha1.StatusComplete)
	if d.Compartments[0].Completed != 6 {
		t.Errorf("%+v", d.Compartments[0])
	}
}
