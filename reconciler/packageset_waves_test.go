package reconciler

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// Waves (NixFleet): node 0 is the first wave and carries a taint the stage pods do not
// tolerate, so it cannot finish; the other nodes (the rest) wait with no Job and
// status.currentWave names the first wave. Once the taint is gone, the first wave completes,
// then the rest; every first-wave Job was created no later than the rest's.
func TestPackageSetWaves(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-wave-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 3)
	block := corev1.Taint{Key: "gantry.dev/test-block", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	setNode := func(mod func(*corev1.Node)) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			var n corev1.Node
			if err := e.c.Get(context.Background(), types.NamespacedName{Name: nodes[0]}, &n); err != nil {
				return err
			}
			mod(&n)
			return e.c.Update(context.Background(), &n)
		}); err != nil {
			t.Fatal(err)
		}
	}
	setNode(func(n *corev1.Node) {
		n.Labels["gantry.dev/wave"] = "first"
		n.Spec.Taints = append(n.Spec.Taints, block)
	})
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		Rollout: &v1alpha1.Rollout{Waves: []v1alpha1.Wave{
			{Name: "first", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/wave": "first"}}}}},
	}}
	e.createSet(t, set)
	held := e.waitSet(t, pool, "the first wave blocked", func(s *v1alpha1.PackageSet) bool {
		return s.Status.NodeStatus[nodes[0]] == v1alpha1.StatusBlocked && s.Status.NodeStatus[nodes[1]] == v1alpha1.StatusWaiting &&
			s.Status.NodeStatus[nodes[2]] == v1alpha1.StatusWaiting
	})
	if held.Status.CurrentWave != "first" {
		t.Errorf("currentWave %q, want first", held.Status.CurrentWave)
	}
	if jobs := e.setPods(t, pool); len(jobs) != 0 {
		t.Fatalf("%d Jobs while the first wave is held (want none)", len(jobs))
	}
	setNode(func(n *corev1.Node) {
		var keep []corev1.Taint
		for _, tt := range n.Spec.Taints {
			if tt.Key != block.Key {
				keep = append(keep, tt)
			}
		}
		n.Spec.Taints = keep
	})
	done := e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	if done.Status.CurrentWave != "" {
		t.Errorf("currentWave %q when complete", done.Status.CurrentWave)
	}
	var lastFirst, firstRest metav1.Time
	for _, j := range e.setPods(t, pool) {
		if j.Labels[v1alpha1.LabelNode] == nodes[0] {
			if lastFirst.Before(&j.CreationTimestamp) {
				lastFirst = j.CreationTimestamp
			}
		} else if firstRest.IsZero() || j.CreationTimestamp.Before(&firstRest) {
			firstRest = j.CreationTimestamp
		}
	}
	if firstRest.Before(&lastFirst) {
		t.Errorf("a rest-wave Job (%s) was created before the first wave's last (%s)", firstRest, lastFirst)
	}
}

// spec.after (NixFleet's edges): "drivers" (priority 10) names "runtime" (priority 50) in
// after, so it waits for runtime on each node despite its lower priority number; with runtime
// paused it runs no Job; unpaused, both complete and drivers' Jobs come after runtime's on each
// node. Two sets naming each other are InvalidSpec, and so is every set of a three-set ring,
// its message naming the ring.
func TestPackageSetAfter(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-after-%d", seq.Add(1))
	e.gpuNodes(t, pool, 2)
	sel := metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}}
	runtime := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-runtime"}, Spec: v1alpha1.PackageSetSpec{NodeSelector: sel, Priority: 50,
		Paused: true, Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration}}
	drivers := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-drivers"}, Spec: v1alpha1.PackageSetSpec{NodeSelector: sel, Priority: 10,
		After: []string{runtime.Name}, Packages: []v1alpha1.Package{pkgTool("2.0.0")}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, runtime)
	e.createSet(t, drivers)
	e.waitSet(t, drivers.Name, "waiting for the paused runtime set", statusIs(v1alpha1.StatusWaiting))
	if n := len(e.setPods(t, drivers.Name)); n != 0 {
		t.Fatalf("drivers ran %d Jobs before runtime", n)
	}
	e.updateSet(t, runtime.Name, func(s *v1alpha1.PackageSet) { s.Spec.Paused = false })
	e.waitSet(t, drivers.Name, "complete after runtime", statusIs(v1alpha1.StatusComplete))
	for _, jr := range e.setPods(t, runtime.Name) {
		for _, jd := range e.setPods(t, drivers.Name) {
			if jr.Labels[v1alpha1.LabelNode] == jd.Labels[v1alpha1.LabelNode] && jd.CreationTimestamp.Before(&jr.CreationTimestamp) {
				t.Errorf("on %s drivers' Job %s started before runtime's %s", jr.Labels[v1alpha1.LabelNode], jd.Name, jr.Name)
			}
		}
	}
	// A cycle: runtime names drivers too.
	e.updateSet(t, runtime.Name, func(s *v1alpha1.PackageSet) { s.Spec.After = []string{drivers.Name} })
	bad := e.waitSet(t, runtime.Name, "invalid spec", func(s *v1alpha1.PackageSet) bool {
		return setCondition(s, v1alpha1.ConditionStalled).Reason == packageset.ReasonInvalidSpec
	})
	if msg := setCondition(bad, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, runtime.Name+" → "+drivers.Name+" → "+runtime.Name) {
		t.Errorf("two-set cycle: message %q does not name it", msg)
	}
	// A three-set ring: drivers after runtime after third after drivers.
	third := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool + "-third"}, Spec: v1alpha1.PackageSetSpec{NodeSelector: sel, Priority: 30,
		After: []string{drivers.Name}, Packages: []v1alpha1.Package{pkgTool("1.0.0")}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, third)
	e.updateSet(t, runtime.Name, func(s *v1alpha1.PackageSet) { s.Spec.After = []string{third.Name} })
	ring := e.waitSet(t, third.Name, "invalid spec (three-set ring)", func(s *v1alpha1.PackageSet) bool {
		return setCondition(s, v1alpha1.ConditionStalled).Reason == packageset.ReasonInvalidSpec
	})
	if msg, want := setCondition(ring, v1alpha1.ConditionStalled).Message, third.Name+" → "+drivers.Name+" → "+runtime.Name+" → "+third.Name; !strings.Contains(msg, want) {
		t.Errorf("three-set ring: message %q, want it to name %s", msg, want)
	}
}
