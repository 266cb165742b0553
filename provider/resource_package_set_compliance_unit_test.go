package provider

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A health check's compliance block (NixFleet's compliance probe) reaches
// spec.rollout.healthChecks[].compliance and reads back as configured: an unset evidence_path
// stays unset (the reconciler's default, not written), a written one round-trips; an import (no
// prior) reads the API's values; a framework changed outside Terraform shows as drift.
func TestPackageSetCompliance_roundTrip(t *testing.T) {
	hc := func(c *complianceModel) healthCheckModel {
		return healthCheckModel{Name: types.StringValue("nis2"), Image: types.StringNull(), Mode: types.StringValue("observe"),
			Timeout: types.StringNull(), Compliance: c}
	}
	for _, tc := range []struct {
		name  string
		conf  *complianceModel
		spec  map[string]interface{} // healthChecks[0].compliance written
		prior func(*packageSetModel)
		edit  func(check map[string]interface{})
		want  *complianceModel
	}{
		{name: "framework alone", conf: &complianceModel{Framework: types.StringValue("nis2"), EvidencePath: types.StringNull()},
			spec: map[string]interface{}{"framework": "nis2"}, want: &complianceModel{Framework: types.StringValue("nis2"), EvidencePath: types.StringNull()}},
		{name: "own evidence path", conf: &complianceModel{Framework: types.StringValue("anssi-bp028"), EvidencePath: types.StringValue("/srv/compliance/evidence.json")},
			spec: map[string]interface{}{"framework": "anssi-bp028", "evidencePath": "/srv/compliance/evidence.json"},
			want: &complianceModel{Framework: types.StringValue("anssi-bp028"), EvidencePath: types.StringValue("/srv/compliance/evidence.json")}},
		{name: "import", conf: &complianceModel{Framework: types.StringValue("dora"), EvidencePath: types.StringValue("/srv/e.json")},
			prior: func(m *packageSetModel) { m.Rollout = nil },
			spec:  map[string]interface{}{"framework": "dora", "evidencePath": "/srv/e.json"},
			want:  &complianceModel{Framework: types.StringValue("dora"), EvidencePath: types.StringValue("/srv/e.json")}},
		{name: "drift: framework changed outside Terraform", conf: &complianceModel{Framework: types.StringValue("nis2"), EvidencePath: types.StringNull()},
			spec: map[string]interface{}{"framework": "nis2"},
			edit: func(check map[string]interface{}) {
				_ = unstructured.SetNestedField(check, "iso27001", "compliance", "framework")
			},
			want: &complianceModel{Framework: types.StringValue("iso27001"), EvidencePath: types.StringNull()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := psFieldsModel()
			m.Rollout = &rolloutModel{SoakDuration: types.StringValue("1m"), SoakCheckInterval: types.StringNull(), OnHealthFailure: types.StringNull(),
				HealthChecks: []healthCheckModel{hc(tc.conf)}}
			obj, err := expandPackageSet(m)
			if err != nil {
				t.Fatal(err)
			}
			checks, _, _ := unstructured.NestedSlice(obj.Object, "spec", "rollout", "healthChecks")
			if len(checks) != 1 {
				t.Fatalf("healthChecks = %v", checks)
			}
			check := checks[0].(map[string]interface{})
			if got := check["compliance"]; !reflect.DeepEqual(got, tc.spec) || check["mode"] != "observe" {
				t.Errorf("healthChecks[0] = %#v, want compliance %#v and mode observe", check, tc.spec)
			}
			for _, k := range []string{"command", "httpGet", "systemdFailedUnits", "image"} {
				if _, ok := check[k]; ok {
					t.Errorf("healthChecks[0] has %s: %#v", k, check)
				}
			}
			if tc.edit != nil {
				tc.edit(check)
				if err := unstructured.SetNestedSlice(obj.Object, []interface{}{check}, "spec", "rollout", "healthChecks"); err != nil {
					t.Fatal(err)
				}
			}
			prior := *m
			if tc.prior != nil {
				tc.prior(&prior)
			}
			back, err := flattenPackageSet(obj, &prior)
			if err != nil {
				t.Fatal(err)
			}
			if back.Rollout == nil || len(back.Rollout.HealthChecks) != 1 {
				t.Fatalf("rollout read back %+v", back.Rollout)
			}
			got := back.Rollout.HealthChecks[0]
			if !reflect.DeepEqual(got.Compliance, tc.want) || got.Systemd != nil || got.HTTPGet != nil || got.Command != nil {
				t.Errorf("health check read back %+v (compliance %+v), want compliance %+v", got, got.Compliance, tc.want)
			}
		})
	}
}

// The compliance block is checked at plan as the CRD checks it, each error naming the
// attribute: framework one of NixFleet's names, evidence_path an absolute path of the CRD's
// characters; a compliance check beside another kind is refused; nothing is checked against a
// value not known yet.
func TestPackageSetCompliance_validate(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ty := schemas.ResourceSchemas["gantry_package_set"].ValueType().(tftypes.Object)
	rolloutType := ty.AttributeTypes["rollout"].(tftypes.Object)
	checksType := rolloutType.AttributeTypes["health_checks"].(tftypes.List)
	checkType := checksType.ElementType.(tftypes.Object)
	complianceType := checkType.AttributeTypes["compliance"].(tftypes.Object)
	pkgType := ty.AttributeTypes["packages"].(tftypes.List).ElementType.(tftypes.Object)
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	unknown := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	for _, tc := range []struct {
		name       string
		compliance map[string]tftypes.Value
		check      map[string]tftypes.Value // beside name and compliance
		err        string                   // an error's summary ("" none)
		detail     string                   // a part of its detail
	}{
		{name: "nis2", compliance: map[string]tftypes.Value{"framework": str("nis2")}},
		{name: "every framework NixFleet names", compliance: map[string]tftypes.Value{"framework": str("anssi-bp028"), "evidence_path": str("/var/lib/nixfleet-compliance/evidence.json")}},
		{name: "dora, observe", compliance: map[string]tftypes.Value{"framework": str("dora")}, check: map[string]tftypes.Value{"mode": str("observe")}},
		{name: "iso27001, own image", compliance: map[string]tftypes.Value{"framework": str("iso27001")}, check: map[string]tftypes.Value{"image": str("registry.local/tools:1")}},
		{name: "unknown framework", compliance: map[string]tftypes.Value{"framework": unknown}},
		{name: "framework not NixFleet's", compliance: map[string]tftypes.Value{"framework": str("nis2-essential")}, err: "Invalid Attribute Value Match",
			detail: `compliance.framework value must be one of: ["anssi-bp028" "nis2" "dora" "iso27001"]`},
		{name: "framework empty", compliance: map[string]tftypes.Value{"framework": str("")}, err: "Invalid Attribute Value Match", detail: "compliance.framework"},
		{name: "relative evidence path", compliance: map[string]tftypes.Value{"framework": str("nis2"), "evidence_path": str("evidence.json")},
			err: "Invalid Attribute Value Match", detail: "compliance.evidence_path must be an absolute path"},
		{name: "evidence path with a quote", compliance: map[string]tftypes.Value{"framework": str("nis2"), "evidence_path": str("/var/lib/x'y.json")},
			err: "Invalid Attribute Value Match", detail: "compliance.evidence_path"},
		{name: "evidence path climbing out with ..", compliance: map[string]tftypes.Value{"framework": str("nis2"), "evidence_path": str("/var/lib/../../etc/shadow")},
			err: "Invalid Attribute Value Match", detail: "no segment starting with '.'"},
		{name: "evidence path empty", compliance: map[string]tftypes.Value{"framework": str("nis2"), "evidence_path": str("")},
			err: "Invalid Attribute Value Match", detail: "compliance.evidence_path must be an absolute path"},
		{name: "beside systemd_failed_units", compliance: map[string]tftypes.Value{"framework": str("nis2")},
			check: map[string]tftypes.Value{"systemd_failed_units": nullObject(checkType.AttributeTypes["systemd_failed_units"].(tftypes.Object), nil)},
			err:   "Invalid Health Check", detail: "exactly one of command (an exec check), http_get, systemd_failed_units or compliance"},
		{name: "beside an exec check", compliance: map[string]tftypes.Value{"framework": str("nis2")},
			check: map[string]tftypes.Value{"image": str("x"), "command": tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{str("true")})},
			err:   "Invalid Health Check", detail: "set exactly one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := map[string]tftypes.Value{"name": str("nis2"), "compliance": nullObject(complianceType, tc.compliance)}
			for k, v := range tc.check {
				fields[k] = v
			}
			checks := tftypes.NewValue(checksType, []tftypes.Value{nullObject(checkType, fields)})
			pkg := nullObject(pkgType, map[string]tftypes.Value{"name": str("driver"), "version": str("1.0.0"), "image": str("ghcr.io/acme/driver")})
			cfg := nullObject(ty, map[string]tftypes.Value{"name": str("s"),
				"rollout":  nullObject(rolloutType, map[string]tftypes.Value{"soak_duration": str("1m"), "health_checks": checks}),
				"packages": tftypes.NewValue(ty.AttributeTypes["packages"], []tftypes.Value{pkg})})
			dv, err := tfprotov6.NewDynamicValue(ty, cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "gantry_package_set", Config: &dv})
			if err != nil {
				t.Fatal(err)
			}
			var errs []string
			found := tc.detail == ""
			for _, d := range resp.Diagnostics {
				if d.Severity == tfprotov6.DiagnosticSeverityError {
					errs = append(errs, d.Summary)
					found = found || strings.Contains(d.Detail, tc.detail)
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
