package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The differential test of the ReadResource fast path (fastpath_read.go): every row is read by
// the fast path (over the framework, as Server composes it) and by the plain framework server,
// both configured against one API server over HTTP (fakeAPI: LIST, WATCH and GET of the
// gantry.dev objects, with their resourceVersion), and the two responses must be equal field
// by field (new state, identity, private state, diagnostics, deferral). Every row names the
// decision the fast path must take, and rows marked differs must be rows where the framework's
// answer is NOT the prior state, private state and identity returned unchanged: the fallback is
// needed there, so a fast path that skipped the check would fail the comparison. Every row also
// checks that the fast path sent no more GETs to the API server than the framework alone
// (a read it made before falling back is handed to readInto, not made again).

// fakeAPI is an API server for the gantry.dev/v1alpha1 kinds: /version, LIST (every object of
// the resource, in the namespace or in all), WATCH (held open, no events: the objects never
// change) and GET (the object, 404 when absent, 403 for a name in forbidden).
type fakeAPI struct {
	*httptest.Server
	// objects are keyed by resource/namespace/name (namespace "" for a cluster-scoped kind).
	objects   map[string]map[string]any
	forbidden map[string]bool
	gets      atomic.Int64
	done      chan struct{}
	closeOnce sync.Once
}

// objectRV is the resourceVersion of every object fakeAPI serves.
const objectRV = "123"

func newFakeAPI(t testing.TB, objects []map[string]any, forbidden ...string) *fakeAPI {
	t.Helper()
	a := &fakeAPI{objects: map[string]map[string]any{}, forbidden: map[string]bool{}, done: make(chan struct{})}
	a.add(objects)
	for _, n := range forbidden {
		a.forbidden[n] = true
	}
	a.Server = httptest.NewServer(a)
	t.Cleanup(a.close)
	return a
}

func (a *fakeAPI) close() {
	a.closeOnce.Do(func() { close(a.done) })
	a.Close()
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/version" {
		writeJSON(w, http.StatusOK, map[string]any{"major": "1", "minor": "33", "gitVersion": "v1.33.0"})
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/apis/gantry.dev/v1alpha1/")
	if !ok || r.Method != http.MethodGet {
		writeJSON(w, http.StatusNotFound, apiStatus(http.StatusNotFound, "NotFound", ""))
		return
	}
	parts := strings.Split(rest, "/")
	namespace, allNamespaces := "", true
	if len(parts) >= 3 && parts[0] == "namespaces" {
		namespace, allNamespaces, parts = parts[1], false, parts[2:]
	}
	switch {
	case len(parts) == 1 && r.URL.Query().Get("watch") == "true":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-a.done:
		}
	case len(parts) == 1:
		a.list(w, parts[0], namespace, allNamespaces)
	case len(parts) == 2:
		a.gets.Add(1)
		a.get(w, parts[0], namespace, parts[1])
	default:
		writeJSON(w, http.StatusNotFound, apiStatus(http.StatusNotFound, "NotFound", ""))
	}
}

func (a *fakeAPI) list(w http.ResponseWriter, res, namespace string, allNamespaces bool) {
	items := []any{}
	for k, o := range a.objects {
		parts := strings.SplitN(k, "/", 3)
		if parts[0] == res && (allNamespaces || parts[1] == namespace) {
			items = append(items, o)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"apiVersion": "gantry.dev/v1alpha1", "kind": "List", "metadata": map[string]any{"resourceVersion": "1000"}, "items": items})
}

func (a *fakeAPI) get(w http.ResponseWriter, res, namespace, name string) {
	switch o, ok := a.objects[res+"/"+namespace+"/"+name]; {
	case a.forbidden[name]:
		writeJSON(w, http.StatusForbidden, apiStatus(http.StatusForbidden, "Forbidden", name))
	case ok:
		writeJSON(w, http.StatusOK, o)
	default:
		st := apiStatus(http.StatusNotFound, "NotFound", name)
		st["details"] = map[string]any{"name": name, "group": "gantry.dev", "kind": res}
		writeJSON(w, http.StatusNotFound, st)
	}
}

func apiStatus(code int, reason, name string) map[string]any {
	return map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure",
		"message": fmt.Sprintf("%s %q", strings.ToLower(reason), name), "reason": reason, "code": code}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// readMode is how a readPair's servers are configured.
type readMode int

const (
	readConfigured   readMode = iota // against the fakeAPI
	readDeferred                     // with a deferral (host unknown, the client allows deferrals)
	readUnconfigured                 // not at all
)

// readPair is the fast path and the plain framework server, configured alike.
type readPair struct {
	fast   *planFastPath
	plain  tfprotov6.ProviderServer
	types  map[string]tftypes.Type
	idents map[string]tftypes.Type
	api    *fakeAPI
}

func newReadPair(t testing.TB, api *fakeAPI, mode readMode) *readPair {
	t.Helper()
	t.Setenv("KUBE_CONFIG_PATH", "")
	t.Setenv("KUBE_CONFIG_PATHS", "")
	t.Setenv("KUBE_HOST", "")
	t.Setenv("KUBE_TOKEN", "")
	t.Setenv(envNoPlanFastPath, "")
	t.Setenv(envNoReadFastPath, "")
	ctx := context.Background()
	pf, pp := New("test")(), New("test")()
	fast, ok := PlanFastPath(ReleasingContexts(providerserver.NewProtocol6(pf)()), pf).(*planFastPath)
	if !ok {
		t.Fatal("PlanFastPath did not wrap the framework's server")
	}
	plain, err := providerserver.NewProtocol6WithError(pp)()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range []*gantryProvider{pf.(*gantryProvider), pp.(*gantryProvider)} {
			if d := p.configuredData(); d != nil && d.reg != nil {
				d.reg.Close()
			}
		}
	})
	rp := &readPair{fast: fast, plain: plain, types: map[string]tftypes.Type{}, idents: map[string]tftypes.Type{}, api: api}
	sch, err := plain.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || diagsHaveError(sch.Diagnostics) {
		t.Fatalf("GetProviderSchema: %v %v", err, sch.Diagnostics)
	}
	ids, err := plain.GetResourceIdentitySchemas(ctx, &tfprotov6.GetResourceIdentitySchemasRequest{})
	if err != nil || diagsHaveError(ids.Diagnostics) {
		t.Fatalf("GetResourceIdentitySchemas: %v %v", err, ids.Diagnostics)
	}
	for n, s := range sch.ResourceSchemas {
		rp.types[n] = s.ValueType()
	}
	for n, s := range ids.IdentitySchemas {
		rp.idents[n] = s.ValueType()
	}
	if _, err := fast.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{}); err != nil {
		t.Fatal(err)
	}
	if mode == readUnconfigured {
		return rp
	}
	host := any(api.URL)
	if mode == readDeferred {
		host = unknown
	}
	pt := sch.Provider.ValueType()
	cfg := dv(t, pt, tfv(pt, map[string]any{"host": host, "token": "unused", "connect_timeout": "10s"}))
	for _, s := range []tfprotov6.ProviderServer{fast, plain} {
		cr, err := s.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{TerraformVersion: "1.14.9", Config: cfg,
			ClientCapabilities: &tfprotov6.ConfigureProviderClientCapabilities{DeferralAllowed: mode == readDeferred}})
		if err != nil || diagsHaveError(cr.Diagnostics) {
			t.Fatalf("ConfigureProvider: %v %s", err, diagsString(cr.Diagnostics))
		}
	}
	return rp
}

// readRow is one refresh and what the fast path must decide.
type readRow struct {
	name, typ string
	// state is the current state as tfv reads it.
	state map[string]any
	// private is the prior private state ("" none); noIdentity sends no identity; identity,
	// when not nil, is the identity sent (as tfv reads it; else the state's name and namespace).
	private    string
	noIdentity bool
	identity   map[string]any
	canDefer   bool
	mode       readMode
	edit       func(*tfprotov6.ReadResourceRequest)
	want       string
	// differs: the framework's answer is not the prior state, private state and identity;
	// unsure: whether it is is not checked.
	differs, unsure, wantDiags bool
}

// Private states of the read corpus: the mark at the object's resourceVersion, at another, of
// another provider version, beside another key of the provider's, beside framework keys.
var (
	privMarkOld     = privateJSON(map[string]string{"read": `{"rv":"122","by":"test"}`})
	privMarkVersion = privateJSON(map[string]string{"read": `{"rv":"123","by":"v0.9.0"}`})
	privMarkOther   = privateJSON(map[string]string{"read": `{"rv":"123","by":"test"}`, "other": `{"a":1}`})
	privMarkFwKey   = privateJSON(map[string]string{"read": `{"rv":"123","by":"test"}`, ".other": `true`})
	privMarkNoRV    = privateJSON(map[string]string{"read": `{"by":"test"}`})
	privMarkBadJSON = privateJSON(map[string]string{"read": `[1]`})
	privMarkExtra   = privateJSON(map[string]string{"read": `{"rv":"123","by":"test","at":"2026-01-01"}`})
)

func (rp *readPair) request(t testing.TB, r readRow) *tfprotov6.ReadResourceRequest {
	t.Helper()
	typ := rp.types[strings.TrimSuffix(r.typ, "_nope")]
	state := tfv(typ, r.state)
	req := &tfprotov6.ReadResourceRequest{TypeName: r.typ, CurrentState: dv(t, typ, state),
		ClientCapabilities: &tfprotov6.ReadResourceClientCapabilities{DeferralAllowed: r.canDefer}}
	if r.private != "" {
		req.Private = []byte(r.private)
	}
	if it := rp.idents[r.typ]; it != nil && !r.noIdentity && r.state != nil {
		id := r.identity
		if id == nil {
			id = identityOf(it, r.state)
		}
		req.CurrentIdentity = &tfprotov6.ResourceIdentityData{IdentityData: dv(t, it, tfv(it, id))}
	}
	if r.edit != nil {
		r.edit(req)
	}
	return req
}

// identityOf is the identity of state (its name and, when typ has one, namespace).
func identityOf(typ tftypes.Type, state map[string]any) map[string]any {
	id := map[string]any{"name": state["name"]}
	if _, ok := typ.(tftypes.Object).AttributeTypes["namespace"]; ok {
		id["namespace"] = state["namespace"]
	}
	return id
}

// sameRead returns "" when a and b are equal field by field: new state and identity (the same
// values), private (bytes; nil and empty alike), diagnostics and deferral; else what differs.
func (rp *readPair) sameRead(typeName string, a, b *tfprotov6.ReadResourceResponse) string {
	var diffs []string
	if !sameDynamic(rp.types[typeName], a.NewState, b.NewState) {
		diffs = append(diffs, "new state")
	}
	var ai, bi *tfprotov6.DynamicValue
	if a.NewIdentity != nil {
		ai = a.NewIdentity.IdentityData
	}
	if b.NewIdentity != nil {
		bi = b.NewIdentity.IdentityData
	}
	if (a.NewIdentity == nil) != (b.NewIdentity == nil) || !sameDynamic(rp.idents[typeName], ai, bi) {
		diffs = append(diffs, "new identity")
	}
	if !bytes.Equal(a.Private, b.Private) {
		diffs = append(diffs, fmt.Sprintf("private %q vs %q", a.Private, b.Private))
	}
	if diagsString(a.Diagnostics) != diagsString(b.Diagnostics) || diagSeverities(a.Diagnostics) != diagSeverities(b.Diagnostics) {
		diffs = append(diffs, fmt.Sprintf("diagnostics %q vs %q", diagsString(a.Diagnostics), diagsString(b.Diagnostics)))
	}
	if !reflect.DeepEqual(a.Deferred, b.Deferred) {
		diffs = append(diffs, fmt.Sprintf("deferred %v vs %v", a.Deferred, b.Deferred))
	}
	return strings.Join(diffs, "; ")
}

// naiveRead is the fast path's answer to req, whether or not it applies.
func naiveRead(req *tfprotov6.ReadResourceRequest) *tfprotov6.ReadResourceResponse {
	resp := &tfprotov6.ReadResourceResponse{NewState: req.CurrentState, NewIdentity: req.CurrentIdentity}
	if len(req.Private) > 0 {
		resp.Private = req.Private
	}
	return resp
}

// readFast sends req to the fast path and returns its response, its decision and the GETs it
// sent to the API server.
func (rp *readPair) readFast(t testing.TB, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, string, int64) {
	t.Helper()
	ctx, cancel := readContext()
	defer cancel()
	before, gets := rp.fast.readDecisionCounts(), rp.api.gets.Load()
	fast, err := rp.fast.ReadResource(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	gets = rp.api.gets.Load() - gets
	for d, n := range rp.fast.readDecisionCounts() {
		if n != before[d] {
			return fast, d, gets
		}
	}
	t.Fatal("the fast path counted no decision")
	return nil, "", 0
}

// readPlain sends req to the framework and returns its response and the GETs it sent.
func (rp *readPair) readPlain(t testing.TB, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, int64) {
	t.Helper()
	ctx, cancel := readContext()
	defer cancel()
	gets := rp.api.gets.Load()
	plain, err := rp.plain.ReadResource(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return plain, rp.api.gets.Load() - gets
}

// readKindCase is what the read corpus knows of one kind: its plan corpus (the states), the
// state's summary attribute and a failed value, a number attribute, and the kind's ops (to
// build the objects the fakeAPI serves).
type readKindCase struct {
	typ             string
	rows            func() []planRow
	summary, failed string
	// number is a number attribute; nested: it is in a nested object (the framework's read of
	// a fraction there raises no error: it makes the value unknown).
	number   string
	nested   bool
	object   func(ctx context.Context, state tftypes.Value, status map[string]any) (map[string]any, error)
	status   map[string]any
	importID string
	// markApplied runs the kind's markApplied over a saved state and the object a wait ended
	// on (markAppliedOf).
	markApplied func(ctx context.Context, state tftypes.Value, u *unstructured.Unstructured, failed bool) (string, bool, error)
}

func readKinds() []readKindCase {
	return []readKindCase{
		{typ: "gantry_performer", rows: performerRows, summary: "phase", failed: "Failed", number: "grpc_port", importID: "default/p1",
			object: objectFrom(NewPerformerResource(), performerOps), markApplied: markAppliedOf(NewPerformerResource(), performerOps),
			status: map[string]any{"observedGeneration": 1, "phase": "Running", "grpcEndpoint": "performer-p1.default.svc.cluster.local:9090",
				"podName": "performer-p1", "serviceName": "performer-p1", "nodeName": "node-1", "lastHandledReconcileAt": ""}},
		{typ: "gantry_executor", rows: executorRows, summary: "phase", failed: "Failed", number: "replicas", importID: "default/e1",
			object: objectFrom(NewExecutorResource(), executorOps), markApplied: markAppliedOf(NewExecutorResource(), executorOps),
			status: map[string]any{"observedGeneration": 1, "phase": "Running", "replicas": 1, "readyReplicas": 1, "currentRevision": "abc",
				"lastGoodRevision": "abc", "configMapName": "executor-e1-abc"}},
		{typ: "gantry_aggregator", rows: aggregatorRows, summary: "phase", failed: "Failed", number: "management_port", importID: "default/a1",
			object: objectFrom(NewAggregatorResource(), aggregatorOps), markApplied: markAppliedOf(NewAggregatorResource(), aggregatorOps),
			status: map[string]any{"observedGeneration": 1, "phase": "Running", "readyReplicas": 1, "revision": "abc",
				"configSecretName": "aggregator-a1-config", "managementEndpoint": "aggregator-a1.default.svc.cluster.local:9000"}},
		{typ: "gantry_package_set", rows: packageSetRows, summary: "status", failed: "erroring", number: "priority", importID: "gpu-drivers",
			object: objectFrom(NewPackageSetResource(), packageSetOps), markApplied: markAppliedOf(NewPackageSetResource(), packageSetOps),
			status: map[string]any{"observedGeneration": 1, "status": "complete", "completeNodes": "3/3", "nodeStatus": map[string]any{"node-1": "complete"}}},
		{typ: "gantry_workspace", rows: workspaceRows, summary: "state", failed: "NotReady", number: "resource.count", nested: true, importID: "default/w1",
			object: objectFrom(NewWorkspaceResource(), workspaceOps), markApplied: markAppliedOf(NewWorkspaceResource(), workspaceOps),
			status: map[string]any{"observedGeneration": 1, "state": "Ready", "mode": "Inference", "workerNodes": []any{"node-1"},
				"endpoint": "workspace-w1.default.svc.cluster.local:8000", "lastHandledReconcileAt": "",
				"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Ready", "message": "",
					"lastTransitionTime": "2026-01-01T00:00:00Z", "observedGeneration": 1}}}},
	}
}

// objectFrom returns what builds the object of state (a value of r's schema) as the API server
// holds it: the kind's expand of the state, with metadata (resourceVersion objectRV) and status.
func objectFrom[M any](r resource.Resource, ops *kindOps[M]) func(context.Context, tftypes.Value, map[string]any) (map[string]any, error) {
	return func(ctx context.Context, state tftypes.Value, status map[string]any) (map[string]any, error) {
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		var m M
		if d := (tfsdk.State{Schema: sr.Schema, Raw: state}).Get(ctx, &m); d.HasError() {
			return nil, fmt.Errorf("%v", d)
		}
		u, err := ops.expand(&m)
		if err != nil {
			return nil, err
		}
		u.SetResourceVersion(objectRV)
		u.SetUID(k8stypes.UID("uid-" + u.GetName()))
		u.SetGeneration(1)
		u.Object["status"] = status
		return u.Object, nil
	}
}

// planPrior returns the prior state of the row called name in rows.
func planPrior(rows []planRow, name string) map[string]any {
	for _, r := range rows {
		if r.name == name {
			return r.prior
		}
	}
	panic("no plan row " + name)
}

// readObjects are the objects the fakeAPI serves for the read corpus: each kind's state after
// an apply, and the one with defaults set to other values.
func readObjects(t testing.TB, types map[string]tftypes.Type) []map[string]any {
	t.Helper()
	var objects []map[string]any
	for _, k := range readKinds() {
		rows := k.rows()
		for _, st := range []map[string]any{planPrior(rows, "unchanged, defaults unset"), planPrior(rows, "unchanged, defaults set to other values")} {
			o, err := k.object(context.Background(), tfv(types[k.typ], st), k.status)
			if err != nil {
				t.Fatalf("%s: the object of %v: %v", k.typ, st, err)
			}
			objects = append(objects, o)
		}
	}
	return objects
}

// readKindRows are the rows of kind k (see fastpath_read.go for the decisions).
func readKindRows(k readKindCase) []readRow {
	rows := k.rows()
	state, set := planPrior(rows, "unchanged, defaults unset"), planPrior(rows, "unchanged, defaults set to other values")
	namespaced := state["namespace"] != nil
	id := map[string]any{"name": state["name"]}
	if namespaced {
		id["namespace"] = state["namespace"]
	}
	// The import stub's shape (id, name and namespace; a package set's id alone names it).
	// States whose name is null or empty are not in the corpus: the framework's Read of one
	// retries its GET until the request ends (client-go refuses an empty name before asking,
	// and wait.Registry.get counts that error as transient); the fast path falls back on them
	// (decode).
	stub := map[string]any{"id": state["id"], "name": state["name"], "namespace": state["namespace"]}
	if !namespaced {
		stub = map[string]any{"id": state["id"]}
	}
	return []readRow{
		{name: "unchanged", state: state, private: privRead, want: planAnswered},
		{name: "unchanged, defaults set to other values", state: set, private: privRead, want: planAnswered},
		{name: "unchanged, the provider's other key beside the mark", state: state, private: privMarkOther, want: planAnswered},
		{name: "unchanged, the client allows deferrals", state: state, private: privRead, canDefer: true, want: planAnswered},
		{name: "unchanged, " + k.summary + " " + k.failed + " in state", state: with(state, k.summary, k.failed), private: privRead, want: planAnswered},
		{name: "unchanged, " + k.summary + " null in state", state: with(state, k.summary, nil), private: privRead, want: planAnswered},
		{name: "unchanged, labels empty", state: with(state, "labels", map[string]any{}), private: privRead, want: planAnswered},
		{name: "unchanged, a mark with a field it does not know", state: state, private: privMarkExtra, want: planAnswered},
		{name: "unchanged, the identity names another object (the framework keeps it too)", state: state, private: privRead,
			identity: with(id, "name", "other"), want: planAnswered},
		{name: "resourceVersion changed", state: state, private: privMarkOld, want: fbChanged, differs: true},
		{name: "gone (404)", state: with(state, "name", "gone-"+strings.TrimPrefix(k.typ, "gantry_")), private: privRead, want: rfGone, differs: true},
		{name: "API error (403)", state: with(state, "name", "forbidden-"+strings.TrimPrefix(k.typ, "gantry_")), private: privRead, want: rfAPIError,
			differs: true, wantDiags: true},
		{name: "private: missing", state: state, want: fbPrivate, differs: true},
		{name: "private: a mark of another provider version", state: state, private: privMarkVersion, want: fbPrivate, differs: true},
		{name: "private: a mark without resourceVersion", state: state, private: privMarkNoRV, want: fbPrivate, differs: true},
		{name: "private: a mark that does not decode", state: state, private: privMarkBadJSON, want: fbPrivate, differs: true},
		{name: "private: the import marker beside the mark", state: state, private: privFramework, want: fbPrivate, differs: true},
		{name: "private: another framework key beside the mark (conservative)", state: state, private: privMarkFwKey, want: fbPrivate},
		{name: "private: spaced", state: state, private: privSpaced, want: fbPrivate, differs: true},
		{name: "private: empty object", state: state, private: privEmpty, want: fbPrivate, differs: true},
		{name: "private: terraform-plugin-sdk's", state: state, private: privSDK, want: fbPrivate, differs: true},
		{name: "private: an empty value", state: state, private: privEmptyValue, want: fbPrivate, differs: true, wantDiags: true},
		{name: "private: not JSON", state: state, private: "{", want: fbPrivate, differs: true, wantDiags: true},
		{name: "no identity (Terraform 1.8)", state: state, private: privRead, noIdentity: true, want: planAnswered, differs: true},
		{name: "identity without data", state: state, private: privRead, want: fbIdentity, differs: true,
			edit: func(r *tfprotov6.ReadResourceRequest) { r.CurrentIdentity.IdentityData = nil }},
		{name: "identity null", state: state, private: privRead, want: fbIdentity, differs: true,
			edit: func(r *tfprotov6.ReadResourceRequest) {
				r.CurrentIdentity.IdentityData = &tfprotov6.DynamicValue{MsgPack: []byte{0xc0}}
			}},
		{name: "identity wholly null", state: state, private: privRead, identity: map[string]any{}, want: fbIdentity, differs: true},
		{name: "identity not wholly known", state: state, private: privRead, identity: map[string]any{"name": unknown}, want: fbIdentity, unsure: true},
		{name: "identity JSON-encoded (conservative)", state: state, private: privRead, want: fbIdentity, edit: func(r *tfprotov6.ReadResourceRequest) {
			b, err := json.Marshal(id)
			if err != nil {
				panic(err)
			}
			r.CurrentIdentity.IdentityData = &tfprotov6.DynamicValue{JSON: b}
		}},
		{name: "identity undecodable", state: state, private: privRead, want: fbIdentity, differs: true, wantDiags: true, edit: func(r *tfprotov6.ReadResourceRequest) {
			r.CurrentIdentity.IdentityData = &tfprotov6.DynamicValue{MsgPack: []byte{0x81, 0xa1, 'x', 0x01}}
		}},
		{name: "state JSON-encoded (conservative)", state: state, private: privRead, want: fbEncoding, edit: func(r *tfprotov6.ReadResourceRequest) {
			b, err := json.Marshal(state)
			if err != nil {
				panic(err)
			}
			r.CurrentState = &tfprotov6.DynamicValue{JSON: b}
		}},
		{name: "state missing", state: state, private: privRead, want: fbEncoding, differs: true, wantDiags: true,
			edit: func(r *tfprotov6.ReadResourceRequest) { r.CurrentState = nil }},
		{name: "state undecodable", state: state, private: privRead, want: fbDecode, differs: true, wantDiags: true, edit: func(r *tfprotov6.ReadResourceRequest) {
			r.CurrentState = &tfprotov6.DynamicValue{MsgPack: []byte{0x81, 0xa1, 'x', 0x01}}
		}},
		{name: "state not wholly known", state: with(state, "labels", unknown), private: privRead, want: fbDecode, unsure: true},
		{name: "import-like: only the id (and name, namespace), no private state, no identity", state: stub, noIdentity: true, want: fbPrivate, differs: true},
		{name: "import-like: only the id (and name, namespace), no private state", state: stub, identity: id, want: fbPrivate, differs: true},
		{name: "import-like: only the id (and name, namespace), the mark", state: stub, identity: id, private: privRead, want: planAnswered},
		{name: k.number + " a fraction", state: with(state, k.number, 2.5), private: privRead, want: fbValue, differs: true, wantDiags: !k.nested},
		{name: k.number + " beyond int64", state: with(state, k.number, 1e30), private: privRead, want: fbValue, differs: true, wantDiags: !k.nested},
		{name: "unknown type", typ: k.typ + "_nope", state: state, private: privRead, want: fbType, differs: true, wantDiags: true},
		{name: "provider deferred", state: state, private: privRead, mode: readDeferred, canDefer: true, want: fbDeferred, differs: true},
		{name: "provider not configured", state: state, private: privRead, mode: readUnconfigured, want: rfUnconfigured, differs: true, wantDiags: true},
	}
}

// readExtraRows are the rows of one kind only.
func readExtraRows(typ string, state map[string]any, rows []planRow) []readRow {
	switch typ {
	case "gantry_performer":
		return []readRow{
			{name: "affinity JSON", state: with(state, "affinity", `{"nodeAffinity":{}}`), private: privRead, want: planAnswered},
			{name: "affinity not JSON", state: with(state, "affinity", "{"), private: privRead, want: fbValue, differs: true, wantDiags: true},
			{name: "import-shaped state (no candidate count, no timeouts)", state: planPrior(rows, "import-shaped state (refreshed: no candidate count, no timeouts)"),
				private: privRead, want: planAnswered},
		}
	case "gantry_executor":
		return []readRow{
			{name: "write-only version alone in state", state: with(state, "operator_keys.private_keys_wo_version", 1), private: privRead, want: planAnswered},
			{name: "write-only key in state", state: with(state, "operator_keys.ecdsa_private_key_wo", "0xkey"), private: privRead, want: fbWriteOnly, differs: true},
			{name: "rolled back: failed_revision in state", state: with(state, "failed_revision", "def"), private: privRead, want: planAnswered},
		}
	case "gantry_package_set":
		return []readRow{
			{name: "unchanged, name null (the id names it)", state: with(state, "name", nil), identity: map[string]any{"name": state["name"]}, private: privRead,
				want: planAnswered},
			{name: "the version in state quarantined", state: with(state, "quarantined_versions", []any{"driver@550.1"}), private: privRead, want: planAnswered},
		}
	case "gantry_workspace":
		return []readRow{
			{name: "tuning, Succeeded", state: planPrior(rows, "tuning, Succeeded"), private: privRead, want: planAnswered},
			{name: "tuning, Running", state: planPrior(rows, "tuning, Running"), private: privRead, want: planAnswered},
		}
	}
	return nil
}

// readCorpus is the differential test's corpus: every kind's rows, named and typed.
func readCorpus() []readRow {
	var all []readRow
	for _, k := range readKinds() {
		rows := append(readKindRows(k), readExtraRows(k.typ, planPrior(k.rows(), "unchanged, defaults unset"), k.rows())...)
		for _, r := range rows {
			if r.typ == "" {
				r.typ = k.typ
			}
			r.name = k.typ + ": " + r.name
			all = append(all, r)
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })
	return all
}

// readTestPairs serves the read corpus's objects and returns a readPair of every mode.
func readTestPairs(t testing.TB) map[readMode]*readPair {
	t.Helper()
	api := newFakeAPI(t, nil, "forbidden-performer", "forbidden-executor", "forbidden-aggregator", "forbidden-package_set", "forbidden-workspace")
	pairs := map[readMode]*readPair{}
	for _, m := range []readMode{readConfigured, readDeferred, readUnconfigured} {
		pairs[m] = newReadPair(t, api, m)
	}
	api.add(readObjects(t, pairs[readConfigured].types))
	return pairs
}

// add serves objects too (before the first request only: the informers never hear of them).
func (a *fakeAPI) add(objects []map[string]any) {
	for _, o := range objects {
		u := unstructured.Unstructured{Object: o}
		res := map[string]string{"Performer": "performers", "Executor": "executors", "Aggregator": "aggregators", "PackageSet": "packagesets", "Workspace": "workspaces"}[u.GetKind()]
		a.objects[res+"/"+u.GetNamespace()+"/"+u.GetName()] = o
	}
}

// readChecks holds what the differential test counts.
type readChecks struct {
	answered map[string]int
}

// compare reads req with both servers and checks the row's expectations; it returns the
// framework's response.
func (rp *readPair) compare(t *testing.T, r readRow, req *tfprotov6.ReadResourceRequest, c *readChecks) *tfprotov6.ReadResourceResponse {
	t.Helper()
	fast, decision, fastGets := rp.readFast(t, req)
	plain, plainGets := rp.readPlain(t, req)
	typeName := strings.TrimSuffix(r.typ, "_nope")
	if decision != r.want {
		t.Errorf("%s: the fast path decided %q, want %q", r.name, decision, r.want)
	}
	if d := rp.sameRead(typeName, fast, plain); d != "" {
		t.Errorf("%s (%s): the fast path's response differs from the framework's: %s\n%s", r.name, decision, d, diagsString(plain.Diagnostics))
	}
	if fastGets > plainGets {
		t.Errorf("%s (%s): the fast path sent %d GETs to the API server, the framework alone %d", r.name, decision, fastGets, plainGets)
	}
	if (decision == rfGone || decision == rfAPIError) && fastGets != 1 {
		t.Errorf("%s (%s): the fast path sent %d GETs, want 1 (its own, handed to readInto)", r.name, decision, fastGets)
	}
	naiveDiff := rp.sameRead(typeName, naiveRead(req), plain)
	switch {
	case r.unsure:
	case r.differs && naiveDiff == "":
		t.Errorf("%s: the framework answers with the prior state, private state and identity: the row shows no need to fall back", r.name)
	case !r.differs && naiveDiff != "":
		t.Errorf("%s: the framework's answer differs from the prior state (%s): mark the row differs", r.name, naiveDiff)
	}
	if got := diagsHaveError(plain.Diagnostics); got != r.wantDiags && !r.unsure {
		t.Errorf("%s: the framework's read has errors: %v, want %v: %s", r.name, got, r.wantDiags, diagsString(plain.Diagnostics))
	}
	if decision == planAnswered {
		c.answered[r.typ]++
		if !bytes.Equal(fast.NewState.MsgPack, plain.NewState.MsgPack) || !bytes.Equal(fast.NewIdentity.IdentityData.MsgPack, plain.NewIdentity.IdentityData.MsgPack) {
			t.Errorf("%s: the framework encodes the new state or identity differently", r.name)
		}
	}
	return plain
}

func TestReadFastPathDifferential(t *testing.T) {
	pairs := readTestPairs(t)
	c := &readChecks{answered: map[string]int{}}
	corpus := readCorpus()
	for _, r := range corpus {
		rp := pairs[r.mode]
		rp.compare(t, r, rp.request(t, r), c)
	}
	// Chains: an import (the framework's ImportResourceState: id, name, namespace, the import
	// marker), its first read (mapped by the framework), the read after it (answered); and the
	// read after a resourceVersion change.
	rp := pairs[readConfigured]
	chains := 0
	for _, k := range readKinds() {
		imp, err := rp.plain.ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: k.typ, ID: k.importID})
		if err != nil || diagsHaveError(imp.Diagnostics) || len(imp.ImportedResources) != 1 {
			t.Fatalf("%s: import %s: %v %s", k.typ, k.importID, err, diagsString(imp.Diagnostics))
		}
		ir := imp.ImportedResources[0]
		first := readRow{name: k.typ + ": chain: the read after an import", typ: k.typ, want: fbPrivate, differs: true}
		resp := rp.compare(t, first, &tfprotov6.ReadResourceRequest{TypeName: k.typ, CurrentState: ir.State, Private: ir.Private, CurrentIdentity: ir.Identity}, c)
		next := readRow{name: k.typ + ": chain: the read after the read after an import", typ: k.typ, want: planAnswered}
		rp.compare(t, next, &tfprotov6.ReadResourceRequest{TypeName: k.typ, CurrentState: resp.NewState, Private: resp.Private, CurrentIdentity: resp.NewIdentity}, c)
		changed := readRow{name: k.typ + ": chain: resourceVersion changed", typ: k.typ, state: planPrior(k.rows(), "unchanged, defaults unset"), private: privMarkOld, want: fbChanged, differs: true}
		resp = rp.compare(t, changed, rp.request(t, changed), c)
		after := readRow{name: k.typ + ": chain: the read after a resourceVersion change", typ: k.typ, want: planAnswered}
		rp.compare(t, after, &tfprotov6.ReadResourceRequest{TypeName: k.typ, CurrentState: resp.NewState, Private: resp.Private, CurrentIdentity: resp.NewIdentity}, c)
		chains += 4
	}
	counts := map[string]int64{}
	for _, rp := range pairs {
		for d, n := range rp.fast.readDecisionCounts() {
			counts[d] += n
		}
	}
	for _, d := range readDecisions {
		if counts[d] == 0 {
			t.Errorf("no row of the corpus took decision %q", d)
		}
	}
	for typ := range fastReadReviewed {
		if c.answered[typ] == 0 {
			t.Errorf("no row of %s was answered by the fast path", typ)
		}
	}
	t.Logf("corpus: %d rows and %d chained reads; decisions: %v; answered per type: %v; GETs: %d", len(corpus), chains, counts, c.answered, pairs[readConfigured].api.gets.Load())
}

// TestReadFastPathTypes: every Gantry resource type is one the read fast path answers (a
// change that makes one unprovable fails here: review it, add rows), the switches turn each
// fast path off alone, and a Read that is not readInto is refused.
func TestReadFastPathTypes(t *testing.T) {
	api := newFakeAPI(t, nil)
	rp := newReadPair(t, api, readUnconfigured)
	if len(rp.fast.readSkipped) > 0 {
		t.Errorf("types the read fast path does not answer: %v", rp.fast.readSkipped)
	}
	for typ := range fastReadReviewed {
		if _, ok := rp.fast.reads[typ]; !ok {
			t.Errorf("%s: not answered by the read fast path", typ)
		}
	}
	if _, err := readKindOf("gantry_performer", customReadResource{}); err == nil {
		t.Error("a resource whose Read is not readInto: accepted")
	}
	if _, err := readKindOf("gantry_other", NewPerformerResource()); err == nil {
		t.Error("a type not reviewed: accepted")
	}
	for _, c := range []struct {
		env            string
		noPlan, noRead bool
	}{{envNoPlanFastPath, true, false}, {envNoReadFastPath, false, true}} {
		t.Setenv(envNoPlanFastPath, "")
		t.Setenv(envNoReadFastPath, "")
		t.Setenv(c.env, "1")
		p := New("test")()
		f, ok := PlanFastPath(providerserver.NewProtocol6(p)(), p).(*planFastPath)
		if !ok || f.noPlan != c.noPlan || f.noRead != c.noRead {
			t.Errorf("%s=1: wrapped %v, noPlan %v, noRead %v", c.env, ok, f != nil && f.noPlan, f != nil && f.noRead)
		}
	}
	t.Setenv(envNoPlanFastPath, "1")
	t.Setenv(envNoReadFastPath, "1")
	p := New("test")()
	if f, ok := PlanFastPath(providerserver.NewProtocol6(p)(), p).(*planFastPath); !ok || f.noUpgrade {
		t.Error("plan and read fast paths off: the upgrade fast path is off too")
	}
	t.Setenv(envNoUpgradeFastPath, "1")
	p = New("test")()
	if _, ok := PlanFastPath(providerserver.NewProtocol6(p)(), p).(*planFastPath); ok {
		t.Error("every fast path off: still wrapped")
	}
}

type customReadResource struct{ resource.Resource }

// TestReadFastPathOff: with GANTRY_NO_READ_FAST_PATH set, every refresh reaches the framework
// (no decision counted) and the answer is the framework's.
func TestReadFastPathOff(t *testing.T) {
	api := newFakeAPI(t, nil)
	rp := newReadPair(t, api, readConfigured)
	api.add(readObjects(t, rp.types))
	rp.fast.noRead = true
	k := readKinds()[0]
	r := readRow{name: "unchanged", typ: k.typ, state: planPrior(k.rows(), "unchanged, defaults unset"), private: privRead}
	req := rp.request(t, r)
	fast, err := rp.fast.ReadResource(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := rp.readPlain(t, req)
	if d := rp.sameRead(k.typ, fast, plain); d != "" {
		t.Errorf("differs from the framework: %s", d)
	}
	for d, n := range rp.fast.readDecisionCounts() {
		if n != 0 {
			t.Errorf("decision %q counted %d times with the read fast path off", d, n)
		}
	}
	if FastPathDecisions() == nil {
		t.Error("FastPathDecisions: nil with a fast path built")
	}
}

// fetchedFor is what hands readInto the fast path's read: only for the same clients, kind,
// namespace and name.
func TestReadFastPathFetchedFor(t *testing.T) {
	d, other := &providerData{}, &providerData{}
	f := &fetchedObject{data: d, spec: wait.Performer, namespace: "default", name: "p1"}
	ctx := context.WithValue(context.Background(), fetchedKey{}, f)
	for _, c := range []struct {
		what            string
		ctx             context.Context
		data            *providerData
		spec            wait.Spec
		namespace, name string
		want            bool
	}{
		{"the same", ctx, d, wait.Performer, "default", "p1", true},
		{"no read made", context.Background(), d, wait.Performer, "default", "p1", false},
		{"other clients", ctx, other, wait.Performer, "default", "p1", false},
		{"another kind", ctx, d, wait.Executor, "default", "p1", false},
		{"another namespace", ctx, d, wait.Performer, "gpu", "p1", false},
		{"another name", ctx, d, wait.Performer, "default", "p2", false},
	} {
		if _, ok := fetchedFor(c.ctx, c.data, c.spec, c.namespace, c.name); ok != c.want {
			t.Errorf("%s: %v, want %v", c.what, ok, c.want)
		}
	}
}

// BenchmarkReadResource: the refresh of an unchanged gantry_performer (the bench's
// configuration's state, the read mark in private state, an identity), by the framework and
// by the fast path; and one the fast path reads to the end and leaves to the framework (the
// resourceVersion changed: the object is mapped again), its worst case.
//
//	go test ./provider -run '^$' -bench ReadResource -benchmem
func BenchmarkReadResource(b *testing.B) {
	api := newFakeAPI(b, nil)
	rp := newReadPair(b, api, readConfigured)
	api.add(readObjects(b, rp.types))
	k := readKinds()[0]
	row := readRow{name: "unchanged", typ: k.typ, state: planPrior(k.rows(), "unchanged, defaults unset"), private: privRead}
	changed := row
	changed.private = privMarkOld
	ctx := context.Background()
	for _, c := range []struct {
		name string
		srv  tfprotov6.ProviderServer
		row  readRow
		want string
	}{
		{"framework", rp.plain, row, ""},
		{"fastpath", rp.fast, row, planAnswered},
		{"framework/changed", rp.plain, changed, ""},
		{"fastpath/changed", rp.fast, changed, fbChanged},
	} {
		req := rp.request(b, c.row)
		if _, d, _ := rp.readFast(b, req); c.want != "" && d != c.want {
			b.Fatalf("%s: the fast path decided %q, want %q", c.name, d, c.want)
		}
		rp.readPlain(b, req)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				resp, err := c.srv.ReadResource(ctx, req)
				if err != nil || len(resp.Diagnostics) > 0 {
					b.Fatal(err, resp.Diagnostics)
				}
			}
		})
	}
}

// memPrivate is a writable private state for markApplied.
type memPrivate map[string][]byte

func (p memPrivate) GetKey(_ context.Context, key string) ([]byte, diag.Diagnostics) {
	return p[key], nil
}

func (p memPrivate) SetKey(_ context.Context, key string, value []byte) diag.Diagnostics {
	p[key] = value
	return nil
}

// markAppliedOf returns what runs ops.markApplied as a create or update ends: state (a value of
// r's schema) is the state saved, u the object the wait ended on, failed whether the apply
// returned errors. It returns the read mark then in private state (its resourceVersion) and
// whether there is one.
func markAppliedOf[M any](r resource.Resource, ops *kindOps[M]) func(context.Context, tftypes.Value, *unstructured.Unstructured, bool) (string, bool, error) {
	return func(ctx context.Context, state tftypes.Value, u *unstructured.Unstructured, failed bool) (string, bool, error) {
		var sr resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &sr)
		st := tfsdk.State{Schema: sr.Schema, Raw: state}
		var m M
		if d := st.Get(ctx, &m); d.HasError() {
			return "", false, fmt.Errorf("%v", d)
		}
		data := &providerData{version: "test"}
		priv := memPrivate{}
		ops.markApplied(ctx, data, &st, priv, &m, u, failed)
		rv, ok := readMarkOf(ctx, data, priv)
		return rv, ok, nil
	}
}

// TestMarkApplied: a create or update leaves the read mark of the object its wait ended on
// only when a refresh would map that object to the state saved, so the first refresh after an
// apply is answered by the fast path (or readUnchanged) with what the framework's mapping
// would return. For every kind: the state the framework maps from the served object (the read
// after an import) is marked at the object's resourceVersion; the same state is not marked
// when the apply failed, nor when the object's summary differs from the state's (the saved
// state is not the object's mapping); and for each kind's applied states (the corpus's
// "unchanged" priors), a mark is left exactly where the framework's own refresh without a mark
// returns the state as it is.
func TestMarkApplied(t *testing.T) {
	rp := readTestPairs(t)[readConfigured]
	ctx := context.Background()
	for _, k := range readKinds() {
		imp, err := rp.plain.ImportResourceState(ctx, &tfprotov6.ImportResourceStateRequest{TypeName: k.typ, ID: k.importID})
		if err != nil || diagsHaveError(imp.Diagnostics) || len(imp.ImportedResources) != 1 {
			t.Fatalf("%s: import %s: %v %s", k.typ, k.importID, err, diagsString(imp.Diagnostics))
		}
		ir := imp.ImportedResources[0]
		read, _ := rp.readPlain(t, &tfprotov6.ReadResourceRequest{TypeName: k.typ, CurrentState: ir.State, Private: ir.Private, CurrentIdentity: ir.Identity})
		mapped, err := read.NewState.Unmarshal(rp.types[k.typ])
		if err != nil {
			t.Fatal(err)
		}
		u := servedObject(t, rp.api, k)
		if rv, ok, err := k.markApplied(ctx, mapped, u, false); err != nil || !ok || rv != objectRV {
			t.Errorf("%s: the object's own mapping saved: mark %q %v (%v), want %q", k.typ, rv, ok, err, objectRV)
		}
		if _, ok, err := k.markApplied(ctx, mapped, u, true); err != nil || ok {
			t.Errorf("%s: a failed apply left a read mark (%v)", k.typ, err)
		}
		other := u.DeepCopy()
		if err := unstructured.SetNestedField(other.Object, k.failed, "status", k.summary); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := k.markApplied(ctx, mapped, other, false); err != nil || ok {
			t.Errorf("%s: status.%s %s on the object, not in the state saved, left a read mark (%v)", k.typ, k.summary, k.failed, err)
		}
		for _, name := range []string{"unchanged, defaults unset", "unchanged, defaults set to other values"} {
			state := tfv(rp.types[k.typ], planPrior(k.rows(), name))
			_, ok, err := k.markApplied(ctx, state, u, false)
			if err != nil {
				t.Fatalf("%s: %s: %v", k.typ, name, err)
			}
			row := readRow{name: name, typ: k.typ, state: planPrior(k.rows(), name), private: privMarkOld}
			plain, _ := rp.readPlain(t, rp.request(t, row))
			same := sameDynamic(rp.types[k.typ], plain.NewState, dv(t, rp.types[k.typ], state))
			if ok != same {
				t.Errorf("%s: %s: marked %v, but the framework's refresh maps the object to the state saved: %v", k.typ, name, ok, same)
			}
			t.Logf("%s: %s: marked %v, the refresh's mapping equal %v", k.typ, name, ok, same)
		}
	}
}

// servedObject is the object the fakeAPI serves under k's import ID, decoded from JSON as a
// client reads it.
func servedObject(t *testing.T, api *fakeAPI, k readKindCase) *unstructured.Unstructured {
	t.Helper()
	ns, name, found := strings.Cut(k.importID, "/")
	if !found {
		ns, name = "", k.importID
	}
	res := map[string]string{"gantry_performer": "performers", "gantry_executor": "executors", "gantry_aggregator": "aggregators",
		"gantry_package_set": "packagesets", "gantry_workspace": "workspaces"}[k.typ]
	o, ok := api.objects[res+"/"+ns+"/"+name]
	if !ok {
		t.Fatalf("%s: the fakeAPI serves no %s", k.typ, k.importID)
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return u
}
