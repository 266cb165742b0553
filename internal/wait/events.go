package wait

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// MaxEvents is how many Warning events a failure or timeout error quotes, newest first.
const MaxEvents = 5

// ownerDepth bounds the ownerReferences walk (Pod → ReplicaSet → Deployment → Gantry object).
const ownerDepth = 3

// Event is one Warning event of the waited-on object or of an object it owns.
type Event struct {
	// Object is the event's involvedObject, e.g. Pod/performer-x.
	Object ObjectRef
	// Reason is the event reason, e.g. "FailedScheduling".
	Reason string
	// Message is the event message, e.g. "0/7 nodes are available: 4 Insufficient nvidia.com/gpu ...".
	Message string
	// Count is how often it was seen (1 when unknown).
	Count int32
	// Last is when it was last seen.
	Last time.Time
}

func (e Event) String() string {
	s := e.Object.String() + " " + e.Reason
	if e.Count > 1 {
		s += fmt.Sprintf(" (x%d)", e.Count)
	}
	return s + ": " + e.Message
}

// warningEvents returns the newest Warning events (at most MaxEvents, newest first) whose
// involved object is obj itself, an object named by spec.Related, or an object of one of
// spec.OwnedKinds whose ownerReferences lead to obj. Errors reading events are returned; errors
// fetching candidate owned objects only exclude those objects.
func warningEvents(ctx context.Context, core kubernetes.Interface, dyn dynamic.Interface, spec Spec, obj *unstructured.Unstructured) ([]Event, error) {
	if core == nil || obj == nil {
		return nil, nil
	}
	ns := obj.GetNamespace()
	list, err := core.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "type=" + corev1.EventTypeWarning})
	if err != nil {
		return nil, err
	}
	related := map[ObjectRef]bool{{Kind: spec.Kind, Name: obj.GetName()}: true}
	if spec.Related != nil {
		for _, r := range spec.Related(obj) {
			related[r] = true
		}
	}
	owned := map[string]OwnedKind{}
	for _, k := range spec.OwnedKinds {
		owned[k.Kind] = k
	}
	ownedCache := map[types.UID]bool{}
	root := obj.GetUID()

	var out []Event
	for i := range list.Items {
		ev := &list.Items[i]
		if ev.Type != corev1.EventTypeWarning { // fake clients ignore field selectors
			continue
		}
		io := ev.InvolvedObject
		ref := ObjectRef{Kind: io.Kind, Name: io.Name}
		match := (root != "" && io.UID == root) || related[ref]
		if !match && dyn != nil {
			if k, ok := owned[io.Kind]; ok {
				match = ownedBy(ctx, dyn, owned, ownedCache, k, ns, io.Name, io.UID, root, ownerDepth)
			}
		}
		if !match {
			continue
		}
		count := ev.Count
		if ev.Series != nil && ev.Series.Count > count {
			count = ev.Series.Count
		}
		if count == 0 {
			count = 1
		}
		out = append(out, Event{Object: ref, Reason: ev.Reason, Message: ev.Message, Count: count, Last: eventTime(ev)})
	}
	slices.SortStableFunc(out, func(a, b Event) int { return b.Last.Compare(a.Last) })
	// Keep the newest of identical (object, reason, message) events.
	seen := map[string]bool{}
	dedup := out[:0]
	for _, e := range out {
		k := e.Object.String() + "\x00" + e.Reason + "\x00" + e.Message
		if seen[k] {
			continue
		}
		seen[k] = true
		dedup = append(dedup, e)
	}
	if len(dedup) > MaxEvents {
		dedup = dedup[:MaxEvents]
	}
	return dedup, nil
}

// ownedBy reports whether the object kind/ns/name (with uid, if known) has root among the
// owners in its ownerReferences chain, following owners of OwnedKinds up to depth levels.
func ownedBy(ctx context.Context, dyn dynamic.Interface, owned map[string]OwnedKind, cache map[types.UID]bool,
	k OwnedKind, ns, name string, uid, root types.UID, depth int) bool {
	if root == "" || depth == 0 {
		return false
	}
	if uid != "" {
		if v, ok := cache[uid]; ok {
			return v
		}
	}
	o, err := dyn.Resource(k.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if uid != "" && apierrors.IsNotFound(err) {
			cache[uid] = false
		}
		return false
	}
	if uid != "" && o.GetUID() != uid {
		return false // the event is about an earlier object of that name
	}
	result := false
	for _, ref := range o.GetOwnerReferences() {
		if ref.UID == root {
			result = true
			break
		}
		if ok, known := owned[ref.Kind]; known && ownedBy(ctx, dyn, owned, cache, ok, ns, ref.Name, ref.UID, root, depth-1) {
			result = true
			break
		}
	}
	cache[o.GetUID()] = result
	return result
}

func eventTime(ev *corev1.Event) time.Time {
	t := ev.CreationTimestamp.Time
	for _, c := range []time.Time{ev.FirstTimestamp.Time, ev.LastTimestamp.Time, ev.EventTime.Time} {
		if c.After(t) {
			t = c
		}
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	return t
}
