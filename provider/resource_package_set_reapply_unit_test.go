package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// packages[].reapply_on_reboot reaches spec.packages[].reapplyOnReboot and reads back; unset
// is not written and reads back null, false as configured stays false (no drift from the
// API's omitted false either way).
func TestPackageSetReapplyOnReboot_roundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     types.Bool
		written bool
	}{
		{"true", types.BoolValue(true), true},
		{"false", types.BoolValue(false), false},
		{"unset", types.BoolNull(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := psFieldsModel()
			m.Packages[0].ReapplyOnReboot = tc.set
			obj, err := expandPackageSet(m)
			if err != nil {
				t.Fatal(err)
			}
			pkg := obj.Object["spec"].(map[string]interface{})["packages"].([]interface{})[0].(map[string]interface{})
			v, found, _ := unstructured.NestedBool(pkg, "reapplyOnReboot")
			if found != tc.written || v != tc.written {
				t.Errorf("spec.packages[0].reapplyOnReboot = %v (found %v), want written %v", v, found, tc.written)
			}
			got, err := flattenPackageSet(obj, m)
			if err != nil {
				t.Fatal(err)
			}
			if g := got.Packages[0].ReapplyOnReboot; !g.Equal(tc.set) {
				t.Errorf("read back %s, want %s", g, tc.set)
			}
		})
	}
}
