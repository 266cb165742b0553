package provider

import (
	"reflect"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// An empty object the user wrote reaches the spec; an empty value struct no one wrote does not.
func TestPruneEmptyAs(t *testing.T) {
	spec := v1alpha1.ExecutorSpec{HourglassCompat: &v1alpha1.HourglassCompat{}}
	m, err := toSpecMap(&spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := m["hourglassCompat"]; !ok || !reflect.DeepEqual(got, map[string]interface{}{}) {
		t.Errorf("hourglassCompat = %#v (present %v), want {} kept", got, ok)
	}
	for _, k := range []string{"resources", "scheduling"} {
		if v, ok := m[k]; ok {
			t.Errorf("%s = %#v: an empty value struct no one set must be pruned", k, v)
		}
	}
	spec.HourglassCompat = nil
	if m, _ = toSpecMap(&spec); m["hourglassCompat"] != nil {
		t.Errorf("hourglassCompat = %#v with the attribute null, want absent", m["hourglassCompat"])
	}
}

// hourglass_compat = {} (the migration guide's example) is in the Executor's spec.
func TestExpandExecutor_emptyHourglassCompat(t *testing.T) {
	m := &executorModelV0{Name: types.StringValue("e"), Namespace: types.StringValue("default"),
		HourglassCompat: &hourglassCompatModel{L1Chain: types.StringNull()}}
	u, err := expandExecutor(m)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := unstructured.NestedMap(u.Object, "spec", "hourglassCompat"); !ok || len(v) != 0 {
		t.Fatalf("spec.hourglassCompat = %v (present %v), want {}", v, ok)
	}
}

// systemd_failed_units = { max = 0 } keeps its check: the API server needs exactly one check kind.
func TestExpandPackageSet_systemdMaxZero(t *testing.T) {
	m := psFieldsModel()
	m.Rollout = &rolloutModel{OnHealthFailure: types.StringValue("halt"), SoakDuration: types.StringNull(),
		HealthChecks: []healthCheckModel{{Name: types.StringValue("units"), Image: types.StringNull(),
			Systemd: &systemdUnitsModel{Max: types.Int64Value(0)}, Mode: types.StringNull(), Timeout: types.StringNull()}}}
	u, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	hcs, _, _ := unstructured.NestedSlice(u.Object, "spec", "rollout", "healthChecks")
	if len(hcs) != 1 {
		t.Fatalf("healthChecks = %v, want one", hcs)
	}
	if _, ok := hcs[0].(map[string]interface{})["systemdFailedUnits"]; !ok {
		t.Fatalf("healthChecks[0] = %v: systemdFailedUnits dropped", hcs[0])
	}
}
