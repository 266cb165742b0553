package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
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

// After a rollback, a refresh reports the version the nodes run for a quarantined package,
// and only then.
func TestReportRunningVersions(t *testing.T) {
	model := func() *packageSetModel {
		return &packageSetModel{Packages: []packageModel{
			{Name: types.StringValue("dcgm-tool"), Version: types.StringValue("1.1.0")},
			{Name: types.StringValue("gpu-driver"), Version: types.StringValue("550.0.0")},
		}}
	}
	nodes := func(versions ...string) map[string]map[string]v1alpha1.PackageStatus {
		out := map[string]map[string]v1alpha1.PackageStatus{}
		for i, v := range versions {
			out[string(rune('a'+i))] = map[string]v1alpha1.PackageStatus{"dcgm-tool": {Version: v}, "gpu-driver": {Version: "550.0.0"}}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		st   v1alpha1.PackageSetStatus
		want string
	}{
		{"not quarantined", v1alpha1.PackageSetStatus{NodeState: nodes("1.0.0", "1.0.0")}, "1.1.0"},
		{"rolled back everywhere", v1alpha1.PackageSetStatus{QuarantinedVersions: []string{"dcgm-tool@1.1.0"}, NodeState: nodes("1.0.0", "1.0.0")}, "1.0.0"},
		{"nodes disagree", v1alpha1.PackageSetStatus{QuarantinedVersions: []string{"dcgm-tool@1.1.0"}, NodeState: nodes("1.0.0", "1.1.0")}, "1.1.0"},
		{"config quarantined only", v1alpha1.PackageSetStatus{QuarantinedVersions: []string{"dcgm-tool@1.1.0#config-abc"}, NodeState: nodes("1.0.0")}, "1.1.0"},
	} {
		m := model()
		reportRunningVersions(m, &tc.st)
		if got := m.Packages[0].Version.ValueString(); got != tc.want {
			t.Errorf("%s: version %s, want %s", tc.name, got, tc.want)
		}
		if got := m.Packages[1].Version.ValueString(); got != "550.0.0" {
			t.Errorf("%s: gpu-driver version %s changed", tc.name, got)
		}
	}
}
