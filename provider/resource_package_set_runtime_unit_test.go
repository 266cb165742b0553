package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// runtime_required and auto_taint_new_nodes reach spec.runtimeRequired and
// spec.autoTaintNewNodes and read back; unset stays null (no drift from the API's false).
func TestPackageSetRuntimeFields_roundTrip(t *testing.T) {
	m := psFieldsModel()
	m.RuntimeRequired, m.AutoTaintNewNodes, m.CordonAfter = types.BoolValue(true), types.BoolValue(true), types.BoolValue(true)
	obj, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"runtimeRequired", "autoTaintNewNodes", "runtimeRequiredCordonAfter"} {
		if v, _, _ := unstructured.NestedBool(obj.Object, "spec", f); !v {
			t.Errorf("spec.%s = %v", f, v)
		}
	}
	got, err := flattenPackageSet(obj, m)
	if err != nil {
		t.Fatal(err)
	}
	if !got.RuntimeRequired.ValueBool() || !got.AutoTaintNewNodes.ValueBool() || !got.CordonAfter.ValueBool() {
		t.Errorf("read back runtime_required %s auto_taint_new_nodes %s", got.RuntimeRequired, got.AutoTaintNewNodes)
	}

	plain := psFieldsModel()
	obj, err = expandPackageSet(plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "spec", "runtimeRequired"); found {
		t.Error("spec.runtimeRequired written while unset")
	}
	if got, err = flattenPackageSet(obj, plain); err != nil {
		t.Fatal(err)
	}
	if !got.RuntimeRequired.IsNull() || !got.AutoTaintNewNodes.IsNull() || !got.CordonAfter.IsNull() {
		t.Errorf("unset read back as %s %s, want null", got.RuntimeRequired, got.AutoTaintNewNodes)
	}
}
