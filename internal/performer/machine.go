// Package performer is Hourglass's Performer lifecycle as a pure machine: facts about a
// Performer, its Pod and Service go in; phase, conditions, actions and requeue come out
// (reconciler/performer_controller.go gathers, acts and writes status once). Phases are
// Hourglass's top-level states (Pending, Creating, Scheduling, Running, Upgrading, Failed,
// Terminating); its sub-states (ImagePull, PodBinding, ...) go in condition messages, and
// Failed quotes the scheduler or kubelet. A Pod ended from outside is not a failure until more
// than failure.DisruptionsPerReplica within failure.DisruptionWindow. Exactly one of Ready,
// Reconciling, Stalled is True; the phase is derived from the conditions (Phases.Of), never the
// other way round, and the previous pass's conditions are the machine's memory.
package performer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/autoscale"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// Phase is a Performer's status.phase.
type Phase = v1alpha1.PerformerPhase

// Condition types besides the kstatus ones in v1alpha1 (Ready, Reconciling, Stalled).
const (
	// ConditionScheduled is True once the Pod is bound to a node.
	ConditionScheduled = "Scheduled"
	// ConditionServiceReady is True while the Service exists and matches the desired one.
	ConditionServiceReady = "ServiceReady"
)

// Condition reasons. The first group is Hourglass's (Hourglass docs/operator/api-reference.md);
// the rest are ours.
const (
	ReasonPodReady             = "PodReady"             // Ready=True
	ReasonServiceReady         = "ServiceReady"         // ServiceReady=True
	ReasonScheduled            = "Scheduled"            // Scheduled=True
	ReasonImagePullFailed      = "ImagePullFailed"      // Failed: kubelet cannot pull the image
	ReasonSchedulingFailed     = "SchedulingFailed"     // Failed: no node matches selectors/taints/...
	ReasonHardwareUnavailable  = "HardwareUnavailable"  // Failed: nodes match but lack resources ("Insufficient ...")
	ReasonUpgradeInProgress    = "UpgradeInProgress"    // Reconciling=True while Upgrading
	ReasonContainerStartFailed = "ContainerStartFailed" // Failed: container cannot be created, started, or crashes

	ReasonPending             = "Pending"                       // Reconciling=True while Pending
	ReasonCreating            = "Creating"                      // Reconciling=True while Creating
	ReasonScheduling          = "Scheduling"                    // Reconciling=True while Scheduling
	ReasonTerminating         = "Terminating"                   // Reconciling=True while Terminating
	ReasonPodFailed           = "PodFailed"                     // Failed: the Pod ended on its own (a container failed, UnexpectedAdmissionError, ...)
	ReasonInvalidSpec         = "InvalidSpec"                   // Failed: the desired Pod cannot be built (e.g. a node selector conflict)
	ReasonOwnershipConflict   = "OwnershipConflict"             // Failed: performer-<name> exists and is not ours
	ReasonPodAbsent           = "PodAbsent"                     // Scheduled=False: no Pod
	ReasonWaitingForScheduler = "WaitingForScheduler"           // Scheduled=False: the scheduler has not decided yet
	ReasonServiceMissing      = "ServiceMissing"                // ServiceReady=False: no Service
	ReasonServiceOutOfDate    = "ServiceOutOfDate"              // ServiceReady=False: ports/selector differ
	ReasonRejected            = failure.ReasonRejected          // Failed: the API server rejected a write (its message)
	ReasonReferenceNotFound   = failure.ReasonReferenceNotFound // Failed: an envFrom Secret/ConfigMap or key is missing
	// ReasonPodDisrupted: Reconciling=True (phase Creating): the Pod ended from outside
	// (evicted, preempted, deleted, its node gone); its replacement is awaited.
	ReasonPodDisrupted = failure.ReasonPodDisrupted
	// ReasonPodDisruptedRepeatedly: Failed: more Pods ended from outside within
	// failure.DisruptionWindow than failure.DisruptionBound(1) allows.
	ReasonPodDisruptedRepeatedly = failure.ReasonPodDisruptedRepeatedly
)

// Backoff bounds for re-checking a Failed Performer: the delay is the time it has been failed
// (Stalled=True), clamped to [BackoffMin, BackoffMax], so successive checks double.
const (
	BackoffMin = 5 * time.Second
	BackoffMax = 5 * time.Minute
	// WaitPoll is the requeue delay while waiting for owned objects to go away (the watch on
	// them normally triggers earlier).
	WaitPoll = 2 * time.Second
)

// Action is one thing the controller must do this pass. Decide returns them in execution order.
type Action string

const (
	// ActionAddFinalizer adds v1alpha1.Finalizer to the Performer.
	ActionAddFinalizer Action = "AddFinalizer"
	// ActionEnsureService creates or updates the Service performer-<name>.
	ActionEnsureService Action = "EnsureService"
	// ActionCreatePod creates the Pod performer-<name> from the current spec.
	ActionCreatePod Action = "CreatePod"
	// ActionDeletePod deletes the Pod (to recreate it from a new spec, to retry a terminal
	// Pod, or during Terminating).
	ActionDeletePod Action = "DeletePod"
	// ActionDeleteService deletes the Service (Terminating).
	ActionDeleteService Action = "DeleteService"
	// ActionApplyDeployment creates or updates the one-replica Deployment performer-<name>
	// (spec.strategy RollingUpdate) from the current spec: the Deployment controller then
	// starts the new Pod and removes the old one only once the new one is Ready.
	ActionApplyDeployment Action = "ApplyDeployment"
	// ActionDeleteDeployment deletes the Deployment (Terminating, or back to Recreate).
	ActionDeleteDeployment Action = "DeleteDeployment"
	// ActionEnsureAutoscaler creates or updates the HorizontalPodAutoscaler performer-<name>
	// (DesiredAutoscaler); ActionDeleteAutoscaler deletes it (spec.autoscaling gone or made
	// external; a deleted Performer's goes with it by garbage collection).
	ActionEnsureAutoscaler Action = "EnsureAutoscaler"
	ActionDeleteAutoscaler Action = "DeleteAutoscaler"
	// ActionRemoveFinalizer removes v1alpha1.Finalizer; the Performer then goes away. No status
	// write follows it.
	ActionRemoveFinalizer Action = "RemoveFinalizer"
)

// Facts are what the controller observed in one pass.
type Facts struct {
	// Now is the time of the pass (used for the failure backoff only).
	Now time.Time
	// Generation is the Performer's metadata.generation.
	Generation int64
	// Deleting is true once the Performer has a deletionTimestamp. It never becomes false again.
	Deleting bool
	// HasFinalizer is true when the Performer carries v1alpha1.Finalizer.
	HasFinalizer bool
	// Conditions are the Performer's status.conditions from the previous pass: the machine's
	// memory (the previous phase is Phases.Of(Conditions)).
	Conditions []metav1.Condition
	// RunningImage is status.image: the image of the last Pod seen Ready with the then-current
	// spec; "" if no Pod has ever been Ready. It tells an upgrade from a first create.
	RunningImage string
	// DesiredImage is spec.image.
	DesiredImage string
	// DesiredHash is the spec hash of the Pod the current spec asks for (SpecHash).
	DesiredHash string
	// SpecError, when non-empty, says why the desired Pod cannot be built (e.g. a
	// hardware.ConflictError); the Performer is Failed with reason InvalidSpec.
	SpecError string
	// Pod is the observed Pod performer-<name>, nil if none exists. With RollingUpdate it
	// is the Deployment's newest Pod of the desired spec hash instead (nil while there is
	// none), and BarePod says whether a Pod performer-<name> of the Recreate strategy is left.
	Pod *Pod
	// RollingUpdate is spec.strategy == RollingUpdate: the performer runs as a one-replica
	// Deployment performer-<name> (maxSurge 1, maxUnavailable 0).
	RollingUpdate bool
	// Deployment is the observed Deployment performer-<name>, nil if none exists.
	Deployment *Deployment
	// BarePod is true when a Pod performer-<name> controlled by the Performer exists while
	// RollingUpdate is on (left from the Recreate strategy): deleted once the Deployment's
	// Pod is Ready.
	BarePod bool
	// Service is the observed Service performer-<name>.
	Service Service
	// Rejection, when non-nil, is an earlier pass's write the API server rejected for good
	// (failure.Rejection): Failed with reason Rejected and the API server's message; the
	// rejected action is withheld until Rejection.RetryAt, then tried again.
	Rejection *failure.Rejection
	// MissingRefs are the problems with the Secrets and ConfigMaps spec.envFrom references
	// (failure.Problems: "Secret ns/name not found", "Secret ns/name has no key K"). While
	// any is missing no Pod is created or re-created (Failed, reason ReferenceNotFound); a
	// running Pod is left alone.
	MissingRefs []string
	// MissingNodeLabels are the Pod's node-selector entries no node carries
	// (hardware.MissingLabels), read only while the Pod is unschedulable; they are added to
	// the scheduler's message (e.g. which TEE type's label no node has).
	MissingNodeLabels []string
	// PodDisruptions is status.podDisruptions from the previous pass (nil when none): the
	// count of Pods ended from outside that the bound applies to.
	PodDisruptions *v1alpha1.PodDisruptions
	// EndedPods (RollingUpdate) are the Deployment's other Pods that ended or are ending from
	// outside (EndedPods in objects.go): an evicted Pod is Terminating while the ReplicaSet's
	// replacement is already the newest, so Pod alone would never show it.
	EndedPods []failure.Disruption
	// Autoscaling is spec.autoscaling (RollingUpdate only; nil: none): an autoscaler owns the
	// Deployment's replicas, the performer is Running while at least minReplicas of the
	// current spec are Ready, and the reconciler owns the HorizontalPodAutoscaler Autoscaler
	// unless External.
	Autoscaling *v1alpha1.Autoscaling
	// Autoscaler is the HorizontalPodAutoscaler performer-<name> (autoscale.Facts);
	// AutoscalerDesired its status.desiredReplicas (0: not computed yet).
	Autoscaler        autoscale.Object
	AutoscalerDesired int32
	// ReadyReplicas are the performer's Ready Pods of the desired spec hash (RollingUpdate:
	// ReadyPods; Recreate: 1 while its Pod of the desired spec is Ready).
	ReadyReplicas int32
}

// Service facts.
type Service struct {
	// Exists is true when the Service performer-<name> exists.
	Exists bool
	// Foreign is true when it exists but is not controlled by this Performer.
	Foreign bool
	// UpToDate is true when it exists and its type, ports and selector are the desired ones.
	UpToDate bool
}

// Deployment facts (RollingUpdate).
type Deployment struct {
	// Foreign is true when the Deployment is not controlled by this Performer.
	Foreign bool
	// Deleting is true once it has a deletionTimestamp.
	Deleting bool
	// SpecHash is its pod template's v1alpha1.AnnotationSpecHash annotation.
	SpecHash string
	// Replicas and CurrentReplicas are its spec.replicas (what the autoscaler, or the
	// reconciler, last set) and status.replicas (its pods now).
	Replicas, CurrentReplicas int32
	// ScaleDiffers: without spec.autoscaling, its spec.replicas is not 1 (autoscaling was
	// removed, or someone scaled it): ApplyDeployment puts the count back.
	ScaleDiffers bool
}

// Pod facts (see PodFacts for how they are read from a corev1.Pod).
type Pod struct {
	// Name and UID are the Pod's metadata.name and metadata.uid.
	Name, UID string
	// Foreign is true when the Pod is not controlled by this Performer.
	Foreign bool
	// Deleting is true once the Pod has a deletionTimestamp.
	Deleting bool
	// SpecHash is the Pod's v1alpha1.AnnotationSpecHash annotation.
	SpecHash string
	// Phase is status.phase (Pending, Running, Succeeded, Failed, Unknown).
	Phase corev1.PodPhase
	// Reason and Message are status.reason/status.message (e.g. "Evicted", "The node was low on ...").
	Reason, Message string
	// NodeName is spec.nodeName ("" until bound).
	NodeName string
	// Scheduled is the PodScheduled condition (Status "" when absent).
	Scheduled PodCondition
	// Ready is true when the Ready condition is True.
	Ready bool
	// Containers are the container states (init containers excluded).
	Containers []Container
	// Disrupted, when non-nil, says the Pod ended (or is ending) from outside: evicted,
	// preempted, deleted, its node shut down or gone (failure.EndedFromOutside).
	Disrupted *failure.Disruption
}

// PodCondition is one Pod condition's status, reason and message, verbatim.
type PodCondition struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// Container is one container's state as the kubelet reports it.
type Container struct {
	Name string
	// Waiting is set while the container waits (ContainerCreating, ErrImagePull, CrashLoopBackOff, ...).
	Waiting *ContainerState
	// Terminated is set while the container is terminated (before a restart).
	Terminated *ContainerState
	// LastTerminated is the previous termination (lastState.terminated), if any.
	LastTerminated *ContainerState
}

// ContainerState is a waiting or terminated state: the kubelet's reason and message verbatim,
// plus the exit code for terminations.
type ContainerState struct {
	Reason   string
	Message  string
	ExitCode int32
}

// Event is a Kubernetes Event to emit for a phase change.
type Event struct {
	// Type is corev1.EventTypeNormal, or corev1.EventTypeWarning for Failed.
	Type string
	// Reason is the active condition's reason (e.g. Running's PodReady, Failed's HardwareUnavailable).
	Reason string
	// Message is the active condition's message (for Failed: the scheduler's or kubelet's own).
	Message string
}

// Decision is the machine's output for one pass.
type Decision struct {
	// Phase is Phases.Of(Conditions).
	Phase Phase
	// Conditions are Ready, Reconciling, Stalled, Scheduled, ServiceReady, with
	// ObservedGeneration = Facts.Generation and no LastTransitionTime (the controller's
	// meta.SetStatusCondition keeps or sets it).
	Conditions []metav1.Condition
	// Actions to take, in order.
	Actions []Action
	// RequeueAfter > 0 asks for another pass after that delay (watches on the Pod and Service
	// trigger passes too).
	RequeueAfter time.Duration
	// Backoff is true when RequeueAfter is a failure backoff (Failed).
	Backoff bool
	// Image is the new status.image.
	Image string
	// UpgradeFinished is true when this pass ends an upgrade (Upgrading/Failed → Running with a
	// new Pod); the controller sets status.lastUpgradeTime.
	UpgradeFinished bool
	// Event, when non-nil, is emitted on the Performer (phase changed, or the failure reason changed).
	Event *Event
	// PodDisruptions is the new status.podDisruptions: Facts.PodDisruptions with this pass's
	// Pod ended from outside counted (failure.CountDisruptions).
	PodDisruptions *v1alpha1.PodDisruptions
	// DesiredReplicas, CurrentReplicas and ReadyReplicas are status.desiredReplicas,
	// currentReplicas and readyReplicas (replicaCounts).
	DesiredReplicas, CurrentReplicas, ReadyReplicas int32
}

var allPhases = []Phase{
	v1alpha1.PerformerPending, v1alpha1.PerformerCreating, v1alpha1.PerformerScheduling,
	v1alpha1.PerformerRunning, v1alpha1.PerformerUpgrading, v1alpha1.PerformerFailed,
	v1alpha1.PerformerTerminating,
}

// Transitions is the set of legal phase changes, From → {To}; Transitions.Check returns a
// *lifecycle.TransitionError for any other. Hourglass's process flows draw the forward path; a
// level-triggered controller also sees skips (a Pod created and Ready in one pass), a lost Pod
// or Service (back to Creating or Scheduling) and the scheduler's or kubelet's own retry healing
// Failed. Nothing returns to Pending, Upgrading never falls back to Creating or Scheduling, and
// Terminating is final; "" (first pass, status wiped) may go anywhere.
var Transitions = lifecycle.Table[Phase]{Kind: "Performer phase", Edges: func() lifecycle.Transitions[Phase] {
	m := lifecycle.Transitions[Phase]{"": allPhases}
	for _, from := range allPhases {
		switch from {
		case v1alpha1.PerformerTerminating:
			m[from] = []Phase{v1alpha1.PerformerTerminating}
		case v1alpha1.PerformerUpgrading:
			m[from] = []Phase{v1alpha1.PerformerUpgrading, v1alpha1.PerformerRunning, v1alpha1.PerformerFailed, v1alpha1.PerformerTerminating}
		case v1alpha1.PerformerPending:
			m[from] = []Phase{v1alpha1.PerformerPending, v1alpha1.PerformerCreating, v1alpha1.PerformerScheduling, v1alpha1.PerformerRunning, v1alpha1.PerformerFailed, v1alpha1.PerformerTerminating}
		default:
			for _, to := range allPhases {
				if to != v1alpha1.PerformerPending {
					m[from] = append(m[from], to)
				}
			}
		}
	}
	return m
}()}

// Phases derives the phase from conditions (Phases.Of): Ready=True → Running; Stalled=True →
// Failed; Reconciling=True → the phase its reason names (Pending, Creating, Scheduling,
// UpgradeInProgress → Upgrading, Terminating, PodDisrupted → Creating); otherwise "" (never
// reconciled, or conditions written by someone else).
var Phases = lifecycle.Phases[Phase]{
	Ready:   v1alpha1.PerformerRunning,
	Stalled: v1alpha1.PerformerFailed,
	Reconciling: map[string]Phase{
		ReasonPending:           v1alpha1.PerformerPending,
		ReasonCreating:          v1alpha1.PerformerCreating,
		ReasonScheduling:        v1alpha1.PerformerScheduling,
		ReasonUpgradeInProgress: v1alpha1.PerformerUpgrading,
		ReasonTerminating:       v1alpha1.PerformerTerminating,
		ReasonPodDisrupted:      v1alpha1.PerformerCreating,
	},
}

// state is the outcome of one pass before it is spelled out as failure.
type state struct {
	phase   Phase
	reason  string // the active condition's reason
	message string
}

// Decide runs one pass of the lifecycle. It is total over Facts: every combination yields a
// Decision, except that a phase change outside Transitions (possible only if the conditions in
// Facts were not written by this machine) is a *lifecycle.TransitionError and the Decision must
// not be acted upon.
func Decide(f Facts) (Decision, error) {
	prev := Phases.Of(f.Conditions)
	d := Decision{Image: f.RunningImage, PodDisruptions: f.PodDisruptions}
	var st state
	if f.Deleting {
		st = terminate(f, &d)
	} else {
		st = converge(f, prev, &d)
	}

	if r := f.Rejection; r != nil && !f.Deleting && slices.Contains(d.Actions, Action(r.Action)) {
		st = failed(ReasonRejected, r.ConditionMessage())
		if r.Holds(f.Now) {
			d.Actions = failure.Without(d.Actions, r.Action)
		}
	}
	if st.phase == v1alpha1.PerformerFailed {
		d.Backoff = true
		d.RequeueAfter = backoff(f)
		if w := f.Rejection.Wait(f.Now); w > 0 && st.reason == ReasonRejected {
			d.RequeueAfter = min(max(w, BackoffMin), BackoffMax) // the rejected action's retry
		}
	}
	d.DesiredReplicas, d.CurrentReplicas, d.ReadyReplicas = replicaCounts(f)
	d.Conditions = conditions(f, st)
	d.Phase = Phases.Of(d.Conditions)
	if err := Transitions.Check(prev, d.Phase); err != nil {
		return Decision{}, err
	}
	d.Event = event(f.Conditions, prev, st)
	return d, nil
}

// converge is the pass of a Performer that is not being deleted: the finalizer and the
// Service first, then the pod's state (podState), Upgrading while an upgrade is under way.
func converge(f Facts, prev Phase, d *Decision) state {
	pod := f.Pod
	ownPod := pod != nil && !pod.Foreign
	if !f.HasFinalizer {
		// Hourglass: [*] → Pending → Creating in one pass: the finalizer is the first action, so
		// it is on before anything is created (the controller stops the pass if adding it
		// fails) and the owned objects are always cleaned up. Later, if someone removed
		// it, it is put back the same way.
		d.Actions = append(d.Actions, ActionAddFinalizer)
	}
	if !f.Service.Foreign && !f.Service.UpToDate && f.SpecError == "" {
		d.Actions = append(d.Actions, ActionEnsureService)
	}
	upgrading := prev != v1alpha1.PerformerPending && f.RunningImage != "" &&
		(f.RunningImage != f.DesiredImage || prev == v1alpha1.PerformerUpgrading ||
			(ownPod && pod.SpecHash != f.DesiredHash) ||
			(f.RollingUpdate && f.Deployment != nil && !f.Deployment.Foreign && f.Deployment.SpecHash != f.DesiredHash))
	seen := f.EndedPods
	if dis := disrupted(f); dis != nil {
		seen = append([]failure.Disruption{*dis}, seen...)
	}
	if len(seen) > 0 {
		d.PodDisruptions = failure.CountDisruptions(f.PodDisruptions, seen, f.Now)
	}
	autoscalerActions(f, d)
	var st state
	if f.RollingUpdate {
		st = rollingState(f, d, upgrading)
	} else {
		if dep := f.Deployment; dep != nil && !dep.Foreign && !dep.Deleting {
			// Back to Recreate: the Deployment goes, the bare Pod takes over.
			d.Actions = append(d.Actions, ActionDeleteDeployment)
		}
		st = podState(f, d, upgrading)
	}
	inProgress := st.phase == v1alpha1.PerformerCreating || st.phase == v1alpha1.PerformerScheduling || st.phase == v1alpha1.PerformerUpgrading
	if n := boundReplicas(f); inProgress && failure.DisruptedRepeatedly(d.PodDisruptions, n, f.Now) {
		// Replacements keep ending: the bound (status.podDisruptions) is reached.
		return failed(ReasonPodDisruptedRepeatedly, failure.RepeatedMessage(d.PodDisruptions, n))
	}
	return st
}

// disrupted is the Performer's Pod's disruption when it ended from outside, nil otherwise. A
// deletion is the reconciler's own (not a disruption) when the Pod is of an older spec (an
// upgrade deletes it).
func disrupted(f Facts) *failure.Disruption {
	p := f.Pod
	if p == nil || p.Foreign || p.Disrupted == nil || (p.Disrupted.Reason == failure.DisruptionDeleted && p.SpecHash != f.DesiredHash) {
		return nil
	}
	return p.Disrupted
}

// inProgressState is the state of a pass under way: Upgrading whenever an upgrade is under
// way (reason UpgradeInProgress, the message prefixed with both images), otherwise phase p
// with reason and msg.
func inProgressState(f Facts, upgrading bool, p Phase, reason, msg string) state {
	if upgrading {
		return state{v1alpha1.PerformerUpgrading, ReasonUpgradeInProgress, fmt.Sprintf("upgrading from %s to %s: %s", f.RunningImage, f.DesiredImage, msg)}
	}
	return state{p, reason, msg}
}

// disruptedState is the state while the replacement of a Pod ended from outside is awaited:
// Creating with reason PodDisrupted (Upgrading during an upgrade); how says who replaces it.
func disruptedState(f Facts, d *Decision, dis *failure.Disruption, upgrading bool, how string) state {
	return inProgressState(f, upgrading, v1alpha1.PerformerCreating, ReasonPodDisrupted, failure.WaitingMessage(*dis, d.PodDisruptions, 1)+"; "+how)
}

// rollingState is podState for spec.strategy RollingUpdate: the Deployment carries the spec
// (a spec change updates it, and the Deployment controller keeps the old Pod until the new one
// is Ready); the Performer reads the newest Pod of the desired spec for its phase, with the
// same scheduler and kubelet failures as a bare Pod.
func rollingState(f Facts, d *Decision, upgrading bool) state {
	pod, dep := f.Pod, f.Deployment
	progress := func(p Phase, reason, msg string) state { return inProgressState(f, upgrading, p, reason, msg) }
	switch {
	case f.SpecError != "":
		return failed(ReasonInvalidSpec, f.SpecError)
	case f.Service.Foreign:
		return failed(ReasonOwnershipConflict, "a Service with the performer's name exists and is not controlled by this Performer")
	case dep != nil && dep.Foreign:
		return failed(ReasonOwnershipConflict, "a Deployment with the performer's name exists and is not controlled by this Performer")
	case autoscale.WantsAutoscaler(f.Autoscaling) && f.Autoscaler.Foreign:
		return failed(ReasonOwnershipConflict, "a HorizontalPodAutoscaler with the performer's name exists and is not controlled by this Performer")
	case len(f.MissingRefs) > 0 && (dep == nil || dep.SpecHash != f.DesiredHash):
		return failed(ReasonReferenceNotFound, "spec.envFrom: "+strings.Join(f.MissingRefs, "; ")+"; the performer proceeds on its own once they exist")
	case dep == nil:
		d.Actions = append(d.Actions, ActionApplyDeployment)
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "creating the deployment")
	case dep.Deleting:
		d.RequeueAfter = WaitPoll
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "waiting for the old deployment to be deleted")
	case dep.SpecHash != f.DesiredHash:
		d.Actions = append(d.Actions, ActionApplyDeployment)
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "spec changed: rolling out a new pod (the running one serves until it is Ready)")
	case pod == nil:
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "waiting for the deployment's pod")
	case pod.Phase == corev1.PodFailed || pod.Phase == corev1.PodSucceeded:
		// The ReplicaSet replaces it: a Pod ended from outside is waited for, one that
		// failed on its own is a failure; say why it ended.
		if dis := disrupted(f); dis != nil {
			return disruptedState(f, d, dis, upgrading, "the deployment replaces it")
		}
		return failed(ReasonPodFailed, strings.TrimSuffix(podFailedMessage(pod), "; re-creating it")+"; the deployment replaces it")
	}
	if dep.ScaleDiffers {
		d.Actions = append(d.Actions, ActionApplyDeployment) // the count back to 1
	}
	if s, ok := podFailure(pod, f.MissingNodeLabels); ok {
		return s
	}
	if pod.Ready && f.Service.UpToDate {
		return rollingReady(f, d, upgrading)
	}
	if dis := latestEnded(f.EndedPods); dis != nil {
		// The Pod this one replaces ended from outside and is still there: say so.
		how := "the deployment replaces it"
		if pod.Name != "" {
			how += " (pod " + pod.Name + ", not Ready yet)"
		}
		return disruptedState(f, d, dis, upgrading, how)
	}
	return progress(v1alpha1.PerformerScheduling, ReasonScheduling, progressMessage(pod, f.Service))
}

// autoscalerActions are a pass's HorizontalPodAutoscaler writes: ensure it while
// spec.autoscaling wants one (not external; none while the spec is invalid or it is someone
// else's), delete ours when it does not (autoscaling removed or made external).
func autoscalerActions(f Facts, d *Decision) {
	switch wants := autoscale.WantsAutoscaler(f.Autoscaling); {
	case wants && f.SpecError == "" && !f.Autoscaler.Foreign && !f.Autoscaler.UpToDate:
		d.Actions = append(d.Actions, ActionEnsureAutoscaler)
	case !wants && f.Autoscaler.Exists && !f.Autoscaler.Foreign:
		d.Actions = append(d.Actions, ActionDeleteAutoscaler)
	}
}

// replicaCounts are status.desiredReplicas, currentReplicas and readyReplicas: 1 desired
// without spec.autoscaling, else the autoscaler's (autoscale.Desire); the Deployment's pods
// (RollingUpdate, at least the Ready ones) or the bare Pod (Recreate); the Ready Pods of the
// current spec.
func replicaCounts(f Facts) (desired, current, ready int32) {
	var depReplicas int32
	if dep := f.Deployment; f.RollingUpdate && dep != nil && !dep.Foreign {
		depReplicas, current = dep.Replicas, dep.CurrentReplicas
	} else if !f.RollingUpdate && f.Pod != nil && !f.Pod.Foreign {
		current = 1
	}
	// The Deployment's status.replicas can lag its Ready pods (the Deployment controller
	// writes it after the pods exist): the pods there are at least those Ready.
	return autoscale.Desire(f.Autoscaling, 1, f.Autoscaler, f.AutoscalerDesired, depReplicas), max(current, f.ReadyReplicas), f.ReadyReplicas
}

// boundReplicas is the replica count the disruption bound scales with: 1, or under
// spec.autoscaling the replicas asked for now (at least minReplicas).
func boundReplicas(f Facts) int32 {
	if f.Autoscaling == nil {
		return 1
	}
	desired, _, _ := replicaCounts(f)
	return max(desired, f.Autoscaling.MinReplicas, 1)
}

// rollingReady is the state of a RollingUpdate performer whose status pod is Ready behind an
// up-to-date Service: Running (the bare Pod of a Recreate strategy left goes), except under
// spec.autoscaling while fewer than minReplicas pods of the current spec serve (Ready, and no
// more counted than the autoscaler asks for: autoscale.Serving) or the HorizontalPodAutoscaler
// is not in place yet (Scheduling, the message naming the bounds). A Running performer whose
// autoscaler is moving the count says so (autoscale.Scaling); that is no failure.
func rollingReady(f Facts, d *Decision, upgrading bool) state {
	a := f.Autoscaling
	target, current := int32(-1), int32(0)
	if dep := f.Deployment; dep != nil && !dep.Foreign {
		target, current = dep.Replicas, dep.CurrentReplicas
	}
	ready := autoscale.Serving(f.ReadyReplicas, target)
	if a != nil {
		msg := autoscale.Bounds(a, ready)
		switch {
		case ready < autoscale.Needed(a):
			return inProgressState(f, upgrading, v1alpha1.PerformerScheduling, ReasonScheduling, msg)
		case autoscale.WantsAutoscaler(a) && !f.Autoscaler.UpToDate:
			return inProgressState(f, upgrading, v1alpha1.PerformerScheduling, ReasonScheduling, msg+"; creating or updating the HorizontalPodAutoscaler")
		}
	}
	if f.BarePod {
		d.Actions = append(d.Actions, ActionDeletePod)
	}
	d.Image = f.DesiredImage
	d.UpgradeFinished = upgrading
	msg := readyMessage(f.Pod)
	if a != nil {
		msg += "; " + autoscale.Bounds(a, ready) + autoscale.Scaling(target, current, ready)
	}
	return state{v1alpha1.PerformerRunning, ReasonPodReady, msg}
}

// latestEnded is the Pod of ended that ended last, nil when ended is empty.
func latestEnded(ended []failure.Disruption) *failure.Disruption {
	var out *failure.Disruption
	for i := range ended {
		if out == nil || ended[i].At.After(out.At) {
			out = &ended[i]
		}
	}
	return out
}

// podState is the outcome for the Performer's pod (with the actions it needs): failed for a
// spec error, a foreign object or a missing reference, else create, replace or wait for the
// pod, and Running once it is ready behind an up-to-date Service.
func podState(f Facts, d *Decision, upgrading bool) state {
	pod := f.Pod
	// progress is the in-progress state: Upgrading whenever an upgrade is under way,
	// otherwise the given phase.
	progress := func(p Phase, reason, msg string) state { return inProgressState(f, upgrading, p, reason, msg) }
	switch {
	case f.SpecError != "":
		return failed(ReasonInvalidSpec, f.SpecError)
	case f.Service.Foreign:
		return failed(ReasonOwnershipConflict, "a Service with the performer's name exists and is not controlled by this Performer")
	case pod != nil && pod.Foreign:
		return failed(ReasonOwnershipConflict, "a Pod with the performer's name exists and is not controlled by this Performer")
	case len(f.MissingRefs) > 0 && (pod == nil || pod.SpecHash != f.DesiredHash):
		return failed(ReasonReferenceNotFound, "spec.envFrom: "+strings.Join(f.MissingRefs, "; ")+"; the performer proceeds on its own once they exist")
	case pod == nil:
		d.Actions = append(d.Actions, ActionCreatePod)
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "creating the pod")
	case pod.Deleting:
		d.RequeueAfter = WaitPoll
		if dis := disrupted(f); dis != nil {
			return disruptedState(f, d, dis, upgrading, "the reconciler creates a new pod once it is gone")
		}
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "waiting for the old pod to be deleted")
	case pod.SpecHash != f.DesiredHash:
		// Hourglass: Upgrading → PodRecreation; also a spec fix heals a Failed Performer.
		d.Actions = append(d.Actions, ActionDeletePod)
		return progress(v1alpha1.PerformerCreating, ReasonCreating, "spec changed: deleting the pod to re-create it")
	case pod.Phase == corev1.PodFailed || pod.Phase == corev1.PodSucceeded:
		// Hourglass: Failed → Creating (retry): a terminal Pod never restarts; re-create it.
		// Ended from outside, it is no failure: the replacement is awaited.
		d.Actions = append(d.Actions, ActionDeletePod)
		if dis := disrupted(f); dis != nil {
			return disruptedState(f, d, dis, upgrading, "the reconciler deletes it and creates a new one")
		}
		return failed(ReasonPodFailed, podFailedMessage(pod))
	}
	if s, ok := podFailure(pod, f.MissingNodeLabels); ok {
		return s
	}
	if pod.Ready && f.Service.UpToDate {
		d.Image = f.DesiredImage
		d.UpgradeFinished = upgrading
		return state{v1alpha1.PerformerRunning, ReasonPodReady, readyMessage(pod)}
	}
	return progress(v1alpha1.PerformerScheduling, ReasonScheduling, progressMessage(pod, f.Service))
}

// terminate is the Terminating pass (Hourglass: Terminating → ServiceCleanup → PodCleanup → [*]).
func terminate(f Facts, d *Decision) state {
	st := state{v1alpha1.PerformerTerminating, ReasonTerminating, ""}
	if !f.HasFinalizer {
		st.message = "waiting for the API server to remove the Performer"
		return st
	}
	svcLeft := f.Service.Exists && !f.Service.Foreign
	podLeft := (f.Pod != nil && !f.Pod.Foreign && !f.RollingUpdate) || f.BarePod
	depLeft := f.Deployment != nil && !f.Deployment.Foreign
	if svcLeft {
		d.Actions = append(d.Actions, ActionDeleteService)
	}
	if depLeft && !f.Deployment.Deleting {
		d.Actions = append(d.Actions, ActionDeleteDeployment)
	}
	if podLeft && (f.BarePod || !f.Pod.Deleting) {
		d.Actions = append(d.Actions, ActionDeletePod)
	}
	switch {
	case svcLeft || podLeft || depLeft:
		var left []string
		if svcLeft {
			left = append(left, "service")
		}
		if depLeft {
			left = append(left, "deployment")
		}
		if podLeft {
			left = append(left, "pod")
		}
		st.message = "deleting the " + strings.Join(left, " and ")
		d.RequeueAfter = WaitPoll
	default:
		d.Actions = append(d.Actions, ActionRemoveFinalizer)
		st.message = "service and pod deleted; removing finalizer " + v1alpha1.Finalizer
	}
	return st
}

func failed(reason, msg string) state {
	return state{v1alpha1.PerformerFailed, reason, msg}
}

// podFailure reports a non-terminal Pod that cannot progress: unschedulable (scheduler's
// message verbatim), image pull errors and container start errors (kubelet's reason and
// message verbatim).
func podFailure(p *Pod, missingLabels []string) (state, bool) {
	if p.NodeName == "" && p.Scheduled.Status == corev1.ConditionFalse && p.Scheduled.Reason == corev1.PodReasonUnschedulable {
		msg := p.Scheduled.Message
		if len(missingLabels) > 0 {
			msg += "; no node has the label " + strings.Join(missingLabels, ", no node has the label ")
		}
		return failed(unschedulableReason(p.Scheduled.Message), msg), true
	}
	for _, c := range p.Containers {
		if w := c.Waiting; w != nil && failure.ImagePullReasons[w.Reason] {
			return failed(ReasonImagePullFailed, containerMessage(c.Name, w)), true
		}
	}
	for _, c := range p.Containers {
		if w := c.Waiting; w != nil && failure.ContainerStartReasons[w.Reason] {
			msg := containerMessage(c.Name, w)
			if lt := c.LastTerminated; lt != nil {
				msg += "; last terminated: " + terminatedMessage(lt)
			}
			return failed(ReasonContainerStartFailed, msg), true
		}
		if t := c.Terminated; t != nil && t.ExitCode != 0 {
			return failed(ReasonContainerStartFailed, fmt.Sprintf("container %s terminated: %s", c.Name, terminatedMessage(t))), true
		}
	}
	return state{}, false
}

// unschedulableReason tells resource exhaustion ("0/7 nodes are available: 3 Insufficient
// nvidia.com/gpu, ...": Hourglass's HardwareValidation → Failed) from no matching node at all
// (selectors, taints, runtime class: Hourglass's NodeSelection → Failed).
func unschedulableReason(msg string) string {
	if strings.Contains(msg, "Insufficient ") {
		return ReasonHardwareUnavailable
	}
	return ReasonSchedulingFailed
}

func containerMessage(name string, s *ContainerState) string {
	if s.Message == "" {
		return fmt.Sprintf("container %s: %s", name, s.Reason)
	}
	return fmt.Sprintf("container %s: %s: %s", name, s.Reason, s.Message)
}

func terminatedMessage(t *ContainerState) string {
	msg := fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
	if t.Message != "" {
		msg += ": " + t.Message
	}
	return msg
}

func podFailedMessage(p *Pod) string {
	msg := fmt.Sprintf("pod %s", p.Phase)
	if p.Reason != "" {
		msg += ": " + p.Reason
	}
	if p.Message != "" {
		msg += ": " + p.Message
	}
	for _, c := range p.Containers {
		if t := c.Terminated; t != nil {
			msg += fmt.Sprintf("; container %s terminated: %s", c.Name, terminatedMessage(t))
		}
	}
	return msg + "; re-creating it"
}

func readyMessage(p *Pod) string {
	return "pod is Ready on node " + p.NodeName
}

func progressMessage(p *Pod, svc Service) string {
	switch {
	case p.NodeName == "" && p.Scheduled.Status != corev1.ConditionTrue:
		if p.Scheduled.Message != "" {
			return "waiting for the scheduler: " + p.Scheduled.Message
		}
		return "waiting for the scheduler"
	case !p.Ready:
		msg := "pod bound to node " + p.NodeName + ", waiting for it to become Ready"
		for _, c := range p.Containers {
			if c.Waiting != nil && c.Waiting.Reason != "" {
				msg += "; " + containerMessage(c.Name, c.Waiting)
			}
		}
		return msg
	case !svc.Exists:
		return "pod is Ready; creating the service"
	default:
		return "pod is Ready; updating the service"
	}
}

// backoff is the Failed re-check delay: how long Stalled has been True, within [BackoffMin, BackoffMax].
func backoff(f Facts) time.Duration {
	return failure.Backoff(f.Conditions, v1alpha1.ConditionStalled, f.Now, BackoffMin, BackoffMax)
}

// conditions spells a state out as the five failure.
func conditions(f Facts, st state) []metav1.Condition {
	cond := func(t string, on bool, reason, msg string) metav1.Condition {
		return failure.Condition(t, on, reason, msg, f.Generation)
	}
	out := failure.KStatus(st.phase == v1alpha1.PerformerRunning, st.phase == v1alpha1.PerformerFailed, st.reason, st.message, f.Generation)

	p := f.Pod
	switch {
	case p == nil:
		out = append(out, cond(ConditionScheduled, false, ReasonPodAbsent, "no pod"))
	case p.Foreign:
		out = append(out, cond(ConditionScheduled, false, ReasonOwnershipConflict, "the pod is not controlled by this Performer"))
	case p.NodeName != "" || p.Scheduled.Status == corev1.ConditionTrue:
		out = append(out, cond(ConditionScheduled, true, ReasonScheduled, "bound to node "+p.NodeName))
	case p.Scheduled.Status == corev1.ConditionFalse && p.Scheduled.Reason == corev1.PodReasonUnschedulable:
		out = append(out, cond(ConditionScheduled, false, unschedulableReason(p.Scheduled.Message), p.Scheduled.Message))
	default:
		out = append(out, cond(ConditionScheduled, false, ReasonWaitingForScheduler, "waiting for the scheduler"))
	}

	s := f.Service
	switch {
	case s.Foreign:
		out = append(out, cond(ConditionServiceReady, false, ReasonOwnershipConflict, "the service is not controlled by this Performer"))
	case !s.Exists:
		out = append(out, cond(ConditionServiceReady, false, ReasonServiceMissing, "no service"))
	case !s.UpToDate:
		out = append(out, cond(ConditionServiceReady, false, ReasonServiceOutOfDate, "the service's ports or selector differ from the spec"))
	default:
		out = append(out, cond(ConditionServiceReady, true, ReasonServiceReady, "service routes the grpc port to the pod"))
	}
	return out
}

// event returns the Event for this pass: on a phase change, or when a Failed Performer fails
// for a different reason or with a different message.
func event(prevConds []metav1.Condition, prev Phase, st state) *Event {
	typ := corev1.EventTypeNormal
	if st.phase == v1alpha1.PerformerFailed {
		typ = corev1.EventTypeWarning
	}
	ev := &Event{Type: typ, Reason: st.reason, Message: st.message}
	if prev != st.phase {
		return ev
	}
	if st.phase == v1alpha1.PerformerFailed {
		for _, c := range prevConds {
			if c.Type == v1alpha1.ConditionStalled && (c.Reason != st.reason || c.Message != st.message) {
				return ev
			}
		}
	}
	return nil
}
