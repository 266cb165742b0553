package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/defaults"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// The differential test of the PlanResourceChange fast path (fastpath.go): every row is
// planned by the fast path (over the framework, as Server composes it) and by the plain
// framework server, and the two responses must be equal field by field. Every row also names
// the decision the fast path must take (answered, or the fallback reason), and rows marked
// differs must be rows where the framework's answer is NOT the prior state, private state and
// identity returned unchanged: the fallback is needed there, so a fast path that skipped the
// check would fail the comparison.

// planPair is the fast path and the plain framework server, configured alike with a cluster
// where nothing listens (no plan here may reach a cluster; one that tried would fail alike).
type planPair struct {
	fast   *planFastPath
	plain  tfprotov6.ProviderServer
	types  map[string]tftypes.Type
	idents map[string]tftypes.Type
}

// tfUnknown marks an unknown value in the Go descriptions tfv reads.
type tfUnknown struct{}

var unknown = tfUnknown{}

func newPlanPair(t testing.TB, deferral bool) *planPair {
	t.Helper()
	t.Setenv("KUBE_CONFIG_PATH", "")
	t.Setenv("KUBE_CONFIG_PATHS", "")
	unreachableCluster(t)
	ctx := context.Background()
	p := New("test")()
	fast, ok := PlanFastPath(ReleasingContexts(providerserver.NewProtocol6(p)()), p).(*planFastPath)
	if !ok {
		t.Fatal("PlanFastPath did not wrap the framework's server")
	}
	plain, err := providerserver.NewProtocol6WithError(New("test")())()
	if err != nil {
		t.Fatal(err)
	}
	pp := &planPair{fast: fast, plain: plain, types: map[string]tftypes.Type{}, idents: map[string]tftypes.Type{}}
	sch, err := plain.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || diagsHaveError(sch.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %v", err, sch.Diagnostics)
	}
	ids, err := plain.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || diagsHaveError(ids.Diagnostics) {
		t.Fatalf("GetResourceIdentitySchemas: %v %v", err, ids.Diagnostics)
	}
	for n, s := range sch.ResourceSchemas {
		pp.types[n] = s.ValueType()
	}
	for n, s := range ids.IdentitySchemas {
		pp.idents[n] = s.ValueType()
	}
	host := any("https://127.0.0.1:1")
	if deferral {
		host = unknown // a cluster created in the same run
	}
	pt := sch.Provider.ValueType()
	cfg := dv(t, pt, tfv(pt, map[string]any{"host": host, "token": "unused", "connect_timeout": "200ms"}))
	for _, s := range []tfprotov6.ProviderServer{fast, plain} {
		if _, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
			t.Fatal(err)
		}
		cr, err := s.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.14.9", Config: cfg,
			ClientCapabilities: &tfprotov6.ConfigureProviderClientCapabilities{DeferralAllowed: deferral}})
		if err != nil || diagsHaveError(cr.Diagnostics) {
			t.Fatalf("ConfigureProvider: %v %s", err, diagsString(cr.Diagnostics))
		}
	}
	return pp
}

// tfv builds a value of type typ from a Go description: nil is null, unknown is unknown,
// strings, ints, float64s and bools are primitives, []any a list, map[string]any an object
// (attributes it omits are null; a name the type lacks panics) or a map.
func tfv(typ tftypes.Type, v any) tftypes.Value {
	switch v := v.(type) {
	case nil:
		return tftypes.NewValue(typ, nil)
	case tfUnknown:
		return tftypes.NewValue(typ, tftypes.UnknownValue)
	case tftypes.Value:
		return v
	case int:
		return tftypes.NewValue(typ, big.NewFloat(float64(v)))
	}
	switch tt := typ.(type) {
	case tftypes.Object:
		m := v.(map[string]any)
		attrs := map[string]tftypes.Value{}
		for n := range m {
			if _, ok := tt.AttributeTypes[n]; !ok {
				panic(fmt.Sprintf("no attribute %q in %s", n, tt))
			}
		}
		for n, at := range tt.AttributeTypes {
			attrs[n] = tfv(at, m[n])
		}
		return tftypes.NewValue(tt, attrs)
	case tftypes.List:
		var es []tftypes.Value
		for _, e := range v.([]any) {
			es = append(es, tfv(tt.ElementType, e))
		}
		return tftypes.NewValue(tt, es)
	case tftypes.Map:
		es := map[string]tftypes.Value{}
		for k, e := range v.(map[string]any) {
			es[k] = tfv(tt.ElementType, e)
		}
		return tftypes.NewValue(tt, es)
	}
	return tftypes.NewValue(typ, v)
}

func dv(t testing.TB, typ tftypes.Type, v tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	d, err := tfprotov6.NewDynamicValue(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return &d
}

// with returns a copy of m with the dotted paths set (a nested object is copied as it is
// changed), e.g. with(m, "resource.count", 2, "labels", nil).
func with(m map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		k := kv[i].(string)
		if head, rest, nested := strings.Cut(k, "."); nested {
			inner, _ := out[head].(map[string]any)
			out[head] = with(inner, rest, kv[i+1])
			continue
		}
		out[k] = kv[i+1]
	}
	return out
}

// lookup returns the value at dotted path k of m.
func lookup(m map[string]any, k string) any {
	if head, rest, nested := strings.Cut(k, "."); nested {
		inner, _ := m[head].(map[string]any)
		return lookup(inner, rest)
	}
	return m[k]
}

// planRow is one prior/proposed/config triple and what the fast path must decide.
type planRow struct {
	name, typ string
	// prior and proposed (nil: the same as prior) are states, config the configuration (nil:
	// null), as tfv reads them; nullPrior and nullProposed make those null.
	prior, proposed, config map[string]any
	nullPrior, nullProposed bool
	private                 string
	noIdentity              bool
	deferral, canDefer      bool
	edit                    func(*tfprotov6.PlanResourceChangeRequest)
	want                    string
	// differs: the framework's answer is not the prior state, private state and identity;
	// unsure: whether it is depends on the kind (not checked).
	differs, unsure           bool
	requireReplace, wantDiags bool
}

func (pp *planPair) request(t testing.TB, r planRow) *tfprotov6.PlanResourceChangeRequest {
	t.Helper()
	typ := pp.types[strings.TrimSuffix(r.typ, "_nope")]
	prior := tfv(typ, r.prior)
	if r.nullPrior {
		prior = tftypes.NewValue(typ, nil)
	}
	proposed := prior
	if r.proposed != nil {
		proposed = tfv(typ, r.proposed)
	}
	if r.nullProposed {
		proposed = tftypes.NewValue(typ, nil)
	}
	config := tftypes.NewValue(typ, nil)
	if r.config != nil {
		config = tfv(typ, r.config)
	}
	req := &tfprotov6.PlanResourceChangeRequest{TypeName: r.typ, PriorState: dv(t, typ, prior), ProposedNewState: dv(t, typ, proposed),
		Config: dv(t, typ, config), ClientCapabilities: &tfprotov6.PlanResourceChangeClientCapabilities{DeferralAllowed: r.canDefer}}
	if r.private != "" {
		req.PriorPrivate = []byte(r.private)
	}
	if it := pp.idents[r.typ]; it != nil && !r.noIdentity && r.prior != nil {
		id := map[string]any{"name": r.prior["name"]}
		if _, ok := it.(tftypes.Object).AttributeTypes["namespace"]; ok {
			id["namespace"] = r.prior["namespace"]
		}
		req.PriorIdentity = &tfprotov6.ResourceIdentityData{IdentityData: dv(t, it, tfv(it, id))}
	}
	if r.edit != nil {
		r.edit(req)
	}
	return req
}

// samePlan returns "" when a and b are equal field by field: planned state and identity (the
// same values), requires-replace, planned private (bytes; nil and empty alike), diagnostics
// and deferral; else what differs.
func (pp *planPair) samePlan(typeName string, a, b *tfprotov6.PlanResourceChangeResponse) string {
	var diffs []string
	if !sameDynamic(pp.types[typeName], a.PlannedState, b.PlannedState) {
		diffs = append(diffs, "planned state")
	}
	var ai, bi *tfprotov6.DynamicValue
	if a.PlannedIdentity != nil {
		ai = a.PlannedIdentity.IdentityData
	}
	if b.PlannedIdentity != nil {
		bi = b.PlannedIdentity.IdentityData
	}
	if (a.PlannedIdentity == nil) != (b.PlannedIdentity == nil) || !sameDynamic(pp.idents[typeName], ai, bi) {
		diffs = append(diffs, "planned identity")
	}
	if fmt.Sprint(a.RequiresReplace) != fmt.Sprint(b.RequiresReplace) {
		diffs = append(diffs, fmt.Sprintf("requires replace %v vs %v", a.RequiresReplace, b.RequiresReplace))
	}
	if !bytes.Equal(a.PlannedPrivate, b.PlannedPrivate) {
		diffs = append(diffs, fmt.Sprintf("planned private %q vs %q", a.PlannedPrivate, b.PlannedPrivate))
	}
	if diagsString(a.Diagnostics) != diagsString(b.Diagnostics) || diagSeverities(a.Diagnostics) != diagSeverities(b.Diagnostics) {
		diffs = append(diffs, fmt.Sprintf("diagnostics %q vs %q", diagsString(a.Diagnostics), diagsString(b.Diagnostics)))
	}
	if !reflect.DeepEqual(a.Deferred, b.Deferred) {
		diffs = append(diffs, fmt.Sprintf("deferred %v vs %v", a.Deferred, b.Deferred))
	}
	return strings.Join(diffs, "; ")
}

func diagSeverities(ds []*tfprotov6.Diagnostic) string {
	var s []string
	for _, d := range ds {
		s = append(s, d.Severity.String())
	}
	return strings.Join(s, ",")
}

// sameDynamic reports whether a and b are both absent, or decode (as typ) to equal values.
// Equal bytes are equal whatever they hold (two undecodable values the framework returned).
func sameDynamic(typ tftypes.Type, a, b *tfprotov6.DynamicValue) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if bytes.Equal(a.MsgPack, b.MsgPack) && bytes.Equal(a.JSON, b.JSON) {
		return true
	}
	if typ == nil {
		return false
	}
	av, aerr := a.Unmarshal(typ)
	bv, berr := b.Unmarshal(typ)
	return aerr == nil && berr == nil && av.Equal(bv)
}

// naive is the fast path's answer to req, whether or not it applies.
func naive(req *tfprotov6.PlanResourceChangeRequest) *tfprotov6.PlanResourceChangeResponse {
	resp := &tfprotov6.PlanResourceChangeResponse{PlannedState: req.PriorState, PlannedIdentity: req.PriorIdentity}
	if len(req.PriorPrivate) > 0 {
		resp.PlannedPrivate = req.PriorPrivate
	}
	return resp
}

// plan sends req to both servers and returns their responses and the fast path's decision.
func (pp *planPair) plan(t testing.TB, req *tfprotov6.PlanResourceChangeRequest) (fast, plain *tfprotov6.PlanResourceChangeResponse, decision string) {
	t.Helper()
	fast, decision = pp.planFast(t, req)
	plain, err := pp.plain.PlanResourceChange(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return fast, plain, decision
}

// planFast sends req to the fast path and returns its response and decision.
func (pp *planPair) planFast(t testing.TB, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, string) {
	t.Helper()
	before := pp.fast.decisions()
	fast, err := pp.fast.PlanResourceChange(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for d, n := range pp.fast.decisions() {
		if n != before[d] {
			return fast, d
		}
	}
	t.Fatal("the fast path counted no decision")
	return nil, ""
}

// Private states: the mark Read keeps, alone and beside the framework's own key, as the
// framework writes them; the same with spaces; an empty object; terraform-plugin-sdk's shape.
var (
	privRead       = privateJSON(map[string]string{"read": `{"rv":"123","by":"test"}`})
	privFramework  = privateJSON(map[string]string{"read": `{"rv":"123","by":"test"}`, ".import_before_read": `true`})
	privSpaced     = strings.Replace(privRead, ":", ": ", 1)
	privEmpty      = `{}`
	privSDK        = `{"schema_version":"1"}`
	privEmptyValue = `{"read":""}`
)

func privateJSON(m map[string]string) string {
	b := map[string][]byte{}
	for k, v := range m {
		b[k] = []byte(v)
	}
	out, err := json.Marshal(b)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// commonRows are the rows every kind gets: state is its state after an apply (defaults
// filled, summary a success), config its configuration leaving every default unset, set its
// configuration and state with defaults set to other values, defaultAttr a defaulted
// attribute and other a value it does not default to, summary its summary attribute.
func commonRows(typ string, state, config map[string]any, set [2]map[string]any, defaultAttr string, other any, summary, failed string) []planRow {
	changed := with(state, "labels", map[string]any{"team": "b"})
	return []planRow{
		{name: "unchanged, defaults unset", prior: state, config: config, want: planAnswered},
		{name: "unchanged, defaults set to other values", prior: set[1], config: set[0], want: planAnswered},
		{name: "unchanged, defaults set to their values", prior: state, config: with(config, defaultAttr, lookup(state, defaultAttr)), want: planAnswered},
		{name: "private: the read mark", prior: state, config: config, private: privRead, want: planAnswered},
		{name: "private: with a framework key", prior: state, config: config, private: privFramework, want: planAnswered},
		{name: "deferral allowed, configuration known", prior: state, config: config, canDefer: true, want: planAnswered},
		{name: "config unknown where the state is not", prior: state, config: with(config, "labels", unknown), want: planAnswered},
		{name: "changed", prior: state, proposed: changed, config: with(config, "labels", map[string]any{"team": "b"}), want: fbChanged},
		{name: "config and proposed unknown", prior: state, proposed: with(state, "labels", unknown), config: with(config, "labels", unknown), want: fbChanged},
		{name: "null labels to empty", prior: state, proposed: with(state, "labels", map[string]any{}), config: with(config, "labels", map[string]any{}), want: fbChanged},
		{name: "empty labels unchanged", prior: with(state, "labels", map[string]any{}), config: with(config, "labels", map[string]any{}), want: planAnswered},
		{name: "create", nullPrior: true, prior: nil, proposed: state, config: config, want: fbCreateDestroy},
		{name: "destroy", prior: state, nullProposed: true, config: nil, want: fbCreateDestroy},
		{name: "no identity (Terraform 1.8)", prior: state, config: config, noIdentity: true, want: planAnswered, differs: true},
		{name: "identity null", prior: state, config: config, want: fbIdentity, edit: func(r *tfprotov6.PlanResourceChangeRequest) {
			r.PriorIdentity.IdentityData = &tfprotov6.DynamicValue{MsgPack: []byte{0xc0}}
		}},
		{name: "identity with null attributes", prior: state, config: config, want: planAnswered, edit: func(r *tfprotov6.PlanResourceChangeRequest) {
			typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String}}
			if _, ok := state["namespace"]; ok {
				typ.AttributeTypes["namespace"] = tftypes.String
			}
			d, _ := tfprotov6.NewDynamicValue(typ, tfv(typ, map[string]any{}))
			r.PriorIdentity.IdentityData = &d
		}},
		{name: "identity not wholly known", prior: state, config: config, want: fbIdentity, edit: func(r *tfprotov6.PlanResourceChangeRequest) {
			typ := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String}}
			if _, ok := state["namespace"]; ok {
				typ.AttributeTypes["namespace"] = tftypes.String
			}
			d, _ := tfprotov6.NewDynamicValue(typ, tfv(typ, map[string]any{"name": unknown}))
			r.PriorIdentity.IdentityData = &d
		}},
		{name: "identity without data", prior: state, config: config, edit: func(r *tfprotov6.PlanResourceChangeRequest) { r.PriorIdentity.IdentityData = nil },
			want: fbIdentity, differs: true},
		{name: "private: spaced", prior: state, config: config, private: privSpaced, want: fbPrivate, differs: true},
		{name: "private: empty object", prior: state, config: config, private: privEmpty, want: fbPrivate, differs: true},
		{name: "private: terraform-plugin-sdk's", prior: state, config: config, private: privSDK, want: fbPrivate, differs: true},
		{name: "private: an empty value", prior: state, config: config, private: privEmptyValue, want: fbPrivate, differs: true, wantDiags: true},
		{name: "private: not JSON", prior: state, config: config, private: "{", want: fbPrivate, differs: true, wantDiags: true},
		{name: "default unset, state holds another value", prior: with(state, defaultAttr, other), config: config, want: fbDefault, differs: true},
		{name: summary + " " + failed, prior: with(state, summary, failed), config: config, want: fbRetry, differs: true},
		{name: summary + " null", prior: with(state, summary, nil), config: config, want: fbRetry, differs: true},
		{name: "prior not wholly known", prior: with(state, "labels", unknown), config: config, want: fbDecode, unsure: true},
		{name: "config null (conservative: the framework reads it as all null)", prior: state, config: nil, want: fbDecode},
		{name: "state JSON-encoded", prior: state, config: config, want: fbEncoding, edit: func(r *tfprotov6.PlanResourceChangeRequest) {
			b, err := json.Marshal(state)
			if err != nil {
				panic(err)
			}
			r.PriorState = &tfprotov6.DynamicValue{JSON: b}
			r.ProposedNewState = r.PriorState
		}},
		{name: "state JSON-encoded beside its MessagePack", prior: state, config: config, want: fbEncoding, edit: func(r *tfprotov6.PlanResourceChangeRequest) {
			r.PriorState = &tfprotov6.DynamicValue{MsgPack: r.PriorState.MsgPack, JSON: []byte(`{}`)}
			r.ProposedNewState = r.PriorState
		}, differs: true, unsure: true},
		{name: "undecodable state", prior: state, config: config, want: fbDecode, edit: func(r *tfprotov6.PlanResourceChangeRequest) {
			r.PriorState = &tfprotov6.DynamicValue{MsgPack: []byte{0x81, 0xa1, 'x', 0x01}}
			r.ProposedNewState = r.PriorState
		}, differs: true, wantDiags: true},
		{name: "unknown type", typ: typ + "_nope", prior: state, config: config, want: fbType, differs: true, wantDiags: true},
		{name: "provider deferred", prior: state, config: config, deferral: true, canDefer: true, want: fbDeferred, differs: true},
	}
}

func performerRows() []planRow {
	state := map[string]any{"id": "default/p1", "name": "p1", "namespace": "default", "image": "ghcr.io/acme/performer:1.2.0",
		"image_pull_policy": "IfNotPresent", "strategy": "Recreate", "grpc_port": 9090, "phase": "Running",
		"grpc_endpoint": "performer-p1.default.svc.cluster.local:9090", "node_name": "node-1", "pod_name": "performer-p1",
		"service_name": "performer-p1", "candidate_nodes": 3}
	config := map[string]any{"name": "p1", "image": "ghcr.io/acme/performer:1.2.0"}
	rich := map[string]any{"namespace": "gpu", "image_pull_policy": "Always", "strategy": "RollingUpdate", "grpc_port": 7070,
		"labels": map[string]any{"team": "a"}, "env": map[string]any{"A": "1"}, "command": []any{"/bin/perf"}, "args": []any{},
		"tolerations":           []any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "toleration_seconds": 30}},
		"env_from":              []any{map[string]any{"name": "KEY", "secret_key_ref": map[string]any{"name": "s", "key": "k"}}},
		"hardware_requirements": map[string]any{"gpu_count": 1, "gpu_type": "NVIDIA-H100-80GB-HBM3", "custom_labels": map[string]any{}},
		"resources":             map[string]any{"requests": map[string]any{"cpu": "500m"}}, "affinity": `{"nodeAffinity":{}}`,
		"timeouts": map[string]any{"create": "20m"}}
	setConfig := with(config)
	setState := with(state, "id", "gpu/p1", "grpc_endpoint", "performer-p1.gpu.svc.cluster.local:7070")
	for k, v := range rich {
		setConfig[k], setState[k] = v, v
	}
	imported := with(state, "candidate_nodes", nil, "timeouts", nil)
	keda := map[string]any{"min_replicas": 1, "max_replicas": 4, "external": true}
	metricAS := map[string]any{"min_replicas": 2, "max_replicas": 4, "metric": map[string]any{"pods": map[string]any{"name": "tasks", "average_value": "4"}}}
	autoscaled := with(state, "strategy", "RollingUpdate", "pod_name", "performer-p1-7d9f-x2", "autoscaling", keda, "current_replicas", 3, "desired_replicas", 3)
	autoscaledConfig := with(config, "strategy", "RollingUpdate", "autoscaling", keda)
	rows := commonRows("gantry_performer", state, config, [2]map[string]any{setConfig, setState}, "strategy", "RollingUpdate", "phase", "Failed")
	return append(rows,
		planRow{name: "import-shaped state (refreshed: no candidate count, no timeouts)", prior: imported, config: config, want: planAnswered},
		planRow{name: "import stub (only id, name, namespace)", prior: map[string]any{"id": "default/p1", "name": "p1", "namespace": "default"}, config: config,
			want: fbDefault, differs: true},
		planRow{name: "phase Pending", prior: with(state, "phase", "Pending"), config: config, want: fbRetry, differs: true},
		planRow{name: "namespace default unset, state elsewhere (replace)", prior: with(state, "namespace", "gpu"), config: config, want: fbDefault, differs: true, requireReplace: true},
		planRow{name: "grpc_port default unset, state 7070", prior: with(state, "grpc_port", 7070), config: config, want: fbDefault, differs: true},
		planRow{name: "grpc_port a fraction", prior: with(state, "grpc_port", 9090.5), config: with(config, "grpc_port", 9090.5), want: fbValue, differs: true, wantDiags: true},
		planRow{name: "grpc_port beyond int64", prior: with(state, "grpc_port", 1e30), config: with(config, "grpc_port", 1e30), want: fbValue, differs: true, wantDiags: true},
		planRow{name: "toleration_seconds a fraction in config", prior: setState, config: with(setConfig, "tolerations",
			[]any{map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule", "toleration_seconds": 30.5}}), want: fbValue, differs: true, wantDiags: true},
		planRow{name: "affinity not JSON", prior: with(state, "affinity", "{"), config: with(config, "affinity", "{"), want: fbValue, differs: true, wantDiags: true},
		planRow{name: "affinity not JSON in config only", prior: state, config: with(config, "affinity", "{"), want: fbValue, differs: true, wantDiags: true},
		planRow{name: "id unknown in state (planNaming sets it)", prior: with(state, "id", unknown), config: config, want: fbDecode, differs: true},
		planRow{name: "image changed", prior: state, proposed: with(state, "image", "ghcr.io/acme/performer:1.3.0"), config: with(config, "image", "ghcr.io/acme/performer:1.3.0"), want: fbChanged},
		planRow{name: "name changed (replace)", prior: state, proposed: with(state, "name", "p2"), config: with(config, "name", "p2"), want: fbChanged, requireReplace: true},
		planRow{name: "tolerations: empty list unchanged", prior: with(state, "tolerations", []any{}), config: with(config, "tolerations", []any{}), want: planAnswered},
		planRow{name: "tolerations: null to empty", prior: state, proposed: with(state, "tolerations", []any{}), config: with(config, "tolerations", []any{}), want: fbChanged},
		planRow{name: "autoscaled, replica counts refreshed", prior: autoscaled, config: autoscaledConfig, want: planAnswered},
		planRow{name: "autoscaled with a metric, counts null", prior: with(autoscaled, "autoscaling", metricAS, "current_replicas", nil, "desired_replicas", nil),
			config: with(autoscaledConfig, "autoscaling", metricAS), want: planAnswered},
		planRow{name: "autoscaling max_replicas changed", prior: autoscaled, proposed: with(autoscaled, "autoscaling.max_replicas", 6),
			config: with(autoscaledConfig, "autoscaling.max_replicas", 6), want: fbChanged},
	)
}

func executorRows() []planRow {
	chains := []any{map[string]any{"name": "ethereum", "chain_id": 1, "rpc_url": "https://eth.example", "task_mailbox_address": "0x" + strings.Repeat("a", 40)}}
	keys := map[string]any{"secret_name": "keys", "ecdsa_key": "ecdsa"}
	avs := func(pt any) []any {
		return []any{map[string]any{"avs_address": "0x" + strings.Repeat("b", 40), "process_type": "server"},
			map[string]any{"avs_address": "0x" + strings.Repeat("c", 40), "process_type": pt}}
	}
	state := map[string]any{"id": "default/e1", "name": "e1", "namespace": "default", "image": "ghcr.io/acme/executor:1", "image_pull_policy": "IfNotPresent",
		"replicas": 1, "chains": chains, "aggregator_endpoint": "agg:9000", "operator_keys": keys, "log_level": "info", "progress_deadline_seconds": 600,
		"rollback_on_failure": true, "rollback_keep_revisions": 3, "grpc_port": 9090, "management_port": 9091, "manage_performers": false,
		"phase": "Running", "ready_replicas": 1, "current_revision": "abc", "last_good_revision": "abc", "config_map_name": "executor-e1-abc",
		"performer_endpoints": map[string]any{}}
	config := map[string]any{"name": "e1", "image": "ghcr.io/acme/executor:1", "chains": chains, "aggregator_endpoint": "agg:9000", "operator_keys": keys}
	setConfig := with(config, "replicas", 2, "log_level", "debug", "rollback_on_failure", false, "manage_performers", true, "management_port", 9191,
		"avs_performers", avs("one-off"))
	setState := with(state, "replicas", 2, "log_level", "debug", "rollback_on_failure", false, "manage_performers", true, "management_port", 9191,
		"avs_performers", avs("one-off"))
	woConfig := with(config, "operator_keys", map[string]any{"ecdsa_private_key_wo": "0xkey", "private_keys_wo_version": 1})
	woState := with(state, "operator_keys", map[string]any{"private_keys_wo_version": 1})
	rows := commonRows("gantry_executor", state, config, [2]map[string]any{setConfig, setState}, "rollback_on_failure", false, "phase", "Failed")
	return append(rows,
		planRow{name: "rolled back: failed_revision set, phase Running", prior: with(state, "failed_revision", "def"), config: config, want: fbRetry, differs: true},
		planRow{name: "failed_revision empty", prior: with(state, "failed_revision", ""), config: config, want: planAnswered},
		planRow{name: "phase RollingBack", prior: with(state, "phase", "RollingBack"), config: config, want: fbRetry, differs: true},
		planRow{name: "avs_performers: process_type default unset, state server", prior: with(state, "avs_performers", avs("server")),
			config: with(config, "avs_performers", avs(nil)), want: planAnswered},
		planRow{name: "avs_performers: process_type default unset, state one-off", prior: with(state, "avs_performers", avs("one-off")),
			config: with(config, "avs_performers", avs(nil)), want: fbDefault, differs: true},
		planRow{name: "avs_performers: config lacks the element, state server", prior: with(state, "avs_performers", avs("server")),
			config: with(config, "avs_performers", avs(nil)[:1]), want: planAnswered},
		planRow{name: "avs_performers: config lacks the element, state one-off", prior: with(state, "avs_performers", avs("one-off")),
			config: with(config, "avs_performers", avs(nil)[:1]), want: fbDefault, differs: true},
		planRow{name: "avs_performers: config unknown, state one-off", prior: with(state, "avs_performers", avs("one-off")),
			config: with(config, "avs_performers", unknown), want: fbDefault, differs: true},
		planRow{name: "write-only key in config", prior: woState, config: woConfig, want: fbWriteOnly},
		planRow{name: "write-only key unknown in config", prior: woState, config: with(woConfig, "operator_keys.ecdsa_private_key_wo", unknown), want: fbWriteOnly},
		planRow{name: "write-only version alone in config", prior: woState, config: with(config, "operator_keys", map[string]any{"private_keys_wo_version": 1}), want: planAnswered},
		planRow{name: "write-only key in state", prior: with(woState, "operator_keys.ecdsa_private_key_wo", "0xkey"), config: woConfig, want: fbWriteOnly, differs: true},
		planRow{name: "chain_id a fraction", prior: with(state, "chains", []any{with(chains[0].(map[string]any), "chain_id", 1.5)}),
			config: with(config, "chains", []any{with(chains[0].(map[string]any), "chain_id", 1.5)}), want: fbValue, differs: true, wantDiags: true},
		planRow{name: "chains: one more", prior: state, proposed: with(state, "chains", append(append([]any{}, chains...), chains[0])),
			config: with(config, "chains", append(append([]any{}, chains...), chains[0])), want: fbChanged},
	)
}

// aggregatorRows: gantry_aggregator's ModifyPlan is kindResource's planRetry (as the
// executor's): its rows are the common ones, its nested defaults (chains' poll interval) and
// its write-only key.
func aggregatorRows() []planRow {
	chains := []any{map[string]any{"name": "ethereum", "chain_id": 31337, "rpc_url": "http://anvil:8545", "poll_interval_seconds": 2}}
	chainsCfg := []any{map[string]any{"name": "ethereum", "chain_id": 31337, "rpc_url": "http://anvil:8545"}}
	keys := map[string]any{"secret_name": "keys", "ecdsa_key": "ecdsa"}
	state := map[string]any{"id": "default/a1", "name": "a1", "namespace": "default", "image": "ghcr.io/acme/hourglass:1", "image_pull_policy": "IfNotPresent",
		"operator_address": "0x" + strings.Repeat("a", 40), "operator_keys": keys, "l1_chain_id": 31337, "chains": chains, "management_port": 9000,
		"debug": false, "phase": "Running", "ready_replicas": 1, "revision": "abc", "config_secret_name": "aggregator-a1-config",
		"management_endpoint": "aggregator-a1.default.svc.cluster.local:9000"}
	config := map[string]any{"name": "a1", "image": "ghcr.io/acme/hourglass:1", "operator_address": "0x" + strings.Repeat("a", 40), "operator_keys": keys,
		"l1_chain_id": 31337, "chains": chainsCfg}
	setConfig := with(config, "debug", true, "management_port", 9010)
	setState := with(state, "debug", true, "management_port", 9010)
	woState := with(state, "operator_keys", map[string]any{"private_keys_wo_version": 1})
	rows := commonRows("gantry_aggregator", state, config, [2]map[string]any{setConfig, setState}, "debug", true, "phase", "Failed")
	return append(rows,
		planRow{name: "phase Updating", prior: with(state, "phase", "Updating"), config: config, want: fbRetry, differs: true},
		planRow{name: "chains: poll interval default unset, state 10", prior: with(state, "chains", []any{with(chains[0].(map[string]any), "poll_interval_seconds", 10)}),
			config: config, want: fbDefault, differs: true},
		planRow{name: "write-only key in config", prior: woState,
			config: with(config, "operator_keys", map[string]any{"ecdsa_private_key_wo": "0xkey", "private_keys_wo_version": 1}), want: fbWriteOnly},
		planRow{name: "persistence changed (replace)", prior: with(state, "persistence", map[string]any{"size": "1Gi"}),
			proposed: with(state, "persistence", map[string]any{"size": "2Gi"}), config: with(config, "persistence", map[string]any{"size": "2Gi"}),
			want: fbChanged, requireReplace: true},
	)
}

func packageSetRows() []planRow {
	pkgs := []any{map[string]any{"name": "driver", "version": "550.1", "image": "ghcr.io/acme/driver"}}
	state := map[string]any{"id": "gpu-drivers", "name": "gpu-drivers", "packages": pkgs, "sequencing": "node", "status": "complete",
		"complete_nodes": "3/3", "node_status": map[string]any{"node-1": "complete"}, "quarantined_versions": []any{}}
	config := map[string]any{"name": "gpu-drivers", "packages": pkgs}
	setConfig := with(config, "sequencing", "all", "paused", false, "priority", 5, "node_selector", map[string]any{"gpu": "true"},
		"interruption_budget", map[string]any{"percent": 25},
		"node_selector_expressions", []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a", "b"}}})
	setState := with(state, "sequencing", "all", "paused", false, "priority", 5, "node_selector", map[string]any{"gpu": "true"},
		"interruption_budget", map[string]any{"percent": 25},
		"node_selector_expressions", []any{map[string]any{"key": "zone", "operator": "In", "values": []any{"a", "b"}}})
	rows := commonRows("gantry_package_set", state, config, [2]map[string]any{setConfig, setState}, "sequencing", "all", "status", "erroring")
	return append(rows,
		planRow{name: "status waiting (settled)", prior: with(state, "status", "waiting"), config: config, want: planAnswered},
		planRow{name: "status paused (returns at once)", prior: with(state, "status", "paused"), config: config, want: planAnswered},
		planRow{name: "status blocked", prior: with(state, "status", "blocked"), config: config, want: fbRetry, differs: true},
		planRow{name: "status in_progress", prior: with(state, "status", "in_progress"), config: config, want: fbRetry, differs: true},
		planRow{name: "complete, the version in state quarantined", prior: with(state, "quarantined_versions", []any{"driver@550.1"}), config: config, want: fbRetry, differs: true},
		planRow{name: "complete, another version quarantined", prior: with(state, "quarantined_versions", []any{"driver@549.0"}), config: config, want: planAnswered},
		planRow{name: "rollout preview in state", prior: with(state, "rollout_preview", map[string]any{"selected_nodes": 3, "nodes": 3, "waves": 1, "max_wave_size": 3,
			"cordoned": 0, "drained": 0, "rebooted": 0, "interrupts": map[string]any{}, "first_wave": []any{"node-1"}, "constraints": []any{}, "completes": true}),
			config: config, want: planAnswered},
		planRow{name: "package version changed", prior: state, proposed: with(state, "packages", []any{with(pkgs[0].(map[string]any), "version", "550.2")}),
			config: with(config, "packages", []any{with(pkgs[0].(map[string]any), "version", "550.2")}), want: fbChanged},
	)
}

func workspaceRows() []planRow {
	res := map[string]any{"count": 1, "gpu_count": 1, "gpu_product": "NVIDIA-A100-SXM4-80GB", "provision_nodes": true}
	inf := map[string]any{"model": "falcon-7b", "image": "ghcr.io/acme/vllm:1", "port": 8000}
	sizing := map[string]any{"replicas": 1, "gpus_per_replica": 1, "gpus_per_node": 1, "nodes_per_replica": 1, "gpu_product": "NVIDIA-A100-SXM4-80GB", "node_claims": 0}
	state := map[string]any{"id": "default/w1", "name": "w1", "namespace": "default", "resource": res, "inference": inf, "state": "Ready", "mode": "Inference",
		"endpoint": "workspace-w1.default.svc.cluster.local:8000", "worker_nodes": []any{"node-1"}, "conditions": map[string]any{"Ready": "True"}, "sizing": sizing}
	config := map[string]any{"name": "w1", "resource": map[string]any{"gpu_count": 1, "gpu_product": "NVIDIA-A100-SXM4-80GB"},
		"inference": map[string]any{"model": "falcon-7b", "image": "ghcr.io/acme/vllm:1"}}
	setConfig := with(config, "resource.count", 2, "resource.provision_nodes", false, "inference.port", 8080)
	setState := with(state, "resource.count", 2, "resource.provision_nodes", false, "inference.port", 8080)
	tun := map[string]any{"method": "lora", "base_model": "phi-3", "image": "ghcr.io/acme/tune:1", "input_pvc": "data", "output_pvc": "out", "backoff_limit": 0, "release_nodes_on_success": false}
	tuning := with(state, "inference", nil, "tuning", tun, "state", "Succeeded", "mode", "Tuning", "endpoint", nil)
	tuningConfig := with(config, "inference", nil, "tuning", with(tun, "backoff_limit", nil, "release_nodes_on_success", nil))
	rows := commonRows("gantry_workspace", state, config, [2]map[string]any{setConfig, setState}, "resource.provision_nodes", false, "state", "NotReady")
	return append(rows,
		planRow{name: "nested default unset, state differs (inference.port)", prior: with(state, "inference.port", 9000), config: config, want: fbDefault, differs: true},
		planRow{name: "nested default unset, state differs (resource.provision_nodes)", prior: with(state, "resource.provision_nodes", false), config: config, want: fbDefault, differs: true},
		planRow{name: "nested default null in state", prior: with(state, "resource.count", nil), config: config, want: fbDefault, differs: true},
		planRow{name: "tuning, Succeeded", prior: tuning, config: tuningConfig, want: planAnswered},
		planRow{name: "tuning, Running", prior: with(tuning, "state", "Running"), config: tuningConfig, want: fbRetry, differs: true},
		planRow{name: "tuning, backoff_limit default unset, state 2 (replace)", prior: with(tuning, "tuning.backoff_limit", 2), config: tuningConfig, want: fbDefault,
			differs: true, requireReplace: true},
		planRow{name: "tuning, inference in state not in config, port the default", prior: with(tuning, "inference", inf), config: tuningConfig, want: planAnswered},
		planRow{name: "tuning, release_nodes_on_success set on a Succeeded workspace (in place)", prior: tuning,
			proposed: with(tuning, "tuning.release_nodes_on_success", true), config: with(tuningConfig, "tuning.release_nodes_on_success", true), want: fbChanged},
		planRow{name: "tuning, release_nodes_on_success and the image changed (replace)", prior: tuning,
			proposed: with(tuning, "tuning.release_nodes_on_success", true, "tuning.image", "ghcr.io/acme/tune:2"),
			config:   with(tuningConfig, "tuning.release_nodes_on_success", true, "tuning.image", "ghcr.io/acme/tune:2"), want: fbChanged, requireReplace: true},
		planRow{name: "tuning, inference in state not in config, port another", prior: with(tuning, "inference", with(inf, "port", 9000)), config: tuningConfig,
			want: fbDefault, differs: true},
		planRow{name: "namespace default unset, state elsewhere (replace)", prior: with(state, "namespace", "models"), config: config, want: fbDefault, differs: true,
			requireReplace: true},
		planRow{name: "tuning, resource changed (replace)", prior: tuning, proposed: with(tuning, "resource.gpu_count", 2),
			config: with(tuningConfig, "resource.gpu_count", 2), want: fbChanged, requireReplace: true},
		planRow{name: "inference to tuning (replace)", prior: state, proposed: tuning, config: tuningConfig, want: fbChanged, requireReplace: true},
		planRow{name: "import-shaped state (no sizing, no timeouts)", prior: with(state, "sizing", nil), config: config, want: planAnswered},
		planRow{name: "conditions empty", prior: with(state, "conditions", map[string]any{}), config: config, want: planAnswered},
	)
}

// planCorpus is the differential test's corpus: every kind's rows, named and typed.
func planCorpus() []planRow {
	var all []planRow
	for typ, rows := range map[string][]planRow{"gantry_performer": performerRows(), "gantry_executor": executorRows(),
		"gantry_aggregator": aggregatorRows(), "gantry_package_set": packageSetRows(), "gantry_workspace": workspaceRows()} {
		for _, r := range rows {
			if r.typ == "" {
				r.typ = typ
			}
			r.name = typ + ": " + r.name
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}

func TestPlanFastPathDifferential(t *testing.T) {
	pairs := map[bool]*planPair{false: newPlanPair(t, false), true: newPlanPair(t, true)}
	corpus := planCorpus()
	answered := map[string]int{}
	for _, r := range corpus {
		pp := pairs[r.deferral]
		req := pp.request(t, r)
		fast, plain, decision := pp.plan(t, req)
		typeName := strings.TrimSuffix(r.typ, "_nope")
		if decision != r.want {
			t.Errorf("%s: the fast path decided %q, want %q", r.name, decision, r.want)
		}
		if d := pp.samePlan(typeName, fast, plain); d != "" {
			t.Errorf("%s (%s): the fast path's response differs from the framework's: %s\n%s", r.name, decision, d, diagsString(plain.Diagnostics))
		}
		naiveDiff := pp.samePlan(typeName, naive(req), plain)
		switch {
		case r.unsure:
		case r.differs && naiveDiff == "":
			t.Errorf("%s: the framework answers with the prior state, private state and identity: the row shows no need to fall back", r.name)
		case !r.differs && naiveDiff != "" && decision != fbChanged && decision != fbCreateDestroy:
			t.Errorf("%s: the framework's answer differs from the prior state (%s): mark the row differs", r.name, naiveDiff)
		}
		if got := len(plain.RequiresReplace) > 0; got != r.requireReplace && !r.unsure {
			t.Errorf("%s: the framework's plan requires replace: %v, want %v", r.name, got, r.requireReplace)
		}
		if got := diagsHaveError(plain.Diagnostics); got != r.wantDiags && !r.unsure {
			t.Errorf("%s: the framework's plan has errors: %v, want %v: %s", r.name, got, r.wantDiags, diagsString(plain.Diagnostics))
		}
		if decision == planAnswered {
			answered[r.typ]++
			if !bytes.Equal(fast.PlannedState.MsgPack, plain.PlannedState.MsgPack) {
				t.Errorf("%s: the framework encodes the planned state differently", r.name)
			}
		}
	}
	counts := map[string]int64{}
	for _, pp := range pairs {
		for d, n := range pp.fast.decisions() {
			counts[d] += n
		}
	}
	for _, d := range planDecisions {
		if counts[d] == 0 {
			t.Errorf("no row of the corpus took decision %q", d)
		}
	}
	for typ := range fastPlanReviewed {
		if answered[typ] == 0 {
			t.Errorf("no row of %s was answered by the fast path", typ)
		}
	}
	t.Logf("corpus: %d rows; decisions: %v; answered per type: %v", len(corpus), counts, answered)
}

// TestPlanFastPathTypes: every Gantry resource type is one the fast path answers (a schema
// change that makes one unprovable fails here: review it, extend newFastPlanType, add rows),
// and schemas it cannot prove inert are refused.
func TestPlanFastPathTypes(t *testing.T) {
	pp := newPlanPair(t, false)
	if len(pp.fast.skipped) > 0 {
		t.Errorf("types the fast path does not answer: %v", pp.fast.skipped)
	}
	for typ := range fastPlanReviewed {
		if pp.fast.types[typ] == nil {
			t.Errorf("%s: not answered by the fast path", typ)
		}
	}
	ctx := context.Background()
	refused := map[string]schema.Attribute{
		"a custom plan modifier":    schema.StringAttribute{Optional: true, PlanModifiers: []planmodifier.String{customPlanModifier{}}},
		"a set":                     schema.SetAttribute{Optional: true, ElementType: types.StringType},
		"a list of numbers":         schema.ListAttribute{Optional: true, ElementType: types.Float64Type},
		"a float":                   schema.Float64Attribute{Optional: true},
		"a dynamic value":           schema.DynamicAttribute{Optional: true},
		"a default of another kind": schema.StringAttribute{Optional: true, Computed: true, Default: customDefault{}},
		"a nested custom modifier": schema.SingleNestedAttribute{Optional: true, Attributes: map[string]schema.Attribute{
			"x": schema.StringAttribute{Optional: true, PlanModifiers: []planmodifier.String{customPlanModifier{}}}}},
		"a set nested attribute": schema.SetNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"x": schema.StringAttribute{Optional: true}}}},
	}
	for name, a := range refused {
		if err := (&fastPlanType{}).readAttribute(ctx, valuePath{"x"}, a); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ft := &fastPlanType{}
	if err := ft.readAttribute(ctx, valuePath{"x"}, schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("d"),
		PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace(), stringplanmodifier.RequiresReplaceIfConfigured(), stringplanmodifier.UseStateForUnknown()},
	}); err != nil || len(ft.defaults) != 1 {
		t.Errorf("a static default with RequiresReplace, RequiresReplaceIfConfigured and UseStateForUnknown: %v, %d defaults", err, len(ft.defaults))
	}
}

type customPlanModifier struct{}

func (customPlanModifier) Description(context.Context) string         { return "" }
func (customPlanModifier) MarkdownDescription(context.Context) string { return "" }
func (customPlanModifier) PlanModifyString(context.Context, planmodifier.StringRequest, *planmodifier.StringResponse) {
}

type customDefault struct{}

func (customDefault) Description(context.Context) string         { return "" }
func (customDefault) MarkdownDescription(context.Context) string { return "" }
func (customDefault) DefaultString(context.Context, defaults.StringRequest, *defaults.StringResponse) {
}

// BenchmarkPlanResourceChange: the plan of an unchanged gantry_performer (the bench's
// configuration: name, namespace and image set; defaults in state; the read mark in private
// state; an identity), by the framework and by the fast path; and one the fast path reads to
// the end and leaves to the framework (phase Failed: planRetry), its worst case.
//
//	go test ./provider -run '^$' -bench PlanResourceChange -benchmem
func BenchmarkPlanResourceChange(b *testing.B) {
	pp := newPlanPair(b, false)
	var row planRow
	for _, r := range performerRows() {
		if r.name == "private: the read mark" {
			row = r
		}
	}
	row.typ = "gantry_performer"
	row.config = with(row.config, "namespace", "default")
	failed := row
	failed.prior = with(row.prior, "phase", "Failed")
	ctx := context.Background()
	for _, c := range []struct {
		name string
		srv  tfprotov6.ProviderServer
		row  planRow
		want string
	}{
		{"framework", pp.plain, row, ""},
		{"fastpath", pp.fast, row, planAnswered},
		{"framework/retry", pp.plain, failed, ""},
		{"fastpath/retry", pp.fast, failed, fbRetry},
	} {
		req := pp.request(b, c.row)
		if c.want != "" {
			if _, _, d := pp.plan(b, req); d != c.want {
				b.Fatalf("%s: the fast path decided %q, want %q", c.name, d, c.want)
			}
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				resp, err := c.srv.PlanResourceChange(ctx, req)
				if err != nil || len(resp.Diagnostics) > 0 {
					b.Fatal(err, resp.Diagnostics)
				}
			}
		})
	}
}
