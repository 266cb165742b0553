package reconciler

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// writeStatus sets *cur (the status field of obj) to want and patches obj's status
// subresource, once and only when want differs semantically from *cur. The patch carries an
// optimistic lock (resourceVersion). stale is true when the write hit a stale cached object
// (Conflict or NotFound): the watch delivers the current object, which triggers the next
// pass, and the caller requeues after conflictRetry only as a backstop. Any other error is
// returned as is.
func writeStatus[S any](ctx context.Context, c client.Client, obj client.Object, cur *S, want S) (stale bool, err error) {
	w, err := writeStatusThrottled(ctx, c, obj, cur, want, nil)
	return w.stale, err
}

// statusWrite is the outcome of writeStatusThrottled.
type statusWrite struct {
	// written: the status was patched (obj and *cur now hold want and the new resourceVersion).
	written bool
	// stale: the write hit a stale cached object (Conflict or NotFound); see writeStatus.
	stale bool
	// wait > 0: the change was held back by the throttle; write it that much later.
	wait time.Duration
}

// writeStatusThrottled is writeStatus with a throttle: when want differs from *cur and
// throttle (nil: none) returns wait > 0 for the pair, nothing is written and the caller
// requeues after wait (the change is not lost: the next pass derives it again).
func writeStatusThrottled[S any](ctx context.Context, c client.Client, obj client.Object, cur *S, want S, throttle func(cur, want *S) time.Duration) (statusWrite, error) {
	if equality.Semantic.DeepEqual(*cur, want) {
		return statusWrite{}, nil
	}
	if throttle != nil {
		if wait := throttle(cur, &want); wait > 0 {
			return statusWrite{wait: wait}, nil
		}
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return statusWrite{}, fmt.Errorf("status write: a deep copy of %T is not a client.Object", obj)
	}
	*cur = want
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("status write conflict, retrying", "error", err.Error())
			return statusWrite{stale: true}, nil
		}
		return statusWrite{}, err
	}
	return statusWrite{written: true}, nil
}

// setFinalizer adds (add) or removes the gantry.dev finalizer (v1alpha1.Finalizer) on obj in
// place and writes it with one merge patch under an optimistic lock (resourceVersion), the
// way every controller does its AddFinalizer and RemoveFinalizer. Errors are the API
// server's, as is: each caller says what a Conflict or NotFound means for its pass.
func setFinalizer(ctx context.Context, c client.Client, obj client.Object, add bool) error {
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return fmt.Errorf("finalizer write: a deep copy of %T is not a client.Object", obj)
	}
	if add {
		controllerutil.AddFinalizer(obj, v1alpha1.Finalizer)
	} else {
		controllerutil.RemoveFinalizer(obj, v1alpha1.Finalizer)
	}
	return c.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
}

// illegalTransition handles an error from a machine's Decide. When err is (or wraps) a
// *lifecycle.TransitionError (possible only when the object's status was edited by hand or by
// someone else), it emits the Warning event IllegalTransition on obj and returns err as a
// reconcile.TerminalError: retrying cannot help, so the pass is not requeued (no hot loop);
// the next change to the object starts a new pass. Any other error is returned as is
// (retried with backoff).
func illegalTransition(rec record.EventRecorder, obj runtime.Object, err error) error {
	var te *lifecycle.TransitionError
	if errors.As(err, &te) {
		rec.Event(obj, corev1.EventTypeWarning, "IllegalTransition", err.Error())
		return reconcile.TerminalError(err)
	}
	return err
}

// getOrForget is every controller's first step: it reads the object key names from the
// cache into obj. When it is gone, forget drops what the controller keeps about it in memory
// (rejections, expectations, metrics) and the pass ends with nothing to do: nil and no error.
// Another read error ends the pass with that error (retried with backoff).
func getOrForget[T client.Object](ctx context.Context, c client.Reader, key types.NamespacedName, obj T, forget func()) (T, error) {
	var zero T
	if err := c.Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			forget()
			return zero, nil
		}
		return zero, err
	}
	return obj, nil
}
