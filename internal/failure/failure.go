// Package failure holds the pure helpers the Gantry machines (internal/performer,
// internal/executor, internal/workspace, internal/packageset) share: the kubelet reasons that
// mean a container cannot pull its image or cannot start, the Stalled re-check backoff, the
// manager label value, the record of a write the API server rejected (Rejection) that a
// machine turns into Stalled=True, and the classifier of Pods ended from outside with its
// bound (disruption.go). It imports only k8s.io/api and k8s.io/apimachinery types and the API
// types (internal/api/v1alpha1): neither controller-runtime, client-go nor the Terraform
// framework.
package failure

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImagePullReasons are the kubelet's container waiting reasons that mean the image cannot be
// pulled.
var ImagePullReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"ErrImageNeverPull": true, "ImageInspectError": true, "RegistryUnavailable": true,
	"SignatureValidationFailed": true,
}

// ContainerStartReasons are the kubelet's container waiting reasons that mean the container
// cannot be created or started, or keeps crashing.
var ContainerStartReasons = map[string]bool{
	"CrashLoopBackOff": true, "CreateContainerConfigError": true, "CreateContainerError": true,
	"RunContainerError": true, "PreStartHookError": true, "PostStartHookError": true,
	"PreCreateHookError": true, "ContainerCannotRun": true,
}

// UnboundImmediateClaims is the scheduler's words for a pod whose PersistentVolumeClaims of
// an Immediate binding mode are not bound yet (kube-scheduler's VolumeBinding PreFilter,
// pkg/scheduler/framework/plugins/volumebinding/volume_binding.go), as they appear in the pod's
// PodScheduled=False/Unschedulable message, e.g. "0/7 nodes are available: pod has unbound
// immediate PersistentVolumeClaims. preemption: 0/7 nodes are available: 7 Preemption is not
// helpful for scheduling.".
const UnboundImmediateClaims = "pod has unbound immediate PersistentVolumeClaims"

// WaitsForVolumeBinding reports whether a pod's unschedulable message (the scheduler's,
// verbatim) says only that its immediate-binding claims are not bound yet. That is progress,
// not a failure: the claims exist (a missing one reads `persistentvolumeclaim "x" not found`),
// the PersistentVolume controller binds them to a matching volume or has one provisioned, and
// the scheduler moves the pod back to its active queue once they are bound (its own comment:
// "Pod will be moved to active/backoff queues once these claims are bound by PV controller").
// KAITO waits there too. "" is false. A claim that never binds is bounded by the caller's
// timeout (the provider's resource timeout), not failed here.
func WaitsForVolumeBinding(unschedulable string) bool {
	return strings.Contains(unschedulable, UnboundImmediateClaims)
}

// Backoff is the Stalled re-check delay: how long the condition of type stalledType has been
// True in conds (0 when it is not True or has no lastTransitionTime), clamped to [lo, hi], so
// successive re-checks of a stalled object roughly double.
func Backoff(conds []metav1.Condition, stalledType string, now time.Time, lo, hi time.Duration) time.Duration {
	var since time.Duration
	for _, c := range conds {
		if c.Type == stalledType && c.Status == metav1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			since = now.Sub(c.LastTransitionTime.Time)
		}
	}
	return min(max(since, lo), hi)
}

// Rejection is a write to an owned object that the API server refused for a reason only a
// change by the user can fix (Invalid, Forbidden, BadRequest, an admission rejection, a
// referenced object missing). The controller records it when an action fails and hands it to
// the machine as a fact on the following passes; the machine turns it into Stalled=True with
// ConditionReason and Message, withholds the rejected action until RetryAt, and then retries it
// (a ServiceAccount or PriorityClass created meanwhile heals the object without user action).
type Rejection struct {
	// Action is the machine action whose write was rejected, e.g. "CreatePod".
	Action string
	// Kind and Name identify the object written, e.g. "Pod", "ns/performer-x".
	Kind, Name string
	// Reason is the API server's status reason (metav1.StatusReason), e.g. "Invalid", "Forbidden".
	Reason string
	// Message is the API server's own message, verbatim: it names the object and the field.
	Message string
	// Generation is the metadata.generation of the object whose pass failed: a newer spec
	// drops the rejection (the user changed something: try at once).
	Generation int64
	// RetryAt is when the rejected action may be tried again.
	RetryAt time.Time
}

// ReasonRejected is the Stalled condition reason for a write the API server rejected.
const ReasonRejected = "Rejected"

// ConditionMessage is the Stalled message for r: the action, the object and the API
// server's words, e.g. `creating Pod ns/performer-x was rejected (Forbidden): pods
// "performer-x" is forbidden: error looking up service account ns/sa: serviceaccount "sa" not
// found`.
func (r *Rejection) ConditionMessage() string {
	return fmt.Sprintf("%s %s %s was rejected (%s): %s", verb(r.Action), r.Kind, r.Name, r.Reason, r.Message)
}

// Holds is true while the rejected action must not be tried again: until RetryAt.
func (r *Rejection) Holds(now time.Time) bool {
	return r != nil && now.Before(r.RetryAt)
}

// Wait is how long until RetryAt (0 when it has passed).
func (r *Rejection) Wait(now time.Time) time.Duration {
	if r == nil || !now.Before(r.RetryAt) {
		return 0
	}
	return r.RetryAt.Sub(now)
}

// Without returns actions without every action equal to a (a fresh slice; nil when empty).
func Without[A ~string](actions []A, a string) []A {
	var out []A
	for _, x := range actions {
		if string(x) != a {
			out = append(out, x)
		}
	}
	return out
}

func verb(action string) string {
	for _, p := range []struct{ prefix, verb string }{
		{"Create", "creating"}, {"Ensure", "writing"}, {"Apply", "writing"}, {"Delete", "deleting"},
		{"Scale", "scaling"}, {"Rollback", "rolling back"}, {"Prune", "pruning"},
	} {
		if len(action) >= len(p.prefix) && action[:len(p.prefix)] == p.prefix {
			return p.verb
		}
	}
	return "writing"
}

// ReasonReferenceNotFound is the Stalled condition reason for a referenced Secret or
// ConfigMap (or one of its keys) that does not exist.
const ReasonReferenceNotFound = "ReferenceNotFound"

// Ref is a Secret or ConfigMap an object references, the keys it needs from it, and what the
// reconciler found.
type Ref struct {
	// Kind is "Secret" or "ConfigMap"; Namespace and Name identify it.
	Kind, Namespace, Name string
	// Keys are the data keys the referrer reads (none: the whole object is used).
	Keys []string
	// Exists is true when the object exists; HasKey lists its data keys (values never read).
	Exists bool
	HasKey map[string]bool
	// Phase is a PersistentVolumeClaim's status.phase as found (Pending, Bound, Lost; "" for
	// the other kinds or a missing claim).
	Phase string
}

// Problems returns one message per missing object or key, in order: "Secret ns/name not
// found", "Secret ns/name has no key K".
func Problems(refs []Ref) []string {
	var out []string
	for _, r := range refs {
		if !r.Exists {
			out = append(out, fmt.Sprintf("%s %s/%s not found", r.Kind, r.Namespace, r.Name))
			continue
		}
		for _, k := range r.Keys {
			if !r.HasKey[k] {
				out = append(out, fmt.Sprintf("%s %s/%s has no key %s", r.Kind, r.Namespace, r.Name, k))
			}
		}
	}
	return out
}

// JobOutcome reads a Job's finished conditions: complete when JobComplete is True; failed
// when JobFailed is True, with that condition's reason and message verbatim (e.g.
// "BackoffLimitExceeded", "Job has reached the specified backoff limit").
func JobOutcome(j *batchv1.Job) (complete, failed bool, reason, message string) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			complete = true
		case batchv1.JobFailed:
			failed, reason, message = true, c.Reason, c.Message
		}
	}
	return complete, failed, reason, message
}

// Stage Pod failure reasons Gantry sets itself (the kubelet sets DeadlineExceeded, Evicted,
// ... in the pod's status.reason, which PodOutcome quotes).
const (
	// ReasonPodFailed: the pod failed without a reason of the kubelet's (a container exited
	// non-zero).
	ReasonPodFailed = "PodFailed"
	// ReasonDeadlineExceeded: the pod ran past spec.activeDeadlineSeconds (the kubelet's reason).
	ReasonDeadlineExceeded = "DeadlineExceeded"
	// ReasonPodDeleted: the pod was deleted before it finished.
	ReasonPodDeleted = "PodDeleted"
)

// PodOutcome reads a run-to-completion Pod (restartPolicy Never) at now as a Job of it with
// backoffLimit 0 and the pod's activeDeadlineSeconds would: succeeded when its phase is
// Succeeded; failed when Failed, with the pod's status reason (the kubelet's: DeadlineExceeded,
// Evicted, ...; else ReasonPodFailed) and message. A pod still pending or running is failed
// too when it is being deleted (ReasonPodDeleted) or when now is past its creation plus
// spec.activeDeadlineSeconds (ReasonDeadlineExceeded with the kubelet's words; stop: the pod
// still runs and must be deleted): the kubelet counts the deadline from the pod's start and
// ends it itself, but a node whose kubelet is gone never would (the Job controller counted
// from the Job's start, as this does).
func PodOutcome(p *corev1.Pod, now time.Time) (succeeded, failed, stop bool, reason, message string) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return true, false, false, "", ""
	case corev1.PodFailed:
		reason = p.Status.Reason
		if reason == "" {
			reason = ReasonPodFailed
		}
		return false, true, false, reason, p.Status.Message
	}
	if p.DeletionTimestamp != nil {
		return false, true, false, ReasonPodDeleted, "the pod was deleted before it finished"
	}
	if d := p.Spec.ActiveDeadlineSeconds; d != nil && now.Sub(p.CreationTimestamp.Time) > time.Duration(*d)*time.Second {
		return false, true, true, ReasonDeadlineExceeded, fmt.Sprintf("Pod was active on the node longer than the specified deadline (%ds)", *d)
	}
	return false, false, false, "", ""
}

// Condition is a condition of type t: status True when on (False otherwise), with reason,
// message and observedGeneration, and no lastTransitionTime (meta.SetStatusCondition sets it).
func Condition(t string, on bool, reason, message string, generation int64) metav1.Condition {
	s := metav1.ConditionFalse
	if on {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: message, ObservedGeneration: generation}
}

// KStatus is the kstatus triple every Gantry kind carries, in this order: Ready (True when
// ready), Reconciling (True when neither ready nor stalled) and Stalled (True when stalled),
// all three with the same active reason and message. ready and stalled may both be true (an
// executor rolled back: serving the previous revision, and stalled on the failed one).
func KStatus(ready, stalled bool, reason, message string, generation int64) []metav1.Condition {
	return []metav1.Condition{
		Condition("Ready", ready, reason, message, generation),
		Condition("Reconciling", !ready && !stalled, reason, message, generation),
		Condition("Stalled", stalled, reason, message, generation),
	}
}

// LastLine is the last non-empty line of a container's termination message, trimmed and cut to
// 300 bytes: with terminationMessagePolicy FallbackToLogsOnError the kubelet keeps up to the
// last 80 lines of a failed container's log there, of which the last one (a script's final
// stderr line, "apply: config file missing") is what a status message quotes. "" for "".
func LastLine(message string) string {
	lines := strings.Split(strings.TrimSpace(message), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	return last
}
