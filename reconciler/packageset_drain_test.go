package reconciler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// workloadPod creates a plain Pod pinned to node (spec.nodeName) with labels, tolerating the
// GPU taint but not unschedulable (so a drain evicts it), waits until kwok has it Running and
// Ready, and deletes it when the test ends.
func (e *testEnv) workloadPod(t *testing.T, name, node string, lbls map[string]string) *corev1.Pod {
	t.Helper()
	return e.drainTestPod(t, name, node, lbls, nil)
}

// waitPodGone waits until the pod does not exist any more.
func (e *testEnv) waitPodGone(t *testing.T, p *corev1.Pod, why string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(e.c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s still exists (%s)", p.Namespace, p.Name, why)
	}
}

// setEvents lists the events of a PackageSet with reason (cluster-scoped objects' events are
// in the default namespace), with their counts. The recorder writes events asynchronously,
// after the status write a test waited on, so it polls up to 30 s for at least one; it
// returns none only after that.
func (e *testEnv) setEvents(t *testing.T, set, reason string) []corev1.Event {
	t.Helper()
	var out []corev1.Event
	_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		out = e.setEventsNow(t, set, reason)
		return len(out) > 0, nil
	})
	return out
}

// setEventsNow is setEvents without the wait.
func (e *testEnv) setEventsNow(t *testing.T, set, reason string) []corev1.Event {
	t.Helper()
	var list corev1.EventList
	if err := e.c.List(context.Background(), &list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
		t.Fatal(err)
	}
	// By UID: a set of the same name from an earlier run on the same cluster left its own.
	var ps v1alpha1.PackageSet
	if err := e.c.Get(context.Background(), client.ObjectKey{Name: set}, &ps); err != nil {
		t.Fatal(err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if ev.InvolvedObject.Kind == "PackageSet" && ev.InvolvedObject.UID == ps.UID && ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

func eventCount(evs []corev1.Event) int32 {
	var n int32
	for _, ev := range evs {
		n += max(ev.Count, 1)
	}
	return n
}

// drainBlocked: the set's DrainBlocked condition is True and its message holds every part.
func drainBlocked(parts ...string) func(*v1alpha1.PackageSet) bool {
	return func(s *v1alpha1.PackageSet) bool {
		c := setCondition(s, packageset.ConditionDrainBlocked)
		if c.Status != metav1.ConditionTrue {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(c.Message, p) {
				return false
			}
		}
		return true
	}
}

// interruptJobs counts the set's interrupt Jobs.
func (e *testEnv) interruptJobs(t *testing.T, set string) int {
	n := 0
	for _, j := range e.setPods(t, set) {
		if j.Labels[v1alpha1.LabelStage] == string(v1alpha1.StageInterrupt) {
			n++
		}
	}
	return n
}

func (e *testEnv) node(t *testing.T, name string) *corev1.Node {
	t.Helper()
	var n corev1.Node
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

// conditionWatch records every status a watch sees of one condition of a PackageSet.
type conditionWatch struct {
	mu   sync.Mutex
	seen []metav1.ConditionStatus
}

func (e *testEnv) watchCondition(t *testing.T, set, typ string) *conditionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &v1alpha1.PackageSetList{}, client.MatchingFields{"metadata.name": set})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cw := &conditionWatch{}
	go func() {
		for ev := range w.ResultChan() {
			if s, ok := ev.Object.(*v1alpha1.PackageSet); ok {
				cw.mu.Lock()
				cw.seen = append(cw.seen, setCondition(s, typ).Status)
				cw.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop() })
	return cw
}

func (cw *conditionWatch) statuses() []metav1.ConditionStatus {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return append([]metav1.ConditionStatus(nil), cw.seen...)
}

// A drain refused by a PodDisruptionBudget, on the cluster: a workload pod on the node, a PDB
// minAvailable 1 selecting it (the disruption controller reports disruptionsAllowed 0), a
// package with a reboot interrupt. The node is cordoned, the eviction is refused (429), the
// set stays in_progress with DrainBlocked True naming the node, the pod and the PDB, one
// Warning event DrainBlocked (not one per pass), no interrupt Job; the reconciler restarted
// meanwhile finds the refusal again without the condition ever turning False. Deleting the
// PDB lets the eviction through: the pod goes, the interrupt runs, the set completes, the node
// is uncordoned and DrainBlocked is False.
func TestPackageSetDrainBlockedByPDB(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-pdb-%d", seq.Add(1))
	node := e.gpuNodes(t, pool, 1)[0]
	app := map[string]string{"app": pool}
	pod := e.workloadPod(t, pool+"-app", node, app)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: pool + "-pdb", Namespace: e.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: app}}}
	if err := e.c.Create(context.Background(), pdb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), pdb) })
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return false, nil
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0, nil
	})
	if err != nil {
		t.Fatalf("PDB status not computed by the disruption controller: %+v", pdb.Status)
	}

	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:           []v1alpha1.Package{pkgDriver("550.1.0")},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, set)
	got := e.waitSet(t, pool, "drain blocked by the PDB", drainBlocked(node+": pod "+e.ns+"/"+pod.Name, "disruption budget", pdb.Name))
	if got.Status.Status != v1alpha1.StatusInProgress {
		t.Errorf("status %s while the drain is blocked, want in_progress", got.Status.Status)
	}
	if n := e.node(t, node); !n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonPrefix+pool] == "" {
		t.Errorf("node %s not cordoned by the set: unschedulable %v annotations %v", node, n.Spec.Unschedulable, n.Annotations)
	}
	watch := e.watchCondition(t, pool, packageset.ConditionDrainBlocked)

	// Passes go on (every 5 s while in progress) and a restart forgets everything in memory:
	// the refusal is found again, the condition never turns False, one event in all.
	time.Sleep(11 * time.Second)
	e.restartManager(t)
	time.Sleep(11 * time.Second)
	got = e.waitSet(t, pool, "still blocked", drainBlocked(pdb.Name))
	if got.Status.Status != v1alpha1.StatusInProgress || e.interruptJobs(t, pool) != 0 {
		t.Errorf("status %s, %d interrupt Jobs while the drain is blocked", got.Status.Status, e.interruptJobs(t, pool))
	}
	var p corev1.Pod
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(pod), &p); err != nil || p.DeletionTimestamp != nil {
		t.Errorf("workload pod evicted despite the PDB: %v %v", err, p.DeletionTimestamp)
	}
	for _, s := range watch.statuses() {
		if s != metav1.ConditionTrue {
			t.Errorf("DrainBlocked seen %s while blocked (across a restart): %v", s, watch.statuses())
			break
		}
	}
	evs := e.setEvents(t, pool, "DrainBlocked")
	if len(evs) == 0 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, pdb.Name) || !strings.Contains(evs[0].Message, pod.Name) {
		t.Errorf("DrainBlocked events %+v", evs)
	}
	if n := eventCount(evs); n != 1 {
		var msgs []string
		for _, ev := range evs {
			msgs = append(msgs, fmt.Sprintf("%dx %s", ev.Count, ev.Message))
		}
		t.Errorf("%d DrainBlocked events over ~4 passes and a restart, want 1 (on change only): %q", n, msgs)
	}

	if err := e.c.Delete(context.Background(), pdb); err != nil {
		t.Fatal(err)
	}
	got = e.waitSet(t, pool, "complete after the PDB is gone", statusIs(v1alpha1.StatusComplete))
	if c := setCondition(got, packageset.ConditionDrainBlocked); c.Status != metav1.ConditionFalse {
		t.Errorf("DrainBlocked %+v after completion", c)
	}
	if ps := got.Status.NodeState[node]["gpu-driver"]; ps.Stage != v1alpha1.StagePostInterrupt || ps.State != v1alpha1.StateComplete {
		t.Errorf("driver %+v", ps)
	}
	if e.interruptJobs(t, pool) != 1 {
		t.Errorf("%d interrupt Jobs, want 1", e.interruptJobs(t, pool))
	}
	e.waitPodGone(t, pod, "evicted once the PDB is gone")
	if n := e.node(t, node); n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonPrefix+pool] != "" {
		t.Errorf("node %s still cordoned", node)
	}
}

// Non-interrupt pods on the cluster: a running pod labelled gantry.dev/test-critical=true
// matches the set's podNonInterruptLabels, another pod is an ordinary workload. After the
// cordon, nothing is evicted and no interrupt Job is created while the critical pod runs; the
// set is in_progress with DrainBlocked "waiting for non-interrupt pods: <ns>/<pod>". Deleting
// it lets the drain evict the other pod, the interrupt runs, the set completes, uncordoned.
func TestPackageSetNonInterruptPods(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-nip-%d", seq.Add(1))
	node := e.gpuNodes(t, pool, 1)[0]
	critical := e.workloadPod(t, pool+"-train", node, map[string]string{"gantry.dev/test-critical": "true"})
	web := e.workloadPod(t, pool+"-web", node, map[string]string{"app": pool})
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgDriver("550.1.0")},
		PodNonInterruptLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-critical": "true"}},
		InterruptionBudget:    &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, set)
	want := node + ": waiting for non-interrupt pods: " + e.ns + "/" + critical.Name
	got := e.waitSet(t, pool, "waiting for the non-interrupt pod", drainBlocked(want))
	if c := setCondition(got, packageset.ConditionDrainBlocked); c.Message != want {
		t.Errorf("DrainBlocked message %q, want %q", c.Message, want)
	}
	if n := e.node(t, node); !n.Spec.Unschedulable {
		t.Errorf("node %s not cordoned", node)
	}
	time.Sleep(6 * time.Second) // at least one more pass
	got = e.waitSet(t, pool, "still waiting", drainBlocked(want))
	if got.Status.Status != v1alpha1.StatusInProgress || e.interruptJobs(t, pool) != 0 {
		t.Errorf("status %s, %d interrupt Jobs while a non-interrupt pod runs", got.Status.Status, e.interruptJobs(t, pool))
	}
	var w corev1.Pod
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(web), &w); err != nil || w.DeletionTimestamp != nil {
		t.Errorf("the other pod was evicted before the non-interrupt pod finished: %v %v", err, w.DeletionTimestamp)
	}

	if err := e.c.Delete(context.Background(), critical); err != nil {
		t.Fatal(err)
	}
	got = e.waitSet(t, pool, "complete after the non-interrupt pod finished", statusIs(v1alpha1.StatusComplete))
	if c := setCondition(got, packageset.ConditionDrainBlocked); c.Status != metav1.ConditionFalse {
		t.Errorf("DrainBlocked %+v after completion", c)
	}
	if e.interruptJobs(t, pool) != 1 {
		t.Errorf("%d interrupt Jobs, want 1", e.interruptJobs(t, pool))
	}
	e.waitPodGone(t, web, "drained after the non-interrupt pod")
	if n := e.node(t, node); n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonPrefix+pool] != "" {
		t.Errorf("node %s still cordoned", node)
	}
}
