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
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Adopting Skyhook objects (issue 40 item 9). Two halves, both through the real CLI:
//
//   - `terraform query` with `from = "skyhook"` in a gantry_package_set list block lists the
//     cluster's Skyhooks (skyhook.nvidia.com/v1alpha1, read as unstructured) and returns, for
//     each, the gantry_package_set that replaces it (adopt.FromSkyhook, mapped by the same
//     flatten as a refresh) with identity {name = <the Skyhook's name>}, and a warning per
//     Skyhook field that does not carry over. `-generate-config-out` writes a resource block
//     (with adopt_from_skyhook) and an import block by that identity.
//   - Terraform imports by identity, and importing an object that does not exist fails
//     ("Cannot import non-existent remote object"). The PackageSet does not exist yet, so
//     ImportState marks the import (private state adoptPendingKey) and Read, finding no
//     PackageSet of that name, returns the state of the Skyhook's translation with a null
//     status instead of removing the resource, when a Skyhook of that name exists. The plan
//     is then "1 to import, 1 to change" (planRetry: a null status re-applies), and the apply
//     creates the PackageSet by server-side apply (an update is an apply, which creates) and
//     waits for it to be complete, as for any set. The reconciler does the node hand-over
//     (packageset.AdoptSkyhook). An import of a name with neither a PackageSet nor a Skyhook
//     still fails as before, and a PackageSet that exists is imported as usual.

// adoptPendingKey is the private-state key ImportState sets and the next Read clears: the
// Read is the import's, so a missing PackageSet may be adopted from a Skyhook of its name.
const adoptPendingKey = "gantry.adopt"

// Values of the list block's `from`.
const (
	listFromGantry  = "gantry"
	listFromSkyhook = "skyhook"
)

// ListResourceConfigSchema is the common list config plus `from` and `skyhook_agent_image`.
func (r *packageSetResource) ListResourceConfigSchema(ctx context.Context, req list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	r.kindResource.ListResourceConfigSchema(ctx, req, resp)
	resp.Schema.Attributes["from"] = listschema.StringAttribute{
		Optional: true,
		MarkdownDescription: "What to list: `\"gantry\"` (the default) lists PackageSets, `\"skyhook\"` lists the cluster's Skyhook (NVIDIA Skyhook / NodeWright) objects as the package sets that replace them.\n\n" +
			"With `\"skyhook\"`, each Skyhook (`skyhook.nvidia.com/v1alpha1`, filtered by `label_selector`) is returned as a `gantry_package_set` of the same name, translated as the " +
			"migration guide's table says, with `adopt_from_skyhook` set so that nodes Skyhook completed do not run their packages again; each Skyhook field that does not carry over is a " +
			"warning naming it. `terraform query -generate-config-out` writes the resource and an `import` block; the plan of that import is an update that creates the PackageSet. " +
			"A cluster without Skyhook's CRD lists none, with a warning.",
		Validators: []validator.String{stringvalidator.OneOf(listFromGantry, listFromSkyhook)},
	}
	resp.Schema.Attributes["skyhook_agent_image"] = listschema.StringAttribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("Skyhook agent image the translated packages run with (`skyhook { agent_image }`) when a package sets no `agentImageOverride`, e.g. the `AGENT_IMAGE` of your Skyhook operator.\n\n"+
			"Default `%s` (the NodeWright chart's default). Only with `from = \"skyhook\"`.", adopt.DefaultSkyhookAgentImage),
	}
}

// List lists PackageSets (from unset or "gantry") or Skyhooks translated (from = "skyhook").
func (r *packageSetResource) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	var from, agent types.String
	var diags diag.Diagnostics
	diags.Append(req.Config.GetAttribute(ctx, path.Root("from"), &from)...)
	diags.Append(req.Config.GetAttribute(ctx, path.Root("skyhook_agent_image"), &agent)...)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	if from.ValueString() != listFromSkyhook {
		r.kindResource.List(ctx, req, stream)
		return
	}
	r.listSkyhooks(ctx, agent.ValueString(), req, stream)
}

// listSkyhooks streams a gantry_package_set per Skyhook matching the block's label_selector.
func (r *packageSetResource) listSkyhooks(ctx context.Context, agentImage string, req list.ListRequest, stream *list.ListResultsStream) {
	var selector types.String
	if d := req.Config.GetAttribute(ctx, path.Root("label_selector"), &selector); d.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(d)
		return
	}
	c, _, err := r.data.get()
	if err != nil {
		stream.Results = list.ListResultsStreamDiagnostics(diag.Diagnostics{clientDiagnostic(err)})
		return
	}
	ri := c.Dynamic.Resource(adopt.SkyhookGVR)
	stream.Results = func(push func(list.ListResult) bool) {
		opts := metav1.ListOptions{LabelSelector: selector.ValueString(), Limit: listPageSize}
		var sent int64
		for {
			page, err := ri.List(ctx, opts)
			if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
				var d diag.Diagnostics
				d.AddWarning("No Skyhook CRD", fmt.Sprintf("The cluster has no %s.%s resource (Skyhook's CRD is not installed): there is no Skyhook to adopt.",
					adopt.SkyhookGVR.Resource, adopt.SkyhookGVR.Group))
				push(list.ListResult{Diagnostics: d})
				return
			}
			if err != nil {
				push(list.ListResult{Diagnostics: diag.Diagnostics{apiDiagnostic("Skyhook", "Listing", err)}})
				return
			}
			for i := range page.Items {
				if req.Limit > 0 && sent >= req.Limit {
					return
				}
				if !push(skyhookListResult(ctx, req, &page.Items[i], agentImage)) {
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

// skyhookListResult is the list result of one Skyhook: identity {name}, display name
// "skyhook/<name>", the translated package set (when the request includes resources) and
// the translation's warnings.
func skyhookListResult(ctx context.Context, req list.ListRequest, sky *unstructured.Unstructured, agentImage string) list.ListResult {
	u, warnings, err := skyhookAsPackageSet(sky, agentImage)
	r := req.NewListResult(ctx)
	r.DisplayName = "skyhook/" + sky.GetName()
	if err != nil {
		r.Diagnostics.AddError("Cannot Translate Skyhook", fmt.Sprintf("Skyhook %s: %v", sky.GetName(), err))
		return r
	}
	r.Diagnostics.Append(setIdentity(ctx, r.Identity, "", sky.GetName())...)
	for _, w := range warnings {
		r.Diagnostics.AddWarning("Skyhook Field Not Adopted", fmt.Sprintf("Skyhook %s: %s.", sky.GetName(), w))
	}
	if !req.IncludeResource || r.Diagnostics.HasError() {
		return r
	}
	prior, diags := nullModel[packageSetModel](ctx, r.Resource)
	r.Diagnostics.Append(diags...)
	if diags.HasError() {
		return r
	}
	m, err := flattenPackageSet(u, prior)
	if err != nil {
		r.Diagnostics.Append(readMappingDiagnostic("Skyhook", r.DisplayName, err))
		return r
	}
	r.Diagnostics.Append(r.Resource.Set(ctx, m)...)
	return r
}

// skyhookAsPackageSet is adopt.FromSkyhook as the unstructured PackageSet flatten reads.
func skyhookAsPackageSet(sky *unstructured.Unstructured, agentImage string) (*unstructured.Unstructured, []string, error) {
	ps, warnings, err := adopt.FromSkyhook(sky, agentImage)
	if err != nil {
		return nil, nil, err
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ps)
	if err != nil {
		return nil, nil, err
	}
	return &unstructured.Unstructured{Object: obj}, warnings, nil
}

// ImportState is the common import, marked so that its Read may adopt a Skyhook.
func (r *packageSetResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.kindResource.ImportState(ctx, req, resp)
	if !resp.Diagnostics.HasError() && resp.Private != nil {
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, adoptPendingKey, []byte(`true`))...)
	}
}

// Read is the common refresh; the import's Read of a PackageSet that does not exist adopts
// the Skyhook of that name (see the top of this file).
func (r *packageSetResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
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
	r.adoptOnImport(ctx, req, resp)
}

// adoptOnImport fills resp with the translation of the Skyhook named like the PackageSet
// being imported, its status null (so the plan is an update that creates the PackageSet);
// resp stays removed (the import fails as for any missing object) when there is no such
// Skyhook.
func (r *packageSetResource) adoptOnImport(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	_, name, diags := stateKey(ctx, req.State, false)
	if diags.HasError() || name == "" {
		return
	}
	c, _, err := r.data.get()
	if err != nil {
		return // the refresh above reported client errors
	}
	sky, err := c.Dynamic.Resource(adopt.SkyhookGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			resp.Diagnostics.Append(apiDiagnostic("Skyhook", "Reading", err))
		}
		return
	}
	u, _, err := skyhookAsPackageSet(sky, "")
	if err != nil {
		resp.Diagnostics.AddError("Cannot Translate Skyhook", fmt.Sprintf("Skyhook %s: %v", name, err))
		return
	}
	var prior packageSetModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	m, err := flattenPackageSet(u, &prior)
	if err != nil {
		resp.Diagnostics.Append(readMappingDiagnostic("Skyhook", "skyhook/"+name, err))
		return
	}
	m.Status, m.CompleteNodes = types.StringNull(), types.StringNull()
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
	resp.Diagnostics.Append(setIdentity(ctx, resp.Identity, "", name)...)
	resp.Diagnostics.AddWarning("Adopting Skyhook "+name,
		fmt.Sprintf("No PackageSet %s exists yet: this import adopts the Skyhook %s. The apply creates the PackageSet (annotated %s=%s) and waits until it is complete; "+
			"on each node, the packages Skyhook completed at the same version are recorded complete without running again. Stop Skyhook's operator first (see the migration guide).",
			name, name, v1alpha1.AnnotationAdoptFromSkyhook, name))
}
