package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Only an object carrying both the annotation and the provider's field manager is adoptable.
func TestForeignReason(t *testing.T) {
	obj := func(annotated bool, managers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]interface{}{}}
		if annotated {
			markOwned(u)
		}
		var mf []metav1.ManagedFieldsEntry
		for _, m := range managers {
			mf = append(mf, metav1.ManagedFieldsEntry{Manager: m, Operation: metav1.ManagedFieldsOperationApply})
		}
		u.SetManagedFields(mf)
		return u
	}
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want string // "" = adoptable, else a substring of the reason
	}{
		{"ours", obj(true, "kubectl-edit", fieldManager), ""},
		{"kubectl-created", obj(false, "kubectl-create"), managedByAnnotation},
		{"annotation copied by hand", obj(true, "kubectl-client-side-apply"), fieldManager},
		{"our manager, annotation removed", obj(false, fieldManager), managedByAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := foreignReason(tc.u)
			if (tc.want == "") != (got == "") || (tc.want != "" && !strings.Contains(got, tc.want)) {
				t.Errorf("foreignReason = %q, want %q", got, tc.want)
			}
		})
	}
}

// A package version in state that a rollback quarantined means the configuration is not live.
func TestQuarantinedInState(t *testing.T) {
	q := func(v ...string) types.List {
		var e []attr.Value
		for _, s := range v {
			e = append(e, types.StringValue(s))
		}
		return types.ListValueMust(types.StringType, e)
	}
	m := &packageSetModel{Packages: []packageModel{{Name: types.StringValue("dcgm-tool"), Version: types.StringValue("1.1.0")}}}
	for _, tc := range []struct {
		q    types.List
		want bool
	}{
		{types.ListNull(types.StringType), false},
		{q(), false},
		{q("dcgm-tool@1.0.9"), false},
		{q("dcgm-tool@1.1.0#config-abc"), false},
		{q("other@1.1.0", "dcgm-tool@1.1.0"), true},
	} {
		m.QuarantinedVersions = tc.q
		if got, why := quarantinedInState(m); got != tc.want {
			t.Errorf("quarantinedInState(%v) = %v (%s), want %v", tc.q, got, why, tc.want)
		}
	}
}
