package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Adopting another operator's objects: a kind whose kindOps has an adopter (package sets from
// Skyhooks, workspaces from KAITO Workspaces, performers from Hourglass Performers) gets two
// halves. `terraform query` with `from = "<adopter.from>"` lists the upstream objects and returns
// the replacing resource (adopter.translate, mapped by the same flatten as a refresh) by identity,
// with a warning per field that does not carry over. Import: Terraform refuses to import a
// missing object, so ImportState marks the import (adoptPendingKey) and Read returns the upstream
// object's translation instead of removing the resource; the plan is then an update, and the
// apply creates the object by server-side apply.

// adoptPendingKey is the private-state key ImportState sets and the next Read clears: the
// Read is the import's, so a missing object may be adopted from the upstream object of its
// namespace and name.
const adoptPendingKey = "gantry.adopt"

// listFromGantry is the list block's `from` that lists the kind's own objects (the default).
const listFromGantry = "gantry"

// adopter describes how a kind (model M) adopts the objects of another operator: its list
// block's `from`, the upstream resource and its translation, and the user-facing names and
// texts. The kind's namespacing (kindOps.spec.Namespaced) is the upstream kind's.
type adopter[M any] struct {
	// from is the list block's `from` value that lists the upstream objects, e.g. "skyhook";
	// display names are "<from>/<id>" (id: name, or namespace/name).
	from string
	// fromDescription is the MarkdownDescription of the list block's `from`.
	fromDescription string
	// listAttrs are further optional string attributes of the list block (only read with
	// from); translate gets their values by name ("" when unset).
	listAttrs map[string]listschema.StringAttribute
	// gvr is the upstream resource, read as unstructured.
	gvr schema.GroupVersionResource
	// what names an upstream object in diagnostics ("<what> <id>", "Cannot Translate <what>",
	// "Error Listing <what>"), e.g. "KAITO Workspace"; operator names its operator in the
	// summaries "No <operator> CRD" and "<operator> Field Not Adopted", e.g. "KAITO".
	what, operator string
	// noCRD is the detail of the warning a list gives when the cluster has no such resource.
	noCRD string
	// translate maps an upstream object to the kind's object, as unstructured as flatten reads
	// it, and a warning per field that does not carry over (a clause, without the final
	// period); opts are the listAttrs' values (nil on import). An error means src cannot be
	// read as the upstream kind.
	translate func(src *unstructured.Unstructured, opts map[string]string) (*unstructured.Unstructured, []string, error)
	// adopted, optional, edits the model an import's Read returns for the translation, e.g.
	// nulls status attributes so that the plan re-applies (planRetry).
	adopted func(*M)
	// importWarning is the detail of the warning the import's Read gives when it adopts the
	// upstream object id (name, or namespace/name): what the apply does, and what to do first.
	importWarning func(id string) string
}

// translated is what a translation into the API type T returns (obj, warnings, err), with obj
// converted to unstructured as flatten reads it; err (or a failed conversion) returns nil, nil
// and the error.
func translated[T any](obj *T, warnings []string, err error) (*unstructured.Unstructured, []string, error) {
	if err != nil {
		return nil, nil, err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, nil, err
	}
	return &unstructured.Unstructured{Object: u}, warnings, nil
}

// addListAttributes adds `from` (one of "gantry" and a.from) and a.listAttrs to a list block's
// attributes.
func (a *adopter[M]) addListAttributes(attrs map[string]listschema.Attribute) {
	attrs["from"] = listschema.StringAttribute{
		Optional:            true,
		MarkdownDescription: a.fromDescription,
		Validators:          []validator.String{stringvalidator.OneOf(listFromGantry, a.from)},
	}
	for name, attr := range a.listAttrs {
		attrs[name] = attr
	}
}

// listFailed is the one result of a failed LIST of the upstream objects: a warning when the
// cluster has no such resource (its CRD is not installed), else the API error.
func (a *adopter[M]) listFailed(err error) list.ListResult {
	var d diag.Diagnostics
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		d.AddWarning("No "+a.operator+" CRD", a.noCRD)
	} else {
		d.Append(apiDiagnostic(a.what, "Listing", err))
	}
	return list.ListResult{Diagnostics: d}
}

// translateError is the error of an upstream object id that translate cannot read.
func (a *adopter[M]) translateError(id string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Cannot Translate "+a.what, fmt.Sprintf("%s %s: %v", a.what, id, err))
}

// listAdopted is List when the block's `from` is the adopter's: the upstream objects the
// block selects, each translated (adoptListResult). It reports false, having done nothing,
// when `from` is unset or "gantry" (the kind's own objects: listObjects), true when it set
// stream.Results (including for config or client errors).
func (r *kindResource[M]) listAdopted(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) bool {
	a := r.ops.adopt
	var from types.String
	diags := req.Config.GetAttribute(ctx, path.Root("from"), &from)
	opts := make(map[string]string, len(a.listAttrs))
	for name := range a.listAttrs {
		var v types.String
		diags.Append(req.Config.GetAttribute(ctx, path.Root(name), &v)...)
		opts[name] = v.ValueString()
	}
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return true
	}
	if from.ValueString() != a.from {
		return false
	}
	ns, selector, diags := listSelection(ctx, req, r.ops.spec.Namespaced)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return true
	}
	c, _, err := r.data.get()
	if err != nil {
		stream.Results = list.ListResultsStreamDiagnostics(diag.Diagnostics{clientDiagnostic(err)})
		return true
	}
	stream.Results = pagedResults(ctx, resourceFor(c.Dynamic, a.gvr, ns), selector, req.Limit,
		func(u *unstructured.Unstructured) list.ListResult { return r.adoptListResult(ctx, req, u, opts) }, a.listFailed)
	return true
}

// adoptListResult is the list result of one upstream object: the identity of its namespace
// (for a namespaced kind) and name, display name "<from>/<id>", the translated resource (when
// the request includes resources) and the translation's warnings.
func (r *kindResource[M]) adoptListResult(ctx context.Context, req list.ListRequest, src *unstructured.Unstructured, opts map[string]string) list.ListResult {
	a := r.ops.adopt
	ns, name := "", src.GetName()
	if r.ops.spec.Namespaced {
		ns = src.GetNamespace()
	}
	id := objectID(ns, name)
	u, warnings, err := a.translate(src, opts)
	res := req.NewListResult(ctx)
	res.DisplayName = a.from + "/" + id
	if err != nil {
		res.Diagnostics.Append(a.translateError(id, err))
		return res
	}
	res.Diagnostics.Append(setIdentity(ctx, res.Identity, ns, name)...)
	res.Diagnostics.Append(notAdopted(a.operator, a.what+" "+id, warnings)...)
	setListResource(ctx, req, &res, u, r.ops.flatten, a.what)
	return res
}

// markAdoptPending records in the import's private state that the next Read is the
// import's (adoptPending), unless the import failed.
func markAdoptPending(ctx context.Context, resp *resource.ImportStateResponse) {
	if !resp.Diagnostics.HasError() && resp.Private != nil {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, adoptPendingKey, []byte(`true`))...)
	}
}

// readAdopting is the Read of a kind with an adopter: the common refresh (readInto), after
// which the import's Read (private state adoptPendingKey, cleared here) of an object that does
// not exist adopts the upstream object of its namespace and name (adoptOnImport).
func (r *kindResource[M]) readAdopting(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	pending := false
	if req.Private != nil {
		b, d := req.Private.GetKey(ctx, adoptPendingKey)
		resp.Diagnostics.Append(d...)
		pending = len(b) > 0
	}
	if pending && resp.Private != nil {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, adoptPendingKey, nil)...)
	}
	readInto(ctx, r.data, r.ops.spec, req, resp, r.ops.flatten)
	if !pending || resp.Diagnostics.HasError() || !resp.State.Raw.IsNull() {
		return
	}
	r.adoptOnImport(ctx, req, resp)
}

// adoptOnImport fills resp with the translation of the upstream object of the namespace and
// name being imported (adopter.adopted applied, the identity set, and a warning saying what
// the apply does); resp stays removed (the import fails as for any missing object) when there
// is no such upstream object or no such resource. Other API errors and translation errors are
// resp's errors.
func (r *kindResource[M]) adoptOnImport(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	a := r.ops.adopt
	ns, name, diags := stateKey(ctx, req.State, r.ops.spec.Namespaced)
	if diags.HasError() || name == "" {
		return
	}
	c, _, err := r.data.get()
	if err != nil {
		return // the refresh above reported client errors
	}
	id := objectID(ns, name)
	src, err := resourceFor(c.Dynamic, a.gvr, ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			resp.Diagnostics.Append(apiDiagnostic(a.what, "Reading", err))
		}
		return
	}
	u, _, err := a.translate(src, nil)
	if err != nil {
		resp.Diagnostics.Append(a.translateError(id, err))
		return
	}
	var prior M
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, err := r.ops.flatten(u, &prior)
	if err != nil {
		resp.Diagnostics.Append(readMappingDiagnostic(a.what, a.from+"/"+id, err))
		return
	}
	if a.adopted != nil {
		a.adopted(m)
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
	resp.Diagnostics.AddWarning("Adopting "+a.what+" "+id, a.importWarning(id))
}

// notAdopted is the warning that lists what the translation of one upstream object (what,
// e.g. "Hourglass Performer ns/name") left out: none for no warnings; one "<operator> Field
// Not Adopted" for one; else one "<operator> Fields Not Adopted" listing them all, since the
// CLI folds warnings of one summary into "(and N more similar warnings elsewhere)" and would
// hide all but the first.
func notAdopted(operator, what string, warnings []string) diag.Diagnostics {
	var d diag.Diagnostics
	switch len(warnings) {
	case 0:
	case 1:
		d.AddWarning(operator+" Field Not Adopted", fmt.Sprintf("%s: %s.", what, warnings[0]))
	default:
		detail := fmt.Sprintf("%s: %d fields are not adopted as written:\n", what, len(warnings))
		for _, w := range warnings {
			detail += "\n- " + w + "."
		}
		d.AddWarning(operator+" Fields Not Adopted", detail)
	}
	return d
}
