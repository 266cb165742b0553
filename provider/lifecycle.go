package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// kindOps describes one resource kind to the generic Create, Update, Delete and apply-and-wait
// path below (Read is readInto in common.go; kindResource wires them all to the framework). M
// is the kind's Terraform model.
type kindOps[M any] struct {
	// spec is the wait engine's description of the kind (GVR, summary, success and failure).
	spec wait.Spec
	// logField is the tflog field naming the object, e.g. "performer".
	logField string
	// summaryAttr is the computed attribute holding the summary (spec.SummaryPath), e.g. "phase".
	summaryAttr string
	// statusAttrs are the computed attributes the reconciler writes (summaryAttr among them):
	// a plan that retries marks them unknown, since the retry may change any of them.
	statusAttrs []string
	// createTimeout, updateTimeout, deleteTimeout are the defaults of timeouts = { ... }.
	createTimeout, updateTimeout, deleteTimeout time.Duration
	// timeouts returns the model's timeouts attribute.
	timeouts func(*M) timeouts.Value
	// key returns the object's namespace ("" when cluster-scoped) and name from the model.
	key func(*M) (namespace, name string)
	// expand maps the model to the object to server-side apply.
	expand func(*M) (*unstructured.Unstructured, error)
	// setStatus fills the computed attributes (id and status) from an object read back.
	setStatus func(*M, *unstructured.Unstructured)
	// flatten maps an object read from the cluster to the model (Read, List); prior (the
	// state or plan refreshed; a model of nulls for List) decides null versus empty.
	flatten func(u *unstructured.Unstructured, prior *M) (*M, error)
	// rolledBack, optional, reports that a failed wait ended on an object the reconciler
	// rolled back onto its previous revision (Executor): the apply then reports the rollback
	// (rolledBackDiagnostic) instead of the wait error.
	rolledBack func(final *unstructured.Unstructured) bool
	// notLive, optional, reports that the configuration in state is not what runs although
	// the summary is a success value (Executor: failed_revision set after a rollback;
	// PackageSet: a version in state is quarantined by a rollback), and why.
	notLive func(state *M) (bool, string)
	// check, optional, compares what was planned with the state after a successful wait.
	check func(plan, state *M) diag.Diagnostics
	// settled are summary values that are neither success nor ReturnAtOnce but need no retry
	// in the next plan (PackageSet: waiting, which the apply returns on when a paused set holds
	// the set, see ready).
	settled []string
	// ready, optional, returns warnings about the object a successful wait ended on (id names
	// it), e.g. a package set that returned because a paused set holds it.
	ready func(id string, final *unstructured.Unstructured) diag.Diagnostics
	// prepare, optional, runs before a create or update writes the object, with the
	// configuration (which alone holds write-only values) and the prior state (nil on
	// create): it writes what the object references (Executor: the Secret holding write-only
	// operator keys) and records on plan what expand needs or what the plan left unknown
	// (Performer: candidate_nodes, counted from the process's cluster reads). Errors stop the
	// apply before the object is written.
	prepare func(ctx context.Context, data *providerData, config tfsdk.Config, plan, prior *M) diag.Diagnostics
	// applied, optional, runs right after the object was written (live is the API server's
	// answer), before the wait: e.g. it makes the object the owner of what prepare wrote.
	applied func(ctx context.Context, c *kube.Clients, plan *M, live *unstructured.Unstructured) diag.Diagnostics
	// adopt, optional, lets the kind adopt another operator's objects (adopt.go): its list
	// block gets `from`, and an import of an object that does not exist yet adopts the upstream
	// object of that namespace and name.
	adopt *adopter[M]
}

// create is the Create of every Gantry resource: the plan, the create timeout, then
// applyAndWait; a non-nil state is saved even with errors (see applyAndWait).
func (k *kindOps[M]) create(ctx context.Context, data *providerData, req resource.CreateRequest, resp *resource.CreateResponse) {
	var plan M
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := k.timeouts(&plan).Create(ctx, k.createTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !k.runPrepare(ctx, data, req.Config, &plan, nil, &resp.Diagnostics) {
		return
	}
	state, final, diags := k.applyAndWait(ctx, data, &plan, opCreate)
	resp.Diagnostics.Append(diags...)
	forgetRead(ctx, resp.Private)
	if state != nil {
		resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
		ns, name := k.key(state)
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
		k.markApplied(ctx, data, &resp.State, resp.Private, state, final, resp.Diagnostics.HasError())
	}
}

// update is the Update of every Gantry resource: as create, with the update timeout.
func (k *kindOps[M]) update(ctx context.Context, data *providerData, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	var plan M
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := k.timeouts(&plan).Update(ctx, k.updateTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var prior M
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() || !k.runPrepare(ctx, data, req.Config, &plan, &prior, &resp.Diagnostics) {
		return
	}
	state, final, diags := k.applyAndWait(ctx, data, &plan, opUpdate)
	resp.Diagnostics.Append(diags...)
	forgetRead(ctx, resp.Private)
	if state != nil {
		resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
		ns, name := k.key(state)
		resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
		k.markApplied(ctx, data, &resp.State, resp.Private, state, final, resp.Diagnostics.HasError())
	}
}

// markApplied writes the read mark (markRead) of final, the object a successful wait ended on,
// into priv when the state just saved (saved, already set into st) is exactly what a refresh
// would map from final: flatten(final, saved) set into the same schema equals st's value.
// The first refresh after an apply then finds the object unchanged (readUnchanged, and the
// ReadResource fast path answers it) instead of mapping every object again. Anything else
// (failed is true, no final object, a flatten error, a state that differs, e.g. a computed
// attribute whose live value the plan's state does not hold) leaves no mark: the refresh maps
// the object as before.
func (k *kindOps[M]) markApplied(ctx context.Context, data *providerData, st *tfsdk.State, priv privateState, saved *M, final *unstructured.Unstructured, failed bool) {
	if failed || final == nil {
		return
	}
	mapped, err := k.flatten(final, saved)
	if err != nil {
		return
	}
	read := tfsdk.State{Schema: st.Schema, Raw: st.Raw.Copy()}
	if d := read.Set(ctx, mapped); d.HasError() || !read.Raw.Equal(st.Raw) {
		return
	}
	markRead(ctx, data, priv, final)
}

// runPrepare runs k.prepare, when set, and reports whether the apply may go on.
func (k *kindOps[M]) runPrepare(ctx context.Context, data *providerData, config tfsdk.Config, plan, prior *M, diags *diag.Diagnostics) bool {
	if k.prepare == nil {
		return true
	}
	diags.Append(k.prepare(ctx, data, config, plan, prior)...)
	return !diags.HasError()
}

// delete is the Delete of every Gantry resource: the object from the shared informer (one
// LIST for all the deletes of a kind and namespace; a GET when it lacks the object) gives the
// UID for the delete precondition and seeds the wait; deleteAndWait deletes and waits until it
// is gone. An object already gone is success.
func (k *kindOps[M]) delete(ctx context.Context, data *providerData, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	var state M
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	timeout, diags := k.timeouts(&state).Delete(ctx, k.deleteTimeout)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ns, name := k.key(&state)
	ctx = tflog.SetField(ctx, k.logField, objectID(ns, name))
	c, reg, err := data.get()
	if err != nil {
		resp.Diagnostics.Append(clientDiagnostic(err))
		return
	}
	live, err := reg.Get(ctx, k.spec, ns, name)
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		resp.Diagnostics.Append(apiDiagnostic(k.spec.Kind, "Reading", err))
		return
	}
	resp.Diagnostics.Append(deleteAndWait(ctx, resourceFor(c.Dynamic, k.spec.GVR, ns), reg, k.spec, live, live)...)
}

// applyAndWait writes plan by server-side apply, removes fields other managers added
// (converge), waits per the status contract and returns the state to save and, after a
// successful wait only, the object it ended on (markApplied). On create it refuses an existing
// object this provider did not write (refuseForeign). A nil state: nothing was written, or the
// object vanished. A warning: Terraform interrupted the wait (state saved untainted). Errors: it
// failed, stalled, rolled back or timed out (state saved with the last status; a create is tainted).
func (k *kindOps[M]) applyAndWait(ctx context.Context, data *providerData, plan *M, op string) (*M, *unstructured.Unstructured, diag.Diagnostics) {
	var diags diag.Diagnostics
	kind := k.spec.Kind
	ns, name := k.key(plan)
	id := objectID(ns, name)
	ctx = tflog.SetField(ctx, k.logField, id)
	c, reg, err := data.get()
	if err != nil {
		diags.Append(clientDiagnostic(err))
		return nil, nil, diags
	}
	obj, err := k.expand(plan)
	if err != nil {
		diags.Append(invalidConfigDiagnostic(kind, err))
		return nil, nil, diags
	}
	markOwned(obj)
	if k.spec.Handshake {
		requestReconcile(obj, time.Now())
	}
	ri := resourceFor(c.Dynamic, k.spec.GVR, ns)
	if op == opCreate {
		if d := refuseForeign(ctx, ri, reg, k.spec, ns, name); d != nil {
			diags.Append(d)
			return nil, nil, diags
		}
	}
	tflog.Debug(ctx, "applying "+kind+" (server-side apply)", map[string]interface{}{"field_manager": fieldManager})
	live, err := applyKeepingEmpty(ctx, ri, obj)
	if err != nil {
		diags.Append(apiDiagnostic(kind, "Applying", err))
		return nil, nil, diags
	}
	if k.applied != nil {
		if d := k.applied(ctx, c, plan, live); d.HasError() {
			diags.Append(d...)
			return nil, nil, diags
		}
	}
	if live.GetDeletionTimestamp() != nil {
		diags.Append(beingDeletedDiagnostic(kind, id))
		state := *plan
		k.setStatus(&state, live)
		return &state, nil, diags
	}
	tflog.Debug(ctx, "waiting for "+kind, map[string]interface{}{"generation": live.GetGeneration()})
	final, werr := reg.WaitReady(ctx, k.spec, wait.Target{Namespace: ns, Name: name, UID: string(live.GetUID()), Generation: live.GetGeneration(), Known: live})
	if final == nil {
		final = live
	}
	var de *wait.DeletedError
	if errors.As(werr, &de) {
		diags.Append(waitDiagnostic(kind, op, id, werr))
		return nil, nil, diags
	}
	state := *plan
	k.setStatus(&state, final)
	switch {
	case werr == nil:
	case errors.Is(ctx.Err(), context.Canceled):
		// terraform was interrupted (SIGINT → StopProvider cancels the request's context):
		// save the state without an error, so a create is not tainted; planRetry makes the
		// next plan an update that resumes the wait.
		summary, _, _ := unstructured.NestedString(final.Object, k.spec.SummaryPath...)
		diags.Append(interruptedDiagnostic(kind, id, k.summaryAttr, summary))
		return &state, nil, diags
	case k.rolledBack != nil && k.rolledBack(final):
		diags.Append(rolledBackDiagnostic(kind, id, werr))
		return &state, nil, diags
	default:
		diags.Append(waitDiagnostic(kind, op, id, werr))
		return &state, nil, diags
	}
	if k.check != nil {
		diags.Append(k.check(plan, &state)...)
	}
	if k.ready != nil {
		diags.Append(k.ready(id, final)...)
	}
	tflog.Info(ctx, kind+" is ready")
	return &state, final, diags
}

// managedByAnnotation is the ownership marker the provider writes on every object it applies
// (value managedByValue), together with its server-side apply field manager (fieldManager) in
// metadata.managedFields. A create finding an object of its name adopts it only when both are
// there: the object was written by this provider (by an apply that was interrupted before its
// state was saved, or whose create failed without state), never by kubectl or another tool.
const (
	managedByAnnotation = "gantry.dev/managed-by"
	managedByValue      = "terraform"
)

// markOwned adds the ownership marker to obj (an object about to be server-side applied).
func markOwned(obj *unstructured.Unstructured) {
	setAnnotation(obj, managedByAnnotation, managedByValue)
}

// requestReconcile sets the gantry.dev/reconcileRequestedAt annotation to now (RFC 3339,
// nanoseconds, UTC): the wait then also needs status.lastHandledReconcileAt to carry that
// value (wait.Spec.Handshake), so a change of labels alone, which the reconciler rolls out to
// the pods but which leaves metadata.generation as it is, is waited for like a spec change.
// The key is a system key: it never shows in the resource's annotations attribute.
func requestReconcile(obj *unstructured.Unstructured, now time.Time) {
	setAnnotation(obj, v1alpha1.AnnotationReconcileRequestedAt, now.UTC().Format(time.RFC3339Nano))
}

// setAnnotation sets annotation key to value on obj, keeping the others.
func setAnnotation(obj *unstructured.Unstructured, key, value string) {
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	obj.SetAnnotations(a)
}

// foreignReason returns "" when u carries the ownership marker and the provider's field
// manager, else why it is not ours (for the "Already Exists" diagnostic).
func foreignReason(u *unstructured.Unstructured) string {
	if u.GetAnnotations()[managedByAnnotation] != managedByValue {
		return fmt.Sprintf("it has no %s=%s annotation", managedByAnnotation, managedByValue)
	}
	for _, mf := range u.GetManagedFields() {
		if mf.Manager == fieldManager {
			return ""
		}
	}
	return fmt.Sprintf("no field of it is managed by %s", fieldManager)
}

// refuseForeign is the existence check of a create: nil when no object namespace/name of
// spec's kind exists (checked through the shared informer: one LIST for all the creates of a
// kind and namespace) or when the one that exists was written by this provider (foreignReason
// "", read with a GET since the informer drops managedFields) — the create then adopts it and
// applies over it, so an interrupted apply converges without an import; an "Already Exists"
// diagnostic naming the object and the import command otherwise; an API diagnostic when that
// cannot be told.
func refuseForeign(ctx context.Context, ri dynamic.ResourceInterface, reg *wait.Registry, spec wait.Spec, ns, name string) diag.Diagnostic {
	id := objectID(ns, name)
	exists, err := reg.Exists(ctx, spec, ns, name)
	switch {
	case err != nil:
		return apiDiagnostic(spec.Kind, "Reading", err)
	case !exists:
		return nil
	}
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return apiDiagnostic(spec.Kind, "Reading", err)
	}
	if why := foreignReason(u); why != "" {
		return alreadyExistsDiagnostic(spec.Kind, id, id, why)
	}
	tflog.Info(ctx, "adopting the "+spec.Kind+" this provider wrote in an earlier, interrupted apply", map[string]interface{}{"uid": string(u.GetUID())})
	return nil
}

// planRetry is the ModifyPlan step shared by every Gantry resource: a failure stays in the
// plan until it is fixed. When the prior state (as refreshed) says the object is not done — its
// summary is null or not a success value (failed, erroring, blocked, stalled, interrupted
// mid-wait), or notLive says the configuration is not what runs (a rolled-back update) — it marks the status
// attributes unknown, so the plan is an in-place update (exit code 2 under
// -detailed-exitcode) whose apply re-applies the configuration and waits again. An object that
// recovered by itself refreshes to a success value and plans no change. It never forces a
// replacement and makes no API call. Create and destroy plans are left alone.
func (k *kindOps[M]) planRetry(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() || req.State.Raw.IsNull() {
		return
	}
	retry, why := k.needsRetry(ctx, req.State, &resp.Diagnostics)
	if !retry || resp.Diagnostics.HasError() {
		return
	}
	tflog.Info(ctx, k.spec.Kind+" is not ready in state; planning an update that re-applies it and waits again", map[string]interface{}{"why": why})
	for _, a := range k.statusAttrs {
		p := path.Root(a)
		typ, d := req.Plan.Schema.TypeAtPath(ctx, p)
		resp.Diagnostics.Append(d...)
		if d.HasError() {
			return
		}
		unknown, err := typ.ValueFromTerraform(ctx, tftypes.NewValue(typ.TerraformType(ctx), tftypes.UnknownValue))
		if err != nil {
			resp.Diagnostics.AddAttributeError(p, "Error Planning "+k.spec.Kind, err.Error())
			return
		}
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, p, unknown)...)
	}
}

// needsRetry reports whether state (the refreshed prior state) holds an object that is not
// done, and why.
func (k *kindOps[M]) needsRetry(ctx context.Context, state tfsdk.State, diags *diag.Diagnostics) (bool, string) {
	var summary types.String
	diags.Append(state.GetAttribute(ctx, path.Root(k.summaryAttr), &summary)...)
	if diags.HasError() || summary.IsUnknown() {
		return false, ""
	}
	if summary.IsNull() {
		return true, k.summaryAttr + " is not set"
	}
	if v := summary.ValueString(); !slices.Contains(k.spec.Success, v) && !slices.Contains(k.spec.ReturnAtOnce, v) && !slices.Contains(k.settled, v) {
		return true, k.summaryAttr + " is " + v
	}
	if k.notLive == nil {
		return false, ""
	}
	var m M
	diags.Append(state.Get(ctx, &m)...)
	if diags.HasError() {
		return false, ""
	}
	return k.notLive(&m)
}
