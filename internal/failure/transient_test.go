package failure

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "gantry.dev", Resource: "performers"}
	etcdDown := apierrors.NewTimeoutError("request did not complete within requested timeout - context deadline exceeded", 0)
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"etcd down: Timeout", etcdDown, true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"503", apierrors.NewServiceUnavailable("starting"), true},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true},
		{"conflict", apierrors.NewConflict(gr, "p", errors.New("changed")), true},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"reset, wrapped", fmt.Errorf("patch: %w", syscall.ECONNRESET), true},
		{"EOF", fmt.Errorf("get: %w", io.ErrUnexpectedEOF), true},
		{"deadline", context.DeadlineExceeded, true},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Group: "gantry.dev", Kind: "Performer"}, "p", nil), false},
		{"forbidden", apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(gr, "p"), false},
		{"bad request", apierrors.NewBadRequest("bad"), false},
		{"plain error", errors.New("x"), false},
		{"too large for etcd (a 500)", apierrors.NewInternalError(errors.New("etcdserver: request is too large")), false},
		{"413", apierrors.NewRequestEntityTooLargeError("limit is 3145728"), false},
		{"service CIDR full", apierrors.NewInternalError(errors.New("failed to allocate a serviceIP: range is full")), false},
		{"UID precondition", apierrors.NewConflict(gr, "p", errors.New("Precondition failed: UID in precondition: a, UID in object meta: b")), false},
		{"already exists", apierrors.NewAlreadyExists(gr, "p"), true},
		{"unauthorized", apierrors.NewUnauthorized("no"), false},
		{"unknown authority, wrapped in url.Error", &url.Error{Op: "Get", URL: "https://k", Err: x509.UnknownAuthorityError{}}, false},
		{"wrong host name", &url.Error{Op: "Get", URL: "https://k", Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "k"}}, false},
		{"credential plugin missing", &url.Error{Op: "Get", URL: "https://k", Err: errors.New("getting credentials: exec: executable aws-iam not found")}, false},
		{"credential plugin fails", &url.Error{Op: "Get", URL: "https://k", Err: errors.New("getting credentials: exec: executable aws failed with exit code 255")}, false},
		{"connection refused in url.Error", &url.Error{Op: "Get", URL: "https://k", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, true},
		{"canceled", fmt.Errorf("list: %w", context.Canceled), true},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// Every row of the table is reachable: an error that the rows before it do not take.
func TestClassesReachable(t *testing.T) {
	gr := schema.GroupResource{Group: "gantry.dev", Resource: "performers"}
	examples := []error{
		apierrors.NewInternalError(errors.New("etcdserver: request is too large")),
		apierrors.NewRequestEntityTooLargeError("limit is 3145728"),
		apierrors.NewInternalError(errors.New("failed to allocate a serviceIP: range is full")),
		apierrors.NewInternalError(errors.New("failed to create typed patch object (/p; gantry.dev/v1alpha1, Kind=PackageSet): .spec.rollout.healthChecks[name=\"cis\"].mode: field not declared in schema")),
		apierrors.NewConflict(gr, "p", errors.New("Precondition failed: UID in precondition: a, UID in object meta: b")),
		apierrors.NewConflict(gr, "p", errors.New("the object has been modified")),
		apierrors.NewAlreadyExists(gr, "p"),
		apierrors.NewTooManyRequests("slow down", 1),
		apierrors.NewTimeoutError("request did not complete within requested timeout", 0),
		apierrors.NewServiceUnavailable("starting"),
		apierrors.NewForbidden(gr, "p", errors.New("no")),
		&url.Error{Op: "Get", URL: "https://k", Err: x509.UnknownAuthorityError{}},
		&url.Error{Op: "Get", URL: "https://k", Err: errors.New("http: server gave HTTP response to HTTPS client")},
		&url.Error{Op: "Get", URL: "https://k", Err: errors.New("getting credentials: exec: executable x not found")},
		context.DeadlineExceeded,
		&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED},
	}
	if len(examples) != len(Classes) {
		t.Fatalf("%d examples for %d rows", len(examples), len(Classes))
	}
	for i, err := range examples {
		if c, ok := Classify(err); !ok || c.Name != Classes[i].Name {
			t.Errorf("row %d (%s): %v classified as %q", i, Classes[i].Name, err, c.Name)
		}
	}
}
