package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func psFieldsModel() *packageSetModel {
	return &packageSetModel{
		Name: types.StringValue("gpu"), Priority: types.Int64Null(), Paused: types.BoolNull(), Disabled: types.BoolNull(),
		PodNonInterruptLabels: map[string]string{"app": "training"},
		Packages: []packageModel{{
			Name: types.StringValue("dcgm-tool"), Version: types.StringValue("1.0.0"), Image: types.StringValue("img:1"),
			EnvFrom: []envFromModel{
				{Name: types.StringValue("TOKEN"), SecretKeyRef: &keyRefModel{Name: types.StringValue("s"), Key: types.StringValue("k")}},
				{Name: types.StringValue("MODE"), ConfigMapKeyRef: &keyRefModel{Name: types.StringValue("cm"), Key: types.StringValue("mode")}},
			},
			Resources:        &resourcesModel{Requests: map[string]string{"cpu": "0.5"}, Limits: map[string]string{"memory": "1Gi"}},
			GracefulShutdown: types.StringValue("90s"),
			PodAnnotations:   map[string]string{"team": "infra"},
			StageTimeout:     types.StringNull(), UninstallEnabled: types.BoolNull(),
		}},
	}
}

// expand → flatten with the configuration as prior state gives the configuration back (the
// user's spellings "0.5" and "90s" survive the API's "500m" and "1m30s").
func TestPackageSetFields_roundTrip(t *testing.T) {
	m := psFieldsModel()
	obj, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	spec := obj.Object["spec"].(map[string]interface{})
	if got, _, _ := unstructured.NestedStringMap(spec, "podNonInterruptLabels", "matchLabels"); !reflect.DeepEqual(got, m.PodNonInterruptLabels) {
		t.Errorf("podNonInterruptLabels = %v", got)
	}
	pkg := spec["packages"].([]interface{})[0].(map[string]interface{})
	if pkg["gracefulShutdown"] != "1m30s" {
		t.Errorf("gracefulShutdown = %v", pkg["gracefulShutdown"])
	}
	if refs := pkg["envFrom"].([]interface{}); len(refs) != 2 {
		t.Errorf("envFrom = %v", refs)
	}
	if q, _, _ := unstructured.NestedString(pkg, "resources", "requests", "cpu"); q != "500m" {
		t.Errorf("resources.requests.cpu = %q", q)
	}
	if a, _, _ := unstructured.NestedStringMap(pkg, "podAnnotations"); a["team"] != "infra" {
		t.Errorf("podAnnotations = %v", a)
	}
	_ = unstructured.SetNestedStringSlice(obj.Object, []string{"dcgm-tool@1.1.0"}, "status", "quarantinedVersions")
	got, err := flattenPackageSet(obj, m)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.PodNonInterruptLabels, m.PodNonInterruptLabels) {
		t.Errorf("pod_non_interrupt_labels = %v", got.PodNonInterruptLabels)
	}
	gp, wp := got.Packages[0], m.Packages[0]
	if !reflect.DeepEqual(gp.EnvFrom, wp.EnvFrom) || !reflect.DeepEqual(gp.Resources, wp.Resources) ||
		!gp.GracefulShutdown.Equal(wp.GracefulShutdown) || !reflect.DeepEqual(gp.PodAnnotations, wp.PodAnnotations) {
		t.Errorf("package = %+v, want %+v", gp, wp)
	}
	if q := got.QuarantinedVersions.Elements(); len(q) != 1 || !q[0].Equal(types.StringValue("dcgm-tool@1.1.0")) {
		t.Errorf("quarantined_versions = %v", got.QuarantinedVersions)
	}
}

// Unset attributes stay null (no perpetual diff); set-but-empty ones stay empty; with no
// status quarantined_versions is an empty list.
func TestPackageSetFields_nulls(t *testing.T) {
	m := psFieldsModel()
	m.PodNonInterruptLabels = nil
	p := &m.Packages[0]
	p.EnvFrom, p.Resources, p.GracefulShutdown, p.PodAnnotations = nil, nil, types.StringNull(), nil
	obj, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	spec := obj.Object["spec"].(map[string]interface{})
	pkg := spec["packages"].([]interface{})[0].(map[string]interface{})
	for _, k := range []string{"envFrom", "resources", "gracefulShutdown", "podAnnotations"} {
		if _, ok := pkg[k]; ok {
			t.Errorf("package has %s: %v", k, pkg[k])
		}
	}
	if _, ok := spec["podNonInterruptLabels"]; ok {
		t.Errorf("spec has podNonInterruptLabels")
	}
	got, err := flattenPackageSet(obj, m)
	if err != nil {
		t.Fatal(err)
	}
	gp := got.Packages[0]
	if got.PodNonInterruptLabels != nil || gp.EnvFrom != nil || gp.Resources != nil || !gp.GracefulShutdown.IsNull() || gp.PodAnnotations != nil {
		t.Errorf("nulls not kept: %+v %+v", got.PodNonInterruptLabels, gp)
	}
	if got.QuarantinedVersions.IsNull() || len(got.QuarantinedVersions.Elements()) != 0 {
		t.Errorf("quarantined_versions = %v", got.QuarantinedVersions)
	}
	// empty (not null) in the configuration stays empty
	m.PodNonInterruptLabels, p.EnvFrom, p.PodAnnotations, p.Resources = map[string]string{}, []envFromModel{}, map[string]string{}, &resourcesModel{}
	got, _ = flattenPackageSet(obj, m)
	gp = got.Packages[0]
	if got.PodNonInterruptLabels == nil || gp.EnvFrom == nil || gp.PodAnnotations == nil || gp.Resources == nil {
		t.Errorf("empties not kept: %+v %+v", got.PodNonInterruptLabels, gp)
	}
}

// A change made outside Terraform shows in the refreshed state (drift).
func TestPackageSetFields_drift(t *testing.T) {
	m := psFieldsModel()
	obj, _ := expandPackageSet(m)
	pkgs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "packages")
	pkg := pkgs[0].(map[string]interface{})
	pkg["gracefulShutdown"] = "5s"
	pkg["podAnnotations"] = map[string]interface{}{"team": "other"}
	pkg["resources"] = map[string]interface{}{"limits": map[string]interface{}{"memory": "2Gi"}}
	pkg["envFrom"] = []interface{}{map[string]interface{}{"name": "X", "secretKeyRef": map[string]interface{}{"name": "s2", "key": "k2"}}}
	_ = unstructured.SetNestedSlice(obj.Object, pkgs, "spec", "packages")
	_ = unstructured.SetNestedStringMap(obj.Object, map[string]string{"app": "batch"}, "spec", "podNonInterruptLabels", "matchLabels")
	got, err := flattenPackageSet(obj, m)
	if err != nil {
		t.Fatal(err)
	}
	gp := got.Packages[0]
	if gp.GracefulShutdown.ValueString() != "5s" || gp.PodAnnotations["team"] != "other" || gp.Resources.Limits["memory"] != "2Gi" ||
		gp.Resources.Requests != nil || len(gp.EnvFrom) != 1 || gp.EnvFrom[0].SecretKeyRef.Name.ValueString() != "s2" ||
		got.PodNonInterruptLabels["app"] != "batch" {
		t.Errorf("drift not read: %+v %v", gp, got.PodNonInterruptLabels)
	}
}

// rollout.soak_check_interval maps like soak_duration: to spec.rollout.soakCheckInterval and
// back with the user's spelling ("90s" survives the API's "1m30s"), unset stays null (no
// perpetual diff), a change outside Terraform shows (drift); the validator rejects less
// than 1s at plan.
func TestPackageSetFields_soakCheckInterval(t *testing.T) {
	m := psFieldsModel()
	m.Rollout = &rolloutModel{SoakDuration: types.StringValue("5m"), SoakCheckInterval: types.StringValue("90s"), OnHealthFailure: types.StringValue("rollback")}
	obj, err := expandPackageSet(m)
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(obj.Object, "spec", "rollout", "soakCheckInterval"); got != "1m30s" {
		t.Errorf("soakCheckInterval = %q", got)
	}
	got, err := flattenPackageSet(obj, m)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Rollout.SoakCheckInterval.Equal(types.StringValue("90s")) || !got.Rollout.SoakDuration.Equal(types.StringValue("5m")) {
		t.Errorf("rollout = %+v", got.Rollout)
	}
	// drift
	_ = unstructured.SetNestedField(obj.Object, "20s", "spec", "rollout", "soakCheckInterval")
	if got, _ = flattenPackageSet(obj, m); got.Rollout.SoakCheckInterval.ValueString() != "20s" {
		t.Errorf("drift not read: %v", got.Rollout.SoakCheckInterval)
	}
	// unset stays null
	m.Rollout.SoakCheckInterval = types.StringNull()
	obj, _ = expandPackageSet(m)
	if _, found, _ := unstructured.NestedString(obj.Object, "spec", "rollout", "soakCheckInterval"); found {
		t.Error("spec.rollout has soakCheckInterval")
	}
	if got, _ = flattenPackageSet(obj, m); !got.Rollout.SoakCheckInterval.IsNull() {
		t.Errorf("soak_check_interval = %v, want null", got.Rollout.SoakCheckInterval)
	}
	// plan validation
	for v, ok := range map[string]bool{"1s": true, "10s": true, "500ms": false, "0s": false, "-5s": false, "ten": false} {
		resp := &validator.StringResponse{}
		durationValidator{min: time.Second}.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("rollout").AtName("soak_check_interval"), ConfigValue: types.StringValue(v)}, resp)
		if resp.Diagnostics.HasError() == ok {
			t.Errorf("soak_check_interval %q: errors %v", v, resp.Diagnostics)
		}
	}
}

// serial = true reaches spec.serial and reads back; unset stays null (no diff) and is omitted
// from the spec; spec.serial turned on outside Terraform reads back true (drift shows).
func TestPackageSetSerial_roundTrip(t *testing.T) {
	for _, tc := range []struct {
		name     string
		conf     types.Bool
		cluster  *bool // spec.serial changed outside Terraform before the read; nil: as applied
		wantSpec bool
		want     types.Bool
	}{
		{"set", types.BoolValue(true), nil, true, types.BoolValue(true)},
		{"unset", types.BoolNull(), nil, false, types.BoolNull()},
		{"false", types.BoolValue(false), nil, false, types.BoolValue(false)},
		{"turned on outside", types.BoolNull(), boolPtr(true), true, types.BoolValue(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := psFieldsModel()
			m.Serial = tc.conf
			obj, err := expandPackageSet(m)
			if err != nil {
				t.Fatal(err)
			}
			if tc.cluster != nil {
				_ = unstructured.SetNestedField(obj.Object, *tc.cluster, "spec", "serial")
			}
			got, found, _ := unstructured.NestedBool(obj.Object, "spec", "serial")
			if got != tc.wantSpec || (!tc.wantSpec && found) {
				t.Errorf("spec.serial = %v (present %v), want %v", got, found, tc.wantSpec)
			}
			back, err := flattenPackageSet(obj, m)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Serial.Equal(tc.want) {
				t.Errorf("serial read back %s, want %s", back.Serial, tc.want)
			}
		})
	}
}

func boolPtr(b bool) *bool { return &b }

// A tag written in a package's image that differs from its version: the version wins (as
// Skyhook), and the plan warns naming both and the image the stages run.
func TestPackageSetImageTagWarning(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ty := schemas.ResourceSchemas["gantry_package_set"].ValueType().(tftypes.Object)
	pkgType := ty.AttributeTypes["packages"].(tftypes.List).ElementType.(tftypes.Object)
	for _, c := range []struct {
		image, warning, err string
	}{
		// '+' is no tag character: the image's error alone, no warning that contradicts it.
		{image: "ghcr.io/acme/tuned:1.2.3+build.5", err: "Invalid Image Reference"},
		{"ghcr.io/acme/tuned:6.0", `packages[0].image = "ghcr.io/acme/tuned:6.0" names the tag "6.0", but the package's version is "1.2.0". As Skyhook does, the version is the tag: the stages run ghcr.io/acme/tuned:1.2.0.`, ""},
		{"ghcr.io/acme/tuned:1.2.0", "", ""},
		{"localhost:5000/tuned", "", ""},
		{"ghcr.io/acme/tuned@sha256:abababababababababababababababababababababababababababababababab", "", ""},
	} {
		pkg := nullObject(pkgType, map[string]tftypes.Value{"name": tftypes.NewValue(tftypes.String, "tuned"),
			"version": tftypes.NewValue(tftypes.String, "1.2.0"), "image": tftypes.NewValue(tftypes.String, c.image)})
		cfg := nullObject(ty, map[string]tftypes.Value{"name": tftypes.NewValue(tftypes.String, "s"),
			"packages": tftypes.NewValue(ty.AttributeTypes["packages"], []tftypes.Value{pkg})})
		dv, err := tfprotov6.NewDynamicValue(ty, cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "gantry_package_set", Config: &dv})
		if err != nil {
			t.Fatal(err)
		}
		var got string
		for _, d := range resp.Diagnostics {
			if d.Severity == tfprotov6.DiagnosticSeverityError && d.Summary != c.err {
				t.Errorf("%s: error %q: %s", c.image, d.Summary, d.Detail)
			}
			if d.Summary == "Image Tag Replaced by the Version" {
				got = d.Detail
			}
		}
		if c.warning == "" && got != "" || !strings.HasPrefix(got, c.warning) {
			t.Errorf("%s: warning %q, want %q", c.image, got, c.warning)
		}
	}
}

// nullObject is a value of object type ty: the attributes in set, every other one null.
func nullObject(ty tftypes.Object, set map[string]tftypes.Value) tftypes.Value {
	vals := map[string]tftypes.Value{}
	for name, at := range ty.AttributeTypes {
		vals[name] = tftypes.NewValue(at, nil)
	}
	for name, v := range set {
		vals[name] = v
	}
	return tftypes.NewValue(ty, vals)
}
