package provider

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// The zero/empty round-trip table (issue 38 item 5: what the user writes reaches the cluster).
// Rows are generated from each resource's schema, not written by hand: for every attribute a
// user can set (nested objects, list elements and map entries included) its zero ("", 0,
// false, and "0s" for a duration), its empty object, list or map, and one non-default valid
// value (a OneOf validator's first non-default value, else a generic one), each in a
// configuration that is the resource's base configuration plus that one setting and the
// parents it needs. overrides holds what the schema cannot say: a valid value where the
// generic one is not, the siblings an attribute needs (gpu_type needs gpu_count > 0), the
// element a nested list starts from, and what the acceptance layer cannot run. A zero or empty
// the plan refuses is a row too: its verdict asserts that every error names the attribute.
// A few hand-written rows (rtKind.extra) put a zero beside what changes its meaning (a
// Workspace's gpu_count = 0 beside a preset). The unit layer (zero_roundtrip_unit_test.go)
// runs every row through the provider's own plan, expand, the CRD's structural schema and
// flatten; the acceptance layer (zero_roundtrip_acc_test.go) packs the rows into a few applies
// per resource against the local cluster.

// Row kinds.
const (
	rtZero  = "zero"  // "", 0 or false
	rtEmpty = "empty" // {} or []: an empty map, list or object (a nested object with required attributes: only those)
	rtValue = "value" // a non-default valid value
)

// rtGeneric is the generic non-default value: a string, a map key and a list element.
const rtGeneric = "zerotest"

// rtOverride is what the generator cannot derive from the schema for one attribute (keyed by
// its schema path, list elements as [] and map entries as {}: "rollout.health_checks[].name").
type rtOverride struct {
	// value is the non-default valid value (nil: the generic one for the type).
	value any
	// empty replaces the generated empty row's value (e.g. "{}" for a JSON string attribute).
	empty any
	// with sets other attributes (dotted paths from the root, list elements as [0]) in every
	// row of the attribute and of the attributes under it; a nil value removes one.
	with map[string]any
	// valueWith is with for the value row only.
	valueWith map[string]any
	// min is the nested object (or list element, or map entry) to use when the attribute's
	// parent chain is created for a row under it (nil: its required attributes).
	min map[string]any
	// key is the map key of a map-nested attribute's entry (default rtGeneric).
	key string
	// resolvedAs: the reconciler rewrites the zero (rtKind.resolve) to what means the same
	// (why); the row is then not a drop.
	resolvedAs string
	// emptyAbsent: the empty value is sent as no value by design (why); the row's verdict is
	// then equivalent even where the API type could hold it.
	emptyAbsent string
	// group and valueGroup (value rows only) name what a row asks of the node (gpu, tee): the
	// acceptance layer never puts rows of two groups in one apply (no node has both).
	group, valueGroup string
	// acc is why the row is left out of the acceptance layer ("" when it is in): what it needs
	// is not in the test cluster (MIG slices, a bound claim, nodes of an instance type, ...).
	acc string
}

// rtKind is one resource of the table.
type rtKind struct {
	typeName  string
	newRes    func() resource.Resource
	base      func(ns, name string) map[string]any
	overrides map[string]rtOverride
	// rename maps schema paths (prefixes) to object JSON paths where the attribute's JSON name
	// is not its camelCase (e.g. node_selector → spec.scheduling.nodeSelector); the rest are
	// spec.<camelCase>.
	rename map[string]string
	// skip names the attributes (schema paths) that never reach the object, with why.
	skip map[string]string
	// crd is the CRD file under internal/api/v1alpha1/crds.
	crd string
	// codec maps the model to the object and back (the provider's expand and flatten).
	codec rtCodec
	// goType is a pointer to the kind's API struct, to tell pointers and omitempty apart.
	goType any
	// extra are hand-written rows for what the schema walk cannot reach: a zero beside an
	// attribute that changes what the zero means (a Workspace's gpu_count = 0 beside a preset).
	extra []rtExtra
	// resolve, optional, is what the reconciler makes of a stored object before it acts on it
	// (a Workspace's presets and instance types, workspace.Resolve): a zero or empty written by
	// the user must still be zero or empty there.
	resolve func(obj map[string]any) (map[string]any, error)
}

// rtExtra is a hand-written row: attr (an attribute path of nested objects) set to value in
// the base configuration with the attributes of with (dotted paths).
type rtExtra struct {
	attr, what string
	value      any
	with       map[string]any
	acc        string // as rtOverride's
}

// rtRow is one generated row.
type rtRow struct {
	kind   *rtKind
	attr   string // schema path, e.g. "hardware_requirements.gpu_count"
	what   string // rtZero, rtEmpty or rtValue
	value  any
	config map[string]any // the whole configuration
	// at is the concrete path of the attribute in config (list elements 0, map keys as used).
	at []any
	// sets are the other attributes the row sets (its with and valueWith), by dotted path.
	sets        map[string]any
	acc, group  string
	emptyAbsent string
}

func (r rtRow) String() string {
	return fmt.Sprintf("%s/%s=%s(%s)", strings.TrimPrefix(r.kind.typeName, "gantry_"), r.attr, r.what, rtShow(r.value))
}

// rtShow renders a value as one line of HCL, for names and messages.
func rtShow(v any) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(rtHCL(v, ""), "\n", " ")), " ")
}

// rtSchema returns the kind's resource schema.
func (k *rtKind) schema() schema.Schema {
	var resp resource.SchemaResponse
	k.newRes().Schema(context.Background(), resource.SchemaRequest{}, &resp)
	return resp.Schema
}

// rtGenerate returns the rows of kind k: a walk of its schema.
func rtGenerate(k *rtKind) []rtRow { return rtGenerateFor(k, "zero", "zero") }

// rtGenerateFor is rtGenerate for an object of namespace ns and name.
func rtGenerateFor(k *rtKind, ns, name string) []rtRow {
	g := &rtGen{k: k, base: k.base(ns, name)}
	g.walk(k.schema().Attributes, "", nil)
	for _, e := range k.extra {
		var here []any
		for _, s := range strings.Split(e.attr, ".") {
			here = append(here, s)
		}
		g.add(e.attr, e.what, e.value, here, rtOverride{with: e.with, acc: e.acc})
	}
	return g.rows
}

type rtGen struct {
	k    *rtKind
	base map[string]any
	rows []rtRow
}

// settable reports whether a user writes attribute a (not computed-only, not write-only).
func rtSettable(a schema.Attribute) bool {
	return (a.IsOptional() || a.IsRequired()) && !a.IsWriteOnly()
}

func (g *rtGen) walk(attrs map[string]schema.Attribute, prefix string, at []any) {
	for _, name := range sortedKeys(attrs) {
		a := attrs[name]
		p := prefix + name
		if !rtSettable(a) {
			continue
		}
		if _, skip := g.k.skip[p]; skip {
			continue
		}
		o := g.k.overrides[p]
		here := append(append([]any(nil), at...), name)
		switch t := a.(type) {
		case schema.StringAttribute:
			g.add(p, rtZero, "", here, o)
			if rtIsDuration(t) {
				g.add(p, rtZero, "0s", here, o) // a duration's own zero
			}
			if o.empty != nil {
				g.add(p, rtEmpty, o.empty, here, o)
			}
			g.addValue(p, here, a, o)
		case schema.Int64Attribute:
			g.add(p, rtZero, int64(0), here, o)
			g.addValue(p, here, a, o)
		case schema.BoolAttribute:
			g.add(p, rtZero, false, here, o)
			g.addValue(p, here, a, o)
		case schema.MapAttribute, schema.ListAttribute:
			g.add(p, rtEmpty, rtEmptyOf(a), here, o)
			g.addValue(p, here, a, o)
		case schema.SingleNestedAttribute:
			g.add(p, rtEmpty, g.minimal(p, t.Attributes), here, o)
			g.walk(t.Attributes, p+".", here)
		case schema.ListNestedAttribute:
			g.add(p, rtEmpty, []any{}, here, o)
			g.add(p, rtValue, []any{g.minimal(p+"[]", t.NestedObject.Attributes)}, here, o)
			g.walk(t.NestedObject.Attributes, p+"[].", append(here, 0))
		case schema.MapNestedAttribute:
			g.add(p, rtEmpty, map[string]any{}, here, o)
			g.add(p, rtValue, map[string]any{rtMapKey(o): g.minimal(p+"{}", t.NestedObject.Attributes)}, here, o)
			g.walk(t.NestedObject.Attributes, p+"{}.", append(here, rtKeyStep(rtMapKey(o))))
		default:
			panic(fmt.Sprintf("%s: attribute type %T not handled by the generator", p, a))
		}
	}
}

// rtIsDuration: a has a duration validator (its zero is "0s" as well as "").
func rtIsDuration(a schema.StringAttribute) bool {
	for _, v := range a.Validators {
		if _, ok := v.(durationValidator); ok {
			return true
		}
	}
	return false
}

// rtKeyStep is a map key in a concrete path (a string step is an attribute name).
type rtKeyStep string

func rtMapKey(o rtOverride) string {
	if o.key != "" {
		return o.key
	}
	return rtGeneric
}

// rtEmptyOf is the empty value of a map or list attribute.
func rtEmptyOf(a schema.Attribute) any {
	if _, ok := a.(schema.MapAttribute); ok {
		return map[string]any{}
	}
	return []any{}
}

func (g *rtGen) addValue(p string, here []any, a schema.Attribute, o rtOverride) {
	v := o.value
	if v == nil {
		v = rtGenericValue(a)
	}
	if d := rtDefaultValue(a); d != nil && d == v {
		return // the default is no non-default value (a bool defaulting to true: its zero row is)
	}
	g.add(p, rtValue, v, here, o)
}

// rtGenericValue is the generic non-default value of a scalar, map or list attribute: true,
// 1 (2 when the default is 1), "zerotest", { zerotest = "zerotest" }, ["zerotest"].
func rtGenericValue(a schema.Attribute) any {
	switch t := a.(type) {
	case schema.BoolAttribute:
		return true
	case schema.Int64Attribute:
		if d, _ := rtDefaultValue(t).(int64); d == 1 {
			return int64(2)
		}
		return int64(1)
	case schema.MapAttribute:
		return map[string]any{rtGeneric: rtGeneric}
	case schema.ListAttribute:
		return []any{rtGeneric}
	case schema.StringAttribute:
		if v := rtOneOf(t); v != "" {
			return v
		}
	}
	return rtGeneric
}

// rtOneOf is the first value a OneOf validator of a allows that is not a's default ("" when it
// has none).
func rtOneOf(a schema.StringAttribute) string {
	def, _ := rtDefaultValue(a).(string)
	for _, v := range a.Validators {
		d := v.Description(context.Background())
		_, list, ok := strings.Cut(d, "value must be one of: [")
		if !ok {
			continue
		}
		list, _, _ = strings.Cut(list, "]")
		for _, q := range strings.Fields(list) {
			if s, err := strconv.Unquote(q); err == nil && s != "" && s != def {
				return s
			}
		}
	}
	return ""
}

// add appends a row setting the attribute at here to v (with the siblings the overrides of
// the attribute and its ancestors name).
func (g *rtGen) add(p, what string, v any, here []any, o rtOverride) {
	cfg := rtCopy(g.base).(map[string]any)
	g.ensure(cfg, here[:len(here)-1], "")
	sets := map[string]any{}
	for _, anc := range rtAncestors(p) {
		for k, wv := range g.k.overrides[anc].with {
			sets[k] = wv
		}
	}
	for k, wv := range o.with {
		sets[k] = wv
	}
	if what == rtValue {
		for k, wv := range o.valueWith {
			sets[k] = wv
		}
	}
	for _, k := range sortedKeys(sets) {
		rtSetPath(cfg, k, sets[k])
	}
	acc, group := o.acc, ""
	for _, anc := range rtAncestors(p) {
		if a := g.k.overrides[anc].acc; a != "" {
			acc = a
		}
		if a := g.k.overrides[anc].group; a != "" {
			group = a
		}
	}
	if what == rtValue && o.valueGroup != "" {
		group = o.valueGroup
	}
	parent := rtLookup(cfg, here[:len(here)-1]).(map[string]any)
	parent[here[len(here)-1].(string)] = rtCopy(v)
	g.rows = append(g.rows, rtRow{kind: g.k, attr: p, what: what, value: v, config: cfg, at: here, sets: sets, acc: acc, group: group, emptyAbsent: o.emptyAbsent})
}

// rtAncestors lists the schema paths of p's ancestors and p, outermost first:
// "a.b[].c" → "a", "a.b", "a.b[].c".
func rtAncestors(p string) []string {
	var out []string
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(p[:i], "[]"), "{}"))
		}
	}
	return append(out, p)
}

// ensure creates the parents along path in cfg (a nested object: the base's or its minimal
// value; a list: one minimal element; a map: one minimal entry).
func (g *rtGen) ensure(cur map[string]any, path []any, prefix string) {
	attrs := g.k.schema().Attributes
	for i := 0; i < len(path); i++ {
		name := path[i].(string)
		a := rtAttrAt(attrs, name)
		p := prefix + name
		switch t := a.(type) {
		case schema.SingleNestedAttribute:
			if cur[name] == nil {
				cur[name] = g.minimalOf(p, t.Attributes)
			}
			cur, attrs, prefix = cur[name].(map[string]any), t.Attributes, p+"."
		case schema.ListNestedAttribute:
			l, _ := cur[name].([]any)
			if len(l) == 0 {
				l = []any{g.minimalOf(p+"[]", t.NestedObject.Attributes)}
				cur[name] = l
			}
			i++ // the index (always 0)
			cur, attrs, prefix = l[0].(map[string]any), t.NestedObject.Attributes, p+"[]."
		case schema.MapNestedAttribute:
			m, _ := cur[name].(map[string]any)
			key := string(path[i+1].(rtKeyStep))
			if m == nil {
				m = map[string]any{}
				cur[name] = m
			}
			if m[key] == nil {
				m[key] = g.minimalOf(p+"{}", t.NestedObject.Attributes)
			}
			i++
			cur, attrs, prefix = m[key].(map[string]any), t.NestedObject.Attributes, p+"{}."
		default:
			panic(fmt.Sprintf("%s is not a nested attribute", p))
		}
	}
}

func rtAttrAt(attrs map[string]schema.Attribute, name string) schema.Attribute {
	a, ok := attrs[name]
	if !ok {
		panic("no attribute " + name)
	}
	return a
}

// minimalOf is the override's min for p, else minimal.
func (g *rtGen) minimalOf(p string, attrs map[string]schema.Attribute) map[string]any {
	if m := g.k.overrides[p].min; m != nil {
		return rtCopy(m).(map[string]any)
	}
	return g.minimal(p, attrs)
}

// minimal is the smallest object of attrs: its required attributes only, each its value.
func (g *rtGen) minimal(p string, attrs map[string]schema.Attribute) map[string]any {
	if m := g.k.overrides[p].min; m != nil {
		return rtCopy(m).(map[string]any)
	}
	out := map[string]any{}
	for name, a := range attrs {
		if !a.IsRequired() {
			continue
		}
		cp := p + "." + name
		o := g.k.overrides[cp]
		switch t := a.(type) {
		case schema.SingleNestedAttribute:
			out[name] = g.minimalOf(cp, t.Attributes)
		case schema.ListNestedAttribute:
			out[name] = []any{g.minimalOf(cp+"[]", t.NestedObject.Attributes)}
		default:
			if o.value != nil {
				out[name] = rtCopy(o.value)
			} else {
				out[name] = rtGenericValue(a)
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------
// Configuration trees: map[string]any objects and maps, []any lists, string, int64 and bool
// values, nil for null.

func rtCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = rtCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = rtCopy(e)
		}
		return out
	case int:
		return int64(t)
	}
	return v
}

// rtLookup follows path (names and indices) in cfg; nil when absent.
func rtLookup(cfg any, path []any) any {
	cur := cfg
	for _, s := range path {
		switch t := cur.(type) {
		case map[string]any:
			if k, ok := s.(rtKeyStep); ok {
				cur = t[string(k)]
				continue
			}
			cur = t[s.(string)]
		case []any:
			i := s.(int)
			if i >= len(t) {
				return nil
			}
			cur = t[i]
		default:
			return nil
		}
	}
	return cur
}

// rtSetPath sets a dotted path (objects only; "a.b[0].c" for a list element) in cfg, creating
// objects on the way.
func rtSetPath(cfg map[string]any, path string, v any) {
	cur := cfg
	parts := strings.Split(path, ".")
	for i, part := range parts {
		name, idx := part, -1
		if j := strings.Index(part, "["); j >= 0 {
			name = part[:j]
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[j+1:], "]"))
		}
		if i == len(parts)-1 && idx < 0 {
			cur[name] = rtCopy(v)
			if v == nil {
				delete(cur, name)
			}
			return
		}
		if idx >= 0 {
			l, _ := cur[name].([]any)
			for len(l) <= idx {
				l = append(l, map[string]any{})
			}
			cur[name] = l
			if i == len(parts)-1 {
				l[idx] = rtCopy(v)
				return
			}
			cur = l[idx].(map[string]any)
			continue
		}
		next, _ := cur[name].(map[string]any)
		if next == nil {
			next = map[string]any{}
			cur[name] = next
		}
		cur = next
	}
}

// rtGetPath reads a dotted path (as rtSetPath writes it) in cfg; nil when absent.
func rtGetPath(cfg map[string]any, path string) any {
	var cur any = cfg
	for _, part := range strings.Split(path, ".") {
		name, idx := part, -1
		if j := strings.Index(part, "["); j >= 0 {
			name = part[:j]
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[j+1:], "]"))
		}
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[name]
		if idx >= 0 {
			l, _ := cur.([]any)
			if idx >= len(l) {
				return nil
			}
			cur = l[idx]
		}
	}
	return cur
}

// rtTF converts a configuration tree to a value of typ (attributes it lacks are null).
func rtTF(typ tftypes.Type, v any) tftypes.Value {
	if v == nil {
		return tftypes.NewValue(typ, nil)
	}
	switch tt := typ.(type) {
	case tftypes.Object:
		m := v.(map[string]any)
		for n := range m {
			if _, ok := tt.AttributeTypes[n]; !ok {
				panic(fmt.Sprintf("no attribute %q in %s", n, tt))
			}
		}
		attrs := map[string]tftypes.Value{}
		for n, at := range tt.AttributeTypes {
			attrs[n] = rtTF(at, m[n])
		}
		return tftypes.NewValue(tt, attrs)
	case tftypes.List:
		es := []tftypes.Value{}
		for _, e := range v.([]any) {
			es = append(es, rtTF(tt.ElementType, e))
		}
		return tftypes.NewValue(tt, es)
	case tftypes.Map:
		es := map[string]tftypes.Value{}
		for k, e := range v.(map[string]any) {
			es[k] = rtTF(tt.ElementType, e)
		}
		return tftypes.NewValue(tt, es)
	}
	switch n := v.(type) {
	case int64:
		return tftypes.NewValue(typ, new(big.Float).SetInt64(n))
	case int:
		return tftypes.NewValue(typ, new(big.Float).SetInt64(int64(n)))
	}
	return tftypes.NewValue(typ, v)
}

// rtHCL renders a configuration tree as an HCL expression (indent: the current indentation).
func rtHCL(v any, indent string) string {
	switch t := v.(type) {
	case nil:
		return "null"
	case string:
		s := strconv.Quote(t)
		s = strings.ReplaceAll(s, "${", "$${")
		return strings.ReplaceAll(s, "%{", "%%{")
	case int64, int:
		return fmt.Sprint(t)
	case bool:
		return strconv.FormatBool(t)
	case []any:
		if len(t) == 0 {
			return "[]"
		}
		var b strings.Builder
		b.WriteString("[\n")
		for _, e := range t {
			b.WriteString(indent + "  " + rtHCL(e, indent+"  ") + ",\n")
		}
		return b.String() + indent + "]"
	case map[string]any:
		if len(t) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range keys {
			b.WriteString(indent + "  " + strconv.Quote(k) + " = " + rtHCL(t[k], indent+"  ") + "\n")
		}
		return b.String() + indent + "}"
	}
	panic(fmt.Sprintf("rtHCL: %T", v))
}

// rtResourceHCL renders a resource block of the configuration tree cfg.
func rtResourceHCL(typeName, name string, cfg map[string]any) string {
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "resource %q %q {\n", typeName, name)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s = %s\n", k, rtHCL(cfg[k], "  "))
	}
	return b.String() + "}\n"
}

// rtDefaultValue is the static default of a scalar attribute (nil: none) as a tree value.
func rtDefaultValue(a schema.Attribute) any {
	ctx := context.Background()
	switch t := a.(type) {
	case schema.StringAttribute:
		if t.Default != nil {
			var resp defaults.StringResponse
			t.Default.DefaultString(ctx, defaults.StringRequest{}, &resp)
			return resp.PlanValue.ValueString()
		}
	case schema.Int64Attribute:
		if t.Default != nil {
			var resp defaults.Int64Response
			t.Default.DefaultInt64(ctx, defaults.Int64Request{}, &resp)
			return resp.PlanValue.ValueInt64()
		}
	case schema.BoolAttribute:
		if t.Default != nil {
			var resp defaults.BoolResponse
			t.Default.DefaultBool(ctx, defaults.BoolRequest{}, &resp)
			return resp.PlanValue.ValueBool()
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// The four resources: base configurations (each reaches its success value on the local
// cluster's kwok nodes in seconds), renames and overrides.

// rtMetaRename: the attributes every namespaced kind maps the same way.
var rtMetaRename = map[string]string{"labels": "metadata.labels", "annotations": "metadata.annotations",
	"name": "metadata.name", "namespace": "metadata.namespace",
	"node_selector": "spec.scheduling.nodeSelector", "tolerations": "spec.scheduling.tolerations",
	"affinity": "spec.scheduling.affinity", "runtime_class_name": "spec.scheduling.runtimeClassName",
	"priority_class_name": "spec.scheduling.priorityClassName"}

func rtRenames(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range rtMetaRename {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

var rtSkipCommon = map[string]string{"timeouts": "operation timeouts: kept in state only, never sent"}

// rtObjectKey: the rows of name and namespace name another object.
var rtObjectKey = map[string]rtOverride{"name": {acc: "another name is another object"}, "namespace": {acc: "another namespace is another object"}}

// Values shared by the kinds.
var (
	rtAffinity = `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/os","operator":"In","values":["linux"]}]}]}}}`
	rtAddr1    = "0x" + strings.Repeat("12", 20)
	rtAddr2    = "0x" + strings.Repeat("34", 20)
	rtAddr3    = "0x" + strings.Repeat("56", 20)
	// The fixtures the acceptance layer creates in its namespace (and the PriorityClass).
	rtSecret, rtConfigMap, rtServiceAccount = "zero-secret", "zero-config", "zero-sa"
	rtPriorityClass, rtRuntimeClass         = "gantry-zero-test", "gantry-zero-test"
)

// rtMerge returns the union of override tables (later ones win).
func rtMerge(tables ...map[string]rtOverride) map[string]rtOverride {
	out := map[string]rtOverride{}
	for _, t := range tables {
		for k, v := range t {
			out[k] = v
		}
	}
	return out
}

// rtTolerations: the overrides of a tolerations attribute at attr (concrete path at, e.g.
// "tolerations[0]"): an element keyed "zerotest" with operator Equal; a key of "" needs
// Exists, tolerationSeconds needs effect NoExecute.
func rtTolerations(attr, at string) map[string]rtOverride {
	return map[string]rtOverride{
		attr + "[]": {min: map[string]any{"key": rtGeneric, "operator": "Equal"}},
		attr + "[].key": {with: map[string]any{at + ".operator": "Exists"},
			acc: "a toleration without a key tolerates every taint, the real node's too, which would pull the image"},
		attr + "[].toleration_seconds": {with: map[string]any{at + ".effect": "NoExecute"}},
		attr + "[].operator":           {value: "Exists"},
		attr + "[].effect":             {value: "NoExecute"},
	}
}

// rtPodCommon: the overrides every Pod-running namespaced kind shares.
func rtPodCommon() map[string]rtOverride {
	return rtMerge(rtObjectKey, rtTolerations("tolerations", "tolerations[0]"), map[string]rtOverride{
		"affinity":            {value: rtAffinity, empty: "{}"},
		"resources.requests":  {value: map[string]any{"cpu": "10m"}},
		"resources.limits":    {value: map[string]any{"memory": "64Mi"}},
		"runtime_class_name":  {value: rtRuntimeClass},
		"priority_class_name": {value: rtPriorityClass},
		"image_pull_secrets":  {value: []any{rtSecret}},
		"node_selector":       {value: map[string]any{"kubernetes.io/os": "linux"}},
	})
}

func rtKinds() []*rtKind {
	return []*rtKind{rtPerformer(), rtExecutor(), rtAggregator(), rtWorkspace(), rtPackageSet()}
}

func rtPerformer() *rtKind {
	return &rtKind{
		typeName: "gantry_performer", newRes: NewPerformerResource, crd: "gantry.dev_performers.yaml",
		codec: rtCodecOf(performerOps), goType: &v1alpha1.Performer{},
		base: func(ns, name string) map[string]any {
			return map[string]any{"name": name, "namespace": ns, "image": "ghcr.io/gantry-dev/zero-performer:1.0.0"}
		},
		rename: rtRenames(nil),
		skip:   rtSkipCommon,
		overrides: rtMerge(rtPodCommon(), map[string]rtOverride{
			"avs_address":                        {value: rtAddr1},
			"grpc_port":                          {value: int64(9191)},
			"service_account_name":               {value: rtServiceAccount},
			"env_from[]":                         {min: map[string]any{"name": "ZEROTEST", "secret_key_ref": map[string]any{"name": rtSecret, "key": rtGeneric}}},
			"env_from[].config_map_key_ref":      {with: map[string]any{"env_from[0].secret_key_ref": nil}},
			"env_from[].secret_key_ref.name":     {value: rtSecret},
			"env_from[].config_map_key_ref.name": {value: rtConfigMap},
			"hardware_requirements.gpu_type":     {value: "NVIDIA-A100-SXM4-80GB", with: map[string]any{"hardware_requirements.gpu_count": 1}, group: "gpu"},
			"hardware_requirements.gpu_resource": {value: "nvidia.com/a100", with: map[string]any{"hardware_requirements.gpu_count": 1},
				acc: "no kwok node advertises nvidia.com/a100"},
			"hardware_requirements.tee_required":  {valueWith: map[string]any{"hardware_requirements.tee_type": "tdx"}, valueGroup: "tee"},
			"hardware_requirements.tee_type":      {value: "tdx", with: map[string]any{"hardware_requirements.tee_required": true}, group: "tee"},
			"hardware_requirements.gpu_count":     {valueGroup: "gpu"},
			"hardware_requirements.custom_labels": {value: map[string]any{"kubernetes.io/os": "linux"}},
			// a peer needs a selector (an empty peer would admit nothing the user can name)
			"network_policy.allow_from[]": {min: map[string]any{"pod_selector": map[string]any{"app": rtGeneric}}},
			"autoscaling": {min: map[string]any{"min_replicas": int64(1), "max_replicas": int64(2), "metric": map[string]any{"cpu_average_value": "500m"}},
				with: map[string]any{"strategy": "RollingUpdate"}},
			"autoscaling.min_replicas":                  {value: int64(2)},
			"autoscaling.max_replicas":                  {value: int64(3)},
			"autoscaling.external":                      {valueWith: map[string]any{"autoscaling.metric": nil}},
			"autoscaling.metric.cpu_average_value":      {value: "1500m"},
			"autoscaling.metric.pods":                   {with: map[string]any{"autoscaling.metric.cpu_average_value": nil}},
			"autoscaling.metric.pods.name":              {value: "performer_tasks_in_flight"},
			"autoscaling.metric.pods.average_value":     {value: "5"},
			"autoscaling.metric.external":               {with: map[string]any{"autoscaling.metric.cpu_average_value": nil}},
			"autoscaling.metric.external.name":          {value: "queue_length"},
			"autoscaling.metric.external.average_value": {value: "10"},
		}),
	}
}

func rtExecutor() *rtKind {
	return &rtKind{
		typeName: "gantry_executor", newRes: NewExecutorResource, crd: "gantry.dev_executors.yaml",
		codec: rtCodecOf(executorOps), goType: &v1alpha1.Executor{},
		base: func(ns, name string) map[string]any {
			return map[string]any{"name": name, "namespace": ns, "image": "ghcr.io/layr-labs/hourglass/executor:1.0.0",
				"aggregator_endpoint": "aggregator.avs.svc:9010",
				"chains": []any{map[string]any{"name": "ethereum", "chain_id": int64(1), "rpc_url": "https://eth.example.com",
					"task_mailbox_address": "0x" + strings.Repeat("ab", 20)}},
				"operator_keys": map[string]any{"secret_name": "operator-keys", "ecdsa_key": "ecdsa", "bls_key": "bls"}}
		},
		rename: rtRenames(map[string]string{"operator_keys.remote_signer.address": "spec.operatorKeys.remoteSigner.fromAddress", "performer_names": "spec.performers.names", "performer_selector": "spec.performers.selector.matchLabels",
			"rollback_on_failure": "spec.rollback.onFailure", "rollback_keep_revisions": "spec.rollback.keepRevisions"}),
		skip: rtMerge2(rtSkipCommon, map[string]string{
			"operator_keys.private_keys_wo_version": "versions the write-only keys (the provider's own Secret, operator_keys_test.go); needs a write-only key, which a plan never holds"}),
		overrides: rtMerge(rtPodCommon(), map[string]rtOverride{
			"aggregator_endpoint":                    {value: "aggregator2.avs.svc:9010"},
			"avs_performers[]":                       {min: map[string]any{"avs_address": rtAddr1}},
			"avs_performers[].avs_address":           {value: rtAddr2},
			"avs_performers[].avs_registrar_address": {value: rtAddr3},
			"avs_performers[].image":                 {value: "ghcr.io/gantry-dev/zero-performer:1.0.0"},
			"chains[]":                               {min: map[string]any{"name": "base", "chain_id": int64(8453), "rpc_url": "https://base.example.com", "task_mailbox_address": rtAddr1}},
			"chains[].chain_id":                      {value: int64(8453)},
			"chains[].name":                          {value: "base"},
			"chains[].rpc_url":                       {value: "https://rpc2.example.com"},
			"chains[].task_mailbox_address":          {value: rtAddr2},
			"hourglass_compat": {with: map[string]any{"operator_address": rtAddr1,
				"operator_keys": map[string]any{"secret_name": "operator-keys", "ecdsa_key": "ecdsa"}}},
			"hourglass_compat.l1_chain":      {value: "ethereum"},
			"hourglass_compat.config_format": {value: v1alpha1.HourglassConfigFormatExecutorV1alpha1},
			"operator_address":               {value: rtAddr1},
			"operator_keys.bls_keystore_key": {with: map[string]any{"operator_keys.bls_key": nil}, value: "bls"},
			"operator_keys.bls_keystore_password_key": {with: map[string]any{"operator_keys.bls_key": nil, "operator_keys.bls_keystore_key": "bls"},
				value: "password"}, // a key of its own: one Secret key for two keys fails the plan

			"operator_keys.remote_signer_url": {with: map[string]any{"operator_keys.secret_name": nil, "operator_keys.ecdsa_key": nil, "operator_keys.bls_key": nil},
				value: "https://signer.example.com"},
			"operator_keys.remote_signer": {min: map[string]any{"url": "https://web3signer.example.com:9000", "public_key": "0x" + strings.Repeat("ab", 64)},
				with: map[string]any{"hourglass_compat": map[string]any{}, "operator_address": rtAddr1,
					"operator_keys.secret_name": nil, "operator_keys.ecdsa_key": nil, "operator_keys.bls_key": nil}},
			"operator_keys.remote_signer.url":        {value: "https://web3signer-2.example.com:9000"},
			"operator_keys.remote_signer.public_key": {value: "0x04" + strings.Repeat("cd", 64)},
			"operator_keys.remote_signer.address":    {value: rtAddr2},
			"operator_keys.remote_signer.ca_secret_name": {value: "signer-ca",
				acc: "names a Secret that does not exist"},
			"operator_keys.remote_signer.client_cert_secret_name": {value: "signer-client",
				acc: "names a Secret that does not exist"},
			"operator_keys.ecdsa_key":   {value: "ecdsa-2"},
			"operator_keys.bls_key":     {value: "bls-2"},
			"operator_keys.secret_name": {value: "operator-keys-2", acc: "names a Secret that does not exist"},
			"performer_names":           {value: []any{"zero-performer"}},
			"performer_selector":        {value: map[string]any{"app": "zero"}},
			"progress_deadline_seconds": {value: int64(600)},
			"management_port":           {value: int64(9191)},
			"grpc_port":                 {value: int64(9190)},
			"manage_performers": {valueWith: map[string]any{"avs_performers": []any{map[string]any{"avs_address": rtAddr1,
				"image": "ghcr.io/gantry-dev/zero-performer:1.0.0"}}}},
		}),
	}
}

func rtAggregator() *rtKind {
	return &rtKind{
		typeName: "gantry_aggregator", newRes: NewAggregatorResource, crd: "gantry.dev_aggregators.yaml",
		codec: rtCodecOf(aggregatorOps), goType: &v1alpha1.Aggregator{},
		base: func(ns, name string) map[string]any {
			return map[string]any{"name": name, "namespace": ns, "image": "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2",
				"operator_address": rtAddr1, "l1_chain_id": int64(31337),
				"chains":        []any{map[string]any{"name": "ethereum", "chain_id": int64(31337), "rpc_url": "http://anvil.example.com:8545"}},
				"operator_keys": map[string]any{"secret_name": "operator-keys", "ecdsa_key": "ecdsa"}}
		},
		rename: rtRenames(map[string]string{"operator_keys.remote_signer.address": "spec.operatorKeys.remoteSigner.fromAddress",
			"l1_chain_id": "spec.l1ChainId", "avss": "spec.avss", "avss[].chain_ids": "spec.avss[].chainIds"}),
		skip: rtMerge2(rtSkipCommon, map[string]string{
			"operator_keys.private_keys_wo_version": "versions the write-only key (the provider's own Secret, operator_keys_test.go); needs a write-only key, which a plan never holds"}),
		overrides: rtMerge(rtObjectKey, map[string]rtOverride{
			"resources.requests": {value: map[string]any{"cpu": "10m"}},
			"resources.limits":   {value: map[string]any{"memory": "64Mi"}},
			"image_pull_secrets": {value: []any{rtSecret}},
			"operator_address":   {value: rtAddr2},
			"l1_chain_id": {value: int64(31338), with: map[string]any{"chains": []any{
				map[string]any{"name": "ethereum", "chain_id": int64(31337), "rpc_url": "http://anvil.example.com:8545"},
				map[string]any{"name": "base", "chain_id": int64(31338), "rpc_url": "http://anvil.example.com:9545"}}}},
			"chains[]":                       {min: map[string]any{"name": "ethereum", "chain_id": int64(31337), "rpc_url": "http://anvil.example.com:8545"}},
			"chains[].chain_id":              {value: int64(31337)},
			"chains[].name":                  {value: "base"},
			"chains[].rpc_url":               {value: "https://rpc2.example.com"},
			"chains[].poll_interval_seconds": {value: int64(10)},
			"avss[]":                         {min: map[string]any{"address": rtAddr1, "chain_ids": []any{int64(31337)}}},
			"avss[].address":                 {value: rtAddr2},
			"avss[].chain_ids":               {value: []any{int64(31337)}},
			"management_port":                {value: int64(9010)},
			"persistence":                    {min: map[string]any{"size": "1Gi"}, acc: "a claim that may never bind in the test cluster"},
			"persistence.size":               {value: "2Gi"},
			"persistence.storage_class_name": {value: "standard"},
			"operator_keys.bls_keystore_key": {value: "bls"},
			"operator_keys.bls_keystore_password_key": {with: map[string]any{"operator_keys.bls_keystore_key": "bls"},
				value: "password"},
			"operator_keys.remote_signer": {min: map[string]any{"url": "https://web3signer.example.com:9000", "public_key": "0x" + strings.Repeat("ab", 64)},
				with: map[string]any{"operator_keys.secret_name": nil, "operator_keys.ecdsa_key": nil}},
			"operator_keys.remote_signer.url":        {value: "https://web3signer-2.example.com:9000"},
			"operator_keys.remote_signer.public_key": {value: "0x04" + strings.Repeat("cd", 64)},
			"operator_keys.remote_signer.address":    {value: rtAddr2},
			"operator_keys.remote_signer.ca_secret_name": {value: "signer-ca",
				acc: "names a Secret that does not exist"},
			"operator_keys.remote_signer.client_cert_secret_name": {value: "signer-client",
				acc: "names a Secret that does not exist"},
			"operator_keys.ecdsa_key":   {value: "ecdsa-2"},
			"operator_keys.secret_name": {value: "operator-keys-2", acc: "names a Secret that does not exist"},
		}),
	}
}

func rtMerge2(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func rtWorkspace() *rtKind {
	probe := func(p string) map[string]rtOverride {
		return map[string]rtOverride{
			p:                {min: map[string]any{"http_path": "/health"}},
			p + ".exec":      {with: map[string]any{p + ".http_path": nil}},
			p + ".http_path": {value: "/healthz"},
			p + ".port":      {value: int64(8001)},
		}
	}
	return &rtKind{
		typeName: "gantry_workspace", newRes: NewWorkspaceResource, crd: "gantry.dev_workspaces.yaml",
		codec: rtCodecOf(workspaceOps), goType: &v1alpha1.Workspace{},
		base: func(ns, name string) map[string]any {
			return map[string]any{"name": name, "namespace": ns,
				"resource":  map[string]any{"gpu_count": int64(1), "gpu_product": "NVIDIA-A100-SXM4-80GB"},
				"inference": map[string]any{"model": "zero-model", "image": "ghcr.io/gantry-dev/hello-model:1.0.0"}}
		},
		extra: []rtExtra{
			{attr: "resource.gpu_count", what: rtZero, value: int64(0),
				with: map[string]any{"resource.gpu_product": nil, "inference": map[string]any{"preset": "falcon-7b-instruct"}}},
			{attr: "resource.gpu_count", what: rtZero, value: int64(0),
				with: map[string]any{"resource.gpu_product": nil, "inference": nil, "tuning": map[string]any{"method": "lora", "preset": "falcon-7b",
					"input_urls": []any{"https://example.com/data.jsonl"}, "output_image": "ghcr.io/gantry-dev/zero-adapter:1.0.0"}}},
			{attr: "resource.gpu_count", what: rtZero, value: int64(0),
				with: map[string]any{"resource.gpu_product": nil, "resource.instance_type": "Standard_NC24ads_A100_v4"}},
			{attr: "inference.args", what: rtEmpty, value: []any{}, with: map[string]any{"inference": map[string]any{"preset": "falcon-7b-instruct"}}},
			{attr: "inference.model_gpus", what: rtZero, value: int64(0),
				with: map[string]any{"resource.gpu_product": nil, "resource.gpu_count": nil, "inference": map[string]any{"preset": "falcon-40b-instruct"}},
				acc:  "a whole inference block of its own: an apply for one row the unit layer settles (equivalent)"},
		},
		resolve: rtResolveWorkspace,
		rename: rtRenames(map[string]string{"inference.model_gpus": "spec.inference.modelGPUs",
			"tuning.input_urls": "spec.tuning.input.urls", "tuning.input_image": "spec.tuning.input.image", "tuning.input_pvc": "spec.tuning.input.pvc",
			"tuning.output_image": "spec.tuning.output.image", "tuning.output_pvc": "spec.tuning.output.pvc",
			"tuning.output_push_secret": "spec.tuning.output.imagePushSecret"}),
		skip: rtSkipCommon,
		overrides: rtMerge(rtPodCommon(), probe("inference.liveness_probe"), probe("inference.readiness_probe"), map[string]rtOverride{
			"node_selector":                  {value: map[string]any{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
			"inference.adapters[].strength":  {value: "0.5"},
			"inference.adapters[].name":      {value: "zero-adapter"},
			"inference.volumes[]":            {min: map[string]any{"name": rtGeneric, "mount_path": "/mnt/zero", "empty_dir": true}},
			"inference.volumes[].config_map": {with: map[string]any{"inference.volumes[0].empty_dir": nil}, value: rtConfigMap},
			"inference.volumes[].secret":     {with: map[string]any{"inference.volumes[0].empty_dir": nil}, value: rtSecret},
			"inference.volumes[].pvc":        {with: map[string]any{"inference.volumes[0].empty_dir": nil}, acc: "needs a bound PersistentVolumeClaim"},
			"inference.volumes[].mount_path": {value: "/mnt/zero2"},
			"inference.volumes[].size_limit": {value: "8Gi"},
			"inference.config":               {value: rtConfigMap},
			"inference.image_pull_secrets":   {value: []any{rtSecret}},
			"inference.model_access_secret":  {value: rtSecret},
			"inference.port":                 {value: int64(8080)},
			// any Hugging Face model: a size needs an org/name model and no gpu_count of its own
			"inference.model_size": {min: map[string]any{"parameters": "7B"},
				with: map[string]any{"inference.model": "zero-org/zero-model", "resource.gpu_count": nil},
				acc:  "sizes the workspace: an apply of its own (the unit layer covers the round trip)"},
			"inference.model_size.parameters":           {value: "13B"},
			"inference.model_size.gpu_memory":           {value: "40Gi", with: map[string]any{"inference.model_size.parameters": nil}},
			"inference.model_size.dtype":                {value: "float16"},
			"autoscaling":                               {min: map[string]any{"min_replicas": int64(1), "max_replicas": int64(2), "metric": map[string]any{"cpu_average_value": "500m"}}, group: "autoscaling"},
			"resource.count":                            {valueGroup: "count"},
			"autoscaling.min_replicas":                  {value: int64(2)},
			"autoscaling.max_replicas":                  {value: int64(3)},
			"autoscaling.external":                      {valueWith: map[string]any{"autoscaling.metric": nil}},
			"autoscaling.metric.cpu_average_value":      {value: "1500m"},
			"autoscaling.metric.pods":                   {with: map[string]any{"autoscaling.metric.cpu_average_value": nil}},
			"autoscaling.metric.pods.name":              {value: "vllm:num_requests_running"},
			"autoscaling.metric.pods.average_value":     {value: "5"},
			"autoscaling.metric.external":               {with: map[string]any{"autoscaling.metric.cpu_average_value": nil}},
			"autoscaling.metric.external.name":          {value: "queue_length"},
			"autoscaling.metric.external.average_value": {value: "10"},
			"inference.model_gpus": {resolvedAs: "model_gpus is what the model needs in all: any value up to resource.gpu_count (0 included) means " +
				"one replica serves it, and workspace.Resolve writes gpu_count there, as it does for 1"},
			"inference.preset":     {value: "falcon-7b-instruct"},
			"resource.gpu_count":   {with: map[string]any{"resource.gpu_product": nil}},
			"resource.gpu_product": {value: "NVIDIA-H100-80GB-HBM3"},
			"resource.instance_type": {value: "Standard_NC24ads_A100_v4", with: map[string]any{"resource.gpu_product": nil},
				acc: "needs nodes of the instance type (Karpenter NodeClaims)"},
			"resource.label_selector": {value: map[string]any{"nvidia.com/gpu.present": "true"}},
			"resource.label_selector_expressions[]": {min: map[string]any{"key": "nvidia.com/gpu.product", "operator": "In",
				"values": []any{"NVIDIA-A100-SXM4-80GB"}}},
			"resource.label_selector_expressions[].operator": {value: "Exists",
				valueWith: map[string]any{"resource.label_selector_expressions[0].values": nil}},
			"resource.label_selector_expressions[].key":    {value: "nvidia.com/gpu.present", valueWith: map[string]any{"resource.label_selector_expressions[0].values": []any{"true"}}},
			"resource.label_selector_expressions[].values": {value: []any{"NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"}},
			"resource.partition":                           {min: map[string]any{"mode": "mig", "profile": "1g.10gb"}, with: map[string]any{"resource.gpu_count": nil}, acc: "no kwok node advertises MIG slices"},
			"resource.partition.profile":                   {value: "2g.20gb"},
			"resource.tee_type":                            {value: "tdx", acc: "a TEE on a GPU node: no node has both"},
			"tuning": {with: map[string]any{"inference": nil}, min: map[string]any{"method": "lora", "base_model": "zero-model",
				"image": "ghcr.io/gantry-dev/zero-tuner:1.0.0", "input_urls": []any{"https://example.com/data.jsonl"}, "output_image": "ghcr.io/gantry-dev/zero-adapter:1.0.0"}},
			"tuning.input_image":         {with: map[string]any{"tuning.input_urls": nil}, value: "ghcr.io/gantry-dev/zero-data:1.0.0"},
			"tuning.input_pvc":           {with: map[string]any{"tuning.input_urls": nil}, acc: "needs a bound PersistentVolumeClaim"},
			"tuning.input_urls":          {value: []any{"https://example.com/other.jsonl"}},
			"tuning.output_image":        {value: "ghcr.io/gantry-dev/zero-adapter:2.0.0"},
			"tuning.output_pvc":          {with: map[string]any{"tuning.output_image": nil}, acc: "needs a bound PersistentVolumeClaim"},
			"tuning.output_push_secret":  {value: rtSecret},
			"tuning.config":              {value: rtConfigMap},
			"tuning.preset":              {value: "falcon-7b"},
			"tuning.image":               {value: "ghcr.io/gantry-dev/zero-tuner:2.0.0"},
			"tuning.image_pull_secrets":  {value: []any{rtSecret}},
			"tuning.model_access_secret": {value: rtSecret},
		}),
	}
}

// rtResolveWorkspace is workspace.Resolve over a stored Workspace.
func rtResolveWorkspace(obj map[string]any) (map[string]any, error) {
	var w v1alpha1.Workspace
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &w); err != nil {
		return nil, err
	}
	out, err := workspace.Resolve(&w)
	if err != nil {
		return nil, err
	}
	return runtime.DefaultUnstructuredConverter.ToUnstructured(out)
}

func rtPackageSet() *rtKind {
	pkg := func(name string) map[string]any {
		return map[string]any{"name": name, "version": "1.0.0", "image": "ghcr.io/gantry-dev/test-package:1.0.0"}
	}
	sel := func(p, at string) map[string]rtOverride {
		return map[string]rtOverride{
			p + "[]":          {min: map[string]any{"key": "gantry.dev/zero-key", "operator": "Exists"}},
			p + "[].values":   {with: map[string]any{at + ".operator": "In"}},
			p + "[].operator": {value: "In", valueWith: map[string]any{at + ".values": []any{rtGeneric}}},
			p + "[].key":      {value: "gantry.dev/zero-key-2"},
		}
	}
	strategy := func(p string) map[string]rtOverride {
		return map[string]rtOverride{
			p:                    {min: map[string]any{"type": "fixed"}},
			p + ".type":          {value: "linear"},
			p + ".delta":         {with: map[string]any{p + ".type": "linear"}},
			p + ".growth_factor": {with: map[string]any{p + ".type": "exponential"}, value: int64(2)},
		}
	}
	rel := rtReleases()
	return &rtKind{
		typeName: "gantry_package_set", newRes: NewPackageSetResource, crd: "gantry.dev_packagesets.yaml",
		codec: rtCodecOf(packageSetOps), goType: &v1alpha1.PackageSet{},
		base: func(_, name string) map[string]any {
			return map[string]any{"name": name, "node_selector": map[string]any{"gantry.dev/zero-test": "none"},
				"packages": []any{pkg("zero-pkg")}}
		},
		rename: rtRenames(map[string]string{"node_selector": "spec.nodeSelector.matchLabels", "node_selector_expressions": "spec.nodeSelector.matchExpressions",
			"pod_non_interrupt_labels": "spec.podNonInterruptLabels.matchLabels", "drain.skip_pod_labels": "spec.drain.skipPodLabels.matchLabels",
			"packages[].uninstall_enabled": "spec.packages[].uninstall.enabled", "packages[].uninstall_apply": "spec.packages[].uninstall.apply",
			"packages[].host.host_pid":      "spec.packages[].host.hostPID",
			"rollout.waves[].node_selector": "spec.rollout.waves[].selector.matchLabels", "rollout.waves[].node_selector_expressions": "spec.rollout.waves[].selector.matchExpressions",
			"rollout.fleet_budget.node_selector":                         "spec.rollout.fleetBudget.nodeSelector.matchLabels",
			"rollout.fleet_budget.node_selector_expressions":             "spec.rollout.fleetBudget.nodeSelector.matchExpressions",
			"deployment_policy.compartments[].node_selector":             "spec.deploymentPolicy.compartments[].selector.matchLabels",
			"deployment_policy.compartments[].node_selector_expressions": "spec.deploymentPolicy.compartments[].selector.matchExpressions"}),
		skip: rtMerge2(rtSkipCommon, map[string]string{
			"adopt_from_skyhook": "an annotation (gantry.dev/adopt-from-skyhook), not a spec field; TestAccAdopt_skyhook* and the adopt unit tests cover it"}),
		overrides: rtMerge(rtObjectKey, rtTolerations("additional_tolerations", "additional_tolerations[0]"),
			sel("node_selector_expressions", "node_selector_expressions[0]"),
			sel("rollout.waves[].node_selector_expressions", "rollout.waves[0].node_selector_expressions[0]"),
			sel("rollout.fleet_budget.node_selector_expressions", "rollout.fleet_budget.node_selector_expressions[0]"),
			sel("deployment_policy.compartments[].node_selector_expressions", "deployment_policy.compartments[0].node_selector_expressions[0]"),
			strategy("deployment_policy.default.strategy"), strategy("deployment_policy.compartments[].strategy"), rel,
			map[string]rtOverride{
				"node_selector":                    {value: map[string]any{"gantry.dev/zero-test": "other"}, acc: "an empty node_selector selects every node"},
				"auto_taint_new_nodes":             {valueWith: map[string]any{"runtime_required": true}},
				"after":                            {value: []any{"zero-other-set"}},
				"after_converged[]":                {min: map[string]any{"name": "zero-other-set"}},
				"after_converged[].name":           {value: "zero-other-set-2"},
				"sequencing":                       {value: "all"},
				"deployment_policy.compartments[]": {min: map[string]any{"name": rtGeneric, "budget": map[string]any{"count": int64(1)}}},
				"deployment_policy.compartments[].budget.percent": {with: map[string]any{"deployment_policy.compartments[0].budget.count": nil}, value: int64(50)},
				"deployment_policy.compartments[].node_selector":  {value: map[string]any{"gantry.dev/zero-test": "none"}},
				"deployment_policy.default.budget.percent":        {with: map[string]any{"deployment_policy.default.budget.count": nil}, value: int64(50)},
				"interruption_budget.percent":                     {with: map[string]any{"interruption_budget.count": nil}, value: int64(50)},
				"drain.grace_period":                              {value: "30s"},
				"drain.non_interrupt_timeout":                     {value: "5m"},
				"drain.on_non_interrupt_timeout":                  {with: map[string]any{"drain.non_interrupt_timeout": "5m"}},
				"runtime_required_cordon_after":                   {valueWith: map[string]any{"runtime_required": true}},
				"drain.timeout":                                   {value: "5m"},
				"drain.on_timeout":                                {value: "Continue", with: map[string]any{"drain.timeout": "5m"}},
				"drain.skip_pod_labels":                           {emptyAbsent: rtEmptySelector},
				"pod_non_interrupt_labels":                        {emptyAbsent: rtEmptySelector},
				"packages[]":                                      {min: pkg("zero-two")},
				"packages[].name":                                 {value: "zero-other"},
				"packages[].version":                              {value: "1.0.1"},
				"packages[].image":                                {value: "ghcr.io/gantry-dev/test-package:1.1.0"},
				"packages[].config_interrupts":                    {key: "zerokey", with: map[string]any{"packages[0].config": map[string]any{"zerokey": "v"}}},
				"packages[].config_interrupts{}":                  {min: map[string]any{"type": "noop"}},
				"packages[].config_interrupts{}.type":             {value: "reboot"},
				"packages[].config_interrupts{}.services":         {with: map[string]any{"packages[0].config_interrupts.zerokey.type": "service"}, value: []any{"containerd.service"}},
				"packages[].depends_on":                           {value: map[string]any{"zero-dep": "1.0.0"}, valueWith: map[string]any{"packages[1]": pkg("zero-dep")}},
				"packages[].env_from[]":                           {min: map[string]any{"name": "ZEROTEST", "secret_key_ref": map[string]any{"name": rtSecret, "key": rtGeneric}}},
				"packages[].env_from[].config_map_key_ref":        {with: map[string]any{"packages[0].env_from[0].secret_key_ref": nil}},
				"packages[].graceful_shutdown":                    {value: "30s"},
				"packages[].stage_timeout":                        {value: "10m"},
				"packages[].host.root_mount_path":                 {value: "/host"},
				"packages[].interrupt":                            {min: map[string]any{"type": "noop"}},
				"packages[].interrupt.type":                       {value: "reboot"},
				"packages[].interrupt.services":                   {with: map[string]any{"packages[0].interrupt.type": "service"}, value: []any{"containerd.service"}},
				"packages[].resources.requests":                   {value: map[string]any{"cpu": "10m"}},
				"packages[].resources.limits":                     {value: map[string]any{"memory": "64Mi"}},
				"packages[].skyhook.copy_dir_root":                {value: "/var/lib/skyhook"},
				"packages[].skyhook.log_root":                     {value: "/var/log/skyhook"},
				"packages[].skyhook.agent_image":                  {value: "ghcr.io/nvidia/skyhook/agent:6.2.0"},
				"packages[].uninstall_apply":                      {valueWith: map[string]any{"packages[0].uninstall_enabled": true}},
				"rollout.fleet_budget":                            {min: map[string]any{"name": "zero-budget", "max_in_flight": int64(1)}},
				"rollout.fleet_budget.name":                       {value: "zero-budget-2"},
				"rollout.fleet_budget.max_in_flight":              {value: int64(2)},
				"rollout.fleet_budget.max_in_flight_pct":          {with: map[string]any{"rollout.fleet_budget.max_in_flight": nil}, value: int64(50)},
				"rollout.fleet_budget.node_selector":              {value: map[string]any{"gantry.dev/zero-test": "rack-a"}},
				"rollout.health_checks[]":                         {min: map[string]any{"name": "zerocheck", "image": "docker.io/library/busybox:1.36", "command": []any{"true"}}},
				"rollout.health_checks[].name":                    {value: "zerocheck-2"},
				"rollout.health_checks[].image":                   {value: "docker.io/library/busybox:1.37"},
				"rollout.health_checks[].http_get":                {with: map[string]any{"rollout.health_checks[0].image": nil, "rollout.health_checks[0].command": nil}},
				"rollout.health_checks[].http_get.url":            {value: "http://127.0.0.1:8080/healthz"},
				"rollout.health_checks[].systemd_failed_units":    {with: map[string]any{"rollout.health_checks[0].image": nil, "rollout.health_checks[0].command": nil}},
				"rollout.health_checks[].mode":                    {value: "observe"},
				"rollout.health_checks[].timeout":                 {value: "30s"},
				"rollout.node_edges[]":                            {min: map[string]any{"before": "zero-node-a", "after": "zero-node-b"}},
				"rollout.node_edges[].before":                     {value: "zero-node-c"},
				"rollout.node_edges[].after":                      {value: "zero-node-d"},
				"rollout.on_health_failure":                       {value: "rollback"},
				"rollout.soak_check_interval":                     {with: map[string]any{"rollout.soak_duration": "1m"}, value: "30s"},
				"rollout.soak_duration":                           {value: "1m"},
				"rollout.waves[]":                                 {min: map[string]any{"name": "zerowave"}},
				"rollout.waves[].name":                            {value: "zerowave-2"},
				"rollout.waves[].soak_duration":                   {value: "1m"},
				"rollout.waves[].node_selector":                   {value: map[string]any{"gantry.dev/zero-test": "none"}},

				// compliance checks (NixFleet's compliance probes): framework is required; an
				// evidence_path is an absolute path.
				"rollout.health_checks[].compliance":               {with: map[string]any{"rollout.health_checks[0].image": nil, "rollout.health_checks[0].command": nil}, min: map[string]any{"framework": "nis2"}},
				"rollout.health_checks[].compliance.evidence_path": {value: "/srv/compliance/evidence.json"},
			}),
	}
}

// rtEmptySelector is why an empty label map of a package set goes to no selector at all.
const rtEmptySelector = "a map of pod labels that all must match: {} lists none, and the provider sends no selector (an empty LabelSelector would select every pod)"

// rtReleases: rollout.release signed for the base package (zero-pkg 1.0.0) by a key made for
// the run, and the values its rows need: a second signature of the same payload, a second key
// with its signature, a second signed_at with its signature.
func rtReleases() map[string]rtOverride {
	k1, k2 := rtKey(), rtKey()
	now := time.Now().Add(-time.Hour).UTC().Truncate(time.Second)
	at1, at2 := now.Format(packageset.SignedAtLayout), now.Add(-time.Minute).Format(packageset.SignedAtLayout)
	minimal := map[string]any{"public_key": k1.pub, "signature": k1.sign(at1), "signed_at": at1}
	return map[string]rtOverride{
		"rollout.release":                  {min: minimal},
		"rollout.release.signature":        {value: k1.sign(at1)},
		"rollout.release.public_key":       {value: k2.pub, valueWith: map[string]any{"rollout.release.signature": k2.sign(at1)}},
		"rollout.release.signed_at":        {value: at2, valueWith: map[string]any{"rollout.release.signature": k1.sign(at2)}},
		"rollout.release.freshness_window": {value: "720h"},
	}
}

type rtSigner struct{ releaseSigner }

func rtKey() rtSigner {
	s, err := newReleaseSigner()
	if err != nil {
		panic(err)
	}
	return rtSigner{s}
}

// sign signs the release payload of the base package at signedAt.
func (s rtSigner) sign(at string) string {
	sig, err := s.signRelease([]v1alpha1.Package{{Name: "zero-pkg", Version: "1.0.0", Image: "ghcr.io/gantry-dev/test-package:1.0.0"}}, at)
	if err != nil {
		panic(err)
	}
	return sig
}
