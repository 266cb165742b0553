package provider

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// The unit layer of the zero/empty round-trip table (zero_roundtrip_table_test.go): no
// cluster. Each row's configuration is validated and planned by the provider's own framework
// server (a plain one: providerserver, no plan fast path), the plan mapped to the object by the
// resource's expand, the object put through what the API server does to it (the CRD's
// structural schema: unknown fields pruned, defaults applied, required fields checked), and
// read back by the resource's flatten with the plan as prior; for a Workspace, the stored
// object is also resolved as the reconciler resolves it (presets, instance types).
//
// Verdicts: refused (the plan fails, every error naming the row's attribute); present (the
// value is in the object and survives the reconciler's resolution); equivalent (a zero or
// empty absent from the object where its API type cannot hold it: a field with omitempty that
// is neither a pointer nor defaulted by the CRD, so absent and zero mean the same to the
// reconciler); DROPPED (absent where the API type or the CRD tells it apart, replaced by a CRD
// default, or replaced by the reconciler). Whatever the verdict, flatten must give back
// exactly what was planned (else the next plan is not empty), and the object must keep every
// field and have every field the CRD requires. What this layer cannot see, the API server's
// CEL rules and server-side apply's merge, the acceptance layer does.

// rtCodec is a kind's expand and flatten over framework values.
type rtCodec struct {
	expand  func(ctx context.Context, plan tfsdk.Plan) (*unstructured.Unstructured, error)
	flatten func(ctx context.Context, u *unstructured.Unstructured, prior tfsdk.Plan) (tftypes.Value, error)
}

func rtCodecOf[M any](ops *kindOps[M]) rtCodec {
	return rtCodec{
		expand: func(ctx context.Context, plan tfsdk.Plan) (*unstructured.Unstructured, error) {
			var m M
			if d := plan.Get(ctx, &m); d.HasError() {
				return nil, fmt.Errorf("reading the plan: %v", d)
			}
			return ops.expand(&m)
		},
		flatten: func(ctx context.Context, u *unstructured.Unstructured, prior tfsdk.Plan) (tftypes.Value, error) {
			var m M
			if d := prior.Get(ctx, &m); d.HasError() {
				return tftypes.Value{}, fmt.Errorf("reading the plan: %v", d)
			}
			out, err := ops.flatten(u, &m)
			if err != nil {
				return tftypes.Value{}, err
			}
			st := tfsdk.State{Schema: prior.Schema, Raw: tftypes.NewValue(prior.Schema.Type().TerraformType(ctx), nil)}
			if d := st.Set(ctx, out); d.HasError() {
				return tftypes.Value{}, fmt.Errorf("writing the flattened model: %v", d)
			}
			return st.Raw, nil
		},
	}
}

// ---------------------------------------------------------------------------------------------
// The CRD's structural schema: what the API server prunes and defaults.

var rtCRDs sync.Map // file → *structuralschema.Structural

// rtStructural returns the structural schema of the served version of the CRD in file.
func rtStructural(t testing.TB, file string) *structuralschema.Structural {
	if s, ok := rtCRDs.Load(file); ok {
		return s.(*structuralschema.Structural)
	}
	b, err := v1alpha1.CRDs.ReadFile("crds/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, &internal, nil); err != nil {
		t.Fatal(err)
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		t.Fatal(err)
	}
	rtCRDs.Store(file, s)
	return s
}

// rtDefault applies the schema's defaults to x as the API server does: a property with a
// default that the object lacks gets it, at every depth.
func rtDefault(x any, s *structuralschema.Structural) {
	if s == nil {
		return
	}
	switch t := x.(type) {
	case map[string]any:
		for k, p := range s.Properties {
			if _, ok := t[k]; !ok && p.Default.Object != nil {
				t[k] = rtCopyJSON(p.Default.Object)
			}
		}
		for k, v := range t {
			if p, ok := s.Properties[k]; ok {
				rtDefault(v, &p)
			} else if s.AdditionalProperties != nil {
				rtDefault(v, s.AdditionalProperties.Structural)
			}
		}
	case []any:
		for _, e := range t {
			rtDefault(e, s.Items)
		}
	}
}

func rtCopyJSON(v any) any {
	b, _ := utiljson.Marshal(v)
	var out any
	_ = utiljson.Unmarshal(b, &out)
	return out
}

// rtMissingRequired lists the properties the schema s requires that x lacks, at every depth
// (at is x's path).
func rtMissingRequired(x any, s *structuralschema.Structural, at string) []string {
	if s == nil {
		return nil
	}
	var out []string
	switch t := x.(type) {
	case map[string]any:
		if s.ValueValidation != nil {
			for _, r := range s.ValueValidation.Required {
				if _, ok := t[r]; !ok {
					out = append(out, at+"."+r)
				}
			}
		}
		for k, v := range t {
			if p, ok := s.Properties[k]; ok {
				out = append(out, rtMissingRequired(v, &p, at+"."+k)...)
			} else if s.AdditionalProperties != nil {
				out = append(out, rtMissingRequired(v, s.AdditionalProperties.Structural, at+"."+k)...)
			}
		}
	case []any:
		for i, e := range t {
			out = append(out, rtMissingRequired(e, s.Items, fmt.Sprintf("%s[%d]", at, i))...)
		}
	}
	return out
}

// rtSchemaAt follows a JSON path (field names, "[]" for items, "{}" for map values) in s; it
// returns the schema there and its parent's (nil when the path leaves the schema).
func rtSchemaAt(s *structuralschema.Structural, path []string) (at, parent *structuralschema.Structural) {
	at = s
	for _, seg := range path {
		parent = at
		switch {
		case at == nil:
			return nil, nil
		case seg == "[]":
			at = at.Items
		case seg == "{}":
			if at.AdditionalProperties == nil {
				return nil, nil
			}
			at = at.AdditionalProperties.Structural
		default:
			p, ok := at.Properties[seg]
			if !ok {
				return nil, nil
			}
			at = &p
		}
	}
	return at, parent
}

// rtGoField follows a JSON path in the API type t; it returns the Go type there and whether
// the field holding it is a pointer or has no omitempty (the type then tells a written zero
// or empty from an absent one).
func rtGoField(t reflect.Type, path []string) (reflect.Type, bool, bool) {
	distinguishes := false
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case seg == "[]" && t.Kind() == reflect.Slice, seg == "{}" && t.Kind() == reflect.Map:
			t, distinguishes = t.Elem(), false
		case t.Kind() == reflect.Struct:
			f, ok := rtJSONField(t, seg)
			if !ok {
				return nil, false, false
			}
			_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			t, distinguishes = f.Type, f.Type.Kind() == reflect.Pointer || !strings.Contains(opts, "omitempty")
		default:
			return nil, false, false
		}
	}
	return t, distinguishes, true
}

func rtJSONField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		n, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if n == name {
			return f, true
		}
		if (n == "" && f.Anonymous) || strings.Contains(opts, "inline") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if g, ok := rtJSONField(ft, name); ok {
					return g, true
				}
			}
		}
	}
	return reflect.StructField{}, false
}

// ---------------------------------------------------------------------------------------------
// The harness: validate, plan, expand, store, flatten.

type rtHarness struct {
	srv   tfprotov6.ProviderServer
	types map[string]tftypes.Type
	cache map[string]*rtOutcome
	mu    sync.Mutex
}

func newRTHarness(t testing.TB) *rtHarness {
	srv, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	return &rtHarness{srv: srv, types: map[string]tftypes.Type{}, cache: map[string]*rtOutcome{}}
}

// rtOutcome is what one configuration becomes.
type rtOutcome struct {
	errs   []string // error diagnostics of validation and plan, "<attribute path>: <summary>: <detail>"
	plan   tfsdk.Plan
	object map[string]any // as the API server stores it
	pruned []string       // fields the CRD's schema prunes
	absent []string       // fields the CRD requires that the object lacks (the API server refuses it)
	flat   tftypes.Value
	fail   string // expand or flatten failed
}

func (h *rtHarness) typ(k *rtKind) tftypes.Type {
	h.mu.Lock()
	defer h.mu.Unlock()
	if t, ok := h.types[k.typeName]; ok {
		return t
	}
	t := k.schema().Type().TerraformType(context.Background())
	h.types[k.typeName] = t
	return t
}

// run is one configuration's outcome (memoized by its rendering).
func (h *rtHarness) run(t testing.TB, k *rtKind, cfg map[string]any) *rtOutcome {
	t.Helper()
	key := k.typeName + rtResourceHCL(k.typeName, "x", cfg)
	h.mu.Lock()
	if o, ok := h.cache[key]; ok {
		h.mu.Unlock()
		return o
	}
	h.mu.Unlock()
	o := h.compute(t, k, cfg)
	h.mu.Lock()
	h.cache[key] = o
	h.mu.Unlock()
	return o
}

// valid reports whether cfg passes the plan-time validation (cheaper than run: no plan).
func (h *rtHarness) valid(t testing.TB, k *rtKind, cfg map[string]any) bool {
	t.Helper()
	dv := h.dynamic(t, k, cfg)
	vr, err := h.srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: k.typeName, Config: dv})
	if err != nil {
		t.Fatal(err)
	}
	return len(rtErrors(vr.Diagnostics)) == 0
}

func (h *rtHarness) dynamic(t testing.TB, k *rtKind, cfg map[string]any) *tfprotov6.DynamicValue {
	typ := h.typ(k)
	dv, err := tfprotov6.NewDynamicValue(typ, rtTF(typ, cfg))
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

func (h *rtHarness) compute(t testing.TB, k *rtKind, cfg map[string]any) *rtOutcome {
	ctx := context.Background()
	typ := h.typ(k)
	dv := *h.dynamic(t, k, cfg)
	o := &rtOutcome{}
	vr, err := h.srv.ValidateResourceConfig(ctx, &tfprotov6.ValidateResourceConfigRequest{TypeName: k.typeName, Config: &dv})
	if err != nil {
		t.Fatal(err)
	}
	o.errs = rtErrors(vr.Diagnostics)
	if len(o.errs) > 0 {
		return o
	}
	null, _ := tfprotov6.NewDynamicValue(typ, tftypes.NewValue(typ, nil))
	pr, err := h.srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: k.typeName, PriorState: &null, ProposedNewState: &dv, Config: &dv})
	if err != nil {
		t.Fatal(err)
	}
	if o.errs = rtErrors(pr.Diagnostics); len(o.errs) > 0 {
		return o
	}
	planned, err := pr.PlannedState.Unmarshal(typ)
	if err != nil {
		t.Fatal(err)
	}
	o.plan = tfsdk.Plan{Schema: k.schema(), Raw: planned}
	u, err := k.codec.expand(ctx, o.plan)
	if err != nil {
		o.fail = "expand: " + err.Error()
		return o
	}
	obj, _ := rtCopyJSON(u.Object).(map[string]any)
	s := rtStructural(t, k.crd)
	o.pruned = pruning.PruneWithOptions(obj, s, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})
	rtDefault(obj, s)
	o.absent = rtMissingRequired(obj["spec"], rtSpecSchema(t, k), "spec")
	o.object = obj
	if o.flat, err = k.codec.flatten(ctx, &unstructured.Unstructured{Object: rtCopyJSON(obj).(map[string]any)}, o.plan); err != nil {
		o.fail = "flatten: " + err.Error()
	}
	return o
}

func rtErrors(ds []*tfprotov6.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		if d.Severity != tfprotov6.DiagnosticSeverityError {
			continue
		}
		at := ""
		if d.Attribute != nil {
			at = rtAttrPath(d.Attribute)
		}
		out = append(out, at+": "+d.Summary+": "+d.Detail)
	}
	return out
}

// rtAttrPath renders a tftypes attribute path as a.b[0].c.
func rtAttrPath(p *tftypes.AttributePath) string {
	var b strings.Builder
	for _, s := range p.Steps() {
		switch s := s.(type) {
		case tftypes.AttributeName:
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(string(s))
		case tftypes.ElementKeyInt:
			fmt.Fprintf(&b, "[%d]", int64(s))
		case tftypes.ElementKeyString:
			fmt.Fprintf(&b, "[%q]", string(s))
		}
	}
	return b.String()
}

// rtCompare returns where flat differs from plan in the attributes a user sets (computed-only
// and write-only attributes skipped, as are values the plan leaves unknown).
func rtCompare(attrs map[string]schema.Attribute, plan, flat tftypes.Value, at string) []string {
	var pm, fm map[string]tftypes.Value
	if plan.IsNull() || flat.IsNull() || !plan.IsKnown() {
		if plan.IsKnown() && plan.IsNull() != flat.IsNull() {
			return []string{fmt.Sprintf("%s: planned %s, read back %s", at, plan, flat)}
		}
		return nil
	}
	_ = plan.As(&pm)
	_ = flat.As(&fm)
	var out []string
	for _, name := range sortedKeys(attrs) {
		a := attrs[name]
		if !rtSettable(a) {
			continue
		}
		p, f := pm[name], fm[name]
		here := strings.TrimPrefix(at+"."+name, ".")
		if !p.IsFullyKnown() {
			continue
		}
		switch t := a.(type) {
		case schema.SingleNestedAttribute:
			out = append(out, rtCompare(t.Attributes, p, f, here)...)
		case schema.ListNestedAttribute:
			out = append(out, rtCompareList(t.NestedObject.Attributes, p, f, here)...)
		default:
			if !p.Equal(f) {
				out = append(out, fmt.Sprintf("%s: planned %s, read back %s", here, p, f))
			}
		}
	}
	return out
}

func rtCompareList(attrs map[string]schema.Attribute, plan, flat tftypes.Value, at string) []string {
	var pl, fl []tftypes.Value
	if plan.IsNull() != flat.IsNull() {
		return []string{fmt.Sprintf("%s: planned %s, read back %s", at, plan, flat)}
	}
	if plan.IsNull() {
		return nil
	}
	_ = plan.As(&pl)
	_ = flat.As(&fl)
	if len(pl) != len(fl) {
		return []string{fmt.Sprintf("%s: planned %d elements, read back %d", at, len(pl), len(fl))}
	}
	var out []string
	for i := range pl {
		out = append(out, rtCompare(attrs, pl[i], fl[i], fmt.Sprintf("%s[%d]", at, i))...)
	}
	return out
}

// ---------------------------------------------------------------------------------------------
// JSON paths of attributes.

// jsonPath is the object path attribute p maps to: k.rename's longest prefix of p, else
// spec.<p in camelCase>; list elements "[]", map entries "{}".
func (k *rtKind) jsonPath(p string) []string {
	best := ""
	for prefix := range k.rename {
		if (p == prefix || strings.HasPrefix(p, prefix+".") || strings.HasPrefix(p, prefix+"[") || strings.HasPrefix(p, prefix+"{")) && len(prefix) > len(best) {
			best = prefix
		}
	}
	var out []string
	rest := p
	if best != "" {
		out = rtTokens(k.rename[best], false)
		rest = strings.TrimPrefix(p, best)
	} else {
		out = []string{"spec"}
	}
	return append(out, rtTokens(rest, true)...)
}

// rtTokens splits a dotted path with [] and {} steps into segments (names camelCased when
// camel is set).
func rtTokens(p string, camel bool) []string {
	var out []string
	for _, seg := range strings.FieldsFunc(p, func(r rune) bool { return r == '.' }) {
		name, suffix := seg, ""
		if i := strings.IndexAny(seg, "[{"); i >= 0 {
			name, suffix = seg[:i], seg[i:]
		}
		if name != "" && camel {
			name = rtCamel(name)
		}
		if name != "" {
			out = append(out, name)
		}
		for ; len(suffix) >= 2; suffix = suffix[2:] {
			out = append(out, suffix[:2])
		}
	}
	return out
}

func rtCamel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// rtResolve follows a JSON path in obj ("[]": the first element, "{}": the only entry or the
// generic key); found is false when a step is missing.
func rtResolve(obj any, path []string) (any, bool) {
	cur := obj
	for _, seg := range path {
		switch t := cur.(type) {
		case []any:
			if seg != "[]" || len(t) == 0 {
				return nil, false
			}
			cur = t[0]
		case map[string]any:
			if seg == "{}" {
				if v, ok := t[rtGeneric]; ok {
					cur = v
					continue
				}
				if len(t) != 1 {
					return nil, false
				}
				for _, v := range t {
					cur = v
				}
				continue
			}
			v, ok := t[seg]
			if !ok {
				return nil, false
			}
			cur = v
		default:
			return nil, false
		}
	}
	return cur, true
}

// rtDiff lists the JSON paths ("[]"/"{}" for elements and entries, as s describes them) where
// a and b differ.
func rtDiff(a, b any, s *structuralschema.Structural, at []string) [][]string {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok && s != nil {
		var out [][]string
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			if reflect.DeepEqual(am[k], bm[k]) {
				continue
			}
			if p, ok := s.Properties[k]; ok {
				out = append(out, rtDiff(am[k], bm[k], &p, append(append([]string(nil), at...), k))...)
			} else if s.AdditionalProperties != nil {
				out = append(out, rtDiff(am[k], bm[k], s.AdditionalProperties.Structural, append(append([]string(nil), at...), "{}"))...)
			} else {
				out = append(out, append(append([]string(nil), at...), k))
			}
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) && s != nil {
		var out [][]string
		for i := range al {
			out = append(out, rtDiff(al[i], bl[i], s.Items, append(append([]string(nil), at...), "[]"))...)
		}
		return out
	}
	return [][]string{at}
}

// rtRelated: one path is a prefix of the other.
func rtRelated(a, b []string) bool {
	n := min(len(a), len(b))
	return reflect.DeepEqual(a[:n], b[:n])
}

// rtIsZero: v is the zero or empty value of its kind ({} for an object row: any object).
func rtIsZero(v any, what string) bool {
	switch t := v.(type) {
	case string:
		return t == ""
	case int64:
		return t == 0
	case float64:
		return t == 0
	case bool:
		return !t
	case []any:
		return len(t) == 0
	case map[string]any:
		return what == rtEmpty
	}
	return false
}

// ---------------------------------------------------------------------------------------------
// The row check.

// Row verdicts.
const (
	rtPresent    = "present"    // the value is in the object and reads back as written
	rtEquivalent = "equivalent" // absent, and the object's type cannot tell it from absent
	rtRefused    = "refused"    // invalid at plan, the error naming the attribute
	rtDropped    = "DROPPED"
)

// rtVerdict checks row r and says what became of its value: a verdict and, for a failure,
// why (problems). The row fails when problems is not empty.
func (h *rtHarness) rtVerdict(t testing.TB, r rtRow) (string, []string) {
	k := r.kind
	o := h.run(t, k, r.config)
	if len(o.errs) > 0 && r.what != rtValue {
		return rtRefusedVerdict(r, o)
	}
	if len(o.errs) > 0 || o.fail != "" {
		return "error", append([]string{"the row fails (declare it invalid in overrides, or fix its value): " + o.fail}, o.errs...)
	}
	var problems []string
	if len(o.pruned) > 0 {
		problems = append(problems, fmt.Sprintf("the CRD's schema prunes %v: the API server drops what the provider sent", o.pruned))
	}
	if len(o.absent) > 0 {
		problems = append(problems, fmt.Sprintf("the CRD requires %v, which the object lacks: the API server refuses it", o.absent))
	}
	if d := rtCompare(k.schema().Attributes, o.plan.Raw, o.flat, ""); len(d) > 0 {
		problems = append(problems, "flatten does not give back the plan: "+strings.Join(d, "; "))
	}
	without := rtCopy(r.config).(map[string]any)
	parent, _ := rtLookup(without, r.at[:len(r.at)-1]).(map[string]any)
	delete(parent, r.at[len(r.at)-1].(string))
	ow := h.run(t, k, without)
	s := rtStructural(t, k.crd)
	p := k.jsonPath(r.attr)
	if at, _ := rtSchemaAt(s, p); at == nil && p[0] != "metadata" {
		return "error", append(problems, fmt.Sprintf("%s maps to no CRD field (%s): add a rename", r.attr, strings.Join(p, ".")))
	}
	if r.what == rtValue {
		if len(ow.errs) == 0 && ow.fail == "" {
			diff := rtDiff(ow.object, o.object, s, nil)
			if got, found := rtResolve(o.object, p); len(diff) == 0 && found && reflect.DeepEqual(rtCopyJSON(got), rtCopyJSON(r.value)) {
				return rtPresent, problems // the value is the CRD's default: the object has it either way
			}
			if len(diff) == 0 {
				return rtDropped, append(problems, "the value never reaches the object (the object is the same without it)")
			}
			for _, d := range diff {
				if !rtRelated(d, p) {
					problems = append(problems, fmt.Sprintf("the value changes %s, not %s (rename?)", strings.Join(d, "."), strings.Join(p, ".")))
				}
			}
		}
		return rtPresent, problems
	}
	if why := rtResolvedAway(k, o.object, p, r); why != "" {
		return rtDropped, append(problems, why)
	}
	got, found := rtResolve(o.object, p)
	switch {
	case found && (rtIsZero(got, r.what) || reflect.DeepEqual(got, rtCopyJSON(r.value))):
		return rtPresent, problems
	case found:
		return rtDropped, append(problems, fmt.Sprintf("written %s, the object has %s = %v", rtShow(r.value), strings.Join(p, "."), got))
	}
	if r.emptyAbsent != "" {
		return rtEquivalent, problems
	}
	if why := rtDistinguished(s, reflect.TypeOf(k.goType), p); why != "" {
		return rtDropped, append(problems, fmt.Sprintf("%s is not in the object, but %s", strings.Join(p, "."), why))
	}
	return rtEquivalent, problems
}

// rtResolvedAway says how the reconciler replaces the zero or empty at p of obj (k.resolve),
// "" when it keeps it (or k has no resolve, or the object does not resolve: its own rows
// report that).
func rtResolvedAway(k *rtKind, obj map[string]any, p []string, r rtRow) string {
	if k.resolve == nil || k.overrides[r.attr].resolvedAs != "" {
		return ""
	}
	resolved, err := k.resolve(rtCopyJSON(obj).(map[string]any))
	if err != nil {
		return ""
	}
	got, found := rtResolve(rtCopyJSON(resolved), p)
	if !found || rtIsZero(got, r.what) || reflect.DeepEqual(got, rtCopyJSON(r.value)) {
		return ""
	}
	return fmt.Sprintf("written %s, the reconciler reads it as unset and runs %s = %v", rtShow(r.value), strings.Join(p, "."), got)
}

// rtDistinguished says why a zero or empty absent at p means something else to the CRD or
// the reconciler ("" when absent and zero mean the same).
func rtDistinguished(s *structuralschema.Structural, goType reflect.Type, p []string) string {
	if at, _ := rtSchemaAt(s, p); at != nil && at.Default.Object != nil {
		return fmt.Sprintf("the CRD defaults it to %v", at.Default.Object)
	}
	if _, distinguishes, ok := rtGoField(goType, p); ok && distinguishes {
		return "its API type (a pointer, or a field without omitempty) tells a written zero from an absent one"
	}
	return ""
}

// rtRefusedVerdict: a zero or empty the plan refuses is a refusal when every error names
// the row's attribute (its path, or a path under it, or the text names it); an error about
// another attribute means the row's configuration is incomplete (fix its override).
func rtRefusedVerdict(r rtRow, o *rtOutcome) (string, []string) {
	at := rtConcrete(r.at)
	for _, e := range o.errs {
		path, text, _ := strings.Cut(e, ": ")
		if path != at && !strings.HasPrefix(path, at+".") && !strings.HasPrefix(path, at+"[") && !strings.Contains(text, at) {
			return "error", []string{"refused at plan by an error that does not name " + at + " (complete the row's configuration in overrides): " + strings.Join(o.errs, " | ")}
		}
	}
	return rtRefused, nil
}

// rtConcrete renders a concrete path as a.b[0].c.
func rtConcrete(at []any) string {
	var b strings.Builder
	for _, s := range at {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		case rtKeyStep:
			fmt.Fprintf(&b, "[%q]", string(s))
		case string:
			if b.Len() > 0 {
				b.WriteString(".")
			}
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestZeroRoundTrip is the unit layer: every generated row of every resource.
func TestZeroRoundTrip(t *testing.T) {
	h := newRTHarness(t)
	for _, k := range rtKinds() {
		t.Run(strings.TrimPrefix(k.typeName, "gantry_"), func(t *testing.T) {
			rows := rtGenerate(k)
			counts := map[string]int{}
			attrs := map[string]bool{}
			for _, r := range rows {
				attrs[r.attr] = true
				verdict, problems := h.rtVerdict(t, r)
				counts[verdict]++
				if len(problems) > 0 {
					t.Errorf("%s: %s: %s", r, verdict, strings.Join(problems, "; "))
				} else if testing.Verbose() {
					t.Logf("%s: %s", r, verdict)
				}
			}
			t.Logf("%s: %d attributes, %d rows: %s", k.typeName, len(attrs), len(rows), rtCounts(counts))
		})
	}
}

func rtCounts(c map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(c) {
		parts = append(parts, fmt.Sprintf("%s %d", k, c[k]))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// The JSON patch applyKeepingEmpty sends before applying again empties exactly the objects the
// configuration writes as {} and the cluster holds filled, at any depth and in lists.
func TestEmptiedObjects(t *testing.T) {
	want := map[string]any{"drain": map[string]any{}, "rollout": map[string]any{"healthChecks": []any{
		map[string]any{"name": "a", "systemdFailedUnits": map[string]any{}}, map[string]any{"name": "b", "httpGet": map[string]any{"url": "u"}}}},
		"hourglassCompat": map[string]any{}, "a/b": map[string]any{}}
	live := map[string]any{"drain": map[string]any{"gracePeriod": "30s"}, "rollout": map[string]any{"healthChecks": []any{
		map[string]any{"name": "a", "systemdFailedUnits": map[string]any{"max": int64(1)}}, map[string]any{"name": "b", "httpGet": map[string]any{"url": "u"}}}},
		"hourglassCompat": map[string]any{}, "a/b": map[string]any{"x": "y"}}
	var got []string
	for _, op := range emptiedObjects(want, live, "/spec") {
		got = append(got, fmt.Sprintf("%s %s %v", op["op"], op["path"], op["value"]))
	}
	sort.Strings(got)
	exp := []string{"replace /spec/a~1b map[]", "replace /spec/drain map[]", "replace /spec/rollout/healthChecks/0/systemdFailedUnits map[]"}
	if !reflect.DeepEqual(got, exp) {
		t.Errorf("emptiedObjects = %q, want %q", got, exp)
	}
	if ops := emptiedObjects(want, map[string]any{}, "/spec"); len(ops) != 0 {
		t.Errorf("nothing filled in the cluster: ops %v, want none", ops)
	}
}
