package reconciler

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// writeStatus sets *cur (the status field of obj) to want and patches obj's status
// subresource, once and only when want differs semantically from *cur. The patch carries an
// optimistic lock (resourceVersion). stale is true when the write hit a stale cached object
// (Conflict or NotFound): the watch delivers the current object, which triggers the next
// pass, and the caller requeues after conflictRetry only as a backstop. Any other error is
// returned as is.
func writeStatus[S any](ctx context.Context, c client.Client, obj client.Object, cur *S, want S) (stale bool, err error) {
	if equality.Semantic.DeepEqual(*cur, want) {
		return false, nil
	}
	before, ok := obj.DeepCopyObject().(client.Object)
	if !ok {
		return false, fmt.Errorf("status write: a deep copy of %T is not a client.Object", obj)
	}
	*cur = want
	if err := c.Status().Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("status write conflict, retrying", "error", err.Error())
			return true, nil
		}
		return false, err
	}
	return false, nil
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
