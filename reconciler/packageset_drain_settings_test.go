package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// The controller passes spec.drain to its evictions (no cluster: a fake client records the
// Eviction requests): only the pod to evict is evicted, with spec.drain.gracePeriod as its
// DeleteOptions.gracePeriodSeconds; the emptyDir pod (deleteEmptyDirData false) and the
// skipped pod are not; the facts name the kept pod with why, the pod left to evict, and, only
// in the pass at the drain's timeout, the Eviction API's refusal of a dry-run eviction.
func TestDrainEvictionOptions(t *testing.T) {
	const node = "gpu-0"
	pod := func(name string, mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	web := pod("web", nil)
	scratch := pod("scratch", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	agent := pod("agent", func(p *corev1.Pod) { p.Labels["gantry.dev/test-drain"] = "skip" })
	elsewhere := pod("elsewhere", func(p *corev1.Pod) { p.Spec.NodeName = "gpu-1" })

	var evictions []string
	var refuse bool
	c := fake.NewClientBuilder().WithScheme(NewScheme()).WithObjects(web, scratch, agent, elsewhere).
		WithIndex(&corev1.Pod{}, "spec.nodeName", func(o client.Object) []string { return []string{o.(*corev1.Pod).Spec.NodeName} }).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
			ev, ok := subObj.(*policyv1.Eviction)
			if sub != "eviction" || !ok {
				return fmt.Errorf("unexpected %s %T", sub, subObj)
			}
			o := &client.SubResourceCreateOptions{}
			o.ApplyOptions(opts)
			grace := "pod's own"
			if ev.DeleteOptions != nil && ev.DeleteOptions.GracePeriodSeconds != nil {
				grace = fmt.Sprint(*ev.DeleteOptions.GracePeriodSeconds)
			}
			evictions = append(evictions, fmt.Sprintf("%s/%s grace %s dry-run %v", ev.Namespace, ev.Name, grace, o.DryRun))
			if refuse {
				err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
				err.ErrStatus.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: "DisruptionBudget", Message: "The disruption budget web needs 1 healthy pods and has 1 currently"}}}
				return err
			}
			if len(o.DryRun) > 0 {
				return nil
			}
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		}}).Build()
	r := &PackageSetReconciler{Client: c, APIReader: c}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "drivers"}, Spec: v1alpha1.PackageSetSpec{Drain: &v1alpha1.Drain{
		GracePeriod: &metav1.Duration{Duration: 7 * time.Second}, DeleteEmptyDirData: ptrTo(false),
		Timeout:       &metav1.Duration{Duration: time.Minute},
		SkipPodLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-drain": "skip"}}}}}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	ctx := context.Background()
	spec := packageset.DrainSpecOf(set.Spec.Drain)
	t0 := time.Unix(1_700_000_000, 0)
	rec := &packageset.NodeRecord{Drain: &packageset.DrainRecord{Since: t0}}

	// Before the timeout: the facts, and no dry run.
	nf := packageset.NodeFacts{Name: node, Cordoned: true, Record: rec}
	if err := r.drainFacts(ctx, set, n, &nf, spec, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if nf.Drained || fmt.Sprint(nf.Evicting) != "[app/web]" || fmt.Sprint(nf.Unevictable) != "[app/scratch: uses emptyDir data (drain.deleteEmptyDirData is false)]" ||
		nf.EvictRefusals != nil || len(evictions) != 0 {
		t.Fatalf("facts before the timeout: %+v, evictions %v", nf, evictions)
	}

	// At the timeout: a dry-run eviction of each pod left names the refusal; nothing is evicted.
	refuse = true
	nf = packageset.NodeFacts{Name: node, Cordoned: true, Record: rec}
	if err := r.drainFacts(ctx, set, n, &nf, spec, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	want := "Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget web needs 1 healthy pods and has 1 currently)"
	if got := nf.EvictRefusals["app/web"]; got != want || fmt.Sprint(evictions) != "[app/web grace pod's own dry-run [All]]" {
		t.Fatalf("refusals %v, evictions %v", nf.EvictRefusals, evictions)
	}

	// The drain: refused, then accepted with the grace period.
	evictions = nil
	refused, err := r.drain(ctx, set, n, false)
	if err != nil || refused != "pod app/web: "+want {
		t.Fatalf("drain: %q %v", refused, err)
	}
	refuse, evictions = false, nil
	if refused, err = r.drain(ctx, set, n, false); err != nil || refused != "" {
		t.Fatalf("drain: %q %v", refused, err)
	}
	if fmt.Sprint(evictions) != "[app/web grace 7 dry-run []]" {
		t.Errorf("evictions %v, want only app/web with grace 7", evictions)
	}
	for _, p := range []*corev1.Pod{scratch, agent, elsewhere} {
		if err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{}); err != nil {
			t.Errorf("pod %s: %v", p.Name, err)
		}
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(web), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("web not evicted: %v", err)
	}

	// Today's drain (spec.drain unset): the emptyDir pod is evicted, with its own grace period.
	evictions = nil
	if _, err := r.drain(ctx, &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "drivers"}}, n, false); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(evictions) != "[app/agent grace pod's own dry-run [] app/scratch grace pod's own dry-run []]" {
		t.Errorf("today's drain evicted %v", evictions)
	}
}

// drainTestPod creates a plain Pod (no controller) pinned to node like workloadPod, changed by
// mod (volumes), waits until kwok has it Running and Ready, and deletes it when the test ends.
func (e *testEnv) drainTestPod(t *testing.T, name, node string, lbls map[string]string, mod func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	// kwok skips a pod whose node it does not manage yet (it does not hold the node's Lease)
	// and finds it later only if it lists the node's pods after the pod is in its cache; a pod
	// created in between can stay Pending with no status (seen once in CI, 90 s). So the pod
	// goes to a node kwok manages.
	e.waitNodeReady(t, node)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns, Labels: lbls},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: gpuToleration,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	if mod != nil {
		mod(p)
	}
	if err := e.c.Create(context.Background(), p); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return false, nil
		}
		return p.Status.Phase == corev1.PodRunning && podReady(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s not Running and Ready: %+v", name, p.Status)
	}
	return p
}

// podStays: the pod exists and is not being deleted.
func (e *testEnv) podStays(t *testing.T, p *corev1.Pod, why string) {
	t.Helper()
	var got corev1.Pod
	if err := e.c.Get(context.Background(), client.ObjectKeyFromObject(p), &got); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("pod %s/%s evicted (%s): %v %v", p.Namespace, p.Name, why, err, got.DeletionTimestamp)
	}
}

// spec.drain on the cluster: a GPU node runs three workload pods without a controller:
// scratch (an emptyDir volume), web and agent (labelled gantry.dev/test-drain=skip). The set (a
// driver with a reboot interrupt) drains with deleteEmptyDirData false, a 3s grace period and
// skipPodLabels gantry.dev/test-drain=skip. After the cordon web is evicted; scratch is not and
// holds the drain: the set stays in_progress, DrainBlocked names the node, the pod and why, no
// interrupt Pod. With deleteEmptyDirData true (unset: today's drain) scratch is evicted, the
// interrupt runs, the set completes and the node is uncordoned; agent ran through it all.
func TestPackageSetDrainSettings(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-dset-%d", seq.Add(1))
	node := e.gpuNodes(t, pool, 1)[0]
	scratch := e.drainTestPod(t, pool+"-scratch", node, map[string]string{"app": pool + "-scratch"}, func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	web := e.drainTestPod(t, pool+"-web", node, map[string]string{"app": pool + "-web"}, nil)
	agent := e.drainTestPod(t, pool+"-agent", node, map[string]string{"gantry.dev/test-drain": "skip"}, nil)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:           []v1alpha1.Package{pkgDriver("550.1.0")},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}, AdditionalTolerations: gpuToleration,
		Drain: &v1alpha1.Drain{DeleteEmptyDirData: ptrTo(false), GracePeriod: &metav1.Duration{Duration: 3 * time.Second},
			SkipPodLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-drain": "skip"}}}}}
	e.createSet(t, set)
	want := node + ": pod " + e.ns + "/" + scratch.Name + ": uses emptyDir data (drain.deleteEmptyDirData is false)"
	e.waitSet(t, pool, "the emptyDir pod holding the drain", drainBlocked(want))
	e.waitPodGone(t, web, "evicted by the drain")
	time.Sleep(6 * time.Second) // at least one more pass, web gone
	got := e.waitSet(t, pool, "still held by the emptyDir pod", drainBlocked(want))
	if c := setCondition(got, packageset.ConditionDrainBlocked); c.Message != want {
		t.Errorf("DrainBlocked %q, want %q", c.Message, want)
	}
	if got.Status.Status != v1alpha1.StatusInProgress || e.interruptJobs(t, pool) != 0 {
		t.Errorf("status %s, %d interrupt Pods while the emptyDir pod holds the drain", got.Status.Status, e.interruptJobs(t, pool))
	}
	e.podStays(t, scratch, "deleteEmptyDirData is false")
	e.podStays(t, agent, "skipPodLabels")

	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) { s.Spec.Drain.DeleteEmptyDirData = nil })
	got = e.waitSet(t, pool, "complete once emptyDir pods may be evicted", statusIs(v1alpha1.StatusComplete))
	e.waitPodGone(t, scratch, "evicted with deleteEmptyDirData unset (true)")
	e.podStays(t, agent, "skipPodLabels, through the interrupt")
	if c := setCondition(got, packageset.ConditionDrainBlocked); c.Status != metav1.ConditionFalse {
		t.Errorf("DrainBlocked %+v after completion", c)
	}
	if e.interruptJobs(t, pool) != 1 {
		t.Errorf("%d interrupt Pods, want 1", e.interruptJobs(t, pool))
	}
	if n := e.node(t, node); n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonPrefix+pool] != "" {
		t.Errorf("node %s still cordoned", node)
	}
}

// spec.drain.timeout on the cluster: a workload pod a PodDisruptionBudget protects
// (minAvailable 1, disruptionsAllowed 0) on the node of a set with drain.timeout 3s. onTimeout
// unset (Fail): at the timeout the set is erroring and Stalled, its message naming the node,
// the package, stage interrupt, the pod and the budget (a dry-run eviction's words); one
// Warning event DrainTimeout says so; the node stays cordoned, the pod runs, no interrupt Pod.
// With onTimeout Continue the next try times out again and the interrupt runs with the pod on
// the node (a DrainTimeout event says so): the set completes, the node is uncordoned and the
// pod was never evicted.
func TestPackageSetDrainTimeout(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-dto-%d", seq.Add(1))
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
		InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}, AdditionalTolerations: gpuToleration,
		Drain: &v1alpha1.Drain{Timeout: &metav1.Duration{Duration: 3 * time.Second}}}}
	e.createSet(t, set)

	left := "drain timed out after 3s; pods left: " + e.ns + "/" + pod.Name + " (eviction refused: Cannot evict pod"
	got := e.waitSet(t, pool, "erroring at the drain timeout", statusIs(v1alpha1.StatusErroring))
	c := setCondition(got, v1alpha1.ConditionStalled)
	if c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, "node "+node+" package gpu-driver stage interrupt: "+left) || !strings.Contains(c.Message, pdb.Name) {
		t.Errorf("Stalled %+v, want it to name %q and %s", c, left, pdb.Name)
	}
	evs := e.setEvents(t, pool, "DrainTimeout")
	if len(evs) == 0 || evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, "node "+node+": "+left) ||
		!strings.Contains(evs[0].Message, "onTimeout Fail: the node is erroring") {
		t.Errorf("DrainTimeout events %+v", evs)
	}
	if n := e.node(t, node); !n.Spec.Unschedulable || e.interruptJobs(t, pool) != 0 {
		t.Errorf("node unschedulable %v, %d interrupt Pods after a failed drain", n.Spec.Unschedulable, e.interruptJobs(t, pool))
	}
	e.podStays(t, pod, "the PDB refuses")

	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) { s.Spec.Drain.OnTimeout = v1alpha1.DrainTimeoutContinue })
	got = e.waitSet(t, pool, "complete, the interrupt run at the timeout", statusIs(v1alpha1.StatusComplete))
	if e.interruptJobs(t, pool) != 1 {
		t.Errorf("%d interrupt Pods, want 1", e.interruptJobs(t, pool))
	}
	continued := false
	for _, ev := range e.setEvents(t, pool, "DrainTimeout") {
		continued = continued || strings.Contains(ev.Message, "onTimeout Continue: the interrupt runs with them on the node")
	}
	if !continued {
		t.Errorf("no DrainTimeout event for Continue: %+v", e.setEvents(t, pool, "DrainTimeout"))
	}
	e.podStays(t, pod, "Continue leaves the pods the drain could not evict")
	if n := e.node(t, node); n.Spec.Unschedulable || n.Annotations[v1alpha1.AnnotationCordonPrefix+pool] != "" {
		t.Errorf("node %s still cordoned", node)
	}
	if c := setCondition(got, packageset.ConditionDrainBlocked); c.Status != metav1.ConditionFalse {
		t.Errorf("DrainBlocked %+v after completion", c)
	}
}
