// Package workspace is KAITO's Workspace status machine as pure Go: Facts about a Workspace, the
// nodes that could run it and its objects go in; Decide returns conditions, status.state,
// actions and requeue, and reconciler/workspace_controller.go acts. States and edges follow
// KAITO's "Workspace Status Field Proposal" (Transitions), the state derived from
// WorkspaceSucceeded (StateOf). Conditions: Ready, Reconciling, Stalled, ResourceReady,
// InferenceReady or JobStarted, WorkspaceSucceeded, exactly one of the first three True. Only
// what needs the user stalls: an unplaceable workspace stays Pending but Stalled (KAITO's
// "Pending trap", made visible); unbound volume claims and pods ended from outside are waited
// for, until disruptions exceed failure.DisruptionBound.
package workspace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// State is a Workspace's status.state; Mode its status.mode.
type (
	State = v1alpha1.WorkspaceState
	Mode  = v1alpha1.WorkspaceMode
)

// Condition types of KAITO (api/v1beta1/condition_types.go).
const (
	ConditionResourceReady      = "ResourceReady"
	ConditionInferenceReady     = "InferenceReady"
	ConditionJobStarted         = "JobStarted"
	ConditionWorkspaceSucceeded = "WorkspaceSucceeded"
)

// Condition reasons.
const (
	// WorkspaceSucceeded reasons: they encode the state (StateOf).
	ReasonWorkspaceReady     = "WorkspaceReady"     // True: inference Ready
	ReasonWorkspaceSucceeded = "WorkspaceSucceeded" // True: tuning Succeeded
	ReasonWorkspacePending   = "WorkspacePending"   // False: Pending
	ReasonWorkspaceNotReady  = "WorkspaceNotReady"  // False: inference NotReady
	ReasonJobRunning         = "JobRunning"         // False: tuning Running
	ReasonWorkspaceFailed    = "WorkspaceFailed"    // False: tuning Failed

	// ResourceReady reasons.
	ReasonResourcesAvailable   = "ResourcesAvailable"   // True: capacity and every replica bound to a Ready node
	ReasonNoMatchingNodes      = "NoMatchingNodes"      // False (Stalled): no Ready node matches the selector
	ReasonInsufficientCapacity = "InsufficientCapacity" // False (Stalled): matching nodes' free GPUs < asked
	ReasonUnschedulable        = "Unschedulable"        // False (Stalled): the scheduler's own message
	ReasonNodeLost             = "NodeLost"             // False: a replica's node is gone or NotReady
	ReasonWaitingForScheduler  = "WaitingForScheduler"  // False: pods not bound yet
	// ReasonWaitingForVolumeBinding: False (Reconciling, not Stalled): the scheduler holds a
	// pod until its immediate-binding claims are bound (failure.WaitsForVolumeBinding).
	ReasonWaitingForVolumeBinding = "WaitingForVolumeBinding"

	// InferenceReady / JobStarted reasons.
	ReasonInferenceReady       = "InferenceReady"       // True
	ReasonReplicasNotReady     = "ReplicasNotReady"     // False: n/m replicas Ready
	ReasonImagePullFailed      = "ImagePullFailed"      // False (Stalled): kubelet's message
	ReasonContainerStartFailed = "ContainerStartFailed" // False (Stalled): kubelet's message
	ReasonServiceNotReady      = "ServiceNotReady"      // False: the Service is missing or differs
	ReasonJobStarted           = "JobStarted"           // True
	ReasonJobPending           = "JobPending"           // False
	ReasonJobLost              = "JobLost"              // Failed: the Job vanished while Running
	// ReasonAutoscalerNotReady: False: the HorizontalPodAutoscaler (spec.autoscaling) is
	// missing or differs.
	ReasonAutoscalerNotReady = "AutoscalerNotReady"
	// ReasonPodDisrupted: False (Reconciling): a pod ended from outside (evicted, preempted,
	// its node gone); its replacement is awaited.
	ReasonPodDisrupted = failure.ReasonPodDisrupted
	// ReasonPodDisruptedRepeatedly: False (Stalled): more pods ended from outside within
	// failure.DisruptionWindow than failure.DisruptionBound(replicas) allows.
	ReasonPodDisruptedRepeatedly = failure.ReasonPodDisruptedRepeatedly

	// Shared.
	ReasonInvalidSpec       = "InvalidSpec"                   // Stalled: the pods cannot be built
	ReasonOwnershipConflict = "OwnershipConflict"             // Stalled: workspace-<name> exists and is not ours
	ReasonTerminating       = "Terminating"                   // Reconciling: being deleted
	ReasonProgressing       = "Progressing"                   // Reconciling: work under way
	ReasonAddingFinalizer   = "AddingFinalizer"               // Reconciling: first pass
	ReasonReferenceNotFound = failure.ReasonReferenceNotFound // Stalled: a mounted ConfigMap/Secret is missing
	ReasonRejected          = failure.ReasonRejected          // Stalled: the API server rejected a write (its message)
)

// Timing.
const (
	// BackoffMin and BackoffMax bound the re-check of a Stalled workspace (node events wake it
	// earlier): the time Stalled has been True, clamped.
	BackoffMin = 5 * time.Second
	BackoffMax = 5 * time.Minute
	// WaitPoll is the requeue delay while owned objects are going away or replicas settle.
	WaitPoll = 2 * time.Second
)

// Action is one thing the controller must do this pass, in order.
type Action string

const (
	ActionAddFinalizer   Action = "AddFinalizer"
	ActionEnsureWorkload Action = "EnsureWorkload" // create or update the Deployment (inference)
	ActionEnsureService  Action = "EnsureService"  // create or update the Service (inference)
	ActionCreateJob      Action = "CreateJob"      // create the Job (tuning)
	ActionDeleteWorkload Action = "DeleteWorkload"
	ActionDeleteService  Action = "DeleteService"
	ActionDeleteJob      Action = "DeleteJob"
	// ActionDeleteOtherWorkload deletes the workload of the other inference shape: the
	// Deployment once the replicas form a multi-node group (StatefulSet), or the StatefulSet
	// once they are independent copies again.
	ActionDeleteOtherWorkload Action = "DeleteOtherWorkload"
	ActionRemoveFinalizer     Action = "RemoveFinalizer" // no status write follows
	// ActionCreateNodeClaims creates Decision.CreateClaims (DesiredNodeClaim);
	// ActionDeleteNodeClaims deletes Decision.DeleteClaims (the workspace is being deleted).
	ActionCreateNodeClaims Action = "CreateNodeClaims"
	ActionDeleteNodeClaims Action = "DeleteNodeClaims"
	// ActionEnsureAutoscaler creates or updates the HorizontalPodAutoscaler workspace-<name>
	// (DesiredAutoscaler); ActionDeleteAutoscaler deletes it (spec.autoscaling gone, external,
	// or the workspace being deleted).
	ActionEnsureAutoscaler Action = "EnsureAutoscaler"
	ActionDeleteAutoscaler Action = "DeleteAutoscaler"
)

// Facts are what the controller observed in one pass.
type Facts struct {
	// Now is the time of the pass (backoff only).
	Now time.Time
	// Generation is metadata.generation.
	Generation int64
	// Mode follows from the spec (which of inference, tuning is set).
	Mode Mode
	// Replicas is spec.resource.count (1 for tuning); under spec.autoscaling its minReplicas
	// (Replicas): the replicas that must be Ready.
	Replicas int32
	// Autoscaling is spec.autoscaling (nil: none): an autoscaler owns the Deployment's
	// replicas, the workspace is Ready while at least minReplicas are, and the reconciler owns
	// the HorizontalPodAutoscaler Autoscaler unless External.
	Autoscaling *v1alpha1.Autoscaling
	// Autoscaler is the HorizontalPodAutoscaler workspace-<name> (AutoscalerFacts);
	// AutoscalerDesired its status.desiredReplicas (0: not computed yet).
	Autoscaler        Object
	AutoscalerDesired int32
	// Deleting: deletionTimestamp is set. HasFinalizer: v1alpha1.Finalizer is present.
	Deleting, HasFinalizer bool
	// Conditions are status.conditions from the previous pass: the machine's memory.
	Conditions []metav1.Condition
	// SpecError, when non-empty, says why the pods cannot be built (a hardware.ConflictError ...).
	SpecError string
	// Capacity is what the cluster's nodes offer for this workspace (CapacityOf).
	Capacity Capacity
	// Workload (inference) is the Deployment workspace-<name> (the StatefulSet of a multi-node
	// group, with its headless Service); nil when absent.
	Workload *Workload
	// OtherWorkload is true when the workspace's workload of the other shape exists
	// (a Deployment while it should be a group, or the reverse).
	OtherWorkload bool
	// Service (inference) is the Service workspace-<name>.
	Service Object
	// Job (tuning) is the Job workspace-<name>; nil when absent.
	Job *Job
	// Pods are the workspace's pods (its label), any phase.
	Pods []Pod
	// MissingRefs are the problems with the ConfigMap and Secret the pods mount (Refs,
	// failure.Problems: "ConfigMap ns/name not found"). While any is missing, no Deployment
	// or Job is created or updated (InferenceReady/JobStarted=False, reason
	// ReferenceNotFound, Stalled=True); a running Deployment is left alone.
	MissingRefs []string
	// UnboundClaims are the PersistentVolumeClaims the pods mount that exist and are not Bound,
	// "namespace/name (phase)" (e.g. "ns/train-data (Pending)"), in the order mounted: named
	// in ResourceReady while the scheduler waits for them (ReasonWaitingForVolumeBinding).
	UnboundClaims []string
	// Rejection, when non-nil, is an earlier pass's write the API server rejected for good
	// (failure.Rejection): Stalled=True with reason Rejected and the API server's message; the
	// rejected action is withheld until Rejection.RetryAt, then tried again.
	Rejection *failure.Rejection
	// PodDisruptions is status.podDisruptions from the previous pass (nil when none): the
	// count of pods ended from outside the bound applies to.
	PodDisruptions *v1alpha1.PodDisruptions
	// Namespace and Name are the workspace's (NodeClaim names: ClaimName).
	Namespace, Name string
	// Provisioning is node provisioning through Karpenter NodeClaims (nodeclaims.go).
	Provisioning Provisioning
	// ReleaseNodesOnSuccess is spec.tuning.releaseNodesOnSuccess: once the tuning run has
	// Succeeded, the workspace's NodeClaims are deleted and none is made again (releaseNodes).
	// Output says where the run's output is ("image registry.example/a:1", "PVC out";
	// TuningOutput), for the message that records the release.
	ReleaseNodesOnSuccess bool
	Output                string
}

// Object is an owned object's existence and freshness.
type Object struct {
	Exists, Foreign, UpToDate bool
}

// Workload facts of the Deployment.
type Workload struct {
	Foreign bool
	// UpToDate: its template and replicas are the desired ones (spec hash annotation).
	UpToDate bool
	// RolledOut: status.observedGeneration == generation, updatedReplicas >= replicas and,
	// for a Deployment, no pod of an older template left (WorkloadFacts).
	RolledOut bool
	// Replicas and CurrentReplicas are its spec.replicas (what the autoscaler, or the
	// reconciler from spec.resource.count, last set) and status.replicas (its pods now).
	Replicas, CurrentReplicas int32
}

// Job facts.
type Job struct {
	Foreign bool
	// Complete / Failed: the Job's Complete / Failed condition is True.
	Complete, Failed bool
	// FailedReason and FailedMessage are the Failed condition's, verbatim.
	FailedReason, FailedMessage string
	// Active, Succeeded and FailedPods are status.active, .succeeded and .failed.
	Active, Succeeded, FailedPods int32
}

// Pod facts.
type Pod struct {
	Name string
	// Deleting: the pod has a deletionTimestamp.
	Deleting bool
	// Phase is status.phase.
	Phase corev1.PodPhase
	// NodeName is spec.nodeName ("" until bound); NodeReady is true when that node exists and
	// its Ready condition is True.
	NodeName  string
	NodeReady bool
	// Unschedulable is the scheduler's message when PodScheduled=False/Unschedulable.
	Unschedulable string
	// Ready: the pod's Ready condition is True.
	Ready bool
	// Waiting is the first container waiting reason/message (ErrImagePull, CrashLoopBackOff, ...).
	WaitingReason, WaitingMessage string
	// Terminated is the first non-zero container termination, "reason (exit code N): message".
	Terminated string
	// Disrupted, when non-nil, says the pod ended from outside (failure.EndedFromOutside:
	// evicted, preempted, its node shut down or gone; not a plain deletion, which the
	// workload's controller makes itself).
	Disrupted *failure.Disruption
}

// Event is a Kubernetes Event to emit on the Workspace.
type Event struct{ Type, Reason, Message string }

// Decision is the machine's output for one pass.
type Decision struct {
	// State is StateOf(Mode, Conditions).
	State State
	// Conditions as described in the package doc, ObservedGeneration = Facts.Generation, no
	// LastTransitionTime (the controller's meta.SetStatusCondition sets it).
	Conditions []metav1.Condition
	// Actions in order.
	Actions []Action
	// Requeue asks for an immediate new pass; RequeueAfter > 0 for one after that delay.
	Requeue      bool
	RequeueAfter time.Duration
	// ReadyReplicas is the number of Ready pods on Ready nodes (inference).
	ReadyReplicas int32
	// CurrentReplicas and DesiredReplicas (inference) are status.currentReplicas and
	// status.desiredReplicas: the workload's pods now, and the replicas asked for
	// (replicaCounts).
	CurrentReplicas, DesiredReplicas int32
	// Event is emitted on a state change or when a stall's reason or message changes.
	Event *Event
	// CreateClaims and DeleteClaims are the NodeClaims ActionCreateNodeClaims and
	// ActionDeleteNodeClaims create and delete; NodeClaims is status.nodeClaims (sorted).
	CreateClaims, DeleteClaims, NodeClaims []string
	// PodDisruptions is the new status.podDisruptions: Facts.PodDisruptions with this pass's
	// pods ended from outside counted (failure.CountDisruptions).
	PodDisruptions *v1alpha1.PodDisruptions
	// ReleaseEvent, when non-nil, is the Normal NodesReleased event of a pass that deletes a
	// Succeeded tuning workspace's NodeClaims (releaseNodes); emitted beside Event.
	ReleaseEvent *Event
}

// States lists each mode's states.
var States = map[Mode][]State{
	v1alpha1.WorkspaceModeInference: {v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateReady, v1alpha1.WorkspaceStateNotReady},
	v1alpha1.WorkspaceModeTuning:    {v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateRunning, v1alpha1.WorkspaceStateSucceeded, v1alpha1.WorkspaceStateFailed},
}

// Transitions are the legal state changes per mode, From → {To}; staying is always listed.
// "" (no conditions yet) → any state of the mode. Everything else is KAITO's drawing:
//
//	inference: Pending → Ready; Ready → NotReady; NotReady → Ready
//	tuning:    Pending → Running; Running → Succeeded | Failed; Succeeded, Failed: terminal
var Transitions = map[Mode]lifecycle.Transitions[State]{
	v1alpha1.WorkspaceModeInference: {
		"":                              States[v1alpha1.WorkspaceModeInference],
		v1alpha1.WorkspaceStatePending:  {v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateReady},
		v1alpha1.WorkspaceStateReady:    {v1alpha1.WorkspaceStateReady, v1alpha1.WorkspaceStateNotReady},
		v1alpha1.WorkspaceStateNotReady: {v1alpha1.WorkspaceStateNotReady, v1alpha1.WorkspaceStateReady},
	},
	v1alpha1.WorkspaceModeTuning: {
		"":                               States[v1alpha1.WorkspaceModeTuning],
		v1alpha1.WorkspaceStatePending:   {v1alpha1.WorkspaceStatePending, v1alpha1.WorkspaceStateRunning},
		v1alpha1.WorkspaceStateRunning:   {v1alpha1.WorkspaceStateRunning, v1alpha1.WorkspaceStateSucceeded, v1alpha1.WorkspaceStateFailed},
		v1alpha1.WorkspaceStateSucceeded: {v1alpha1.WorkspaceStateSucceeded},
		v1alpha1.WorkspaceStateFailed:    {v1alpha1.WorkspaceStateFailed},
	},
}

// CheckTransition returns a *lifecycle.TransitionError unless from → to is in
// Transitions[mode] (a mode without a table allows nothing).
func CheckTransition(mode Mode, from, to State) error {
	t := lifecycle.Table[State]{Kind: string(mode) + " workspace state", Why: "not an edge of KAITO's Workspace status proposal", Edges: Transitions[mode]}
	return t.Check(from, to)
}

// Terminal reports whether a state is terminal (tuning Succeeded or Failed).
func Terminal(s State) bool {
	return s == v1alpha1.WorkspaceStateSucceeded || s == v1alpha1.WorkspaceStateFailed
}

// StateOf derives status.state from the WorkspaceSucceeded condition alone, the machine's memory
// of whether an inference workspace was ever established or a tuning run is over; "" when it is
// absent (never reconciled). A reason that does not belong to the mode reads as Pending.
func StateOf(mode Mode, conds []metav1.Condition) State {
	for _, c := range conds {
		if c.Type != ConditionWorkspaceSucceeded {
			continue
		}
		inference := mode == v1alpha1.WorkspaceModeInference
		switch {
		case c.Status == metav1.ConditionTrue && inference:
			return v1alpha1.WorkspaceStateReady
		case c.Status == metav1.ConditionTrue:
			return v1alpha1.WorkspaceStateSucceeded
		case inference && c.Reason == ReasonWorkspaceNotReady:
			return v1alpha1.WorkspaceStateNotReady
		case !inference && c.Reason == ReasonJobRunning:
			return v1alpha1.WorkspaceStateRunning
		case !inference && c.Reason == ReasonWorkspaceFailed:
			return v1alpha1.WorkspaceStateFailed
		}
		return v1alpha1.WorkspaceStatePending
	}
	return ""
}

// cond is a condition's status, reason and message.
type cond struct {
	ok      bool
	reason  string
	message string
}

// pass is one pass's outcome before it is spelled out as conditions.
type pass struct {
	state    State
	resource cond // ResourceReady
	progress cond // InferenceReady or JobStarted
	summary  cond // WorkspaceSucceeded
	// stalled, when non-nil, makes Stalled=True with its reason and message.
	stalled *cond
	// terminating makes Reconciling=True with reason Terminating.
	terminating string
	// podDisrupted makes Reconciling=True carry reason PodDisrupted (a replacement awaited).
	podDisrupted bool
}

// Decide runs one pass. It is total over Facts; a *lifecycle.TransitionError (only possible
// when the conditions in Facts were not written by this machine, e.g. a mode whose conditions
// do not fit) means the decision must not be acted upon.
func Decide(f Facts) (Decision, error) {
	prev := StateOf(f.Mode, f.Conditions)
	d := Decision{PodDisruptions: f.PodDisruptions}
	if !f.Deleting {
		var seen []failure.Disruption
		for _, pod := range f.Pods {
			if pod.Disrupted != nil {
				seen = append(seen, *pod.Disrupted)
			}
		}
		d.PodDisruptions = failure.CountDisruptions(f.PodDisruptions, seen, f.Now)
		f.PodDisruptions = d.PodDisruptions // the bound applies to the count with this pass's pods
	}
	var p pass
	switch {
	case f.Deleting:
		p = terminate(f, prev, &d)
	case !f.HasFinalizer && prev == "":
		p = carry(f, prev)
		p.state = v1alpha1.WorkspaceStatePending
		p.summary = cond{false, ReasonWorkspacePending, "adding finalizer " + v1alpha1.Finalizer}
		d.Actions = []Action{ActionAddFinalizer}
	default:
		if !f.HasFinalizer {
			d.Actions = append(d.Actions, ActionAddFinalizer) // removed by someone: put it back
		}
		if f.Mode == v1alpha1.WorkspaceModeTuning {
			p = tuning(f, prev, &d)
		} else {
			p = inference(f, prev, &d)
		}
		rejected(f, &p, &d)
	}
	d.NodeClaims = claimNames(f.Provisioning.Claims, d.CreateClaims)
	d.CurrentReplicas, d.DesiredReplicas = replicaCounts(f)
	d.Conditions = conditions(f, p)
	d.State = StateOf(f.Mode, d.Conditions)
	if err := CheckTransition(f.Mode, prev, d.State); err != nil {
		return Decision{}, err
	}
	if p.stalled != nil && d.RequeueAfter == 0 && !d.Requeue {
		d.RequeueAfter = backoff(f)
	}
	d.Event = event(f, prev, d)
	return d, nil
}

// carry keeps the previous pass's mode conditions (used while deleting and before the first
// real pass), with a Pending summary when there is none.
func carry(f Facts, prev State) pass {
	p := pass{state: prev}
	get := func(t string, def cond) cond {
		for _, c := range f.Conditions {
			if c.Type == t {
				return cond{c.Status == metav1.ConditionTrue, c.Reason, c.Message}
			}
		}
		return def
	}
	p.resource = get(ConditionResourceReady, cond{false, ReasonWaitingForScheduler, "not checked yet"})
	p.progress = get(progressType(f.Mode), cond{false, progressPendingReason(f.Mode), "not started yet"})
	p.summary = get(ConditionWorkspaceSucceeded, cond{false, ReasonWorkspacePending, "initializing"})
	return p
}

func progressType(m Mode) string {
	if m == v1alpha1.WorkspaceModeTuning {
		return ConditionJobStarted
	}
	return ConditionInferenceReady
}

func progressPendingReason(m Mode) string {
	if m == v1alpha1.WorkspaceModeTuning {
		return ReasonJobPending
	}
	return ReasonReplicasNotReady
}

// terminate deletes the owned objects, then removes the finalizer; the state is kept.
func terminate(f Facts, prev State, d *Decision) pass {
	p := carry(f, prev)
	if !f.HasFinalizer {
		p.terminating = "waiting for the API server to remove the Workspace"
		return p
	}
	var left []string
	if f.Workload != nil && !f.Workload.Foreign {
		d.Actions = append(d.Actions, ActionDeleteWorkload)
		left = append(left, "deployment")
	}
	if f.OtherWorkload {
		d.Actions = append(d.Actions, ActionDeleteOtherWorkload)
		left = append(left, "workload of the other shape")
	}
	if f.Service.Exists && !f.Service.Foreign {
		d.Actions = append(d.Actions, ActionDeleteService)
		left = append(left, "service")
	}
	if f.Autoscaler.Exists && !f.Autoscaler.Foreign {
		d.Actions = append(d.Actions, ActionDeleteAutoscaler)
		left = append(left, "horizontal pod autoscaler")
	}
	if f.Job != nil && !f.Job.Foreign {
		d.Actions = append(d.Actions, ActionDeleteJob)
		left = append(left, "job")
	}
	if len(f.Provisioning.Claims) > 0 {
		for _, c := range f.Provisioning.Claims {
			if !c.Deleting {
				d.DeleteClaims = append(d.DeleteClaims, c.Name)
			}
		}
		if len(d.DeleteClaims) > 0 {
			d.Actions = append(d.Actions, ActionDeleteNodeClaims)
		}
		left = append(left, "NodeClaims "+strings.Join(claimNames(f.Provisioning.Claims, nil), ", "))
	}
	if len(left) > 0 {
		p.terminating = "deleting the " + strings.Join(left, ", ")
		d.RequeueAfter = WaitPoll
		return p
	}
	d.Actions = append(d.Actions, ActionRemoveFinalizer)
	p.terminating = "owned objects deleted; removing finalizer " + v1alpha1.Finalizer
	return p
}

// resourceCheck is ResourceReady before looking at pods: the Pending trap made visible.
func resourceCheck(f Facts) *cond {
	c := f.Capacity
	switch {
	case f.SpecError != "":
		return &cond{false, ReasonInvalidSpec, f.SpecError}
	case c.MatchingNodes == 0:
		return &cond{false, ReasonNoMatchingNodes, c.noMatchMessage()}
	case c.PlaceableReplicas < f.Replicas:
		return &cond{false, ReasonInsufficientCapacity, c.insufficientMessage(f.Replicas)}
	}
	return nil
}

// capacityCheck is ResourceReady before looking at pods (resourceCheck), with node provisioning
// (nodeclaims.go): while NodeClaims are made or on their way the condition is
// ReasonProvisioningNodes and not a stall; Decision.CreateClaims gets the claims to create.
// stall reports whether res (when non-nil) stalls the workspace.
func capacityCheck(f Facts, d *Decision) (res *cond, stall bool) {
	res = resourceCheck(f)
	if res == nil || res.reason == ReasonInvalidSpec {
		return res, false
	}
	pv := f.Provisioning
	var creating []string
	if pv.Wanted && pv.Available && pv.NodeClass != (NodeClass{}) {
		creating = claimsToCreate(f, f.Namespace, f.Name)
	}
	res, progress := provisioningCond(f, res, creating)
	if len(creating) > 0 {
		d.CreateClaims = creating
		d.Actions = append(d.Actions, ActionCreateNodeClaims)
	}
	return res, !progress
}

// waitingForClaims: the workspace has NodeClaims of its own, so a pod the scheduler could
// not place yet waits for their nodes (progress within the resource timeout, not a stall).
func waitingForClaims(f Facts) bool { return len(f.Provisioning.Claims) > 0 }

// podProblems reads the pods: the scheduler's message for unschedulable pods, the kubelet's
// for image pull and start failures, lost nodes.
type podProblems struct {
	unschedulable, imagePull, start, nodeLost *cond
	// volumeBinding: a pod the scheduler holds only until its claims are bound (not stalled).
	volumeBinding           *cond
	bound, readyOnReadyNode int32
	// active counts the pods neither going nor ended (phase Failed or Succeeded): the pods a
	// Deployment's status.replicas counts.
	active  int32
	running bool
	nodes   []string
	// disrupted is the newest pod that ended from outside (nil when none did).
	disrupted *failure.Disruption
}

// readPods reads the pods (in name order); a pod being deleted or ended from outside
// (Pod.Disrupted: its controller replaces it) is neither a replica nor a failure, only the
// newest disruption is kept.
func readPods(pods []Pod, unboundClaims []string) podProblems {
	var r podProblems
	sorted := append([]Pod(nil), pods...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, p := range sorted {
		if p.Disrupted != nil && (r.disrupted == nil || p.Disrupted.At.After(r.disrupted.At)) {
			r.disrupted = p.Disrupted
		}
		if p.Deleting || p.Disrupted != nil {
			// Going, or ended from outside: its controller replaces it; neither a start
			// failure nor a replica.
			continue
		}
		if p.Phase == corev1.PodRunning {
			r.running = true
		}
		if p.Phase != corev1.PodFailed && p.Phase != corev1.PodSucceeded {
			r.active++
		}
		switch {
		case p.NodeName == "" && failure.WaitsForVolumeBinding(p.Unschedulable):
			if r.volumeBinding == nil {
				msg := fmt.Sprintf("pod %s: %s", p.Name, p.Unschedulable)
				if len(unboundClaims) > 0 {
					msg += "; claims not bound yet: " + strings.Join(unboundClaims, ", ")
				}
				r.volumeBinding = &cond{false, ReasonWaitingForVolumeBinding, msg + "; waiting for the PersistentVolume controller to bind them"}
			}
		case p.NodeName == "" && p.Unschedulable != "":
			if r.unschedulable == nil {
				r.unschedulable = &cond{false, ReasonUnschedulable, fmt.Sprintf("pod %s: %s", p.Name, p.Unschedulable)}
			}
		case p.NodeName != "":
			r.bound++
			r.nodes = append(r.nodes, p.NodeName)
			if !p.NodeReady && r.nodeLost == nil {
				r.nodeLost = &cond{false, ReasonNodeLost, fmt.Sprintf("pod %s is on node %s, which is gone or NotReady", p.Name, p.NodeName)}
			}
		}
		if p.Ready && p.NodeName != "" && p.NodeReady {
			r.readyOnReadyNode++
		}
		r.readContainers(p)
	}
	r.nodes = UniqueSorted(r.nodes)
	return r
}

// readContainers records p's image pull and container start failures (the kubelet's words),
// the first of each kind.
func (r *podProblems) readContainers(p Pod) {
	msg := fmt.Sprintf("pod %s: %s", p.Name, p.WaitingReason)
	if p.WaitingMessage != "" {
		msg += ": " + p.WaitingMessage
	}
	if failure.ImagePullReasons[p.WaitingReason] && r.imagePull == nil {
		r.imagePull = &cond{false, ReasonImagePullFailed, msg}
	}
	if r.start == nil {
		if failure.ContainerStartReasons[p.WaitingReason] {
			if p.Terminated != "" {
				msg += "; last terminated: " + p.Terminated
			}
			r.start = &cond{false, ReasonContainerStartFailed, msg}
		} else if p.Terminated != "" && p.Phase != corev1.PodSucceeded {
			r.start = &cond{false, ReasonContainerStartFailed, fmt.Sprintf("pod %s: container terminated: %s", p.Name, p.Terminated)}
		}
	}
}

// inferenceResource sets ResourceReady of an inference pass: capacity first (stalled unless the
// spec is invalid or nodes are being provisioned), then the pods' placement (stalled when
// unschedulable, except while the workspace's own NodeClaims bring nodes or the scheduler waits
// for immediate claims to bind: WaitingForVolumeBinding).
func inferenceResource(f Facts, pods podProblems, p *pass, d *Decision) {
	res, stall := capacityCheck(f, d)
	switch {
	case res != nil:
		p.resource = *res
		if stall {
			p.stalled = res
		}
	case servesMinimum(f, pods):
		// The autoscaler's replicas beyond minReplicas may wait for room (a cluster
		// autoscaler's node) without holding the workspace back.
		p.resource = cond{true, ReasonResourcesAvailable, fmt.Sprintf("%d replicas bound to Ready nodes %s", pods.bound, strings.Join(pods.nodes, ", "))}
		if w := pods.unschedulable; w != nil {
			p.resource.message += "; replicas beyond minReplicas wait: " + w.message
		}
	case pods.unschedulable != nil:
		p.resource = *pods.unschedulable
		if !waitingForClaims(f) {
			p.stalled = pods.unschedulable
		}
	case pods.volumeBinding != nil:
		p.resource = *pods.volumeBinding
	case pods.nodeLost != nil:
		p.resource = *pods.nodeLost
	case pods.bound < placing(f):
		p.resource = cond{false, ReasonWaitingForScheduler, fmt.Sprintf("%d/%d replicas bound to a node", pods.bound, placing(f))}
	default:
		p.resource = cond{true, ReasonResourcesAvailable, fmt.Sprintf("%d replicas bound to Ready nodes %s", pods.bound, strings.Join(pods.nodes, ", "))}
	}
}

// inferenceProgress sets InferenceReady of an inference pass: every replica Ready on a Ready
// node (under spec.autoscaling minReplicas of those the autoscaler asks for: serving), the
// rollout done, the Service up. An invalid spec, an ownership conflict, a missing reference, an
// image pull or a container start failure stall it. A Ready autoscaled workspace whose
// autoscaler is moving the count says so in the message (scaling); that is no failure.
func inferenceProgress(f Facts, pods podProblems, conflict *cond, refsMissing bool, p *pass) {
	ready := serving(f, pods)
	switch {
	case f.SpecError != "":
		p.progress = cond{false, ReasonInvalidSpec, f.SpecError}
		p.stalled = &p.progress
	case conflict != nil:
		p.progress, p.stalled = *conflict, conflict
	case refsMissing:
		c := refsCond(f)
		p.progress, p.stalled = c, &c
	case pods.imagePull != nil && !servesMinimum(f, pods):
		p.progress = *pods.imagePull
		p.stalled = pods.imagePull
	case pods.start != nil && !servesMinimum(f, pods):
		p.progress = *pods.start
		p.stalled = pods.start
	case ready < f.Replicas && disruptedProgress(f, pods, replicasReady(f, ready), p):
	case ready < f.Replicas || f.Workload == nil || !f.Workload.UpToDate || !rolledOut(f):
		msg := replicasReady(f, ready) + autoscalerWait(f, pods)
		if f.Workload != nil && f.Workload.UpToDate && !rolledOut(f) {
			msg += "; rollout in progress"
		}
		if !p.resource.ok {
			msg += "; " + p.resource.message
		}
		p.progress = cond{false, ReasonReplicasNotReady, msg}
	case !f.Service.UpToDate:
		p.progress = cond{false, ReasonServiceNotReady, "replicas Ready; creating or updating the service"}
	case wantsAutoscaler(f) && !f.Autoscaler.UpToDate:
		p.progress = cond{false, ReasonAutoscalerNotReady, "replicas Ready; creating or updating the HorizontalPodAutoscaler"}
	default:
		p.progress = cond{true, ReasonInferenceReady, replicasReady(f, ready) + scaling(f, ready)}
	}
}

// disruptedProgress sets the progress condition (InferenceReady or JobStarted) of a pass whose
// pods are not all Ready when pods ended from outside: Stalled with reason
// PodDisruptedRepeatedly beyond the bound (Facts.PodDisruptions with this pass counted, as
// Decide puts it in f), else reason PodDisrupted naming the newest such pod if it ended within
// failure.DisruptionWindow, with tail (the replicas' progress) after it. It reports whether it
// set anything.
func disruptedProgress(f Facts, pods podProblems, tail string, p *pass) bool {
	if failure.DisruptedRepeatedly(f.PodDisruptions, f.Replicas, f.Now) {
		c := cond{false, ReasonPodDisruptedRepeatedly, failure.RepeatedMessage(f.PodDisruptions, f.Replicas)}
		p.progress, p.stalled = c, &c
		return true
	}
	dis := pods.disrupted
	if dis == nil || f.Now.Sub(dis.At) > failure.DisruptionWindow {
		return false
	}
	p.progress = cond{false, ReasonPodDisrupted, failure.WaitingMessage(*dis, f.PodDisruptions, f.Replicas) + "; " + tail}
	p.podDisrupted = true
	return true
}

// tuningResource sets ResourceReady of a tuning pass: capacity (stalled), an unschedulable pod
// of an active Job (stalled; waiting for its claims to bind or its NodeClaims' nodes is not),
// placed once a pod is bound or the Job finished.
func tuningResource(f Facts, pods podProblems, p *pass, d *Decision) {
	job := f.Job
	res, stall := capacityCheck(f, d)
	switch {
	case res != nil:
		p.resource = *res
		if stall {
			p.stalled = res
		}
	case pods.unschedulable != nil && job != nil && job.Active > 0:
		p.resource = *pods.unschedulable
		if !waitingForClaims(f) {
			p.stalled = pods.unschedulable
		}
	case pods.volumeBinding != nil && job != nil && job.Active > 0:
		p.resource = *pods.volumeBinding
	case pods.bound > 0 || (job != nil && (job.Complete || job.Failed)):
		p.resource = cond{true, ReasonResourcesAvailable, "the tuning pod was placed on " + strings.Join(pods.nodes, ", ")}
		if len(pods.nodes) == 0 {
			p.resource.message = "the tuning pod was placed"
		}
	default:
		p.resource = cond{false, ReasonWaitingForScheduler, "the tuning pod is not bound to a node yet"}
	}
}

// tuningOutcome sets the state and WorkspaceSucceeded of a tuning pass that did not end early:
// Running first when the Job is seen finished (Pending → Running → Succeeded|Failed), then
// Succeeded or Failed; Running once started (never back to Pending), else Pending.
func tuningOutcome(prev State, job *Job, pods podProblems, p *pass, d *Decision) {
	finished := job != nil && !job.Foreign && (job.Complete || job.Failed)
	switch {
	case finished && prev != v1alpha1.WorkspaceStateRunning:
		// KAITO draws Pending → Running → Succeeded|Failed: report Running first.
		p.state = v1alpha1.WorkspaceStateRunning
		p.summary = cond{false, ReasonJobRunning, "the tuning job ran (observed finished)"}
		p.stalled = nil
		d.Requeue = true
	case finished && job.Complete:
		p.state = v1alpha1.WorkspaceStateSucceeded
		p.summary = cond{true, ReasonWorkspaceSucceeded, fmt.Sprintf("the tuning job completed (%d succeeded)", job.Succeeded)}
		p.stalled = nil
	case finished:
		msg := "the tuning job failed"
		if job.FailedReason != "" {
			msg += ": " + job.FailedReason
		}
		if job.FailedMessage != "" {
			msg += ": " + job.FailedMessage
		}
		if pods.start != nil {
			msg += "; " + pods.start.message
		}
		p.state = v1alpha1.WorkspaceStateFailed
		p.summary = cond{false, ReasonWorkspaceFailed, msg}
		p.stalled = &cond{false, ReasonWorkspaceFailed, msg}
	case p.progress.ok:
		p.state = v1alpha1.WorkspaceStateRunning
		p.summary = cond{false, ReasonJobRunning, "the tuning job is running"}
		p.stalled = nil
		d.RequeueAfter = WaitPoll
	case prev == v1alpha1.WorkspaceStateRunning:
		// Running never goes back to Pending (e.g. a retried pod waiting for a node): the
		// job has started; what holds it up is in the other conditions.
		p.state = v1alpha1.WorkspaceStateRunning
		p.summary = cond{false, ReasonJobRunning, "the tuning job is running; " + p.progress.reason + ": " + p.progress.message}
		p.progress = cond{true, ReasonJobStarted, "the tuning job had started"}
		if p.stalled == nil {
			d.RequeueAfter = WaitPoll
		}
	default:
		p.state = v1alpha1.WorkspaceStatePending
		p.summary = cond{false, ReasonWorkspacePending, rootCause(*p)}
		if p.stalled == nil {
			d.RequeueAfter = WaitPoll
		}
	}
}

// inference is one pass of an inference workspace.
func inference(f Facts, prev State, d *Decision) pass {
	established := prev == v1alpha1.WorkspaceStateReady || prev == v1alpha1.WorkspaceStateNotReady
	p := pass{}
	conflict := inferenceConflict(f)
	refsMissing := len(f.MissingRefs) > 0 && (f.Workload == nil || !f.Workload.UpToDate)
	inferenceActions(f, conflict, refsMissing, d)
	pods := readPods(f.Pods, f.UnboundClaims)
	d.ReadyReplicas = pods.readyOnReadyNode

	inferenceResource(f, pods, &p, d)
	inferenceProgress(f, pods, conflict, refsMissing, &p)

	switch {
	case p.progress.ok && p.resource.ok:
		p.state = v1alpha1.WorkspaceStateReady
		p.summary = cond{true, ReasonWorkspaceReady, "inference is serving"}
		p.stalled = nil
	case established:
		p.state = v1alpha1.WorkspaceStateNotReady
		p.summary = cond{false, ReasonWorkspaceNotReady, rootCause(p)}
	default:
		p.state = v1alpha1.WorkspaceStatePending
		p.summary = cond{false, ReasonWorkspacePending, rootCause(p)}
	}
	if p.state != v1alpha1.WorkspaceStateReady && p.stalled == nil {
		d.RequeueAfter = WaitPoll
	}
	return p
}

// inferenceConflict is the OwnershipConflict of an inference pass: a Deployment, Service or
// (wanted) HorizontalPodAutoscaler named like the workspace that it does not control; nil when
// none.
func inferenceConflict(f Facts) *cond {
	switch {
	case f.Workload != nil && f.Workload.Foreign:
		return &cond{false, ReasonOwnershipConflict, "a Deployment named like the workspace exists and is not controlled by it"}
	case f.Service.Foreign:
		return &cond{false, ReasonOwnershipConflict, "a Service named like the workspace exists and is not controlled by it"}
	case wantsAutoscaler(f) && f.Autoscaler.Foreign:
		return &cond{false, ReasonOwnershipConflict, "a HorizontalPodAutoscaler named like the workspace exists and is not controlled by it"}
	}
	return nil
}

// inferenceActions are an inference pass's writes: the workload (unless a reference is
// missing), the Service, the other shape's workload gone, the HorizontalPodAutoscaler when
// spec.autoscaling wants one (none while the spec is invalid or an object is someone else's),
// and ours deleted when it does not.
func inferenceActions(f Facts, conflict *cond, refsMissing bool, d *Decision) {
	if f.SpecError == "" && conflict == nil {
		if (f.Workload == nil || !f.Workload.UpToDate) && !refsMissing {
			d.Actions = append(d.Actions, ActionEnsureWorkload)
		}
		if !f.Service.UpToDate {
			d.Actions = append(d.Actions, ActionEnsureService)
		}
		if f.OtherWorkload {
			d.Actions = append(d.Actions, ActionDeleteOtherWorkload)
		}
		if wantsAutoscaler(f) && !f.Autoscaler.UpToDate {
			d.Actions = append(d.Actions, ActionEnsureAutoscaler)
		}
	}
	if !wantsAutoscaler(f) && f.Autoscaler.Exists && !f.Autoscaler.Foreign {
		d.Actions = append(d.Actions, ActionDeleteAutoscaler) // autoscaling removed, or made external
	}
}

// refsCond is the progress condition while a mounted ConfigMap or Secret is missing.
func refsCond(f Facts) cond {
	return cond{false, ReasonReferenceNotFound, strings.Join(f.MissingRefs, "; ") + "; the workspace proceeds on its own once they exist"}
}

// rejected applies f.Rejection to a pass whose actions still include the rejected one: the
// progress condition and Stalled carry the API server's message, and the action waits for
// Rejection.RetryAt. A Ready or terminal pass is left alone.
func rejected(f Facts, p *pass, d *Decision) {
	r := f.Rejection
	if r == nil || f.Deleting || !slices.Contains(d.Actions, Action(r.Action)) || p.state == v1alpha1.WorkspaceStateReady || Terminal(p.state) {
		return
	}
	c := cond{false, ReasonRejected, r.ConditionMessage()}
	p.progress, p.stalled = c, &c
	p.summary.message = rootCause(*p)
	if r.Holds(f.Now) {
		d.Actions = failure.Without(d.Actions, r.Action)
	}
	d.Requeue = false
	d.RequeueAfter = min(max(r.Wait(f.Now), BackoffMin), BackoffMax)
}

// rootCause is the message of the first False condition (KAITO's debugging rule), except
// that a stall is named rather than a scheduler wait it causes.
func rootCause(p pass) string {
	if p.stalled != nil && p.resource.reason == ReasonWaitingForScheduler {
		// Nothing to schedule yet because of what stalls the workspace: say that instead.
		return p.stalled.reason + ": " + p.stalled.message
	}
	for _, c := range []cond{p.resource, p.progress} {
		if !c.ok {
			return c.reason + ": " + c.message
		}
	}
	return "initializing"
}

// tuning is one pass of a tuning workspace.
func tuning(f Facts, prev State, d *Decision) pass {
	if Terminal(prev) {
		// Terminal: nothing observed can change the state (the Job may even be gone).
		p := carry(f, prev)
		if prev == v1alpha1.WorkspaceStateFailed {
			p.stalled = &cond{false, p.summary.reason, p.summary.message}
		} else {
			releaseNodes(f, &p, d) // a Failed run keeps its nodes: the user may inspect them
		}
		return p
	}
	p := pass{state: prev}
	job := f.Job
	pods := readPods(f.Pods, f.UnboundClaims)

	tuningResource(f, pods, &p, d)

	switch {
	case job != nil && job.Foreign:
		c := cond{false, ReasonOwnershipConflict, "a Job named like the workspace exists and is not controlled by it"}
		p.progress, p.stalled = c, &c
	case f.SpecError != "":
		c := cond{false, ReasonInvalidSpec, f.SpecError}
		p.progress, p.stalled = c, &c
	case job == nil && prev == v1alpha1.WorkspaceStateRunning:
		// The Job vanished mid-run: re-creating it would restart the run. Running → Failed.
		p.progress = cond{true, ReasonJobStarted, "the tuning job had started"}
		p.state = v1alpha1.WorkspaceStateFailed
		p.summary = cond{false, ReasonWorkspaceFailed, ReasonJobLost + ": the tuning job was deleted while running"}
		p.stalled = &cond{false, ReasonJobLost, "the tuning job was deleted while running"}
		return p
	case job == nil && len(f.MissingRefs) > 0:
		c := refsCond(f)
		p.progress, p.stalled = c, &c
	case job == nil:
		d.Actions = append(d.Actions, ActionCreateJob)
		p.progress = cond{false, ReasonJobPending, "creating the tuning job"}
	case job.Complete || job.Failed || pods.running || job.Succeeded > 0 || job.FailedPods > 0:
		p.progress = cond{true, ReasonJobStarted, "the tuning job started"}
	case job.Active > 0 && disruptedProgress(f, pods, "the job runs a new pod", &p):
	default:
		msg := "the tuning job's pod has not started"
		if pods.imagePull != nil {
			p.progress, p.stalled = *pods.imagePull, pods.imagePull
			break
		}
		if !p.resource.ok {
			msg += "; " + p.resource.message
		}
		p.progress = cond{false, ReasonJobPending, msg}
	}

	tuningOutcome(prev, job, pods, &p, d)
	if p.state == v1alpha1.WorkspaceStateSucceeded || (job != nil && !job.Foreign && job.Complete && f.ReleaseNodesOnSuccess) {
		releaseNodes(f, &p, d)
	}
	return p
}

// conditions spells a pass out as the six conditions.
func conditions(f Facts, p pass) []metav1.Condition {
	mk := func(t string, c cond) metav1.Condition {
		return failure.Condition(t, c.ok, c.reason, c.message, f.Generation)
	}
	ready := p.summary.ok && p.terminating == ""
	var active cond
	switch {
	case p.terminating != "":
		active = cond{false, ReasonTerminating, p.terminating}
	case ready:
		active = cond{true, p.summary.reason, p.summary.message}
	case p.stalled != nil:
		active = cond{false, p.stalled.reason, p.stalled.message}
	default:
		active = cond{false, ReasonProgressing, p.summary.message}
		switch {
		case p.summary.reason == ReasonWorkspacePending && !f.HasFinalizer:
			active.reason = ReasonAddingFinalizer
		case p.resource.reason == ReasonWaitingForVolumeBinding:
			active.reason = ReasonWaitingForVolumeBinding // what the wait is for, in Ready's reason
		case p.podDisrupted:
			active.reason = ReasonPodDisrupted // a replacement awaited
		}
	}
	stalled := p.stalled != nil && !ready && p.terminating == ""
	out := append(failure.KStatus(ready, stalled, active.reason, active.message, f.Generation),
		mk(ConditionResourceReady, p.resource),
		mk(progressType(f.Mode), p.progress),
		mk(ConditionWorkspaceSucceeded, p.summary),
	)
	return out
}

// backoff is the Stalled re-check delay: how long Stalled has been True, clamped.
func backoff(f Facts) time.Duration {
	return failure.Backoff(f.Conditions, v1alpha1.ConditionStalled, f.Now, BackoffMin, BackoffMax)
}

// event: on a state change, or when Stalled turns True or its reason/message changes.
func event(f Facts, prev State, d Decision) *Event {
	var stalled, oldStalled *metav1.Condition
	for i := range d.Conditions {
		if d.Conditions[i].Type == v1alpha1.ConditionStalled && d.Conditions[i].Status == metav1.ConditionTrue {
			stalled = &d.Conditions[i]
		}
	}
	for i := range f.Conditions {
		if f.Conditions[i].Type == v1alpha1.ConditionStalled && f.Conditions[i].Status == metav1.ConditionTrue {
			oldStalled = &f.Conditions[i]
		}
	}
	if stalled != nil && (oldStalled == nil || oldStalled.Reason != stalled.Reason || oldStalled.Message != stalled.Message) {
		return &Event{Type: corev1.EventTypeWarning, Reason: stalled.Reason, Message: stalled.Message}
	}
	if prev == d.State {
		return nil
	}
	typ := corev1.EventTypeNormal
	if d.State == v1alpha1.WorkspaceStateNotReady || d.State == v1alpha1.WorkspaceStateFailed {
		typ = corev1.EventTypeWarning
	}
	var msg string
	for _, c := range d.Conditions {
		if c.Type == ConditionWorkspaceSucceeded {
			msg = c.Message
		}
	}
	return &Event{Type: typ, Reason: string(d.State), Message: fmt.Sprintf("state %s → %s: %s", orNone(prev), d.State, msg)}
}

func orNone(s State) string {
	if s == "" {
		return "(none)"
	}
	return string(s)
}

// UniqueSorted sorts in (in place) and returns it without repeats; nil when in is empty.
func UniqueSorted(in []string) []string {
	if len(in) == 0 {
		return nil
	}
	sort.Strings(in)
	out := in[:1]
	for _, s := range in[1:] {
		if s != out[len(out)-1] {
			out = append(out, s)
		}
	}
	return out
}
