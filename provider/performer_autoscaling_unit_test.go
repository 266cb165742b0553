package provider

import (
	"context"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// gantry_performer's autoscaling reaches spec.autoscaling and reads back as configured (the
// same block as gantry_workspace's); the replica counts come from status, null when it has
// none.
func TestPerformerAutoscaling_roundTrip(t *testing.T) {
	pods := &wsAutoscalingModel{MinReplicas: types.Int64Value(2), MaxReplicas: types.Int64Value(6), External: types.BoolNull(),
		Metric: &wsMetricModel{CPUAverageValue: types.StringNull(), Pods: &wsMetricSourceModel{Name: str("performer_tasks_in_flight"), AverageValue: str("4")}}}
	keda := &wsAutoscalingModel{MinReplicas: types.Int64Value(1), MaxReplicas: types.Int64Value(8), External: types.BoolValue(true)}
	for _, tc := range []struct {
		name string
		a    *wsAutoscalingModel
		spec map[string]interface{}
	}{
		{name: "none"},
		{name: "pods metric", a: pods, spec: map[string]interface{}{"minReplicas": int64(2), "maxReplicas": int64(6),
			"metric": map[string]interface{}{"pods": map[string]interface{}{"name": "performer_tasks_in_flight", "averageValue": "4"}}}},
		{name: "KEDA", a: keda, spec: map[string]interface{}{"minReplicas": int64(1), "maxReplicas": int64(8), "external": true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := minimalModel()
			m.Strategy = str("RollingUpdate")
			m.Autoscaling = tc.a
			obj := apiRoundTrip(t, m)
			got, found, _ := unstructured.NestedMap(obj.Object, "spec", "autoscaling")
			if tc.spec == nil && found || tc.spec != nil && !reflect.DeepEqual(got, tc.spec) {
				t.Errorf("spec.autoscaling = %#v (present %v), want %#v", got, found, tc.spec)
			}
			back, err := flattenPerformer(obj, &m)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Autoscaling, tc.a) {
				t.Errorf("read back %+v, want %+v", back.Autoscaling, tc.a)
			}
			if !back.CurrentReplicas.IsNull() || !back.DesiredReplicas.IsNull() {
				t.Errorf("replica counts without status: %s %s", back.CurrentReplicas, back.DesiredReplicas)
			}
			_ = unstructured.SetNestedField(obj.Object, int64(3), "status", "currentReplicas")
			_ = unstructured.SetNestedField(obj.Object, int64(4), "status", "desiredReplicas")
			if back, _ = flattenPerformer(obj, &m); back.CurrentReplicas.ValueInt64() != 3 || back.DesiredReplicas.ValueInt64() != 4 {
				t.Errorf("replica counts %s %s, want 3 and 4", back.CurrentReplicas, back.DesiredReplicas)
			}
		})
	}
}

// ValidateResourceConfig of gantry_performer's autoscaling: strategy must be RollingUpdate (an
// unset strategy is Recreate), the error on strategy naming both attributes; the block's own
// checks are gantry_workspace's.
func TestPerformerAutoscaling_validate(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ty := schemas.ResourceSchemas["gantry_performer"].ValueType().(tftypes.Object)
	asType := ty.AttributeTypes["autoscaling"].(tftypes.Object)
	metricType := asType.AttributeTypes["metric"].(tftypes.Object)
	srcType := metricType.AttributeTypes["pods"].(tftypes.Object)
	num := func(n int64) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	queue := nullObject(metricType, map[string]tftypes.Value{"pods": nullObject(srcType, map[string]tftypes.Value{"name": tstr("tasks"), "average_value": tstr("4")})})
	as := func(lo, hi int64, set map[string]tftypes.Value) tftypes.Value {
		all := map[string]tftypes.Value{"min_replicas": num(lo), "max_replicas": num(hi)}
		for k, v := range set {
			all[k] = v
		}
		return nullObject(asType, all)
	}
	metric := map[string]tftypes.Value{"metric": queue}
	for _, tc := range []struct {
		name     string
		strategy tftypes.Value // nil: unset
		as       tftypes.Value
		err      string
		detail   string
		attr     string // the attribute the error is on
	}{
		{name: "RollingUpdate", strategy: tstr("RollingUpdate"), as: as(1, 4, metric)},
		{name: "RollingUpdate, KEDA", strategy: tstr("RollingUpdate"), as: as(2, 8, map[string]tftypes.Value{"external": tftypes.NewValue(tftypes.Bool, true)})},
		{name: "strategy unset", as: as(1, 4, metric), err: "Conflicting Attributes: strategy and autoscaling",
			detail: `autoscaling needs strategy = "RollingUpdate" (strategy is unset (Recreate, the default))`, attr: "strategy"},
		{name: "Recreate", strategy: tstr("Recreate"), as: as(1, 4, metric), err: "Conflicting Attributes: strategy and autoscaling", detail: `(strategy is "Recreate")`, attr: "strategy"},
		{name: "strategy unknown", strategy: tftypes.NewValue(tftypes.String, tftypes.UnknownValue), as: as(1, 4, metric)},
		{name: "max below min", strategy: tstr("RollingUpdate"), as: as(4, 2, metric), err: "Invalid Replica Bounds", attr: "autoscaling.max_replicas"},
		{name: "no metric", strategy: tstr("RollingUpdate"), as: as(1, 4, nil), err: "Missing Autoscaling Metric", attr: "autoscaling.metric"},
		{name: "no autoscaling, Recreate", strategy: tstr("Recreate"), as: tftypes.NewValue(asType, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attrs := map[string]tftypes.Value{"name": tstr("p"), "image": tstr("ghcr.io/acme/performer:1"), "autoscaling": tc.as}
			if tc.strategy.Type() != nil {
				attrs["strategy"] = tc.strategy
			}
			dv, err := tfprotov6.NewDynamicValue(ty, nullObject(ty, attrs))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "gantry_performer", Config: &dv})
			if err != nil {
				t.Fatal(err)
			}
			var errs []string
			found := tc.detail == ""
			for _, d := range resp.Diagnostics {
				if d.Severity == tfprotov6.DiagnosticSeverityError {
					errs = append(errs, d.Summary)
					found = found || strings.Contains(d.Detail, tc.detail)
					if tc.attr != "" && d.Attribute != nil && attrPathString(d.Attribute) != tc.attr {
						t.Errorf("error on %s, want %s", attrPathString(d.Attribute), tc.attr)
					}
				}
			}
			if tc.err == "" && len(errs) > 0 || tc.err != "" && (len(errs) != 1 || errs[0] != tc.err) {
				t.Errorf("errors %q, want %q: %+v", errs, tc.err, resp.Diagnostics)
			}
			if !found {
				t.Errorf("no error says %q: %+v", tc.detail, resp.Diagnostics)
			}
		})
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

// A refresh that finds the autoscaler's new count changes only current_replicas and
// desired_replicas in state; the plan that follows is the prior state itself (an empty plan).
// A plan that does change something shows them as known after apply.
func TestPerformerAutoscaling_refreshedReplicasPlanNoChange(t *testing.T) {
	ctx := context.Background()
	srv := providerserver.NewProtocol6(New("test")())()
	schemas, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ty := schemas.ResourceSchemas["gantry_performer"].ValueType().(tftypes.Object)
	asType := ty.AttributeTypes["autoscaling"].(tftypes.Object)
	num := func(n int64) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	config := func(hi int64) map[string]tftypes.Value {
		return map[string]tftypes.Value{"name": tstr("p"), "image": tstr("ghcr.io/acme/performer:1"), "strategy": tstr("RollingUpdate"),
			"autoscaling": nullObject(asType, map[string]tftypes.Value{"min_replicas": num(1), "max_replicas": num(hi), "external": tftypes.NewValue(tftypes.Bool, true)})}
	}
	state := func(hi, current, desired int64) tftypes.Value {
		s := config(hi)
		s["namespace"], s["id"], s["phase"], s["image_pull_policy"], s["grpc_port"] = tstr("default"), tstr("default/p"), tstr("Running"), tstr("IfNotPresent"), num(9090)
		s["grpc_endpoint"], s["service_name"], s["pod_name"], s["node_name"] = tstr("performer-p.default.svc.cluster.local:9090"), tstr("performer-p"), tstr("performer-p-abc"), tstr("n1")
		s["current_replicas"], s["desired_replicas"], s["candidate_nodes"] = num(current), num(desired), num(3)
		return nullObject(ty, s)
	}
	prior := state(4, 3, 3)
	plan, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: "gantry_performer",
		PriorState: dynValue(t, ty, prior), ProposedNewState: dynValue(t, ty, prior), Config: dynValue(t, ty, nullObject(ty, config(4)))})
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

	proposed := state(5, 3, 3)
	plan, err = srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: "gantry_performer",
		PriorState: dynValue(t, ty, prior), ProposedNewState: dynValue(t, ty, proposed), Config: dynValue(t, ty, nullObject(ty, config(5)))})
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

// Through the Terraform CLI (no cluster): autoscaling without strategy = "RollingUpdate" fails
// the plan naming both attributes.
func TestPerformer_autoscalingAtPlan(t *testing.T) {
	requireTerraform(t)
	for name, tc := range map[string]struct{ body, want string }{
		"strategy unset": {`
  autoscaling = { min_replicas = 1, max_replicas = 3, external = true }
`, `(?s)Conflicting Attributes: strategy and autoscaling.*autoscaling needs strategy\s+=\s+"RollingUpdate"`},
		"Recreate": {`
  strategy    = "Recreate"
  autoscaling = { min_replicas = 1, max_replicas = 3, metric = { cpu_average_value = "500m" } }
`, `(?s)Conflicting Attributes: strategy and autoscaling`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      performerConfig("default", "p", tc.body),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}
