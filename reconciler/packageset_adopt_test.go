package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// skyhookLeaves annotates node as Skyhook's operator leaves it for a Skyhook named sky: its
// per-node state (skyhook.nvidia.com/nodeState_<sky>) and status.
func (e *testEnv) skyhookLeaves(t *testing.T, node, sky string, st packageset.SkyhookNodeState) {
	t.Helper()
	raw, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.SkyhookNodeStatePrefix + sky: string(raw), "skyhook.nvidia.com/status_" + sky: "complete"}}})
	if err := e.c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
}

// allStagePods lists the set's stage Pods in every namespace (the suite's manager writes them
// in its namespace; any other reconciler of the cluster in its own).
func (e *testEnv) allStagePods(t *testing.T, set string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.MatchingLabels{v1alpha1.LabelPackageSet: set}); err != nil {
		t.Fatal(err)
	}
	return pods.Items
}

// The hand-over from Skyhook on the cluster: two GPU nodes as a Skyhook named like the pool
// left them — the first with both packages complete (the driver at post-interrupt after its
// reboot, the tool at config), the second with the tool at an older version — and a
// PackageSet with the same packages annotated gantry.dev/adopt-from-skyhook. The set is
// created paused (as the migration guide does), so that nothing but the hand-over runs: the
// first node's record holds both packages complete (Converged, event AdoptedFromSkyhook) with
// no stage Pod; the second has no record, and a Warning NotAdoptedFromSkyhook says the tool
// runs again. Resumed, the second node runs its flows, the first none, and the set is complete.
func TestPackageSetAdoptFromSkyhook(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-adopt-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	sky := pool + "-skyhook"
	drv, tl := pkgDriver("1.0.0"), pkgTool("1.0.0")
	e.skyhookLeaves(t, nodes[0], sky, packageset.SkyhookNodeState{
		"gpu-driver|1.0.0": {Name: "gpu-driver", Version: "1.0.0", Image: "ghcr.io/gantry-dev/gpu-driver", Stage: "post-interrupt", State: "complete"},
		"dcgm-tool|1.0.0":  {Name: "dcgm-tool", Version: "1.0.0", Image: "ghcr.io/gantry-dev/dcgm-tool", Stage: "config", State: "complete"},
	})
	e.skyhookLeaves(t, nodes[1], sky, packageset.SkyhookNodeState{
		"dcgm-tool|0.9.0": {Name: "dcgm-tool", Version: "0.9.0", Image: "ghcr.io/gantry-dev/dcgm-tool", Stage: "config", State: "complete"},
	})
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool, Annotations: map[string]string{v1alpha1.AnnotationAdoptFromSkyhook: sky}},
		Spec: v1alpha1.PackageSetSpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
			Packages: []v1alpha1.Package{drv, tl}, AdditionalTolerations: gpuToleration, Paused: true}}
	e.createSet(t, set)

	rec := e.waitRecord(t, nodes[0], pool, "the packages adopted", func(r *packageset.NodeRecord) bool {
		return r.Packages[drv.Name] != nil && r.Packages[tl.Name] != nil
	})
	for _, name := range []string{drv.Name, tl.Name} {
		if p := rec.Packages[name]; !p.Done || p.State != v1alpha1.StateComplete || p.Version != "1.0.0" {
			t.Errorf("node %s package %s: %+v, want done and complete at 1.0.0", nodes[0], name, p)
		}
	}
	if rec.Packages[drv.Name].Stage != v1alpha1.StagePostInterrupt || rec.Packages[tl.Name].Stage != v1alpha1.StageConfig {
		t.Errorf("stages: driver %s tool %s, want post-interrupt and config", rec.Packages[drv.Name].Stage, rec.Packages[tl.Name].Stage)
	}
	e.waitRecord(t, nodes[0], pool, "Converged", func(r *packageset.NodeRecord) bool { return r.Rollout == v1alpha1.RolloutConverged })
	e.waitSetEvent(t, pool, "AdoptedFromSkyhook", "node "+nodes[0]+": adopted from Skyhook "+sky+", recorded complete without running a stage: dcgm-tool@1.0.0, gpu-driver@1.0.0")
	e.waitSetEvent(t, pool, "NotAdoptedFromSkyhook", "node "+nodes[1]+": not adopted from Skyhook "+sky+", these run under Gantry: dcgm-tool: Skyhook has 0.9.0, the set asks for 1.0.0")
	if pods := e.allStagePods(t, pool); len(pods) != 0 {
		t.Fatalf("%d stage Pods while paused, want none", len(pods))
	}
	if r := e.nodeRecord(t, nodes[1], pool); r != nil && len(r.Packages) > 0 {
		t.Errorf("node %s (Skyhook had another version) has package records while paused: %+v", nodes[1], r.Packages)
	}

	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) { s.Spec.Paused = false })
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	for _, p := range e.allStagePods(t, pool) {
		if p.Spec.NodeName == nodes[0] {
			t.Errorf("stage Pod %s/%s (%s %s) on the adopted node", p.Namespace, p.Name, p.Labels[v1alpha1.LabelPackage], p.Labels[v1alpha1.LabelStage])
		}
	}
	if n := stagePodCount(e.setPods(t, pool), tl.Name, v1alpha1.StageApply); n == 0 {
		t.Errorf("no %s apply Pod: node %s should have run it", tl.Name, nodes[1])
	}
	if ev := e.setEvents(t, pool, "Cordoned"); eventCount(ev) != 1 {
		t.Errorf("Cordoned events %d, want 1 (the second node's driver reboot only)", eventCount(ev))
	}
}
