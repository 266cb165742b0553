package provider

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Read shared by the resource types: reading the live object into the model, and the
// private-state mark (resourceVersion) that lets a refresh skip an unchanged object.

// readInto is the Read of every Gantry resource: the live object of spec's kind (keyed by the
// state's namespace and name attributes) through readLive; gone → the resource is removed from
// state (the next plan creates it); the same resourceVersion as the last refresh by this
// provider version (readUnchanged) → the state is kept as it is, since the object has not
// changed; otherwise flatten maps it (keeping what only the prior state knows, e.g. timeouts)
// and the result is the new state, so any difference from prior shows as drift. Diagnostics:
// reading the state, readLive's, or "Error Reading <kind>" naming the object when flatten
// fails.
func readInto[M any](ctx context.Context, data *providerData, spec wait.Spec, req resource.ReadRequest, resp *resource.ReadResponse, flatten func(u *unstructured.Unstructured, prior *M) (*M, error)) {
	namespace, name, diags := stateKey(ctx, req.State, spec.Namespaced)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx = tflog.SetField(ctx, strings.ToLower(spec.Kind), objectID(namespace, name))
	u, diags := readLive(ctx, data, spec, namespace, name)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if u == nil {
		// The identity is still returned: the framework asks for one after every Read without
		// errors, even one that removes the resource (a CLI older than 1.12 sends none to keep).
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, namespace, name)...)
		resp.State.RemoveResource(ctx)
		return
	}
	if readUnchanged(ctx, data, req.Private, u) {
		// resp.State is the prior state, as the framework fills it in; the identity is set
		// only where the CLI sent none (older than 1.12).
		if resp.Identity != nil && resp.Identity.Raw.IsFullyNull() {
			resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, namespace, name)...)
		}
		return
	}
	var prior M
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	state, err := flatten(u, &prior)
	if err != nil {
		resp.Diagnostics.Append(readMappingDiagnostic(spec.Kind, objectID(namespace, name), err))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, namespace, name)...)
	markRead(ctx, data, resp.Private, u)
}

// stateKey returns the namespace ("" when not namespaced) and name attributes of state; a
// cluster-scoped kind's state with an empty name (PackageSet imported by ID) falls back to its
// id.
func stateKey(ctx context.Context, state tfsdk.State, namespaced bool) (namespace, name string, diags diag.Diagnostics) {
	var ns, n, id types.String
	diags.Append(state.GetAttribute(ctx, path.Root("name"), &n)...)
	if namespaced {
		diags.Append(state.GetAttribute(ctx, path.Root("namespace"), &ns)...)
	}
	if n.ValueString() == "" && !namespaced {
		diags.Append(state.GetAttribute(ctx, path.Root("id"), &id)...)
		return ns.ValueString(), id.ValueString(), diags
	}
	return ns.ValueString(), n.ValueString(), diags
}

// readPrivateKey is the provider's private-state key (stored beside the resource's state,
// never shown) holding {"rv": resourceVersion, "by": provider version} of the object the state
// was last refreshed from.
const readPrivateKey = "read"

// readMark is the value under readPrivateKey.
type readMark struct {
	RV string `json:"rv"`
	By string `json:"by"`
}

// privateState is what the framework's private state offers (resource.ReadRequest.Private and
// friends).
type privateState interface {
	GetKey(ctx context.Context, key string) ([]byte, diag.Diagnostics)
	SetKey(ctx context.Context, key string, value []byte) diag.Diagnostics
}

// readUnchanged reports whether priv says the state was refreshed, by this provider version,
// from the object at u's resourceVersion: the API server gives an object a new resourceVersion
// on every change, spec or status, so the state flatten would return is the one already held.
// This skips the mapping (and the framework's reflection into and out of the model) for every
// unchanged object of a refresh. Missing or unreadable marks report false.
func readUnchanged(ctx context.Context, data *providerData, priv privateState, u *unstructured.Unstructured) bool {
	rv, ok := readMarkOf(ctx, data, priv)
	return ok && u.GetResourceVersion() != "" && rv == u.GetResourceVersion()
}

// readMarkOf returns the resourceVersion priv's read mark (markRead) records and true when this
// provider version wrote it; "" and false when priv or data is nil, or the mark is missing,
// unreadable or another version's.
func readMarkOf(ctx context.Context, data *providerData, priv privateState) (string, bool) {
	if priv == nil || data == nil {
		return "", false
	}
	b, diags := priv.GetKey(ctx, readPrivateKey)
	var m readMark
	if diags.HasError() || len(b) == 0 || json.Unmarshal(b, &m) != nil || m.By != data.version {
		return "", false
	}
	return m.RV, true
}

// markRead records in priv that the state now holds the object at u's resourceVersion, as
// mapped by this provider version (see readUnchanged). Failures only lose the shortcut.
func markRead(ctx context.Context, data *providerData, priv privateState, u *unstructured.Unstructured) {
	if priv == nil || data == nil || u.GetResourceVersion() == "" {
		return
	}
	if b, err := json.Marshal(readMark{RV: u.GetResourceVersion(), By: data.version}); err == nil {
		_ = priv.SetKey(ctx, readPrivateKey, b)
	}
}

// forgetRead removes the mark of markRead: a create or update writes a state that was not
// mapped from a refresh, so the next refresh maps the object again unless markApplied finds
// the state saved equal to that mapping.
func forgetRead(ctx context.Context, priv privateState) {
	if priv != nil {
		_ = priv.SetKey(ctx, readPrivateKey, nil)
	}
}

// readLive reads the object namespace/name (namespace "" for a cluster-scoped kind such as
// PackageSet) of spec's kind for a refresh, through the shared
// informer (wait.Registry.Get: one LIST per kind and namespace for a whole refresh, a GET to
// confirm an object the informer lacks). It returns (nil, nil) when the object is gone — the
// caller removes the resource from state so the next plan creates it — and an error
// diagnostic naming the kind for any other client or API error. A read the ReadResource fast
// path already made for this request (same clients, kind, namespace and name; see
// fetchedFor) is returned as it was, not made again.
func readLive(ctx context.Context, data *providerData, spec wait.Spec, namespace, name string) (*unstructured.Unstructured, diag.Diagnostics) {
	if f, ok := fetchedFor(ctx, data, spec, namespace, name); ok {
		return f.u, f.diags
	}
	var diags diag.Diagnostics
	_, reg, err := data.get()
	if err != nil {
		diags.Append(clientDiagnostic(err))
		return nil, diags
	}
	u, err := reg.Get(ctx, spec, namespace, name)
	if apierrors.IsNotFound(err) {
		tflog.Info(ctx, spec.Kind+" no longer exists; removing it from state", map[string]interface{}{"object": namespace + "/" + name})
		return nil, nil
	}
	if err != nil {
		diags.Append(apiDiagnostic(spec.Kind, "Reading", err))
		return nil, diags
	}
	return u, nil
}
