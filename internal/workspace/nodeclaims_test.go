package workspace

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

var kwokClass = NodeClass{Group: "karpenter.kwok.sh", Kind: "KWOKNodeClass", Name: "default"}

// provFacts: an inference workspace of 2 replicas on Standard_NC24ads_A100_v4 (1 GPU a node),
// no matching node yet, pods pending unschedulable; mod adjusts.
func provFacts(mod func(*Facts)) Facts {
	f := infFacts(sPending, func(f *Facts) {
		f.Namespace, f.Name = "ml", "phi"
		f.Capacity = Capacity{Selector: "node.kubernetes.io/instance-type=Standard_NC24ads_A100_v4", GPUsPerReplica: 1, AllNodes: 3}
		f.Pods = []Pod{{Name: "p-a", Phase: corev1.PodPending, Unschedulable: "0/3 nodes are available"}}
		f.Workload = &Workload{UpToDate: true}
		f.Provisioning = Provisioning{Wanted: true, Available: true, NodeClass: kwokClass, InstanceType: "Standard_NC24ads_A100_v4", ReplicasPerNode: 1}
	})
	if mod != nil {
		mod(&f)
	}
	return f
}

func TestProvisioningCreatesClaimsForMissingNodes(t *testing.T) {
	d, err := Decide(provFacts(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ClaimName("ml", "phi", 0), ClaimName("ml", "phi", 1)}
	if !slices.Equal(d.CreateClaims, want) || !slices.Contains(d.Actions, ActionCreateNodeClaims) {
		t.Fatalf("claims %v actions %v, want %v and %s", d.CreateClaims, d.Actions, want, ActionCreateNodeClaims)
	}
	if rr := condOf(d, ConditionResourceReady); rr.Reason != ReasonProvisioningNodes || !strings.Contains(rr.Message, "(creating)") {
		t.Fatalf("ResourceReady = %s: %s", rr.Reason, rr.Message)
	}
	if st := condOf(d, v1alpha1.ConditionStalled); st.Status != metav1.ConditionFalse {
		t.Fatalf("provisioning must be progress, not a stall: Stalled %s %s", st.Status, st.Message)
	}
	if !slices.Equal(d.NodeClaims, want) {
		t.Fatalf("status.nodeClaims = %v", d.NodeClaims)
	}
}

func TestProvisioningCountsClaimsOnTheirWay(t *testing.T) {
	// Two replicas per node (4-GPU nodes, 2 GPUs a replica): 3 replicas missing need 2 nodes;
	// one claim is on its way, so one more is created, at the lowest free index.
	d, err := Decide(provFacts(func(f *Facts) {
		f.Replicas = 3
		f.Provisioning.ReplicasPerNode = 2
		f.Provisioning.Claims = []Claim{{Name: ClaimName("ml", "phi", 0), Step: "Launched=Unknown"}}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{ClaimName("ml", "phi", 1)}; !slices.Equal(d.CreateClaims, want) {
		t.Fatalf("create %v, want %v", d.CreateClaims, want)
	}
	// Both on their way: nothing more, still progress.
	d, _ = Decide(provFacts(func(f *Facts) {
		f.Replicas = 3
		f.Provisioning.ReplicasPerNode = 2
		f.Provisioning.Claims = []Claim{{Name: ClaimName("ml", "phi", 0)}, {Name: ClaimName("ml", "phi", 1)}}
	}))
	if len(d.CreateClaims) != 0 || slices.Contains(d.Actions, ActionCreateNodeClaims) {
		t.Fatalf("claims on their way: created %v", d.CreateClaims)
	}
	if st := condOf(d, v1alpha1.ConditionStalled); st.Status != metav1.ConditionFalse {
		t.Fatalf("Stalled %s", st.Status)
	}
}

func TestProvisioningOffOrUnavailableStalls(t *testing.T) {
	for name, mod := range map[string]func(*Facts){
		"no Karpenter NodeClaim API": func(f *Facts) { f.Provisioning.Available = false },
		"no Karpenter node class":    func(f *Facts) { f.Provisioning.NodeClass = NodeClass{} },
	} {
		t.Run(name, func(t *testing.T) {
			d, err := Decide(provFacts(mod))
			if err != nil {
				t.Fatal(err)
			}
			st := condOf(d, v1alpha1.ConditionStalled)
			if st.Status != metav1.ConditionTrue || !strings.Contains(st.Message, name) || len(d.CreateClaims) != 0 {
				t.Fatalf("Stalled %s %q, created %v", st.Status, st.Message, d.CreateClaims)
			}
		})
	}
	d, _ := Decide(provFacts(func(f *Facts) { f.Provisioning.Wanted = false }))
	if st := condOf(d, v1alpha1.ConditionStalled); st.Status != metav1.ConditionTrue || st.Reason != ReasonNoMatchingNodes || strings.Contains(st.Message, "provision") {
		t.Fatalf("provisionNodes false: Stalled %s %s %q", st.Status, st.Reason, st.Message)
	}
}

func TestProvisioningUnschedulableWaitsForClaims(t *testing.T) {
	// The claim's node is Ready and counted: capacity suffices, but the scheduler has not
	// placed the pod yet. That is progress while the workspace has claims of its own.
	d, _ := Decide(provFacts(func(f *Facts) {
		f.Replicas = 1
		f.Capacity = roomy
		f.Provisioning.Claims = []Claim{{Name: ClaimName("ml", "phi", 0), Ready: true}}
	}))
	if st := condOf(d, v1alpha1.ConditionStalled); st.Status != metav1.ConditionFalse {
		t.Fatalf("Stalled %s %q", st.Status, st.Message)
	}
	if rr := condOf(d, ConditionResourceReady); rr.Reason != ReasonUnschedulable {
		t.Fatalf("ResourceReady %s", rr.Reason)
	}
	// Without claims the same pod stalls the workspace, as before.
	d, _ = Decide(provFacts(func(f *Facts) { f.Replicas = 1; f.Capacity = roomy; f.Provisioning = Provisioning{} }))
	if st := condOf(d, v1alpha1.ConditionStalled); st.Status != metav1.ConditionTrue {
		t.Fatalf("no claims: Stalled %s", st.Status)
	}
}

func TestProvisioningDeleteWaitsForClaims(t *testing.T) {
	a, b := ClaimName("ml", "phi", 0), ClaimName("ml", "phi", 1)
	d, _ := Decide(provFacts(func(f *Facts) {
		f.Deleting, f.Workload, f.Service, f.Pods = true, nil, Object{}, nil
		f.Provisioning.Claims = []Claim{{Name: a, Ready: true}, {Name: b, Deleting: true}}
	}))
	if !slices.Equal(d.DeleteClaims, []string{a}) || !slices.Contains(d.Actions, ActionDeleteNodeClaims) || slices.Contains(d.Actions, ActionRemoveFinalizer) {
		t.Fatalf("delete %v actions %v", d.DeleteClaims, d.Actions)
	}
	d, _ = Decide(provFacts(func(f *Facts) {
		f.Deleting, f.Workload, f.Service, f.Pods = true, nil, Object{}, nil
		f.Provisioning.Claims = []Claim{{Name: b, Deleting: true}}
	}))
	if slices.Contains(d.Actions, ActionRemoveFinalizer) || slices.Contains(d.Actions, ActionDeleteNodeClaims) {
		t.Fatalf("a claim still terminating: actions %v", d.Actions)
	}
	d, _ = Decide(provFacts(func(f *Facts) {
		f.Deleting, f.Workload, f.Service, f.Pods = true, nil, Object{}, nil
		f.Provisioning.Claims = nil
	}))
	if !slices.Equal(d.Actions, []Action{ActionRemoveFinalizer}) {
		t.Fatalf("claims gone: actions %v", d.Actions)
	}
}

func TestClaimFactsAndDesiredNodeClaim(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Launched", "status": "True"},
		map[string]any{"type": "Registered", "status": "False", "reason": "NodeNotFound", "message": "node not registered"},
	}}}}
	u.SetName("c")
	if c := ClaimFacts(u); c.Ready || c.Step != "Registered=False (NodeNotFound): node not registered" {
		t.Fatalf("%+v", c)
	}
	w := &v1alpha1.Workspace{}
	w.Namespace, w.Name = "ml", "phi"
	w.Spec.Resource.InstanceType = "Standard_NC24ads_A100_v4"
	w.Spec.Resource.LabelSelectorExpressions = []v1alpha1.LabelRequirement{{Key: "topology.kubernetes.io/zone", Operator: "In", Values: []string{"eastus-1"}}}
	nc := DesiredNodeClaim(w, "ws-x-0", kwokClass, map[string]string{"nvidia.com/gpu.present": "true"})
	if nc.GetLabels()[LabelWorkspace] != "phi" || nc.GetLabels()[LabelWorkspaceNamespace] != "ml" || nc.GetAnnotations()[annotationDoNotDisrupt] != "true" {
		t.Fatalf("labels %v annotations %v", nc.GetLabels(), nc.GetAnnotations())
	}
	reqs, _, _ := unstructured.NestedSlice(nc.Object, "spec", "requirements")
	if len(reqs) != 5 || reqs[2].(map[string]any)["values"].([]any)[0] != "Standard_NC24ads_A100_v4" ||
		reqs[3].(map[string]any)["key"] != "nvidia.com/gpu.present" || reqs[4].(map[string]any)["values"].([]any)[0] != "eastus-1" {
		t.Fatalf("requirements %v", reqs)
	}
	pl, err := Placement(w)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pl.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&SKUToleration) }) {
		t.Fatalf("a provisioning workspace's pods must tolerate %v: %v", SKUToleration, pl.Tolerations)
	}
	off := false
	w.Spec.Resource.ProvisionNodes = &off
	if pl, _ := Placement(w); slices.ContainsFunc(pl.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&SKUToleration) }) {
		t.Fatalf("provisionNodes false: no sku toleration wanted: %v", pl.Tolerations)
	}
	if _, err := ParseNodeClass("a/b"); err == nil {
		t.Fatal("ParseNodeClass(a/b) must fail")
	}
}

func TestProvisioningNeverExceedsTheReplicasNodes(t *testing.T) {
	// Both claims Ready, yet their nodes do not match (say a label the selector wants is
	// missing): no third claim, the workspace keeps waiting and says where each claim stands.
	d, _ := Decide(provFacts(func(f *Facts) {
		f.Provisioning.Claims = []Claim{{Name: ClaimName("ml", "phi", 0), Ready: true}, {Name: ClaimName("ml", "phi", 1), Ready: true}}
	}))
	if len(d.CreateClaims) != 0 {
		t.Fatalf("created %v beyond the 2 nodes 2 replicas need", d.CreateClaims)
	}
	if rr := condOf(d, ConditionResourceReady); !strings.Contains(rr.Message, ClaimName("ml", "phi", 1)+" (Ready)") {
		t.Fatalf("ResourceReady %q", rr.Message)
	}
}

// tunProvFacts: a tuning workspace ml/tune on Standard_NC24ads_A100_v4 whose Job completed, with
// one NodeClaim Ready and one already deleting, spec.tuning.releaseNodesOnSuccess set and the
// output an image; prev is the previous state, mod adjusts.
func tunProvFacts(prev State, mod func(*Facts)) Facts {
	f := tunFacts(prev, func(f *Facts) {
		f.Namespace, f.Name = "ml", "tune"
		f.Job = &Job{Complete: true, Succeeded: 1}
		f.Pods[0].Phase, f.Pods[0].Ready = corev1.PodSucceeded, false
		f.Provisioning = Provisioning{Wanted: true, Available: true, NodeClass: kwokClass, InstanceType: "Standard_NC24ads_A100_v4", ReplicasPerNode: 1,
			Claims: []Claim{{Name: ClaimName("ml", "tune", 0), Ready: true}, {Name: ClaimName("ml", "tune", 1), Deleting: true}}}
		f.ReleaseNodesOnSuccess, f.Output = true, "image registry.example/adapters/phi:1"
	})
	if mod != nil {
		mod(&f)
	}
	return f
}

// releasedBefore is the ResourceReady a pass that released the nodes left.
func releasedBefore(f *Facts) {
	f.Conditions = append(f.Conditions, metav1.Condition{Type: ConditionResourceReady, Status: metav1.ConditionFalse, Reason: ReasonNodesReleased, Message: "released earlier"})
}

// spec.tuning.releaseNodesOnSuccess (kaito-project/kaito #1107): a Succeeded run deletes its
// NodeClaims and stays Succeeded, recording the release in ResourceReady (NodesReleased) and an
// event; once they are gone the record is carried and nothing is created again; a Failed run,
// or one without the flag, keeps its nodes.
func TestReleaseNodesOnSuccess(t *testing.T) {
	a, b := ClaimName("ml", "tune", 0), ClaimName("ml", "tune", 1)
	tests := []struct {
		name string
		f    Facts
		// to is the state; release: the claims deleted (nil: none, no action, no event);
		// resource: ResourceReady's reason; requeue: RequeueAfter is WaitPoll; claims:
		// status.nodeClaims.
		to       State
		release  []string
		resource string
		requeue  bool
		claims   []string
	}{
		{name: "Running→Succeeded releases the claims not already going", f: tunProvFacts(sRunning, nil),
			to: sSucceeded, release: []string{a}, resource: ReasonNodesReleased, requeue: true, claims: []string{a, b}},
		{name: "Succeeded, the flag set afterwards: releases then", f: tunProvFacts(sSucceeded, nil),
			to: sSucceeded, release: []string{a}, resource: ReasonNodesReleased, requeue: true, claims: []string{a, b}},
		{name: "Succeeded, only a claim going: waits for it, no second delete",
			f:  tunProvFacts(sSucceeded, func(f *Facts) { f.Provisioning.Claims = f.Provisioning.Claims[1:]; releasedBefore(f) }),
			to: sSucceeded, resource: ReasonNodesReleased, requeue: true, claims: []string{b}},
		{name: "Succeeded, claims gone: the record is carried, nothing created, no requeue",
			f: tunProvFacts(sSucceeded, func(f *Facts) {
				f.Provisioning.Claims = nil
				f.Capacity = Capacity{Selector: "node.kubernetes.io/instance-type=Standard_NC24ads_A100_v4", GPUsPerReplica: 1, AllNodes: 3} // its nodes gone
				releasedBefore(f)
			}),
			to: sSucceeded, resource: ReasonNodesReleased},
		{name: "Succeeded without claims of its own (existing nodes): ResourceReady kept",
			f:  tunProvFacts(sSucceeded, func(f *Facts) { f.Provisioning.Claims = nil }),
			to: sSucceeded, resource: ReasonWaitingForScheduler /* carry's default: was() records only WorkspaceSucceeded */},
		{name: "Succeeded without the flag: the nodes are held",
			f:  tunProvFacts(sRunning, func(f *Facts) { f.ReleaseNodesOnSuccess = false }),
			to: sSucceeded, resource: ReasonResourcesAvailable, claims: []string{a, b}},
		{name: "Failed: the nodes are kept to inspect",
			f: tunProvFacts(sRunning, func(f *Facts) {
				f.Job = &Job{Failed: true, FailedReason: "BackoffLimitExceeded", FailedPods: 1}
				f.Pods[0].Phase = corev1.PodFailed
			}),
			to: sFailed, resource: ReasonResourcesAvailable, claims: []string{a, b}},
		{name: "Failed, terminal, flag set afterwards: still kept",
			f:  tunProvFacts(sFailed, nil),
			to: sFailed, resource: ReasonWaitingForScheduler, claims: []string{a, b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			invariant.Check(t, invariants, tt.f, d)
			if d.State != tt.to {
				t.Errorf("state %s, want %s\n%s", d.State, tt.to, dump(d))
			}
			if !slices.Equal(d.DeleteClaims, tt.release) || slices.Contains(d.Actions, ActionDeleteNodeClaims) != (tt.release != nil) {
				t.Errorf("deleted %v (actions %v), want %v", d.DeleteClaims, d.Actions, tt.release)
			}
			if slices.Contains(d.Actions, ActionCreateNodeClaims) {
				t.Errorf("creates claims %v", d.CreateClaims)
			}
			rr := condOf(d, ConditionResourceReady)
			if rr.Reason != tt.resource {
				t.Errorf("ResourceReady %s %s: %s, want reason %s", rr.Status, rr.Reason, rr.Message, tt.resource)
			}
			if (d.RequeueAfter == WaitPoll) != tt.requeue {
				t.Errorf("RequeueAfter %v, want WaitPoll: %v", d.RequeueAfter, tt.requeue)
			}
			if !slices.Equal(d.NodeClaims, tt.claims) {
				t.Errorf("status.nodeClaims %v, want %v", d.NodeClaims, tt.claims)
			}
			if (d.ReleaseEvent != nil) != (tt.release != nil) {
				t.Fatalf("release event %+v", d.ReleaseEvent)
			}
			if ev := d.ReleaseEvent; ev != nil && (ev.Type != corev1.EventTypeNormal || ev.Reason != ReasonNodesReleased || !strings.Contains(ev.Message, a) ||
				!strings.Contains(ev.Message, "registry.example/adapters/phi:1")) {
				t.Errorf("release event %+v", ev)
			}
			if tt.to == sSucceeded {
				if ready := condOf(d, v1alpha1.ConditionReady); ready.Status != metav1.ConditionTrue {
					t.Errorf("Ready %s %s", ready.Status, ready.Reason)
				}
			}
			if tt.release != nil && (rr.Status != metav1.ConditionFalse || !strings.Contains(rr.Message, "workspace-tune") || !strings.Contains(rr.Message, "image registry.example/adapters/phi:1")) {
				t.Errorf("ResourceReady %s: %s", rr.Status, rr.Message)
			}
		})
	}
}

// A Job seen complete while the workspace was Pending is reported Running first; with the flag
// no NodeClaim is created in that pass even when the capacity check finds no node (without it,
// provisioning still makes one, as before).
func TestReleaseNodesNoClaimForAFinishedRun(t *testing.T) {
	f := tunProvFacts(sPending, func(f *Facts) {
		f.Provisioning.Claims = nil
		f.Capacity = Capacity{Selector: "node.kubernetes.io/instance-type=Standard_NC24ads_A100_v4", GPUsPerReplica: 1, AllNodes: 3}
	})
	d, err := Decide(f)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != sRunning || !d.Requeue || len(d.CreateClaims) != 0 || slices.Contains(d.Actions, ActionCreateNodeClaims) || len(d.DeleteClaims) != 0 {
		t.Fatalf("state %s requeue %v create %v delete %v actions %v", d.State, d.Requeue, d.CreateClaims, d.DeleteClaims, d.Actions)
	}
	f.ReleaseNodesOnSuccess = false
	if d, _ := Decide(f); len(d.CreateClaims) != 1 {
		t.Fatalf("without the flag: create %v", d.CreateClaims)
	}
}

func TestTuningOutput(t *testing.T) {
	w := &v1alpha1.Workspace{}
	if got := TuningOutput(w); got != "" {
		t.Fatalf("inference: %q", got)
	}
	w.Spec.Tuning = &v1alpha1.WorkspaceTuning{Output: v1alpha1.WorkspaceDataDestination{PVC: "out"}}
	if got := TuningOutput(w); got != "PVC out" {
		t.Fatalf("pvc: %q", got)
	}
	w.Spec.Tuning.Output = v1alpha1.WorkspaceDataDestination{Image: "registry.example/a:1"}
	if got := TuningOutput(w); got != "image registry.example/a:1" {
		t.Fatalf("image: %q", got)
	}
}
