package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The protocol checks gantry_workspace's and gantry_performer's autoscaling unit tests share.

// resourceObjectType is typeName's resource schema type as srv serves it.
func resourceObjectType(t *testing.T, srv tfprotov6.ProviderServer, typeName string) tftypes.Object {
	t.Helper()
	schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return schemas.ResourceSchemas[typeName].ValueType().(tftypes.Object)
}

// checkValidateErrors validates config (of type ty) as typeName's and checks its errors: none
// when wantErr is "", else exactly one, whose summary is wantErr; some error's detail contains
// wantDetail (unless ""); and every error with an attribute path is on wantAttr (dotted, e.g.
// "autoscaling.metric"; unless "").
func checkValidateErrors(t *testing.T, srv tfprotov6.ProviderServer, typeName string, ty tftypes.Object, config tftypes.Value, wantErr, wantDetail, wantAttr string) {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(ty, config)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: &dv})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	found := wantDetail == ""
	for _, d := range resp.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			errs = append(errs, d.Summary)
			found = found || strings.Contains(d.Detail, wantDetail)
			if wantAttr != "" && d.Attribute != nil && attrPathString(d.Attribute) != wantAttr {
				t.Errorf("error on %s, want %s", attrPathString(d.Attribute), wantAttr)
			}
		}
	}
	if wantErr == "" && len(errs) > 0 || wantErr != "" && (len(errs) != 1 || errs[0] != wantErr) {
		t.Errorf("errors %q, want %q: %+v", errs, wantErr, resp.Diagnostics)
	}
	if !found {
		t.Errorf("no error says %q: %+v", wantDetail, resp.Diagnostics)
	}
}

// attrPathString is an attribute path as dotted names (a.b.c).
func attrPathString(p *tftypes.AttributePath) string {
	var parts []string
	for _, s := range p.Steps() {
		if n, ok := s.(tftypes.AttributeName); ok {
			parts = append(parts, string(n))
		}
	}
	return strings.Join(parts, ".")
}

// checkRefreshedReplicasPlan plans typeName (of type ty) twice from prior, a state whose
// current_replicas and desired_replicas a refresh changed: with nothing configured changed
// (proposed = prior, config priorConfig) the planned state must be prior itself with no
// replacement (an empty plan); with a real change (proposed, config proposedConfig) both
// counts must be unknown (known after apply), not the state's.
func checkRefreshedReplicasPlan(t *testing.T, srv tfprotov6.ProviderServer, typeName string, ty tftypes.Object, prior, priorConfig, proposed, proposedConfig tftypes.Value) {
	t.Helper()
	ctx := context.Background()
	plan, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName,
		PriorState: dynValue(t, ty, prior), ProposedNewState: dynValue(t, ty, prior), Config: dynValue(t, ty, priorConfig)})
	if err != nil || diagsHaveError(plan.Diagnostics) {
		t.Fatalf("plan: %v %s", err, diagsString(plan.Diagnostics))
	}
	planned, err := plan.PlannedState.Unmarshal(ty)
	if err != nil {
		t.Fatal(err)
	}
	if !planned.Equal(prior) || len(plan.RequiresReplace) > 0 {
		diffs, _ := planned.Diff(prior)
		t.Errorf("a refreshed replica count plans a change: %v, replace %v", diffs, plan.RequiresReplace)
	}

	plan, err = srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName,
		PriorState: dynValue(t, ty, prior), ProposedNewState: dynValue(t, ty, proposed), Config: dynValue(t, ty, proposedConfig)})
	if err != nil || diagsHaveError(plan.Diagnostics) {
		t.Fatalf("plan: %v %s", err, diagsString(plan.Diagnostics))
	}
	planned, err = plan.PlannedState.Unmarshal(ty)
	if err != nil {
		t.Fatal(err)
	}
	var attrs map[string]tftypes.Value
	if err := planned.As(&attrs); err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"current_replicas", "desired_replicas"} {
		if attrs[a].IsKnown() {
			t.Errorf("%s planned as %s on an update, want unknown", a, attrs[a])
		}
	}
}
