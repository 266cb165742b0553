package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/resource"
)

// kindResource is what every Gantry resource type shares: each embeds one (M its Terraform model,
// ops its descriptor) and adds only its own Metadata, Schema, validation and, for
// gantry_performer, plan-time derived attributes. It supplies Configure, CRUD (lifecycle.go),
// Read with import adoption (adopt.go), ModifyPlan (ops.planRetry: a failure stays in the plan
// until fixed), identity import (identity.go) and the list resource of the same name (list.go).
type kindResource[M any] struct {
	data *providerData
	ops  *kindOps[M]
}

func (r *kindResource[M]) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	d, err := providerDataFrom(req.ProviderData)
	if err != nil {
		resp.Diagnostics.AddError("Unexpected Resource Configure Type", err.Error())
		return
	}
	r.data = d
}

func (r *kindResource[M]) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.ops.create(ctx, r.data, req, resp)
}

// Read refreshes the state from the object (readInto); for a kind with an adopter, the
// import's Read of an object that does not exist adopts the upstream object (readAdopting).
func (r *kindResource[M]) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	if r.ops.adopt != nil {
		r.readAdopting(ctx, req, resp)
		return
	}
	readInto(ctx, r.data, r.ops.spec, req, resp, r.ops.flatten)
}

func (r *kindResource[M]) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.ops.update(ctx, r.data, req, resp)
}

// Delete deletes the object and waits until it is gone (a PackageSet's finalizer first runs
// the uninstall stages of packages with uninstall enabled, releases cordons and removes the
// node annotations).
func (r *kindResource[M]) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	r.ops.delete(ctx, r.data, req, resp)
}

// ModifyPlan is planRetry: while the state says the object is not done (see the kind's
// kindOps: summaryAttr, notLive, settled), the plan is an in-place update that re-applies the
// configuration and waits again. No API call is made.
func (r *kindResource[M]) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.ops.planRetry(ctx, req, resp)
}

// ImportState accepts "<namespace>/<name>" (a cluster-scoped kind such as PackageSet: the
// name) or an identity; Read fills in the rest from the cluster. For a kind with an adopter
// the import is marked so that its Read may adopt the upstream object (markAdoptPending).
func (r *kindResource[M]) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	importObject(ctx, r.ops.spec.Kind, r.ops.spec.Namespaced, req, resp)
	if r.ops.adopt != nil {
		markAdoptPending(ctx, resp)
	}
}

// IdentitySchema is {namespace, name} ({name} for a cluster-scoped kind; Terraform >= 1.12):
// import blocks may give `identity = { ... }`, and `terraform query` returns it.
func (r *kindResource[M]) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = identitySchema(r.ops.spec.Kind, r.ops.spec.Namespaced)
}

// ListResourceConfigSchema is the config of the kind's `list` block (terraform query), with
// `from` and the adopter's attributes for a kind with an adopter.
func (r *kindResource[M]) ListResourceConfigSchema(_ context.Context, _ list.ListResourceSchemaRequest, resp *list.ListResourceSchemaResponse) {
	resp.Schema = listConfigSchema(r.ops.spec.Kind, r.ops.spec.Namespaced)
	if r.ops.adopt != nil {
		r.ops.adopt.addListAttributes(resp.Schema.Attributes)
	}
}

// List returns the objects a list block selects, mapped as an import reads them (listObjects),
// or, for a kind with an adopter and `from` its upstream, the upstream objects translated
// (listAdopted).
func (r *kindResource[M]) List(ctx context.Context, req list.ListRequest, stream *list.ListResultsStream) {
	if r.ops.adopt != nil && r.listAdopted(ctx, req, stream) {
		return
	}
	listObjects(ctx, r.data, r.ops.spec, r.ops.spec.Namespaced, r.ops.flatten, req, stream)
}
