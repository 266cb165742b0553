package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// setStalledWith: a PackageSet with Stalled=True with reason, Reconciling not True (kstatus Failed).
func setStalledWith(reason string) func(*v1alpha1.PackageSet) bool {
	return func(p *v1alpha1.PackageSet) bool {
		s, r := setCondition(p, v1alpha1.ConditionStalled), setCondition(p, v1alpha1.ConditionReconciling)
		return s.Status == metav1.ConditionTrue && s.Reason == reason && r.Status != metav1.ConditionTrue
	}
}

// verdict is the provider wait's verdict on the set (wait.Evaluate with wait.PackageSet).
func verdict(t *testing.T, p *v1alpha1.PackageSet) gwait.Verdict {
	t.Helper()
	c := p.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.GroupVersion.String(), "PackageSet"
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	return gwait.Evaluate(gwait.PackageSet, &unstructured.Unstructured{Object: obj})
}

// gantryAnnotationsOf lists the node's gantry.dev/ annotations.
func (e *testEnv) gantryAnnotationsOf(t *testing.T, node string) map[string]string {
	t.Helper()
	var n corev1.Node
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: node}, &n); err != nil {
		t.Fatal(err)
	}
	return gantryAnnotations(&n)
}

// A node selector the API server accepts but no selector parser does (a value that is not a
// label value: the CRD checks operators and value counts, not the characters of values): the set is Stalled (InvalidSpec) with the parser's message, naming the field, within
// seconds — and deleting it does not hang on the finalizer.
func TestPackageSetInvalidSelectorStallsAndDeletes(t *testing.T) {
	e := setup(t)
	name := fmt.Sprintf("ps-badsel-%d", seq.Add(1))
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "gantry.dev/test-pool", Operator: metav1.LabelSelectorOpIn, Values: []string{"bad value!"}}}},
		Packages:     []v1alpha1.Package{pkgTool("1.0.0")}}}
	e.createSet(t, set)
	got := e.waitSet(t, name, "Stalled InvalidSpec", setStalledWith(packageset.ReasonInvalidSpec))
	msg := setCondition(got, v1alpha1.ConditionStalled).Message
	if !strings.Contains(msg, "spec.nodeSelector") || !strings.Contains(msg, "values") {
		t.Errorf("Stalled message %q does not name the field and the parser's complaint", msg)
	}
	if v := verdict(t, got); v.State != gwait.Failed {
		t.Errorf("provider wait verdict %s (%s), want Failed", v.State, v.Why)
	}
	if err := e.c.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	e.waitGoneQuiet(t, name)
}

// waitGoneQuiet waits for the set to be gone (no uninstall expected).
func (e *testEnv) waitGoneQuiet(t *testing.T, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, types.NamespacedName{Name: name}, &v1alpha1.PackageSet{})
		return client.IgnoreNotFound(err) == nil && err != nil, nil
	})
	if err != nil {
		var last v1alpha1.PackageSet
		_ = e.c.Get(context.Background(), types.NamespacedName{Name: name}, &last)
		t.Fatalf("package set %s not gone (finalizers %v, conditions %+v)", name, last.Finalizers, last.Status.Conditions)
	}
}

// Deleting a set whose uninstall fails: Stalled (UninstallFailed) naming node, package, stage
// and the failure, within seconds, and the provider's delete wait would fail at once
// (wait.StalledWhileDeleting); setting uninstallOnDelete to false on the set being deleted
// lets the deletion finish without a stage and without finalizer surgery, leaving no
// gantry.dev/ annotation on the node.
func TestPackageSetUninstallFailsOnDelete(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-unin-%d", seq.Add(1))
	node := e.gpuNodes(t, pool, 1)[0]
	pkg := pkgTool("1.0.0")
	pkg.Uninstall = &v1alpha1.Uninstall{Enabled: true}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{pkg}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	// The same version's spec now makes its stage container fail (kwok chaos label): the
	// record keeps this spec, and the uninstall runs it.
	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) {
		s.Spec.Packages[0].PodLabels = map[string]string{"pod-init-container-running-failed.stage.kwok.x-k8s.io": "true"}
	})
	e.waitSet(t, pool, "complete with the new spec", statusIs(v1alpha1.StatusComplete))
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		return strings.Contains(e.gantryAnnotationsOf(t, node)[v1alpha1.AnnotationNodeStatePrefix+pool], "pod-init-container-running-failed"), nil
	})
	if err != nil {
		t.Fatalf("the node record did not take the new spec: %v", e.gantryAnnotationsOf(t, node))
	}
	var live v1alpha1.PackageSet
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: pool}, &live); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Delete(context.Background(), &live); err != nil {
		t.Fatal(err)
	}
	got := e.waitSet(t, pool, "Stalled UninstallFailed", setStalledWith(packageset.ReasonUninstallFailed))
	msg := setCondition(got, v1alpha1.ConditionStalled).Message
	if !strings.Contains(msg, "node "+node+" package dcgm-tool stage uninstall: ") || !strings.Contains(msg, "uninstallOnDelete") {
		t.Errorf("Stalled message %q", msg)
	}
	c := got.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.GroupVersion.String(), "PackageSet"
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if s := gwait.StalledWhileDeleting(&unstructured.Unstructured{Object: obj}); s == nil {
		t.Errorf("the provider's delete wait would not fail at once on %+v", got.Status.Conditions)
	}
	// The way out: uninstallOnDelete false on the set being deleted.
	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) { s.Spec.UninstallOnDelete = ptrTo(false) })
	e.waitGoneQuiet(t, pool)
	if ann := e.gantryAnnotationsOf(t, node); len(ann) != 0 {
		t.Errorf("gantry.dev/ annotations left on %s: %v", node, ann)
	}
}

// A node an operator cordoned by hand stays cordoned: the set's reboot interrupt finds it
// unschedulable, records its cordon as the operator's (gantry.dev/cordon_<set>=operator) and,
// when done, drops its annotation but leaves the node cordoned. A node the set cordoned
// itself is uncordoned.
func TestPackageSetKeepsHandCordon(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-hand-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	hand := nodes[0]
	var n corev1.Node
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: hand}, &n); err != nil {
		t.Fatal(err)
	}
	before := n.DeepCopy()
	n.Spec.Unschedulable = true
	if err := e.c.Patch(context.Background(), &n, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:           []v1alpha1.Package{pkgDriver("1.0.0")},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(2))}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, set)
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	for _, name := range nodes {
		var got corev1.Node
		if err := e.c.Get(context.Background(), types.NamespacedName{Name: name}, &got); err != nil {
			t.Fatal(err)
		}
		if want := name == hand; got.Spec.Unschedulable != want {
			t.Errorf("node %s unschedulable=%v after the reboot flow, want %v", name, got.Spec.Unschedulable, want)
		}
		if v, ok := got.Annotations[v1alpha1.AnnotationCordonPrefix+pool]; ok {
			t.Errorf("node %s keeps the set's cordon annotation (%q)", name, v)
		}
	}
	interrupts := 0
	for _, j := range e.setPods(t, pool) {
		if j.Labels[v1alpha1.LabelStage] == string(v1alpha1.StageInterrupt) {
			interrupts++
		}
	}
	if interrupts != 2 {
		t.Errorf("%d interrupt Jobs, want 2 (one per node)", interrupts)
	}
}

// A set queued behind a paused set says why it waits (WaitingForPausedSet, naming each node
// and the paused set), is neither Reconciling nor Stalled, and the provider's wait returns at
// once on it; resuming the paused set releases it.
func TestPackageSetWaitingForPausedSet(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-held-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 1)
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}}
	first := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-a"}, Spec: v1alpha1.PackageSetSpec{NodeSelector: sel, Priority: 10,
		Paused: true, Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration}}
	second := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-b"}, Spec: v1alpha1.PackageSetSpec{NodeSelector: sel, Priority: 20,
		Packages: []v1alpha1.Package{pkgTool("2.0.0")}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, first)
	e.createSet(t, second)
	got := e.waitSet(t, second.Name, "WaitingForPausedSet", func(p *v1alpha1.PackageSet) bool {
		return p.Status.Status == v1alpha1.StatusWaiting && setCondition(p, v1alpha1.ConditionReady).Reason == packageset.ReasonWaitingForPausedSet
	})
	ready := setCondition(got, v1alpha1.ConditionReady)
	if want := nodes[0] + " (by " + first.Name + ")"; !strings.Contains(ready.Message, want) {
		t.Errorf("Ready message %q does not name %q", ready.Message, want)
	}
	if r, s := setCondition(got, v1alpha1.ConditionReconciling), setCondition(got, v1alpha1.ConditionStalled); r.Status != metav1.ConditionFalse || s.Status != metav1.ConditionFalse {
		t.Errorf("Reconciling %+v Stalled %+v", r, s)
	}
	if v := verdict(t, got); v.State != gwait.ReturnedAtOnce || !strings.Contains(v.Why, first.Name) {
		t.Errorf("provider wait verdict %s (%s), want ReturnedAtOnce naming %s", v.State, v.Why, first.Name)
	}
	e.updateSet(t, first.Name, func(s *v1alpha1.PackageSet) { s.Spec.Paused = false })
	e.waitSet(t, second.Name, "complete after the first is resumed", statusIs(v1alpha1.StatusComplete))
}

// A Workspace's Deployment scaled out of band (kubectl scale to 3) is put back to the spec's
// replica count by the reconciler, and the workspace is Ready on it again.
func TestWorkspaceDeploymentScaledBack(t *testing.T) {
	e := setup(t)
	t.Parallel()
	w := e.newWorkspace("scaled", nil, inferenceSpec(1, 1, a100))
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), w) })
	e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	key := types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}
	var dep appsv1.Deployment
	if err := e.c.Get(context.Background(), key, &dep); err != nil {
		t.Fatal(err)
	}
	before := dep.DeepCopy()
	dep.Spec.Replicas = ptrTo(int32(3))
	if err := e.c.Patch(context.Background(), &dep, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		if err := e.c.Get(ctx, key, &d); err != nil {
			return false, nil
		}
		return d.Spec.Replicas != nil && *d.Spec.Replicas == 1 && d.Generation > dep.Generation, nil
	})
	if err != nil {
		t.Fatalf("deployment not scaled back to 1: %v", err)
	}
	// The two extra pods go (their deletion takes a moment); the workspace is Ready on one.
	e.waitWS(t, w.Name, "Ready again on 1 replica", func(w *v1alpha1.Workspace) bool {
		return stateIs(v1alpha1.WorkspaceStateReady)(w) && w.Status.ReadyReplicas == 1
	})
}
