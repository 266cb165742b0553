package provider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

var _ datasource.DataSourceWithConfigure = (*nodesDataSource)(nil)

// NewNodesDataSource returns the gantry_nodes data source.
func NewNodesDataSource() datasource.DataSource { return &nodesDataSource{} }

type nodesDataSource struct{ data *providerData }

// nodesModel is gantry_nodes' Terraform model.
type nodesModel struct {
	GPUProduct   types.String      `tfsdk:"gpu_product"`
	TEEType      types.String      `tfsdk:"tee_type"`
	RuntimeClass types.String      `tfsdk:"runtime_class"`
	InstanceType types.String      `tfsdk:"instance_type"`
	MinFreeGPUs  types.Int64       `tfsdk:"min_free_gpus"`
	ReadyOnly    types.Bool        `tfsdk:"ready_only"`
	Labels       map[string]string `tfsdk:"labels"`
	MinNodes     types.Int64       `tfsdk:"min_nodes"`
	Names        []string          `tfsdk:"names"`
	GPUProducts  []string          `tfsdk:"gpu_products"`
	Nodes        []nodeModel       `tfsdk:"nodes"`
}

type nodeModel struct {
	Name           types.String      `tfsdk:"name"`
	GPUProduct     types.String      `tfsdk:"gpu_product"`
	GPUCapacity    types.Int64       `tfsdk:"gpu_capacity"`
	GPUAllocatable types.Int64       `tfsdk:"gpu_allocatable"`
	GPUInUse       types.Int64       `tfsdk:"gpu_in_use"`
	GPUFree        types.Int64       `tfsdk:"gpu_free"`
	TEETypes       []string          `tfsdk:"tee_types"`
	RuntimeClasses []string          `tfsdk:"runtime_classes"`
	Taints         []taintModel      `tfsdk:"taints"`
	Ready          types.Bool        `tfsdk:"ready"`
	InstanceType   types.String      `tfsdk:"instance_type"`
	Labels         map[string]string `tfsdk:"labels"`
}

type taintModel struct {
	Key    types.String `tfsdk:"key"`
	Value  types.String `tfsdk:"value"`
	Effect types.String `tfsdk:"effect"`
}

func (d *nodesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_nodes"
}

func (d *nodesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	computed := func(desc string) schema.StringAttribute {
		return schema.StringAttribute{Computed: true, MarkdownDescription: desc}
	}
	count := func(desc string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: desc}
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The cluster's GPU and TEE inventory: every node with its NVIDIA GPU product and counts (capacity, " +
			"allocatable, requested by running pods, free), TEE types (node-feature-discovery labels), usable RuntimeClasses, " +
			"taints and readiness, optionally filtered. With `min_nodes`, reading fails when fewer nodes match, with a message " +
			"saying what the cluster has, so a module can stop at plan time instead of waiting for a pod that can never be " +
			"scheduled. Reads nodes, pods and RuntimeClasses cluster-wide (`list` on each). " + destroyReadNote("`min_nodes` is not met, the cluster cannot be reached"),
		Attributes: map[string]schema.Attribute{
			"gpu_product": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only nodes whose `nvidia.com/gpu.product` label is this, e.g. `NVIDIA-H100-80GB-HBM3` (a label value: GPU feature discovery writes spaces as `-`).",
				Validators:          []validator.String{gpuProductValidator{}}},
			"tee_type": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only nodes supporting this TEE type: `sev-snp`, `tdx` or `sgx`.",
				Validators:          []validator.String{stringvalidator.OneOf(hardware.TEETypeNames()...)}},
			"runtime_class": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only nodes where this RuntimeClass can run (its `scheduling.nodeSelector` matches).",
				Validators:          []validator.String{dnsName{what: "RuntimeClass name"}}},
			"instance_type": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Only nodes whose `node.kubernetes.io/instance-type` label is this.",
				Validators:          []validator.String{labelString{value: true}}},
			"min_free_gpus": schema.Int64Attribute{Optional: true, CustomType: wholeNumberType{},
				MarkdownDescription: "Only nodes with at least this many free `nvidia.com/gpu` devices (allocatable minus requested).",
				Validators:          []validator.Int64{int64validator.AtLeast(0)}},
			"ready_only": schema.BoolAttribute{Optional: true, MarkdownDescription: "Only nodes whose Ready condition is True."},
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Only nodes carrying all these labels with these values.",
				Validators:          []validator.Map{labelsValidator{}}},
			"min_nodes": schema.Int64Attribute{Optional: true, CustomType: wholeNumberType{},
				MarkdownDescription: "Fail the read when fewer nodes match, naming what was asked and the nodes closest to it.",
				Validators:          []validator.Int64{int64validator.AtLeast(1)}},
			"names": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the matching nodes, sorted."},
			"gpu_products": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The distinct GPU products of the matching nodes, sorted."},
			"nodes": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The matching nodes, sorted by name.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":            computed("Node name."),
					"gpu_product":     computed("`nvidia.com/gpu.product` label; null when absent."),
					"gpu_capacity":    count("`nvidia.com/gpu` capacity, in devices."),
					"gpu_allocatable": count("`nvidia.com/gpu` allocatable, in devices."),
					"gpu_in_use":      count("`nvidia.com/gpu` requested by the pods bound to the node that have not terminated."),
					"gpu_free":        count("`gpu_allocatable` minus `gpu_in_use` (never below 0)."),
					"tee_types": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "TEE types the node supports: `sev-snp`, `tdx`, `sgx`."},
					"runtime_classes": schema.ListAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "RuntimeClasses whose `scheduling.nodeSelector` the node matches."},
					"taints": schema.ListNestedAttribute{Computed: true, MarkdownDescription: "The node's taints.",
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"key": computed("Taint key."), "value": computed("Taint value; null when empty."),
							"effect": computed("`NoSchedule`, `PreferNoSchedule` or `NoExecute`."),
						}}},
					"ready":         schema.BoolAttribute{Computed: true, MarkdownDescription: "The node's Ready condition is True."},
					"instance_type": computed("`node.kubernetes.io/instance-type` label; null when absent."),
					"labels": schema.MapAttribute{Computed: true, ElementType: types.StringType,
						MarkdownDescription: "The node's labels."},
				}}},
		},
	}
}

func (d *nodesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	pd, err := providerDataFrom(req.ProviderData)
	if err != nil {
		resp.Diagnostics.AddError("Unexpected Data Source Configure Type", err.Error())
		return
	}
	d.data = pd
}

// Read lists nodes, pods (not terminated) and RuntimeClasses, builds the inventory
// (hardware.Inventory) and keeps the nodes the filter matches. Errors: API errors naming the
// kind listed; with min_nodes, "Not Enough Matching Nodes" on min_nodes naming the filter and
// the nodes closest to it (hardware.NodeFilter.Shortfall).
func (d *nodesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	var m nodesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	c, _, err := d.data.get()
	if err != nil {
		resp.Diagnostics.Append(clientDiagnostic(err))
		return
	}
	core := c.Core.CoreV1()
	nodes, err := core.Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		resp.Diagnostics.Append(apiDiagnostic("Node", "Listing", err))
		return
	}
	pods, err := core.Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.phase!=Succeeded,status.phase!=Failed"})
	if err != nil {
		resp.Diagnostics.Append(apiDiagnostic("Pod", "Listing", err))
		return
	}
	rcs, err := c.Core.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		resp.Diagnostics.Append(apiDiagnostic("RuntimeClass", "Listing", err))
		return
	}
	inv := hardware.Inventory(nodes.Items, pods.Items, rcs.Items)
	f := hardware.NodeFilter{GPUProduct: m.GPUProduct.ValueString(), TEEType: m.TEEType.ValueString(),
		RuntimeClass: m.RuntimeClass.ValueString(), InstanceType: m.InstanceType.ValueString(),
		MinFreeGPUs: m.MinFreeGPUs.ValueInt64(), ReadyOnly: m.ReadyOnly.ValueBool(), Labels: m.Labels}
	if !m.MinNodes.IsNull() {
		if why := f.Shortfall(inv, int(m.MinNodes.ValueInt64())); why != "" {
			resp.Diagnostics.AddAttributeError(path.Root("min_nodes"), "Not Enough Matching Nodes", why+".")
			return
		}
	}
	m.Names, m.GPUProducts, m.Nodes = []string{}, []string{}, []nodeModel{}
	products := map[string]bool{}
	for _, n := range inv {
		if !f.Match(n) {
			continue
		}
		m.Names = append(m.Names, n.Name)
		if n.GPUProduct != "" && !products[n.GPUProduct] {
			products[n.GPUProduct] = true
			m.GPUProducts = append(m.GPUProducts, n.GPUProduct)
		}
		m.Nodes = append(m.Nodes, nodeModelOf(n))
	}
	sort.Strings(m.GPUProducts)
	if len(m.Names) == 0 && f.GPUProduct != "" {
		if d := noSuchGPUProduct(f.GPUProduct, inv); d != nil {
			resp.Diagnostics.Append(d)
		}
	}
	tflog.Debug(ctx, "node inventory read", map[string]interface{}{"nodes": len(inv), "matching": len(m.Nodes), "filter": f.String()})
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// noSuchGPUProduct is the warning of a read that matched nothing while gpu_product was set:
// when no node at all has that product, it says so and names the products the cluster has,
// closest first (as unknown presets and instance types are named).
func noSuchGPUProduct(product string, inv []hardware.NodeInventory) diag.Diagnostic {
	have := map[string]bool{}
	var names []string
	for _, n := range inv {
		if n.GPUProduct != "" && !have[n.GPUProduct] {
			have[n.GPUProduct] = true
			names = append(names, n.GPUProduct)
		}
	}
	if have[product] {
		return nil
	}
	sort.Strings(names)
	detail := fmt.Sprintf("gpu_product = %q: no node of the cluster has the label nvidia.com/gpu.product=%s, so the result is empty.", product, product)
	switch near := hardware.Closest(product, names, 3); {
	case len(names) == 0:
		detail += " No node has a nvidia.com/gpu.product label at all (is GPU feature discovery running?)."
	case len(near) > 0:
		detail += fmt.Sprintf(" Closest: %s. The cluster's GPU products: %s.", strings.Join(near, ", "), strings.Join(names, ", "))
	default:
		detail += fmt.Sprintf(" The cluster's GPU products: %s.", strings.Join(names, ", "))
	}
	return diag.NewAttributeWarningDiagnostic(path.Root("gpu_product"), "No Node Has This GPU Product", detail)
}

// gpuProductValidator checks gpu_product is a label value, and if not, names the GPU products
// of the instance-type catalog closest to it (spaces are the usual slip: "NVIDIA H100 80GB").
type gpuProductValidator struct{}

func (gpuProductValidator) Description(context.Context) string {
	return "a nvidia.com/gpu.product label value"
}
func (v gpuProductValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (gpuProductValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	errs := validation.IsValidLabelValue(s)
	if len(errs) == 0 {
		return
	}
	var known []string
	for _, it := range hardware.InstanceTypes() {
		if it.GPUProduct != "" && !slices.Contains(known, it.GPUProduct) {
			known = append(known, it.GPUProduct)
		}
	}
	hint := ""
	if near := hardware.Closest(strings.ReplaceAll(s, " ", "-"), known, 3); len(near) > 0 {
		hint = " Closest known products: " + strings.Join(near, ", ") + "."
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid GPU Product",
		fmt.Sprintf("%s: %q is not a nvidia.com/gpu.product label value (%s), so no node can have it; GPU feature discovery writes spaces as '-'.%s",
			req.Path, s, strings.Join(errs, "; "), hint))
}

// nodeModelOf maps one inventory entry to its nodes[*] element.
func nodeModelOf(n hardware.NodeInventory) nodeModel {
	nm := nodeModel{
		Name: types.StringValue(n.Name), GPUProduct: optionalString(n.GPUProduct),
		GPUCapacity: types.Int64Value(n.GPUCapacity), GPUAllocatable: types.Int64Value(n.GPUAllocatable),
		GPUInUse: types.Int64Value(n.GPUInUse), GPUFree: types.Int64Value(n.GPUFree()),
		TEETypes: nonNil(n.TEETypes), RuntimeClasses: nonNil(n.RuntimeClasses), Taints: []taintModel{},
		Ready: types.BoolValue(n.Ready), InstanceType: optionalString(n.InstanceType), Labels: n.Labels,
	}
	for _, t := range n.Taints {
		nm.Taints = append(nm.Taints, taintModel{Key: types.StringValue(t.Key), Value: optionalString(t.Value), Effect: types.StringValue(string(t.Effect))})
	}
	return nm
}

func optionalString(s string) types.String {
	if s == "" {
		return types.StringNull()
	}
	return types.StringValue(s)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
