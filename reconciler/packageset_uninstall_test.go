package reconciler

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// NodeWright's interrupt after an uninstall: 2 GPU nodes, a driver with a reboot interrupt and
// uninstall enabled, budget count 1. uninstall.apply uninstalls it: each node is cordoned
// (never more than one at once), runs the uninstall then the reboot (stage
// uninstall-interrupt, created after the uninstall Job), and ends uncordoned with no record.
func TestPackageSetUninstallInterrupt(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-unint-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	name := pool
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgDriver("1.0.0")},
		AdditionalTolerations: gpuToleration,
		InterruptionBudget:    &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))},
	}}
	e.createSet(t, set)
	e.waitSet(t, name, "complete", statusIs(v1alpha1.StatusComplete))
	cordons := e.sampleCordons(t, pool)
	e.updateSet(t, name, func(s *v1alpha1.PackageSet) { s.Spec.Packages[0].Uninstall.Apply = true })
	got := e.waitSet(t, name, "uninstalled", func(s *v1alpha1.PackageSet) bool {
		for _, n := range nodes {
			if _, has := s.Status.NodeState[n]["gpu-driver"]; has {
				return false
			}
		}
		return s.Status.Status == v1alpha1.StatusComplete
	})
	byStage := map[string]map[string]metav1.Time{} // stage → node → creation
	for _, j := range e.setPods(t, name) {
		st := j.Labels[v1alpha1.LabelStage]
		if byStage[st] == nil {
			byStage[st] = map[string]metav1.Time{}
		}
		byStage[st][j.Labels[v1alpha1.LabelNode]] = j.CreationTimestamp
	}
	for _, n := range nodes {
		un, okU := byStage[string(v1alpha1.StageUninstall)][n]
		ui, okI := byStage[string(v1alpha1.StageUninstallInterrupt)][n]
		if !okU || !okI {
			t.Fatalf("node %s: uninstall Job %v, uninstall-interrupt Job %v; want both (status %+v)", n, okU, okI, got.Status.NodeState)
		}
		if ui.Before(&un) {
			t.Errorf("node %s: uninstall-interrupt Job created before the uninstall Job", n)
		}
		if e.node(t, n).Spec.Unschedulable {
			t.Errorf("node %s still cordoned", n)
		}
	}
	cordons.mu.Lock()
	defer cordons.mu.Unlock()
	if cordons.max != 1 {
		t.Errorf("at most %d nodes cordoned at once during the uninstall, want 1 (the budget; the reboot needs a cordon)", cordons.max)
	}
}
