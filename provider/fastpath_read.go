package provider

// The ReadResource fast path: the refresh of an object whose resourceVersion is still the one
// recorded in private state by the provider's last read or write (readUnchanged) is answered
// below terraform-plugin-framework, whose Read would only return the prior state after decoding,
// copying and semantic-equality passes. ReadResource answers only when the framework's answer is
// certain (prior state, private state and identity; no diagnostics or deferral) and otherwise
// falls back on any reason in readDecisions. The object is read (readLive) last, and a read made
// before a fallback rides the context to readInto (fetchedFor), so no second request is made.
// fastpath_read_test.go and its fuzz target hold it to the framework's answer field by field.
// Every fallback reason and why the rest is safe: FASTPATHS.md.

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The read fast path's own fallback reasons (the others are the plan's, fastpath.go).
const (
	rfUnconfigured = "unconfigured"
	rfAPIError     = "api-error"
	rfGone         = "gone"
)

// readDecisions lists every decision of the read fast path, in the order it checks them.
var readDecisions = []string{fbType, fbDeferred, rfUnconfigured, fbEncoding, fbPrivate, fbIdentity, fbDecode, fbValue, fbWriteOnly,
	rfAPIError, rfGone, fbChanged, planAnswered}

// fastReadReviewed are the resource types whose Read was read for the fast path: it is
// kindResource.Read (readInto), not overridden. A type added here needs its rows in the
// differential test. gantry_package_set's and gantry_workspace's Reads (kinds with an adopter:
// readAdopting, adopt.go) are readInto except on the Read right after an import (private key
// adoptPendingKey, which the fast path never answers: no read mark), of an object that does
// not exist (never answered either).
var fastReadReviewed = map[string]bool{"gantry_performer": true, "gantry_executor": true, "gantry_aggregator": true, "gantry_package_set": true, "gantry_workspace": true}

// readKind gives the read fast path the kind readInto reads.
func (r *kindResource[M]) readKind() wait.Spec { return r.ops.spec }

// configuredData returns what the last Configure handed the resources, nil before one or after
// one that failed.
func (p *gantryProvider) configuredData() *providerData { return p.configured.Load() }

// readKindOf returns the kind resource r (type name) reads, or an error saying why the read
// fast path does not answer its refreshes.
func readKindOf(name string, r resource.Resource) (wait.Spec, error) {
	rk, ok := r.(interface{ readKind() wait.Spec })
	if !ok || !fastReadReviewed[name] {
		return wait.Spec{}, errors.New("its Read is not one the read fast path knows")
	}
	return rk.readKind(), nil
}

// readDecisionCounts returns how many refreshes each decision took.
func (f *planFastPath) readDecisionCounts() map[string]int64 {
	out := make(map[string]int64, len(f.readCounts))
	for d, n := range f.readCounts {
		out[d] = n.Load()
	}
	return out
}

// lastFastPath is the fast path PlanFastPath built last: the provider process serves one.
var lastFastPath atomic.Pointer[planFastPath]

// FastPathDecisions returns how many plans ("plan") and refreshes ("read") each decision of
// the fast paths took in this process (decision → count; see fastpath.go and
// fastpath_read.go), or nil when no fast path was built (both turned off).
func FastPathDecisions() map[string]map[string]int64 {
	f := lastFastPath.Load()
	if f == nil {
		return nil
	}
	return map[string]map[string]int64{"plan": f.decisions(), "read": f.readDecisionCounts(), "upgrade": f.upgradeDecisionCounts()}
}

// ReadResource answers the refresh of an unchanged object itself (see above); every other
// refresh reaches the framework, with the object when the fast path read it.
func (f *planFastPath) ReadResource(ctx context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	if f.noRead {
		return f.fullServer.ReadResource(ctx, req)
	}
	why, fetched := f.decideRead(ctx, req)
	identity := req.CurrentIdentity
	if why == planAnswered && identity == nil {
		// Terraform before 1.12 sends no identity; readInto sets the object's.
		if identity = f.stateIdentity(req); identity == nil {
			why = fbIdentity
		}
	}
	f.readCounts[why].Add(1)
	if why != planAnswered {
		if fetched != nil {
			ctx = context.WithValue(ctx, fetchedKey{}, fetched)
		}
		return f.fullServer.ReadResource(ctx, req)
	}
	return &tfprotov6.ReadResourceResponse{NewState: req.CurrentState, NewIdentity: identity, Private: req.Private}, nil
}

// stateIdentity is the identity readInto sets (setIdentity) for the object req's state names:
// name, and namespace when the kind is namespaced and it is not empty (null otherwise); nil
// when the state does not decode or the identity cannot be encoded.
func (f *planFastPath) stateIdentity(req *tfprotov6.ReadResourceRequest) *tfprotov6.ResourceIdentityData {
	t, spec := f.types[req.TypeName], f.reads[req.TypeName]
	state, err := req.CurrentState.Unmarshal(t.typ)
	obj, ok := t.identity.(tftypes.Object)
	if err != nil || !ok {
		return nil
	}
	namespace, name := stateKeyOf(state, spec.Namespaced)
	attrs := map[string]tftypes.Value{}
	for k := range obj.AttributeTypes {
		switch {
		case k == "name":
			attrs[k] = tftypes.NewValue(tftypes.String, name)
		case k == "namespace" && namespace != "":
			attrs[k] = tftypes.NewValue(tftypes.String, namespace)
		default:
			attrs[k] = tftypes.NewValue(obj.AttributeTypes[k], nil)
		}
	}
	dv, err := tfprotov6.NewDynamicValue(t.identity, tftypes.NewValue(t.identity, attrs))
	if err != nil {
		return nil
	}
	return &tfprotov6.ResourceIdentityData{IdentityData: &dv}
}

// decideRead returns planAnswered when the fast path answers req, else why it falls back and,
// when it read the object, that read (for readInto).
func (f *planFastPath) decideRead(ctx context.Context, req *tfprotov6.ReadResourceRequest) (string, *fetchedObject) {
	t := f.types[req.TypeName]
	spec, known := f.reads[req.TypeName] // only types in f.types
	var data *providerData
	if f.configured != nil {
		data = f.configured()
	}
	switch {
	case !known:
		return fbType, nil
	case f.deferred.Load():
		return fbDeferred, nil
	case data == nil:
		return rfUnconfigured, nil
	case !msgpackOnly(req.CurrentState):
		return fbEncoding, nil
	}
	priv, ok := markedPrivate(ctx, data, req.Private)
	if !ok {
		return fbPrivate, nil
	}
	if req.CurrentIdentity != nil && !t.readIdentity(req.CurrentIdentity) {
		return fbIdentity, nil
	}
	state, err := req.CurrentState.Unmarshal(t.typ)
	if err != nil || state.IsNull() || !state.IsFullyKnown() {
		return fbDecode, nil
	}
	namespace, name := stateKeyOf(state, spec.Namespaced)
	switch {
	case name == "":
		return fbDecode, nil
	case !wholeNumbers(state) || !t.validJSON(state):
		return fbValue, nil
	case !t.writeOnlyNull(state):
		return fbWriteOnly, nil
	}
	u, diags := readLive(ctx, data, spec, namespace, name)
	fetched := &fetchedObject{data: data, spec: spec, namespace: namespace, name: name, u: u, diags: diags}
	switch {
	case len(diags) > 0:
		return rfAPIError, fetched
	case u == nil:
		return rfGone, fetched
	case !readUnchanged(ctx, data, priv, u):
		return fbChanged, fetched
	}
	return planAnswered, nil
}

// markedPrivate returns private state b as the provider's keys and true when the framework
// would return b byte for byte (canonicalPrivate, no framework key) and it holds a read mark of
// this provider version with a resourceVersion (readMarkOf); nil and false otherwise.
func markedPrivate(ctx context.Context, data *providerData, b []byte) (privateMap, bool) {
	if len(b) == 0 || !canonicalPrivate(b) {
		return nil, false
	}
	var m map[string][]byte
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	for k := range m {
		if strings.HasPrefix(k, ".") {
			return nil, false
		}
	}
	if rv, ok := readMarkOf(ctx, data, privateMap(m)); !ok || rv == "" {
		return nil, false
	}
	return m, true
}

// privateMap is decoded provider private state, read only (privateState for readMarkOf and
// readUnchanged).
type privateMap map[string][]byte

func (p privateMap) GetKey(_ context.Context, key string) ([]byte, diag.Diagnostics) {
	return p[key], nil
}

// SetKey refuses: the fast path never writes private state.
func (p privateMap) SetKey(context.Context, string, []byte) diag.Diagnostics {
	var diags diag.Diagnostics
	diags.AddError("Read-only private state", "the read fast path does not write private state")
	return diags
}

// readIdentity reports whether id is a MessagePack identity that decodes, is wholly known and
// is not wholly null (readInto sets a wholly null identity again).
func (t *fastPlanType) readIdentity(id *tfprotov6.ResourceIdentityData) bool {
	if id == nil || !msgpackOnly(id.IdentityData) {
		return false
	}
	v, err := id.IdentityData.Unmarshal(t.identity)
	return err == nil && v.IsFullyKnown() && !v.IsFullyNull()
}

// stateKeyOf is stateKey on a decoded state v: its namespace ("" when not namespaced) and
// name attributes, null read as ""; a cluster-scoped kind's state with an empty name falls back
// to its id. Both are "" when v is not an object.
func stateKeyOf(v tftypes.Value, namespaced bool) (namespace, name string) {
	var attrs map[string]tftypes.Value
	if v.As(&attrs) != nil {
		return "", ""
	}
	str := func(k string) string {
		var s string
		if a, ok := attrs[k]; ok && a.IsKnown() && !a.IsNull() && a.Type().Is(tftypes.String) {
			_ = a.As(&s)
		}
		return s
	}
	if namespaced {
		namespace = str("namespace")
	}
	name = str("name")
	if name == "" && !namespaced {
		name = str("id")
	}
	return namespace, name
}

// fetchedKey is the context key of the read the fast path made before falling back.
type fetchedKey struct{}

// fetchedObject is readLive's result for one object, read with data's clients.
type fetchedObject struct {
	data            *providerData
	spec            wait.Spec
	namespace, name string
	u               *unstructured.Unstructured
	diags           diag.Diagnostics
}

// fetchedFor returns the read the fast path made for this request (ctx) of the object
// namespace/name of spec's kind with data's clients, and false when it made none, or made it of
// another object or with other clients.
func fetchedFor(ctx context.Context, data *providerData, spec wait.Spec, namespace, name string) (*fetchedObject, bool) {
	f, ok := ctx.Value(fetchedKey{}).(*fetchedObject)
	if !ok || f.data != data || f.spec.GVR != spec.GVR || f.namespace != namespace || f.name != name {
		return nil, false
	}
	return f, true
}
