// Package wait is the provider's wait engine: it waits until a Gantry object satisfies the
// status contract (docs/guides/status-and-conditions.md), fails at once when it cannot, and
// waits until a deleted object is gone. Each kind is a small Spec (summary path, success,
// failure and return-at-once values, owned kinds to search for Warning events) over one shared
// Registry. The Registry keeps one lazily started informer per GVR and namespace and notifies
// waiters on every event, so a wait returns within milliseconds of the status write that
// satisfies it; there is no polling interval.
package wait

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Spec tells the wait engine how to read one kind's status.
type Spec struct {
	// Kind is the kind's name, used in messages, e.g. "Performer".
	Kind string
	// GVR is the resource to watch, e.g. gantry.dev/v1alpha1 performers.
	GVR schema.GroupVersionResource
	// Namespaced is false for cluster-scoped kinds (PackageSet); their waits use namespace "".
	Namespaced bool
	// SummaryPath is the field path of the one-word summary: {"status","phase"} or {"status","status"}.
	SummaryPath []string
	// Success are the summary values that end a wait successfully (with observedGeneration
	// equal to generation).
	Success []string
	// Failure are the summary values that fail a wait at once.
	Failure []string
	// ReturnAtOnce are summary values that end a wait without error although they are not
	// success: the user asked for them (PackageSet paused, disabled).
	ReturnAtOnce []string
	// ReturnAtOnceReasons are Ready=False reasons that end a wait without error whatever the
	// summary (for the current generation, and neither Stalled=True nor Reconciling=True):
	// the object waits on something the user holds on purpose (PackageSet: an earlier set
	// is paused). The caller may warn with the Ready message.
	ReturnAtOnceReasons []string
	// Handshake: the kind's reconciler copies the object's labels to its pods and answers
	// the gantry.dev/reconcileRequestedAt annotation with status.lastHandledReconcileAt (as
	// Flux's requestedAt/lastHandledReconcileAt). While an object carries the annotation and
	// the status does not answer its value, the status is about older labels and neither its
	// success nor its failure counts, as with an older observedGeneration (a status without
	// the field at all comes from a reconciler older than the handshake and is not held to
	// it: version skew never makes a wait loop until its timeout). The provider
	// writes the annotation on every apply of such a kind (a labels-only change leaves
	// metadata.generation as it is).
	Handshake bool
	// OwnedKinds are the kinds of objects the reconciler creates for this kind; Warning events
	// of objects of these kinds whose owner chain leads to the waited-on object are reported
	// in failure and timeout errors.
	OwnedKinds []OwnedKind
	// Related names objects whose Warning events are reported even when they cannot be
	// fetched any more (e.g. a Pod that was deleted and recreated). Optional.
	Related func(obj *unstructured.Unstructured) []ObjectRef
	// Detail adds kind-specific text to a failure message (e.g. which revision is live after
	// a rollback). Optional; an empty result adds nothing.
	Detail func(obj *unstructured.Unstructured) string
}

// OwnedKind is a kind of object owned (through ownerReferences) by a Gantry object.
type OwnedKind struct {
	// Kind as it appears in Event.involvedObject.kind, e.g. "Pod".
	Kind string
	// GVR used to fetch such an object to read its ownerReferences.
	GVR schema.GroupVersionResource
}

// ObjectRef names an object in the waited-on object's namespace.
type ObjectRef struct {
	Kind string
	Name string
}

func (r ObjectRef) String() string { return r.Kind + "/" + r.Name }

// Target identifies the object to wait on and what a fresh enough copy of it looks like.
type Target struct {
	// Namespace of the object ("" for cluster-scoped kinds).
	Namespace string
	// Name of the object.
	Name string
	// UID, if set, is the object incarnation to wait on: a different UID under the same name
	// means the object was deleted (and maybe recreated).
	UID string
	// Generation, if > 0, is the generation the caller just wrote (from the apply response).
	// Copies with a lower generation are stale and ignored.
	Generation int64
	// Known, if set, is a copy of the object the caller has just written or read (the apply
	// response, or Registry.Get's result). The wait starts from it, or from the shared
	// informer's copy when that is newer, instead of reading the object with a GET: one round
	// trip less per wait. It is not modified.
	Known *unstructured.Unstructured
}

func (t Target) key() string {
	if t.Namespace == "" {
		return t.Name
	}
	return t.Namespace + "/" + t.Name
}

func (t Target) String() string { return t.key() }

// Well-known GVRs.
var (
	PodsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	ServicesGVR = schema.GroupVersionResource{Version: "v1", Resource: "services"}
)

// Performer is the Spec of gantry.dev/v1alpha1 Performer: summary status.phase, success
// Running, failure Failed (and, as for every kind, Stalled=True). Warning events of its Pod
// and Service (the scheduler's FailedScheduling, the kubelet's image pull and start errors)
// are reported.
var Performer = Spec{
	Kind:        "Performer",
	GVR:         v1alpha1.GroupVersion.WithResource("performers"),
	Namespaced:  true,
	SummaryPath: []string{"status", "phase"},
	Success:     []string{string(v1alpha1.PerformerRunning)},
	Failure:     []string{string(v1alpha1.PerformerFailed)},
	Handshake:   true,
	OwnedKinds: []OwnedKind{
		{Kind: "Pod", GVR: PodsGVR},
		{Kind: "Service", GVR: ServicesGVR},
	},
	Related: func(obj *unstructured.Unstructured) []ObjectRef {
		var refs []ObjectRef
		if n, _, _ := unstructured.NestedString(obj.Object, "status", "podName"); n != "" {
			refs = append(refs, ObjectRef{Kind: "Pod", Name: n})
		}
		if n, _, _ := unstructured.NestedString(obj.Object, "status", "serviceName"); n != "" {
			refs = append(refs, ObjectRef{Kind: "Service", Name: n})
		}
		return refs
	},
}

// Workspace is the Spec of gantry.dev/v1alpha1 Workspace: summary status.state. Success is
// mode-dependent but needs no extra mechanism: an inference workspace is never Succeeded and a
// tuning one never Ready, so Success {Ready, Succeeded} means Ready for inference and
// Succeeded for tuning. Failure: tuning Failed; and, as for every kind, Stalled=True (the
// "Pending trap" of KAITO made visible: the wait fails at once with ResourceReady's
// reason). Warning events of its Pods (through their ReplicaSet), Deployment, Service and Job are reported.
var Workspace = Spec{
	Kind:        "Workspace",
	GVR:         v1alpha1.GroupVersion.WithResource("workspaces"),
	Namespaced:  true,
	SummaryPath: []string{"status", "state"},
	Success:     []string{string(v1alpha1.WorkspaceStateReady), string(v1alpha1.WorkspaceStateSucceeded)},
	Failure:     []string{string(v1alpha1.WorkspaceStateFailed)},
	Handshake:   true,
	OwnedKinds: []OwnedKind{
		{Kind: "Pod", GVR: PodsGVR},
		{Kind: "Service", GVR: ServicesGVR},
		{Kind: "ReplicaSet", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}},
		{Kind: "Deployment", GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}},
		{Kind: "Job", GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}},
	},
}

func (s Spec) summaryField() string { return strings.Join(s.SummaryPath, ".") }

func (s Spec) validate() error {
	if s.Kind == "" || s.GVR.Resource == "" || len(s.SummaryPath) == 0 || len(s.Success) == 0 {
		return fmt.Errorf("wait: incomplete Spec %+v", s)
	}
	return nil
}

// Well-known GVRs of the objects an Executor owns.
var (
	DeploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	ReplicaSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	ConfigMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

// Executor is the Spec of gantry.dev/v1alpha1 Executor: summary status.phase, success Running,
// failure Failed. After a failed update that was rolled back the executor is Running on the
// previous revision with Stalled=True (reason RolledBack), so the wait fails at once and its
// Detail says the update was rolled back and which revision (and image) runs. Warning events
// of its Deployment, ReplicaSets, Pods and ConfigMaps are reported.
var Executor = Spec{
	Kind:        "Executor",
	GVR:         v1alpha1.GroupVersion.WithResource("executors"),
	Namespaced:  true,
	SummaryPath: []string{"status", "phase"},
	Success:     []string{string(v1alpha1.ExecutorRunning)},
	Failure:     []string{string(v1alpha1.ExecutorFailed)},
	OwnedKinds: []OwnedKind{
		{Kind: "Deployment", GVR: DeploymentsGVR},
		{Kind: "ReplicaSet", GVR: ReplicaSetsGVR},
		{Kind: "Pod", GVR: PodsGVR},
		{Kind: "ConfigMap", GVR: ConfigMapsGVR},
	},
	Related: func(obj *unstructured.Unstructured) []ObjectRef {
		return []ObjectRef{{Kind: "Deployment", Name: "executor-" + obj.GetName()}}
	},
	Detail: func(obj *unstructured.Unstructured) string {
		failed, _, _ := unstructured.NestedString(obj.Object, "status", "failedRevision")
		current, _, _ := unstructured.NestedString(obj.Object, "status", "currentRevision")
		image, _, _ := unstructured.NestedString(obj.Object, "status", "image")
		if failed == "" || current == "" || failed == current {
			return ""
		}
		return fmt.Sprintf("the update to revision %s was rolled back: revision %s (image %s) is running", failed, current, image)
	},
}

// StatefulSetsGVR is the resource of an Aggregator's StatefulSet.
var StatefulSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}

// Aggregator is the Spec of gantry.dev/v1alpha1 Aggregator (Hourglass's aggregator): summary
// status.phase, success Running, failure Failed (the pod cannot be scheduled or started, in
// the scheduler's or kubelet's words; a missing key Secret). Warning events of its
// StatefulSet (FailedCreate), its pod and its Service are reported.
var Aggregator = Spec{
	Kind:        "Aggregator",
	GVR:         v1alpha1.GroupVersion.WithResource("aggregators"),
	Namespaced:  true,
	SummaryPath: []string{"status", "phase"},
	Success:     []string{string(v1alpha1.AggregatorRunning)},
	Failure:     []string{string(v1alpha1.AggregatorFailed)},
	OwnedKinds: []OwnedKind{
		{Kind: "StatefulSet", GVR: StatefulSetsGVR},
		{Kind: "Pod", GVR: PodsGVR},
		{Kind: "Service", GVR: ServicesGVR},
	},
	Related: func(obj *unstructured.Unstructured) []ObjectRef {
		return []ObjectRef{{Kind: "StatefulSet", Name: "aggregator-" + obj.GetName()}, {Kind: "Pod", Name: "aggregator-" + obj.GetName() + "-0"}}
	},
}

// PackageSet is the Spec of gantry.dev/v1alpha1 PackageSet (cluster-scoped): summary
// status.status, success complete, paused and disabled return at once (the user asked for
// them), and so does a set waiting only for a paused earlier set (Ready reason
// WaitingForPausedSet: it cannot move until that set is resumed, which is also the user's
// choice); failure erroring and blocked. The failure detail names each failing node, package,
// stage and message from status.nodeState (a dozen at most, then a count). Warning events of
// its stage Jobs are reported.
var PackageSet = Spec{
	Kind:                "PackageSet",
	GVR:                 v1alpha1.GroupVersion.WithResource("packagesets"),
	Namespaced:          false,
	SummaryPath:         []string{"status", "status"},
	Success:             []string{string(v1alpha1.StatusComplete)},
	ReturnAtOnce:        []string{string(v1alpha1.StatusPaused), string(v1alpha1.StatusDisabled)},
	ReturnAtOnceReasons: []string{"WaitingForPausedSet"}, // packageset.ReasonWaitingForPausedSet (its kstatus test checks)
	Failure:             []string{string(v1alpha1.StatusErroring), string(v1alpha1.StatusBlocked)},
	Detail:              packageSetDetail,
}

// packageSetDetail lists the erroring stages of status.nodeState: "node N package P stage S:
// message", sorted by node and package, at most 12, then "and K more".
func packageSetDetail(obj *unstructured.Unstructured) string {
	nodes, _, _ := unstructured.NestedMap(obj.Object, "status", "nodeState")
	var lines []string
	for node, v := range nodes {
		pkgs, _ := v.(map[string]interface{})
		for pkg, pv := range pkgs {
			ps, _ := pv.(map[string]interface{})
			if ps["state"] != string(v1alpha1.StateErroring) {
				continue
			}
			lines = append(lines, fmt.Sprintf("node %s package %s stage %v: %v", node, pkg, ps["stage"], ps["message"]))
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	const most = 12
	if len(lines) > most {
		return "failing: " + strings.Join(lines[:most], "; ") + fmt.Sprintf("; and %d more", len(lines)-most)
	}
	return "failing: " + strings.Join(lines, "; ")
}
