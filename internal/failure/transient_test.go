package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
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
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}
