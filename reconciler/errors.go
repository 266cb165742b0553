package reconciler

import (
	"context"
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
)

// Error classification, shared by the controllers. An error writing an owned object is transient
// (5xx, 429, timeouts, conflicts, anything unrecognised: the pass returns it and
// controller-runtime backs off) or permanent (the API server refused for a reason only a change
// can fix, e.g. Invalid, Forbidden, or a full Service CIDR); failure.Classes is the one table.
// A permanent failure is recorded as a failure.Rejection and the pass requeues at once without
// an error (no hot retry loop); the next pass hands it to the machine, which stalls with the API
// server's message and withholds the action until Rejection.RetryAt. Success or a new generation
// drops it; the store is memory only, so a restart simply tries again.

// permanent reports whether err is a permanent API error (see above): a row of
// failure.Classes that is not transient, NotFound and Gone aside (the object went away under
// the pass, which the next pass sees); reason is the API server's status reason (e.g.
// "Invalid", "Forbidden"; RequestEntityTooLarge for every failure.TooLarge, though etcd's comes
// as a 500), "Rejected" where it gives none.
func permanent(err error) (reason string, ok bool) {
	c, known := failure.Classify(err)
	if !known || c.Transient || apierrors.IsNotFound(err) || apierrors.IsGone(err) {
		return "", false
	}
	r := string(apierrors.ReasonForError(err))
	switch {
	case failure.TooLarge(err):
		r = string(metav1.StatusReasonRequestEntityTooLarge)
	case r == "" || r == string(metav1.StatusReasonUnknown):
		r = "Rejected"
	}
	return r, true
}

// rejectionRetry bounds the delay before a rejected action is tried again: it doubles with
// each rejection of the same action, from rejectionRetryMin to rejectionRetryMax.
const (
	rejectionRetryMin = 5 * time.Second
	rejectionRetryMax = 5 * time.Minute
)

// rejections remembers, per object, the last permanent failure of an action (see above).
type rejections struct {
	mu sync.Mutex
	m  map[types.NamespacedName]rejected
}

type rejected struct {
	r     failure.Rejection
	delay time.Duration
}

// get returns the rejection recorded for key while generation is the one it was recorded
// at; a newer generation drops it (nil).
func (s *rejections) get(key types.NamespacedName, generation int64) *failure.Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	x, ok := s.m[key]
	if !ok {
		return nil
	}
	if x.r.Generation != generation {
		delete(s.m, key)
		return nil
	}
	r := x.r
	return &r
}

// record stores a rejection of action on the object kind/name for key at generation, with
// RetryAt after a delay that doubles while the same action keeps being rejected.
func (s *rejections) record(key types.NamespacedName, generation int64, action, kind, name, reason, message string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[types.NamespacedName]rejected{}
	}
	delay := rejectionRetryMin
	if x, ok := s.m[key]; ok && x.r.Action == action && x.r.Generation == generation {
		delay = min(2*x.delay, rejectionRetryMax)
	}
	s.m[key] = rejected{delay: delay, r: failure.Rejection{
		Action: action, Kind: kind, Name: name, Reason: reason, Message: message,
		Generation: generation, RetryAt: now.Add(delay),
	}}
}

// clear drops the rejection for key when it is of action (that action just succeeded), or
// any rejection when action is "".
func (s *rejections) clear(key types.NamespacedName, action string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if x, ok := s.m[key]; ok && (action == "" || x.r.Action == action) {
		delete(s.m, key)
	}
}

// apiMessage is failure.APIMessage: the API server's message of err, or err.Error().
func apiMessage(err error) string { return failure.APIMessage(err) }

// rejectedRequeue is the delay before the pass that hands a fresh rejection to the machine:
// at once, in effect (no error is returned, so the rate limiter does not back off).
const rejectedRequeue = time.Millisecond

// actError is an error from an action on an owned object: which action, which object.
type actError struct {
	action, kind, name string
	err                error
}

func (e *actError) Error() string { return e.action + ": " + e.err.Error() }
func (e *actError) Unwrap() error { return e.err }

// reject records err as a rejection of key's action at generation when it is (or wraps) an
// *actError whose cause is a permanent API error, logs it, and returns true: the caller ends
// the pass with an immediate requeue and the next pass hands the rejection to the machine.
// Any other error: false (the caller returns it, retried with backoff).
func (s *rejections) reject(ctx context.Context, key types.NamespacedName, generation int64, err error) bool {
	var ae *actError
	if !errors.As(err, &ae) {
		return false
	}
	reason, ok := permanent(ae.err)
	if !ok {
		return false
	}
	s.record(key, generation, ae.action, ae.kind, key.Namespace+"/"+ae.name, reason, apiMessage(ae.err), time.Now())
	log.FromContext(ctx).Info("write rejected", "action", ae.action, "object", ae.kind+" "+key.Namespace+"/"+ae.name, "error", ae.err.Error())
	return true
}

// accepted drops the rejection of action for key: the action was retried and succeeded.
func (s *rejections) accepted(key types.NamespacedName, action string) { s.clear(key, action) }

// actInOrder is the act step of the controllers whose machine returns ordered actions
// (Executor, Workspace, Aggregator), one copy so both classify errors alike: the actions run in order
// through act; a conflict or AlreadyExists (the cache lags behind the API server: the watch
// brings the next pass, the requeue is a backstop) ends the pass with a requeue; a permanent
// rejection (describe names the action's object) is recorded for the next pass (reject) with
// an immediate requeue; another error ends the pass with it. An action rejected earlier
// (rejection) that now succeeded drops its rejection. done is false when every action
// succeeded: the caller then says how the pass ends.
func actInOrder[A ~string](ctx context.Context, rejected *rejections, key types.NamespacedName, obj client.Object, rejection *failure.Rejection,
	actions []A, act func(A) error, describe func(A, error) *actError,
) (res ctrl.Result, done bool, err error) {
	for _, a := range actions {
		if err := act(a); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				log.FromContext(ctx).V(1).Info("write conflict, retrying", "action", a, "error", err.Error())
				return ctrl.Result{RequeueAfter: conflictRetry}, true, nil
			}
			ae := describe(a, err)
			if rejected.reject(ctx, key, obj.GetGeneration(), ae) {
				return ctrl.Result{RequeueAfter: rejectedRequeue}, true, nil
			}
			return ctrl.Result{}, true, ae
		}
		if rj := rejection; rj != nil && rj.Action == string(a) {
			rejected.accepted(key, rj.Action)
		}
	}
	return ctrl.Result{}, false, nil
}
