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

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
)

// Adopting KAITO workspaces (issue 40 item 9), the same two halves as Skyhook's
// (package_set_adopt.go):
//
//   - `terraform query` with `from = "kaito"` in a gantry_workspace list block lists the
//     cluster's KAITO Workspaces (kaito.sh/v1beta1, read as unstructured; filtered by the
//     block's namespace and label_selector) and returns, for each, the gantry_workspace of the
//     same namespace and name that replaces it (adopt.FromKAITO, mapped by the same flatten as
//     a refresh) with identity {namespace, name}, and a warning per KAITO field that does not
//     carry over. `-generate-config-out` writes a resource block and an import block.
//   - ImportState marks the import (adoptPendingKey) and Read, finding no Gantry Workspace of
//     that namespace and name, returns the state of the KAITO Workspace's translation with a
//     null status instead of removing the resource, when a KAITO Workspace of that name
//     exists. The plan is "1 to import, 1 to change" (planRetry: a null state re-applies) and
//     the apply creates the Workspace by server-side apply and waits until it is Ready (or a
//     tuning run Succeeded). Nothing hands KAITO's pods over: the migration guide says to
//     stop KAITO's controller and remove its workload first.

// listFromKAITO is the gantry_workspace list block's `from` for KAITO Workspaces.
const listFromKAITO = "kaito"

// ListResourceConfigSchema is the common list config plus `from`.
func (r *workspaceResource) ListResourceConfigSchema(ctx context.Context, req list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	r.kindResource.ListResourceConfigSchema(ctx, req, resp)
	resp.Schema.Attributes["from"] = listschema.StringAttribute{
		Optional: true,
		MarkdownDescription: "What to list: `\"gantry\"` (the default) lists Gantry Workspaces, `\"kaito\"` lists the cluster's KAITO Workspaces as the workspaces that replace them.\n\n" +
			"With `\"kaito\"`, each KAITO Workspace (`kaito.sh/v1beta1`, filtered by `namespace` and `label_selector`) is returned as a `gantry_workspace` of the same namespace and name, " +
			"translated as the migration guide's table says; each KAITO field that does not carry over is a warning naming it. `terraform query -generate-config-out` writes the resource " +
			"and an `import` block; the plan of that import is an update that creates the Workspace. A cluster without KAITO's CRD lists none, with a warning.",
		Validators: []validator.String{stringvalidator.OneOf(listFromGantry, listFromKAITO)},
	}
}

// List lists Gantry Workspaces (from unset or "gantry") or KAITO Workspaces translated (from =
// "kaito").
func (r *workspaceResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var from, ns, selector types.String
	var diags diag.Diagnostics
	diags.Append(req.Config.GetAttribute(ctx, path.Root("from"), &from)...)
	diags.Append(req.Config.GetAttribute(ctx, path.Root("namespace"), &ns)...)
	diags.Append(req.Config.GetAttribute(ctx, path.Root("label_selector"), &selector)...)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	if from.ValueString() != listFromKAITO {
		r.kindResource.List(ctx, req, stream)
		return
	}
	c, _, err := r.data.get()
	if err != nil {
		stream.Results = list.ListResultsStreamDiagnostics(diag.Diagnostics{clientDiagnostic(err)})
		return
	}
	ri := resourceFor(c.Dynamic, adopt.KAITOWorkspaceGVR, ns.ValueString())
	stream.Results = func(push func(list.ListResult) bool) {
		opts := metav1.ListOptions{LabelSelector: selector.ValueString(), Limit: listPageSize}
		var sent int64
		for {
			page, err := ri.List(ctx, opts)
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				var d diag.Diagnostics
				d.AddWarning("No KAITO CRD", fmt.Sprintf("The cluster has no %s.%s resource at %s (KAITO's Workspace CRD is not installed): there is no KAITO Workspace to adopt.",
					adopt.KAITOWorkspaceGVR.Resource, adopt.KAITOWorkspaceGVR.Group, adopt.KAITOWorkspaceGVR.Version))
				push(list.ListResult{Diagnostics: d})
				return
			}
			if err != nil {
				push(list.ListResult{Diagnostics: diag.Diagnostics{apiDiagnostic("KAITO Workspace", "Listing", err)}})
				return
			}
			for i := range page.Items {
				if req.Limit > 0 && sent >= req.Limit {
					return
				}
				if !push(kaitoListResult(ctx, req, &page.Items[i])) {
					return
				}
				sent++
			}
			if opts.Continue = page.GetContinue(); opts.Continue == "" {
				return
			}
		}
	}
}

// kaitoListResult is the list result of one KAITO Workspace: identity {namespace, name},
// display name "kaito/<namespace>/<name>", the translated workspace (when the request
// includes resources) and the translation's warnings.
func kaitoListResult(ctx context.Context, req list.ListRequest, kw *unstructured.Unstructured) list.ListResult {
	id := objectID(kw.GetNamespace(), kw.GetName())
	u, warnings, err := kaitoAsWorkspace(kw)
	r := req.NewListResult(ctx)
	r.DisplayName = "kaito/" + id
	if err != nil {
		r.Diagnostics.AddError("Cannot Translate KAITO Workspace", fmt.Sprintf("KAITO Workspace %s: %v", id, err))
		return r
	}
	r.Diagnostics.Append(setIdentity(ctx, r.Identity, kw.GetNamespace(), kw.GetName())...)
	for _, w := range warnings {
		r.Diagnostics.AddWarning("KAITO Field Not Adopted", fmt.Sprintf("KAITO Workspace %s: %s.", id, w))
	}
	if !req.IncludeResource || r.Diagnostics.HasError() {
		return r
	}
	prior, diags := nullModel[workspaceModelV0](ctx, r.Resource)
	r.Diagnostics.Append(diags...)
	if diags.HasError() {
		return r
	}
	m, err := flattenWorkspaceSized(u, prior)
	if err != nil {
		r.Diagnostics.Append(readMappingDiagnostic("KAITO Workspace", r.DisplayName, err))
		return r
	}
	r.Diagnostics.Append(r.Resource.Set(ctx, m)...)
	return r
}

// kaitoAsWorkspace is adopt.FromKAITO as the unstructured Workspace flatten reads.
func kaitoAsWorkspace(kw *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	ws, warnings, err := adopt.FromKAITO(kw)
	if err != nil {
		return nil, nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ws)
	if err != nil {
		return nil, nil, err
	}
	return &unstructured.Unstructured{Object: obj}, warnings, nil
}

// ImportState is the common import, marked so that its Read may adopt a KAITO Workspace.
func (r *workspaceResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.kindResource.ImportState(ctx, req, resp)
	if !resp.Diagnostics.HasError() && resp.Private != nil {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, adoptPendingKey, []byte(`true`))...)
	}
}

// Read is the common refresh; the import's Read of a Workspace that does not exist adopts the
// KAITO Workspace of that namespace and name (see the top of this file).
func (r *workspaceResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	pending := false
	if req.Private != nil {
		b, d := req.Private.GetKey(ctx, adoptPendingKey)
		resp.Diagnostics.Append(d...)
		pending = len(b) > 0
	}
	if pending && resp.Private != nil {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, adoptPendingKey, nil)...)
	}
	r.kindResource.Read(ctx, req, resp)
	if !pending || resp.Diagnostics.HasError() || !resp.State.Raw.IsNull() {
		return
	}
	r.adoptKAITOOnImport(ctx, req, resp)
}

// adoptKAITOOnImport fills resp with the translation of the KAITO Workspace of the namespace
// and name being imported, its status null (so the plan is an update that creates the
// Workspace); resp stays removed (the import fails as for any missing object) when there is
// no such KAITO Workspace.
func (r *workspaceResource) adoptKAITOOnImport(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ns, name, diags := stateKey(ctx, req.State, true)
	if diags.HasError() || name == "" {
		return
	}
	c, _, err := r.data.get()
	if err != nil {
		return // the refresh above reported client errors
	}
	id := objectID(ns, name)
	kw, err := c.Dynamic.Resource(adopt.KAITOWorkspaceGVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			resp.Diagnostics.Append(apiDiagnostic("KAITO Workspace", "Reading", err))
		}
		return
	}
	u, _, err := kaitoAsWorkspace(kw)
	if err != nil {
		resp.Diagnostics.AddError("Cannot Translate KAITO Workspace", fmt.Sprintf("KAITO Workspace %s: %v", id, err))
		return
	}
	var prior workspaceModelV0
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, err := flattenWorkspaceSized(u, &prior)
	if err != nil {
		resp.Diagnostics.Append(readMappingDiagnostic("KAITO Workspace", "kaito/"+id, err))
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, ns, name)...)
	resp.Diagnostics.AddWarning("Adopting KAITO Workspace "+id,
		fmt.Sprintf("No Gantry Workspace %s exists yet: this import adopts the KAITO Workspace %s. The apply creates the Gantry Workspace and waits until it is ready; "+
			"its pods are new ones, beside KAITO's. Stop KAITO's controller and remove KAITO's workload first, so that both do not hold the same GPUs (see the migration guide).", id, id))
}
