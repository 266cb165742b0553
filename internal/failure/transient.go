package failure

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Transient reports the API errors worth retrying at once with backoff, the reconciler's and
// the provider's one classification: conflicts and AlreadyExists (a stale cache), 5xx
// (InternalError, ServiceUnavailable, the API server's "Timeout: request did not complete
// within requested timeout" when etcd does not answer), 429 TooManyRequests, server and client
// timeouts, connection errors (refused, reset, EOF: the API server restarting) and contexts
// that ended. Everything else (Invalid, Forbidden, BadRequest, NotFound, ...) needs a change
// before a retry can succeed.
func Transient(err error) bool {
	var netErr net.Error
	switch {
	case err == nil:
		return false
	case apierrors.IsConflict(err), apierrors.IsAlreadyExists(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err), apierrors.IsInternalError(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsUnexpectedServerError(err):
		return true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.As(err, &netErr),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	}
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500
}
