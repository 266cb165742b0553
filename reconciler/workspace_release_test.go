package reconciler

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// releaseInstanceType is a 2-GPU instance type; the test's own kwok node carries it, so the
// tuning pod fits without new nodes and no reconciler creates a NodeClaim of its own.
const releaseInstanceType = "Standard_NC48ads_A100_v4"

// standInClaim is a NodeClaim labelled for the workspace ns/name, as the reconciler labels the
// claims it creates, but on a node class kind Karpenter does not serve: Karpenter leaves it alone
// (no launch, no finalizer), so the test sees exactly what the reconciler does with it.
func standInClaim(ns, name string, i int) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{
		"nodeClassRef": map[string]any{"group": "test.gantry.dev", "kind": "StandInNodeClass", "name": "none"},
		"requirements": []any{map[string]any{"key": "node.kubernetes.io/instance-type", "operator": "In", "values": []any{releaseInstanceType}}},
	}}}
	u.SetGroupVersionKind(workspace.NodeClaimGVK)
	u.SetName(workspace.ClaimName(ns, name, i))
	u.SetLabels(map[string]string{workspace.LabelWorkspace: name, workspace.LabelWorkspaceNamespace: ns, "karpenter.sh/nodepool": workspace.NodePoolName})
	return u
}

// releaseSetup adds a kwok node of releaseInstanceType, skips the test when the cluster has no
// Karpenter NodeClaim API, and returns a tuning workspace on that instance type (provisionNodes
// on, the default) with two stand-in NodeClaims of its own created, removed at the end.
func (e *testEnv) releaseSetup(t *testing.T, prefix string, release bool) (*v1alpha1.Workspace, []string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.c.RESTMapper().RESTMapping(workspace.NodeClaimGVK.GroupKind(), workspace.NodeClaimGVK.Version); err != nil {
		t.Skipf("no Karpenter NodeClaim API in the cluster (hack/karpenter.sh): %v", err)
	}
	node := testGPUNode(fmt.Sprintf("gantry-test-%s-%d", prefix, seq.Add(1)), "NVIDIA-A100-PCIE-80GB", 2)
	node.Labels["node.kubernetes.io/instance-type"] = releaseInstanceType
	e.addNode(t, node)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
	})
	spec := tuningSpec()
	spec.Resource = v1alpha1.WorkspaceResource{Count: 1, InstanceType: releaseInstanceType}
	spec.Tuning.ReleaseNodesOnSuccess = release
	w := e.newWorkspace(prefix, nil, spec)
	var names []string
	for i := range 2 {
		c := standInClaim(e.ns, w.Name, i)
		if err := e.c.Create(ctx, c); err != nil {
			t.Fatalf("create NodeClaim: %v", err)
		}
		names = append(names, c.GetName())
		t.Cleanup(func() { _ = e.c.Delete(context.Background(), standInClaim(e.ns, w.Name, i)) })
	}
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	return w, names
}

// claimsLeft lists the NodeClaims labelled for the workspace name in the test namespace.
func (e *testEnv) claimsLeft(t *testing.T, name string) []string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(workspace.NodeClaimListGVK)
	if err := e.c.List(context.Background(), list, client.MatchingLabels{workspace.LabelWorkspace: name, workspace.LabelWorkspaceNamespace: e.ns}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range list.Items {
		out = append(out, u.GetName())
	}
	slices.Sort(out)
	return out
}

// released is the condition of a workspace whose nodes were released: Succeeded and Ready at
// its generation, ResourceReady=False reason NodesReleased, no NodeClaim left in status.
func released(w *v1alpha1.Workspace) bool {
	rr := wsCond(w, workspace.ConditionResourceReady)
	return stateIs(v1alpha1.WorkspaceStateSucceeded)(w) && rr.Reason == workspace.ReasonNodesReleased && rr.Status == metav1.ConditionFalse &&
		len(w.Status.NodeClaims) == 0 && wsCond(w, v1alpha1.ConditionReady).Status == metav1.ConditionTrue
}

// checkReleased asserts what a release leaves: no NodeClaim of the workspace in the cluster, the
// Job kept, the record naming the Job and the output, a NodesReleased event naming the claims,
// and a status that stays so (nothing re-created) over a few more passes.
func (e *testEnv) checkReleased(t *testing.T, w *v1alpha1.Workspace, claims []string) {
	t.Helper()
	got := e.waitWS(t, w.Name, "Succeeded with its nodes released", released)
	if left := e.claimsLeft(t, w.Name); len(left) != 0 {
		t.Errorf("NodeClaims left after the release: %v", left)
	}
	rr := wsCond(got, workspace.ConditionResourceReady)
	if !strings.Contains(rr.Message, "workspace-"+w.Name) || !strings.Contains(rr.Message, "image registry.example/adapters/phi:1") {
		t.Errorf("ResourceReady does not name the Job and the output: %s", rr.Message)
	}
	job := &unstructured.Unstructured{}
	job.SetAPIVersion("batch/v1")
	job.SetKind("Job")
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, job); err != nil {
		t.Errorf("the Job is not kept: %v", err)
	}
	e.waitEvent(t, "Workspace", w.Name, "Normal "+workspace.ReasonNodesReleased+": the tuning run succeeded: deleting its NodeClaims "+strings.Join(claims, ", "))
	// Nothing comes back: a few more passes (a requeue every 2s while claims were left; the
	// workspace is touched to force one) keep it Succeeded, released, without claims.
	updateLatest(t, e, types.NamespacedName{Namespace: e.ns, Name: w.Name}, "workspace "+w.Name, func(o *v1alpha1.Workspace) {
		o.Annotations = map[string]string{"gantry.dev/test-touch": "1"}
	})
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var cur v1alpha1.Workspace
		if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: w.Name}, &cur); err != nil {
			t.Fatal(err)
		}
		if !released(&cur) || len(e.claimsLeft(t, w.Name)) != 0 {
			t.Fatalf("after the release: %s claims %v", describeWS(&cur), e.claimsLeft(t, w.Name))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// spec.tuning.releaseNodesOnSuccess (kaito-project/kaito #1107), set from the start: the run
// Succeeds (kwok completes the Job) and the workspace's NodeClaims are deleted; it stays
// Succeeded and Ready, records NodesReleased and keeps its Job, and nothing is re-created.
func TestWorkspaceTuningReleasesNodes(t *testing.T) {
	e := setup(t)
	t.Parallel()
	w, claims := e.releaseSetup(t, "tune-rel", true)
	rec := e.recordStates(t, w.Name)
	e.checkReleased(t, w, claims)
	want := []v1alpha1.WorkspaceState{v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateRunning, v1alpha1.WorkspaceStateSucceeded}
	if s := rec.until(want[len(want)-1]); !slices.Equal(s, want) && !slices.Equal(s, want[1:]) {
		t.Errorf("states %v, want %v", s, want)
	}
	checkKAITOPath(t, v1alpha1.WorkspaceModeTuning, rec.seen())
}

// Without the flag a Succeeded run holds its NodeClaims; setting it on the Succeeded workspace
// (the one change the CRD allows on a tuning spec; any other is still refused) releases them
// then. A run that Failed keeps its claims even with the flag.
func TestWorkspaceTuningReleasesNodesLater(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	w, claims := e.releaseSetup(t, "tune-later", false)
	e.waitWS(t, w.Name, "Succeeded", stateIs(v1alpha1.WorkspaceStateSucceeded))
	time.Sleep(3 * time.Second) // a requeue's worth: a release would have happened by now
	if left := e.claimsLeft(t, w.Name); !slices.Equal(left, claims) {
		t.Fatalf("without releaseNodesOnSuccess the claims must be held: %v, want %v", left, claims)
	}

	key := types.NamespacedName{Namespace: e.ns, Name: w.Name}
	var refused error
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var cur v1alpha1.Workspace
		if err := e.c.Get(ctx, key, &cur); err != nil {
			return false, err
		}
		three := int32(3)
		cur.Spec.Tuning.BackoffLimit = &three
		refused = e.c.Update(ctx, &cur)
		return !apierrors.IsConflict(refused), nil // the reconciler writes the status meanwhile
	})
	if !apierrors.IsInvalid(refused) || !strings.Contains(refused.Error(), "immutable but for spec.tuning.releaseNodesOnSuccess") {
		t.Fatalf("changing backoffLimit of a tuning workspace: %v, want Invalid (immutable)", refused)
	}
	updateLatest(t, e, key, "workspace "+w.Name, func(o *v1alpha1.Workspace) { o.Spec.Tuning.ReleaseNodesOnSuccess = true })
	e.checkReleased(t, w, claims)
}

// A Failed run keeps its nodes, releaseNodesOnSuccess or not: the user may want to inspect them.
func TestWorkspaceTuningFailedKeepsNodes(t *testing.T) {
	e := setup(t)
	t.Parallel()
	if _, err := e.c.RESTMapper().RESTMapping(workspace.NodeClaimGVK.GroupKind(), workspace.NodeClaimGVK.Version); err != nil {
		t.Skipf("no Karpenter NodeClaim API in the cluster: %v", err)
	}
	spec := tuningSpec()
	spec.Tuning.ReleaseNodesOnSuccess = true
	spec.Resource = v1alpha1.WorkspaceResource{Count: 1, InstanceType: releaseInstanceType}
	node := testGPUNode(fmt.Sprintf("gantry-test-tune-fk-%d", seq.Add(1)), "NVIDIA-A100-PCIE-80GB", 2)
	node.Labels["node.kubernetes.io/instance-type"] = releaseInstanceType
	e.addNode(t, node)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
	})
	w := e.newWorkspace("tune-fk", map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}, spec)
	c := standInClaim(e.ns, w.Name, 0)
	if err := e.c.Create(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.c.Delete(context.Background(), standInClaim(e.ns, w.Name, 0)) })
	if err := e.c.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	e.waitWS(t, w.Name, "Failed", stateIs(v1alpha1.WorkspaceStateFailed))
	time.Sleep(3 * time.Second)
	if left := e.claimsLeft(t, w.Name); !slices.Equal(left, []string{c.GetName()}) {
		t.Fatalf("a Failed run must keep its claims: %v", left)
	}
	if got := e.wsEvents(w.Name); strings.Contains(got, workspace.ReasonNodesReleased) {
		t.Fatalf("a Failed run released: %s", got)
	}
}

// The CRD's rule that a tuning spec is immutable names every field of the spec and of
// spec.tuning but releaseNodesOnSuccess (CEL cannot compare two objects but for one field), so
// a field added later must be added to the rule: this fails until it is. spec.inference and
// spec.autoscaling are left out of it: other rules forbid them on a tuning workspace.
func TestWorkspaceTuningImmutableRule(t *testing.T) {
	var rule string
	for _, line := range strings.Split(crdMarkers(t), "\n") {
		if strings.Contains(line, "!has(oldSelf.tuning)") {
			rule = line
		}
	}
	if rule == "" {
		t.Fatal("no immutability rule for tuning workspaces in the Workspace CRD")
	}
	for typ, prefix := range map[reflect.Type]string{reflect.TypeOf(v1alpha1.WorkspaceSpec{}): "self.", reflect.TypeOf(v1alpha1.WorkspaceTuning{}): "self.tuning."} {
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "releaseNodesOnSuccess" || name == "tuning" || name == "inference" || name == "autoscaling" {
				continue
			}
			if !strings.Contains(rule, prefix+name+" == oldS"+prefix[1:]+name) {
				t.Errorf("the tuning immutability rule does not compare %s%s: %s", prefix, name, rule)
			}
		}
	}
}

// crdMarkers is the embedded Workspace CRD's x-kubernetes-validations rules, one a line.
func crdMarkers(t *testing.T) string {
	t.Helper()
	crds, err := EmbeddedCRDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range crds {
		if u.GetName() != "workspaces.gantry.dev" {
			continue
		}
		vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
		var b strings.Builder
		for _, v := range vs {
			rules, _, _ := unstructured.NestedSlice(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "x-kubernetes-validations")
			for _, r := range rules {
				fmt.Fprintln(&b, r.(map[string]any)["rule"])
			}
		}
		return b.String()
	}
	t.Fatal("no Workspace CRD embedded")
	return ""
}
