package provider

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// keepingServer does what terraform-plugin-framework's server does with each request's
// context: it derives a cancelable context from it and keeps the cancel function until
// StopProvider. It records what the request saw through its context while it ran.
type keepingServer struct {
	fullServer
	cancels []context.CancelFunc
	seen    any
}

type ctxKey struct{}

func (k *keepingServer) ReadResource(ctx context.Context, _ *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	ctx, cancel := context.WithCancel(ctx)
	k.cancels = append(k.cancels, cancel)
	k.seen = ctx.Value(ctxKey{})
	return &tfprotov6.ReadResourceResponse{}, nil
}

// readWithValue makes one ReadResource request whose context carries a 1 MiB value, cancels the
// request's context when the request returns (as gRPC does), and returns a weak pointer to the
// value: nothing of the request is reachable from here afterwards.
func readWithValue(t *testing.T, s tfprotov6.ProviderServer) weak.Pointer[[1 << 20]byte] {
	t.Helper()
	v := new([1 << 20]byte)
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, v))
	if _, err := s.ReadResource(ctx, &tfprotov6.ReadResourceRequest{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	return weak.Make(v)
}

// With the framework keeping every request's cancel function, the request's context (here its
// 1 MiB value) is collected once the request returned through ReleasingContexts, and is kept
// for the life of the server without it. While it runs, the request sees its context's values,
// and the framework's derived context is canceled with it.
func TestReleasingContexts(t *testing.T) {
	inner := &keepingServer{}
	wrapped := ReleasingContexts(inner)
	if _, ok := wrapped.(fullServer); !ok {
		t.Fatalf("ReleasingContexts returned %T, which does not serve list resources and actions", wrapped)
	}
	released := readWithValue(t, wrapped)
	if inner.seen == nil {
		t.Fatal("the request did not see its context's value")
	}
	inner.seen = nil
	runtime.GC()
	if released.Value() != nil {
		t.Error("the request's context is still reachable after the request returned through ReleasingContexts")
	}
	runtime.KeepAlive(inner) // the server (and the cancel functions it keeps) lives on

	bare := &keepingServer{}
	kept := readWithValue(t, bare)
	bare.seen = nil
	runtime.GC()
	if kept.Value() == nil {
		t.Error("without ReleasingContexts the kept cancel function did not keep the request's context: the test shows nothing")
	}
	runtime.KeepAlive(bare)

	// Deadline and cancellation pass through, and the framework's derived context follows.
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	rctx, done := releasable(ctx)
	if d, ok := rctx.Deadline(); !ok || d.IsZero() {
		t.Errorf("deadline %v %v, want the request's", d, ok)
	}
	derived, stop := context.WithCancel(rctx)
	defer stop()
	done()
	if rctx.Value(ctxKey{}) != nil || rctx.Err() != nil {
		t.Errorf("released, not yet canceled: value %v, err %v; want nil, nil", rctx.Value(ctxKey{}), rctx.Err())
	}
	cancel()
	select {
	case <-derived.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the framework's derived context was not canceled with the request's")
	}
	if rctx.Err() != context.Canceled {
		t.Errorf("err after cancel %v, want context.Canceled", rctx.Err())
	}
}
