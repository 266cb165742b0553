package provider

import (
	"reflect"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
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
	ty := resourceObjectType(t, srv, "gantry_performer")
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
			checkValidateErrors(t, srv, "gantry_performer", ty, nullObject(ty, attrs), tc.err, tc.detail, tc.attr)
		})
	}
}

// A refresh that finds the autoscaler's new count changes only current_replicas and
// desired_replicas in state; the plan that follows is the prior state itself (an empty plan).
// A plan that does change something shows them as known after apply.
func TestPerformerAutoscaling_refreshedReplicasPlanNoChange(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	ty := resourceObjectType(t, srv, "gantry_performer")
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
	checkRefreshedReplicasPlan(t, srv, "gantry_performer", ty, state(4, 3, 3), nullObject(ty, config(4)), state(5, 3, 3), nullObject(ty, config(5)))
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
