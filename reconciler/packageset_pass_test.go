package reconciler

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// TestPassDelay: an event waits as long as the set's last pass took (at most PassGap) after
// it ended, that long from now while a pass runs, and not at all for a set not passed yet.
func TestPassDelay(t *testing.T) {
	r := &PackageSetReconciler{PassGap: time.Second}
	if d := r.passDelay("s"); d != 0 {
		t.Errorf("first pass delayed %s", d)
	}
	now := time.Now()
	r.lastPass = map[string]passTiming{
		"fast":    {started: now.Add(-2 * time.Millisecond), ended: now, took: 2 * time.Millisecond},
		"slow":    {started: now.Add(-300 * time.Millisecond), ended: now, took: 300 * time.Millisecond},
		"slower":  {started: now.Add(-3 * time.Second), ended: now, took: 3 * time.Second},
		"running": {running: true, started: now, took: 400 * time.Millisecond},
		"old":     {ended: now.Add(-time.Minute), took: 300 * time.Millisecond},
	}
	for set, want := range map[string][2]time.Duration{
		"fast": {0, 2 * time.Millisecond}, "slow": {250 * time.Millisecond, 300 * time.Millisecond},
		"slower": {900 * time.Millisecond, time.Second}, "running": {400 * time.Millisecond, 400 * time.Millisecond}, "old": {0, 0},
	} {
		if d := r.passDelay(set); d < want[0] || d > want[1] {
			t.Errorf("%s: delay %s, want %s..%s", set, d, want[0], want[1])
		}
	}
	r.PassGap = -1
	if d := r.passDelay("slower"); d != 0 {
		t.Errorf("negative PassGap: delay %s", d)
	}
	r.passing("new", false)
	r.passing("new", true)
	if tm := r.lastPass["new"]; tm.running || tm.ended.IsZero() || tm.took < 0 {
		t.Errorf("passing: %+v", tm)
	}
}

// TestStatusUrgent: only per-node progress (maps, counts, condition messages) may wait.
func TestStatusUrgent(t *testing.T) {
	base := func() *v1alpha1.PackageSetStatus {
		return &v1alpha1.PackageSetStatus{Status: v1alpha1.StatusInProgress, ObservedGeneration: 2, CompleteNodes: "1/3",
			NodeStatus: map[string]v1alpha1.PackageSetStatusValue{"n1": v1alpha1.StatusComplete},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "InProgress", Message: "1/3 nodes complete", ObservedGeneration: 2}}}
	}
	for name, c := range map[string]struct {
		mod    func(*v1alpha1.PackageSetStatus)
		urgent bool
	}{
		"progress only": {func(s *v1alpha1.PackageSetStatus) {
			s.CompleteNodes, s.NodeStatus["n2"], s.Conditions[0].Message = "2/3", v1alpha1.StatusComplete, "2/3 nodes complete"
		}, false},
		"aggregate":   {func(s *v1alpha1.PackageSetStatus) { s.Status = v1alpha1.StatusComplete }, true},
		"generation":  {func(s *v1alpha1.PackageSetStatus) { s.ObservedGeneration = 3 }, true},
		"quarantine":  {func(s *v1alpha1.PackageSetStatus) { s.QuarantinedVersions = []string{"a@1.0.0"} }, true},
		"cond status": {func(s *v1alpha1.PackageSetStatus) { s.Conditions[0].Status = metav1.ConditionTrue }, true},
		"cond reason": {func(s *v1alpha1.PackageSetStatus) { s.Conditions[0].Reason = "StageErroring" }, true},
		"new cond": {func(s *v1alpha1.PackageSetStatus) {
			s.Conditions = append(s.Conditions, metav1.Condition{Type: v1alpha1.ConditionStalled})
		}, true},
	} {
		s := base()
		c.mod(s)
		if got := statusUrgent(base(), s); got != c.urgent {
			t.Errorf("%s: urgent %v, want %v", name, got, c.urgent)
		}
	}
}
