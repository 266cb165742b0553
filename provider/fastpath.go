package provider

// The PlanResourceChange fast path: a no-op plan of an unchanged resource is answered below
// terraform-plugin-framework, which would decode, default, run every plan modifier and
// ModifyPlan only to return the prior state (most of the provider's CPU in a steady plan).
// PlanFastPath answers only when the framework's answer is certain (prior state, private state
// and identity; no RequiresReplace, diagnostics or deferral); on any reason in planDecisions it
// falls back to the framework. It is safe because, with plan equal to state, the schema parts
// newFastPlanType admits and the reviewed ModifyPlans (fastPlanReviewed) change nothing;
// fastpath_test.go and its fuzz target hold it to the framework's answer field by field.
// Every fallback reason and why the rest is safe: FASTPATHS.md.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// What PlanFastPath decides for a plan: planAnswered, or the reason it falls back.
const (
	planAnswered    = "answered"
	fbType          = "type"              // not a reviewed Gantry kind, or a schema part newFastPlanType cannot prove inert; any provider_meta
	fbDeferred      = "deferred"          // the provider was configured with a deferral: the framework defers every plan
	fbEncoding      = "encoding"          // a value missing or not MessagePack
	fbCreateDestroy = "create-or-destroy" // prior or proposed state null
	fbChanged       = "changed"           // proposed new state differs from the prior state, byte for byte
	fbIdentity      = "identity"          // a prior identity that does not decode or is not wholly known (none at all is answered, as the framework does)
	fbPrivate       = "private"           // prior private state the framework would re-encode differently (it drops empty values)
	fbDecode        = "decode"            // prior state or config does not decode, prior state not wholly known, config null
	fbValue         = "value"             // a value the attribute types reject on read (not a whole int64; jsontypes.Normalized not JSON)
	fbWriteOnly     = "write-only"        // a write-only attribute set: the framework nulls it in the plan
	fbDefault       = "default"           // a defaulted attribute null in config while the prior state holds another value
	fbRetry         = "retry"             // planRetry would plan an update (needsRetry, notLive) or reported a diagnostic
)

// planDecisions lists every decision, in the order the fast path checks them.
var planDecisions = []string{fbType, fbDeferred, fbEncoding, fbCreateDestroy, fbChanged, fbPrivate, fbIdentity, fbDecode,
	fbValue, fbWriteOnly, fbDefault, fbRetry, planAnswered}

// fastPlanReviewed are the resource types whose ModifyPlan was read for the fast path: beyond
// planRetry, every step leaves an unchanged plan alone without reading the cluster (see above).
// A type added here needs the same review and its rows in the differential test.
var fastPlanReviewed = map[string]bool{"gantry_performer": true, "gantry_executor": true, "gantry_aggregator": true, "gantry_package_set": true, "gantry_workspace": true}

// retryCheck is a kind's needsRetry (lifecycle.go).
type retryCheck = func(context.Context, tfsdk.State, *diag.Diagnostics) (bool, string)

// planRetryCheck gives the fast path the kind's needsRetry, the rule of planRetry.
func (r *kindResource[M]) planRetryCheck() retryCheck { return r.ops.needsRetry }

// envNoPlanFastPath, set to anything but "", turns the plan fast path off: every plan goes to
// the framework (to compare, or to step around a fault). envNoReadFastPath does the same for
// the ReadResource fast path (fastpath_read.go) and envNoUpgradeFastPath for the
// UpgradeResourceState fast path (fastpath_upgrade.go); with all three set the framework's
// server is served unwrapped.
const (
	envNoPlanFastPath    = "GANTRY_NO_PLAN_FAST_PATH"
	envNoReadFastPath    = "GANTRY_NO_READ_FAST_PATH"
	envNoUpgradeFastPath = "GANTRY_NO_UPGRADE_FAST_PATH"
)

// PlanFastPath wraps the provider's protocol 6 server s (the framework's server for p) so that
// PlanResourceChange and ReadResource answer unchanged resources themselves, and
// UpgradeResourceState states at the schema's version (the read fast path is in
// fastpath_read.go, the upgrade's in fastpath_upgrade.go); everything else reaches s. A server
// that is not the framework's kind (fullServer), or GANTRY_NO_PLAN_FAST_PATH,
// GANTRY_NO_READ_FAST_PATH and GANTRY_NO_UPGRADE_FAST_PATH all set, returns s as is; one of
// them set turns that fast path off.
func PlanFastPath(s tfprotov6.ProviderServer, p provider.Provider) tfprotov6.ProviderServer {
	full, ok := s.(fullServer)
	noPlan, noRead, noUpgrade := os.Getenv(envNoPlanFastPath) != "", os.Getenv(envNoReadFastPath) != "", os.Getenv(envNoUpgradeFastPath) != ""
	if !ok || (noPlan && noRead && noUpgrade) {
		return s
	}
	f := &planFastPath{fullServer: full, noPlan: noPlan, noRead: noRead, noUpgrade: noUpgrade, types: map[string]*fastPlanType{}, skipped: map[string]string{},
		counts: map[string]*atomic.Int64{}, reads: map[string]wait.Spec{}, readSkipped: map[string]string{}, readCounts: map[string]*atomic.Int64{},
		upgradeCounts: map[string]*atomic.Int64{}}
	for _, d := range planDecisions {
		f.counts[d] = new(atomic.Int64)
	}
	for _, d := range readDecisions {
		f.readCounts[d] = new(atomic.Int64)
	}
	for _, d := range upgradeDecisions {
		f.upgradeCounts[d] = new(atomic.Int64)
	}
	lastFastPath.Store(f)
	if _, meta := p.(provider.ProviderWithMetaSchema); meta {
		f.skipped["*"] = "the provider has a provider_meta schema"
		f.readSkipped["*"] = f.skipped["*"]
		return f
	}
	if c, ok := p.(interface{ configuredData() *providerData }); ok {
		f.configured = c.configuredData
	} else {
		f.readSkipped["*"], f.noRead = "the provider does not give its clients (configuredData)", true
	}
	ctx := context.Background()
	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	if !ps.Diagnostics.HasError() {
		f.config = ps.Schema.Type().TerraformType(ctx)
	}
	var pm provider.MetadataResponse
	p.Metadata(ctx, provider.MetadataRequest{}, &pm)
	for _, newResource := range p.Resources(ctx) {
		r := newResource()
		var m resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: pm.TypeName}, &m)
		t, err := newFastPlanType(ctx, m.TypeName, r)
		if err != nil {
			f.skipped[m.TypeName] = err.Error()
			f.readSkipped[m.TypeName] = err.Error()
			continue
		}
		f.types[m.TypeName] = t
		if spec, err := readKindOf(m.TypeName, r); err != nil {
			f.readSkipped[m.TypeName] = err.Error()
		} else {
			f.reads[m.TypeName] = spec
		}
	}
	return f
}

type planFastPath struct {
	fullServer
	// noPlan, noRead and noUpgrade turn a fast path off (GANTRY_NO_PLAN_FAST_PATH,
	// GANTRY_NO_READ_FAST_PATH, GANTRY_NO_UPGRADE_FAST_PATH).
	noPlan, noRead, noUpgrade bool
	// types are the resource types the fast path may answer; skipped, why the others are not.
	types   map[string]*fastPlanType
	skipped map[string]string
	// reads are the types (among types) whose refresh the read fast path may answer, with
	// their kind; readSkipped, why the others are not ("*": none is).
	reads       map[string]wait.Spec
	readSkipped map[string]string
	// configured returns what the provider's last Configure gave the resources (nil: none).
	configured func() *providerData
	// config is the type of the provider's configuration; deferred: a ConfigureProvider the
	// provider defers on was seen (kept: the fast path stays off).
	config   tftypes.Type
	deferred atomic.Bool
	// counts are the plan decisions made, by planDecisions entry; readCounts the read
	// decisions, by readDecisions entry; upgradeCounts the upgrade decisions, by
	// upgradeDecisions entry.
	counts        map[string]*atomic.Int64
	readCounts    map[string]*atomic.Int64
	upgradeCounts map[string]*atomic.Int64
}

// decisions returns how many plans each decision took.
func (f *planFastPath) decisions() map[string]int64 {
	out := make(map[string]int64, len(f.counts))
	for d, n := range f.counts {
		out[d] = n.Load()
	}
	return out
}

// ConfigureProvider notes a configuration the provider defers on (gantryProvider.Configure:
// the client allows deferrals and the configuration is not wholly known; the protocol's
// response does not carry the deferral, the framework keeps it) and configures the provider.
func (f *planFastPath) ConfigureProvider(ctx context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	if req != nil && req.ClientCapabilities != nil && req.ClientCapabilities.DeferralAllowed && !f.knownConfig(req.Config) {
		f.deferred.Store(true)
	}
	return f.fullServer.ConfigureProvider(ctx, req)
}

// knownConfig reports whether the provider configuration v decodes and is wholly known.
func (f *planFastPath) knownConfig(v *tfprotov6.DynamicValue) bool {
	if v == nil || f.config == nil {
		return false
	}
	c, err := v.Unmarshal(f.config)
	return err == nil && c.IsFullyKnown()
}

func (f *planFastPath) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	if f.noPlan {
		return f.fullServer.PlanResourceChange(ctx, req)
	}
	why := f.decide(ctx, req)
	f.counts[why].Add(1)
	if why != planAnswered {
		return f.fullServer.PlanResourceChange(ctx, req)
	}
	resp := &tfprotov6.PlanResourceChangeResponse{PlannedState: req.PriorState, PlannedIdentity: req.PriorIdentity}
	if req.PriorIdentity == nil {
		// Terraform before 1.12 sends no identity; the framework answers with a null one.
		resp.PlannedIdentity = f.types[req.TypeName].nullIdentity
	}
	if len(req.PriorPrivate) > 0 {
		resp.PlannedPrivate = req.PriorPrivate
	}
	return resp, nil
}

// decide returns planAnswered when the fast path answers req, else why it falls back.
func (f *planFastPath) decide(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) string {
	t := f.types[req.TypeName]
	switch {
	case t == nil:
		return fbType
	case f.deferred.Load():
		return fbDeferred
	}
	if why := unchangedUpdate(req); why != "" {
		return why
	}
	if !canonicalPrivate(req.PriorPrivate) {
		return fbPrivate
	}
	return t.decide(ctx, req)
}

// msgpackOnly reports whether v is present and MessagePack (the framework reads JSON first).
func msgpackOnly(v *tfprotov6.DynamicValue) bool {
	return v != nil && v.JSON == nil && len(v.MsgPack) > 0
}

// unchangedUpdate returns "" when req plans an update whose proposed new state is the prior
// state byte for byte, else the fallback reason.
func unchangedUpdate(req *tfprotov6.PlanResourceChangeRequest) string {
	if !msgpackOnly(req.PriorState) || !msgpackOnly(req.ProposedNewState) || !msgpackOnly(req.Config) {
		return fbEncoding
	}
	if deletion(req.PriorState) || deletion(req.ProposedNewState) {
		return fbCreateDestroy
	}
	if !bytes.Equal(req.PriorState.MsgPack, req.ProposedNewState.MsgPack) {
		return fbChanged
	}
	return ""
}

// canonicalPrivate reports whether the framework returns private state b unchanged: empty, or
// the JSON object of non-empty, UTF-8, JSON values (base64) that json.Marshal writes again
// byte for byte (privatestate.NewData and Data.Bytes).
func canonicalPrivate(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	var m map[string][]byte
	if json.Unmarshal(b, &m) != nil || len(m) == 0 {
		return false
	}
	for _, v := range m {
		if len(v) == 0 || !utf8.Valid(v) || !json.Valid(v) {
			return false
		}
	}
	again, err := json.Marshal(m)
	return err == nil && bytes.Equal(again, b)
}

// fastPlanType is what the fast path knows of one resource type, from its schema.
type fastPlanType struct {
	schema   schema.Schema
	typ      tftypes.Type
	identity tftypes.Type
	// nullIdentity is the identity the framework plans when Terraform sends none (before
	// 1.12): a null value of the identity type; nil when it could not be encoded.
	nullIdentity *tfprotov6.ResourceIdentityData
	retry        retryCheck
	// defaults are the defaulted attributes with their default; writeOnly the write-only
	// attributes; json the jsontypes.Normalized ones.
	defaults  []defaultAt
	writeOnly []valuePath
	json      []valuePath
}

// valuePath is where an attribute is in a value: attribute names, "[]" for every element of a
// list, "{}" for every value of a map.
type valuePath []string

type defaultAt struct {
	at    valuePath
	value tftypes.Value
}

// decide returns planAnswered when the framework's plan of req (an unchanged update, private
// state canonical) is certainly the prior state, else the fallback reason.
func (t *fastPlanType) decide(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) string {
	if req.PriorIdentity != nil && !t.knownIdentity(req.PriorIdentity) || req.PriorIdentity == nil && t.nullIdentity == nil {
		return fbIdentity
	}
	prior, err := req.PriorState.Unmarshal(t.typ)
	if err != nil || !prior.IsFullyKnown() {
		return fbDecode
	}
	config, err := req.Config.Unmarshal(t.typ)
	if err != nil || config.IsNull() {
		return fbDecode
	}
	switch {
	case !wholeNumbers(prior) || !wholeNumbers(config) || !t.validJSON(prior) || !t.validJSON(config):
		return fbValue
	case !t.writeOnlyNull(prior) || !t.writeOnlyNull(config):
		return fbWriteOnly
	case !t.defaultsHold(prior, config):
		return fbDefault
	}
	var diags diag.Diagnostics
	if retry, _ := t.retry(ctx, tfsdk.State{Schema: t.schema, Raw: prior}, &diags); retry || len(diags) > 0 {
		return fbRetry
	}
	return planAnswered
}

// knownIdentity reports whether id is a MessagePack identity that decodes, is not null and is
// wholly known.
func (t *fastPlanType) knownIdentity(id *tfprotov6.ResourceIdentityData) bool {
	if id == nil || !msgpackOnly(id.IdentityData) {
		return false
	}
	v, err := id.IdentityData.Unmarshal(t.identity)
	return err == nil && !v.IsNull() && v.IsFullyKnown()
}

// wholeNumbers reports whether every known number in v is a whole number within int64 (the
// schemas hold int64 numbers only: Int64Type and wholeNumberType refuse the others).
func wholeNumbers(v tftypes.Value) bool {
	ok := true
	_ = tftypes.Walk(v, func(_ *tftypes.AttributePath, n tftypes.Value) (bool, error) {
		if ok && n.Type().Is(tftypes.Number) && n.IsKnown() && !n.IsNull() {
			f := new(big.Float)
			ok = n.As(&f) == nil && f.IsInt()
			if ok {
				_, acc := f.Int64()
				ok = acc == big.Exact
			}
		}
		return ok, nil
	})
	return ok
}

// validJSON reports whether every known jsontypes.Normalized string in v is JSON (what its
// ValidateAttribute checks whenever the framework reads it).
func (t *fastPlanType) validJSON(v tftypes.Value) bool {
	for _, at := range t.json {
		ok := eachAt(v, tftypes.Value{}, at, func(s, _ tftypes.Value) bool {
			var str string
			return !s.IsKnown() || s.IsNull() || (s.As(&str) == nil && json.Valid([]byte(str)))
		})
		if !ok {
			return false
		}
	}
	return true
}

// writeOnlyNull reports whether every write-only attribute in v is null.
func (t *fastPlanType) writeOnlyNull(v tftypes.Value) bool {
	for _, at := range t.writeOnly {
		if !eachAt(v, tftypes.Value{}, at, func(s, _ tftypes.Value) bool { return s.IsNull() }) {
			return false
		}
	}
	return true
}

// defaultsHold reports whether the framework's defaults leave prior as it is: wherever prior
// has a defaulted attribute (its parents not null) and config has it null, or has no such
// node, prior holds the default (fwschemadata.Data.TransformDefaults reads a missing config
// node as null).
func (t *fastPlanType) defaultsHold(prior, config tftypes.Value) bool {
	for _, d := range t.defaults {
		ok := eachAt(prior, config, d.at, func(p, c tftypes.Value) bool { return !c.IsNull() || p.Equal(d.value) })
		if !ok {
			return false
		}
	}
	return true
}

// eachAt calls fn with every node of v at path at and config's node at the same place (the
// zero Value, which is null, when config has none there); it stops at null or unknown nodes of
// v and returns false as soon as fn does.
func eachAt(v, config tftypes.Value, at valuePath, fn func(v, config tftypes.Value) bool) bool {
	if len(at) == 0 {
		return fn(v, config)
	}
	if v.IsNull() || !v.IsKnown() {
		return true
	}
	hasConfig := config.IsKnown() && !config.IsNull()
	switch at[0] {
	case "[]":
		var vs, cs []tftypes.Value
		if v.As(&vs) != nil || (hasConfig && config.As(&cs) != nil) {
			return false
		}
		for i, e := range vs {
			var c tftypes.Value
			if i < len(cs) {
				c = cs[i]
			}
			if !eachAt(e, c, at[1:], fn) {
				return false
			}
		}
		return true
	default:
		var vm, cm map[string]tftypes.Value
		if v.As(&vm) != nil || (hasConfig && config.As(&cm) != nil) {
			return false
		}
		if at[0] != "{}" {
			return eachAt(vm[at[0]], cm[at[0]], at[1:], fn)
		}
		for k, e := range vm {
			if !eachAt(e, cm[k], at[1:], fn) {
				return false
			}
		}
		return true
	}
}

// newFastPlanType reads resource r (type name) for the fast path, or says why it cannot answer
// its plans.
func newFastPlanType(ctx context.Context, name string, r resource.Resource) (*fastPlanType, error) {
	rc, ok := r.(interface{ planRetryCheck() retryCheck })
	if !ok || !fastPlanReviewed[name] {
		return nil, errors.New("its ModifyPlan is not one the fast path knows")
	}
	ri, ok := r.(resource.ResourceWithIdentity)
	if !ok {
		return nil, errors.New("it has no identity")
	}
	var sr resource.SchemaResponse
	r.Schema(ctx, resource.SchemaRequest{}, &sr)
	var ir resource.IdentitySchemaResponse
	ri.IdentitySchema(ctx, resource.IdentitySchemaRequest{}, &ir)
	if sr.Diagnostics.HasError() || ir.Diagnostics.HasError() {
		return nil, errors.New("its schema has errors")
	}
	if len(sr.Schema.Blocks) > 0 {
		return nil, errors.New("it has blocks")
	}
	t := &fastPlanType{schema: sr.Schema, typ: sr.Schema.Type().TerraformType(ctx), identity: ir.IdentitySchema.Type().TerraformType(ctx), retry: rc.planRetryCheck()}
	if null, err := tfprotov6.NewDynamicValue(t.identity, tftypes.NewValue(t.identity, nil)); err == nil {
		t.nullIdentity = &tfprotov6.ResourceIdentityData{IdentityData: &null}
	}
	if err := t.readAttributes(ctx, nil, sr.Schema.Attributes); err != nil {
		return nil, err
	}
	return t, nil
}

// readAttributes records the defaults, write-only and JSON attributes of attrs (at path
// under), or says which attribute the fast path cannot prove inert on an unchanged plan.
func (t *fastPlanType) readAttributes(ctx context.Context, under valuePath, attrs map[string]schema.Attribute) error {
	for name, a := range attrs {
		at := append(append(valuePath{}, under...), name)
		if err := t.readAttribute(ctx, at, a); err != nil {
			return fmt.Errorf("%s: %w", strings.Join(at, "."), err)
		}
	}
	return nil
}

func (t *fastPlanType) readAttribute(ctx context.Context, at valuePath, a schema.Attribute) error {
	if err := inertModifiers(a); err != nil {
		return err
	}
	switch ct := structField(a, "CustomType"); ct.(type) {
	case nil, wholeNumberType, timeouts.Type:
	case jsontypes.NormalizedType:
		t.json = append(t.json, at)
	default:
		return fmt.Errorf("custom type %T", ct)
	}
	if a.IsWriteOnly() {
		t.writeOnly = append(t.writeOnly, at)
	}
	if d := structField(a, "Default"); d != nil {
		v, err := staticDefault(ctx, d)
		if err != nil {
			return err
		}
		t.defaults = append(t.defaults, defaultAt{at: at, value: v})
	}
	switch a := a.(type) {
	case schema.StringAttribute, schema.BoolAttribute, schema.Int64Attribute:
	case schema.ListAttribute:
		return plainElements(a.ElementType)
	case schema.MapAttribute:
		return plainElements(a.ElementType)
	case schema.SingleNestedAttribute:
		return t.readAttributes(ctx, at, a.Attributes)
	case schema.ListNestedAttribute:
		return t.readNested(ctx, append(at, "[]"), a.NestedObject)
	case schema.MapNestedAttribute:
		return t.readNested(ctx, append(at, "{}"), a.NestedObject)
	default:
		return fmt.Errorf("attribute kind %T", a)
	}
	return nil
}

func (t *fastPlanType) readNested(ctx context.Context, at valuePath, o schema.NestedAttributeObject) error {
	if o.CustomType != nil || len(o.PlanModifiers) > 0 {
		return errors.New("nested object with a custom type or plan modifiers")
	}
	return t.readAttributes(ctx, at, o.Attributes)
}

// plainElements returns an error unless t, the element type of a list or map, holds only values
// the framework reads without a diagnostic once wholeNumbers holds: strings, bools, int64s, and
// objects, lists and maps of them.
func plainElements(t attr.Type) error {
	switch t := t.(type) {
	case basetypes.StringType, basetypes.BoolType, basetypes.Int64Type:
		return nil
	case basetypes.ListType:
		return plainElements(t.ElemType)
	case basetypes.MapType:
		return plainElements(t.ElemType)
	case basetypes.ObjectType:
		for _, at := range t.AttrTypes {
			if err := plainElements(at); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("element type %v", t)
}

// structField returns field name of schema attribute a (a struct), nil when it has none or it
// is empty.
func structField(a schema.Attribute, name string) any {
	v := reflect.ValueOf(a)
	if v.Kind() != reflect.Struct {
		return nil
	}
	f := v.FieldByName(name)
	if !f.IsValid() || f.IsZero() {
		return nil
	}
	return f.Interface()
}

// frameworkSchemaPkg is where the framework's plan modifiers and defaults live.
const frameworkSchemaPkg = "github.com/hashicorp/terraform-plugin-framework/resource/schema/"

// inertModifiers returns an error unless every plan modifier of a leaves a plan equal to the
// state alone: the framework's RequiresReplace, RequiresReplaceIf (both return before their
// condition when plan equals state) and UseStateForUnknown (acts on unknown plan values only).
func inertModifiers(a schema.Attribute) error {
	mods := structField(a, "PlanModifiers")
	if mods == nil {
		return nil
	}
	list := reflect.ValueOf(mods)
	for i := 0; i < list.Len(); i++ {
		m := reflect.TypeOf(list.Index(i).Interface())
		if !strings.HasPrefix(m.PkgPath(), frameworkSchemaPkg) || (m.Name() != "requiresReplaceIfModifier" && m.Name() != "useStateForUnknownModifier") {
			return fmt.Errorf("plan modifier %v", m)
		}
	}
	return nil
}

// staticDefault returns the value of d, one of the framework's static string, int64 or bool
// defaults.
func staticDefault(ctx context.Context, d any) (tftypes.Value, error) {
	dt := reflect.TypeOf(d)
	if !strings.HasPrefix(dt.PkgPath(), frameworkSchemaPkg) || !strings.HasPrefix(dt.Name(), "static") {
		return tftypes.Value{}, fmt.Errorf("default %v", dt)
	}
	var diags diag.Diagnostics
	var v interface {
		ToTerraformValue(context.Context) (tftypes.Value, error)
	}
	switch d := d.(type) {
	case defaults.String:
		var resp defaults.StringResponse
		d.DefaultString(ctx, defaults.StringRequest{}, &resp)
		v, diags = resp.PlanValue, resp.Diagnostics
	case defaults.Int64:
		var resp defaults.Int64Response
		d.DefaultInt64(ctx, defaults.Int64Request{}, &resp)
		v, diags = resp.PlanValue, resp.Diagnostics
	case defaults.Bool:
		var resp defaults.BoolResponse
		d.DefaultBool(ctx, defaults.BoolRequest{}, &resp)
		v, diags = resp.PlanValue, resp.Diagnostics
	default:
		return tftypes.Value{}, fmt.Errorf("default %v", dt)
	}
	if diags.HasError() {
		return tftypes.Value{}, fmt.Errorf("default %v: %v", dt, diags)
	}
	return v.ToTerraformValue(ctx)
}
