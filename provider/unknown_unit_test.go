package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// Unknown values at plan: every resource accepts a configuration in which values
// are not known yet — whole attributes (`packages = var.x`), collection entries
// (`node_selector = { k = var.v }`) and nested leaves — through the real protocol server:
// ValidateResourceConfig runs every attribute validator and ValidateConfig, PlanResourceChange
// runs the plan modifiers and ModifyPlan. None may fail with "Value Conversion Error" or any
// other error.

func protoServer(t *testing.T) (tfprotov6.ProviderServer, map[string]*tfprotov6.Schema) {
	t.Helper()
	srv, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sch, err := srv.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || diagsHaveError(sch.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %v", err, sch.Diagnostics)
	}
	pt := sch.Provider.ValueType().(tftypes.Object)
	empty := map[string]tftypes.Value{}
	for n, at := range pt.AttributeTypes {
		empty[n] = tftypes.NewValue(at, nil)
	}
	pcfg, err := tfprotov6.NewDynamicValue(pt, tftypes.NewValue(pt, empty))
	if err != nil {
		t.Fatal(err)
	}
	cr, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.8.5", Config: &pcfg})
	if err != nil || diagsHaveError(cr.Diagnostics) {
		t.Fatalf("ConfigureProvider: %v %s", err, diagsString(cr.Diagnostics))
	}
	return srv, sch.ResourceSchemas
}

func diagsHaveError(ds []*tfprotov6.Diagnostic) bool {
	for _, d := range ds {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

func diagsString(ds []*tfprotov6.Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Summary + ": " + d.Detail)
		if d.Attribute != nil {
			b.WriteString(" [" + d.Attribute.String() + "]")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// deepUnknown builds a value of type typ whose structure is known (objects, lists and sets
// of one element, maps with one key "k") and whose leaves are unknown. Attributes named in
// null (at any depth: the second of an exactly-one-of pair) are null.
func deepUnknown(typ tftypes.Type, null map[string]bool) tftypes.Value {
	switch tt := typ.(type) {
	case tftypes.Object:
		attrs := map[string]tftypes.Value{}
		for n, at := range tt.AttributeTypes {
			if null[n] {
				attrs[n] = tftypes.NewValue(at, nil)
			} else {
				attrs[n] = deepUnknown(at, null)
			}
		}
		return tftypes.NewValue(tt, attrs)
	case tftypes.List:
		return tftypes.NewValue(tt, []tftypes.Value{deepUnknown(tt.ElementType, null)})
	case tftypes.Set:
		return tftypes.NewValue(tt, []tftypes.Value{deepUnknown(tt.ElementType, null)})
	case tftypes.Map:
		return tftypes.NewValue(tt, map[string]tftypes.Value{"k": deepUnknown(tt.ElementType, null)})
	}
	return tftypes.NewValue(typ, tftypes.UnknownValue)
}

// exclusive names the second attribute of each exactly-one-of pair of the resources.
var exclusive = map[string]bool{"config_map_key_ref": true, "performer_selector": true, "tuning": true, "skyhook": true, "interruption_budget": true}

// topUnknown builds an object of type typ whose every attribute is unknown, except computed
// ones (null in a configuration).
func topUnknown(typ tftypes.Object, computedOnly map[string]bool) tftypes.Value {
	attrs := map[string]tftypes.Value{}
	for n, at := range typ.AttributeTypes {
		if computedOnly[n] {
			attrs[n] = tftypes.NewValue(at, nil)
		} else {
			attrs[n] = tftypes.NewValue(at, tftypes.UnknownValue)
		}
	}
	return tftypes.NewValue(typ, attrs)
}

// nullComputed replaces computed-only top-level attributes of v by null (a configuration
// cannot set them).
func nullComputed(v tftypes.Value, typ tftypes.Object, computedOnly map[string]bool) tftypes.Value {
	var attrs map[string]tftypes.Value
	if err := v.As(&attrs); err != nil {
		panic(err)
	}
	for n := range computedOnly {
		attrs[n] = tftypes.NewValue(typ.AttributeTypes[n], nil)
	}
	return tftypes.NewValue(typ, attrs)
}

func computedOnlyAttrs(s *tfprotov6.Schema) map[string]bool {
	out := map[string]bool{}
	for _, a := range s.Block.Attributes {
		if a.Computed && !a.Optional && !a.Required {
			out[a.Name] = true
		}
	}
	return out
}

func TestUnknownValues_everyResource(t *testing.T) {
	srv, schemas := protoServer(t)
	ctx := context.Background()
	for _, typeName := range []string{"gantry_performer", "gantry_executor", "gantry_package_set", "gantry_workspace"} {
		s := schemas[typeName]
		if s == nil {
			t.Fatalf("no schema for %s", typeName)
		}
		typ := s.ValueType().(tftypes.Object)
		computed := computedOnlyAttrs(s)
		for variant, cfg := range map[string]tftypes.Value{
			"every attribute unknown": topUnknown(typ, computed),
			"every leaf unknown":      nullComputed(deepUnknown(typ, exclusive), typ, computed),
		} {
			t.Run(typeName+"/"+variant, func(t *testing.T) {
				dv, err := tfprotov6.NewDynamicValue(typ, cfg)
				if err != nil {
					t.Fatal(err)
				}
				vr, err := srv.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: &dv,
					ClientCapabilities: &tfprotov6.ValidateResourceConfigClientCapabilities{WriteOnlyAttributesAllowed: true}})
				if err != nil {
					t.Fatal(err)
				}
				if len(vr.Diagnostics) > 0 {
					t.Fatalf("ValidateResourceConfig with unknown values:\n%s", diagsString(vr.Diagnostics))
				}
				prior, err := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, nil))
				if err != nil {
					t.Fatal(err)
				}
				pr, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: typeName, PriorState: &prior, ProposedNewState: &dv, Config: &dv})
				if err != nil {
					t.Fatal(err)
				}
				if d := withoutPreviewSkipped(pr.Diagnostics); len(d) > 0 {
					t.Fatalf("PlanResourceChange with unknown values:\n%s", diagsString(d))
				}
			})
		}
	}
}

// withoutPreviewSkipped drops the one warning a plan with unknown values must give for a
// package set (its rollout preview is skipped until apply) or a performer (its candidate_nodes
// is counted when the apply plans).
func withoutPreviewSkipped(diags []*tfprotov6.Diagnostic) []*tfprotov6.Diagnostic {
	var out []*tfprotov6.Diagnostic
	for _, d := range diags {
		if d.Severity != tfprotov6.DiagnosticSeverityWarning || d.Summary != "Rollout Preview Skipped" && d.Summary != candidatesSkipped {
			out = append(out, d)
		}
	}
	return out
}

// objectOf builds a value of object type typ with the given attributes, every other null.
func objectOf(typ tftypes.Type, set map[string]tftypes.Value) tftypes.Value {
	ot := typ.(tftypes.Object)
	attrs := map[string]tftypes.Value{}
	for n, at := range ot.AttributeTypes {
		if v, ok := set[n]; ok {
			attrs[n] = v
		} else {
			attrs[n] = tftypes.NewValue(at, nil)
		}
	}
	return tftypes.NewValue(ot, attrs)
}

func tstr(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }

var unknownString = tftypes.NewValue(tftypes.String, tftypes.UnknownValue)

func stringMap(kv map[string]tftypes.Value) tftypes.Value {
	return tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, kv)
}

// validateResource runs ValidateResourceConfig of typeName on cfg and returns its diagnostics.
func validateResource(t *testing.T, srv tfprotov6.ProviderServer, typ tftypes.Type, typeName string, cfg tftypes.Value) []*tfprotov6.Diagnostic {
	t.Helper()
	dv, err := tfprotov6.NewDynamicValue(typ, cfg)
	if err != nil {
		t.Fatal(err)
	}
	vr, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: typeName, Config: &dv})
	if err != nil {
		t.Fatal(err)
	}
	return vr.Diagnostics
}

// Cross-field checks of gantry_package_set skip what is unknown and still report what is
// known to be wrong, on the exact attribute.
func TestPackageSetValidateConfig_unknownValues(t *testing.T) {
	srv, schemas := protoServer(t)
	typ := schemas["gantry_package_set"].ValueType().(tftypes.Object)
	pkgsType := typ.AttributeTypes["packages"].(tftypes.List)
	pkgType := pkgsType.ElementType.(tftypes.Object)
	ciType := pkgType.AttributeTypes["config_interrupts"].(tftypes.Map)
	reboot := objectOf(ciType.ElementType, map[string]tftypes.Value{"type": tstr("reboot")})
	pkg := func(name, version string, set map[string]tftypes.Value) tftypes.Value {
		m := map[string]tftypes.Value{"name": tstr(name), "version": tstr(version), "image": tstr("img")}
		for k, v := range set {
			m[k] = v
		}
		return objectOf(pkgType, m)
	}
	set := func(nodeSelector tftypes.Value, pkgs ...tftypes.Value) tftypes.Value {
		return objectOf(typ, map[string]tftypes.Value{"name": tstr("drivers"), "node_selector": nodeSelector,
			"packages": tftypes.NewValue(pkgsType, pkgs)})
	}
	cases := []struct {
		name     string
		cfg      tftypes.Value
		wantPath string // "" = no diagnostics
	}{
		{"packages unknown (packages = var.x)", objectOf(typ, map[string]tftypes.Value{"name": tstr("drivers"),
			"packages": tftypes.NewValue(pkgsType, tftypes.UnknownValue)}), ""},
		{"node_selector value unknown", set(stringMap(map[string]tftypes.Value{"pool": unknownString}), pkg("aa", "1.0.0", nil)), ""},
		{"config unknown, config_interrupts known", set(tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
			pkg("aa", "1.0.0", map[string]tftypes.Value{"config": tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, tftypes.UnknownValue),
				"config_interrupts": tftypes.NewValue(ciType, map[string]tftypes.Value{"a.conf": reboot})})), ""},
		{"config value unknown, key missing", set(tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
			pkg("aa", "1.0.0", map[string]tftypes.Value{"config": stringMap(map[string]tftypes.Value{"b.conf": unknownString}),
				"config_interrupts": tftypes.NewValue(ciType, map[string]tftypes.Value{"a.conf": reboot})})),
			`AttributeName("packages").ElementKeyInt(0).AttributeName("config_interrupts").ElementKeyString("a.conf")`},
		{"version of a dependency unknown", set(tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
			pkg("aa", "1.0.0", map[string]tftypes.Value{"depends_on": stringMap(map[string]tftypes.Value{"bb": tstr("1.0.0")})}),
			objectOf(pkgType, map[string]tftypes.Value{"name": tstr("bb"), "version": unknownString, "image": tstr("x")})), ""},
		{"dependency missing, env unknown", set(tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
			pkg("aa", "1.0.0", map[string]tftypes.Value{"depends_on": stringMap(map[string]tftypes.Value{"zz": tstr("1.0.0")}),
				"env": tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, tftypes.UnknownValue)})),
			`AttributeName("packages").ElementKeyInt(0).AttributeName("depends_on").ElementKeyString("zz")`},
		{"duplicate package name beside an unknown one", set(tftypes.NewValue(tftypes.Map{ElementType: tftypes.String}, nil),
			pkg("aa", "1.0.0", nil), objectOf(pkgType, map[string]tftypes.Value{"name": unknownString, "version": tstr("1.0.0"), "image": tstr("x")}), pkg("aa", "1.0.1", nil)),
			`AttributeName("packages").ElementKeyInt(2).AttributeName("name")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ds := validateResource(t, srv, typ, "gantry_package_set", tc.cfg)
			if tc.wantPath == "" {
				if len(ds) > 0 {
					t.Fatalf("unexpected diagnostics:\n%s", diagsString(ds))
				}
				return
			}
			if len(ds) != 1 || ds[0].Attribute == nil || ds[0].Attribute.String() != tc.wantPath {
				t.Fatalf("want one error at %s, got:\n%s", tc.wantPath, diagsString(ds))
			}
		})
	}
}
