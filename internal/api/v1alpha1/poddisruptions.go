package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodDisruptions is status.podDisruptions of a Performer, an Executor or a Workspace: the
// reconciler's count of the object's Pods that ended from outside (internal/failure
// EndedFromOutside: evicted through the Eviction API or by the kubelet under node pressure,
// preempted by the scheduler, deleted by the taint manager or by someone, their node shut
// down or gone, or ended Failed with no container failure of their own). Such a Pod is not a
// failure of the object: it is Reconciling=True with reason PodDisrupted ("waiting for its
// replacement") while its controller (or the reconciler, for a performer's bare Pod)
// replaces it.
//
// The bound: when more than 3 Pods per replica (1 replica for a performer; spec.replicas for
// an executor; spec.resource.count for an inference workspace; 1 for tuning) ended from
// outside within 10 minutes of the first of them (Since), and the object is not Ready, it is
// Stalled=True with reason PodDisruptedRepeatedly, naming the count and the last Pod's
// reason; the provider's apply then fails. The stall holds until the object is Ready again or
// 10 minutes pass without a new such Pod. A Pod is counted once (by UID and by when it
// ended), and only if it ended within the last 10 minutes; a Pod ending more than 10 minutes
// after Since starts a new count.
type PodDisruptions struct {
	// Count is how many Pods ended from outside since Since (at least 1).
	Count int32 `json:"count"`
	// Since is when the first Pod of this count ended (the window's start, RFC 3339).
	Since metav1.Time `json:"since"`
	// LastAt is when the last counted Pod ended (its DisruptionTarget condition's
	// lastTransitionTime, its deletion, or its containers' finish).
	LastAt metav1.Time `json:"lastAt"`
	// LastPod is the name of the last counted Pod.
	LastPod string `json:"lastPod"`
	// LastPodUID is its metadata.uid.
	// +optional
	LastPodUID string `json:"lastPodUID,omitempty"`
	// LastReason is why it ended: its DisruptionTarget condition's reason
	// (EvictionByEvictionAPI, PreemptionByScheduler, DeletionByTaintManager, EvictionByPodGC,
	// TerminationByKubelet), its status.reason (Evicted, Shutdown, NodeShutdown, Terminated,
	// NodeLost, Preempting), Deleted (deleted by someone without a condition saying why) or
	// NoContainerFailure (ended Failed with no reason and no container failure of its own).
	LastReason string `json:"lastReason"`
	// LastMessage is the kubelet's, scheduler's or API server's own words for it (the
	// condition's message or status.message), if any.
	// +optional
	LastMessage string `json:"lastMessage,omitempty"`
}
