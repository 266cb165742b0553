package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// batchSampler watches a set's status and records, per compartment, the size of each batch
// as it starts (in order) and any status whose in-progress count is above its ceiling.
type batchSampler struct {
	mu      sync.Mutex
	batches map[string][]int
	seen    map[string]int32
	over    []string
}

func (e *testEnv) sampleBatches(t *testing.T, set string) *batchSampler {
	ctx, cancel := context.WithCancel(context.Background())
	w, err := e.c.Watch(ctx, &v1alpha1.PackageSetList{}, client.MatchingFields{"metadata.name": set})
	if err != nil {
		t.Fatal(err)
	}
	s := &batchSampler{batches: map[string][]int{}, seen: map[string]int32{}}
	go func() {
		for ev := range w.ResultChan() {
			ps, ok := ev.Object.(*v1alpha1.PackageSet)
			if !ok {
				continue
			}
			s.mu.Lock()
			for _, c := range ps.Status.Compartments {
				if c.InProgress > c.Ceiling {
					s.over = append(s.over, fmt.Sprintf("%s: %d in progress, ceiling %d", c.Name, c.InProgress, c.Ceiling))
				}
				if c.Batch != nil && c.Batch.CurrentBatch > s.seen[c.Name] && len(c.Batch.Nodes) > 0 {
					s.seen[c.Name] = c.Batch.CurrentBatch
					s.batches[c.Name] = append(s.batches[c.Name], len(c.Batch.Nodes))
				}
			}
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); w.Stop() })
	return s
}

func (s *batchSampler) get() (map[string][]int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]int{}
	for k, v := range s.batches {
		out[k] = slices.Clone(v)
	}
	return out, slices.Clone(s.over)
}

// A deployment policy over 9 nodes: compartment a (zone a, 4 nodes, count 2, exponential from
// 1), compartment b (zone b, 3 nodes, 100%, fixed 1) and the default compartment (2 nodes,
// count 1, no strategy). The set's status, sampled on every write, shows the batches in
// order (a: 1, 2, then the 1 left; b: 1, 1, 1), never more nodes in progress than a
// compartment's ceiling, and the compartments complete. Then a version whose stages fail
// (kwok's chaos label) with failureThreshold 1: each compartment stops after its first
// (failed) batch, the set is Stalled with DeploymentStopped, and no other node ran the upgrade.
func TestPackageSetDeploymentPolicy(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-pol-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 9)
	zone := func(i int) string {
		switch {
		case i < 4:
			return "a"
		case i < 7:
			return "b"
		}
		return ""
	}
	for i, n := range nodes {
		if z := zone(i); z != "" {
			patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{"gantry.dev/zone":%q}}}`, z))
			if err := e.c.Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
	}
	zoneSel := func(z string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/zone": z}}
	}
	exp := &v1alpha1.DeploymentStrategy{Type: v1alpha1.StrategyExponential, InitialBatch: ptrTo(int32(1))}
	fixed := &v1alpha1.DeploymentStrategy{Type: v1alpha1.StrategyFixed, InitialBatch: ptrTo(int32(1))}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
		DeploymentPolicy: &v1alpha1.DeploymentPolicy{
			Default: &v1alpha1.PolicyDefault{Budget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}},
			Compartments: []v1alpha1.Compartment{
				{Name: "a", Selector: zoneSel("a"), Budget: v1alpha1.InterruptionBudget{Count: ptrTo(int32(2))}, Strategy: exp},
				{Name: "b", Selector: zoneSel("b"), Budget: v1alpha1.InterruptionBudget{Percent: ptrTo(int32(100))}, Strategy: fixed},
			},
		},
	}}
	sampler := e.sampleBatches(t, pool)
	e.createSet(t, set)
	done := e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	batches, over := sampler.get()
	if len(over) > 0 {
		t.Errorf("above a ceiling: %v", over)
	}
	want := map[string][]int{"a": {1, 2, 1}, "b": {1, 1, 1}}
	for c, w := range want {
		if !slices.Equal(batches[c], w) {
			t.Errorf("compartment %s batches %v, want %v", c, batches[c], w)
		}
	}
	if len(batches[packageset.DefaultCompartment]) > 0 {
		t.Errorf("default compartment has no strategy, but batches %v", batches[packageset.DefaultCompartment])
	}
	got := map[string]v1alpha1.CompartmentStatus{}
	for _, c := range done.Status.Compartments {
		got[c.Name] = c
	}
	for name, matched := range map[string]int32{"a": 4, "b": 3, packageset.DefaultCompartment: 2} {
		c := got[name]
		if c.Matched != matched || c.Completed != matched || c.ProgressPercent != 100 {
			t.Errorf("compartment %s: %+v, want %d matched and complete", name, c, matched)
		}
	}
	if got["a"].Ceiling != 2 || got["b"].Ceiling != 3 || got[packageset.DefaultCompartment].Ceiling != 1 {
		t.Errorf("ceilings: %+v", done.Status.Compartments)
	}

	// A failing version: every compartment stops after its first batch.
	e.updateSet(t, pool, func(s *v1alpha1.PackageSet) {
		s.Spec.Packages[0].Version = "1.1.0"
		s.Spec.Packages[0].Image = "ghcr.io/gantry-dev/dcgm-tool:1.1.0"
		s.Spec.Packages[0].PodLabels = map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}
		for i := range s.Spec.DeploymentPolicy.Compartments {
			s.Spec.DeploymentPolicy.Compartments[i].Strategy.FailureThreshold = ptrTo(int32(1))
		}
	})
	stopped := e.waitSet(t, pool, "stopped", func(s *v1alpha1.PackageSet) bool {
		c := setCondition(s, v1alpha1.ConditionStalled)
		return c.Reason == packageset.ReasonDeploymentStopped && strings.Contains(c.Message, "compartment a stopped") &&
			strings.Contains(c.Message, "compartment b stopped")
	})
	if msg := setCondition(stopped, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "stage upgrade") {
		t.Errorf("Ready message does not name the failing stage: %q", msg)
	}
	upgraded := map[string]bool{}
	for _, j := range e.setPods(t, pool) {
		if j.Labels[v1alpha1.LabelStage] == "upgrade" {
			upgraded[j.Labels[v1alpha1.LabelNode]] = true
		}
	}
	perZone := map[string]int{}
	for i, n := range nodes {
		if upgraded[n] {
			perZone[zone(i)]++
		}
	}
	// One node per compartment: a and b stop after their first batch; the default
	// compartment (no strategy) halts on its failed node.
	if perZone["a"] != 1 || perZone["b"] != 1 || perZone[""] != 1 {
		t.Errorf("nodes that ran the failing upgrade, per zone: %v", perZone)
	}
}
