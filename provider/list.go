package provider

import (
	"context"
	"fmt"
	"iter"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/dynamic"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// List resources (`terraform query`, Terraform >= 1.14): every Gantry resource type is also a list
// resource, so a team can find objects of a kind (also those made with kubectl) and adopt them
// with -generate-config-out. The block takes label_selector and, for namespaced kinds,
// namespace. Objects are listed in pages of 500 up to `limit` and mapped by the import's code, so
// the generated configuration is what a refresh of the imported object would hold.

// listPageSize is the LIST page size (objects per request) of a list resource.
const listPageSize = 500

// listConfigSchema returns the config schema of a kind's list block.
func listConfigSchema(kind string, namespaced bool) listschema.Schema {
	attrs := map[string]listschema.Attribute{
		"label_selector": listschema.StringAttribute{
			Optional: true,
			MarkdownDescription: fmt.Sprintf("Only %ss whose labels match this Kubernetes label selector, e.g. "+
				"`\"team=ml,tier!=dev\"` or `\"app in (a,b)\"`. All when omitted.", kind),
			Validators: []validator.String{checkString{"a Kubernetes label selector", func(s string) error {
				_, err := labels.Parse(s)
				return err
			}, "Invalid List Configuration"}},
		},
	}
	if namespaced {
		attrs["namespace"] = listschema.StringAttribute{
			Optional:            true,
			MarkdownDescription: fmt.Sprintf("Only %ss in this namespace. All namespaces when omitted.", kind),
		}
	}
	return listschema.Schema{
		MarkdownDescription: fmt.Sprintf("Lists the %ss in the cluster for `terraform query` (Terraform 1.14 and later), "+
			"with their identity and, with `include_resource = true`, their attributes as an import would read them.", kind),
		Attributes: attrs,
	}
}

// listObjects is the List of every Gantry list resource: the objects of spec's kind matching
// the list block's namespace and label_selector, each pushed with its identity and display
// name "<namespace>/<name>" and, when the request includes resources, its attributes mapped
// by flatten from a model whose every attribute is null (as after an import). API errors are
// pushed as one result carrying an error diagnostic naming the kind.
func listObjects[M any](ctx context.Context, data *providerData, spec wait.Spec, namespaced bool,
	flatten func(u *unstructured.Unstructured, prior *M) (*M, error), req list.ListRequest, stream *list.ListResultsStream) {
	ns, selector, diags := listSelection(ctx, req, namespaced)
	if diags.HasError() {
		stream.Results = list.ListResultsStreamDiagnostics(diags)
		return
	}
	c, _, err := data.get()
	if err != nil {
		stream.Results = list.ListResultsStreamDiagnostics(diag.Diagnostics{clientDiagnostic(err)})
		return
	}
	stream.Results = pagedResults(ctx, resourceFor(c.Dynamic, spec.GVR, ns), selector, req.Limit,
		func(u *unstructured.Unstructured) list.ListResult { return listResult(ctx, req, u, flatten) },
		func(err error) list.ListResult {
			return list.ListResult{Diagnostics: diag.Diagnostics{apiDiagnostic(spec.Kind, "Listing", err)}}
		})
}

// listSelection reads the list block's namespace ("" when omitted, and always for a
// cluster-scoped kind: namespaced false) and label_selector ("" when omitted).
func listSelection(ctx context.Context, req list.ListRequest, namespaced bool) (namespace, selector string, diags diag.Diagnostics) {
	var ns, sel types.String
	diags.Append(req.Config.GetAttribute(ctx, path.Root("label_selector"), &sel)...)
	if namespaced {
		diags.Append(req.Config.GetAttribute(ctx, path.Root("namespace"), &ns)...)
	}
	return ns.ValueString(), sel.ValueString(), diags
}

// pagedResults is the stream of a list resource over ri: the objects matching the label
// selector, listed page by page (listPageSize objects a LIST request), each pushed as
// result(object), at most limit of them (all when limit is 0 or less), stopping early when
// Terraform stops reading. A failed LIST pushes failed(err) and ends the stream.
func pagedResults(ctx context.Context, ri dynamic.ResourceInterface, selector string, limit int64,
	result func(*unstructured.Unstructured) list.ListResult, failed func(error) list.ListResult) iter.Seq[list.ListResult] {
	return func(push func(list.ListResult) bool) {
		opts := metav1.ListOptions{LabelSelector: selector, Limit: listPageSize}
		var sent int64
		for {
			page, err := ri.List(ctx, opts)
			if err != nil {
				push(failed(err))
				return
			}
			for i := range page.Items {
				if limit > 0 && sent >= limit {
					return
				}
				if !push(result(&page.Items[i])) {
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

// listResult maps one listed object to its list result (identity, display name and, when the
// request asks for it, the resource's attributes).
func listResult[M any](ctx context.Context, req list.ListRequest, u *unstructured.Unstructured, flatten func(*unstructured.Unstructured, *M) (*M, error)) list.ListResult {
	r := req.NewListResult(ctx)
	ns, name := u.GetNamespace(), u.GetName()
	r.DisplayName = objectID(ns, name)
	r.Diagnostics.Append(setIdentity(ctx, r.Identity, ns, name)...)
	setListResource(ctx, req, &r, u, flatten, u.GetKind())
	return r
}

// setListResource sets r's resource, when the request includes resources and r has no error
// yet, to u mapped by flatten from a model whose every attribute is null (as after an
// import); a mapping error is r's error, naming the object as kind and r's display name.
func setListResource[M any](ctx context.Context, req list.ListRequest, r *list.ListResult, u *unstructured.Unstructured,
	flatten func(*unstructured.Unstructured, *M) (*M, error), kind string) {
	if !req.IncludeResource || r.Diagnostics.HasError() {
		return
	}
	prior, diags := nullModel[M](ctx, r.Resource)
	r.Diagnostics.Append(diags...)
	if diags.HasError() {
		return
	}
	m, err := flatten(u, prior)
	if err != nil {
		r.Diagnostics.Append(readMappingDiagnostic(kind, r.DisplayName, err))
		return
	}
	r.Diagnostics.Append(r.Resource.Set(ctx, m)...)
}

// nullModel returns the model M whose every attribute is null, read from a value of res's
// schema (what ImportState leaves before Read fills it in), so typed nested values such as
// timeouts carry their attribute types.
func nullModel[M any](ctx context.Context, res *tfsdk.Resource) (*M, diag.Diagnostics) {
	var diags diag.Diagnostics
	typ, ok := res.Schema.Type().TerraformType(ctx).(tftypes.Object)
	if !ok {
		diags.AddError("Unexpected Resource Schema", "the resource schema is not an object; please report this issue to the provider developers")
		return nil, diags
	}
	vals := make(map[string]tftypes.Value, len(typ.AttributeTypes))
	for name, t := range typ.AttributeTypes {
		vals[name] = tftypes.NewValue(t, nil)
	}
	empty := tfsdk.Resource{Schema: res.Schema, Raw: tftypes.NewValue(typ, vals)}
	var m M
	diags.Append(empty.Get(ctx, &m)...)
	return &m, diags
}
