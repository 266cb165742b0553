package reconciler

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// startRecorder watches the pool's nodes and records, in watch order, each node's first
// record of set (its gantry.dev/state_<set> annotation: a node gets one when a pass starts it).
type startRecorder struct {
	mu    sync.Mutex
	order []string
}

func (e *testEnv) recordStarts(t *testing.T, pool, set string) *startRecorder {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &corev1.NodeList{}, client.MatchingLabels{"gantry.dev/test-pool": pool})
	if err != nil {
		t.Fatal(err)
	}
	r := &startRecorder{}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			if _, has := n.Annotations[v1alpha1.AnnotationNodeStatePrefix+set]; !has {
				continue
			}
			r.mu.Lock()
			if !slices.Contains(r.order, n.Name) {
				r.order = append(r.order, n.Name)
			}
			r.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop() })
	return r
}

func (r *startRecorder) started() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// previewOf is the provider's rollout preview of set over the cluster as it is now: its nodes
// and package sets, and the drain refusals of the PodDisruptionBudgets in the test namespace
// that allow no disruption (the pods they cover that a drain would evict).
func (e *testEnv) previewOf(t *testing.T, set *v1alpha1.PackageSet) packageset.Preview {
	t.Helper()
	ctx := context.Background()
	var nodes corev1.NodeList
	var sets v1alpha1.PackageSetList
	var pdbs policyv1.PodDisruptionBudgetList
	for _, l := range []client.ObjectList{&nodes, &sets} {
		if err := e.c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.c.List(ctx, &pdbs, client.InNamespace(e.ns)); err != nil {
		t.Fatal(err)
	}
	pf := packageset.PreviewFacts{Set: set.DeepCopy(), Sets: sets.Items, Nodes: nodes.Items, Now: time.Now(), Refusals: map[string]string{}}
	for _, pdb := range pdbs.Items {
		if pdb.Status.DisruptionsAllowed > 0 {
			continue
		}
		sel, _ := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			pf.Refusals[p.Spec.NodeName] = fmt.Sprintf("pod %s/%s: PodDisruptionBudget %s allows 0 disruptions", p.Namespace, p.Name, pdb.Name)
		}
	}
	taint, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	pf.Tolerations = append(packageset.StageTolerations(set), packageset.RuntimeToleration(taint))
	p, err := packageset.PreviewRollout(pf)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The rollout preview is what the reconciler then does. Six GPU nodes in two compartments
// (canary: node 0, one at a time; rest: nodes 1-5, two at a time), a node edge (node 2 after
// node 5), a driver with a reboot interrupt, and node 3 behind a PodDisruptionBudget that
// allows 0 disruptions. The preview of the spec over the cluster, made before the set exists,
// says which nodes start in which wave and which block; the reconciler's order of starts (each
// node's first record, in watch order) must follow the preview's waves (every node of a wave
// before any node of a later one), start the same nodes, and leave node 3 cordoned and
// undrained, as the preview's blocked list says. The PDB deleted, the set completes.
func TestPackageSetPreviewMatchesReconciler(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-preview-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 6)
	for i, n := range nodes {
		ring := "rest"
		if i == 0 {
			ring = "canary"
		}
		e.updateNode(t, n, func(node *corev1.Node) { node.Labels["gantry.dev/test-ring"] = ring })
	}
	app := map[string]string{"app": pool}
	e.workloadPod(t, pool+"-app", nodes[3], app)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: pool + "-pdb", Namespace: e.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptrTo(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: app}}}
	if err := e.c.Create(context.Background(), pdb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), pdb) })
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return false, nil
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 1 && pdb.Status.DisruptionsAllowed == 0, nil
	}); err != nil {
		t.Fatalf("PDB status not computed by the disruption controller: %+v", pdb.Status)
	}
	ring := func(r string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-ring": r}}
	}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{pkgDriver("550.90.7")}, AdditionalTolerations: gpuToleration,
		DeploymentPolicy: &v1alpha1.DeploymentPolicy{Compartments: []v1alpha1.Compartment{
			{Name: "canary", Selector: ring("canary"), Budget: v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}},
			{Name: "rest", Selector: ring("rest"), Budget: v1alpha1.InterruptionBudget{Count: ptrTo(int32(2))}}}},
		Rollout: &v1alpha1.Rollout{NodeEdges: []v1alpha1.NodeEdge{{Before: nodes[5], After: nodes[2]}}},
	}}
	// A node just created carries node.kubernetes.io/not-ready until kwok reports it Ready and
	// the node lifecycle controller takes the taint off: a preview made before that sees a node
	// the stage pods cannot run on yet (which the reconciler, a moment later, starts).
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		for _, name := range nodes {
			var n corev1.Node
			if err := e.c.Get(ctx, client.ObjectKey{Name: name}, &n); err != nil {
				return false, nil
			}
			for _, tn := range n.Spec.Taints {
				if tn.Key == corev1.TaintNodeNotReady {
					return false, nil
				}
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("nodes of %s still tainted %s", pool, corev1.TaintNodeNotReady)
	}
	preview := e.previewOf(t, set)
	t.Logf("preview: %s", preview.Summary(10))
	if len(preview.Blocked) != 1 || preview.Blocked[0].Node != nodes[3] || preview.Complete {
		t.Fatalf("preview blocked %+v complete %v, want %s blocked by the PDB and the rollout incomplete", preview.Blocked, preview.Complete, nodes[3])
	}
	waveOf := map[string]int{}
	for _, n := range preview.Nodes {
		waveOf[n.Name] = n.Wave
	}

	rec := e.recordStarts(t, pool, pool)
	e.createSet(t, set)
	var got []string
	if err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 3*waitTimeout, true, func(context.Context) (bool, error) {
		got = rec.started()
		return len(got) >= len(preview.Nodes), nil
	}); err != nil {
		t.Fatalf("the reconciler started %v, the preview %d nodes (%v)", got, len(preview.Nodes), waveOf)
	}
	// What the preview says never starts must not start: a few passes more.
	time.Sleep(6 * time.Second)
	got = rec.started()
	t.Logf("reconciler's start order: %v; preview's waves: %v", got, waveOf)
	checkStartOrder(t, got, waveOf)
	if n := e.node(t, nodes[3]); !n.Spec.Unschedulable {
		t.Errorf("%s not cordoned: the preview says its drain is held by the PDB", nodes[3])
	}
	if err := e.c.Delete(context.Background(), pdb); err != nil {
		t.Fatal(err)
	}
	e.waitSet(t, pool, "complete after the PDB is gone", statusIs(v1alpha1.StatusComplete))
}

// checkStartOrder fails unless got starts the nodes of waveOf, each node of a wave before any
// node of a later wave.
func checkStartOrder(t *testing.T, got []string, waveOf map[string]int) {
	t.Helper()
	if len(got) != len(waveOf) {
		t.Errorf("the reconciler started %d nodes %v, the preview %d %v", len(got), got, len(waveOf), waveOf)
	}
	last := -1
	for _, n := range got {
		w, ok := waveOf[n]
		switch {
		case !ok:
			t.Errorf("the reconciler started %s, which the preview does not start", n)
		case w < last:
			t.Errorf("the reconciler started %s (preview wave %d) after a node of wave %d: order %v, preview %v", n, w, last, got, waveOf)
		default:
			last = w
		}
	}
}
