// Package executor is the Executor lifecycle as a pure machine: facts about an Executor, its
// Performers, Secrets, ConfigMap and Deployment go in; phase, conditions (Ready, Reconciling,
// Stalled, ConfigReady, PerformersReady), actions, revisions and requeue come out, and
// reconciler/executor_controller.go acts. Phases are Hourglass's top-level states plus its
// deployment state machine's RollingBack; sub-states go in condition messages. A failed update
// with rollback enabled is answered in the same pass (Updating → RollingBack); then Ready and
// Stalled (RolledBack) are both True until the spec changes, so kstatus readers see the desired
// spec is not live. Otherwise exactly one of the first three is True. Conditions and revisions
// are the machine's memory; pods ended from outside fail it only beyond failure.DisruptionBound.
package executor

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

// Phase is an Executor's status.phase.
type Phase = v1alpha1.ExecutorPhase

// Condition types besides the kstatus ones in v1alpha1.
const (
	// ConditionConfigReady is True when the desired executor-config.yaml is rendered into its
	// ConfigMap (every referenced performer has an endpoint, every Secret reference exists).
	ConditionConfigReady = "ConfigReady"
	// ConditionPerformersReady is True when every referenced Performer exists and is Running.
	ConditionPerformersReady = "PerformersReady"
)

// Condition reasons.
const (
	ReasonAvailable                = "DeploymentAvailable"      // Ready=True
	ReasonPending                  = "Pending"                  // Reconciling: adding the finalizer
	ReasonCreating                 = "Creating"                 // Reconciling: first rollout
	ReasonUpdateInProgress         = "UpdateInProgress"         // Reconciling: Updating
	ReasonScaling                  = "Scaling"                  // Reconciling: Scaling
	ReasonRollingBack              = "RollingBack"              // Reconciling: RollingBack
	ReasonTerminating              = "Terminating"              // Reconciling: Terminating
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded" // Stalled: the Deployment's own reason
	ReasonReplicaFailure           = "ReplicaFailure"           // Stalled: the Deployment cannot create pods (quota, ...)
	ReasonRollbackFailed           = "RollbackFailed"           // Stalled: the last good revision did not come back either
	ReasonRolledBack               = "RolledBack"               // Stalled (with Ready=True): update failed, previous revision runs
	ReasonPerformerNotFound        = v1alpha1.ExecutorReasonPerformerNotFound
	ReasonPerformerFailed          = "PerformerFailed"      // Stalled / PerformersReady=False
	ReasonPerformerNotReady        = "PerformerNotReady"    // PerformersReady=False: not Running yet
	ReasonNoPerformersSelected     = "NoPerformersSelected" // Stalled: the selector matches nothing
	ReasonPerformersRunning        = "PerformersRunning"    // PerformersReady=True
	ReasonSecretNotFound           = "SecretNotFound"       // Stalled / ConfigReady=False
	ReasonInvalidSpec              = "InvalidSpec"          // Stalled: the Deployment cannot be built
	ReasonOwnershipConflict        = "OwnershipConflict"    // Stalled: a namesake object is not ours
	ReasonConfigRendered           = "ConfigRendered"       // ConfigReady=True
	ReasonConfigPending            = "ConfigPending"        // ConfigReady=False: being written
	ReasonWaitingForInputs         = "WaitingForInputs"     // ConfigReady=False: performers not ready
	ReasonRejected                 = failure.ReasonRejected // Stalled: the API server rejected a write (its message)
	// ReasonPodDisrupted: Reconciling (phase Scaling): a pod ended from outside (evicted,
	// preempted, its node gone); its ReplicaSet's replacement is awaited.
	ReasonPodDisrupted = failure.ReasonPodDisrupted
	// ReasonPodDisruptedRepeatedly: Stalled: more pods ended from outside within
	// failure.DisruptionWindow than failure.DisruptionBound(replicas) allows.
	ReasonPodDisruptedRepeatedly = failure.ReasonPodDisruptedRepeatedly
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
	// ActionEnsureConfigMap creates the ConfigMap of the desired config (immutable, named by
	// its content hash).
	ActionEnsureConfigMap Action = "EnsureConfigMap"
	// ActionApplyDeployment creates or updates the Deployment from the desired spec.
	ActionApplyDeployment Action = "ApplyDeployment"
	// ActionRollback restores the pod template of the last good revision (from its
	// ReplicaSet, as `kubectl rollout undo` does), with the desired replica count.
	ActionRollback Action = "Rollback"
	// ActionScaleDeployment sets only the Deployment's replicas (while rolled back).
	ActionScaleDeployment Action = "ScaleDeployment"
	// ActionPruneConfigMaps deletes owned ConfigMaps no kept revision references.
	ActionPruneConfigMaps Action = "PruneConfigMaps"
	// ActionDeleteDeployment and ActionDeleteConfigMaps clean up while Terminating.
	ActionDeleteDeployment Action = "DeleteDeployment"
	ActionDeleteConfigMaps Action = "DeleteConfigMaps"
	// ActionEnsureAccess creates or updates the ServiceAccount, Role and RoleBinding an
	// executor with spec.managePerformers runs as (DesiredAccess), before its pods need them.
	ActionEnsureAccess Action = "EnsureAccess"
	// ActionDeleteAccess deletes them once spec.managePerformers is off.
	ActionDeleteAccess Action = "DeleteAccess"
	// ActionDeleteManagedPerformers deletes the Performers the executor created itself (label
	// gantry.dev/created-by-executor): while Terminating, and once spec.managePerformers is off.
	ActionDeleteManagedPerformers Action = "DeleteManagedPerformers"
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
	// LastGoodRevision and FailedRevision are status.lastGoodRevision / status.failedRevision.
	LastGoodRevision string
	FailedRevision   string
	// RollbackEnabled is spec.rollback.onFailure (default true).
	RollbackEnabled bool
	// SpecError, when non-empty, says why the desired Deployment cannot be built.
	SpecError string
	// BySelector is true when performers are picked by a label selector.
	BySelector bool
	// Performers are the referenced Performers, in reference order (names) or name order
	// (selector).
	Performers []PerformerRef
	// MissingRefs are the problems with the operator key Secret (failure.Problems over Refs:
	// "Secret ns/name not found", "Secret ns/name has no key K"); the reconciler reads the
	// Secret's data keys, never hands its values on.
	MissingRefs []string
	// Rejection, when non-nil, is an earlier pass's write the API server rejected for good
	// (failure.Rejection): Failed with reason Rejected and the API server's message; the
	// rejected action is withheld until Rejection.RetryAt, then tried again.
	Rejection *failure.Rejection
	// PodProblems say why the Deployment's pods do not run (PodProblems: image pull and
	// container start failures, the kubelet's words); they are added to the rollout's
	// progress and failure messages.
	PodProblems []string
	// Disrupted are the Deployment's pods that ended from outside (Disruptions: evicted,
	// preempted, their node shut down or gone; not plain deletions, which the ReplicaSet
	// controller makes itself), including ones left behind Failed long ago.
	Disrupted []failure.Disruption
	// PodDisruptions is status.podDisruptions from the previous pass (nil when none): the
	// count of pods ended from outside the bound applies to.
	PodDisruptions *v1alpha1.PodDisruptions
	// DesiredRevision is the revision (pod template hash) the spec asks for; "" when the
	// inputs are not ready (no config can be rendered yet).
	DesiredRevision string
	// DesiredReplicas is spec.replicas.
	DesiredReplicas int32
	// ConfigMap is the desired revision's ConfigMap.
	ConfigMap ConfigMap
	// Deployment is the observed Deployment executor-<name>, nil if none.
	Deployment *Deployment
	// LastGoodAvailable is true when a ReplicaSet of the Deployment still holds the pod
	// template of LastGoodRevision (the rollback target).
	LastGoodAvailable bool
	// ManagePerformers is spec.managePerformers.
	ManagePerformers bool
	// Access are the ServiceAccount, Role and RoleBinding executor-<name> (AccessFacts).
	Access Access
	// ManagedPerformers is how many Performers carry gantry.dev/created-by-executor=<name>.
	ManagedPerformers int
}

// Access facts: the ServiceAccount, Role and RoleBinding executor-<name> taken together.
type Access struct {
	// Exists is true when any of them exists; Foreign when any is not controlled by the Executor.
	Exists, Foreign bool
	// UpToDate is true when all three exist, are the Executor's, and grant what DesiredAccess grants.
	UpToDate bool
}

// PerformerRef is one referenced Performer as observed.
type PerformerRef struct {
	Name string
	// Found is false when no Performer of that name exists.
	Found bool
	// Phase is its status.phase, Endpoint its status.grpcEndpoint.
	Phase    v1alpha1.PerformerPhase
	Endpoint string
	// Current is true when its status.observedGeneration equals its generation.
	Current bool
	// Reason and Message explain a Failed performer (its Stalled condition).
	Reason, Message string
}

// ConfigMap facts.
type ConfigMap struct {
	Exists  bool
	Foreign bool
}

// Deployment facts, read verbatim from the Deployment's spec and status (DeploymentFacts).
type Deployment struct {
	Foreign  bool
	Deleting bool
	// Revision is the pod template's gantry.dev/spec-hash annotation.
	Revision string
	// Image is the executor container's image in the template.
	Image                          string
	Generation, ObservedGeneration int64
	// Replicas is spec.replicas.
	Replicas int32
	// StatusReplicas .. UnavailableReplicas are status fields.
	StatusReplicas, UpdatedReplicas, ReadyReplicas, AvailableReplicas, UnavailableReplicas int32
	// Progressing and ReplicaFailure are the Deployment conditions of those types.
	Progressing, ReplicaFailure DeploymentCondition
}

// DeploymentCondition is a Deployment condition's status, reason and message, verbatim.
type DeploymentCondition struct {
	Status  corev1.ConditionStatus
	Reason  string
	Message string
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
	// LastGoodRevision and FailedRevision are the new status values.
	LastGoodRevision string
	FailedRevision   string
	// CurrentRevision is the revision the Deployment targets now ("" without a Deployment).
	CurrentRevision string
	Event           *Event
	// PodDisruptions is the new status.podDisruptions: Facts.PodDisruptions with this pass's
	// pods ended from outside counted (failure.CountDisruptions).
	PodDisruptions *v1alpha1.PodDisruptions
}

// AllPhases lists the phases in lifecycle order.
var AllPhases = []Phase{
	v1alpha1.ExecutorPending, v1alpha1.ExecutorCreating, v1alpha1.ExecutorRunning,
	v1alpha1.ExecutorUpdating, v1alpha1.ExecutorScaling, v1alpha1.ExecutorFailed,
	v1alpha1.ExecutorRollingBack, v1alpha1.ExecutorTerminating,
}

// Transitions is the set of legal phase changes, From → {To}; Transitions.Check returns a
// *lifecycle.TransitionError for any other. Hourglass's process flows and deployment state
// machine draw the forward path; a level-triggered controller also skips unobserved phases (an
// adopted complete Deployment: Pending → Running; failure and rollback seen at once: Updating →
// RollingBack), re-creates a lost Deployment and sees the Deployment controller heal Failed.
// Nothing returns to Pending, Pending never goes to Updating, Scaling or RollingBack (nothing
// ran yet), and Terminating is final.
var Transitions = lifecycle.Table[Phase]{Kind: "Executor phase", Edges: func() lifecycle.Transitions[Phase] {
	m := lifecycle.Transitions[Phase]{"": AllPhases}
	for _, from := range AllPhases {
		switch from {
		case v1alpha1.ExecutorTerminating:
			m[from] = []Phase{v1alpha1.ExecutorTerminating}
		case v1alpha1.ExecutorPending:
			m[from] = []Phase{v1alpha1.ExecutorPending, v1alpha1.ExecutorCreating, v1alpha1.ExecutorRunning, v1alpha1.ExecutorFailed, v1alpha1.ExecutorTerminating}
		default:
			for _, to := range AllPhases {
				if to == v1alpha1.ExecutorPending {
					continue
				}
				m[from] = append(m[from], to)
			}
		}
	}
	return m
}()}

// Phases derives the phase from conditions (Phases.Of): Ready=True → Running (also after a
// rollback, when Stalled=True too); Stalled=True → Failed; Reconciling=True → the phase its
// reason names; otherwise "".
var Phases = lifecycle.Phases[Phase]{
	Ready:   v1alpha1.ExecutorRunning,
	Stalled: v1alpha1.ExecutorFailed,
	Reconciling: map[string]Phase{
		ReasonPending:          v1alpha1.ExecutorPending,
		ReasonCreating:         v1alpha1.ExecutorCreating,
		ReasonUpdateInProgress: v1alpha1.ExecutorUpdating,
		ReasonScaling:          v1alpha1.ExecutorScaling,
		ReasonRollingBack:      v1alpha1.ExecutorRollingBack,
		ReasonTerminating:      v1alpha1.ExecutorTerminating,
		ReasonPodDisrupted:     v1alpha1.ExecutorScaling,
	},
}

type state struct {
	phase   Phase
	reason  string
	message string
	// rolledBack marks Running on the previous revision after a failed update.
	rolledBack bool
}

// inputs is the outcome of checking performers and secrets.
type inputs struct {
	perfOK     bool
	perfReason string
	perfMsg    string
	blocked    *state // a failure that stops the rollout
	waiting    string // a reason to wait (performers not Running yet)
}

// Decide runs one pass. It is total over Facts: every combination yields a Decision, except
// that a phase change outside Transitions (possible only with conditions this machine did not
// write) is a *lifecycle.TransitionError and the Decision must not be acted upon.
func Decide(f Facts) (Decision, error) {
	prev := Phases.Of(f.Conditions)
	d := Decision{LastGoodRevision: f.LastGoodRevision, FailedRevision: f.FailedRevision, PodDisruptions: f.PodDisruptions}
	if !f.Deleting {
		d.PodDisruptions = failure.CountDisruptions(f.PodDisruptions, f.Disrupted, f.Now)
	}
	if f.Deployment != nil && !f.Deployment.Foreign {
		d.CurrentRevision = f.Deployment.Revision
	}
	in := checkInputs(f)
	configOK := false
	var st state

	switch {
	case f.Deleting:
		st = terminate(f, &d)
	case !f.HasFinalizer && (prev == "" || prev == v1alpha1.ExecutorPending):
		st = state{phase: v1alpha1.ExecutorPending, reason: ReasonPending, message: "adding finalizer " + v1alpha1.Finalizer}
		d.Actions = []Action{ActionAddFinalizer}
	default:
		if !f.HasFinalizer {
			d.Actions = append(d.Actions, ActionAddFinalizer)
		}
		st, configOK = live(f, in, &d)
	}

	if r := f.Rejection; r != nil && !f.Deleting && slices.Contains(d.Actions, Action(r.Action)) {
		st = failed(ReasonRejected, r.ConditionMessage())
		if r.Holds(f.Now) {
			d.Actions = failure.Without(d.Actions, r.Action)
		}
	}
	if st.phase == v1alpha1.ExecutorFailed {
		d.RequeueAfter = backoff(f)
		if w := f.Rejection.Wait(f.Now); w > 0 && st.reason == ReasonRejected {
			d.RequeueAfter = min(max(w, BackoffMin), BackoffMax) // the rejected action's retry
		}
	}
	d.Conditions = conditions(f, st, in, configOK)
	d.Phase = Phases.Of(d.Conditions)
	if err := Transitions.Check(prev, d.Phase); err != nil {
		return Decision{}, err
	}
	d.Event = event(f.Conditions, prev, st)
	return d, nil
}

func checkInputs(f Facts) inputs {
	in := inputs{perfOK: true, perfReason: ReasonPerformersRunning}
	var names []string
	for _, p := range f.Performers {
		names = append(names, p.Name)
	}
	in.perfMsg = "performers running: " + strings.Join(names, ", ")
	if f.BySelector && len(f.Performers) == 0 {
		in.perfOK, in.perfReason, in.perfMsg = false, ReasonNoPerformersSelected, "the performer selector matches no Performer in the namespace"
		in.blocked = &state{phase: v1alpha1.ExecutorFailed, reason: ReasonNoPerformersSelected, message: in.perfMsg}
	}
	var missing, failedMsgs, waiting []string
	for _, p := range f.Performers {
		switch {
		case !p.Found:
			missing = append(missing, fmt.Sprintf("%q", p.Name))
		case p.Phase == v1alpha1.PerformerFailed && p.Current:
			msg := fmt.Sprintf("performer %q is Failed", p.Name)
			if p.Reason != "" {
				msg += ": " + p.Reason
			}
			if p.Message != "" {
				msg += ": " + p.Message
			}
			failedMsgs = append(failedMsgs, msg)
		case p.Phase != v1alpha1.PerformerRunning || !p.Current || p.Endpoint == "":
			ph := string(p.Phase)
			if ph == "" {
				ph = "not reconciled yet"
			}
			waiting = append(waiting, fmt.Sprintf("%s (%s)", p.Name, ph))
		}
	}
	switch {
	case len(missing) > 0:
		noun := "performer"
		if len(missing) > 1 {
			noun = "performers"
		}
		in.perfOK, in.perfReason = false, ReasonPerformerNotFound
		in.perfMsg = fmt.Sprintf("%s %s not found in the executor's namespace", noun, strings.Join(missing, ", "))
		in.blocked = &state{phase: v1alpha1.ExecutorFailed, reason: ReasonPerformerNotFound, message: in.perfMsg}
	case len(failedMsgs) > 0:
		in.perfOK, in.perfReason, in.perfMsg = false, ReasonPerformerFailed, strings.Join(failedMsgs, "; ")
		in.blocked = &state{phase: v1alpha1.ExecutorFailed, reason: ReasonPerformerFailed, message: in.perfMsg}
	case len(waiting) > 0:
		in.perfOK, in.perfReason = false, ReasonPerformerNotReady
		in.perfMsg = "waiting for performers to be Running: " + strings.Join(waiting, ", ")
		in.waiting = in.perfMsg
	}
	if in.blocked == nil && len(f.MissingRefs) > 0 {
		in.blocked = &state{phase: v1alpha1.ExecutorFailed, reason: ReasonSecretNotFound,
			message: "spec.operatorKeys: " + strings.Join(f.MissingRefs, "; ") + "; the executor proceeds on its own once it exists"}
	}
	if in.blocked == nil && f.SpecError != "" {
		in.blocked = &state{phase: v1alpha1.ExecutorFailed, reason: ReasonInvalidSpec, message: f.SpecError}
	}
	return in
}

// progressPhase names the in-progress phase of a rollout towards target.
func progressPhase(f Facts, target string, rollingBack bool) (Phase, string) {
	dep := f.Deployment
	switch {
	case rollingBack:
		return v1alpha1.ExecutorRollingBack, ReasonRollingBack
	case dep == nil || f.LastGoodRevision == "":
		return v1alpha1.ExecutorCreating, ReasonCreating
	case target != f.LastGoodRevision:
		return v1alpha1.ExecutorUpdating, ReasonUpdateInProgress
	default:
		return v1alpha1.ExecutorScaling, ReasonScaling
	}
}

// liveHold is the state of a live Executor that cannot act on its Deployment this pass (held
// true): an object with its name it does not control, a blocked input, or a configuration not
// rendered yet.
func liveHold(f Facts, in inputs) (st state, held bool) {
	dep := f.Deployment
	switch {
	case dep != nil && dep.Foreign:
		return failed(ReasonOwnershipConflict, "a Deployment with the executor's name exists and is not controlled by this Executor"), true
	case f.ConfigMap.Foreign:
		return failed(ReasonOwnershipConflict, "a ConfigMap with the executor's config name exists and is not controlled by this Executor"), true
	case f.ManagePerformers && f.Access.Foreign:
		return failed(ReasonOwnershipConflict, "spec.managePerformers: a ServiceAccount, Role or RoleBinding named executor-<name> exists and is not controlled by this Executor"), true
	case in.blocked != nil:
		return *in.blocked, true
	case in.waiting != "" || f.DesiredRevision == "":
		ph, reason := progressPhase(f, f.DesiredRevision, false)
		if ph == v1alpha1.ExecutorScaling {
			ph, reason = v1alpha1.ExecutorUpdating, ReasonUpdateInProgress
		}
		msg := in.waiting
		if msg == "" {
			msg = "waiting for the configuration to be rendered"
		}
		return state{phase: ph, reason: reason, message: msg}, true
	}
	return state{}, false
}

// rollTo is the state when the Deployment does not run target yet: restore the last good
// revision (rolled-back mode; failed if the Deployment no longer keeps it), else apply target.
func rollTo(f Facts, target string, rolledBackMode bool, d *Decision) state {
	if rolledBackMode {
		if !f.LastGoodAvailable {
			return failed(ReasonRollbackFailed, fmt.Sprintf("revision %s failed and was rolled back, but the deployment no longer holds revision %s; change the spec to roll out again", f.FailedRevision, f.LastGoodRevision))
		}
		d.Actions = append(d.Actions, ActionRollback)
		return state{phase: v1alpha1.ExecutorRollingBack, reason: ReasonRollingBack, message: fmt.Sprintf("restoring revision %s", target)}
	}
	d.Actions = append(d.Actions, ActionApplyDeployment)
	ph, reason := progressPhase(f, target, false)
	if ph == v1alpha1.ExecutorScaling {
		ph, reason = v1alpha1.ExecutorUpdating, ReasonUpdateInProgress
	}
	return state{phase: ph, reason: reason, message: fmt.Sprintf("rolling out revision %s", target)}
}

// deadlineExceeded is the state when the rollout of target exceeded its progress deadline:
// failed when it was the rollback itself, rolling back when the last good revision can be
// restored (Hourglass's deployment state machine: UPDATING → FAILED → ROLLINGBACK in one observation), else failed saying
// why no rollback happens.
func deadlineExceeded(f Facts, target string, rolledBackMode bool, d *Decision) state {
	dep := f.Deployment
	cause := fmt.Sprintf("%s: %s", dep.Progressing.Reason, dep.Progressing.Message) + podsSay(f)
	switch {
	case rolledBackMode:
		return failed(ReasonRollbackFailed, fmt.Sprintf("update to revision %s failed and the rollback to revision %s failed too (%s)", f.FailedRevision, target, cause))
	case f.LastGoodRevision != "" && target != f.LastGoodRevision && f.RollbackEnabled && f.LastGoodAvailable:
		d.FailedRevision = target
		d.Actions = append(d.Actions, ActionRollback)
		return state{phase: v1alpha1.ExecutorRollingBack, reason: ReasonRollingBack,
			message: fmt.Sprintf("update to revision %s failed (%s); rolling back to revision %s", target, cause, f.LastGoodRevision)}
	}
	msg := fmt.Sprintf("rollout of revision %s failed (%s)", target, cause)
	switch {
	case f.LastGoodRevision == "" || target == f.LastGoodRevision:
	case !f.RollbackEnabled:
		msg += fmt.Sprintf("; rollback is disabled (revision %s was the last good one)", f.LastGoodRevision)
	case !f.LastGoodAvailable:
		msg += fmt.Sprintf("; cannot roll back: revision %s is no longer kept", f.LastGoodRevision)
	}
	return failed(ReasonProgressDeadlineExceeded, msg)
}

// live is a pass of a live (not deleted) Executor that has its finalizer. configOK is false
// when liveHold holds the pass (an input blocked, a configuration not rendered yet).
func live(f Facts, in inputs, d *Decision) (st state, configOK bool) {
	if hold, held := liveHold(f, in); held {
		return hold, false
	}
	ensureAccessAndConfig(f, d)
	rolledBackMode := f.FailedRevision != "" && f.FailedRevision == f.DesiredRevision && f.LastGoodRevision != ""
	if !rolledBackMode {
		d.FailedRevision = ""
	}
	target := f.DesiredRevision
	if rolledBackMode {
		target = f.LastGoodRevision
	}
	return deploymentState(f, target, rolledBackMode, d), true
}

// ensureAccessAndConfig adds the actions for what the Deployment needs beside itself: the
// performer access (ensured while managePerformers, deleted with the performers it made
// after) and the ConfigMap.
func ensureAccessAndConfig(f Facts, d *Decision) {
	switch {
	case f.ManagePerformers && !f.Access.UpToDate:
		d.Actions = append(d.Actions, ActionEnsureAccess)
	case !f.ManagePerformers && f.Access.Exists && !f.Access.Foreign && !podsMayNeedAccess(f):
		d.Actions = append(d.Actions, ActionDeleteAccess)
	}
	if !f.ManagePerformers && f.ManagedPerformers > 0 {
		d.Actions = append(d.Actions, ActionDeleteManagedPerformers)
	}
	if !f.ConfigMap.Exists {
		d.Actions = append(d.Actions, ActionEnsureConfigMap)
	}
}

// podsMayNeedAccess is true while the Deployment may still create pods from a template that
// runs as the ServiceAccount executor-<name>: until its rollout of the desired revision (which
// no longer names it) is observed and complete. Deleting the access before then fails the
// older ReplicaSet's pod creations ("serviceaccount ... not found": a scale during the rollout
// grows the older ReplicaSet first), and the Deployment's ReplicaFailure fails the Executor.
func podsMayNeedAccess(f Facts) bool {
	dep := f.Deployment
	if dep == nil {
		return false
	}
	return dep.Revision != f.DesiredRevision || dep.ObservedGeneration < dep.Generation ||
		dep.UpdatedReplicas != dep.Replicas || dep.StatusReplicas != dep.Replicas || dep.UnavailableReplicas != 0
}

// deploymentState is the state of the Deployment's rollout of target (the last good revision
// in rolled-back mode, else the desired one), with the actions that move it on.
func deploymentState(f Facts, target string, rolledBackMode bool, d *Decision) state {
	dep := f.Deployment
	if dep == nil {
		// Hourglass: Creating → ConfigMapCreation → DeploymentCreation. A lost Deployment is
		// re-created from the spec (its ReplicaSets went with it, so there is nothing to roll
		// back to: a failed revision is retried).
		d.FailedRevision = ""
		d.Actions = append(d.Actions, ActionApplyDeployment)
		return state{phase: v1alpha1.ExecutorCreating, reason: ReasonCreating, message: "creating the deployment"}
	}
	if dep.Deleting {
		d.RequeueAfter = WaitPoll
		return state{phase: v1alpha1.ExecutorCreating, reason: ReasonCreating, message: "waiting for the old deployment to be deleted"}
	}
	if dep.Revision != target {
		return rollTo(f, target, rolledBackMode, d)
	}
	if dep.Replicas != f.DesiredReplicas {
		if rolledBackMode {
			d.Actions = append(d.Actions, ActionScaleDeployment)
		} else {
			d.Actions = append(d.Actions, ActionApplyDeployment)
		}
	}
	ph, reason := progressPhase(f, target, rolledBackMode)
	if dep.ObservedGeneration < dep.Generation || dep.Replicas != f.DesiredReplicas {
		return state{phase: ph, reason: reason, message: fmt.Sprintf("waiting for the deployment controller to observe revision %s with %d replicas", target, f.DesiredReplicas)}
	}
	if dep.Progressing.Status == corev1.ConditionFalse && dep.Progressing.Reason == ReasonProgressDeadlineExceeded {
		return deadlineExceeded(f, target, rolledBackMode, d)
	}
	if dep.ReplicaFailure.Status == corev1.ConditionTrue {
		return failed(ReasonReplicaFailure, fmt.Sprintf("%s: %s", dep.ReplicaFailure.Reason, dep.ReplicaFailure.Message))
	}
	return observedState(f, target, rolledBackMode, state{phase: ph, reason: reason}, d)
}

// observedState is the state of an observed rollout of target that neither failed nor ran out
// of time: progress (in the phase and reason of progress) until every replica is updated,
// ready and available, then Running (rolled back, or target is the new last good revision).
func observedState(f Facts, target string, rolledBackMode bool, progress state, d *Decision) state {
	dep, want := f.Deployment, f.DesiredReplicas
	complete := dep.UpdatedReplicas == want && dep.ReadyReplicas == want && dep.AvailableReplicas == want &&
		dep.StatusReplicas == want && dep.UnavailableReplicas == 0
	if !complete {
		progress.message = fmt.Sprintf("revision %s: %d/%d replicas updated, %d ready, %d available, %d unavailable, %d total",
			target, dep.UpdatedReplicas, want, dep.ReadyReplicas, dep.AvailableReplicas, dep.UnavailableReplicas, dep.StatusReplicas) + podsSay(f)
		return disruptedProgress(f, d, progress)
	}
	if rolledBackMode {
		return state{phase: v1alpha1.ExecutorRunning, reason: ReasonRolledBack, rolledBack: true,
			message: fmt.Sprintf("update to revision %s failed and was rolled back: revision %s (image %s) is running with %d/%d replicas ready; change the spec to roll out again",
				f.FailedRevision, target, dep.Image, dep.ReadyReplicas, want)}
	}
	d.LastGoodRevision = target
	d.Actions = append(d.Actions, ActionPruneConfigMaps)
	return state{phase: v1alpha1.ExecutorRunning, reason: ReasonAvailable,
		message: fmt.Sprintf("revision %s (image %s): %d/%d replicas ready", target, dep.Image, dep.ReadyReplicas, want)}
}

// disruptedProgress is progress, an incomplete rollout, when none of the Deployment's pods
// ended from outside within failure.DisruptionWindow. Otherwise: Failed with reason
// PodDisruptedRepeatedly beyond the bound; else the newest such pod's replacement is awaited,
// said first in the message, with reason PodDisrupted when the executor is only Scaling (a
// rollout keeps its own reason).
func disruptedProgress(f Facts, d *Decision, progress state) state {
	if failure.DisruptedRepeatedly(d.PodDisruptions, f.DesiredReplicas, f.Now) {
		return failed(ReasonPodDisruptedRepeatedly, failure.RepeatedMessage(d.PodDisruptions, f.DesiredReplicas))
	}
	var newest *failure.Disruption
	for i := range f.Disrupted {
		if x := &f.Disrupted[i]; f.Now.Sub(x.At) <= failure.DisruptionWindow && (newest == nil || x.At.After(newest.At)) {
			newest = x
		}
	}
	if newest == nil {
		return progress
	}
	progress.message = failure.WaitingMessage(*newest, d.PodDisruptions, f.DesiredReplicas) + "; " + progress.message
	if progress.phase == v1alpha1.ExecutorScaling {
		progress.reason = ReasonPodDisrupted
	}
	return progress
}

// podsSay is "; pods: <problem>; <problem>" when the Deployment's pods report image pull or
// start failures, "" otherwise.
func podsSay(f Facts) string {
	if len(f.PodProblems) == 0 {
		return ""
	}
	return "; " + strings.Join(f.PodProblems, "; ")
}

// terminate is the Terminating pass (Hourglass: Terminating → Cleanup; Hourglass's deployment state machine: DELETING →
// DELETED).
func terminate(f Facts, d *Decision) state {
	st := state{phase: v1alpha1.ExecutorTerminating, reason: ReasonTerminating}
	if !f.HasFinalizer {
		st.message = "waiting for the API server to remove the Executor"
		return st
	}
	depLeft := f.Deployment != nil && !f.Deployment.Foreign
	if depLeft && !f.Deployment.Deleting {
		d.Actions = append(d.Actions, ActionDeleteDeployment)
	}
	cmLeft := f.ConfigMap.Exists && !f.ConfigMap.Foreign
	d.Actions = append(d.Actions, ActionDeleteConfigMaps)
	if f.ManagedPerformers > 0 {
		// The performers the executor created go with it (no orphans); its pods may still
		// create one while they stop, so this repeats until none is left.
		d.Actions = append(d.Actions, ActionDeleteManagedPerformers)
	}
	if depLeft || cmLeft || f.ManagedPerformers > 0 {
		st.message = "deleting the deployment and config maps"
		if f.ManagedPerformers > 0 {
			st.message += fmt.Sprintf(" and %d performer(s) the executor created", f.ManagedPerformers)
		}
		d.RequeueAfter = WaitPoll
		return st
	}
	d.Actions = append(d.Actions, ActionRemoveFinalizer)
	st.message = "deployment and config maps deleted; removing finalizer " + v1alpha1.Finalizer
	return st
}

func failed(reason, msg string) state {
	return state{phase: v1alpha1.ExecutorFailed, reason: reason, message: msg}
}

func backoff(f Facts) time.Duration {
	return failure.Backoff(f.Conditions, v1alpha1.ConditionStalled, f.Now, BackoffMin, BackoffMax)
}

func conditions(f Facts, st state, in inputs, configOK bool) []metav1.Condition {
	cond := func(t string, on bool, reason, msg string) metav1.Condition {
		return failure.Condition(t, on, reason, msg, f.Generation)
	}
	running := st.phase == v1alpha1.ExecutorRunning
	stalled := st.phase == v1alpha1.ExecutorFailed || st.rolledBack
	out := failure.KStatus(running, stalled, st.reason, st.message, f.Generation)
	switch {
	case configOK && f.ConfigMap.Exists:
		out = append(out, cond(ConditionConfigReady, true, ReasonConfigRendered, "executor-config.yaml rendered for revision "+f.DesiredRevision))
	case configOK:
		out = append(out, cond(ConditionConfigReady, false, ReasonConfigPending, "writing the config map"))
	case in.blocked != nil && (in.blocked.reason == ReasonSecretNotFound || in.blocked.reason == ReasonInvalidSpec):
		out = append(out, cond(ConditionConfigReady, false, in.blocked.reason, in.blocked.message))
	case f.ConfigMap.Foreign:
		out = append(out, cond(ConditionConfigReady, false, ReasonOwnershipConflict, "the config map is not controlled by this Executor"))
	default:
		out = append(out, cond(ConditionConfigReady, false, ReasonWaitingForInputs, "waiting for the referenced performers' endpoints"))
	}
	out = append(out, cond(ConditionPerformersReady, in.perfOK, in.perfReason, in.perfMsg))
	return out
}

// event is emitted on a phase change, when a failure's reason or message changes, and when a
// rollback completes (Warning, reason RolledBack).
func event(prevConds []metav1.Condition, prev Phase, st state) *Event {
	typ := corev1.EventTypeNormal
	if st.phase == v1alpha1.ExecutorFailed || st.rolledBack || st.phase == v1alpha1.ExecutorRollingBack {
		typ = corev1.EventTypeWarning
	}
	ev := &Event{Type: typ, Reason: st.reason, Message: st.message}
	if prev != st.phase {
		return ev
	}
	if st.phase == v1alpha1.ExecutorFailed || st.rolledBack {
		for _, c := range prevConds {
			if c.Type == v1alpha1.ConditionStalled && (c.Status != metav1.ConditionTrue || c.Reason != st.reason || c.Message != st.message) {
				return ev
			}
		}
	}
	return nil
}
