package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// updateNode changes a node with retries on conflict.
func (e *testEnv) updateNode(t *testing.T, name string, mod func(*corev1.Node)) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var n corev1.Node
		if err := e.c.Get(context.Background(), types.NamespacedName{Name: name}, &n); err != nil {
			return err
		}
		mod(&n)
		return e.c.Update(context.Background(), &n)
	}); err != nil {
		t.Fatal(err)
	}
}

// NixFleet's edges between hosts (spec.rollout.nodeEdges): node 2 waits for node 0, which a
// taint holds: node 1 (no edge) completes, node 2 runs no Job and status.nodeEdgeWaits and the
// Ready message say "<node 2> waits for <node 0>"; the taint removed, all complete and node 2's
// first Job comes after node 0's last. A cycle is InvalidSpec naming it.
func TestPackageSetNodeEdges(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-edge-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 3)
	block := corev1.Taint{Key: "gantry.dev/test-block", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	e.updateNode(t, nodes[0], func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, block) })
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{NodeEdges: []v1alpha1.NodeEdge{{Before: nodes[0], After: nodes[2]},
			{Before: "no-such-node", After: nodes[1]}}},
	}}
	e.createSet(t, set)
	waitLine := nodes[2] + " waits for " + nodes[0]
	held := e.waitSet(t, pool, "node 2 waiting for node 0", func(s *v1alpha1.PackageSet) bool {
		return s.Status.NodeStatus[nodes[0]] == v1alpha1.StatusBlocked && s.Status.NodeStatus[nodes[1]] == v1alpha1.StatusComplete &&
			s.Status.NodeStatus[nodes[2]] == v1alpha1.StatusWaiting
	})
	if !slices.Equal(held.Status.NodeEdgeWaits, []string{waitLine}) {
		t.Errorf("nodeEdgeWaits %v, want [%s]", held.Status.NodeEdgeWaits, waitLine)
	}
	if m := setCondition(held, v1alpha1.ConditionReady).Message; !strings.Contains(m, "node edges: "+waitLine) {
		t.Errorf("Ready message %q", m)
	}
	for _, j := range e.setPods(t, pool) {
		if j.Labels[v1alpha1.LabelNode] == nodes[2] {
			t.Fatalf("Job %s on %s while %s is held", j.Name, nodes[2], nodes[0])
		}
	}
	e.updateNode(t, nodes[0], func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == block.Key })
	})
	done := e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	if len(done.Status.NodeEdgeWaits) != 0 {
		t.Errorf("nodeEdgeWaits %v when complete", done.Status.NodeEdgeWaits)
	}
	var last0, first2 metav1.Time
	for _, j := range e.setPods(t, pool) {
		switch j.Labels[v1alpha1.LabelNode] {
		case nodes[0]:
			if fin := podFinished(&j); fin != nil && last0.Before(fin) {
				last0 = *fin
			}
		case nodes[2]:
			if first2.IsZero() || j.CreationTimestamp.Before(&first2) {
				first2 = j.CreationTimestamp
			}
		}
	}
	if last0.IsZero() || first2.IsZero() || first2.Before(&last0) {
		t.Errorf("node 2's first Job created %s, node 0's last Job completed %s: want after", first2, last0)
	}
	// A cycle.
	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) {
		s.Spec.Rollout.NodeEdges = append(s.Spec.Rollout.NodeEdges, v1alpha1.NodeEdge{Before: nodes[2], After: nodes[0]})
	})
	bad := e.waitSet(t, pool, "invalid spec", statusIs(v1alpha1.StatusUnknown))
	want := fmt.Sprintf("spec.rollout.nodeEdges form a cycle, %s → %s → %s", nodes[0], nodes[2], nodes[0])
	if c := setCondition(bad, v1alpha1.ConditionStalled); c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, want) {
		t.Errorf("Stalled %+v, want the cycle %q", c, want)
	}
}

// NixFleet's fleet-wide disruption budget across sets (spec.rollout.fleetBudget): sets A (node
// 0), B (nodes 1 and 2) and C (no node) share a budget; A says maxInFlight 2, B 3, C 1 (the
// lowest wins). A's stage fails on node 0 (kwok's chaos label), so node 0 stays in flight
// (Failed): B starts nothing and status.fleetBudget says so (1/1 in flight across A, B and C:
// node 0 (A), 2 waiting). A deleted without uninstall, B completes with never more than one
// node in flight at once across the sets (C's 1 still wins; B's own interruption budget is
// every node).
func TestPackageSetFleetBudget(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-fleet-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 3)
	hosts := func(names ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: names}}}
	}
	budget := pool
	failing := pkgTool("1.0.0")
	failing.PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
	a := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-a"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts(nodes[0]), Packages: []v1alpha1.Package{failing}, AdditionalTolerations: gpuToleration, UninstallOnDelete: ptrTo(false),
		Rollout: &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: budget, MaxInFlight: 2}}}}
	c := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-c"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts("no-such-node"), Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: budget, MaxInFlight: 1}}}}
	e.createSet(t, c)
	b := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-b"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts(nodes[1], nodes[2]), Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration,
		InterruptionBudget: &v1alpha1.InterruptionBudget{Percent: ptrTo(int32(100))},
		Rollout:            &v1alpha1.Rollout{FleetBudget: &v1alpha1.FleetBudget{Name: budget, MaxInFlight: 3}}}}
	e.createSet(t, a)
	e.waitSet(t, a.Name, "erroring", statusIs(v1alpha1.StatusErroring))
	e.createSet(t, b)
	held := e.waitSet(t, b.Name, "held by the fleet budget", func(s *v1alpha1.PackageSet) bool {
		return s.Status.Status == v1alpha1.StatusWaiting && s.Status.FleetBudget != nil && s.Status.FleetBudget.Waiting == 2
	})
	fb := held.Status.FleetBudget
	if fb.Name != budget || fb.MaxInFlight != 1 || fb.InFlight != 1 || !slices.Equal(fb.Sets, []string{a.Name, b.Name, c.Name}) ||
		!slices.Equal(fb.Nodes, []string{nodes[0] + " (" + a.Name + ")"}) {
		t.Errorf("status.fleetBudget %+v", fb)
	}
	wantMsg := fmt.Sprintf("fleet budget %s holds 2 nodes: 1/1 nodes in flight across sets %s, %s, %s: %s (%s)", budget, a.Name, b.Name, c.Name, nodes[0], a.Name)
	if m := setCondition(held, v1alpha1.ConditionReady).Message; !strings.Contains(m, wantMsg) {
		t.Errorf("Ready message %q, want it to contain %q", m, wantMsg)
	}
	if n := len(e.setPods(t, b.Name)); n != 0 {
		t.Fatalf("set B ran %d Jobs while the fleet budget was full", n)
	}
	sampler := e.sampleFleet(t, pool, a.Name, b.Name)
	if err := e.c.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.waitSet(t, b.Name, "complete", statusIs(v1alpha1.StatusComplete))
	sampler.stop()
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	if sampler.max != 1 || len(sampler.seen) == 0 {
		t.Errorf("at most %d nodes in flight at once across the sets sharing the budget (samples %v), want 1", sampler.max, sampler.seen)
	}
}

// fleetSampler watches the pool's nodes and records the most of them in flight at once for
// any of sets (read from the nodes' annotations, as the reconciler counts a fleet budget).
type fleetSampler struct {
	mu   sync.Mutex
	max  int
	seen []string // each change of the in-flight set, "node-a,node-b"
	stop context.CancelFunc
}

func (e *testEnv) sampleFleet(t *testing.T, pool string, sets ...string) *fleetSampler {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &corev1.NodeList{}, client.MatchingLabels{"gantry.dev/test-pool": pool})
	if err != nil {
		t.Fatal(err)
	}
	s := &fleetSampler{stop: func() { cancel(); w.Stop() }}
	in := map[string]bool{}
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			flight := false
			for _, set := range sets {
				_, cordon := n.Annotations[v1alpha1.AnnotationCordonPrefix+set]
				var rec *packageset.NodeRecord
				if raw, has := n.Annotations[v1alpha1.AnnotationNodeStatePrefix+set]; has {
					rec = &packageset.NodeRecord{}
					_ = json.Unmarshal([]byte(raw), rec)
				}
				flight = flight || packageset.InFlightFor(rec, cordon && n.Spec.Unschedulable)
			}
			s.mu.Lock()
			if in[n.Name] != flight {
				in[n.Name] = flight
				var names []string
				for k, v := range in {
					if v {
						names = append(names, k)
					}
				}
				sort.Strings(names)
				s.seen = append(s.seen, strings.Join(names, ","))
				s.max = max(s.max, len(names))
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(s.stop)
	return s
}

// podFinished is when a finished stage Pod's last container terminated (nil while one has not).
func podFinished(p *corev1.Pod) *metav1.Time {
	var last *metav1.Time
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil {
			return nil
		}
		if last == nil || last.Before(&t.FinishedAt) {
			last = &t.FinishedAt
		}
	}
	return last
}
