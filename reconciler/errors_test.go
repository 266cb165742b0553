package reconciler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The classification of action errors (errors.go), on the errors client-go returns. Needs no
// cluster.
func TestPermanent(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	pod := schema.GroupKind{Kind: "Pod"}
	for _, c := range []struct {
		name   string
		err    error
		reason string // "" = transient
	}{
		{"invalid", apierrors.NewInvalid(pod, "performer-x", field.ErrorList{field.Invalid(field.NewPath("spec", "nodeSelector"), "bad key!", "name part must consist of ...")}), "Invalid"},
		{"forbidden (admission)", apierrors.NewForbidden(pods, "performer-x", errors.New(`error looking up service account ns/sa: serviceaccount "sa" not found`)), "Forbidden"},
		{"bad request", apierrors.NewBadRequest("bad"), "BadRequest"},
		{"wrapped invalid", fmt.Errorf("CreatePod: %w", apierrors.NewInvalid(pod, "x", nil)), "Invalid"},
		{"service CIDR full", apierrors.NewInternalError(errors.New("failed to allocate a serviceIP: range is full")), "InternalError"},
		{"too large for etcd", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), "RequestEntityTooLarge"},
		{"413", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), "RequestEntityTooLarge"},
		{"UID precondition", apierrors.NewConflict(pods, "x", errors.New("Precondition failed: UID in precondition: 1, UID in object meta: 2")), "Conflict"},
		{"other internal error", apierrors.NewInternalError(errors.New("etcdserver: request timed out")), ""},
		{"conflict", apierrors.NewConflict(pods, "x", errors.New("the object has been modified")), ""},
		{"already exists", apierrors.NewAlreadyExists(pods, "x"), ""},
		{"not found", apierrors.NewNotFound(pods, "x"), ""},
		{"429", apierrors.NewTooManyRequests("slow down", 1), ""},
		{"503", apierrors.NewServiceUnavailable("unavailable"), ""},
		{"timeout", apierrors.NewTimeoutError("timeout", 1), ""},
		{"deadline", context.DeadlineExceeded, ""},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, ""},
		{"unknown", errors.New("something"), ""},
	} {
		reason, ok := permanent(c.err)
		if ok != (c.reason != "") || reason != c.reason {
			t.Errorf("%s: permanent = %q, %v; want %q", c.name, reason, ok, c.reason)
		}
	}
}

// A rejection is kept per object and generation; its retry delay doubles while the same
// action keeps being rejected; a new generation or a success drops it.
func TestRejections(t *testing.T) {
	var s rejections
	key := types.NamespacedName{Namespace: "ns", Name: "x"}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if s.get(key, 1) != nil {
		t.Fatal("empty store returned a rejection")
	}
	s.record(key, 1, "CreatePod", "Pod", "ns/performer-x", "Forbidden", "m", now)
	r := s.get(key, 1)
	if r == nil || r.RetryAt != now.Add(rejectionRetryMin) || r.Action != "CreatePod" || r.Message != "m" {
		t.Fatalf("rejection %+v", r)
	}
	s.record(key, 1, "CreatePod", "Pod", "ns/performer-x", "Forbidden", "m", now)
	if r := s.get(key, 1); r.RetryAt != now.Add(2*rejectionRetryMin) {
		t.Errorf("second rejection retries at %v, want doubled delay", r.RetryAt)
	}
	s.accepted(key, "EnsureService")
	if s.get(key, 1) == nil {
		t.Error("success of another action dropped the rejection")
	}
	s.accepted(key, "CreatePod")
	if s.get(key, 1) != nil {
		t.Error("success did not drop the rejection")
	}
	s.record(key, 1, "CreatePod", "Pod", "ns/performer-x", "Forbidden", "m", now)
	if s.get(key, 2) != nil || s.get(key, 1) != nil {
		t.Error("a new generation did not drop the rejection")
	}
	for range 20 {
		s.record(key, 3, "CreatePod", "Pod", "ns/performer-x", "Forbidden", "m", now)
	}
	if r := s.get(key, 3); r.RetryAt != now.Add(rejectionRetryMax) {
		t.Errorf("delay not capped: %v", r.RetryAt.Sub(now))
	}
}

// actInOrder (the Executor's and Workspace's act step): a conflict requeues, a permanent
// rejection is recorded and requeues at once, another error ends the pass, the actions after
// a failure are not run, and an earlier rejection of an action that now succeeds is dropped.
func TestActInOrder(t *testing.T) {
	pods := schema.GroupResource{Resource: "pods"}
	key := types.NamespacedName{Namespace: "ns", Name: "x"}
	obj := &v1alpha1.Executor{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x", Generation: 4}}
	describe := func(a string, err error) *actError { return &actError{action: a, kind: "Pod", name: "p", err: err} }
	other := errors.New("boom")
	for _, c := range []struct {
		name     string
		fail     error // of action "b"
		res      ctrl.Result
		done     bool
		err      error
		ran      string
		rejected bool
	}{
		{"all succeed", nil, ctrl.Result{}, false, nil, "abc", false},
		{"conflict", apierrors.NewConflict(pods, "p", errors.New("modified")), ctrl.Result{RequeueAfter: conflictRetry}, true, nil, "ab", false},
		{"already exists", apierrors.NewAlreadyExists(pods, "p"), ctrl.Result{RequeueAfter: conflictRetry}, true, nil, "ab", false},
		{"permanent", apierrors.NewForbidden(pods, "p", errors.New("quota")), ctrl.Result{RequeueAfter: rejectedRequeue}, true, nil, "ab", true},
		{"transient", other, ctrl.Result{}, true, other, "ab", false},
	} {
		var s rejections
		ran := ""
		act := func(a string) error {
			ran += a
			if a == "b" {
				return c.fail
			}
			return nil
		}
		res, done, err := actInOrder(context.Background(), &s, key, obj, nil, []string{"a", "b", "c"}, act, describe)
		if res != c.res || done != c.done || !errors.Is(err, c.err) || ran != c.ran {
			t.Errorf("%s: %v, %v, %v after %q; want %v, %v, %v after %q", c.name, res, done, err, ran, c.res, c.done, c.err, c.ran)
		}
		if r := s.get(key, 4); (r != nil) != c.rejected || r != nil && (r.Action != "b" || r.Name != "ns/p") {
			t.Errorf("%s: rejection %+v", c.name, r)
		}
	}
	var s rejections
	s.record(key, 4, "b", "Pod", "ns/p", "Forbidden", "m", time.Now())
	rj := s.get(key, 4)
	if _, done, err := actInOrder(context.Background(), &s, key, obj, rj, []string{"a", "b"}, func(string) error { return nil }, describe); done || err != nil {
		t.Fatalf("retried actions: done %v, err %v", done, err)
	}
	if s.get(key, 4) != nil {
		t.Error("the rejected action succeeded but its rejection was kept")
	}
}
