package failure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Class is one row of the error classification table (Classes): which errors it matches and
// whether they are worth retrying as they are.
type Class struct {
	// Name says what the row matches, as the docs and diagnostics print it.
	Name string
	// Transient: retried with backoff (the same request can succeed later). Otherwise the
	// error is final until something changes (the configuration, RBAC, the cluster).
	Transient bool
	match     func(error) bool
}

// Classes is the reconciler's and the provider's one classification of errors from the
// Kubernetes API and the way to it, first matching row wins. The order matters where a status
// code alone would mislead: etcd's "request is too large" comes back as a 500 yet will never
// succeed; a conflict on a UID precondition will not resolve by re-reading.
var Classes = []Class{
	{Name: "object too large for etcd (a 500 quoting etcd's \"request is too large\" or its client's \"trying to send message larger than max\": over 1.5 to 2 MiB)",
		match: func(err error) bool { return TooLarge(err) && !apierrors.IsRequestEntityTooLargeError(err) }},
	{Name: "413 RequestEntityTooLarge (a request body over the API server's 3 MiB limit)", match: apierrors.IsRequestEntityTooLargeError},
	{Name: "500 \"failed to allocate a serviceIP\" (the Service CIDR is exhausted)",
		match: func(err error) bool {
			return apierrors.IsInternalError(err) && strings.Contains(APIMessage(err), "failed to allocate a serviceIP")
		}},
	{Name: "500 \"field not declared in schema\" (server-side apply of a field the cluster's CustomResourceDefinition does not have: the CRD is older than the client)",
		match: func(err error) bool { return apierrors.IsInternalError(err) && SchemaSkew(err) }},
	{Name: "409 Conflict on a UID precondition (the object was deleted and created again)",
		match: func(err error) bool {
			msg := APIMessage(err)
			return apierrors.IsConflict(err) && (strings.Contains(msg, "UID in precondition") || strings.Contains(msg, "UID in the precondition"))
		}},
	{Name: "409 Conflict (another writer changed the object: read it again and retry)", Transient: true, match: apierrors.IsConflict},
	{Name: "409 AlreadyExists (a cache that has not seen the object yet)", Transient: true, match: apierrors.IsAlreadyExists},
	{Name: "429 TooManyRequests (API priority and fairness, or a webhook's rate limit)", Transient: true, match: apierrors.IsTooManyRequests},
	{Name: "504 Timeout / ServerTimeout (e.g. \"request did not complete within requested timeout\" while etcd does not answer)", Transient: true,
		match: func(err error) bool { return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) }},
	{Name: "500 InternalError, 503 ServiceUnavailable and every other 5xx", Transient: true,
		match: func(err error) bool {
			return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || statusCode(err) >= 500
		}},
	{Name: "422 Invalid, 400 BadRequest, 401 Unauthorized, 403 Forbidden, 404 NotFound, 405, 406, 415 and every other 4xx", match: func(err error) bool {
		c := statusCode(err)
		return c >= 400 && c < 500
	}},
	{Name: "the cluster's TLS certificate does not verify (unknown authority, expired, wrong host name)", match: tlsVerification},
	{Name: "HTTP and HTTPS mixed up (a TLS record header error, \"server gave HTTP response to HTTPS client\", \"unsupported protocol scheme\")",
		match: func(err error) bool {
			var rh tls.RecordHeaderError
			msg := err.Error()
			return errors.As(err, &rh) || strings.Contains(msg, "server gave HTTP response to HTTPS client") || strings.Contains(msg, "unsupported protocol scheme")
		}},
	{Name: "a client-go credential plugin that is missing or fails (\"getting credentials: exec: ...\")",
		match: func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "getting credentials: exec: ")
		}},
	{Name: "a context that ended (a deadline or a cancel)", Transient: true,
		match: func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		}},
	{Name: "connection refused or reset, EOF, a network timeout (the API server restarting or unreachable)", Transient: true, match: func(err error) bool {
		var netErr net.Error
		return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
			errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	}},
}

// Classify returns the row of Classes that err matches; ok is false for nil and for errors no
// row matches (those are not transient).
func Classify(err error) (c Class, ok bool) {
	if err == nil {
		return Class{}, false
	}
	for _, c := range Classes {
		if c.match(err) {
			return c, true
		}
	}
	return Class{}, false
}

// Transient reports whether err is worth retrying as it is, with backoff: its row of Classes
// says so. nil and unclassified errors are not transient.
func Transient(err error) bool {
	c, ok := Classify(err)
	return ok && c.Transient
}

// TooLarge reports an object too large to store: the API server's 413 (a request body over
// 3 MiB) or a 500 quoting etcd ("etcdserver: request is too large": over etcd's
// --max-request-bytes, 1.5 MiB by default) or the API server's etcd client ("trying to send
// message larger than max": over its 2 MiB gRPC limit).
func TooLarge(err error) bool {
	if apierrors.IsRequestEntityTooLargeError(err) {
		return true
	}
	msg := APIMessage(err)
	return statusCode(err) >= 500 && (strings.Contains(msg, "request is too large") || strings.Contains(msg, "trying to send message larger than max"))
}

// SchemaSkew reports the API server's refusal of a server-side apply that sets a field its
// CustomResourceDefinition does not declare ("failed to create typed patch object ...: field
// not declared in schema", a 500): the cluster's CRD is older than the client, and the same
// request fails until the CRD is upgraded.
func SchemaSkew(err error) bool {
	return strings.Contains(APIMessage(err), "field not declared in schema")
}

// statusCode is the HTTP code of an API status error, 0 for other errors.
func statusCode(err error) int32 {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Code
	}
	return 0
}

// APIMessage is the API server's message of a status error (its status message), else
// err.Error().
func APIMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Message != "" {
		return status.Status().Message
	}
	return err.Error()
}

// tlsVerification: the API server's certificate did not verify.
func tlsVerification(err error) bool {
	var (
		unknown  x509.UnknownAuthorityError
		invalid  x509.CertificateInvalidError
		hostname x509.HostnameError
		verify   *tls.CertificateVerificationError
	)
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &hostname) || errors.As(err, &verify)
}
