package reconciler

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The expectations say a cache is stale exactly while it does not show the reconciler's own
// last writes, and forget what is met (or too old).
func TestExpectations(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "p"}
	perf := func(rv string) *v1alpha1.Performer {
		return &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: rv}}
	}
	pod := func(uid, rv string, deleting bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), ResourceVersion: rv}}
		if deleting {
			now := metav1.Now()
			p.DeletionTimestamp = &now
		}
		return p
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{UID: "s1", ResourceVersion: "12"}}

	var e expectations
	if got := e.stale(key, perf("1"), nil, nil); got != "" {
		t.Fatalf("no expectations: stale %q", got)
	}
	e.expect(key, "", nil) // a pass that wrote nothing records nothing
	if len(e.m) != 0 {
		t.Fatalf("empty expectation recorded: %v", e.m)
	}

	// Status + finalizer written (rv 10), Service and Pod created.
	e.expect(key, "10", map[string]objectWrite{"Pod": {uid: "p1", rv: "11"}, "Service": {uid: "s1", rv: "12"}})
	for _, c := range []struct {
		name string
		perf *v1alpha1.Performer
		pod  *corev1.Pod
		svc  *corev1.Service
		want string
	}{
		{"performer older than our write", perf("9"), pod("p1", "11", false), svc, "Performer"},
		{"pod not cached yet", perf("10"), nil, svc, "Pod"},
		{"an older pod cached", perf("10"), pod("p0", "5", true), svc, "Pod"},
		{"service not cached yet", perf("10"), pod("p1", "11", false), nil, "Service"},
	} {
		var podObj, svcObj = objectOrNil(c.pod), objectOrNil(c.svc)
		if got := e.stale(key, c.perf, podObj, svcObj); got != c.want {
			t.Errorf("%s: stale = %q, want %q", c.name, got, c.want)
		}
	}
	if got := e.stale(key, perf("13"), pod("p1", "14", false), svc); got != "" {
		t.Fatalf("cache caught up: stale %q", got)
	}
	if len(e.m) != 0 {
		t.Fatal("met expectation not forgotten")
	}

	// Pod deleted: stale until the cache shows the deletionTimestamp or the Pod gone.
	e.expect(key, "", map[string]objectWrite{"Pod": {uid: "p1", deleted: true}})
	if got := e.stale(key, perf("13"), pod("p1", "14", false), nil); got != "Pod" {
		t.Errorf("deleted pod still cached without deletionTimestamp: stale %q, want Pod", got)
	}
	if got := e.stale(key, perf("13"), pod("p1", "15", true), nil); got != "" {
		t.Errorf("deleting pod cached: stale %q", got)
	}

	// Expectations older than the TTL are dropped; unparsable versions never count as older.
	e.expect(key, "20", nil)
	e.m[key].at = time.Now().Add(-expectationTTL - time.Second)
	if got := e.stale(key, perf("1"), nil, nil); got != "" {
		t.Errorf("expired expectation: stale %q", got)
	}
	e.expect(key, "x20", nil)
	if got := e.stale(key, perf("1"), nil, nil); got != "" {
		t.Errorf("unparsable resourceVersion: stale %q", got)
	}
	e.expect(key, "20", nil)
	e.forget(key)
	if len(e.m) != 0 {
		t.Error("forget kept the expectation")
	}
}
