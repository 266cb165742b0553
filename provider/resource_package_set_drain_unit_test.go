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

// drain reaches spec.drain and reads back as configured: unset stays unset (no "drain" in the
// spec, null back), an empty block stays an empty block, every attribute round-trips with the
// user's spelling ("90s", not the API's "1m30s"), explicit defaults (true) stay explicit; an
// import (no prior) reads the API's values; a change made outside Terraform shows as drift.
func TestPackageSetDrain_roundTrip(t *testing.T) {
	null := drainModel{GracePeriod: types.StringNull(), Timeout: types.StringNull(), DeleteEmptyDirData: types.BoolNull(), Force: types.BoolNull(), OnTimeout: types.StringNull(),
		NonInterruptTimeout: types.StringNull(), OnNonInterruptTimeout: types.StringNull()}
	full := drainModel{GracePeriod: types.StringValue("90s"), Timeout: types.StringValue("15m"), DeleteEmptyDirData: types.BoolValue(false),
		Force: types.BoolValue(false), SkipPodLabels: map[string]string{"gantry.dev/drain": "skip"}, OnTimeout: types.StringValue("Continue"),
		NonInterruptTimeout: types.StringValue("4h"), OnNonInterruptTimeout: types.StringValue("Drain")}
	defaults := null
	defaults.DeleteEmptyDirData, defaults.Force, defaults.OnTimeout = types.BoolValue(true), types.BoolValue(true), types.StringValue("Fail")
	defaults.Timeout, defaults.SkipPodLabels = types.StringValue("1h"), map[string]string{}
	for _, tc := range []struct {
		name  string
		conf  *drainModel
		spec  map[string]interface{} // spec.drain written (nil: absent)
		prior func(*packageSetModel) // the prior state the read sees (nil: the configuration)
		edit  func(spec map[string]interface{})
		want  *drainModel
	}{
		{name: "unset", want: nil},
		{name: "empty", conf: &null, spec: map[string]interface{}{}, want: &null},
		{name: "full", conf: &full, spec: map[string]interface{}{"gracePeriod": "1m30s", "timeout": "15m0s", "deleteEmptyDirData": false, "force": false,
			"skipPodLabels": map[string]interface{}{"matchLabels": map[string]interface{}{"gantry.dev/drain": "skip"}}, "onTimeout": "Continue",
			"nonInterruptTimeout": "4h0m0s", "onNonInterruptTimeout": "Drain"}, want: &full},
		{name: "explicit defaults", conf: &defaults, spec: map[string]interface{}{"timeout": "1h0m0s", "deleteEmptyDirData": true, "force": true, "onTimeout": "Fail"},
			want: &defaults},
		{name: "import", conf: &full, prior: func(m *packageSetModel) { m.Drain = nil }, spec: map[string]interface{}{"gracePeriod": "1m30s", "timeout": "15m0s",
			"deleteEmptyDirData": false, "force": false, "skipPodLabels": map[string]interface{}{"matchLabels": map[string]interface{}{"gantry.dev/drain": "skip"}}, "onTimeout": "Continue",
			"nonInterruptTimeout": "4h0m0s", "onNonInterruptTimeout": "Drain"},
			want: &drainModel{GracePeriod: types.StringValue("1m30s"), Timeout: types.StringValue("15m0s"), DeleteEmptyDirData: types.BoolValue(false),
				Force: types.BoolValue(false), SkipPodLabels: map[string]string{"gantry.dev/drain": "skip"}, OnTimeout: types.StringValue("Continue"),
				NonInterruptTimeout: types.StringValue("4h0m0s"), OnNonInterruptTimeout: types.StringValue("Drain")}},
		{name: "drift: force turned off outside Terraform", conf: &null, spec: map[string]interface{}{},
			edit: func(spec map[string]interface{}) { _ = unstructured.SetNestedField(spec, false, "drain", "force") },
			want: &drainModel{GracePeriod: types.StringNull(), Timeout: types.StringNull(), DeleteEmptyDirData: types.BoolNull(), Force: types.BoolValue(false), OnTimeout: types.StringNull(),
				NonInterruptTimeout: types.StringNull(), OnNonInterruptTimeout: types.StringNull()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := psFieldsModel()
			m.Drain = tc.conf
			obj, err := expandPackageSet(m)
			if err != nil {
				t.Fatal(err)
			}
			spec := obj.Object["spec"].(map[string]interface{})
			got, found := spec["drain"]
			if tc.spec == nil && found || tc.spec != nil && !reflect.DeepEqual(got, tc.spec) {
				t.Errorf("spec.drain = %#v (present %v), want %#v", got, found, tc.spec)
			}
			if tc.edit != nil {
				tc.edit(spec)
			}
			prior := *m
			if tc.prior != nil {
				tc.prior(&prior)
			}
			back, err := flattenPackageSet(obj, &prior)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Drain, tc.want) {
				t.Errorf("drain read back %+v, want %+v", back.Drain, tc.want)
			}
		})
	}
}

// drain is checked at plan where its values are known: durations, on_timeout's values, on_timeout
// without a timeout (the CRD's rule), label keys of skip_pod_labels; warnings for grace_period
// 0s and for a grace period not shorter than the timeout; nothing is checked against a value
// not known yet.
func TestPackageSetDrain_validate(t *testing.T) {
	srv := providerserver.NewProtocol6(New("test")())()
	schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	ty := schemas.ResourceSchemas["gantry_package_set"].ValueType().(tftypes.Object)
	drainType := ty.AttributeTypes["drain"].(tftypes.Object)
	pkgType := ty.AttributeTypes["packages"].(tftypes.List).ElementType.(tftypes.Object)
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	unknown := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	labels := func(k, v string) tftypes.Value {
		return tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, map[string]tftypes.Value{k: str(v)})
	}
	for _, tc := range []struct {
		name    string
		drain   map[string]tftypes.Value
		err     string // an error's summary ("" none)
		warning string // a warning's summary ("" none)
		detail  string // a part of the diagnostic's detail
	}{
		{name: "timeout, Fail", drain: map[string]tftypes.Value{"timeout": str("10m"), "on_timeout": str("Fail"), "grace_period": str("30s")}},
		{name: "timeout alone", drain: map[string]tftypes.Value{"timeout": str("10m")}},
		{name: "every knob", drain: map[string]tftypes.Value{"timeout": str("1h"), "on_timeout": str("Continue"), "grace_period": str("1m"),
			"delete_empty_dir_data": tftypes.NewValue(tftypes.Bool, false), "force": tftypes.NewValue(tftypes.Bool, false), "skip_pod_labels": labels("gantry.dev/drain", "skip")}},
		{name: "on_timeout without timeout", drain: map[string]tftypes.Value{"on_timeout": str("Continue")}, err: "on_timeout Needs timeout",
			detail: `drain.on_timeout = "Continue" takes effect when the drain runs past drain.timeout`},
		{name: "on_timeout with timeout 0s", drain: map[string]tftypes.Value{"on_timeout": str("Fail"), "timeout": str("0s")}, err: "on_timeout Needs timeout"},
		{name: "on_timeout with an unknown timeout", drain: map[string]tftypes.Value{"on_timeout": str("Fail"), "timeout": unknown}},
		{name: "on_timeout not an action", drain: map[string]tftypes.Value{"on_timeout": str("Abort"), "timeout": str("1m")}, err: "Invalid Attribute Value Match"},
		{name: "negative grace period", drain: map[string]tftypes.Value{"grace_period": str("-1s")}, err: "Invalid Duration", detail: "is not a non-negative duration"},
		{name: "timeout not a duration", drain: map[string]tftypes.Value{"timeout": str("ten minutes")}, err: "Invalid Duration"},
		{name: "grace period 0s", drain: map[string]tftypes.Value{"grace_period": str("0s")}, warning: "Evicted Pods Deleted at Once"},
		{name: "grace period outlasts the timeout", drain: map[string]tftypes.Value{"grace_period": str("10m"), "timeout": str("5m")},
			warning: "Grace Period Outlasts the Drain Timeout", detail: "(10m0s) is not shorter than drain.timeout (5m0s)"},
		{name: "grace period and an unknown timeout", drain: map[string]tftypes.Value{"grace_period": str("10m"), "timeout": unknown}},
		{name: "non-interrupt timeout, Drain", drain: map[string]tftypes.Value{"non_interrupt_timeout": str("4h"), "on_non_interrupt_timeout": str("Drain")},
			warning: "Non-Interrupt Timeout Without Non-Interrupt Pods", detail: "pod_non_interrupt_labels, which is not set"},
		{name: "on_non_interrupt_timeout without non_interrupt_timeout", drain: map[string]tftypes.Value{"on_non_interrupt_timeout": str("Drain")},
			err: "on_non_interrupt_timeout Needs non_interrupt_timeout", detail: `drain.on_non_interrupt_timeout = "Drain" takes effect when the node has waited`},
		{name: "on_non_interrupt_timeout not an action", drain: map[string]tftypes.Value{"on_non_interrupt_timeout": str("Continue"), "non_interrupt_timeout": str("1h")},
			err: "Invalid Attribute Value Match", warning: "Non-Interrupt Timeout Without Non-Interrupt Pods"},
		{name: "negative non_interrupt_timeout", drain: map[string]tftypes.Value{"non_interrupt_timeout": str("-1h")}, err: "Invalid Duration"},
		{name: "skip_pod_labels key not a label key", drain: map[string]tftypes.Value{"skip_pod_labels": labels("not a key", "x")}, err: "Invalid Label Key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg := nullObject(pkgType, map[string]tftypes.Value{"name": str("driver"), "version": str("1.0.0"), "image": str("ghcr.io/acme/driver")})
			cfg := nullObject(ty, map[string]tftypes.Value{"name": str("s"), "drain": nullObject(drainType, tc.drain),
				"packages": tftypes.NewValue(ty.AttributeTypes["packages"], []tftypes.Value{pkg})})
			dv, err := tfprotov6.NewDynamicValue(ty, cfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "gantry_package_set", Config: &dv})
			if err != nil {
				t.Fatal(err)
			}
			var errs, warns []string
			found := tc.detail == ""
			for _, d := range resp.Diagnostics {
				if d.Severity == tfprotov6.DiagnosticSeverityError {
					errs = append(errs, d.Summary)
				} else {
					warns = append(warns, d.Summary)
				}
				found = found || strings.Contains(d.Detail, tc.detail)
			}
			if tc.err == "" && len(errs) > 0 || tc.err != "" && (len(errs) != 1 || errs[0] != tc.err) {
				t.Errorf("errors %q, want %q: %+v", errs, tc.err, resp.Diagnostics)
			}
			if tc.warning == "" && len(warns) > 0 || tc.warning != "" && (len(warns) != 1 || warns[0] != tc.warning) {
				t.Errorf("warnings %q, want %q", warns, tc.warning)
			}
			if !found {
				t.Errorf("no diagnostic says %q: %+v", tc.detail, resp.Diagnostics)
			}
		})
	}
}
