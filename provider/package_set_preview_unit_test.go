package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The preview reads the fleet the way a plan does (one list of nodes, package sets and
// PodDisruptionBudgets, and the pods of a budget that allows no disruption): a driver bump
// with a reboot over three GPU nodes, one node behind a PDB that allows 0 disruptions. The
// shape (the attribute) is 3 nodes in 3 waves, 3 rebooted; the warning names the node, the pod
// and the PDB, and says where today's rollout would stop.
func TestPackageSetPreview_pdbBlockedNode(t *testing.T) {
	var objs []runtime.Object
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2", "cpu-0"} {
		lbl := map[string]string{"nvidia.com/gpu.present": "true"}
		if strings.HasPrefix(n, "cpu") {
			lbl = nil
		}
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: lbl}})
	}
	app := map[string]string{"app": "inference"}
	one := intstr.FromInt32(1)
	objs = append(objs,
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inference-0", Namespace: "ml", Labels: app}, Spec: corev1.PodSpec{NodeName: "gpu-1"},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "inference", Namespace: "ml"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: app}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, DesiredHealthy: 1, CurrentHealthy: 1}})
	clients := &kube.Clients{Core: kubefake.NewSimpleClientset(objs...),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{wait.PackageSet.GVR: "PackageSetList"})}
	r := &packageSetResource{kindResource[packageSetModel]{ops: packageSetOps, data: newProviderData(kube.NewLazy(func() (*kube.Clients, error) { return clients, nil }))}}
	m := psFieldsModel()
	m.NodeSelector = map[string]string{"nvidia.com/gpu.present": "true"}
	m.InterruptionBudget = &budgetModel{Count: types.Int64Value(1), Percent: types.Int64Null()}
	m.Packages[0].Interrupt = &interruptModel{Type: types.StringValue("reboot")}
	planned, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	p, name, summary, why := r.preview(context.Background(), planned)
	if why != "" || name != "gpu" {
		t.Fatalf("preview skipped: %s", why)
	}
	if p.Selected != 3 || len(p.Nodes) != 3 || p.Waves != 3 || p.Rebooted != 3 || !p.Complete {
		t.Errorf("shape %+v, want 3 nodes in 3 waves, 3 rebooted, complete", p)
	}
	for _, want := range []string{
		"3 of 3 selected nodes run stages, in 3 waves of at most 1 nodes; 3 cordoned, 3 drained, 3 rebooted.",
		"Blocked now: gpu-1: drain refused: pod ml/inference-0: PodDisruptionBudget ml/inference allows 0 disruptions (needs 1 healthy pods and has 1).",
		"With what blocks now, the rollout would stop after starting 2 of the 3 nodes",
	} {
		if !strings.Contains(summary, want) {
			t.Errorf("warning lacks %q:\n%s", want, summary)
		}
	}
	if obj := previewObject(p); obj.Attributes()["rebooted"].String() != "3" || obj.Attributes()["waves"].String() != "3" {
		t.Errorf("rollout_preview %s", obj)
	}
}

// A set whose rollout of an earlier change is under way gets no preview at plan (known after
// apply, with the reason): its nodes' progress changes until the apply plans again, and a
// value known at plan must come out the same then ("inconsistent final plan" otherwise). A set
// at rest (complete) gets one.
func TestPackageSetPreview_rolloutUnderWay(t *testing.T) {
	for status, wantWhy := range map[string]string{"in_progress": `under way (status "in_progress", complete nodes "1/3")`, "erroring": "under way", "complete": ""} {
		live := &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "gantry.dev/v1alpha1", "kind": "PackageSet",
			"metadata": map[string]interface{}{"name": "gpu", "generation": int64(2)},
			"status":   map[string]interface{}{"observedGeneration": int64(2), "status": status, "completeNodes": "1/3"},
		}}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0", Labels: map[string]string{"nvidia.com/gpu.present": "true"}}}
		why := previewWhyGPUSet(t, []runtime.Object{node}, live)
		if wantWhy == "" && why != "" || wantWhy != "" && !strings.Contains(why, wantWhy) {
			t.Errorf("%s: why %q, want %q", status, why, wantWhy)
		}
	}
}

// The preview's value reads no other package set (one created, changed or removed by the same
// apply is listed or not when the apply plans again, and a value known at plan must come out
// the same then); the warning says what they change now. Two sets share fleet budget "gpus"
// over three GPU nodes, this one allowing 2 in flight, the other 1: the first wave is 2 whether
// the other is live, being deleted or absent, and while it is listed the warning gives the
// budget as shared now (at most 1, across both). The CI cases: a halted set deleted just before
// the plan was gone at apply, and a set created in the same apply was listed at apply only
// ("Provider produced inconsistent final plan" both times).
func TestPackageSetPreview_otherSets(t *testing.T) {
	var nodes []runtime.Object
	for _, n := range []string{"gpu-0", "gpu-1", "gpu-2"} {
		nodes = append(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"nvidia.com/gpu.present": "true"}}})
	}
	other := func(deleting bool) *unstructured.Unstructured {
		meta := map[string]interface{}{"name": "other", "generation": int64(1)}
		if deleting {
			meta["deletionTimestamp"] = "2026-11-29T00:00:00Z"
			meta["finalizers"] = []interface{}{"gantry.dev/finalizer"}
		}
		return &unstructured.Unstructured{Object: map[string]interface{}{
			"apiVersion": "gantry.dev/v1alpha1", "kind": "PackageSet", "metadata": meta,
			"spec": map[string]interface{}{"nodeSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"nvidia.com/gpu.present": "true"}},
				"rollout": map[string]interface{}{"fleetBudget": map[string]interface{}{"name": "gpus", "maxInFlight": int64(1)}}},
			"status": map[string]interface{}{"observedGeneration": int64(1), "status": "erroring"},
		}}
	}
	const shared = "Shared now: fleet budget gpus: at most 1 nodes in flight across gpu, other"
	for _, tc := range []struct {
		name       string
		live       []*unstructured.Unstructured
		wantShared bool
	}{
		{"other live", []*unstructured.Unstructured{other(false)}, true},
		{"other being deleted", []*unstructured.Unstructured{other(true)}, true},
		{"other absent", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := psFieldsModel()
			m.NodeSelector = map[string]string{"nvidia.com/gpu.present": "true"}
			m.InterruptionBudget = &budgetModel{Count: types.Int64Value(3), Percent: types.Int64Null()}
			m.Rollout = &rolloutModel{FleetBudget: &fleetBudgetModel{Name: types.StringValue("gpus"), MaxInFlight: types.Int64Value(2), MaxInFlightPct: types.Int64Null()}}
			p, summary, why := previewGPUSet(t, nodes, m, tc.live...)
			if why != "" {
				t.Fatalf("preview skipped: %s", why)
			}
			if p.MaxWave != 2 || len(p.Constraints) == 0 || !strings.Contains(strings.Join(p.Constraints, "; "), "fleet budget gpus: at most 2 nodes in flight across gpu") {
				t.Errorf("first wave %d, constraints %q: want 2, this set's own rule only", p.MaxWave, p.Constraints)
			}
			if got := strings.Contains(summary, shared); got != tc.wantShared {
				t.Errorf("warning has %q: %v, want %v:\n%s", shared, got, tc.wantShared, summary)
			}
		})
	}
}

// previewWhyGPUSet previews a set selecting nvidia.com/gpu.present=true against a fake cluster
// of objs (nodes) and the package set live, and returns why it was skipped ("" when made).
func previewWhyGPUSet(t *testing.T, objs []runtime.Object, live *unstructured.Unstructured) string {
	t.Helper()
	m := psFieldsModel()
	m.NodeSelector = map[string]string{"nvidia.com/gpu.present": "true"}
	_, _, why := previewGPUSet(t, objs, m, live)
	return why
}

// previewGPUSet previews the set m against a fake cluster of objs (nodes, pods, budgets) and
// the package sets live: the preview, the warning, and why it was skipped ("" when made).
func previewGPUSet(t *testing.T, objs []runtime.Object, m *packageSetModel, live ...*unstructured.Unstructured) (packageset.Preview, string, string) {
	t.Helper()
	sets := make([]runtime.Object, len(live))
	for i := range live {
		sets[i] = live[i]
	}
	clients := &kube.Clients{Core: kubefake.NewSimpleClientset(objs...),
		Dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{wait.PackageSet.GVR: "PackageSetList"}, sets...)}
	r := &packageSetResource{kindResource[packageSetModel]{ops: packageSetOps, data: newProviderData(kube.NewLazy(func() (*kube.Clients, error) { return clients, nil }))}}
	planned, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	p, _, summary, why := r.preview(context.Background(), planned)
	return p, summary, why
}
