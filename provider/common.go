package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	kwait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Helpers shared by the resource types: server-side apply, convergence, system metadata keys,
// import IDs and diagnostics for wait errors.

// fieldManager is the server-side apply field manager of every object the provider writes.
const fieldManager = "terraform-provider-gantry"

// systemKeyPrefixes are the label/annotation key prefixes (the part of a key before "/")
// that tools and controllers write on objects: kubectl's last-applied-configuration
// (kubectl.kubernetes.io), the prefixes Kubernetes reserves for its own components
// (kubernetes.io, k8s.io) and Gantry's own bookkeeping (gantry.dev). A key is a system key
// when its prefix is exactly one of these: subdomains are not, so the recommended labels
// app.kubernetes.io/name and a team's own team.gantry.dev/x are user keys. Read ignores system
// keys unless the configuration set them, so they cause no drift, and the provider never
// removes them; every other key is imported and shows as drift when changed out of band.
var systemKeyPrefixes = map[string]bool{"kubectl.kubernetes.io": true, "kubernetes.io": true, "k8s.io": true, "gantry.dev": true}

// isSystemKey reports whether the label/annotation key k has one of systemKeyPrefixes as its
// prefix (e.g. "kubectl.kubernetes.io/last-applied-configuration": true;
// "app.kubernetes.io/name", "team.gantry.dev/x", "name": false).
func isSystemKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	return ok && systemKeyPrefixes[prefix]
}

// readMeta returns the labels or annotations to put in state: every key on the object except
// system keys the prior state (or plan) did not have. nil when none remain (null in state),
// unless prior is an empty non-nil map.
func readMeta(live, prior map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range live {
		if _, had := prior[k]; had || !isSystemKey(k) {
			out[k] = v
		}
	}
	if len(out) == 0 {
		if prior != nil {
			return map[string]string{}
		}
		return nil
	}
	return out
}

// resourceFor returns the namespaced dynamic client of gvr.
func resourceFor(dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace string) dynamic.ResourceInterface {
	return dyn.Resource(gvr).Namespace(namespace)
}

// serverSideApply writes obj with server-side apply as fieldManager, forcing conflicts: the
// configuration is the source of truth for every field it sets.
func serverSideApply(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return ri.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

// writeBackoff paces the retries of a write after a transient API error (retryWrite): 0.5 s
// doubling to at most 5 s, so a write resumes within 5 s of the API server answering again.
var writeBackoff = kwait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: 5 * time.Second}

// retryWrite runs write until it succeeds, fails with an error that is not transient, or ctx
// ends (the resource's create, update or delete timeout). Transient is failure.Transient less
// conflicts and AlreadyExists, which the callers handle themselves: 5xx (among them the API
// server's "Timeout: request did not complete within requested timeout" while etcd does not
// answer), 429, timeouts and connection errors. Every write retried here is idempotent
// (server-side apply, a delete with a UID precondition, an apply followed by a converge that is
// computed again from the apply's answer). When ctx ends it returns the last API error,
// wrapped with how long and how many times the write was tried; a permanent error is returned
// as it is.
func retryWrite(ctx context.Context, what string, write func(context.Context) error) error {
	start, b := time.Now(), writeBackoff
	for attempt := 1; ; attempt++ {
		err := write(ctx)
		if err == nil || !failure.Transient(err) || apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (%s retried for %s, %d attempts, until the timeout)", err, what, time.Since(start).Round(time.Second), attempt)
		}
		tflog.Warn(ctx, what+": transient API error, retrying", map[string]interface{}{"attempt": attempt, "error": err.Error()})
		timer := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (%s retried for %s, %d attempts, until the timeout)", err, what, time.Since(start).Round(time.Second), attempt)
		case <-timer.C:
		}
	}
}

// applyObject writes obj with serverSideApply and then converges (see converge), returning
// the object as the API server has it afterwards. Transient API errors are retried until ctx
// ends (retryWrite).
func applyObject(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var out *unstructured.Unstructured
	err := retryWrite(ctx, "server-side apply of "+obj.GetKind()+" "+objectID(obj.GetNamespace(), obj.GetName()), func(ctx context.Context) error {
		var err error
		out, err = applyOnce(ctx, ri, obj)
		return err
	})
	return out, err
}

// applyOnce is one serverSideApply and converge of obj.
func applyOnce(ctx context.Context, ri dynamic.ResourceInterface, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	live, err := serverSideApply(ctx, ri, obj)
	if err != nil {
		return nil, err
	}
	out, err := converge(ctx, ri, obj, live)
	if apierrors.IsNotFound(err) && live.GetDeletionTimestamp() != nil {
		// The apply let a pending deletion finish (e.g. uninstall_on_delete = false on a package
		// set whose destroy stopped): the object is gone; the caller sees it as being deleted.
		return live, nil
	}
	return out, err
}

// deleteAndWait deletes live (the object as last read) with background propagation and a UID
// precondition, so a re-created namesake is never deleted by mistake, then waits until it is
// gone. NotFound is success; Conflict means a newer object of that name exists, so ours is
// gone too. known (nil or live) seeds the wait with the object already read. Errors: API
// failures and wait errors, as diagnostics.
func deleteAndWait(ctx context.Context, ri dynamic.ResourceInterface, reg *wait.Registry, spec wait.Spec, live, known *unstructured.Unstructured) diag.Diagnostics {
	var diags diag.Diagnostics
	ns, name, uid := live.GetNamespace(), live.GetName(), live.GetUID()
	policy := metav1.DeletePropagationBackground
	err := retryWrite(ctx, "delete of "+spec.Kind+" "+objectID(ns, name), func(ctx context.Context) error {
		return ri.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy, Preconditions: &metav1.Preconditions{UID: &uid}})
	})
	if apierrors.IsNotFound(err) {
		return diags
	}
	if err != nil && !apierrors.IsConflict(err) {
		diags.Append(apiDiagnostic(spec.Kind, "Deleting", err))
		return diags
	}
	tflog.Debug(ctx, spec.Kind+" deleted; waiting until it is gone")
	if err := reg.WaitDeleted(ctx, spec, wait.Target{Namespace: ns, Name: name, UID: string(uid), Known: known}); err != nil {
		diags.Append(waitDiagnostic(spec.Kind, opDelete, objectID(ns, name), err))
	}
	return diags
}

// newObject builds a gantry.dev/v1alpha1 object of kind to server-side apply: metadata.name
// and namespace, labels and annotations when not empty, and spec.
func newObject(kind, name, namespace string, labels, annotations map[string]string, spec map[string]interface{}) *unstructured.Unstructured {
	meta := map[string]interface{}{"name": name, "namespace": namespace}
	if len(labels) > 0 {
		meta["labels"] = stringMapToInterface(labels)
	}
	if len(annotations) > 0 {
		meta["annotations"] = stringMapToInterface(annotations)
	}
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": kind, "metadata": meta, "spec": spec,
	}}
}

// statusString is the string status.<field> of u as a computed attribute: null when absent or "".
func statusString(u *unstructured.Unstructured, field string) types.String {
	v, _, _ := unstructured.NestedString(u.Object, "status", field)
	if v == "" {
		return types.StringNull()
	}
	return types.StringValue(v)
}

// converge removes what server-side apply leaves behind: entries of maps and map-lists (env,
// node_selector, labels, ...) that another field manager added and the configuration does not
// have. Apply only removes fields this manager owned, so without this step such entries would
// show as drift on every plan. desired is the applied object; live is apply's response. It
// sends one JSON patch when something differs and returns the patched object (or live).
func converge(ctx context.Context, ri dynamic.ResourceInterface, desired, live *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	var ops []map[string]interface{}
	want, err := normalizeJSON(desired.Object["spec"])
	if err != nil {
		return nil, err
	}
	have, err := normalizeJSON(live.Object["spec"])
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(want, have) {
		ops = append(ops, map[string]interface{}{"op": "replace", "path": "/spec", "value": want})
	}
	for _, f := range []struct {
		field string
		want  map[string]string
		have  map[string]string
	}{
		{"labels", desired.GetLabels(), live.GetLabels()},
		{"annotations", desired.GetAnnotations(), live.GetAnnotations()},
	} {
		for k := range f.have {
			if _, ok := f.want[k]; !ok && !isSystemKey(k) {
				ops = append(ops, map[string]interface{}{"op": "remove", "path": "/metadata/" + f.field + "/" + jsonPointerEscape(k)})
			}
		}
	}
	if len(ops) == 0 {
		return live, nil
	}
	tflog.Debug(ctx, "removing fields other managers added", map[string]interface{}{"object": live.GetNamespace() + "/" + live.GetName(), "operations": len(ops)})
	body, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	return ri.Patch(ctx, live.GetName(), k8stypes.JSONPatchType, body, metav1.PatchOptions{FieldManager: fieldManager})
}

func normalizeJSON(v interface{}) (interface{}, error) {
	if v == nil {
		return map[string]interface{}{}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out interface{}
	return out, json.Unmarshal(b, &out)
}

func jsonPointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// toSpecMap converts a typed spec (a pointer to an API struct) to the unstructured map the
// provider applies, with the empty objects no one wrote removed (pruneEmptyAs). Errors: the
// converter's, for a value it cannot represent.
func toSpecMap(spec interface{}) (map[string]interface{}, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(spec)
	if err != nil {
		return nil, err
	}
	pruneEmptyAs(m, reflect.ValueOf(spec))
	return m, nil
}

// pruneEmptyAs removes nil values and empty maps from m, bottom-up, walking the typed value v
// that m was converted from. A value struct (resources, scheduling) converts to "{}" whether
// or not anyone set it, and applying that would make the provider the owner of empty objects,
// so it goes when empty; an object behind a non-nil pointer is one the user wrote (for example
// hourglass_compat = {}, the migration guide's own example) and stays, empty or not. Where v
// does not describe m (maps of maps, raw JSON), it falls back to pruneEmpty. Empty lists are kept.
func pruneEmptyAs(m map[string]interface{}, v reflect.Value) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			pruneEmpty(m)
			return
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		pruneEmpty(m)
		return
	}
	fields := jsonFields(v)
	for k, e := range m {
		f, typed := fields[k]
		switch t := e.(type) {
		case nil:
			delete(m, k)
		case map[string]interface{}:
			if !typed {
				pruneEmpty(t)
			} else {
				pruneEmptyAs(t, f)
			}
			written := typed && f.Kind() == reflect.Pointer && !f.IsNil()
			if len(t) == 0 && !written {
				delete(m, k)
			}
		case []interface{}:
			pruneEmptyList(t, f, typed)
		}
	}
}

// pruneEmptyList prunes each object of the list t, walking the slice f when typed.
func pruneEmptyList(t []interface{}, f reflect.Value, typed bool) {
	sameLen := typed && (f.Kind() == reflect.Slice || f.Kind() == reflect.Array) && f.Len() == len(t)
	for i, e := range t {
		em, ok := e.(map[string]interface{})
		switch {
		case !ok:
		case sameLen:
			pruneEmptyAs(em, f.Index(i))
		default:
			pruneEmpty(em)
		}
	}
}

// jsonFields maps the JSON names of struct v's fields (inline fields flattened) to their values.
func jsonFields(v reflect.Value) map[string]reflect.Value {
	out := map[string]reflect.Value{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") || (name == "" && sf.Anonymous) {
			if fv := v.Field(i); fv.Kind() == reflect.Struct {
				maps.Copy(out, jsonFields(fv))
			}
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out[name] = v.Field(i)
	}
	return out
}

// pruneEmpty removes nil values and empty maps from m, bottom-up, where no typed value says
// which of them were written (see pruneEmptyAs). Empty lists are kept.
func pruneEmpty(m map[string]interface{}) {
	for k, v := range m {
		switch t := v.(type) {
		case nil:
			delete(m, k)
		case map[string]interface{}:
			pruneEmpty(t)
			if len(t) == 0 {
				delete(m, k)
			}
		case []interface{}:
			for _, e := range t {
				if em, ok := e.(map[string]interface{}); ok {
					pruneEmpty(em)
				}
			}
		}
	}
}

// parseImportID splits "namespace/name" and checks both parts are valid Kubernetes names.
func parseImportID(kind, id string) (namespace, name string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("import ID %q is not of the form <namespace>/<name>, e.g. default/my-%s", id, strings.ToLower(kind))
	}
	if errs := validation.IsDNS1123Label(parts[0]); len(errs) > 0 {
		return "", "", fmt.Errorf("import ID %q: namespace %q is not valid: %s", id, parts[0], strings.Join(errs, "; "))
	}
	if errs := validation.IsDNS1123Subdomain(parts[1]); len(errs) > 0 {
		return "", "", fmt.Errorf("import ID %q: name %q is not valid: %s", id, parts[1], strings.Join(errs, "; "))
	}
	return parts[0], parts[1], nil
}

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
