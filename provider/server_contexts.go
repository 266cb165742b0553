package provider

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// Server is the provider's protocol 6 server as main.go serves it and the acceptance tests run
// it: terraform-plugin-framework's server for New(version), its per-request contexts released
// when each request returns (ReleasingContexts), the plans of unchanged resources answered
// without the framework (PlanFastPath), never blocking a destroy on the configuration
// (DestroyTolerant).
func Server(version string) tfprotov6.ProviderServer {
	p := New(version)()
	return DestroyTolerant(PlanFastPath(ReleasingContexts(providerserver.NewProtocol6(p)()), p), nil)
}

// ReleasingContexts works around terraform-plugin-framework (v1.19) keeping every request's
// context until StopProvider (proto6server.Server.registerContext), which pins its loggers, gRPC
// stream and values: about 50 MiB over a 1,000-resource plan. Each per-resource request gets a
// releasableContext that acts as the request's own until it returns, then lets go of it. Streamed
// responses (list resources, actions) and per-process requests pass through; a server that is
// not a fullServer is returned as is.
func ReleasingContexts(s tfprotov6.ProviderServer) tfprotov6.ProviderServer {
	full, ok := s.(fullServer)
	if !ok {
		return s
	}
	return releasingContexts{full}
}

type releasingContexts struct{ fullServer }

// releasableContext is a request's context until release, then a context with the request's
// done channel, deadline and (once done) error only: Value returns nil, so nothing the request's
// context holds is reachable through it any more.
type releasableContext struct {
	done        <-chan struct{}
	deadline    time.Time
	hasDeadline bool
	inner       atomic.Pointer[context.Context]
}

// releasable returns ctx as a releasableContext and its release.
func releasable(ctx context.Context) (context.Context, func()) {
	c := &releasableContext{done: ctx.Done()}
	c.deadline, c.hasDeadline = ctx.Deadline()
	c.inner.Store(&ctx)
	return c, func() { c.inner.Store(nil) }
}

func (c *releasableContext) Deadline() (time.Time, bool) { return c.deadline, c.hasDeadline }

func (c *releasableContext) Done() <-chan struct{} { return c.done }

// Err is the request context's error; after release, context.Canceled once done is closed
// (the request's context is canceled when its request ends) and nil before.
func (c *releasableContext) Err() error {
	if p := c.inner.Load(); p != nil {
		return (*p).Err()
	}
	select {
	case <-c.done:
		return context.Canceled
	default:
		return nil
	}
}

// Value is the request context's value for key; nil after release.
func (c *releasableContext) Value(key any) any {
	if p := c.inner.Load(); p != nil {
		return (*p).Value(key)
	}
	return nil
}

// release runs call with ctx made releasable, and releases it when call returns.
func release[Req, Resp any](ctx context.Context, req Req, call func(context.Context, Req) (Resp, error)) (Resp, error) {
	rctx, done := releasable(ctx)
	defer done()
	return call(rctx, req)
}

func (s releasingContexts) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	return release(ctx, req, s.fullServer.ValidateResourceConfig)
}

func (s releasingContexts) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	return release(ctx, req, s.fullServer.UpgradeResourceState)
}

func (s releasingContexts) UpgradeResourceIdentity(ctx context.Context, req *tfprotov6.UpgradeResourceIdentityRequest) (*tfprotov6.UpgradeResourceIdentityResponse, error) {
	return release(ctx, req, s.fullServer.UpgradeResourceIdentity)
}

func (s releasingContexts) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return release(ctx, req, s.fullServer.ReadResource)
}

func (s releasingContexts) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	return release(ctx, req, s.fullServer.PlanResourceChange)
}

func (s releasingContexts) ApplyResourceChange(ctx context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	return release(ctx, req, s.fullServer.ApplyResourceChange)
}

func (s releasingContexts) ImportResourceState(ctx context.Context, req *tfprotov6.ImportResourceStateRequest) (*tfprotov6.ImportResourceStateResponse, error) {
	return release(ctx, req, s.fullServer.ImportResourceState)
}

func (s releasingContexts) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	return release(ctx, req, s.fullServer.ValidateDataResourceConfig)
}

func (s releasingContexts) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	return release(ctx, req, s.fullServer.ReadDataSource)
}

func (s releasingContexts) ValidateListResourceConfig(ctx context.Context, req *tfprotov6.ValidateListResourceConfigRequest) (*tfprotov6.ValidateListResourceConfigResponse, error) {
	return release(ctx, req, s.fullServer.ValidateListResourceConfig)
}

func (s releasingContexts) ValidateActionConfig(ctx context.Context, req *tfprotov6.ValidateActionConfigRequest) (*tfprotov6.ValidateActionConfigResponse, error) {
	return release(ctx, req, s.fullServer.ValidateActionConfig)
}

func (s releasingContexts) PlanAction(ctx context.Context, req *tfprotov6.PlanActionRequest) (*tfprotov6.PlanActionResponse, error) {
	return release(ctx, req, s.fullServer.PlanAction)
}
