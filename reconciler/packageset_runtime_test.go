package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

var runtimeTaint = func() corev1.Taint {
	t, err := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	if err != nil {
		panic(err)
	}
	return t
}()

// taintNode adds the runtime-required taint to a node, as a node joining with
// --register-with-taints has it.
func (e *testEnv) taintNode(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := e.c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
			return false, err
		}
		n.Spec.Taints = append(n.Spec.Taints, runtimeTaint)
		err := e.c.Update(ctx, &n)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("taint node %s: %v", name, err)
	}
}

func (e *testEnv) runtimeTainted(t *testing.T, name string) bool {
	t.Helper()
	return packageset.HasTaint(e.node(t, name).Spec.Taints, runtimeTaint)
}

// waitUntainted waits until the node has lost the runtime-required taint.
func (e *testEnv) waitUntainted(t *testing.T, name, why string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := e.c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
			return false, nil
		}
		return !packageset.HasTaint(n.Spec.Taints, runtimeTaint), nil
	})
	if err != nil {
		t.Fatalf("node %s still carries the runtime-required taint (%s)", name, why)
	}
}

// Skyhook's runtime_required.md on the cluster: two nodes join with the runtime-required
// taint; set a (runtime-required) selects both, set b (runtime-required) selects only the
// second and its stage fails there. The stage Jobs tolerate the taint and run; the first node
// loses the taint as soon as a is complete on it, the second keeps it while b is erroring
// there (per node, not per set), and the status says which node b holds and why; once b is
// deleted, the second node is released too.
func TestPackageSetRuntimeRequired(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-rr-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	for _, n := range nodes {
		e.taintNode(t, n)
	}
	a := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-a"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration, RuntimeRequired: true}}
	bad := pkgTool("1.0.0")
	bad.PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
	b := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-b"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": nodes[1]}},
		Packages:     []v1alpha1.Package{bad}, AdditionalTolerations: gpuToleration, RuntimeRequired: true}}
	e.createSet(t, a)
	e.createSet(t, b)

	got := e.waitSet(t, a.Name, "complete", statusIs(v1alpha1.StatusComplete))
	if got.Status.CompleteNodes != "2/2" {
		t.Errorf("complete nodes %s", got.Status.CompleteNodes)
	}
	for _, j := range e.setPods(t, a.Name) {
		tolerated := false
		for _, tol := range j.Spec.Tolerations {
			tolerated = tolerated || tol.ToleratesTaint(&runtimeTaint)
		}
		if !tolerated {
			t.Errorf("job %s does not tolerate %s: %+v", j.Name, v1alpha1.DefaultRuntimeRequiredTaint, j.Spec.Tolerations)
		}
	}
	e.waitUntainted(t, nodes[0], "set a is complete there and nothing else is runtime-required on it")
	e.waitSet(t, b.Name, "erroring", statusIs(v1alpha1.StatusErroring))
	// The first node's release must not have taken the second's taint with it, and the
	// statuses name what holds it.
	held := func(s *v1alpha1.PackageSet) bool {
		c := setCondition(s, packageset.ConditionRuntimeRequiredTaint)
		return s.Status.RuntimeRequiredNodes == 1 && c.Status == metav1.ConditionTrue && c.Reason == packageset.ReasonNodesTainted &&
			strings.Contains(c.Message, nodes[1]+" (waiting for "+b.Name+")") && !strings.Contains(c.Message, nodes[0])
	}
	e.waitSet(t, a.Name, "a: one node held by b", held)
	e.waitSet(t, b.Name, "b: one node held by b", held)
	if !e.runtimeTainted(t, nodes[1]) {
		t.Fatalf("node %s lost the runtime-required taint while set %s is erroring on it", nodes[1], b.Name)
	}
	if evs := e.setEvents(t, a.Name, "RuntimeTaintRemoved"); len(evs) != 1 || !strings.Contains(evs[0].Message, "from node "+nodes[0]) {
		t.Errorf("RuntimeTaintRemoved events of %s: %+v", a.Name, evs)
	}

	// Delete b: a set being deleted holds no node, so the second node is released (a is
	// complete there).
	if err := e.c.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(e.c.Get(ctx, types.NamespacedName{Name: b.Name}, &v1alpha1.PackageSet{})), nil
	}); err != nil {
		t.Fatalf("package set %s not gone", b.Name)
	}
	e.waitUntainted(t, nodes[1], "the only other runtime-required set on it is deleted")
	released := func(s *v1alpha1.PackageSet) bool {
		c := setCondition(s, packageset.ConditionRuntimeRequiredTaint)
		return s.Status.RuntimeRequiredNodes == 0 && c.Status == metav1.ConditionFalse && c.Reason == packageset.ReasonNodesReleased
	}
	e.waitSet(t, a.Name, "a: no node held", released)
	if gpu := e.node(t, nodes[1]).Spec.Taints; len(gpu) != 1 || gpu[0].Key != "nvidia.com/gpu" {
		t.Errorf("node %s taints %v: only the runtime-required one should have gone", nodes[1], gpu)
	}
}

// taintSampler records whether a node was ever seen with the runtime-required taint.
type taintSampler struct {
	mu      sync.Mutex
	tainted map[string]bool
}

func (e *testEnv) sampleTaints(t *testing.T, pool string) *taintSampler {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &corev1.NodeList{}, client.MatchingLabels{"gantry.dev/test-pool": pool})
	if err != nil {
		t.Fatal(err)
	}
	s := &taintSampler{tainted: map[string]bool{}}
	t.Cleanup(func() { cancel(); w.Stop() })
	go func() {
		for ev := range w.ResultChan() {
			if n, ok := ev.Object.(*corev1.Node); ok && packageset.HasTaint(n.Spec.Taints, runtimeTaint) {
				s.mu.Lock()
				s.tainted[n.Name] = true
				s.mu.Unlock()
			}
		}
	}()
	return s
}

// autoTaintNewNodes: a node that joins untainted and untouched gets the taint (and the
// gantry.dev/auto-taint marker) from the set, its stages run, and it loses the taint when the
// set is complete on it; a later pass never taints it again. The CRD rejects autoTaintNewNodes
// without runtimeRequired.
func TestPackageSetRuntimeRequiredAutoTaint(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-rra-%d", seq.Add(1))
	invalid := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-x"}, Spec: v1alpha1.PackageSetSpec{
		Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AutoTaintNewNodes: true}}
	if err := e.c.Create(context.Background(), invalid); err == nil || !strings.Contains(err.Error(), "spec.autoTaintNewNodes needs spec.runtimeRequired = true") {
		_ = e.c.Delete(context.Background(), invalid)
		t.Errorf("autoTaintNewNodes without runtimeRequired: %v", err)
	}

	sampler := e.sampleTaints(t, pool)
	tool := pkgTool("1.0.0")
	tool.PodAnnotations = map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": "2s"} // time to see the taint
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{tool}, AdditionalTolerations: gpuToleration, RuntimeRequired: true, AutoTaintNewNodes: true}}
	e.createSet(t, set)
	node := e.gpuNodes(t, pool, 1)[0] // joins after the set, without the taint

	e.waitSet(t, pool, "complete", func(s *v1alpha1.PackageSet) bool {
		return s.Status.Status == v1alpha1.StatusComplete && s.Status.CompleteNodes == "1/1"
	})
	e.waitUntainted(t, node, "the set is complete on it")
	sampler.mu.Lock()
	seen := sampler.tainted[node]
	sampler.mu.Unlock()
	if !seen {
		t.Errorf("node %s was never seen with the runtime-required taint", node)
	}
	if m := e.node(t, node).Annotations[v1alpha1.AnnotationAutoTaint]; m != v1alpha1.DefaultRuntimeRequiredTaint {
		t.Errorf("auto-taint marker %q", m)
	}
	if evs := e.setEvents(t, pool, "RuntimeTaintAdded"); len(evs) != 1 || !strings.Contains(evs[0].Message, "new node "+node) {
		t.Errorf("RuntimeTaintAdded events: %+v", evs)
	}
	// A new flow on the node (config change): the node is not new, it stays untainted.
	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) { s.Spec.Packages[0].Version = "1.0.1" })
	e.waitSet(t, pool, "complete at 1.0.1", func(s *v1alpha1.PackageSet) bool {
		return s.Status.Status == v1alpha1.StatusComplete && s.Status.NodeState[node]["dcgm-tool"].Version == "1.0.1"
	})
	if e.runtimeTainted(t, node) {
		t.Errorf("node %s tainted again", node)
	}
	if evs := e.setEvents(t, pool, "RuntimeTaintAdded"); eventCount(evs) != 1 {
		t.Errorf("RuntimeTaintAdded events after the upgrade: %+v", evs)
	}
}

// setTaints rewrites a node's taints with mod (retrying conflicts): as another controller
// adds or removes its own taint.
func (e *testEnv) setTaints(t *testing.T, name string, mod func([]corev1.Taint) []corev1.Taint) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var n corev1.Node
		if err := e.c.Get(ctx, types.NamespacedName{Name: name}, &n); err != nil {
			return false, err
		}
		n.Spec.Taints = mod(n.Spec.Taints)
		err := e.c.Update(ctx, &n)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("taints of node %s: %v", name, err)
	}
}

// Skyhook waits where a runtime-required node is held by another taint too (a driver
// installer's, say, still bringing the node up): on the cluster, two nodes join with the
// runtime-required taint and the second also carries example.com/driver=installing:NoSchedule,
// which the stage pods do not tolerate. The set completes on the first node and waits on the
// second: status waiting, Ready=False and Reconciling=True with reason WaitingForTaint naming
// the node and the taint, TaintNotTolerable True (WaitingForTaint), the second node keeps the
// runtime-required taint and runs no stage; Stalled never turns True (a watch sees every status
// written from the set's creation on), so the provider keeps waiting instead of failing the
// apply. When the other controller removes its taint the node runs its stages, the set
// completes and the node loses the runtime-required taint.
func TestPackageSetRuntimeRequiredWaitsForAnotherTaint(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-rrw-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	driver := corev1.Taint{Key: "example.com/driver", Value: "installing", Effect: corev1.TaintEffectNoSchedule}
	for _, n := range nodes {
		e.taintNode(t, n)
	}
	e.setTaints(t, nodes[1], func(ts []corev1.Taint) []corev1.Taint { return append(ts, driver) })
	stalled := e.watchCondition(t, pool, v1alpha1.ConditionStalled)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration, RuntimeRequired: true}}
	e.createSet(t, set)

	taintWords := nodes[1] + ": example.com/driver=installing:NoSchedule"
	got := e.waitSet(t, pool, "waiting for the driver's taint", func(s *v1alpha1.PackageSet) bool {
		r := setCondition(s, v1alpha1.ConditionReady)
		return s.Status.Status == v1alpha1.StatusWaiting && s.Status.CompleteNodes == "1/2" && r.Reason == packageset.ReasonWaitingForTaint && strings.Contains(r.Message, taintWords)
	})
	if rc := setCondition(got, v1alpha1.ConditionReconciling); rc.Status != metav1.ConditionTrue || rc.Reason != packageset.ReasonWaitingForTaint {
		t.Errorf("Reconciling %+v", rc)
	}
	if tc := setCondition(got, packageset.ConditionTaintNotTolerable); tc.Status != metav1.ConditionTrue || tc.Reason != packageset.ReasonWaitingForTaint || !strings.Contains(tc.Message, taintWords) {
		t.Errorf("TaintNotTolerable %+v", tc)
	}
	if got.Status.NodeStatus[nodes[1]] != v1alpha1.StatusWaiting {
		t.Errorf("node %s status %s, want waiting", nodes[1], got.Status.NodeStatus[nodes[1]])
	}
	for _, j := range e.setPods(t, pool) {
		if strings.Contains(j.Name, nodes[1]) || j.Spec.NodeName == nodes[1] {
			t.Errorf("stage job %s for the waiting node %s", j.Name, nodes[1])
		}
	}
	if !e.runtimeTainted(t, nodes[1]) {
		t.Errorf("node %s lost the runtime-required taint before the set ran there", nodes[1])
	}

	// The other controller is done: its taint goes, and the node proceeds without user action.
	e.setTaints(t, nodes[1], func(ts []corev1.Taint) []corev1.Taint {
		var out []corev1.Taint
		for _, x := range ts {
			if x.Key != driver.Key {
				out = append(out, x)
			}
		}
		return out
	})
	done := e.waitSet(t, pool, "complete", func(s *v1alpha1.PackageSet) bool {
		return s.Status.Status == v1alpha1.StatusComplete && s.Status.CompleteNodes == "2/2"
	})
	if tc := setCondition(done, packageset.ConditionTaintNotTolerable); tc.Status != metav1.ConditionFalse {
		t.Errorf("complete, TaintNotTolerable %+v", tc)
	}
	e.waitUntainted(t, nodes[1], "the set is complete there")
	if seen := stalled.statuses(); slices.Contains(seen, metav1.ConditionTrue) {
		t.Errorf("Stalled turned True while the node waited for another controller's taint: %v", seen)
	}
}
