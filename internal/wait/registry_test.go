package wait

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

type fakeEnv struct {
	dyn      *dynamicfake.FakeDynamicClient
	core     *k8sfake.Clientset
	reg      *Registry
	watching chan schema.GroupVersionResource
}

func newFakeEnv(t *testing.T, objs ...runtime.Object) *fakeEnv {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		Performer.GVR: "PerformerList",
		PodsGVR:       "PodList",
		ServicesGVR:   "ServiceList",
	}, objs...)
	env := &fakeEnv{dyn: dyn, core: k8sfake.NewClientset(), watching: make(chan schema.GroupVersionResource, 100)}
	// The fake's List→Watch has a gap a real API server does not have (no resourceVersion
	// replay); tests wait for the watch before they write.
	dyn.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		env.watching <- a.GetResource()
		return false, nil, nil
	})
	env.reg = NewRegistry(dyn, env.core)
	env.reg.Backoff.Duration = time.Millisecond
	t.Cleanup(env.reg.Close)
	return env
}

func (e *fakeEnv) waitWatching(t *testing.T) {
	t.Helper()
	select {
	case <-e.watching:
	case <-time.After(5 * time.Second):
		t.Fatal("informer never started watching")
	}
	// The informer handles the watch asynchronously; give it a moment to be set up.
	time.Sleep(20 * time.Millisecond)
}

func (e *fakeEnv) update(t *testing.T, u *unstructured.Unstructured) {
	t.Helper()
	if _, err := e.dyn.Resource(Performer.GVR).Namespace(u.GetNamespace()).Update(context.Background(), u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

type result struct {
	obj *unstructured.Unstructured
	err error
	at  time.Time
}

func (e *fakeEnv) waitReadyAsync(ctx context.Context, tg Target) <-chan result {
	ch := make(chan result, 1)
	go func() {
		o, err := e.reg.WaitReady(ctx, Performer, tg)
		ch <- result{o, err, time.Now()}
	}()
	return ch
}

func TestWaitReadySucceedsOnRunning(t *testing.T) {
	p := newPerformer("ns", "p", 1)
	env := newFakeEnv(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p", Generation: 1})
	env.waitWatching(t)

	for _, phase := range []string{"Creating", "Scheduling"} {
		env.update(t, setStatus(newPerformer("ns", "p", 1), phase, 1, cond("Ready", "False", phase, "")))
		select {
		case r := <-done:
			t.Fatalf("returned early on %s: %v", phase, r.err)
		case <-time.After(30 * time.Millisecond):
		}
	}
	running := setStatus(newPerformer("ns", "p", 1), "Running", 1, cond("Ready", "True", "Running", ""))
	running.Object["status"].(map[string]interface{})["nodeName"] = "gantry-gpu-0"
	written, before := time.Now(), len(env.dyn.Actions())
	env.update(t, running)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if n, _, _ := unstructured.NestedString(r.obj.Object, "status", "nodeName"); n != "gantry-gpu-0" {
		t.Errorf("returned object without the final status: %v", r.obj.Object["status"])
	}
	// Event-driven, shown by the requests rather than the clock: between the write and the
	// return, the wait made no GET (a poll would have); the informer's event carried it.
	for _, a := range env.dyn.Actions()[before:] {
		if a.GetVerb() == "get" {
			t.Errorf("the wait polled (%s %s) instead of taking the informer's event", a.GetVerb(), a.GetResource().Resource)
		}
	}
	t.Logf("wait latency (status written → wait returned): %s", r.at.Sub(written))
}

func TestWaitReadyReturnsAtOnceWhenAlreadyRunning(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 3), "Running", 3, cond("Ready", "True", "Running", "")))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := env.reg.WaitReady(ctx, Performer, Target{Namespace: "ns", Name: "p", Generation: 3}); err != nil {
		t.Fatal(err)
	}
}

// A copy with a generation older than the one just written is stale (e.g. from a lagging
// cache) and must not end the wait even if it says Running.
func TestWaitReadyIgnoresOlderGeneration(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 1), "Running", 1, cond("Ready", "True", "Running", "")))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p", Generation: 2})
	env.waitWatching(t)
	select {
	case r := <-done:
		t.Fatalf("returned on a stale generation: %v", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	// Generation 2 written, not yet observed.
	env.update(t, setStatus(newPerformer("ns", "p", 2), "Running", 1, cond("Ready", "True", "Running", "")))
	select {
	case r := <-done:
		t.Fatalf("returned before observedGeneration caught up: %v", r.err)
	case <-time.After(50 * time.Millisecond):
	}
	env.update(t, setStatus(newPerformer("ns", "p", 2), "Running", 2, cond("Ready", "True", "Running", "")))
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestWaitReadyFailsAtOnceWithConditionAndEvents(t *testing.T) {
	p := newPerformer("ns", "big", 1)
	pod := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{
			"name": "performer-big-x1", "namespace": "ns", "uid": "pod-uid",
			"ownerReferences": []interface{}{map[string]interface{}{"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer", "name": "big", "uid": "uid-big"}},
		},
	}}
	otherPod := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]interface{}{"name": "someone-else", "namespace": "ns", "uid": "other-uid"},
	}}
	env := newFakeEnv(t, p, pod, otherPod)
	ev := func(name, objKind, objName, uid, typ, reason, msg string, at time.Time) {
		_, err := env.core.CoreV1().Events("ns").Create(context.Background(), &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Name: name, Namespace: "ns"},
			InvolvedObject: corev1.ObjectReference{Kind: objKind, Name: objName, Namespace: "ns", UID: types.UID(uid)},
			Type:           typ, Reason: reason, Message: msg, Count: 2,
			LastTimestamp: metav1.NewTime(at),
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev("e1", "Pod", "performer-big-x1", "pod-uid", corev1.EventTypeWarning, "FailedScheduling", unschedulable, base.Add(2*time.Minute))
	ev("e2", "Pod", "someone-else", "other-uid", corev1.EventTypeWarning, "FailedScheduling", "not ours", base.Add(3*time.Minute))
	ev("e3", "Pod", "performer-big-x1", "pod-uid", corev1.EventTypeNormal, "Scheduled", "normal events are not quoted", base.Add(4*time.Minute))
	ev("e4", "Performer", "big", "uid-big", corev1.EventTypeWarning, "Unschedulable", "performer could not be placed", base.Add(1*time.Minute))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "big", Generation: 1})
	env.waitWatching(t)
	env.update(t, setStatus(newPerformer("ns", "big", 1), "Failed", 1,
		cond("Ready", "False", "Unschedulable", unschedulable), cond("Stalled", "True", "Unschedulable", unschedulable)))
	var r result
	select {
	case r = <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("did not fail at once")
	}
	var fe *FailedError
	if !errors.As(r.err, &fe) {
		t.Fatalf("err = %v, want *FailedError", r.err)
	}
	msg := r.err.Error()
	for _, want := range []string{"Stalled=True (Unschedulable: 0/7 nodes are available: 4 Insufficient nvidia.com/gpu", "Pod/performer-big-x1 FailedScheduling (x2)", "Performer/big Unschedulable"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	for _, bad := range []string{"not ours", "normal events"} {
		if strings.Contains(msg, bad) {
			t.Errorf("error quotes an unrelated event %q:\n%s", bad, msg)
		}
	}
	// newest first
	if strings.Index(msg, "FailedScheduling") > strings.Index(msg, "Performer/big Unschedulable") {
		t.Errorf("events not newest first:\n%s", msg)
	}
}

func TestWaitReadyTimeoutReportsLastState(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "slow", 1), "Scheduling", 1, cond("Ready", "False", "Scheduling", "waiting for a node")))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := env.reg.WaitReady(ctx, Performer, Target{Namespace: "ns", Name: "slow"})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TimeoutError", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout does not unwrap to DeadlineExceeded")
	}
	for _, want := range []string{"timed out", "summary Scheduling", "Ready=False (Scheduling: waiting for a node)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %s", want, err)
		}
	}
}

func TestWaitReadyNoStatusHintsAtReconciler(t *testing.T) {
	env := newFakeEnv(t, newPerformer("ns", "orphan", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := env.reg.WaitReady(ctx, Performer, Target{Namespace: "ns", Name: "orphan"})
	if err == nil || !strings.Contains(err.Error(), "is gantry-reconciler running") {
		t.Fatalf("err = %v", err)
	}
}

func TestWaitReadyRetriesTransientErrors(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 1), "Running", 1))
	var mu sync.Mutex
	fails := 3
	env.dyn.PrependReactor("get", "performers", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		if fails > 0 {
			fails--
			return true, nil, apierrors.NewServiceUnavailable("etcd leader change")
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := env.reg.WaitReady(ctx, Performer, Target{Namespace: "ns", Name: "p"}); err != nil {
		t.Fatal(err)
	}
	if fails != 0 {
		t.Errorf("fails left: %d", fails)
	}
}

func TestWaitReadyNonTransientErrorReturns(t *testing.T) {
	env := newFakeEnv(t, newPerformer("ns", "p", 1))
	env.dyn.PrependReactor("get", "performers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(Performer.GVR.GroupResource(), "p", errors.New("RBAC says no"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := env.reg.WaitReady(ctx, Performer, Target{Namespace: "ns", Name: "p"})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
}

func TestWaitReadyDeletedWhileWaiting(t *testing.T) {
	env := newFakeEnv(t, newPerformer("ns", "p", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p"})
	env.waitWatching(t)
	if err := env.dyn.Resource(Performer.GVR).Namespace("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var de *DeletedError
	if !errors.As(r.err, &de) {
		t.Fatalf("err = %v, want *DeletedError", r.err)
	}
}

func TestWaitReadyMissingObject(t *testing.T) {
	env := newFakeEnv(t)
	_, err := env.reg.WaitReady(context.Background(), Performer, Target{Namespace: "ns", Name: "nope"})
	var de *DeletedError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want *DeletedError", err)
	}
}

func TestWaitDeleted(t *testing.T) {
	p := newPerformer("ns", "p", 1)
	p.SetFinalizers([]string{"gantry.dev/finalizer"})
	env := newFakeEnv(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- env.reg.WaitDeleted(ctx, Performer, Target{Namespace: "ns", Name: "p"}) }()
	env.waitWatching(t)
	select {
	case err := <-done:
		t.Fatalf("returned while the object exists: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	deleted := time.Now()
	if err := env.dyn.Resource(Performer.GVR).Namespace("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("delete wait latency: %s", time.Since(deleted))

	// Already gone: nil at once.
	if err := env.reg.WaitDeleted(ctx, Performer, Target{Namespace: "ns", Name: "p"}); err != nil {
		t.Fatal(err)
	}
}

func TestWaitDeletedTimeoutReportsFinalizers(t *testing.T) {
	p := setStatus(newPerformer("ns", "stuck", 1), "Terminating", 1, cond("Ready", "False", "Terminating", "deleting the Pod"))
	p.SetFinalizers([]string{"gantry.dev/finalizer"})
	env := newFakeEnv(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err := env.reg.WaitDeleted(ctx, Performer, Target{Namespace: "ns", Name: "stuck"})
	var te *TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want *TimeoutError", err)
	}
	for _, want := range []string{"finalizers still present: gantry.dev/finalizer", "summary Terminating", "deleting the Pod"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %s", want, err)
		}
	}
}

// Many concurrent waits share one informer per namespace; each is woken for its own object.
func TestRegistrySharesOneInformerPerNamespace(t *testing.T) {
	const n = 20
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, newPerformer("ns-a", fmt.Sprintf("p%d", i), 1))
	}
	objs = append(objs, newPerformer("ns-b", "q", 1))
	env := newFakeEnv(t, objs...)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	results := make([]<-chan result, n)
	for i := range n {
		results[i] = env.waitReadyAsync(ctx, Target{Namespace: "ns-a", Name: fmt.Sprintf("p%d", i)})
	}
	other := env.waitReadyAsync(ctx, Target{Namespace: "ns-b", Name: "q"})
	env.waitWatching(t)
	env.waitWatching(t)
	if got := env.reg.Informers(); got != 2 {
		t.Fatalf("informers = %d, want 2 (one per namespace)", got)
	}
	for i := range n {
		env.update(t, setStatus(newPerformer("ns-a", fmt.Sprintf("p%d", i), 1), "Running", 1))
	}
	for i := range n {
		if r := <-results[i]; r.err != nil {
			t.Fatalf("p%d: %v", i, r.err)
		}
	}
	select {
	case r := <-other:
		t.Fatalf("ns-b/q returned although it is not Running: %v", r.err)
	case <-time.After(30 * time.Millisecond):
	}
	env.update(t, setStatus(newPerformer("ns-b", "q", 1), "Running", 1))
	if r := <-other; r.err != nil {
		t.Fatal(r.err)
	}
	if got := env.reg.Informers(); got != 2 {
		t.Fatalf("informers = %d after the waits, want 2 (kept for later waits)", got)
	}
}

func TestRegistryClosed(t *testing.T) {
	env := newFakeEnv(t, newPerformer("ns", "p", 1))
	env.reg.Close()
	if _, err := env.reg.WaitReady(context.Background(), Performer, Target{Namespace: "ns", Name: "p"}); err == nil {
		t.Fatal("want an error from a closed registry")
	}
}

// getsOf counts the GET actions the fake dynamic client has seen on performers.
func (e *fakeEnv) getsOf(name string) int {
	n := 0
	for _, a := range e.dyn.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetVerb() == "get" && a.GetResource() == Performer.GVR && g.GetName() == name {
			n++
		}
	}
	return n
}

// A wait seeded with the object the caller just wrote (Target.Known) needs no GET: it starts
// from the seed (or the informer's newer copy) and follows the informer's events.
func TestWaitReadyFromKnownNeedsNoGet(t *testing.T) {
	written := setStatus(newPerformer("ns", "p", 1), "Creating", 1, cond("Ready", "False", "Creating", ""))
	env := newFakeEnv(t, written)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p", Generation: 1, Known: written.DeepCopy()})
	env.waitWatching(t)
	select {
	case r := <-done:
		t.Fatalf("returned early on Creating: %v", r.err)
	case <-time.After(30 * time.Millisecond):
	}
	env.update(t, setStatus(newPerformer("ns", "p", 1), "Running", 1, cond("Ready", "True", "Running", "")))
	if r := <-done; r.err != nil {
		t.Fatal(r.err)
	}
	if n := env.getsOf("p"); n != 0 {
		t.Errorf("%d GETs, want 0", n)
	}

	// A seed that is already Running returns at once.
	running := setStatus(newPerformer("ns", "q", 1), "Running", 1, cond("Ready", "True", "Running", ""))
	if _, err := env.reg.WaitReady(ctx, Performer, Target{Namespace: "ns", Name: "q", Generation: 1, Known: running}); err != nil {
		t.Fatal(err)
	}
}

// Registry.Get reads through the shared informer (no GET for an object it has) and says
// NotFound, after a confirming GET, for one it does not have.
func TestRegistryGet(t *testing.T) {
	env := newFakeEnv(t, newPerformer("ns", "p", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	u, err := env.reg.Get(ctx, Performer, "ns", "p")
	if err != nil || u.GetName() != "p" {
		t.Fatalf("Get = %v, %v", u, err)
	}
	if n := env.getsOf("p"); n != 0 {
		t.Errorf("%d GETs of an object the informer has, want 0", n)
	}
	if _, err := env.reg.Get(ctx, Performer, "ns", "nope"); !apierrors.IsNotFound(err) {
		t.Fatalf("Get(nope) = %v, want NotFound", err)
	}
	if n := env.getsOf("nope"); n != 1 {
		t.Errorf("%d GETs of a missing object, want 1 (to confirm)", n)
	}
	if env.reg.Informers() != 1 {
		t.Errorf("informers = %d, want 1 (shared)", env.reg.Informers())
	}
}

// WaitDeleted seeded with the copy read before the DELETE: it returns once the object is
// gone, also when it went before the wait started.
func TestWaitDeletedFromKnown(t *testing.T) {
	p := newPerformer("ns", "p", 1)
	p.SetFinalizers([]string{"gantry.dev/finalizer"})
	env := newFakeEnv(t, p, newPerformer("ns", "gone", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	live, err := env.reg.Get(ctx, Performer, "ns", "p")
	if err != nil {
		t.Fatal(err)
	}
	env.waitWatching(t)
	done := make(chan error, 1)
	go func() { done <- env.reg.WaitDeleted(ctx, Performer, Target{Namespace: "ns", Name: "p", Known: live}) }()
	select {
	case err := <-done:
		t.Fatalf("returned while the object exists: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	if err := env.dyn.Resource(Performer.GVR).Namespace("ns").Delete(ctx, "p", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := env.getsOf("p"); n != 0 {
		t.Errorf("%d GETs, want 0 (the informer had the object and saw it go)", n)
	}

	// Gone before the wait starts (the informer has seen the delete, or not yet): nil.
	known, err := env.reg.Get(ctx, Performer, "ns", "gone")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.dyn.Resource(Performer.GVR).Namespace("ns").Delete(ctx, "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := env.reg.WaitDeleted(ctx, Performer, Target{Namespace: "ns", Name: "gone", Known: known}); err != nil {
		t.Fatal(err)
	}
}

// Exists answers from the shared informer: no request for an object it does not have, a
// confirming GET for one it has (which may have gone a moment ago).
func TestRegistryExists(t *testing.T) {
	env := newFakeEnv(t, newPerformer("ns", "p", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ok, err := env.reg.Exists(ctx, Performer, "ns", "nope"); ok || err != nil {
		t.Fatalf("Exists(nope) = %v, %v", ok, err)
	}
	if n := env.getsOf("nope"); n != 0 {
		t.Errorf("%d GETs for an object the informer does not have, want 0", n)
	}
	if ok, err := env.reg.Exists(ctx, Performer, "ns", "p"); !ok || err != nil {
		t.Fatalf("Exists(p) = %v, %v", ok, err)
	}
	if n := env.getsOf("p"); n != 1 {
		t.Errorf("%d GETs for an object the informer has, want 1 (to confirm)", n)
	}
}

// With RBAC that grants get but not list/watch, Get does not wait for an informer that can
// never sync: it reads the object with a GET at once. The sync wait is made an hour, so a Get
// that waited for it would end with the context's error instead of the object.
func TestRegistryGetWithoutListPermission(t *testing.T) {
	defer func(d time.Duration) { informerSyncWait = d }(informerSyncWait)
	informerSyncWait = time.Hour
	env := newFakeEnv(t, newPerformer("ns", "p", 1))
	env.dyn.PrependReactor("list", "performers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(Performer.GVR.GroupResource(), "", errors.New("RBAC says no"))
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	u, err := env.reg.Get(ctx, Performer, "ns", "p")
	if err != nil || u.GetName() != "p" {
		t.Fatalf("Get = %v, %v: it waited for an informer whose LIST is forbidden", u, err)
	}
}

// While the shared informer cannot list or watch (an API server or etcd outage: the
// reflector's re-list backs off up to 30 s), a wait still sees its object change by polling
// with GETs (DegradedPoll): here every LIST fails, so no event ever comes, and the wait
// succeeds only through the poll (without it, it would run into its timeout).
func TestWaitReadyPollsWhileTheWatchFails(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 1), "Creating", 1))
	env.dyn.PrependReactor("list", "performers", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcdserver: request timed out")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p", Generation: 1})
	select {
	case r := <-done:
		t.Fatalf("returned before the change: %v", r.err)
	case <-time.After(300 * time.Millisecond):
	}
	env.update(t, setStatus(newPerformer("ns", "p", 1), "Running", 1, cond("Ready", "True", "Running", "")))
	r := <-done
	if r.err != nil {
		t.Fatalf("wait with a failing watch: %v", r.err)
	}
	if phase, _, _ := unstructured.NestedString(r.obj.Object, "status", "phase"); phase != "Running" {
		t.Errorf("returned phase %q", phase)
	}

	// The same for a deletion.
	del := env.reg.WaitDeleted
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = env.dyn.Resource(Performer.GVR).Namespace("ns").Delete(context.Background(), "p", metav1.DeleteOptions{})
	}()
	if err := del(ctx, Performer, Target{Namespace: "ns", Name: "p", Known: r.obj}); err != nil {
		t.Fatalf("delete wait with a failing watch: %v", err)
	}
}

// An outage the reflector does not report (client-go retries a refused watch with backoff and
// calls no error handler): the watch is silent, and once the informer has been quiet the probe
// finds the API server failing (its LIST errors), so waits poll with GETs and see the change.
func TestWaitReadyPollsWhenTheProbeFails(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 1), "Creating", 1))
	silent := watch.NewFake() // a watch that never delivers: the stream is gone
	env.dyn.PrependWatchReactor("performers", func(clienttesting.Action) (bool, watch.Interface, error) {
		return true, silent, nil
	})
	var failing atomic.Bool
	env.dyn.PrependReactor("list", "performers", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failing.Load() {
			return true, nil, errors.New(`Get "https://127.0.0.1:6443/apis/gantry.dev/v1alpha1/performers": dial tcp 127.0.0.1:6443: connect: connection refused`)
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p", Generation: 1})
	time.Sleep(300 * time.Millisecond) // the informer has listed
	failing.Store(true)
	env.update(t, setStatus(newPerformer("ns", "p", 1), "Running", 1, cond("Ready", "True", "Running", "")))
	r := <-done
	if r.err != nil {
		t.Fatalf("wait through a silent outage: %v", r.err)
	}
}

// WaitFor follows the object's informer events: check runs on each change, progress
// messages are reported once each, and the wait ends when check is done; a check error ends it
// with that error; ctx ending ends it with ctx's error.
func TestWaitFor(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 1), "Creating", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var reported []string
	check := func(_ context.Context, u *unstructured.Unstructured) (bool, string, error) {
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		if phase == "Failed" {
			return false, "", errors.New("failed")
		}
		return phase == "Running", "phase " + phase, nil
	}
	done := make(chan result, 1)
	go func() {
		o, err := env.reg.WaitFor(ctx, Performer, Target{Namespace: "ns", Name: "p"}, 0, func(m string) { reported = append(reported, m) }, check)
		done <- result{o, err, time.Now()}
	}()
	env.waitWatching(t)
	env.update(t, setStatus(newPerformer("ns", "p", 1), "Scheduling", 1))
	env.update(t, setStatus(newPerformer("ns", "p", 1), "Running", 1))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := reported[len(reported)-1]; got != "phase Running" || reported[0] != "phase Creating" {
		t.Errorf("reported %q, want phase Creating first and phase Running last", reported)
	}

	env.update(t, setStatus(newPerformer("ns", "p", 1), "Failed", 1))
	if _, err := env.reg.WaitFor(ctx, Performer, Target{Namespace: "ns", Name: "p"}, 0, nil, check); err == nil || err.Error() != "failed" {
		t.Errorf("err = %v, want check's error", err)
	}

	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	never := func(context.Context, *unstructured.Unstructured) (bool, string, error) { return false, "", nil }
	if _, err := env.reg.WaitFor(short, Performer, Target{Namespace: "ns", Name: "p"}, 10*time.Millisecond, nil, never); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
}

// An informer whose waits have ended probes every idleProbe, not every DegradedPoll: it outlives
// them (one per kind and namespace for the process), and idle ones probing once a second each
// added up to 45 LISTs a second by the end of an acceptance run.
func TestIdleInformerDoesNotProbe(t *testing.T) {
	env := newFakeEnv(t, setStatus(newPerformer("ns", "p", 1), "Running", 1, cond("Ready", "True", "Running", "")))
	var lists atomic.Int32
	env.dyn.PrependReactor("list", "performers", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return false, nil, nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if r := <-env.waitReadyAsync(ctx, Target{Namespace: "ns", Name: "p", Generation: 1}); r.err != nil {
		t.Fatal(r.err)
	}
	if env.reg.Informers() != 1 {
		t.Fatalf("%d informers, want the wait's one still running", env.reg.Informers())
	}
	env.waitWatching(t) // the informer has listed (the wait returned on its first GET)
	after := lists.Load()
	time.Sleep(probeQuiet + 2*DegradedPoll)
	if n := lists.Load() - after; n != 0 {
		t.Errorf("%d LISTs after the wait ended, want none", n)
	}
}
