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

// autoscaling reaches spec.autoscaling and reads back as configured (null external stays null,
// false stays false, the target's spelling kept); an import (no prior) reads the API's values;
// resource.count keeps its default beside it; the replica counts come from status, null when
// the status has none.
func TestWorkspaceAutoscaling_roundTrip(t *testing.T) {
	pods := &wsAutoscalingModel{MinReplicas: types.Int64Value(1), MaxReplicas: types.Int64Value(4), External: types.BoolNull(),
		Metric: &wsMetricModel{CPUAverageValue: types.StringNull(), Pods: &wsMetricSourceModel{Name: str("vllm:num_requests_waiting"), AverageValue: str("0.5")}}}
	ext := &wsAutoscalingModel{MinReplicas: types.Int64Value(2), MaxReplicas: types.Int64Value(2), External: types.BoolValue(false),
		Metric: &wsMetricModel{CPUAverageValue: types.StringNull(), External: &wsMetricSourceModel{Name: str("queue_depth"), AverageValue: str("10"),
			Selector: map[string]string{"queue": "chat"}}}}
	keda := &wsAutoscalingModel{MinReplicas: types.Int64Value(1), MaxReplicas: types.Int64Value(8), External: types.BoolValue(true)}
	cpu := &wsAutoscalingModel{MinReplicas: types.Int64Value(1), MaxReplicas: types.Int64Value(3), External: types.BoolNull(),
		Metric: &wsMetricModel{CPUAverageValue: str("1500m")}}
	for _, tc := range []struct {
		name string
		a    *wsAutoscalingModel
		spec map[string]interface{} // spec.autoscaling written (nil: absent)
	}{
		{name: "none"},
		{name: "pods metric", a: pods, spec: map[string]interface{}{"minReplicas": int64(1), "maxReplicas": int64(4),
			"metric": map[string]interface{}{"pods": map[string]interface{}{"name": "vllm:num_requests_waiting", "averageValue": "0.5"}}}},
		{name: "external metric, external false", a: ext, spec: map[string]interface{}{"minReplicas": int64(2), "maxReplicas": int64(2),
			"metric": map[string]interface{}{"external": map[string]interface{}{"name": "queue_depth", "averageValue": "10", "selector": map[string]interface{}{"queue": "chat"}}}}},
		{name: "KEDA", a: keda, spec: map[string]interface{}{"minReplicas": int64(1), "maxReplicas": int64(8), "external": true}},
		{name: "cpu", a: cpu, spec: map[string]interface{}{"minReplicas": int64(1), "maxReplicas": int64(3), "metric": map[string]interface{}{"cpuAverageValue": "1500m"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := wsModel()
			m.Autoscaling = tc.a
			obj := wsRoundTrip(t, m)
			got, found, _ := unstructured.NestedMap(obj.Object, "spec", "autoscaling")
			if tc.spec == nil && found || tc.spec != nil && !reflect.DeepEqual(got, tc.spec) {
				t.Errorf("spec.autoscaling = %#v (present %v), want %#v", got, found, tc.spec)
			}
			if count, _, _ := unstructured.NestedInt64(obj.Object, "spec", "resource", "count"); count != 1 {
				t.Errorf("spec.resource.count = %d", count)
			}
			back, err := flattenWorkspace(obj, &m)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Autoscaling, tc.a) {
				t.Errorf("read back %+v, want %+v", back.Autoscaling, tc.a)
			}
			if !back.CurrentReplicas.IsNull() || !back.DesiredReplicas.IsNull() {
				t.Errorf("replicas without status: %s/%s", back.CurrentReplicas, back.DesiredReplicas)
			}
			if tc.a == nil {
				return
			}
			imported, err := flattenWorkspace(obj, nil)
			if err != nil {
				t.Fatal(err)
			}
			if imported.Autoscaling == nil || imported.Autoscaling.MaxReplicas != tc.a.MaxReplicas ||
				imported.Autoscaling.External.ValueBool() != tc.a.External.ValueBool() {
				t.Errorf("import: %+v", imported.Autoscaling)
			}
		})
	}
	obj := wsRoundTrip(t, wsModel())
	_ = unstructured.SetNestedField(obj.Object, int64(3), "status", "currentReplicas")
	_ = unstructured.SetNestedField(obj.Object, int64(4), "status", "desiredReplicas")
	m := wsModel()
	back, _ := flattenWorkspace(obj, &m)
	if back.CurrentReplicas.ValueInt64() != 3 || back.DesiredReplicas.ValueInt64() != 4 {
		t.Errorf("replicas from status: %s/%s", back.CurrentReplicas, back.DesiredReplicas)
	}
}

// The autoscaling block is checked at plan where its values are known: resource.count beside it
// is an error naming both attributes, max_replicas below min_replicas, a metric missing without
// external or given with it, more than one kind of metric, targets that are not quantities above
// 0, bounds outside 1-64, tuning, a model served across nodes; nothing is checked against a
// value not known yet.
func TestWorkspaceAutoscaling_validate(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	ty := resourceObjectType(t, srv, "gantry_workspace")
	asType := ty.AttributeTypes["autoscaling"].(tftypes.Object)
	metricType := asType.AttributeTypes["metric"].(tftypes.Object)
	srcType := metricType.AttributeTypes["pods"].(tftypes.Object)
	resType := ty.AttributeTypes["resource"].(tftypes.Object)
	infType := ty.AttributeTypes["inference"].(tftypes.Object)
	tunType := ty.AttributeTypes["tuning"].(tftypes.Object)
	num := func(n int64) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	unknownNum := tftypes.NewValue(tftypes.Number, tftypes.UnknownValue)
	src := func(name, avg string) tftypes.Value {
		return nullObject(srcType, map[string]tftypes.Value{"name": tstr(name), "average_value": tstr(avg)})
	}
	queue := nullObject(metricType, map[string]tftypes.Value{"pods": src("vllm:num_requests_waiting", "5")})
	as := func(lo, hi tftypes.Value, set map[string]tftypes.Value) tftypes.Value {
		all := map[string]tftypes.Value{"min_replicas": lo, "max_replicas": hi}
		for k, v := range set {
			all[k] = v
		}
		return nullObject(asType, all)
	}
	withMetric := func(m tftypes.Value) map[string]tftypes.Value { return map[string]tftypes.Value{"metric": m} }
	external := map[string]tftypes.Value{"external": tftypes.NewValue(tftypes.Bool, true)}
	for _, tc := range []struct {
		name     string
		as       tftypes.Value
		resource map[string]tftypes.Value
		tuning   bool
		modelGPU int64
		err      string // the error's summary ("" none)
		detail   string // a part of its detail
	}{
		{name: "pods metric", as: as(num(1), num(4), withMetric(queue))},
		{name: "KEDA", as: as(num(1), num(8), external)},
		{name: "min = max", as: as(num(3), num(3), withMetric(nullObject(metricType, map[string]tftypes.Value{"cpu_average_value": tstr("2")})))},
		{name: "resource.count beside it", as: as(num(1), num(4), withMetric(queue)), resource: map[string]tftypes.Value{"count": num(2)},
			err: "Conflicting Attributes: resource.count and autoscaling", detail: "resource.count conflicts with autoscaling"},
		{name: "max below min", as: as(num(4), num(2), withMetric(queue)), err: "Invalid Replica Bounds", detail: "autoscaling.max_replicas = 2 is below autoscaling.min_replicas = 4"},
		{name: "max above the cap", as: as(num(1), num(65), withMetric(queue)), err: "Invalid Attribute Value"},
		{name: "min 0", as: as(num(0), num(2), withMetric(queue)), err: "Invalid Attribute Value"},
		{name: "no metric", as: as(num(1), num(4), nil), err: "Missing Autoscaling Metric", detail: "or external = true"},
		{name: "metric with external", as: as(num(1), num(4), map[string]tftypes.Value{"external": tftypes.NewValue(tftypes.Bool, true), "metric": queue}),
			err: "Metric With an External Autoscaler"},
		{name: "two metrics", as: as(num(1), num(4), withMetric(nullObject(metricType, map[string]tftypes.Value{"pods": src("a", "1"), "cpu_average_value": tstr("1")}))),
			err: "Invalid Autoscaling Metric", detail: "exactly one of cpu_average_value, pods and external (2 set)"},
		{name: "empty metric", as: as(num(1), num(4), withMetric(nullObject(metricType, nil))), err: "Invalid Autoscaling Metric"},
		{name: "zero target", as: as(num(1), num(4), withMetric(nullObject(metricType, map[string]tftypes.Value{"pods": src("a", "0")}))),
			err: "Invalid Metric Target", detail: "must be above 0"},
		{name: "target not a quantity", as: as(num(1), num(4), withMetric(nullObject(metricType, map[string]tftypes.Value{"external": src("a", "-1")}))),
			err: "Invalid Metric Target"},
		{name: "metric name with a slash", as: as(num(1), num(4), withMetric(nullObject(metricType, map[string]tftypes.Value{"pods": src("a/b", "1")}))),
			err: "Invalid Attribute Value Match"},
		{name: "tuning", as: as(num(1), num(4), withMetric(queue)), tuning: true, err: "Autoscaling Is for Inference"},
		{name: "multi-node model", as: as(num(2), num(4), withMetric(queue)), resource: map[string]tftypes.Value{"gpu_count": num(1)}, modelGPU: 2,
			err: "A Multi-Node Model Cannot Be Autoscaled", detail: "inference.model_gpus = 2 is above resource.gpu_count = 1"},
		{name: "unknown bounds", as: as(unknownNum, unknownNum, withMetric(queue))},
		{name: "unknown autoscaling", as: tftypes.NewValue(asType, tftypes.UnknownValue), resource: map[string]tftypes.Value{"count": num(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := nullObject(resType, tc.resource)
			attrs := map[string]tftypes.Value{"name": tstr("chat"), "resource": res, "autoscaling": tc.as}
			if tc.tuning {
				attrs["tuning"] = nullObject(tunType, map[string]tftypes.Value{"method": tstr("lora"), "base_model": tstr("m"), "image": tstr("i"),
					"input_image": tstr("d"), "output_image": tstr("o")})
			} else {
				inf := map[string]tftypes.Value{"model": tstr("falcon-7b-instruct"), "image": tstr("ghcr.io/gantry-dev/hello-model:1.0.0")}
				if tc.modelGPU > 0 {
					inf["model_gpus"] = num(tc.modelGPU)
				}
				attrs["inference"] = nullObject(infType, inf)
			}
			checkValidateErrors(t, srv, "gantry_workspace", ty, nullObject(ty, attrs), tc.err, tc.detail, "")
		})
	}
}

// A refresh that finds the autoscaler's new count changes only current_replicas and
// desired_replicas in state; the plan that follows (prior = proposed: nothing configured
// changed) is the prior state itself, both counts kept as refreshed, nothing unknown and no
// replacement: an empty plan. A plan that does change something (max_replicas) shows them as
// known after apply instead of planning the refreshed values, which the apply could not promise.
func TestWorkspaceAutoscaling_refreshedReplicasPlanNoChange(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	ty := resourceObjectType(t, srv, "gantry_workspace")
	asType := ty.AttributeTypes["autoscaling"].(tftypes.Object)
	metricType := asType.AttributeTypes["metric"].(tftypes.Object)
	srcType := metricType.AttributeTypes["pods"].(tftypes.Object)
	num := func(n int64) tftypes.Value { return tftypes.NewValue(tftypes.Number, n) }
	autoscaling := func(hi int64) tftypes.Value {
		return nullObject(asType, map[string]tftypes.Value{"min_replicas": num(1), "max_replicas": num(hi),
			"metric": nullObject(metricType, map[string]tftypes.Value{"pods": nullObject(srcType, map[string]tftypes.Value{"name": tstr("q"), "average_value": tstr("5")})})})
	}
	res := nullObject(ty.AttributeTypes["resource"].(tftypes.Object), map[string]tftypes.Value{"count": num(1), "gpu_count": num(1), "provision_nodes": tftypes.NewValue(tftypes.Bool, true)})
	inf := nullObject(ty.AttributeTypes["inference"].(tftypes.Object), map[string]tftypes.Value{"model": tstr("m"), "image": tstr("ghcr.io/x/y:1"), "port": num(8000)})
	config := func(hi int64) map[string]tftypes.Value {
		return map[string]tftypes.Value{"name": tstr("chat"), "resource": res, "inference": inf, "autoscaling": autoscaling(hi)}
	}
	state := func(hi, current, desired int64) tftypes.Value {
		s := config(hi)
		s["namespace"], s["id"], s["state"], s["mode"] = tstr("default"), tstr("default/chat"), tstr("Ready"), tstr("Inference")
		s["current_replicas"], s["desired_replicas"] = num(current), num(desired)
		return nullObject(ty, s)
	}
	// The refresh saw the HPA scale 1 → 3; then a real change (max_replicas 5).
	checkRefreshedReplicasPlan(t, srv, "gantry_workspace", ty, state(4, 3, 3), nullObject(ty, config(4)), state(5, 3, 3), nullObject(ty, config(5)))
}

// Through the Terraform CLI (no cluster): resource.count beside autoscaling fails the plan with
// a diagnostic naming both attributes, on the count's line; so do a metric missing and bounds
// the wrong way round.
func TestWorkspace_autoscalingAtPlan(t *testing.T) {
	requireTerraform(t)
	for name, tc := range map[string]struct{ body, want string }{
		"count beside autoscaling": {`
  resource    = { count = 2, gpu_count = 1 }
  inference   = { model = "m", image = "i" }
  autoscaling = { min_replicas = 1, max_replicas = 3, external = true }
`, `(?s)Conflicting Attributes: resource.count and autoscaling.*resource.count conflicts with\s+autoscaling`},
		"no metric": {`
  resource    = { gpu_count = 1 }
  inference   = { model = "m", image = "i" }
  autoscaling = { min_replicas = 1, max_replicas = 3 }
`, `Missing Autoscaling Metric`},
		"max below min": {`
  resource    = { gpu_count = 1 }
  inference   = { model = "m", image = "i" }
  autoscaling = { min_replicas = 3, max_replicas = 2, external = true }
`, `autoscaling.max_replicas = 2 is below autoscaling.min_replicas = 3`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      workspaceConfig("default", "w", tc.body),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}
