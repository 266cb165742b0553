package failure

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// A Pod ended from outside (evicted, preempted, deleted, its node shut down or gone) is not a
// failure of the performer, executor or workspace it belongs to: EndedFromOutside tells such a
// Pod from one whose own container failed, and CountDisruptions keeps the count the machines
// bound (status.podDisruptions, v1alpha1.PodDisruptions).

// Condition reasons the machines share for Pods ended from outside.
const (
	// ReasonPodDisrupted: Reconciling=True: a Pod ended from outside and its replacement is
	// awaited.
	ReasonPodDisrupted = "PodDisrupted"
	// ReasonPodDisruptedRepeatedly: Stalled=True: more Pods ended from outside within
	// DisruptionWindow than DisruptionBound allows.
	ReasonPodDisruptedRepeatedly = "PodDisruptedRepeatedly"
)

// The bound on Pods ended from outside: more than DisruptionsPerReplica per replica within
// DisruptionWindow of the first stalls the object (DisruptedRepeatedly).
const (
	DisruptionsPerReplica = 3
	DisruptionWindow      = 10 * time.Minute
)

// Disruption reasons EndedFromOutside reports besides the cluster's own (the DisruptionTarget
// condition's reasons and the status.reason values in OutsideReasons).
const (
	// DisruptionDeleted: the Pod is being deleted (deletionTimestamp set) and no condition
	// says why: someone deleted it (kubectl delete pod, a controller). A machine that deletes
	// Pods itself tells its own deletions apart.
	DisruptionDeleted = "Deleted"
	// DisruptionNoContainerFailure: the Pod ended Failed (or Succeeded though its containers
	// are always restarted) with no status.reason and no container that failed on its own.
	DisruptionNoContainerFailure = "NoContainerFailure"
)

// ConditionDisruptionTarget is the Pod condition the API server, the scheduler, the taint
// manager, the Pod garbage collector and the kubelet set on a Pod they are about to end
// (Kubernetes ≥ 1.26; corev1.DisruptionTarget).
const ConditionDisruptionTarget = corev1.DisruptionTarget

// OutsideReasons are the Pod status.reason values that mean the node or the cluster ended the
// Pod: the kubelet's eviction under node pressure (Evicted), its graceful node shutdown
// (Shutdown, NodeShutdown, Terminated), the node controller's lost node (NodeLost) and the
// kubelet's preemption for a critical Pod (Preempting). Other reasons are the Pod's own:
// UnexpectedAdmissionError (the device manager or another admission handler refused it),
// OutOf<resource>, NodeAffinity, DeadlineExceeded.
var OutsideReasons = map[string]bool{
	"Evicted": true, "Shutdown": true, "NodeShutdown": true, "Terminated": true, "NodeLost": true, "Preempting": true,
}

// lostContainer is the kubelet's terminated reason for a container it could not find when the
// Pod ended (exit code 137, "The container could not be located when the pod was
// terminated"): the node went away, not the container.
const lostContainer = "ContainerStatusUnknown"

// Disruption is a Pod that ended, or is ending, from outside.
type Disruption struct {
	// Pod and UID are the Pod's name and metadata.uid.
	Pod, UID string
	// Reason is why: the DisruptionTarget condition's reason (EvictionByEvictionAPI,
	// PreemptionByScheduler, DeletionByTaintManager, EvictionByPodGC, TerminationByKubelet),
	// the status.reason (OutsideReasons), DisruptionDeleted or DisruptionNoContainerFailure.
	Reason string
	// Message is the cluster's own words: the condition's message and status.message ("" when
	// there are none).
	Message string
	// At is when it ended: the DisruptionTarget condition's lastTransitionTime, else when its
	// deletion was asked for (deletionTimestamp less the grace period), else when its last
	// container finished, else when it stopped being Ready, else its creation.
	At time.Time
}

// Describe is "pod <name> ended from outside (<reason>: <message>)".
func (d Disruption) Describe() string {
	why := d.Reason
	if d.Message != "" {
		why += ": " + d.Message
	}
	return fmt.Sprintf("pod %s ended from outside (%s)", d.Pod, why)
}

// EndedFromOutside reports whether p ended (Failed, or Succeeded under restartPolicy Always) or
// is ending from outside, and why, so callers await a replacement instead of failing. In order:
// a DisruptionTarget condition is outside, whatever the exit codes; an OutsideReasons
// status.reason is outside, any other reason the Pod's own failure; deletion is outside
// (DisruptionDeleted; callers owning Pods through a Deployment ignore it, as rollouts delete
// Pods); a container's own non-zero exit is the Pod's failure; any other ended Pod is outside
// (DisruptionNoContainerFailure). nil is not ended.
func EndedFromOutside(p *corev1.Pod) (Disruption, bool) {
	if p == nil {
		return Disruption{}, false
	}
	restartAlways := p.Spec.RestartPolicy == "" || p.Spec.RestartPolicy == corev1.RestartPolicyAlways
	ended := p.Status.Phase == corev1.PodFailed || (p.Status.Phase == corev1.PodSucceeded && restartAlways)
	deleting := p.DeletionTimestamp != nil
	d := Disruption{Pod: p.Name, UID: string(p.UID), At: endedAt(p)}
	if c := podCondition(p, ConditionDisruptionTarget); c != nil && c.Status == corev1.ConditionTrue && (ended || deleting) {
		d.Reason, d.Message = c.Reason, joinMessages(c.Message, p.Status.Message)
		if d.Reason == "" {
			d.Reason = string(ConditionDisruptionTarget)
		}
		return d, true
	}
	switch {
	case ended && OutsideReasons[p.Status.Reason]:
		d.Reason, d.Message = p.Status.Reason, p.Status.Message
		return d, true
	case ended && p.Status.Reason != "":
		return Disruption{}, false
	case deleting:
		d.Reason, d.Message = DisruptionDeleted, "the pod is being deleted"
		return d, true
	case !ended || ownContainerFailure(p):
		return Disruption{}, false
	}
	d.Reason, d.Message = DisruptionNoContainerFailure, p.Status.Message
	if d.Message == "" {
		d.Message = "the pod ended with no reason given and none of its containers failed"
	}
	return d, true
}

// ownContainerFailure is true when a container or init container of p is terminated with a
// non-zero exit code for a reason of its own (not ContainerStatusUnknown).
func ownContainerFailure(p *corev1.Pod) bool {
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 && t.Reason != lostContainer {
				return true
			}
		}
	}
	return false
}

// endedAt is Disruption.At for p.
func endedAt(p *corev1.Pod) time.Time {
	if c := podCondition(p, ConditionDisruptionTarget); c != nil && c.Status == corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if dt := p.DeletionTimestamp; dt != nil {
		at := dt.Time
		if g := p.DeletionGracePeriodSeconds; g != nil {
			at = at.Add(-time.Duration(*g) * time.Second)
		}
		return at
	}
	var last time.Time
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.After(last) {
				last = t.FinishedAt.Time
			}
		}
	}
	if !last.IsZero() {
		return last
	}
	if c := podCondition(p, corev1.PodReady); c != nil && c.Status != corev1.ConditionTrue && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	return p.CreationTimestamp.Time
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// joinMessages is a and b joined by "; ", either left out when empty or when b repeats a.
func joinMessages(a, b string) string {
	switch {
	case b == "" || b == a:
		return a
	case a == "":
		return b
	}
	return a + "; " + b
}

// DisruptionBound is how many Pods ended from outside an object of replicas replicas waits
// through within DisruptionWindow: DisruptionsPerReplica per replica (at least one replica).
func DisruptionBound(replicas int32) int32 {
	return DisruptionsPerReplica * max(replicas, 1)
}

// CountDisruptions returns the record rec (status.podDisruptions; nil when none) after a pass
// at now saw the Pods in seen ended from outside. A Pod is counted when it ended within
// DisruptionWindow before now, after the last counted one (rec.LastAt), and is not the last
// counted one (rec.LastPodUID): so a Pod seen on many passes, or left behind Failed by its
// ReplicaSet, counts once. The first Pod counted more than DisruptionWindow after rec.Since
// starts a new count. Pods are counted in the order they ended. rec is not modified; the
// result is rec itself when nothing was counted (nil stays nil).
func CountDisruptions(rec *v1alpha1.PodDisruptions, seen []Disruption, now time.Time) *v1alpha1.PodDisruptions {
	sorted := append([]Disruption(nil), seen...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if !sorted[i].At.Equal(sorted[j].At) {
			return sorted[i].At.Before(sorted[j].At)
		}
		return sorted[i].Pod < sorted[j].Pod
	})
	out := rec
	for _, d := range sorted {
		if now.Sub(d.At) > DisruptionWindow || (rec != nil && (!d.At.After(rec.LastAt.Time) || d.UID != "" && d.UID == rec.LastPodUID)) {
			continue
		}
		if out == rec {
			if rec == nil {
				out = &v1alpha1.PodDisruptions{}
			} else {
				out = rec.DeepCopy()
			}
		}
		if out.Count == 0 || d.At.Sub(out.Since.Time) > DisruptionWindow {
			out.Count, out.Since = 0, metav1.NewTime(d.At)
		}
		out.Count++
		out.LastAt, out.LastPod, out.LastPodUID = metav1.NewTime(d.At), d.Pod, d.UID
		out.LastReason, out.LastMessage = d.Reason, d.Message
	}
	return out
}

// DisruptedRepeatedly reports whether rec holds more Pods ended from outside than
// DisruptionBound(replicas) allows, the last of them within DisruptionWindow before now.
func DisruptedRepeatedly(rec *v1alpha1.PodDisruptions, replicas int32, now time.Time) bool {
	return rec != nil && rec.Count > DisruptionBound(replicas) && now.Sub(rec.LastAt.Time) <= DisruptionWindow
}

// RepeatedMessage is the Stalled message of DisruptedRepeatedly: "4 pods ended from outside
// within 10m0s, more than the 3 (3 per replica) waited through; the last: pod p ended from
// outside (reason: message); find what keeps ending them (node pressure, preemption by
// higher-priority pods, drains, spot interruptions)".
func RepeatedMessage(rec *v1alpha1.PodDisruptions, replicas int32) string {
	last := Disruption{Pod: rec.LastPod, Reason: rec.LastReason, Message: rec.LastMessage}
	return fmt.Sprintf("%d pods ended from outside within %s, more than the %d (%d per replica) waited through; the last: %s; find what keeps ending them (node pressure, preemption by higher-priority pods, drains, spot interruptions)",
		rec.Count, DisruptionWindow, DisruptionBound(replicas), DisruptionsPerReplica, last.Describe())
}

// WaitingMessage is the Reconciling message for a Pod d ended from outside: "pod p ended from
// outside (reason: message); waiting for its replacement (1 of at most 3 pods ended from
// outside within 10m0s)"; the count in parentheses only when d is the last Pod rec counted.
func WaitingMessage(d Disruption, rec *v1alpha1.PodDisruptions, replicas int32) string {
	msg := d.Describe() + "; waiting for its replacement"
	if rec != nil && rec.LastPod == d.Pod && rec.LastPodUID == d.UID {
		msg += fmt.Sprintf(" (%d of at most %d pods ended from outside within %s)", rec.Count, DisruptionBound(replicas), DisruptionWindow)
	}
	return msg
}
