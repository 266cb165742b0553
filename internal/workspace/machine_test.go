package workspace

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

const (
	inf = v1alpha1.WorkspaceModeInference
	tun = v1alpha1.WorkspaceModeTuning

	sPending   = v1alpha1.WorkspaceStatePending
	sReady     = v1alpha1.WorkspaceStateReady
	sNotReady  = v1alpha1.WorkspaceStateNotReady
	sRunning   = v1alpha1.WorkspaceStateRunning
	sSucceeded = v1alpha1.WorkspaceStateSucceeded
	sFailed    = v1alpha1.WorkspaceStateFailed
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// unboundClaimsMsg is kube-scheduler's message for a pod whose immediate claims are not bound.
const unboundClaimsMsg = "0/7 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."

// was returns the conditions a previous pass in state s left (only WorkspaceSucceeded
// matters to StateOf; Stalled is included for backoff/event checks).
func was(mode Mode, s State) []metav1.Condition {
	var c metav1.Condition
	c.Type = ConditionWorkspaceSucceeded
	switch s {
	case "":
		return nil
	case sReady:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonWorkspaceReady
	case sSucceeded:
		c.Status, c.Reason = metav1.ConditionTrue, ReasonWorkspaceSucceeded
	case sNotReady:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonWorkspaceNotReady
	case sRunning:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonJobRunning
	case sFailed:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonWorkspaceFailed, "the tuning job failed: BackoffLimitExceeded"
	default:
		c.Status, c.Reason = metav1.ConditionFalse, ReasonWorkspacePending
	}
	return []metav1.Condition{c}
}

// roomy is capacity for any small request.
var roomy = Capacity{Selector: "nvidia.com/gpu.present=true", GPUsPerReplica: 1, MatchingNodes: 3, AllNodes: 7, TotalGPUs: 24, PlaceableReplicas: 24}

func readyPod(name, node string) Pod {
	return Pod{Name: name, Phase: corev1.PodRunning, NodeName: node, NodeReady: true, Ready: true}
}

func infFacts(prev State, mod func(*Facts)) Facts {
	f := Facts{Now: t0, Generation: 1, Mode: inf, Replicas: 2, HasFinalizer: true, Conditions: was(inf, prev), Capacity: roomy,
		Workload: &Workload{UpToDate: true, RolledOut: true}, Service: Object{Exists: true, UpToDate: true},
		Pods: []Pod{readyPod("p-a", "gpu-0"), readyPod("p-b", "gpu-1")}}
	if mod != nil {
		mod(&f)
	}
	return f
}

func tunFacts(prev State, mod func(*Facts)) Facts {
	f := Facts{Now: t0, Generation: 1, Mode: tun, Replicas: 1, HasFinalizer: true, Conditions: was(tun, prev), Capacity: roomy,
		Job: &Job{Active: 1}, Pods: []Pod{{Name: "j-a", Phase: corev1.PodRunning, NodeName: "gpu-0", NodeReady: true, Ready: true}}}
	if mod != nil {
		mod(&f)
	}
	return f
}

func condOf(d Decision, typ string) metav1.Condition {
	for _, c := range d.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return metav1.Condition{}
}

type row struct {
	name  string
	facts Facts
	from  State
	to    State
	// stalled / ready: the kstatus conditions expected True (Reconciling otherwise).
	stalled, ready bool
	// reasons: condition type → expected reason; contains: condition type → message substring.
	reasons  map[string]string
	contains map[string]string
	actions  []Action
	requeue  bool
}

// TestTransitions has a row for every transition KAITO's Workspace status proposal draws
// (and the stays), plus the Pending-trap rows: Pending stays Pending, but Stalled=True with a
// reason that says why.
func TestTransitions(t *testing.T) {
	rows := []row{
		// ---- inference ----
		{name: "inference (none)→Pending: finalizer first", from: "", to: sPending,
			facts:   infFacts("", func(f *Facts) { f.HasFinalizer = false; f.Workload = nil; f.Service = Object{}; f.Pods = nil }),
			actions: []Action{ActionAddFinalizer}, reasons: map[string]string{v1alpha1.ConditionReconciling: ReasonAddingFinalizer}},
		{name: "inference Pending→Pending: create deployment and service", from: sPending, to: sPending,
			facts:   infFacts(sPending, func(f *Facts) { f.Workload = nil; f.Service = Object{}; f.Pods = nil }),
			actions: []Action{ActionEnsureWorkload, ActionEnsureService},
			reasons: map[string]string{ConditionResourceReady: ReasonWaitingForScheduler, ConditionInferenceReady: ReasonReplicasNotReady, v1alpha1.ConditionReconciling: ReasonProgressing}},
		{name: "inference Pending→Pending: trap, no node has the GPU product", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Capacity = Capacity{Selector: "nvidia.com/gpu.product=B200", GPUsPerReplica: 1, AllNodes: 7}
				f.Pods = []Pod{{Name: "p-a", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 7 node(s) didn't match Pod's node affinity/selector."}}
			}),
			reasons:  map[string]string{ConditionResourceReady: ReasonNoMatchingNodes, v1alpha1.ConditionStalled: ReasonNoMatchingNodes, ConditionWorkspaceSucceeded: ReasonWorkspacePending},
			contains: map[string]string{v1alpha1.ConditionStalled: "nvidia.com/gpu.product=B200"}},
		{name: "inference Pending→Pending: trap, capacity smaller than asked", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Replicas = 3
				f.Capacity = Capacity{Selector: "nvidia.com/gpu.product=H100", GPUsPerReplica: 8, MatchingNodes: 1, AllNodes: 7, TotalGPUs: 8, PlaceableReplicas: 1}
			}),
			reasons:  map[string]string{ConditionResourceReady: ReasonInsufficientCapacity, v1alpha1.ConditionStalled: ReasonInsufficientCapacity},
			contains: map[string]string{ConditionResourceReady: "3 replica(s) of 8 nvidia.com/gpu"}},
		{name: "inference Pending→Pending: the scheduler's own message", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Pods = []Pod{{Name: "p-a", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."}}
			}),
			reasons:  map[string]string{ConditionResourceReady: ReasonUnschedulable},
			contains: map[string]string{v1alpha1.ConditionStalled: "3 Insufficient nvidia.com/gpu"}},
		{name: "inference Pending→Pending: image pull failure", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Pods = []Pod{{Name: "p-a", Phase: corev1.PodPending, NodeName: "gpu-0", NodeReady: true, WaitingReason: "ErrImagePull", WaitingMessage: "not found"}, readyPod("p-b", "gpu-1")}
			}),
			reasons:  map[string]string{ConditionInferenceReady: ReasonImagePullFailed, v1alpha1.ConditionStalled: ReasonImagePullFailed},
			contains: map[string]string{ConditionWorkspaceSucceeded: "ErrImagePull: not found"}},
		{name: "inference Pending→Pending: invalid spec", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.SpecError = "spec.scheduling.nodeSelector[\"x\"] is \"a\" but spec.resource.labelSelector[\"x\"] requires \"b\""
			}),
			reasons: map[string]string{v1alpha1.ConditionStalled: ReasonInvalidSpec}},
		{name: "inference Pending→Ready (KAITO)", from: sPending, to: sReady, ready: true, facts: infFacts(sPending, nil),
			reasons: map[string]string{ConditionResourceReady: ReasonResourcesAvailable, ConditionInferenceReady: ReasonInferenceReady, ConditionWorkspaceSucceeded: ReasonWorkspaceReady}},
		{name: "inference Ready→Ready", from: sReady, to: sReady, ready: true, facts: infFacts(sReady, nil)},
		{name: "inference Ready→NotReady (KAITO): node lost", from: sReady, to: sNotReady,
			facts:    infFacts(sReady, func(f *Facts) { f.Pods[1].NodeReady = false }),
			reasons:  map[string]string{ConditionResourceReady: ReasonNodeLost, ConditionInferenceReady: ReasonReplicasNotReady, ConditionWorkspaceSucceeded: ReasonWorkspaceNotReady},
			contains: map[string]string{ConditionWorkspaceSucceeded: "gpu-1"}},
		{name: "inference Ready→NotReady (KAITO): crash", from: sReady, to: sNotReady, stalled: true,
			facts: infFacts(sReady, func(f *Facts) {
				f.Pods[0] = Pod{Name: "p-a", Phase: corev1.PodRunning, NodeName: "gpu-0", NodeReady: true, WaitingReason: "CrashLoopBackOff", Terminated: "Error (exit code 137): OOMKilled"}
			}),
			reasons:  map[string]string{ConditionInferenceReady: ReasonContainerStartFailed},
			contains: map[string]string{ConditionInferenceReady: "OOMKilled"}},
		{name: "inference NotReady→NotReady: replacement unschedulable", from: sNotReady, to: sNotReady, stalled: true,
			facts: infFacts(sNotReady, func(f *Facts) {
				f.Pods[1] = Pod{Name: "p-c", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available"}
			}),
			reasons: map[string]string{ConditionResourceReady: ReasonUnschedulable, ConditionWorkspaceSucceeded: ReasonWorkspaceNotReady}},
		{name: "inference NotReady→NotReady: trap after established (never Pending)", from: sNotReady, to: sNotReady, stalled: true,
			facts:   infFacts(sNotReady, func(f *Facts) { f.Capacity = Capacity{AllNodes: 6}; f.Pods = nil }),
			reasons: map[string]string{ConditionResourceReady: ReasonNoMatchingNodes}},
		{name: "inference NotReady→Ready (KAITO): healed", from: sNotReady, to: sReady, ready: true, facts: infFacts(sNotReady, nil)},
		{name: "inference Ready→NotReady: a spec change rolls out", from: sReady, to: sNotReady,
			facts:   infFacts(sReady, func(f *Facts) { f.Workload.UpToDate = false }),
			actions: []Action{ActionEnsureWorkload}},
		{name: "inference Ready→NotReady: replicas become a multi-node group, the Deployment goes", from: sReady, to: sNotReady,
			facts:   infFacts(sReady, func(f *Facts) { f.Workload = nil; f.OtherWorkload = true }),
			actions: []Action{ActionEnsureWorkload, ActionDeleteOtherWorkload}},
		{name: "inference deleting: a workload of the other shape is deleted too", from: sReady, to: sReady,
			facts:   infFacts(sReady, func(f *Facts) { f.Deleting = true; f.OtherWorkload = true }),
			actions: []Action{ActionDeleteWorkload, ActionDeleteOtherWorkload, ActionDeleteService}, reasons: map[string]string{v1alpha1.ConditionReconciling: ReasonTerminating}},
		{name: "inference deleting: owned objects first, state kept", from: sReady, to: sReady,
			facts:   infFacts(sReady, func(f *Facts) { f.Deleting = true }),
			actions: []Action{ActionDeleteWorkload, ActionDeleteService}, reasons: map[string]string{v1alpha1.ConditionReconciling: ReasonTerminating}},
		{name: "inference deleting: then the finalizer", from: sNotReady, to: sNotReady,
			facts:   infFacts(sNotReady, func(f *Facts) { f.Deleting = true; f.Workload = nil; f.Service = Object{} }),
			actions: []Action{ActionRemoveFinalizer}},
		{name: "inference foreign deployment: stalled", from: sPending, to: sPending, stalled: true,
			facts:   infFacts(sPending, func(f *Facts) { f.Workload = &Workload{Foreign: true} }),
			reasons: map[string]string{v1alpha1.ConditionStalled: ReasonOwnershipConflict}},

		// ---- tuning ----
		{name: "tuning (none)→Pending: finalizer first", from: "", to: sPending,
			facts:   tunFacts("", func(f *Facts) { f.HasFinalizer = false; f.Job = nil; f.Pods = nil }),
			actions: []Action{ActionAddFinalizer}},
		{name: "tuning Pending→Pending: create the job", from: sPending, to: sPending,
			facts:   tunFacts(sPending, func(f *Facts) { f.Job = nil; f.Pods = nil }),
			actions: []Action{ActionCreateJob}, reasons: map[string]string{ConditionJobStarted: ReasonJobPending}},
		{name: "tuning Pending→Pending: trap, no node", from: sPending, to: sPending, stalled: true,
			facts: tunFacts(sPending, func(f *Facts) {
				f.Capacity = Capacity{AllNodes: 7}
				f.Pods = []Pod{{Name: "j-a", Phase: corev1.PodPending, Unschedulable: "0/7"}}
			}),
			reasons: map[string]string{ConditionResourceReady: ReasonNoMatchingNodes, ConditionJobStarted: ReasonJobPending}},
		// Waiting where KAITO waits: the scheduler holds the pod only until its immediate
		// claims are bound (the PersistentVolume controller binds them): progress, not Stalled,
		// the scheduler's words and the claims named; a missing claim still stalls.
		{name: "tuning Pending→Pending: claims binding, Reconciling (KAITO waits)", from: sPending, to: sPending,
			facts: tunFacts(sPending, func(f *Facts) {
				f.UnboundClaims = []string{"ns/train-data (Pending)", "ns/adapters (Pending)"}
				f.Pods = []Pod{{Name: "j-a", Phase: corev1.PodPending, Unschedulable: unboundClaimsMsg}}
			}),
			reasons: map[string]string{ConditionResourceReady: ReasonWaitingForVolumeBinding, ConditionJobStarted: ReasonJobPending,
				v1alpha1.ConditionReady: ReasonWaitingForVolumeBinding, v1alpha1.ConditionReconciling: ReasonWaitingForVolumeBinding,
				ConditionWorkspaceSucceeded: ReasonWorkspacePending},
			contains: map[string]string{ConditionResourceReady: "pod j-a: 0/7 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling.; claims not bound yet: ns/train-data (Pending), ns/adapters (Pending); waiting for the PersistentVolume controller to bind them",
				v1alpha1.ConditionReconciling: "unbound immediate PersistentVolumeClaims"}},
		{name: "tuning Pending→Pending: claims binding beside another unschedulable pod: Stalled on that one", from: sPending, to: sPending, stalled: true,
			facts: tunFacts(sPending, func(f *Facts) {
				f.Pods = []Pod{{Name: "j-a", Phase: corev1.PodPending, Unschedulable: unboundClaimsMsg},
					{Name: "j-b", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 3 Insufficient nvidia.com/gpu."}}
			}),
			reasons: map[string]string{ConditionResourceReady: ReasonUnschedulable}},
		{name: "tuning Running→Running: a retried pod waits for its claims, not Stalled", from: sRunning, to: sRunning,
			facts: tunFacts(sRunning, func(f *Facts) {
				f.Pods = []Pod{{Name: "j-a", Phase: corev1.PodPending, Unschedulable: unboundClaimsMsg}}
			}),
			reasons: map[string]string{ConditionResourceReady: ReasonWaitingForVolumeBinding, ConditionWorkspaceSucceeded: ReasonJobRunning}},
		{name: "inference Pending→Pending: claims binding, Reconciling", from: sPending, to: sPending,
			facts: infFacts(sPending, func(f *Facts) {
				f.Pods = []Pod{{Name: "p-a", Phase: corev1.PodPending, Unschedulable: unboundClaimsMsg}, readyPod("p-b", "gpu-1")}
			}),
			reasons: map[string]string{ConditionResourceReady: ReasonWaitingForVolumeBinding, ConditionInferenceReady: ReasonReplicasNotReady}},
		{name: "tuning Pending→Running (KAITO)", from: sPending, to: sRunning, facts: tunFacts(sPending, nil),
			reasons: map[string]string{ConditionJobStarted: ReasonJobStarted, ConditionWorkspaceSucceeded: ReasonJobRunning}},
		{name: "tuning Pending→Running: job observed complete, Running first", from: sPending, to: sRunning, requeue: true,
			facts: tunFacts(sPending, func(f *Facts) { f.Job = &Job{Complete: true, Succeeded: 1}; f.Pods[0].Phase = corev1.PodSucceeded }),
		},
		{name: "tuning Pending→Running: job observed failed, Running first", from: sPending, to: sRunning, requeue: true,
			facts: tunFacts(sPending, func(f *Facts) { f.Job = &Job{Failed: true, FailedReason: "BackoffLimitExceeded", FailedPods: 1} }),
		},
		{name: "tuning Running→Running", from: sRunning, to: sRunning, facts: tunFacts(sRunning, nil)},
		{name: "tuning Running→Succeeded (KAITO)", from: sRunning, to: sSucceeded, ready: true,
			facts:   tunFacts(sRunning, func(f *Facts) { f.Job = &Job{Complete: true, Succeeded: 1} }),
			reasons: map[string]string{ConditionWorkspaceSucceeded: ReasonWorkspaceSucceeded}},
		{name: "tuning Running→Failed (KAITO)", from: sRunning, to: sFailed, stalled: true,
			facts: tunFacts(sRunning, func(f *Facts) {
				f.Job = &Job{Failed: true, FailedReason: "BackoffLimitExceeded", FailedMessage: "Job has reached the specified backoff limit", FailedPods: 1}
				f.Pods[0] = Pod{Name: "j-a", Phase: corev1.PodFailed, NodeName: "gpu-0", NodeReady: true, Terminated: "containerFailed (exit code 1): container failed"}
			}),
			reasons:  map[string]string{ConditionWorkspaceSucceeded: ReasonWorkspaceFailed, v1alpha1.ConditionStalled: ReasonWorkspaceFailed},
			contains: map[string]string{v1alpha1.ConditionStalled: "container failed"}},
		{name: "tuning Running→Failed (KAITO): job deleted mid-run", from: sRunning, to: sFailed, stalled: true,
			facts:   tunFacts(sRunning, func(f *Facts) { f.Job = nil; f.Pods = nil }),
			reasons: map[string]string{v1alpha1.ConditionStalled: ReasonJobLost}},
		{name: "tuning Succeeded→Succeeded: terminal, job gone, nothing re-created", from: sSucceeded, to: sSucceeded, ready: true,
			facts: tunFacts(sSucceeded, func(f *Facts) { f.Job = nil; f.Pods = nil })},
		{name: "tuning Failed→Failed: terminal even if a job completes", from: sFailed, to: sFailed, stalled: true,
			facts: tunFacts(sFailed, func(f *Facts) { f.Job = &Job{Complete: true} })},
		{name: "tuning deleting", from: sSucceeded, to: sSucceeded,
			facts: tunFacts(sSucceeded, func(f *Facts) { f.Deleting = true }), actions: []Action{ActionDeleteJob}},
		// ---- failures reaching status (referenced objects, API rejections, TEE labels) ----
		{name: "inference Pending: the config ConfigMap is missing: no Deployment, Stalled naming it", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Workload, f.Pods = nil, nil
				f.MissingRefs = []string{"ConfigMap ns/cfg not found"}
			}),
			actions:  []Action{},
			reasons:  map[string]string{ConditionInferenceReady: ReasonReferenceNotFound, v1alpha1.ConditionStalled: ReasonReferenceNotFound},
			contains: map[string]string{v1alpha1.ConditionStalled: "ConfigMap ns/cfg not found", ConditionWorkspaceSucceeded: "ReferenceNotFound: ConfigMap ns/cfg not found"}},
		{name: "inference Ready with a missing ConfigMap and an up-to-date Deployment stays Ready", from: sReady, to: sReady, ready: true,
			facts: infFacts(sReady, func(f *Facts) { f.MissingRefs = []string{"ConfigMap ns/cfg not found"} })},
		{name: "tuning Pending: the push Secret is missing: no Job, Stalled naming it", from: sPending, to: sPending, stalled: true,
			facts: tunFacts(sPending, func(f *Facts) {
				f.Job, f.Pods = nil, nil
				f.MissingRefs = []string{"Secret ns/push not found"}
			}),
			actions:  []Action{},
			reasons:  map[string]string{ConditionJobStarted: ReasonReferenceNotFound, v1alpha1.ConditionStalled: ReasonReferenceNotFound},
			contains: map[string]string{v1alpha1.ConditionStalled: "Secret ns/push not found"}},
		{name: "inference Pending: the Deployment write was rejected: withheld until RetryAt, Stalled with the API server's message", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Workload, f.Pods = nil, nil
				f.Rejection = &failure.Rejection{Action: string(ActionEnsureWorkload), Kind: "Deployment", Name: "ns/workspace-x", Reason: "Forbidden",
					Message: `pods "workspace-x-" is forbidden: no PriorityClass with name nope was found`, Generation: 1, RetryAt: t0.Add(time.Minute)}
			}),
			actions:  []Action{},
			reasons:  map[string]string{ConditionInferenceReady: ReasonRejected, v1alpha1.ConditionStalled: ReasonRejected},
			contains: map[string]string{v1alpha1.ConditionStalled: "writing Deployment ns/workspace-x was rejected (Forbidden): pods \"workspace-x-\" is forbidden: no PriorityClass"}},
		{name: "tuning Pending: the Job create was rejected, RetryAt passed: tried again, still Stalled", from: sPending, to: sPending, stalled: true,
			facts: tunFacts(sPending, func(f *Facts) {
				f.Job, f.Pods = nil, nil
				f.Rejection = &failure.Rejection{Action: string(ActionCreateJob), Kind: "Job", Name: "ns/workspace-x", Reason: "Invalid", Message: "m", Generation: 1, RetryAt: t0}
			}),
			actions: []Action{ActionCreateJob},
			reasons: map[string]string{ConditionJobStarted: ReasonRejected, v1alpha1.ConditionStalled: ReasonRejected}},
		{name: "inference Ready ignores a rejection of an action it no longer takes", from: sReady, to: sReady, ready: true,
			facts: infFacts(sReady, func(f *Facts) {
				f.Rejection = &failure.Rejection{Action: string(ActionEnsureWorkload), Kind: "Deployment", Name: "ns/workspace-x", Reason: "Invalid", Message: "m", Generation: 1, RetryAt: t0.Add(time.Minute)}
			})},
		{name: "inference Pending: no node offers the TEE type: the message names it and its label", from: sPending, to: sPending, stalled: true,
			facts: infFacts(sPending, func(f *Facts) {
				f.Workload, f.Pods = nil, nil
				f.Capacity = Capacity{Selector: "feature.node.kubernetes.io/cpu-security.sgx.enabled=true", AllNodes: 7,
					MissingLabels: []string{"feature.node.kubernetes.io/cpu-security.sgx.enabled=true (TEE type sgx)"}}
			}),
			reasons:  map[string]string{ConditionResourceReady: ReasonNoMatchingNodes, v1alpha1.ConditionStalled: ReasonNoMatchingNodes},
			contains: map[string]string{v1alpha1.ConditionStalled: "no node has the label feature.node.kubernetes.io/cpu-security.sgx.enabled=true (TEE type sgx)"}},
	}
	covered := map[Mode]map[[2]State]bool{inf: {}, tun: {}}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if got := StateOf(r.facts.Mode, r.facts.Conditions); got != r.from {
				t.Fatalf("fixture: previous state %q, want %q", got, r.from)
			}
			d, err := Decide(r.facts)
			if err != nil {
				t.Fatal(err)
			}
			covered[r.facts.Mode][[2]State{r.from, d.State}] = true
			if d.State != r.to {
				t.Errorf("state %s, want %s\n%s", d.State, r.to, dump(d))
			}
			invariant.Check(t, invariants, r.facts, d)
			if got := condOf(d, v1alpha1.ConditionStalled).Status == metav1.ConditionTrue; got != r.stalled {
				t.Errorf("Stalled=%v, want %v\n%s", got, r.stalled, dump(d))
			}
			if got := condOf(d, v1alpha1.ConditionReady).Status == metav1.ConditionTrue; got != r.ready {
				t.Errorf("Ready=%v, want %v\n%s", got, r.ready, dump(d))
			}
			for typ, reason := range r.reasons {
				if c := condOf(d, typ); c.Reason != reason {
					t.Errorf("%s reason %q, want %q (%s)", typ, c.Reason, reason, c.Message)
				}
			}
			for typ, sub := range r.contains {
				if c := condOf(d, typ); !strings.Contains(c.Message, sub) {
					t.Errorf("%s message %q lacks %q", typ, c.Message, sub)
				}
			}
			if r.actions != nil && !slices.Equal(d.Actions, r.actions) {
				t.Errorf("actions %v, want %v", d.Actions, r.actions)
			}
			if d.Requeue != r.requeue {
				t.Errorf("requeue %v, want %v", d.Requeue, r.requeue)
			}
		})
	}
	// Every edge KAITO's proposal draws (besides first passes) has a row.
	for mode, m := range Transitions {
		for from, tos := range m {
			if from == "" {
				continue
			}
			for _, to := range tos {
				if !covered[mode][[2]State{from, to}] {
					t.Errorf("%s %s → %s has no row", mode, from, to)
				}
			}
		}
	}
}

// TestForbiddenTransitions: leaving Pending back to Pending (inference NotReady/Ready →
// Pending; tuning Running → Pending) and leaving a terminal tuning state are typed errors.
func TestForbiddenTransitions(t *testing.T) {
	forbidden := []struct {
		mode     Mode
		from, to State
	}{
		{inf, sReady, sPending}, {inf, sNotReady, sPending}, {inf, sPending, sNotReady},
		{tun, sRunning, sPending},
		{tun, sSucceeded, sPending}, {tun, sSucceeded, sRunning}, {tun, sSucceeded, sFailed},
		{tun, sFailed, sPending}, {tun, sFailed, sRunning}, {tun, sFailed, sSucceeded},
		{tun, sPending, sSucceeded}, {tun, sPending, sFailed},
		{inf, sReady, sRunning}, {tun, sRunning, sReady},
	}
	for _, c := range forbidden {
		err := CheckTransition(c.mode, c.from, c.to)
		var te *lifecycle.TransitionError
		if !errors.As(err, &te) || te.From != string(c.from) || te.To != string(c.to) || te.Kind != string(c.mode)+" workspace state" {
			t.Errorf("%s %s → %s: err %v, want *lifecycle.TransitionError", c.mode, c.from, c.to, err)
		}
	}
	// Exhaustively: any pair not in Transitions is rejected.
	for mode, states := range States {
		for _, from := range states {
			for _, to := range append(slices.Clone(states), sReady, sRunning) {
				allowed := slices.Contains(Transitions[mode][from], to)
				if err := CheckTransition(mode, from, to); (err == nil) != allowed {
					t.Errorf("%s %s → %s: allowed=%v, err=%v", mode, from, to, allowed, err)
				}
			}
		}
	}
	// And Decide cannot produce them: from every established/terminal state, under facts that
	// would make a fresh workspace Pending (nothing exists, no node matches), the state stays.
	for _, c := range []struct {
		mode Mode
		from State
	}{{inf, sReady}, {inf, sNotReady}, {tun, sRunning}, {tun, sSucceeded}, {tun, sFailed}} {
		f := Facts{Now: t0, Generation: 2, Mode: c.mode, Replicas: 1, HasFinalizer: true, Conditions: was(c.mode, c.from), Capacity: Capacity{AllNodes: 7}}
		d, err := Decide(f)
		if err != nil {
			t.Fatalf("%s %s: %v", c.mode, c.from, err)
		}
		if d.State == sPending {
			t.Errorf("%s %s → Pending", c.mode, c.from)
		}
		if Terminal(c.from) && d.State != c.from {
			t.Errorf("%s %s left a terminal state for %s", c.mode, c.from, d.State)
		}
		if Terminal(c.from) && len(d.Actions) > 0 {
			t.Errorf("%s %s: actions %v on a terminal workspace", c.mode, c.from, d.Actions)
		}
	}
}

func TestStateOfRoundTrip(t *testing.T) {
	for mode, states := range States {
		for _, s := range states {
			if got := StateOf(mode, was(mode, s)); got != s {
				t.Errorf("%s: StateOf(was(%s)) = %s", mode, s, got)
			}
		}
	}
}

func TestCapacityOf(t *testing.T) {
	gpuTaint := []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}
	tol := []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	nodes := []Node{
		{Name: "cpu-0", Labels: map[string]string{"pool": "cpu"}, Ready: true},
		{Name: "a100-0", Labels: map[string]string{"p": "A100", "gpu": "true"}, Ready: true, Taints: gpuTaint, AllocatableGPU: 8},
		{Name: "a100-1", Labels: map[string]string{"p": "A100", "gpu": "true"}, Ready: true, Taints: gpuTaint, AllocatableGPU: 8},
		{Name: "h100-0", Labels: map[string]string{"p": "H100", "gpu": "true"}, Ready: false, Taints: gpuTaint, AllocatableGPU: 8},
	}
	cases := []struct {
		name      string
		sel       map[string]string
		tols      []corev1.Toleration
		gpus      int32
		match     int
		notReady  int
		placeable int32
	}{
		{"a100 ×3 per replica", map[string]string{"p": "A100"}, tol, 3, 2, 0, 4},
		{"h100 only node NotReady", map[string]string{"p": "H100"}, tol, 1, 0, 1, 0},
		{"gpu nodes need the toleration", map[string]string{"gpu": "true"}, nil, 1, 0, 0, 0},
		{"no such product", map[string]string{"p": "B200"}, tol, 1, 0, 0, 0},
		{"cpu, no gpus", map[string]string{"pool": "cpu"}, nil, 0, 1, 0, 1 << 30},
		{"9 gpus fit nowhere", map[string]string{"gpu": "true"}, tol, 9, 2, 1, 0},
	}
	for _, c := range cases {
		got := CapacityOf(nodes, c.sel, nil, c.tols, c.gpus)
		if got.MatchingNodes != c.match || got.NotReadyMatching != c.notReady || got.PlaceableReplicas != c.placeable || got.AllNodes != 4 {
			t.Errorf("%s: %+v", c.name, got)
		}
	}
}

var invariants = []invariant.Of[Facts, Decision]{
	{Name: "legal transition", Check: invTransition},
	{Name: "state of the mode", Check: invStateOfMode},
	{Name: "six conditions", Fatal: true, Check: invConditionCount},
	{Name: "conditions in order", Check: invConditionsInOrder},
	{Name: "one of Ready/Reconciling/Stalled", Check: invOneActive},
	{Name: "Ready iff Ready or Succeeded", Check: invReady},
	{Name: "never back to Pending", Check: invNotBackToPending},
	{Name: "terminal is sticky", Check: invTerminalSticky},
	{Name: "terminal does not act", Check: invTerminalNoActions},
	{Name: "deleting does not create", Check: invDeletingNoCreate},
	{Name: "RemoveFinalizer last", Check: invRemoveFinalizerLast},
	{Name: "Pending trap is never silent", Check: invPendingTrap},
	{Name: "an HPA only where autoscaling wants one", Check: invAutoscalerWanted},
	{Name: "a tuning run's nodes released only as asked", Check: invReleaseNodes},
}

// invReleaseNodes: outside deletion, NodeClaims are deleted only for a tuning workspace with
// releaseNodesOnSuccess that is Succeeded, and then every claim not already going is; none is
// created once its Job completed or it Succeeded; a Failed run never releases.
func invReleaseNodes(f Facts, d Decision) error {
	if f.Deleting || f.Mode != tun {
		return nil
	}
	prev := StateOf(f.Mode, f.Conditions)
	deletes, creates := slices.Contains(d.Actions, ActionDeleteNodeClaims), slices.Contains(d.Actions, ActionCreateNodeClaims)
	done := prev == sSucceeded || d.State == sSucceeded || (f.Job != nil && !f.Job.Foreign && f.Job.Complete)
	switch {
	case deletes && (!f.ReleaseNodesOnSuccess || d.State != sSucceeded):
		return fmt.Errorf("claims %v deleted in state %s (releaseNodesOnSuccess %v)", d.DeleteClaims, d.State, f.ReleaseNodesOnSuccess)
	case creates && f.ReleaseNodesOnSuccess && done:
		return fmt.Errorf("claims %v created after the run was done (releaseNodesOnSuccess)", d.CreateClaims)
	case f.ReleaseNodesOnSuccess && d.State == sSucceeded && slices.ContainsFunc(f.Provisioning.Claims, func(c Claim) bool { return !c.Deleting }) && !deletes:
		return fmt.Errorf("Succeeded with releaseNodesOnSuccess keeps claims %+v", f.Provisioning.Claims)
	}
	return nil
}

// invAutoscalerWanted: the HorizontalPodAutoscaler is created or updated only for an inference
// workspace with spec.autoscaling and no external autoscaler, not being deleted, and never when
// someone else's holds the name; ours is deleted whenever it is not wanted.
func invAutoscalerWanted(f Facts, d Decision) error {
	wanted := f.Mode == inf && f.Autoscaling != nil && !f.Autoscaling.External && !f.Deleting
	if slices.Contains(d.Actions, ActionEnsureAutoscaler) && (!wanted || f.Autoscaler.Foreign) {
		return fmt.Errorf("HPA ensured though not wanted: %v (autoscaling %+v, deleting %v, foreign %v)", d.Actions, f.Autoscaling, f.Deleting, f.Autoscaler.Foreign)
	}
	if f.Autoscaler.Exists && !f.Autoscaler.Foreign && !wanted && f.HasFinalizer && (f.Deleting || f.Mode == inf) && !slices.Contains(d.Actions, ActionDeleteAutoscaler) &&
		(f.Deleting || StateOf(f.Mode, f.Conditions) != "") {
		return fmt.Errorf("our HPA not wanted and kept: %v", d.Actions)
	}
	return nil
}

func invTransition(f Facts, d Decision) error {
	if err := CheckTransition(f.Mode, StateOf(f.Mode, f.Conditions), d.State); err != nil {
		return fmt.Errorf("transition: %w", err)
	}
	return nil
}

func invStateOfMode(f Facts, d Decision) error {
	if !slices.Contains(States[f.Mode], d.State) {
		return fmt.Errorf("state %q is not a %s state", d.State, f.Mode)
	}
	return nil
}

func conditionTypes(m Mode) []string {
	return []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled, ConditionResourceReady, progressType(m), ConditionWorkspaceSucceeded}
}

func invConditionCount(f Facts, d Decision) error {
	if len(d.Conditions) != len(conditionTypes(f.Mode)) {
		return fmt.Errorf("conditions %v", d.Conditions)
	}
	return nil
}

// invConditionsInOrder reports every condition of the wrong type, without a reason, of another
// generation or with a status other than True/False.
func invConditionsInOrder(f Facts, d Decision) error {
	want := conditionTypes(f.Mode)
	var errs []error
	for i, c := range d.Conditions {
		if c.Type != want[i] || c.Reason == "" || c.ObservedGeneration != f.Generation || (c.Status != metav1.ConditionTrue && c.Status != metav1.ConditionFalse) {
			errs = append(errs, fmt.Errorf("condition %d = %+v", i, c))
		}
	}
	return errors.Join(errs...)
}

func invOneActive(_ Facts, d Decision) error {
	trues := 0
	for _, c := range d.Conditions[:3] {
		if c.Status == metav1.ConditionTrue {
			trues++
		}
	}
	if trues != 1 {
		return fmt.Errorf("%d of Ready/Reconciling/Stalled are True\n%s", trues, dump(d))
	}
	return nil
}

func invReady(f Facts, d Decision) error {
	ready := condOf(d, v1alpha1.ConditionReady).Status == metav1.ConditionTrue
	if want := !f.Deleting && (d.State == sReady || d.State == sSucceeded); ready != want {
		return fmt.Errorf("ready=%v in state %s (deleting %v)", ready, d.State, f.Deleting)
	}
	return nil
}

func invNotBackToPending(f Facts, d Decision) error {
	if prev := StateOf(f.Mode, f.Conditions); prev != "" && prev != sPending && d.State == sPending {
		return fmt.Errorf("left %s back to Pending", prev)
	}
	return nil
}

func invTerminalSticky(f Facts, d Decision) error {
	if prev := StateOf(f.Mode, f.Conditions); Terminal(prev) && d.State != prev {
		return fmt.Errorf("left terminal %s for %s", prev, d.State)
	}
	return nil
}

func invTerminalNoActions(f Facts, d Decision) error {
	prev := StateOf(f.Mode, f.Conditions)
	if Terminal(prev) && slices.ContainsFunc(d.Actions, func(a Action) bool { return a == ActionCreateJob || a == ActionEnsureWorkload }) {
		return fmt.Errorf("terminal %s acts: %v", prev, d.Actions)
	}
	return nil
}

func invDeletingNoCreate(f Facts, d Decision) error {
	if f.Deleting && slices.ContainsFunc(d.Actions, func(a Action) bool {
		return a == ActionCreateJob || a == ActionEnsureWorkload || a == ActionEnsureService || a == ActionEnsureAutoscaler || a == ActionAddFinalizer
	}) {
		return fmt.Errorf("deleting but creates: %v", d.Actions)
	}
	return nil
}

func invRemoveFinalizerLast(f Facts, d Decision) error {
	if slices.Contains(d.Actions, ActionRemoveFinalizer) && (!f.Deleting || d.Actions[len(d.Actions)-1] != ActionRemoveFinalizer) {
		return fmt.Errorf("RemoveFinalizer misplaced: %v", d.Actions)
	}
	return nil
}

// invPendingTrap: a Pending workspace whose capacity check fails is Stalled, and ResourceReady
// says why.
func invPendingTrap(f Facts, d Decision) error {
	if d.State != sPending || f.Deleting || !f.HasFinalizer || f.SpecError != "" || (f.Capacity.MatchingNodes != 0 && f.Capacity.PlaceableReplicas >= f.Replicas) {
		return nil
	}
	if r := condOf(d, ConditionResourceReady); r.Status == metav1.ConditionFalse && r.Reason == ReasonProvisioningNodes && r.Message != "" {
		return nil // the workspace's own NodeClaims bring the nodes: progress, said in ResourceReady (nodeclaims.go)
	}
	var errs []error
	if s := condOf(d, v1alpha1.ConditionStalled); s.Status != metav1.ConditionTrue {
		errs = append(errs, fmt.Errorf("pending trap is silent\n%s", dump(d)))
	}
	if r := condOf(d, ConditionResourceReady); r.Status != metav1.ConditionFalse || r.Message == "" {
		errs = append(errs, fmt.Errorf("ResourceReady %+v", r))
	}
	return errors.Join(errs...)
}

func dump(d Decision) string {
	var b strings.Builder
	b.WriteString("state=" + string(d.State) + "\n")
	for _, c := range d.Conditions {
		b.WriteString("  " + c.Type + "=" + string(c.Status) + " " + c.Reason + ": " + c.Message + "\n")
	}
	return b.String()
}

// UnboundClaims names the claims that exist and are not Bound, in Refs' order; missing
// claims (MissingRefs) and other kinds are left out.
func TestUnboundClaims(t *testing.T) {
	refs := []failure.Ref{
		{Kind: "ConfigMap", Namespace: "ns", Name: "cfg", Exists: true},
		{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "in", Exists: true, Phase: "Pending"},
		{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "gone"},
		{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "out", Exists: true, Phase: "Bound"},
		{Kind: "PersistentVolumeClaim", Namespace: "ns", Name: "new", Exists: true},
	}
	if got, want := UnboundClaims(refs), []string{"ns/in (Pending)", "ns/new (no phase yet)"}; !slices.Equal(got, want) {
		t.Errorf("UnboundClaims = %q, want %q", got, want)
	}
}
