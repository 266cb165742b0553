// Package aggregator is the Aggregator lifecycle as a pure machine: facts about an Aggregator and
// its objects go in; phase, conditions, actions and requeue come out. No controller-runtime or
// Terraform here; reconciler/aggregator_controller.go gathers facts, calls Decide, writes status
// once and acts. It runs what Hourglass's Helm chart runs (a one-replica StatefulSet, a headless
// Service, a config.yaml Secret rendered in Hourglass's format, keys kept out of it). Phases:
// Pending → Creating → Running ↔ Updating, Failed (Stalled) on what needs the user, Terminating;
// a pod waiting only for its volume claim is progress. Every decision carries Ready, Reconciling,
// Stalled, ConfigReady in that order, exactly one of the first three True; the phase is derived
// from them (Phases.Of), and the previous pass's conditions are the machine's memory.
package aggregator

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// Phase is an Aggregator's status.phase.
type Phase = v1alpha1.AggregatorPhase

// ConditionConfigReady is True when the config Secret holds the config rendered from the
// current spec (every operator key reference exists).
const ConditionConfigReady = "ConfigReady"

// Condition reasons.
const (
	ReasonAvailable         = "PodReady"             // Ready=True
	ReasonPending           = "Pending"              // Reconciling: adding the finalizer
	ReasonCreating          = "Creating"             // Reconciling: first rollout
	ReasonUpdateInProgress  = "UpdateInProgress"     // Reconciling: Updating
	ReasonTerminating       = "Terminating"          // Reconciling: Terminating
	ReasonUnschedulable     = "Unschedulable"        // Stalled: the scheduler's message
	ReasonPodFailing        = "PodFailing"           // Stalled: the kubelet's image pull or start failure
	ReasonSecretNotFound    = "SecretNotFound"       // Stalled / ConfigReady=False
	ReasonInvalidSpec       = "InvalidSpec"          // Stalled: the StatefulSet cannot be built
	ReasonOwnershipConflict = "OwnershipConflict"    // Stalled: a namesake object is not ours
	ReasonConfigRendered    = "ConfigRendered"       // ConfigReady=True
	ReasonConfigPending     = "ConfigPending"        // ConfigReady=False: being written
	ReasonRejected          = failure.ReasonRejected // Stalled: the API server rejected a write
	reasonWaitingForInputs  = "WaitingForInputs"     // ConfigReady=False: a blocked input
	reasonNotRendered       = "ConfigNotRendered"    // ConfigReady=False: Pending or Terminating
)

// Timing.
const (
	// BackoffMin and BackoffMax bound the Failed re-check delay (doubling with time failed).
	BackoffMin = 5 * time.Second
	BackoffMax = 5 * time.Minute
	// WaitPoll is the requeue delay while owned objects go away (watches usually trigger sooner).
	WaitPoll = 2 * time.Second
)

// Action is one thing the controller must do this pass, in order.
type Action string

const (
	ActionAddFinalizer Action = "AddFinalizer"
	// ActionApplySecret creates or updates the config Secret aggregator-<name>-config.
	ActionApplySecret Action = "ApplySecret"
	// ActionApplyService creates or updates the headless Service aggregator-<name>.
	ActionApplyService Action = "ApplyService"
	// ActionApplyStatefulSet creates or updates the StatefulSet aggregator-<name> from the spec.
	ActionApplyStatefulSet Action = "ApplyStatefulSet"
	// ActionDeleteStatefulSet, ActionDeleteService, ActionDeleteSecret and ActionDeleteClaims
	// clean up while Terminating (the claims: spec.persistence's, which the StatefulSet's
	// retention policy would delete too).
	ActionDeleteStatefulSet Action = "DeleteStatefulSet"
	ActionDeleteService     Action = "DeleteService"
	ActionDeleteSecret      Action = "DeleteSecret"
	ActionDeleteClaims      Action = "DeleteClaims"
	// ActionRemoveFinalizer removes v1alpha1.Finalizer; no status write follows it.
	ActionRemoveFinalizer Action = "RemoveFinalizer"
)

// Facts are what the controller observed in one pass.
type Facts struct {
	Now          time.Time
	Generation   int64
	Deleting     bool
	HasFinalizer bool
	// Conditions are the previous pass's status.conditions (Phases.Of gives the previous phase).
	Conditions []metav1.Condition
	// SpecError, when non-empty, says why the desired StatefulSet cannot be built.
	SpecError string
	// MissingRefs are the problems with the operator key Secrets (failure.Problems over Refs).
	MissingRefs []string
	// Rejection, when non-nil, is an earlier pass's write the API server rejected for good.
	Rejection *failure.Rejection
	// DesiredRevision is the revision (pod template hash) the spec asks for; "" with SpecError.
	DesiredRevision string
	// Secret and Service are the config Secret and the headless Service.
	Secret, Service Owned
	// StatefulSet is the observed StatefulSet aggregator-<name>, nil if none.
	StatefulSet *StatefulSet
	// Pod is the StatefulSet's pod aggregator-<name>-0 (PodFacts).
	Pod Pod
	// Claims is how many PersistentVolumeClaims of the Aggregator's pod exist (Terminating only).
	Claims int
}

// Owned are the facts of an object the Aggregator owns by name.
type Owned struct {
	// Exists is true when it exists; Foreign when it is not controlled by the Aggregator.
	Exists, Foreign bool
	// UpToDate is true when it exists, is the Aggregator's and matches the desired object.
	UpToDate bool
}

// StatefulSet facts, read verbatim from the StatefulSet's spec and status (StatefulSetFacts).
type StatefulSet struct {
	Foreign, Deleting bool
	// Revision is the pod template's gantry.dev/spec-hash annotation; Image its container's image.
	Revision, Image                string
	Generation, ObservedGeneration int64
	// ReadyReplicas .. UpdateRevision are status fields.
	ReadyReplicas, AvailableReplicas, UpdatedReplicas int32
	CurrentRevision, UpdateRevision                   string
}

// Pod facts of aggregator-<name>-0 (PodFacts).
type Pod struct {
	Exists bool
	Name   string
	// Revision is the pod's gantry.dev/spec-hash annotation.
	Revision string
	// Problems are the kubelet's image pull and start failures, verbatim.
	Problems []string
	// Unschedulable is the scheduler's message when it cannot place the pod; Binding the same
	// when it only waits for its claims to bind.
	Unschedulable, Binding string
}

// Event is a Kubernetes Event to emit on a phase change (or a new failure).
type Event struct {
	Type, Reason, Message string
}

// Decision is the machine's output for one pass.
type Decision struct {
	Phase      Phase
	Conditions []metav1.Condition
	Actions    []Action
	// RequeueAfter > 0 asks for another pass (watches trigger passes too).
	RequeueAfter time.Duration
	Event        *Event
}

// AllPhases lists the phases in lifecycle order.
var AllPhases = []Phase{
	v1alpha1.AggregatorPending, v1alpha1.AggregatorCreating, v1alpha1.AggregatorRunning,
	v1alpha1.AggregatorUpdating, v1alpha1.AggregatorFailed, v1alpha1.AggregatorTerminating,
}

// Transitions is the set of legal phase changes, From → {To}; a phase may stay as it is.
// Pending → Creating | Running (an existing StatefulSet adopted Ready) | Failed | Terminating;
// Creating, Running, Updating, Failed → any phase but Pending; Terminating → Terminating.
var Transitions = lifecycle.Table[Phase]{Kind: "Aggregator phase", Edges: func() lifecycle.Transitions[Phase] {
	m := lifecycle.Transitions[Phase]{"": AllPhases}
	for _, from := range AllPhases {
		switch from {
		case v1alpha1.AggregatorTerminating:
			m[from] = []Phase{v1alpha1.AggregatorTerminating}
		case v1alpha1.AggregatorPending:
			m[from] = []Phase{v1alpha1.AggregatorPending, v1alpha1.AggregatorCreating, v1alpha1.AggregatorRunning,
				v1alpha1.AggregatorFailed, v1alpha1.AggregatorTerminating}
		default:
			for _, to := range AllPhases {
				if to != v1alpha1.AggregatorPending {
					m[from] = append(m[from], to)
				}
			}
		}
	}
	return m
}()}

// Phases derives the phase from conditions (Phases.Of): Ready=True → Running; Stalled=True →
// Failed; Reconciling=True → the phase its reason names; otherwise "".
var Phases = lifecycle.Phases[Phase]{
	Ready:   v1alpha1.AggregatorRunning,
	Stalled: v1alpha1.AggregatorFailed,
	Reconciling: map[string]Phase{
		ReasonPending:          v1alpha1.AggregatorPending,
		ReasonCreating:         v1alpha1.AggregatorCreating,
		ReasonUpdateInProgress: v1alpha1.AggregatorUpdating,
		ReasonTerminating:      v1alpha1.AggregatorTerminating,
	},
}

type state struct {
	phase   Phase
	reason  string
	message string
}

func failed(reason, msg string) state {
	return state{phase: v1alpha1.AggregatorFailed, reason: reason, message: msg}
}

// Decide runs one pass. It is total over Facts: every combination yields a Decision, except
// that a phase change outside Transitions (possible only with conditions this machine did not
// write) is a *lifecycle.TransitionError and the Decision must not be acted upon.
func Decide(f Facts) (Decision, error) {
	prev := Phases.Of(f.Conditions)
	var d Decision
	var st state
	held := true
	switch {
	case f.Deleting:
		st = terminate(f, &d)
	case !f.HasFinalizer && (prev == "" || prev == v1alpha1.AggregatorPending):
		st = state{phase: v1alpha1.AggregatorPending, reason: ReasonPending, message: "adding finalizer " + v1alpha1.Finalizer}
		d.Actions = []Action{ActionAddFinalizer}
	default:
		if !f.HasFinalizer {
			d.Actions = append(d.Actions, ActionAddFinalizer)
		}
		st, held = live(f, prev, &d)
	}
	if r := f.Rejection; r != nil && !f.Deleting && slices.Contains(d.Actions, Action(r.Action)) {
		st = failed(ReasonRejected, r.ConditionMessage())
		if r.Holds(f.Now) {
			d.Actions = failure.Without(d.Actions, r.Action)
		}
	}
	if st.phase == v1alpha1.AggregatorFailed {
		d.RequeueAfter = failure.Backoff(f.Conditions, v1alpha1.ConditionStalled, f.Now, BackoffMin, BackoffMax)
		if w := f.Rejection.Wait(f.Now); w > 0 && st.reason == ReasonRejected {
			d.RequeueAfter = min(max(w, BackoffMin), BackoffMax)
		}
	}
	d.Conditions = conditions(f, st, held)
	d.Phase = Phases.Of(d.Conditions)
	if err := Transitions.Check(prev, d.Phase); err != nil {
		return Decision{}, err
	}
	d.Event = event(f.Conditions, prev, st)
	return d, nil
}

// hold is the state of a live Aggregator that cannot act on its objects this pass (held
// true): an object with one of its names it does not control, a missing operator key Secret
// or key, or a StatefulSet that cannot be built.
func hold(f Facts) (state, bool) {
	switch {
	case f.StatefulSet != nil && f.StatefulSet.Foreign:
		return failed(ReasonOwnershipConflict, "a StatefulSet with the aggregator's name exists and is not controlled by this Aggregator"), true
	case f.Service.Foreign:
		return failed(ReasonOwnershipConflict, "a Service with the aggregator's name exists and is not controlled by this Aggregator"), true
	case f.Secret.Foreign:
		return failed(ReasonOwnershipConflict, "a Secret with the aggregator's config name exists and is not controlled by this Aggregator"), true
	case len(f.MissingRefs) > 0:
		return failed(ReasonSecretNotFound, "spec.operatorKeys: "+strings.Join(f.MissingRefs, "; ")+"; the aggregator proceeds on its own once it exists"), true
	case f.SpecError != "" || f.DesiredRevision == "":
		msg := f.SpecError
		if msg == "" {
			msg = "the StatefulSet cannot be built"
		}
		return failed(ReasonInvalidSpec, msg), true
	}
	return state{}, false
}

// live is a pass of a live Aggregator that has its finalizer: the writes that bring the config
// Secret, the Service and the StatefulSet to the spec, and the state of the rollout.
func live(f Facts, prev Phase, d *Decision) (state, bool) {
	if st, held := hold(f); held {
		return st, true
	}
	if !f.Secret.UpToDate {
		d.Actions = append(d.Actions, ActionApplySecret)
	}
	if !f.Service.UpToDate {
		d.Actions = append(d.Actions, ActionApplyService)
	}
	progress := state{phase: v1alpha1.AggregatorCreating, reason: ReasonCreating}
	if prev == v1alpha1.AggregatorRunning || prev == v1alpha1.AggregatorUpdating {
		progress = state{phase: v1alpha1.AggregatorUpdating, reason: ReasonUpdateInProgress}
	}
	sts := f.StatefulSet
	switch {
	case sts == nil:
		d.Actions = append(d.Actions, ActionApplyStatefulSet)
		progress.message = "creating the statefulset"
		return progress, false
	case sts.Deleting:
		d.RequeueAfter = WaitPoll
		progress.message = "waiting for the old statefulset to be deleted"
		return progress, false
	case sts.Revision != f.DesiredRevision:
		d.Actions = append(d.Actions, ActionApplyStatefulSet)
		progress.message = fmt.Sprintf("rolling out revision %s", f.DesiredRevision)
		return progress, false
	}
	return podState(f, progress), false
}

// podState is the state of the StatefulSet that has the desired revision: Running when its pod
// of that revision is Ready and the config Secret and Service are up to date; Failed when that
// pod cannot be scheduled or started (the scheduler's or kubelet's words); otherwise progress,
// saying what is awaited (with what the pod says when it is of an older revision, being
// replaced).
func podState(f Facts, progress state) state {
	sts, pod, rev := f.StatefulSet, f.Pod, f.DesiredRevision
	if sts.ObservedGeneration < sts.Generation {
		progress.message = fmt.Sprintf("waiting for the statefulset controller to observe revision %s", rev)
		return progress
	}
	current := pod.Exists && pod.Revision == rev
	switch {
	case current && pod.Unschedulable != "":
		return failed(ReasonUnschedulable, fmt.Sprintf("pod %s cannot be scheduled: %s", pod.Name, pod.Unschedulable))
	case current && len(pod.Problems) > 0:
		return failed(ReasonPodFailing, strings.Join(pod.Problems, "; "))
	case current && sts.ReadyReplicas >= 1 && sts.AvailableReplicas >= 1 && sts.UpdatedReplicas >= 1 &&
		sts.CurrentRevision == sts.UpdateRevision && f.Secret.UpToDate && f.Service.UpToDate:
		return state{phase: v1alpha1.AggregatorRunning, reason: ReasonAvailable,
			message: fmt.Sprintf("revision %s (image %s): 1/1 ready", rev, sts.Image)}
	}
	msg := fmt.Sprintf("revision %s: %d/1 ready", rev, sts.ReadyReplicas)
	switch {
	case !pod.Exists:
		msg += "; waiting for the pod to be created"
	case !current:
		msg += "; replacing pod of revision " + pod.Revision
	case pod.Binding != "":
		msg += "; waiting for the volume claim to bind: " + pod.Binding
	}
	if !current && len(pod.Problems) > 0 {
		msg += "; " + strings.Join(pod.Problems, "; ")
	}
	progress.message = msg
	return progress
}

// terminate is the Terminating pass: delete the StatefulSet, the Service, the config Secret
// and the claims, wait until they are gone, then remove the finalizer.
func terminate(f Facts, d *Decision) state {
	st := state{phase: v1alpha1.AggregatorTerminating, reason: ReasonTerminating}
	if !f.HasFinalizer {
		st.message = "waiting for the API server to remove the Aggregator"
		return st
	}
	stsLeft := f.StatefulSet != nil && !f.StatefulSet.Foreign
	if stsLeft && !f.StatefulSet.Deleting {
		d.Actions = append(d.Actions, ActionDeleteStatefulSet)
	}
	svcLeft := f.Service.Exists && !f.Service.Foreign
	if svcLeft {
		d.Actions = append(d.Actions, ActionDeleteService)
	}
	secLeft := f.Secret.Exists && !f.Secret.Foreign
	if secLeft {
		d.Actions = append(d.Actions, ActionDeleteSecret)
	}
	if f.Claims > 0 && !stsLeft {
		d.Actions = append(d.Actions, ActionDeleteClaims)
	}
	if stsLeft || svcLeft || secLeft || f.Claims > 0 {
		st.message = "deleting the statefulset, service, config secret and volume claims"
		d.RequeueAfter = WaitPoll
		return st
	}
	d.Actions = append(d.Actions, ActionRemoveFinalizer)
	st.message = "statefulset, service and config secret deleted; removing finalizer " + v1alpha1.Finalizer
	return st
}

// conditions are the four conditions of a decision (package doc). held: the pass wrote no
// object (hold, Pending, Terminating), so the config is not rendered.
func conditions(f Facts, st state, held bool) []metav1.Condition {
	running := st.phase == v1alpha1.AggregatorRunning
	stalled := st.phase == v1alpha1.AggregatorFailed
	out := failure.KStatus(running, stalled, st.reason, st.message, f.Generation)
	cfg := func(on bool, reason, msg string) metav1.Condition {
		return failure.Condition(ConditionConfigReady, on, reason, msg, f.Generation)
	}
	switch {
	case !held && f.Secret.UpToDate:
		out = append(out, cfg(true, ReasonConfigRendered, "config.yaml rendered for revision "+f.DesiredRevision))
	case !held && st.phase != v1alpha1.AggregatorPending && st.phase != v1alpha1.AggregatorTerminating:
		out = append(out, cfg(false, ReasonConfigPending, "writing the config secret"))
	case held && (st.reason == ReasonSecretNotFound || st.reason == ReasonInvalidSpec || st.reason == ReasonOwnershipConflict):
		out = append(out, cfg(false, reasonWaitingForInputs, st.message))
	default:
		out = append(out, cfg(false, reasonNotRendered, "the config is not rendered in phase "+string(st.phase)))
	}
	return out
}

// event is emitted on a phase change and when a failure's reason or message changes.
func event(prevConds []metav1.Condition, prev Phase, st state) *Event {
	typ := corev1.EventTypeNormal
	if st.phase == v1alpha1.AggregatorFailed {
		typ = corev1.EventTypeWarning
	}
	ev := &Event{Type: typ, Reason: st.reason, Message: st.message}
	if prev != st.phase {
		return ev
	}
	if st.phase == v1alpha1.AggregatorFailed {
		for _, c := range prevConds {
			if c.Type == v1alpha1.ConditionStalled && (c.Status != metav1.ConditionTrue || c.Reason != st.reason || c.Message != st.message) {
				return ev
			}
		}
	}
	return nil
}
