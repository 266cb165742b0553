package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dsschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Data sources of the four kinds (gantry_performer, gantry_executor, gantry_package_set,
// gantry_workspace): an existing object read by name (and namespace), for modules and stacks
// that compose on objects another team or configuration manages. Each exposes what its
// resource exposes — the configuration as the cluster holds it and the status (endpoint,
// phase/state, node, revision, per-node package status) — all computed. There is one source
// of truth: the data source's schema is derived from the resource's (dataSourceSchema) and
// its value from the resource's mapping (the same flatten as import and refresh), so the two
// never drift apart. timeouts, write-only and plan-only attributes are left out.

// kindDataSource is the generic data source of one kind; M is the resource's model.
type kindDataSource[M any] struct {
	data *providerData
	// typeSuffix is the type name after "gantry_", e.g. "performer".
	typeSuffix string
	spec       wait.Spec
	namespaced bool
	// res is the resource whose schema and mapping the data source mirrors.
	res resource.Resource
	// flatten maps an object read from the cluster to the resource model (prior: all null).
	flatten func(u *unstructured.Unstructured, prior *M) (*M, error)
}

func (d *kindDataSource[M]) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_" + d.typeSuffix
}

func (d *kindDataSource[M]) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	pd, err := providerDataFrom(req.ProviderData)
	if err != nil {
		resp.Diagnostics.AddError("Unexpected Data Source Configure Type", err.Error())
		return
	}
	d.data = pd
}

// resourceSchema returns the mirrored resource's schema.
func (d *kindDataSource[M]) resourceSchema(ctx context.Context) rschema.Schema {
	var resp resource.SchemaResponse
	d.res.Schema(ctx, resource.SchemaRequest{}, &resp)
	return resp.Schema
}

func (d *kindDataSource[M]) Schema(ctx context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	rs := d.resourceSchema(ctx)
	resp.Schema = dsschema.Schema{
		MarkdownDescription: fmt.Sprintf("Reads an existing %s by name%s: the same attributes as the `gantry_%s` resource "+
			"(its configuration as the cluster holds it and its status), all computed. Use it to compose on objects another "+
			"configuration or team manages. Reading an object that does not exist is an error, naming the object. ",
			d.spec.Kind, map[bool]string{true: " and namespace", false: ""}[d.namespaced], d.typeSuffix) +
			destroyReadNote("the object does not exist, the cluster cannot be reached"),
		Attributes: dataSourceAttributes(rs.Attributes),
	}
	name := resp.Schema.Attributes["name"].(dsschema.StringAttribute) //nolint:forcetypeassert // every kind's name is a string
	name.Required, name.Computed = true, false
	name.Validators = []validator.String{stringvalidator.LengthAtLeast(1), dnsName{what: d.spec.Kind + " name"}}
	name.MarkdownDescription = fmt.Sprintf("Name of the %s to read.", d.spec.Kind)
	resp.Schema.Attributes["name"] = name
	if d.namespaced {
		ns := resp.Schema.Attributes["namespace"].(dsschema.StringAttribute) //nolint:forcetypeassert // as name
		ns.Optional = true
		ns.Validators = []validator.String{stringvalidator.LengthBetween(1, 63),
			stringvalidator.RegexMatches(dns1123Label, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")}
		ns.MarkdownDescription = fmt.Sprintf("Namespace of the %s; `default` when omitted.", d.spec.Kind)
		resp.Schema.Attributes["namespace"] = ns
	}
}

// Read reads the object (one GET through the provider's clients) and maps it like an import.
// Errors: the object does not exist ("<Kind> Not Found", naming it), API and mapping errors.
func (d *kindDataSource[M]) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var name, ns types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("name"), &name)...)
	if d.namespaced {
		resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("namespace"), &ns)...)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	namespace := ns.ValueString()
	if d.namespaced && namespace == "" {
		namespace = "default"
	}
	id := objectID(namespace, name.ValueString())
	ctx = tflog.SetField(ctx, d.typeSuffix, id)
	u, diags := readLive(ctx, d.data, d.spec, namespace, name.ValueString())
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	if u == nil {
		resp.Diagnostics.AddError(d.spec.Kind+" Not Found", fmt.Sprintf("%s %s does not exist in the cluster.", d.spec.Kind, id))
		return
	}
	v, diags := d.value(ctx, u)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.State.Raw = v
}

// value maps u to the data source's value: the resource model from flatten, encoded with the
// resource's schema and projected onto the data source's type (dropping what it leaves out).
func (d *kindDataSource[M]) value(ctx context.Context, u *unstructured.Unstructured) (tftypes.Value, diag.Diagnostics) {
	rs := d.resourceSchema(ctx)
	st := tfsdk.State{Schema: rs, Raw: tftypes.NewValue(rs.Type().TerraformType(ctx), nil)}
	prior, diags := nullModel[M](ctx, &tfsdk.Resource{Schema: rs, Raw: st.Raw})
	if diags.HasError() {
		return tftypes.Value{}, diags
	}
	m, err := d.flatten(u, prior)
	if err != nil {
		diags.Append(readMappingDiagnostic(d.spec.Kind, objectID(u.GetNamespace(), u.GetName()), err))
		return tftypes.Value{}, diags
	}
	diags.Append(st.Set(ctx, m)...)
	if diags.HasError() {
		return tftypes.Value{}, diags
	}
	var ds datasource.SchemaResponse
	d.Schema(ctx, datasource.SchemaRequest{}, &ds)
	out, err := project(st.Raw, ds.Schema.Type().TerraformType(ctx))
	if err != nil {
		diags.AddError("Error Reading "+d.spec.Kind, fmt.Sprintf("mapping %s to the data source: %s; please report this issue to the provider developers", d.spec.Kind, err))
	}
	return out, diags
}

// planOnlyAttributes are computed at plan from a change of the configuration (the package set's
// rollout preview, the performer's candidate nodes): a data source reads no change, so they are
// left out of it.
var planOnlyAttributes = map[string]bool{"rollout_preview": true, "candidate_nodes": true}

// dataSourceAttributes mirrors resource attributes as computed data source attributes, with
// the same types (custom types included) and descriptions; timeouts, the plan-only and
// write-only attributes are left out.
func dataSourceAttributes(attrs map[string]rschema.Attribute) map[string]dsschema.Attribute {
	out := make(map[string]dsschema.Attribute, len(attrs))
	for name, a := range attrs {
		if name == "timeouts" || planOnlyAttributes[name] || a.IsWriteOnly() {
			continue
		}
		if da := dataSourceAttribute(a); da != nil {
			out[name] = da
		}
	}
	return out
}

// dataSourceAttribute mirrors one resource attribute (nil for a kind of attribute no Gantry
// resource uses).
func dataSourceAttribute(a rschema.Attribute) dsschema.Attribute {
	desc := a.GetMarkdownDescription()
	sens := a.IsSensitive()
	switch t := a.(type) {
	case rschema.StringAttribute:
		return dsschema.StringAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, CustomType: t.CustomType}
	case rschema.BoolAttribute:
		return dsschema.BoolAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, CustomType: t.CustomType}
	case rschema.Int64Attribute:
		return dsschema.Int64Attribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, CustomType: t.CustomType}
	case rschema.Float64Attribute:
		return dsschema.Float64Attribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, CustomType: t.CustomType}
	case rschema.ListAttribute:
		return dsschema.ListAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, ElementType: t.ElementType, CustomType: t.CustomType}
	case rschema.MapAttribute:
		return dsschema.MapAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, ElementType: t.ElementType, CustomType: t.CustomType}
	case rschema.SingleNestedAttribute:
		return dsschema.SingleNestedAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc, Attributes: dataSourceAttributes(t.Attributes)}
	case rschema.ListNestedAttribute:
		return dsschema.ListNestedAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc,
			NestedObject: dsschema.NestedAttributeObject{Attributes: dataSourceAttributes(t.NestedObject.Attributes)}}
	case rschema.MapNestedAttribute:
		return dsschema.MapNestedAttribute{Computed: true, Sensitive: sens, MarkdownDescription: desc,
			NestedObject: dsschema.NestedAttributeObject{Attributes: dataSourceAttributes(t.NestedObject.Attributes)}}
	}
	return nil
}

// project rebuilds v with type target: object attributes target lacks are dropped, recursively
// through objects, lists, sets and maps. Errors: a value whose shape differs from target.
func project(v tftypes.Value, target tftypes.Type) (tftypes.Value, error) {
	if !v.IsKnown() || v.IsNull() {
		return tftypes.NewValue(target, nil), nil
	}
	switch tt := target.(type) {
	case tftypes.Object:
		var in map[string]tftypes.Value
		if err := v.As(&in); err != nil {
			return tftypes.Value{}, err
		}
		out := make(map[string]tftypes.Value, len(tt.AttributeTypes))
		for name, at := range tt.AttributeTypes {
			e, ok := in[name]
			if !ok {
				out[name] = tftypes.NewValue(at, nil)
				continue
			}
			p, err := project(e, at)
			if err != nil {
				return tftypes.Value{}, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = p
		}
		return tftypes.NewValue(tt, out), nil
	case tftypes.List, tftypes.Set:
		var in []tftypes.Value
		if err := v.As(&in); err != nil {
			return tftypes.Value{}, err
		}
		et := elementType(tt)
		out := make([]tftypes.Value, 0, len(in))
		for _, e := range in {
			p, err := project(e, et)
			if err != nil {
				return tftypes.Value{}, err
			}
			out = append(out, p)
		}
		return tftypes.NewValue(tt, out), nil
	case tftypes.Map:
		var in map[string]tftypes.Value
		if err := v.As(&in); err != nil {
			return tftypes.Value{}, err
		}
		out := make(map[string]tftypes.Value, len(in))
		for k, e := range in {
			p, err := project(e, tt.ElementType)
			if err != nil {
				return tftypes.Value{}, err
			}
			out[k] = p
		}
		return tftypes.NewValue(tt, out), nil
	}
	return v, nil
}

// elementType is the element type of a list or set type.
func elementType(t tftypes.Type) tftypes.Type {
	if l, ok := t.(tftypes.List); ok {
		return l.ElementType
	}
	return t.(tftypes.Set).ElementType //nolint:forcetypeassert // project passes only lists and sets
}
