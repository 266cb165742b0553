package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// spec.resource.labelSelectorExpressions (KAITO's labelSelector.matchExpressions): two nodes
// with the test's GPU product, one in zone z1 and a spot node in z2. zone In (z2) with spot
// DoesNotExist matches no node: the workspace is Stalled (NoMatchingNodes) naming the
// requirements. Relaxed to zone In (z1, z2) with spot DoesNotExist it goes Ready on the z1
// node, the requirements in the pods' required node affinity. The CRD refuses an In without
// values.
func TestWorkspaceLabelSelectorExpressions(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	product := fmt.Sprintf("GANTRY-TEST-L40S-%d", seq.Add(1))
	z1 := testGPUNode(fmt.Sprintf("gantry-test-l40s-z1-%d", seq.Add(1)), product, 1)
	z1.Labels["topology.kubernetes.io/zone"] = "z1"
	spot := testGPUNode(fmt.Sprintf("gantry-test-l40s-z2-%d", seq.Add(1)), product, 1)
	spot.Labels["topology.kubernetes.io/zone"] = "z2"
	spot.Labels["gantry.dev/spot"] = "true"
	for _, n := range []*corev1.Node{z1, spot} {
		e.addNode(t, n)
		t.Cleanup(func() {
			_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}})
		})
	}
	zone := func(v ...string) v1alpha1.LabelRequirement {
		return v1alpha1.LabelRequirement{Key: "topology.kubernetes.io/zone", Operator: metav1.LabelSelectorOpIn, Values: v}
	}
	noSpot := v1alpha1.LabelRequirement{Key: "gantry.dev/spot", Operator: metav1.LabelSelectorOpDoesNotExist}

	bad := e.newWorkspace("expr-bad", nil, inferenceSpec(1, 1, product))
	bad.Spec.Resource.LabelSelectorExpressions = []v1alpha1.LabelRequirement{{Key: "topology.kubernetes.io/zone", Operator: metav1.LabelSelectorOpIn}}
	if err := e.c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "In and NotIn need values") {
		t.Errorf("an In without values: %v, want the CRD's rule", err)
	}

	w := e.newWorkspace("expr", nil, inferenceSpec(1, 1, product))
	w.Spec.Resource.LabelSelectorExpressions = []v1alpha1.LabelRequirement{zone("z2"), noSpot}
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	got := e.waitWS(t, w.Name, "Stalled", func(w *v1alpha1.Workspace) bool {
		return wsCond(w, v1alpha1.ConditionStalled).Reason == workspace.ReasonNoMatchingNodes
	})
	if msg := wsCond(got, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, "topology.kubernetes.io/zone in (z2),!gantry.dev/spot") {
		t.Errorf("Stalled message does not name the requirements: %s", msg)
	}
	e.updateWorkspace(t, w.Name, func(w *v1alpha1.Workspace) {
		w.Spec.Resource.LabelSelectorExpressions = []v1alpha1.LabelRequirement{zone("z1", "z2"), noSpot}
	})
	got = e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	if !slices.Equal(got.Status.WorkerNodes, []string{z1.Name}) {
		t.Errorf("worker nodes %v, want %s (the spot node does not meet the requirements)", got.Status.WorkerNodes, z1.Name)
	}
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	a := dep.Spec.Template.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil ||
		len(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 2 {
		t.Errorf("pod affinity %+v, want the two requirements", a)
	}
}
