package wait

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/gantry-dev/terraform-provider-gantry/internal/resourceversion"
)

// informerSyncWait bounds how long Get waits for a new shared informer's first LIST before it
// reads the object with a GET instead. A var so that a test can make it long enough that only
// the forbidden-LIST path can return in time.
var informerSyncWait = 5 * time.Second

// eventsTimeout bounds the Warning-event lookup that decorates failure and timeout errors;
// it runs even when the wait's own context has ended.
const eventsTimeout = 5 * time.Second

// Registry waits on objects through shared informers: one per GVR and namespace, started on
// the first wait that needs it and kept for the life of the Registry (one provider process),
// so N concurrent waits in a namespace cost one LIST and one WATCH, not N. It is safe for
// concurrent use.
type Registry struct {
	dyn  dynamic.Interface
	core kubernetes.Interface

	// Backoff paces retried GETs after transient API errors (5xx, 429, timeouts, connection
	// errors). Steps is ignored: retries go on until the context ends.
	Backoff kwait.Backoff
	// Log, if set, receives progress messages (the provider passes tflog.Debug).
	Log func(ctx context.Context, msg string, fields map[string]interface{})

	mu        sync.Mutex
	informers map[informerKey]*sharedInformer
	closed    bool
}

type informerKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// NewRegistry returns a Registry that reads objects with dyn and Warning events with core
// (core may be nil: errors then quote no events). It starts nothing until the first wait.
func NewRegistry(dyn dynamic.Interface, core kubernetes.Interface) *Registry {
	return &Registry{
		dyn:       dyn,
		core:      core,
		Backoff:   kwait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Cap: 5 * time.Second},
		informers: map[informerKey]*sharedInformer{},
	}
}

// Close stops every informer. Waits in progress end with their context.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	for k, si := range r.informers {
		si.stopOnce()
		delete(r.informers, k)
	}
}

// Informers returns how many shared informers are running (one per GVR and namespace waited on).
func (r *Registry) Informers() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.informers)
}

// WaitReady waits until t satisfies spec's success condition (observedGeneration == generation
// and a Success or ReturnAtOnce summary) and returns that copy. It GETs first (transient errors
// retried with Backoff), then follows the shared informer. Errors: *FailedError at once on a
// Failure summary, Stalled=True or deletion (with the reason and the newest Warning events);
// *DeletedError when the object disappears; *TimeoutError with the last status seen when ctx
// ends; the API error when the GET fails for good (e.g. Forbidden).
func (r *Registry) WaitReady(ctx context.Context, spec Spec, t Target) (*unstructured.Unstructured, error) {
	if err := spec.validate(); err != nil {
		return nil, err
	}
	st := &waitState{spec: spec, target: t, start: time.Now(), want: fmt.Sprintf("%s %s", spec.summaryField(), joinOr(spec.Success))}
	si, w, obj, err := r.begin(ctx, spec, &t, st, func() error { return r.timeout(ctx, st, nil) })
	if err != nil {
		return nil, err
	}
	defer si.unregister(t.key(), w)
	last := Verdict{State: -1}
	obj, gone, err := r.follow(ctx, si, w, spec, t, st, obj, 0, func(obj *unstructured.Unstructured) (bool, error) {
		if t.Generation != 0 && obj.GetGeneration() < t.Generation {
			return false, nil
		}
		v := Evaluate(spec, obj)
		st.observe(obj, v)
		r.logVerdict(ctx, spec, t, v, &last)
		switch v.State {
		case Succeeded, ReturnedAtOnce:
			return true, nil
		case Failed:
			return true, r.failed(ctx, st, obj, v)
		}
		return false, nil
	})
	switch {
	case gone:
		return nil, &DeletedError{Kind: spec.Kind, Target: t}
	case errors.Is(err, errWaitEnded):
		return obj, r.timeout(ctx, st, obj)
	}
	return obj, err
}

// WaitFor waits until check reports done on the object t of spec's kind, through the shared
// informer as WaitReady does: check runs on the first copy (t.Known, or a GET retrying
// transient errors), then on every newer copy the informer delivers (a GET every DegradedPoll
// while its watch fails) and, when recheck > 0, every recheck on the newest copy, for a check
// that also reads other objects (e.g. nodes' annotations). report, if set, receives each
// progress message check returns that differs from the one before. It returns the last copy
// and nil when check reports done; check's error as it is; *DeletedError when the object
// disappears; ctx.Err() when ctx ends first; the API error of a non-transient GET failure.
// spec needs only Kind, GVR and Namespaced (its success condition is not used).
func (r *Registry) WaitFor(ctx context.Context, spec Spec, t Target, recheck time.Duration, report func(string), check Check) (*unstructured.Unstructured, error) {
	st := &waitState{spec: spec, target: t, start: time.Now()}
	si, w, obj, err := r.begin(ctx, spec, &t, st, ctx.Err)
	if err != nil {
		return nil, err
	}
	defer si.unregister(t.key(), w)
	var lastMsg string
	obj, gone, err := r.follow(ctx, si, w, spec, t, st, obj, recheck, func(obj *unstructured.Unstructured) (bool, error) {
		st.seen, st.lastRV = true, obj.GetResourceVersion()
		done, msg, err := check(ctx, obj)
		if msg != "" && msg != lastMsg {
			lastMsg = msg
			if report != nil {
				report(msg)
			}
		}
		return done || err != nil, err
	})
	switch {
	case gone:
		return nil, &DeletedError{Kind: spec.Kind, Target: t}
	case errors.Is(err, errWaitEnded):
		return obj, ctx.Err()
	}
	return obj, err
}

// begin starts WaitReady's and WaitFor's wait on *t: it registers with spec's shared informer
// (the caller unregisters w when done) and reads the object's first copy (first), and fills
// t.UID (and st.target) from it when *t named none. Errors (nothing left registered):
// *DeletedError when the object is not there, ended() when ctx ended first (WaitReady's
// TimeoutError, WaitFor's ctx.Err()), otherwise the informer's or the read's error.
func (r *Registry) begin(ctx context.Context, spec Spec, t *Target, st *waitState, ended func() error) (*sharedInformer, *waiter, *unstructured.Unstructured, error) {
	si, err := r.informerFor(spec, t.Namespace)
	if err != nil {
		return nil, nil, nil, err
	}
	w := si.register(t.key())
	obj, err := r.first(ctx, si, spec, *t, st)
	switch {
	case err == nil:
	case isObjectNotFound(err, *t):
		err = &DeletedError{Kind: spec.Kind, Target: *t}
	case ctx.Err() != nil:
		err = ended()
	}
	if err != nil {
		si.unregister(t.key(), w)
		return nil, nil, nil, err
	}
	if t.UID == "" {
		t.UID = string(obj.GetUID())
		st.target = *t
	}
	return si, w, obj, nil
}

// Check is WaitFor's test of a copy of the object waited on: done ends the wait, msg ("" for
// none) is a progress message, a non-nil err ends the wait with that error.
type Check func(ctx context.Context, obj *unstructured.Unstructured) (done bool, msg string, err error)

// errWaitEnded is follow's error when ctx ends first.
var errWaitEnded = errors.New("wait: context ended")

// first returns a wait's first copy of t: t.Known, or the informer's copy of it when that is
// no older (registered before looking: every change from here on wakes the waiter, and the
// informer's copy covers the changes before; a copy missing from the informer is not
// suspicious, since the caller has just written the object); without t.Known, a GET retrying
// transient errors (get).
func (r *Registry) first(ctx context.Context, si *sharedInformer, spec Spec, t Target, st *waitState) (*unstructured.Unstructured, error) {
	if t.Known == nil {
		return r.get(ctx, spec, t, st)
	}
	obj := t.Known.DeepCopy()
	if u := si.cached(t.key()); u != nil && string(u.GetUID()) == string(obj.GetUID()) && !resourceversion.Older(u.GetResourceVersion(), obj.GetResourceVersion()) {
		obj = u
	}
	return obj, nil
}

// follow calls step with obj, then with every newer copy of t the informer delivers (w wakes
// it), with a GET's copy every DegradedPoll while the informer's watch fails, and with the
// newest copy every recheck when recheck > 0, until step reports done (its error is returned
// with the copy), the object is gone (gone true), the informer cannot list (that error), or ctx
// ends (errWaitEnded).
func (r *Registry) follow(ctx context.Context, si *sharedInformer, w *waiter, spec Spec, t Target, st *waitState, obj *unstructured.Unstructured,
	recheck time.Duration, step func(*unstructured.Unstructured) (bool, error)) (last *unstructured.Unstructured, gone bool, err error) {
	poll := time.NewTicker(DegradedPoll)
	defer poll.Stop()
	var again <-chan time.Time
	if recheck > 0 {
		tick := time.NewTicker(recheck)
		defer tick.Stop()
		again = tick.C
	}
	for {
		if done, err := step(obj); done {
			return obj, false, err
		}
		var next *unstructured.Unstructured
		select {
		case <-ctx.Done():
			return obj, false, errWaitEnded
		case <-w.ch:
			next, gone, err = r.current(ctx, si, spec, t, st)
			if err != nil {
				return obj, false, err
			}
		case <-poll.C:
			next, gone = r.pollDegraded(ctx, si, spec, t, st)
		case <-again:
		}
		if gone {
			return nil, true, nil
		}
		if next != nil {
			obj = next
		}
	}
}

// logVerdict logs v when it differs from *last in state, summary or why, and records it there.
func (r *Registry) logVerdict(ctx context.Context, spec Spec, t Target, v Verdict, last *Verdict) {
	if v.State == last.State && v.Summary == last.Summary && v.Why == last.Why {
		return
	}
	r.log(ctx, "wait: "+v.State.String(), map[string]interface{}{
		"kind": spec.Kind, "object": t.key(), "summary": v.Summary, "why": v.Why,
		"generation": v.Generation, "observed_generation": v.ObservedGeneration,
	})
	*last = v
}

// DegradedPoll is how often a wait GETs its object while the shared informer's watch is
// failing (an API server or etcd outage): the informer's reflector re-lists on a backoff that
// grows to 30 s, so without the poll a wait would resume up to 30 s after the API server is
// back; with it, within about DegradedPoll. No request is made while the watch works.
const DegradedPoll = time.Second

// pollDegraded is one poll of t while si's watch is failing (nothing otherwise): one GET, not
// retried (the next tick retries). It returns the object when it is newer than what the wait
// saw, gone when it no longer exists (404 or another UID).
func (r *Registry) pollDegraded(ctx context.Context, si *sharedInformer, spec Spec, t Target, st *waitState) (*unstructured.Unstructured, bool) {
	if !si.degraded() {
		return nil, false
	}
	gctx, cancel := context.WithTimeout(ctx, DegradedPoll)
	defer cancel()
	u, err := r.resource(spec, t.Namespace).Get(gctx, t.Name, metav1.GetOptions{})
	switch {
	case err == nil && t.UID != "" && string(u.GetUID()) != t.UID:
		return nil, true
	case err == nil && !resourceversion.Older(u.GetResourceVersion(), st.lastRV):
		return u, false
	case isObjectNotFound(err, t):
		return nil, true
	case err != nil:
		st.lastErr = err
	}
	return nil, false
}

// Get returns the object namespace/name of spec's kind from the shared informer (started if
// needed: one LIST for every object of the kind in the namespace, shared by all callers),
// so N reads in a namespace cost one request, not N. When the informer does not have the
// object, or has not synced within informerSyncWait, it asks the API server (a GET, retried
// like a wait's), so a NotFound error is authoritative. The result is the caller's to keep
// and may be passed on as Target.Known.
func (r *Registry) Get(ctx context.Context, spec Spec, namespace, name string) (*unstructured.Unstructured, error) {
	u, _, err := r.cachedCopy(ctx, spec, namespace, name)
	if err != nil || u != nil {
		return u, err
	}
	t := Target{Namespace: namespace, Name: name}
	return r.get(ctx, spec, t, &waitState{spec: spec, target: t})
}

// Exists reports whether the object namespace/name of spec's kind exists, as the shared
// informer (see Get) knows it. When the informer has the object, a GET confirms it (the copy
// may be of an object deleted a moment ago); when it does not, no request is made, so an
// object created within the informer's lag (milliseconds) reads as absent: the same race as
// a GET followed by a write. When the informer has not synced within informerSyncWait, a GET
// decides.
func (r *Registry) Exists(ctx context.Context, spec Spec, namespace, name string) (bool, error) {
	u, synced, err := r.cachedCopy(ctx, spec, namespace, name)
	if err != nil {
		return false, err
	}
	if synced && u == nil {
		return false, nil
	}
	t := Target{Namespace: namespace, Name: name}
	_, err = r.get(ctx, spec, t, &waitState{spec: spec, target: t})
	switch {
	case err == nil:
		return true, nil
	case isObjectNotFound(err, t):
		return false, nil
	}
	return false, err
}

// cachedCopy returns the shared informer's copy of namespace/name (nil if it has none) once
// the informer has synced. synced is false when it did not within informerSyncWait, or
// cannot (its LIST is forbidden, e.g. RBAC grants get but not list/watch): the caller then
// asks the API server.
func (r *Registry) cachedCopy(ctx context.Context, spec Spec, namespace, name string) (u *unstructured.Unstructured, synced bool, err error) {
	if err := spec.validate(); err != nil {
		return nil, false, err
	}
	si, err := r.informerFor(spec, namespace)
	if err != nil {
		return nil, false, err
	}
	if si.fatal() != nil {
		return nil, false, nil
	}
	timer := time.NewTimer(informerSyncWait)
	defer timer.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-si.syncedCh:
			return si.cached(Target{Namespace: namespace, Name: name}.key()), true, nil
		case <-tick.C:
			if si.fatal() != nil {
				return nil, false, nil
			}
		case <-timer.C:
			return nil, false, nil
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// WaitDeleted waits until the object t is gone (404, or replaced by an object with another
// UID), i.e. its finalizers have run. It returns nil at once if the object does not exist,
// *FailedError at once when the reconciler reports the deletion Stalled (StalledWhileDeleting:
// e.g. a PackageSet whose uninstall fails, naming node, package, stage and message),
// *TimeoutError (with the last state, conditions and finalizers seen) when ctx ends first, or
// the API error of a non-transient GET failure.
func (r *Registry) WaitDeleted(ctx context.Context, spec Spec, t Target) error {
	if err := spec.validate(); err != nil {
		return err
	}
	st := &waitState{spec: spec, target: t, start: time.Now(), want: "the object to be gone (finalizers done)"}
	si, err := r.informerFor(spec, t.Namespace)
	if err != nil {
		return err
	}
	w := si.register(t.key())
	defer si.unregister(t.key(), w)

	obj, gone, err := r.firstForDelete(ctx, si, spec, t, st)
	if err != nil || gone {
		return err
	}
	if t.UID != "" && string(obj.GetUID()) != t.UID {
		return nil
	}
	t.UID = string(obj.GetUID())
	st.target = t
	// Once the informer has shown this object, its absence from the informer means the
	// watch (or a re-list) saw it go: no GET needed to confirm.
	inInformer := func() bool {
		u := si.cached(t.key())
		return u != nil && string(u.GetUID()) == t.UID
	}
	seen := inInformer()
	poll := time.NewTicker(DegradedPoll)
	defer poll.Stop()
	for {
		v := Evaluate(spec, obj)
		st.observe(obj, v)
		if c := StalledWhileDeleting(obj); c != nil {
			v.State, v.Failing, v.Why = Failed, c, "deletion stalled"
			return r.failed(ctx, st, obj, v)
		}
		select {
		case <-ctx.Done():
			return r.timeout(ctx, st, obj)
		case <-w.ch:
			if seen && si.cached(t.key()) == nil {
				r.logDeleted(ctx, spec, t)
				return nil
			}
			seen = seen || inInformer()
			next, gone, err := r.current(ctx, si, spec, t, st)
			if err != nil {
				return err
			}
			if gone {
				r.logDeleted(ctx, spec, t)
				return nil
			}
			if next != nil {
				obj = next
			}
		case <-poll.C:
			next, gone := r.pollDegraded(ctx, si, spec, t, st)
			if gone {
				r.logDeleted(ctx, spec, t)
				return nil
			}
			if next != nil {
				obj = next
			}
		}
	}
}

// firstForDelete returns a deletion wait's first copy of t, or gone when the object no longer
// exists. With t.Known (registered before looking: every change from here on wakes the waiter;
// what happened before — the object may be gone already — is in the informer's copy, or in its
// absence from a synced informer, confirmed with a GET by current) it starts from that copy;
// otherwise from a GET (retrying transient errors), a 404 being gone. Errors: current's, a
// *TimeoutError when ctx ends during the GET, or the GET's non-transient error.
func (r *Registry) firstForDelete(ctx context.Context, si *sharedInformer, spec Spec, t Target, st *waitState) (obj *unstructured.Unstructured, gone bool, err error) {
	if t.Known == nil {
		obj, err = r.get(ctx, spec, t, st)
		switch {
		case err == nil:
			return obj, false, nil
		case isObjectNotFound(err, t):
			return nil, true, nil
		case ctx.Err() != nil:
			return nil, false, r.timeout(ctx, st, nil)
		}
		return nil, false, err
	}
	obj = t.Known.DeepCopy()
	if t.UID == "" {
		t.UID = string(obj.GetUID())
	}
	st.observe(obj, Evaluate(spec, obj))
	next, gone, err := r.current(ctx, si, spec, t, st)
	if next != nil {
		obj = next
	}
	return obj, gone, err
}

// logDeleted logs that the object t is gone.
func (r *Registry) logDeleted(ctx context.Context, spec Spec, t Target) {
	r.log(ctx, "wait: deleted", map[string]interface{}{"kind": spec.Kind, "object": t.key()})
}

// current returns the informer's copy of t if it is newer than what the wait saw last; gone
// when the object no longer exists (confirmed with a GET) or has another UID.
func (r *Registry) current(ctx context.Context, si *sharedInformer, spec Spec, t Target, st *waitState) (obj *unstructured.Unstructured, gone bool, err error) {
	item, exists, _ := si.inf.GetStore().GetByKey(t.key())
	if exists {
		u, ok := item.(*unstructured.Unstructured)
		if !ok || resourceversion.Older(u.GetResourceVersion(), st.lastRV) {
			return nil, false, nil // stale copy from a lagging informer
		}
		if t.UID != "" && string(u.GetUID()) != t.UID {
			return nil, true, nil
		}
		return u.DeepCopy(), false, nil
	}
	if err := si.fatal(); err != nil {
		r.drop(si)
		return nil, false, fmt.Errorf("watching %s in namespace %q: %w", spec.GVR.Resource, t.Namespace, err)
	}
	if !si.synced.Load() {
		return nil, false, nil
	}
	// Absent from a synced cache: either gone, or the informer has not seen it yet. Ask.
	u, err := r.resource(spec, t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		if t.UID != "" && string(u.GetUID()) != t.UID {
			return nil, true, nil
		}
		return u, false, nil
	case isObjectNotFound(err, t):
		return nil, true, nil
	default:
		st.lastErr = err
		return nil, false, nil
	}
}

// get reads t, retrying transient errors with Backoff until ctx ends.
func (r *Registry) get(ctx context.Context, spec Spec, t Target, st *waitState) (*unstructured.Unstructured, error) {
	b := r.Backoff
	b.Steps = int(^uint(0) >> 1)
	for {
		u, err := r.resource(spec, t.Namespace).Get(ctx, t.Name, metav1.GetOptions{})
		if err == nil {
			return u, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if apierrors.IsNotFound(err) || !retriable(err) {
			return nil, err
		}
		st.lastErr = err
		r.log(ctx, "wait: retrying after API error", map[string]interface{}{"kind": spec.Kind, "object": t.key(), "error": err.Error()})
		timer := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

func (r *Registry) resource(spec Spec, namespace string) dynamic.ResourceInterface {
	if !spec.Namespaced {
		return r.dyn.Resource(spec.GVR)
	}
	return r.dyn.Resource(spec.GVR).Namespace(namespace)
}

func (r *Registry) failed(ctx context.Context, st *waitState, obj *unstructured.Unstructured, v Verdict) error {
	e := &FailedError{Kind: st.spec.Kind, Target: st.target, Verdict: v}
	if st.spec.Detail != nil {
		e.Detail = st.spec.Detail(obj)
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventsTimeout)
	defer cancel()
	e.Events, e.EventsErr = warningEvents(ectx, r.core, r.dyn, st.spec, obj)
	return e
}

func (r *Registry) timeout(ctx context.Context, st *waitState, obj *unstructured.Unstructured) error {
	e := &TimeoutError{
		Kind: st.spec.Kind, Target: st.target, Waited: time.Since(st.start), Want: st.want,
		Seen: st.seen, Last: st.last, Finalizers: st.finalizers, LastErr: st.lastErr, Cause: ctx.Err(),
	}
	if obj != nil {
		ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), eventsTimeout)
		defer cancel()
		e.Events, e.EventsErr = warningEvents(ectx, r.core, r.dyn, st.spec, obj)
	}
	return e
}

func (r *Registry) log(ctx context.Context, msg string, fields map[string]interface{}) {
	if r.Log != nil {
		r.Log(ctx, msg, fields)
	}
}

// waitState is what one wait has seen so far (for timeout reports and staleness checks).
type waitState struct {
	spec       Spec
	target     Target
	start      time.Time
	want       string
	seen       bool
	last       Verdict
	lastRV     string
	finalizers []string
	lastErr    error
}

func (s *waitState) observe(obj *unstructured.Unstructured, v Verdict) {
	s.seen = true
	v.Conditions = conditionsCopy(v.Conditions)
	s.last = v
	s.lastRV = obj.GetResourceVersion()
	s.finalizers = obj.GetFinalizers()
}

// sharedInformer is one informer plus the waiters registered per object key.
type sharedInformer struct {
	key    informerKey
	inf    cache.SharedIndexInformer
	stop   chan struct{}
	once   sync.Once
	synced atomic.Bool
	// syncedCh is closed when the informer has synced (synced is then true).
	syncedCh chan struct{}
	mu       sync.Mutex
	waiters  map[string]map[*waiter]struct{}
	lastErr  error
	// watchFailing: the reflector reported a list/watch error, or the informer's probe could
	// not reach the API server (an outage: client-go's reflector retries a refused watch with
	// backoff without reporting it); recoveredAt is when the probe reached it again. The next
	// event clears both. Waits poll meanwhile (DegradedPoll), and for up to degradedGrace
	// after the recovery, while the reflector may still be in its re-list backoff.
	watchFailing bool
	recoveredAt  time.Time
	// lastEvent is when the informer last delivered an event (unix nanoseconds).
	lastEvent atomic.Int64
}

// degradedGrace bounds the polling after the API server is reached again: client-go's
// reflector backs off at most 30 s before it re-lists.
const degradedGrace = 35 * time.Second

// degraded reports whether waits on this informer should poll (see watchFailing).
func (si *sharedInformer) degraded() bool {
	si.mu.Lock()
	defer si.mu.Unlock()
	return si.watchFailing && (si.recoveredAt.IsZero() || time.Since(si.recoveredAt) < degradedGrace)
}

// idleProbe is the probe's period while no wait is registered on the informer.
const idleProbe = 15 * time.Second

// probeQuiet is how long an informer may deliver no event before its probe checks that the
// API server still answers.
const probeQuiet = 2 * time.Second

// probe runs until stop: every DegradedPoll while a wait is registered on the informer (every
// idleProbe while none is), when the informer has been quiet for probeQuiet, one LIST of at
// most one object tells whether the API server answers; a failure marks the informer degraded,
// the first success after one starts the recovery grace (so a wait that starts after an outage
// still polls while the reflector backs off). Informers outlive their waits (one per kind and
// namespace for the process): idle ones probing every second added up to 45 LISTs a second by
// the end of an acceptance run, whose in-process providers are never closed. The LIST asks
// for the latest resourceVersion (""): with "0" the API server serves it from its watch cache
// and ignores the limit (1,000 Performers: 2.2 s of the provider's 14.4 s CPU in a no-op plan).
func (si *sharedInformer) probe(ri dynamic.ResourceInterface) {
	t := time.NewTicker(DegradedPoll)
	defer t.Stop()
	lastProbe := time.Now()
	for {
		select {
		case <-si.stop:
			return
		case <-t.C:
		}
		if time.Since(time.Unix(0, si.lastEvent.Load())) < probeQuiet || !si.hasWaiters() && time.Since(lastProbe) < idleProbe {
			continue
		}
		lastProbe = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), DegradedPoll)
		_, err := ri.List(ctx, metav1.ListOptions{Limit: 1})
		cancel()
		si.mu.Lock()
		switch {
		case err != nil && (apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)):
			// not an outage: RBAC without list (the waits GET instead)
		case err != nil:
			si.watchFailing, si.recoveredAt = true, time.Time{}
		case si.watchFailing && si.recoveredAt.IsZero():
			si.recoveredAt = time.Now()
		}
		si.mu.Unlock()
	}
}

type waiter struct{ ch chan struct{} }

// notify wakes the waiter; wake-ups coalesce (the waiter reads the latest copy from the cache).
func (w *waiter) notify() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

func (r *Registry) informerFor(spec Spec, namespace string) (*sharedInformer, error) {
	if !spec.Namespaced {
		namespace = metav1.NamespaceAll
	}
	k := informerKey{gvr: spec.GVR, namespace: namespace}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("wait: registry is closed")
	}
	if si, ok := r.informers[k]; ok {
		return si, nil
	}
	inf := dynamicinformer.NewFilteredDynamicInformer(r.dyn, spec.GVR, namespace, 0, cache.Indexers{}, nil).Informer()
	si := &sharedInformer{key: k, inf: inf, stop: make(chan struct{}), syncedCh: make(chan struct{}), waiters: map[string]map[*waiter]struct{}{}}
	// Managed fields are large and never read here.
	_ = inf.SetTransform(func(o interface{}) (interface{}, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
		}
		return o, nil
	})
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, rf *cache.Reflector, err error) {
		si.mu.Lock()
		si.lastErr, si.watchFailing, si.recoveredAt = err, true, time.Time{}
		si.mu.Unlock()
		si.notifyAll()
		cache.DefaultWatchErrorHandler(ctx, rf, err)
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    si.notifyObj,
		UpdateFunc: func(_, n interface{}) { si.notifyObj(n) },
		DeleteFunc: si.notifyObj,
	})
	si.lastEvent.Store(time.Now().UnixNano())
	go inf.Run(si.stop)
	if spec.Namespaced {
		go si.probe(r.dyn.Resource(spec.GVR).Namespace(namespace))
	} else {
		go si.probe(r.dyn.Resource(spec.GVR))
	}
	go func() {
		if cache.WaitForCacheSync(si.stop, inf.HasSynced) {
			si.synced.Store(true)
			close(si.syncedCh)
			si.notifyAll()
		}
	}()
	r.informers[k] = si
	r.log(context.Background(), "wait: started shared informer", map[string]interface{}{"resource": spec.GVR.String(), "namespace": namespace})
	return si, nil
}

// drop stops and forgets an informer that cannot list (so a later wait starts afresh, e.g.
// once RBAC or the CRD is fixed).
func (r *Registry) drop(si *sharedInformer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.informers[si.key] == si {
		delete(r.informers, si.key)
	}
	si.stopOnce()
}

// hasWaiters reports whether a wait is registered on the informer.
func (si *sharedInformer) hasWaiters() bool {
	si.mu.Lock()
	defer si.mu.Unlock()
	return len(si.waiters) > 0
}

func (si *sharedInformer) stopOnce() { si.once.Do(func() { close(si.stop) }) }

// cached returns a copy of the informer's object under key, or nil.
func (si *sharedInformer) cached(key string) *unstructured.Unstructured {
	item, exists, _ := si.inf.GetStore().GetByKey(key)
	if !exists {
		return nil
	}
	u, ok := item.(*unstructured.Unstructured)
	if !ok {
		return nil
	}
	return u.DeepCopy()
}

func (si *sharedInformer) register(key string) *waiter {
	w := &waiter{ch: make(chan struct{}, 1)}
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.waiters[key] == nil {
		si.waiters[key] = map[*waiter]struct{}{}
	}
	si.waiters[key][w] = struct{}{}
	return w
}

func (si *sharedInformer) unregister(key string, w *waiter) {
	si.mu.Lock()
	defer si.mu.Unlock()
	delete(si.waiters[key], w)
	if len(si.waiters[key]) == 0 {
		delete(si.waiters, key)
	}
}

func (si *sharedInformer) notifyObj(o interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(o)
	if err != nil {
		return
	}
	si.lastEvent.Store(time.Now().UnixNano())
	si.mu.Lock()
	defer si.mu.Unlock()
	si.watchFailing, si.recoveredAt = false, time.Time{} // an event: the watch (or a re-list) works again
	for w := range si.waiters[key] {
		w.notify()
	}
}

func (si *sharedInformer) notifyAll() {
	si.mu.Lock()
	defer si.mu.Unlock()
	for _, ws := range si.waiters {
		for w := range ws {
			w.notify()
		}
	}
}

// fatal returns the informer's list error if it has never synced and the error will not go
// away by retrying (Forbidden, or the resource type is not served: CRD missing).
func (si *sharedInformer) fatal() error {
	if si.synced.Load() {
		return nil
	}
	si.mu.Lock()
	defer si.mu.Unlock()
	if si.lastErr != nil && (apierrors.IsForbidden(si.lastErr) || apierrors.IsNotFound(si.lastErr)) {
		return si.lastErr
	}
	return nil
}

// retriable reports whether an API error may go away by itself: server errors, throttling,
// timeouts and connection problems are retried; client errors (forbidden, invalid, ...) are not.
func retriable(err error) bool {
	switch {
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err), apierrors.IsBadRequest(err),
		apierrors.IsInvalid(err), apierrors.IsMethodNotSupported(err), apierrors.IsNotAcceptable(err),
		apierrors.IsUnsupportedMediaType(err), apierrors.IsGone(err):
		return false
	}
	return true
}

// isObjectNotFound reports a 404 about the object itself (not about its resource type, which
// is what a missing CRD gives).
func isObjectNotFound(err error, t Target) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		return false
	}
	d := se.Status().Details
	return d != nil && d.Name == t.Name
}

func joinOr(vals []string) string {
	switch len(vals) {
	case 0:
		return ""
	case 1:
		return vals[0]
	}
	s := vals[0]
	for _, v := range vals[1:] {
		s += " or " + v
	}
	return s
}
