package reconciler

import (
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/resourceversion"
)

// expectationTTL bounds how long a pass waits for the cache to show the reconciler's own
// writes. Watch events normally bring it up to date within milliseconds; past the TTL the
// reconciler decides on whatever the cache holds, as it would without expectations.
const expectationTTL = 5 * time.Second

// staleRetry is the backstop requeue of a pass skipped because the cache is behind the
// reconciler's own writes (the watch event that catches it up triggers the real retry).
const staleRetry = time.Second

// expectations remember, per Performer or PackageSet, the writes the informer cache may not show
// yet (the object's resourceVersion after its last write and, for a Performer, its Pod, Service
// and Deployment writes). A pass on an older cache is skipped and the catching-up watch event
// starts the next one; deciding on it would redo work (conflicting status writes, AlreadyExists,
// double deletes). Memory only: a restarted reconciler decides on its fresh cache. The zero
// value is ready to use.
type expectations struct {
	mu sync.Mutex
	m  map[types.NamespacedName]*expected
}

type expected struct {
	at time.Time
	// selfRV is the object's own resourceVersion after the reconciler's last write to it ("" if
	// it wrote none).
	selfRV string
	// objects are the owned objects written, by kind ("Pod", "Service").
	objects map[string]objectWrite
}

// objectWrite is what the cache must show of an owned object the reconciler wrote.
type objectWrite struct {
	uid types.UID
	// rv is the resourceVersion the write returned: the cached copy must be at least as new.
	rv string
	// deleted: the cached copy must be gone or carry a deletionTimestamp.
	deleted bool
}

// stale reports which of the reconciler's own writes the cache does not show yet: the kind
// of the object (p's Go type name, e.g. "Performer", "PackageSet") or of an owned one ("Pod",
// "Service", "Deployment"), "" when none. p is the cached object itself; pod, svc and the
// (optional) Deployment are the cached owned copies (nil when absent or not tracked).
// Expectations met, or older than expectationTTL, are forgotten.
func (e *expectations) stale(key types.NamespacedName, p client.Object, pod, svc client.Object, dep ...client.Object) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	x := e.m[key]
	if x == nil {
		return ""
	}
	if time.Since(x.at) > expectationTTL {
		delete(e.m, key)
		return ""
	}
	if x.selfRV != "" && resourceversion.Older(p.GetResourceVersion(), x.selfRV) {
		return reflect.Indirect(reflect.ValueOf(p)).Type().Name()
	}
	owned := map[string]client.Object{"Pod": pod, "Service": svc}
	if len(dep) > 0 {
		owned["Deployment"] = dep[0]
	}
	for kind, cached := range owned {
		w, ok := x.objects[kind]
		if !ok {
			continue
		}
		gone := cached == nil || cached.GetUID() != w.uid
		switch {
		case w.deleted && !gone && cached.GetDeletionTimestamp() == nil:
			return kind
		case !w.deleted && gone:
			return kind
		case !w.deleted && resourceversion.Older(cached.GetResourceVersion(), w.rv):
			return kind
		}
	}
	delete(e.m, key)
	return ""
}

// expect records the writes of one pass (replacing earlier expectations for key: this pass
// started from a cache that showed them). selfRV is "" when the pass did not write the
// object itself.
func (e *expectations) expect(key types.NamespacedName, selfRV string, objects map[string]objectWrite) {
	if selfRV == "" && len(objects) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.m == nil {
		e.m = map[types.NamespacedName]*expected{}
	}
	e.m[key] = &expected{at: time.Now(), selfRV: selfRV, objects: objects}
}

// forget drops the expectations for key (the object is gone).
func (e *expectations) forget(key types.NamespacedName) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}
