package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// NixFleet's disruptionBudgets[].selector (spec.rollout.fleetBudget.nodeSelector): sets A (node
// 0) and B (nodes 1 and 2) share a budget of 1 limited to rack a (nodes 0 and 1). A's stage
// fails on node 0 (kwok's chaos label), so node 0 stays in flight (Failed): B's node 1 (rack a)
// is held, its node 2 (rack b, outside the selector) completes; status.fleetBudget names the
// selector, counts 1/1 in flight and 1 waiting, and the Ready message names the budget with
// its selector. A deleted without uninstall, B completes.
func TestPackageSetFleetBudgetSelector(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-fleetsel-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 3)
	for i, rack := range []string{"a", "a", "b"} {
		e.updateNode(t, nodes[i], func(n *corev1.Node) { n.Labels["gantry.dev/test-rack"] = rack })
	}
	hosts := func(names ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: names}}}
	}
	rackA := &metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-rack": "a", "gantry.dev/test-pool": pool}}
	budget := func() *v1alpha1.FleetBudget {
		return &v1alpha1.FleetBudget{Name: pool, MaxInFlight: 1, NodeSelector: rackA.DeepCopy()}
	}
	failing := pkgTool("1.0.0")
	failing.PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
	a := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-a"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts(nodes[0]), Packages: []v1alpha1.Package{failing}, AdditionalTolerations: gpuToleration, UninstallOnDelete: ptrTo(false),
		Rollout: &v1alpha1.Rollout{FleetBudget: budget()}}}
	b := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-b"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts(nodes[1], nodes[2]), Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration,
		InterruptionBudget: &v1alpha1.InterruptionBudget{Percent: ptrTo(int32(100))},
		Rollout:            &v1alpha1.Rollout{FleetBudget: budget()}}}
	e.createSet(t, a)
	e.waitSet(t, a.Name, "erroring", statusIs(v1alpha1.StatusErroring))
	e.createSet(t, b)
	held := e.waitSet(t, b.Name, "node 1 held by the rack-a budget, node 2 complete", func(s *v1alpha1.PackageSet) bool {
		return s.Status.NodeStatus[nodes[2]] == v1alpha1.StatusComplete && s.Status.NodeStatus[nodes[1]] == v1alpha1.StatusWaiting &&
			s.Status.FleetBudget != nil && s.Status.FleetBudget.Waiting == 1
	})
	sel := "gantry.dev/test-pool=" + pool + ",gantry.dev/test-rack=a"
	fb := held.Status.FleetBudget
	if fb.Name != pool || fb.MaxInFlight != 1 || fb.InFlight != 1 || fb.NodeSelector != sel || !slices.Equal(fb.Nodes, []string{nodes[0] + " (" + a.Name + ")"}) {
		t.Errorf("status.fleetBudget %+v, want 1/1 in flight (%s), selector %s", fb, nodes[0], sel)
	}
	wantMsg := fmt.Sprintf("fleet budget %s (nodes %s) holds 1 nodes: 1/1 nodes in flight across sets %s, %s: %s (%s)", pool, sel, a.Name, b.Name, nodes[0], a.Name)
	if m := setCondition(held, v1alpha1.ConditionReady).Message; !strings.Contains(m, wantMsg) {
		t.Errorf("Ready message %q, want it to contain %q", m, wantMsg)
	}
	for _, p := range e.setPods(t, b.Name) {
		if p.Labels[v1alpha1.LabelNode] == nodes[1] {
			t.Fatalf("set B ran %s on %s while the rack-a budget was full", p.Name, nodes[1])
		}
	}
	if err := e.c.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	e.waitSet(t, b.Name, "complete", statusIs(v1alpha1.StatusComplete))
}

// NixFleet's channelEdges (spec.afterConverged, RFC-0005 §6): prod (node 1) waits for canary
// (node 0) to converge and names a set that does not exist (no history: it does not hold).
// Canary's node carries a taint its stage pods do not tolerate, so canary is blocked (halted):
// prod starts no node, status.afterConvergedWaits and the Ready message name canary, the
// reason and "is halted". The taint removed, canary completes and prod follows, its first
// stage Pod created after canary's last finished. Then canary names prod too: a cycle,
// Stalled InvalidSpec naming it.
func TestPackageSetAfterConverged(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-conv-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	block := corev1.Taint{Key: "gantry.dev/test-block", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	e.updateNode(t, nodes[0], func(n *corev1.Node) { n.Spec.Taints = append(n.Spec.Taints, block) })
	hosts := func(names ...string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: metav1.LabelSelectorOpIn, Values: names}}}
	}
	canary := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-canary"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts(nodes[0]), Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration}}
	prod := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-prod"}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: hosts(nodes[1]), Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration,
		AfterConverged: []v1alpha1.ConvergedEdge{{Name: pool + "-missing"}, {Name: canary.Name, Reason: "canary first"}}}}
	e.createSet(t, canary)
	e.waitSet(t, canary.Name, "blocked", statusIs(v1alpha1.StatusBlocked))
	e.createSet(t, prod)
	held := e.waitSet(t, prod.Name, "held by canary", func(s *v1alpha1.PackageSet) bool {
		return s.Status.Status == v1alpha1.StatusWaiting && len(s.Status.AfterConvergedWaits) > 0
	})
	prefix := "package set " + canary.Name + " (canary first) is halted: "
	if w := held.Status.AfterConvergedWaits; len(w) != 1 || !strings.HasPrefix(w[0], prefix) {
		t.Errorf("afterConvergedWaits %q, want one line starting %q (the missing set does not hold)", w, prefix)
	}
	if m := setCondition(held, v1alpha1.ConditionReady).Message; !strings.Contains(m, "after converged: "+prefix) {
		t.Errorf("Ready message %q", m)
	}
	if n := len(e.setPods(t, prod.Name)); n != 0 {
		t.Fatalf("prod ran %d stage Pods while canary was halted", n)
	}
	e.updateNode(t, nodes[0], func(n *corev1.Node) {
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(tt corev1.Taint) bool { return tt.Key == block.Key })
	})
	e.waitSet(t, canary.Name, "complete", statusIs(v1alpha1.StatusComplete))
	done := e.waitSet(t, prod.Name, "complete after canary", statusIs(v1alpha1.StatusComplete))
	if len(done.Status.AfterConvergedWaits) != 0 {
		t.Errorf("afterConvergedWaits %q when complete", done.Status.AfterConvergedWaits)
	}
	var lastCanary, firstProd metav1.Time
	for _, p := range e.setPods(t, canary.Name) {
		if fin := podFinished(&p); fin != nil && lastCanary.Before(fin) {
			lastCanary = *fin
		}
	}
	for _, p := range e.setPods(t, prod.Name) {
		if firstProd.IsZero() || p.CreationTimestamp.Before(&firstProd) {
			firstProd = p.CreationTimestamp
		}
	}
	if lastCanary.IsZero() || firstProd.IsZero() || firstProd.Before(&lastCanary) {
		t.Errorf("prod's first stage Pod created %s, canary's last finished %s: want after", firstProd, lastCanary)
	}
	// A cycle through afterConverged edges.
	e.updateSet(t, canary.Name, func(s *v1alpha1.PackageSet) { s.Spec.AfterConverged = []v1alpha1.ConvergedEdge{{Name: prod.Name}} })
	bad := e.waitSet(t, canary.Name, "invalid spec", func(s *v1alpha1.PackageSet) bool {
		return setCondition(s, v1alpha1.ConditionStalled).Reason == packageset.ReasonInvalidSpec
	})
	want := "spec.after and spec.afterConverged form a cycle, " + canary.Name + " → " + prod.Name + " → " + canary.Name
	if msg := setCondition(bad, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, want) {
		t.Errorf("Stalled message %q, want %q", msg, want)
	}
}
