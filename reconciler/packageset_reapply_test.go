package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// nodeRecord is the set's record on the node (its gantry.dev/state_<set> annotation), nil
// when it has none.
func (e *testEnv) nodeRecord(t *testing.T, node, set string) *packageset.NodeRecord {
	t.Helper()
	raw, ok := e.node(t, node).Annotations[v1alpha1.AnnotationNodeStatePrefix+set]
	if !ok {
		return nil
	}
	rec := &packageset.NodeRecord{}
	if err := json.Unmarshal([]byte(raw), rec); err != nil {
		t.Fatalf("node %s record of %s: %v", node, set, err)
	}
	return rec
}

// waitRecord waits until the set's record on the node satisfies cond.
func (e *testEnv) waitRecord(t *testing.T, node, set, what string, cond func(*packageset.NodeRecord) bool) *packageset.NodeRecord {
	t.Helper()
	var rec *packageset.NodeRecord
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		rec = e.nodeRecord(t, node, set)
		return rec != nil && cond(rec), nil
	})
	if err != nil {
		t.Fatalf("node %s, set %s: timed out waiting for %s; record %+v", node, set, what, rec)
	}
	return rec
}

// waitSetEvent waits for an event of the set with reason whose message contains want.
func (e *testEnv) waitSetEvent(t *testing.T, set, reason, want string) {
	t.Helper()
	var seen []string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		seen = nil
		for _, ev := range e.setEventsNow(t, set, reason) {
			if strings.Contains(ev.Message, want) {
				return true, nil
			}
			seen = append(seen, ev.Message)
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("set %s: no %s event with %q; seen %q", set, reason, want, seen)
	}
}

// stagePodCount counts the set's stage Pods of pkg at stage.
func stagePodCount(pods []corev1.Pod, pkg string, stage v1alpha1.PackageStage) int {
	n := 0
	for _, p := range pods {
		if p.Labels[v1alpha1.LabelPackage] == pkg && p.Labels[v1alpha1.LabelStage] == string(stage) {
			n++
		}
	}
	return n
}

// NodeWright #180 (reapplyOnReboot) on the cluster: a runtime-required set with a flagged driver
// (reboot interrupt) and an unflagged tool completes on a node that joined with the
// runtime-required taint, which goes. On kwok the driver's reboot interrupt Pod succeeds before
// the node reports a new boot ID; the new boot ID it then reports (boot-2) is that reboot's:
// nothing runs again. A later boot ID (boot-3) is a reboot outside Gantry: the node gets the
// runtime-required taint again (event RuntimeTaintAdded "re-gated after a reboot outside
// Gantry"), the set says RebootedOutsideGantry with the boot IDs, the driver runs apply and
// config again (one more Pod each) without a second interrupt Pod and without a cordon, the tool
// does not run, the set is complete again and the taint goes.
func TestPackageSetReapplyOnReboot(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-reapply-%d", seq.Add(1))
	node := e.gpuNodes(t, pool, 1)[0]
	e.setBootID(t, node, "boot-1")
	e.taintNode(t, node)
	sampler := e.sampleTaints(t, pool)
	drv := pkgDriver("1.0.0")
	drv.ReapplyOnReboot = true
	drv.PodAnnotations = map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": "2s"} // time to see the taint
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{drv, pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration, RuntimeRequired: true}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	e.waitUntainted(t, node, "the set is complete there")
	before := e.setPods(t, pool)
	if n := stagePodCount(before, drv.Name, v1alpha1.StageInterrupt); n != 1 {
		t.Fatalf("%d interrupt Pods after the first rollout", n)
	}

	// The reboot of the driver's interrupt, reported after its Pod succeeded: Gantry's.
	e.setBootID(t, node, "boot-2")
	rec := e.waitRecord(t, node, pool, "boot-2 recorded", func(r *packageset.NodeRecord) bool { return r.BootID == "boot-2" })
	if rec.Regate != nil || rec.Packages[drv.Name].Reapply || rec.Packages[drv.Name].BootID != "" {
		t.Fatalf("Gantry's own reboot re-gated the node: %+v driver %+v", rec.Regate, rec.Packages[drv.Name])
	}
	if got := e.setPods(t, pool); len(got) != len(before) {
		t.Fatalf("%d stage Pods after Gantry's reboot, was %d", len(got), len(before))
	}
	if e.runtimeTainted(t, node) {
		t.Fatal("node tainted again after Gantry's own reboot")
	}

	// A reboot outside Gantry.
	e.setBootID(t, node, "boot-3")
	e.waitSetEvent(t, pool, "RebootedOutsideGantry", "node "+node+" rebooted outside Gantry (boot ID boot-2 → boot-3): re-applying "+drv.Name)
	e.waitSetEvent(t, pool, "RuntimeTaintAdded", "to node "+node+" again: re-gated after a reboot outside Gantry")
	e.waitRecord(t, node, pool, "the re-gate done", func(r *packageset.NodeRecord) bool { return r.Regate == nil && r.BootID == "boot-3" })
	e.waitSet(t, pool, "complete again", statusIs(v1alpha1.StatusComplete))
	e.waitUntainted(t, node, "the set is complete there again")
	sampler.mu.Lock()
	seen := sampler.tainted[node]
	sampler.mu.Unlock()
	if !seen {
		t.Error("the runtime-required taint was never seen on the re-gating node")
	}
	after := e.setPods(t, pool)
	for _, c := range []struct {
		pkg   string
		stage v1alpha1.PackageStage
		more  int
	}{{drv.Name, v1alpha1.StageApply, 1}, {drv.Name, v1alpha1.StageConfig, 1}, {drv.Name, v1alpha1.StageInterrupt, 0},
		{drv.Name, v1alpha1.StagePostInterrupt, 0}, {"dcgm-tool", v1alpha1.StageApply, 0}, {"dcgm-tool", v1alpha1.StageConfig, 0}} {
		if got, was := stagePodCount(after, c.pkg, c.stage), stagePodCount(before, c.pkg, c.stage); got != was+c.more {
			t.Errorf("%s %s Pods: %d after the re-gate, %d before; want %d more", c.pkg, c.stage, got, was, c.more)
		}
	}
	if evs := e.setEvents(t, pool, "Cordoned"); eventCount(evs) != 1 {
		t.Errorf("Cordoned events %d: the re-apply must not cordon (only the first rollout's reboot did)", eventCount(evs))
	}
	if n := e.node(t, node); n.Spec.Unschedulable {
		t.Error("node left cordoned")
	}
}
