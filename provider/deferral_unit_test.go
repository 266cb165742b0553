package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// deferralServer is the shipped protocol server (Server: the framework behind the provider's
// own wrappers) configured with `host` unknown, as when the cluster is created in the same
// run, by a client that can (canDefer) or cannot defer.
func deferralServer(t *testing.T, canDefer bool) (tfprotov6.ProviderServer, *tfprotov6.GetProviderSchemaResponse) {
	t.Helper()
	ctx := context.Background()
	srv := Server("test")
	sch, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || diagsHaveError(sch.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %v", err, sch.Diagnostics)
	}
	pt := sch.Provider.ValueType()
	cfg := objectOf(pt, map[string]tftypes.Value{"host": tftypes.NewValue(tftypes.String, tftypes.UnknownValue)})
	dv, err := tfprotov6.NewDynamicValue(pt, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.14.9", Config: &dv,
		ClientCapabilities: &tfprotov6.ConfigureProviderClientCapabilities{DeferralAllowed: canDefer}})
	if err != nil || diagsHaveError(cr.Diagnostics) {
		t.Fatalf("ConfigureProvider: %v %s", err, diagsString(cr.Diagnostics))
	}
	return srv, sch
}

func dynValue(t *testing.T, typ tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

// With the provider configuration unknown, a client that allows deferral gets every
// plan, refresh, data source read and import deferred (reason: provider configuration
// unknown), as the kubernetes and helm providers answer; the framework's automatic deferral
// passes through the provider's own protocol wrappers. A client that cannot defer gets
// today's error naming the unknown configuration at the first call that needs the cluster.
func TestDeferral_providerConfigUnknown(t *testing.T) {
	ctx := context.Background()
	srv, sch := deferralServer(t, true)
	want := tfprotov6.DeferredReasonProviderConfigUnknown
	for _, typeName := range []string{"gantry_performer", "gantry_executor", "gantry_package_set", "gantry_workspace"} {
		typ := sch.ResourceSchemas[typeName].ValueType()
		cfg := objectOf(typ, map[string]tftypes.Value{"name": tstr("p"), "namespace": tstr("default")})
		caps := &tfprotov6.PlanResourceChangeClientCapabilities{DeferralAllowed: true}
		plan, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName,
			PriorState: dynValue(t, typ, tftypes.NewValue(typ, nil)), ProposedNewState: dynValue(t, typ, cfg), Config: dynValue(t, typ, cfg), ClientCapabilities: caps})
		if err != nil || diagsHaveError(plan.Diagnostics) || plan.Deferred == nil || plan.Deferred.Reason != want {
			t.Errorf("%s plan: err %v, deferred %+v, diagnostics %s", typeName, err, plan.Deferred, diagsString(plan.Diagnostics))
		}
		read, err := srv.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: typeName, CurrentState: dynValue(t, typ, cfg),
			ClientCapabilities: &tfprotov6.ReadResourceClientCapabilities{DeferralAllowed: true}})
		if err != nil || diagsHaveError(read.Diagnostics) || read.Deferred == nil || read.Deferred.Reason != want {
			t.Errorf("%s refresh: err %v, deferred %+v, diagnostics %s", typeName, err, read.Deferred, diagsString(read.Diagnostics))
		}
		imp, err := srv.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: typeName, ID: "default/p",
			ClientCapabilities: &tfprotov6.ImportResourceStateClientCapabilities{DeferralAllowed: true}})
		if err != nil || diagsHaveError(imp.Diagnostics) || imp.Deferred == nil || imp.Deferred.Reason != want {
			t.Errorf("%s import: err %v, deferred %+v, diagnostics %s", typeName, err, imp.Deferred, diagsString(imp.Diagnostics))
		}
	}
	for typeName, ds := range sch.DataSourceSchemas {
		typ := ds.ValueType()
		cfg := objectOf(typ, map[string]tftypes.Value{})
		if _, ok := typ.(tftypes.Object).AttributeTypes["name"]; ok {
			cfg = objectOf(typ, map[string]tftypes.Value{"name": tstr("p")})
		}
		read, err := srv.ReadDataSource(ctx, &tfprotov6.ReadDataSourceRequest{TypeName: typeName, Config: dynValue(t, typ, cfg),
			ClientCapabilities: &tfprotov6.ReadDataSourceClientCapabilities{DeferralAllowed: true}})
		if err != nil || diagsHaveError(read.Diagnostics) || read.Deferred == nil || read.Deferred.Reason != want {
			t.Errorf("data source %s: err %v, deferred %+v, diagnostics %s", typeName, err, read.Deferred, diagsString(read.Diagnostics))
		}
	}

	// Without deferral support: no deferral, and the read fails naming the cause.
	srv, sch = deferralServer(t, false)
	typ := sch.DataSourceSchemas["gantry_nodes"].ValueType()
	read, err := srv.ReadDataSource(ctx, &tfprotov6.ReadDataSourceRequest{TypeName: "gantry_nodes", Config: dynValue(t, typ, objectOf(typ, nil))})
	if err != nil || read.Deferred != nil || !strings.Contains(diagsString(read.Diagnostics), "not known yet") {
		t.Errorf("without deferral: err %v, deferred %+v, diagnostics %s", err, read.Deferred, diagsString(read.Diagnostics))
	}
}
