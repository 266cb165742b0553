package provider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var (
	_ resource.Resource                = (*performerResource)(nil)
	_ resource.ResourceWithConfigure   = (*performerResource)(nil)
	_ resource.ResourceWithIdentity    = (*performerResource)(nil)
	_ resource.ResourceWithImportState = (*performerResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*performerResource)(nil)

	_ resource.ResourceWithValidateConfig = (*performerResource)(nil)
)

// Default timeouts of gantry_performer (timeouts = { create, update, delete }).
const (
	performerCreateTimeout = 10 * time.Minute
	performerUpdateTimeout = 10 * time.Minute
	performerDeleteTimeout = 5 * time.Minute
)

// NewPerformerResource returns the gantry_performer resource.
func NewPerformerResource() resource.Resource {
	return &performerResource{kindResource[performerModelV0]{ops: performerOps}}
}

// NewPerformerListResource returns the gantry_performer list resource (terraform query, Terraform >= 1.14).
func NewPerformerListResource() list.ListResource {
	return &performerResource{kindResource[performerModelV0]{ops: performerOps}}
}

// performerResource manages one gantry.dev/v1alpha1 Performer.
type performerResource struct{ kindResource[performerModelV0] }

// performerModelV0 is gantry_performer's Terraform model. Scalars are framework types (null
// and unknown are distinct from ""/0/false); collections and nested objects are Go maps,
// slices and pointers, nil meaning null.
type performerModelV0 struct {
	ID                   types.String         `tfsdk:"id"`
	Name                 types.String         `tfsdk:"name"`
	Namespace            types.String         `tfsdk:"namespace"`
	Labels               map[string]string    `tfsdk:"labels"`
	Annotations          map[string]string    `tfsdk:"annotations"`
	Image                types.String         `tfsdk:"image"`
	Version              types.String         `tfsdk:"version"`
	AVSAddress           types.String         `tfsdk:"avs_address"`
	ImagePullPolicy      types.String         `tfsdk:"image_pull_policy"`
	Strategy             types.String         `tfsdk:"strategy"`
	ImagePullSecrets     []string             `tfsdk:"image_pull_secrets"`
	GRPCPort             types.Int64          `tfsdk:"grpc_port"`
	Env                  map[string]string    `tfsdk:"env"`
	EnvFrom              []envFromModel       `tfsdk:"env_from"`
	Command              []string             `tfsdk:"command"`
	Args                 []string             `tfsdk:"args"`
	ServiceAccountName   types.String         `tfsdk:"service_account_name"`
	Resources            *resourcesModel      `tfsdk:"resources"`
	NodeSelector         map[string]string    `tfsdk:"node_selector"`
	Tolerations          []tolerationModel    `tfsdk:"tolerations"`
	Affinity             jsontypes.Normalized `tfsdk:"affinity"`
	RuntimeClassName     types.String         `tfsdk:"runtime_class_name"`
	PriorityClassName    types.String         `tfsdk:"priority_class_name"`
	HardwareRequirements *hardwareModel       `tfsdk:"hardware_requirements"`
	NetworkPolicy        *networkPolicyModel  `tfsdk:"network_policy"`
	// Autoscaling is autoscaling (performer_autoscaling.go); CurrentReplicas and
	// DesiredReplicas are read from status, never planned from the state.
	Autoscaling     *wsAutoscalingModel `tfsdk:"autoscaling"`
	CurrentReplicas types.Int64         `tfsdk:"current_replicas"`
	DesiredReplicas types.Int64         `tfsdk:"desired_replicas"`
	Phase           types.String        `tfsdk:"phase"`
	GRPCEndpoint    types.String        `tfsdk:"grpc_endpoint"`
	NodeName        types.String        `tfsdk:"node_name"`
	PodName         types.String        `tfsdk:"pod_name"`
	ServiceName     types.String        `tfsdk:"service_name"`
	CandidateNodes  types.Int64         `tfsdk:"candidate_nodes"`
	Timeouts        timeouts.Value      `tfsdk:"timeouts"`
}

type hardwareModel struct {
	GPUCount     types.Int64       `tfsdk:"gpu_count"`
	GPUType      types.String      `tfsdk:"gpu_type"`
	GPUResource  types.String      `tfsdk:"gpu_resource"`
	TEERequired  types.Bool        `tfsdk:"tee_required"`
	TEEType      types.String      `tfsdk:"tee_type"`
	CustomLabels map[string]string `tfsdk:"custom_labels"`
}

// networkPolicyModel is network_policy (spec.networkPolicy).
type networkPolicyModel struct {
	Enabled   types.Bool         `tfsdk:"enabled"`
	AllowFrom []networkPeerModel `tfsdk:"allow_from"`
}

// networkPeerModel is one network_policy.allow_from peer: label maps (matchLabels) of a
// NetworkPolicy peer's pod and namespace selectors; null means the selector is absent.
type networkPeerModel struct {
	PodSelector       map[string]string `tfsdk:"pod_selector"`
	NamespaceSelector map[string]string `tfsdk:"namespace_selector"`
}

func (r *performerResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_performer"
}

func (r *performerResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	quantityMap := func(what string) schema.MapAttribute {
		return quantityMapAttribute(fmt.Sprintf("Resource %s of the performer container, resource name → quantity, e.g. `{ cpu = \"500m\", memory = \"256Mi\" }`.\n\n"+
			"GPUs come from `hardware_requirements`. An `nvidia.com/gpu` entry here is kept beside them, as Hourglass's operator keeps it "+
			"(its examples write `nvidia.com/gpu` beside a per-type GPU resource): with `gpu_resource` `nvidia.com/gpu` it must equal `gpu_count`, "+
			"and without `gpu_count` the Pod gets no GPU placement (a warning says so).", what), true)
	}

	resp.Schema = schema.Schema{
		Version: 0,
		MarkdownDescription: "A Gantry **performer**: an AVS performer container with a gRPC Service, placed on nodes that " +
			"satisfy its hardware requirements (GPU count and product, TEE technology). The provider writes a " +
			"`gantry.dev/v1alpha1` `Performer` with server-side apply and waits until the reconciler reports it " +
			"`Running` for the current generation; it fails the apply at once, with the reconciler's reason and the " +
			"scheduler's or kubelet's own message, when the performer fails or stalls.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "`<namespace>/<name>`, also the import ID.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Name of the Performer object: a DNS-1035 label of at most 53 characters (the reconciler " +
					"names its Pod and Service `performer-<name>`). Changing it replaces the performer.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{
					stringvalidator.LengthBetween(1, 53),
					stringvalidator.RegexMatches(dns1035Label, "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit"),
				},
			},
			"namespace": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString("default"),
				MarkdownDescription: "Namespace of the Performer (it must exist). Defaults to `default`. Changing it replaces the performer.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{
					stringvalidator.LengthBetween(1, 63),
					stringvalidator.RegexMatches(dns1123Label, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit"),
				},
			},
			"labels": schema.MapAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Labels of the Performer object; the reconciler copies them to the performer's Pod.\n\nKeys under `gantry.dev/` and " +
					"`app.kubernetes.io/managed-by` are Gantry's own and refused at plan. Labels whose prefix is exactly `kubernetes.io/`, `k8s.io/` or `gantry.dev/` " +
					"that other tools add are ignored on read; " +
					"every other label (including `app.kubernetes.io/*` and `<team>.gantry.dev/*`) is imported and shows as drift when changed outside Terraform.",
			},
			"annotations": schema.MapAttribute{
				Optional:    true,
				ElementType: types.StringType,
				MarkdownDescription: "Annotations of the Performer object.\n\nKeys under `gantry.dev/` are Gantry's own and refused at plan. Annotations under `kubectl.kubernetes.io/`, " +
					"`kubernetes.io/`, `k8s.io/` and `gantry.dev/` (exactly these prefixes, not their subdomains) that other tools add are ignored on read.",
			},
			"image": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Performer container image, e.g. `ghcr.io/acme/performer:1.2.0`. A change replaces the Pod (phase `Upgrading`, then `Running`).",
				Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"version": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Free-form version label tracked for upgrades; a change replaces the Pod.",
			},
			"avs_address": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "Address of the AVS contract this performer serves: `0x` followed by 40 hex digits.",
				Validators:          []validator.String{stringvalidator.RegexMatches(avsAddress, "must be 0x followed by 40 hexadecimal digits")},
			},
			"image_pull_policy": schema.StringAttribute{
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(string(corev1.PullIfNotPresent)),
				MarkdownDescription: "Image pull policy of the performer container: `Always`, `Never` or `IfNotPresent` (default).",
				Validators:          []validator.String{stringvalidator.OneOf(string(corev1.PullAlways), string(corev1.PullNever), string(corev1.PullIfNotPresent))},
			},
			"strategy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(v1alpha1.PerformerRecreate)),
				MarkdownDescription: "How a change of `image`, `env` or any other Pod field replaces the performer's Pod: `Recreate` (default) or `RollingUpdate`.\n\n`Recreate`, as " +
					"Hourglass: the Pod `performer-<name>` is deleted, then created. `RollingUpdate`: the performer runs as a one-replica " +
					"Deployment `performer-<name>` with `maxSurge` 1 and `maxUnavailable` 0: the new Pod is Ready before the old one is removed, " +
					"so the performer always has a serving Pod; its labels reach the Pod.",
				Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.PerformerRecreate), string(v1alpha1.PerformerRollingUpdate))},
			},
			"image_pull_secrets": schema.ListAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Names of Secrets in the performer's namespace used to pull the image.",
				Validators:          []validator.List{listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1)), uniqueValues{}},
			},
			"grpc_port": schema.Int64Attribute{
				Optional:            true,
				Computed:            true,
				Default:             int64default.StaticInt64(int64(v1alpha1.DefaultGRPCPort)),
				MarkdownDescription: "Container and Service port of the performer's gRPC server, 1-65535. Defaults to `9090`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"env": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Plain environment variables, name → value. They are stored in the cluster and in Terraform state: put key material in Secrets and use `env_from`.",
			},
			"env_from": envFromAttribute("the performer's namespace"),
			"command": schema.ListAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Overrides the image's entrypoint.",
			},
			"args": schema.ListAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Arguments to the entrypoint.",
			},
			"service_account_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "ServiceAccount the performer Pod runs as.",
			},
			"resources": schema.SingleNestedAttribute{
				Optional:            true,
				MarkdownDescription: "CPU and memory requests and limits of the performer container.",
				Attributes: map[string]schema.Attribute{
					"requests": quantityMap("requests"),
					"limits":   quantityMap("limits"),
				},
			},
			"node_selector": schema.MapAttribute{
				Optional:            true,
				ElementType:         types.StringType,
				MarkdownDescription: "Node labels the node must carry, merged with those `hardware_requirements` implies.",
			},
			"tolerations": tolerationsAttribute("Tolerations of the performer Pod, added to those `hardware_requirements` implies (GPU nodes' `nvidia.com/gpu` taint is tolerated automatically)."),
			"affinity":    affinityAttribute("performer Pod"),
			"runtime_class_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "RuntimeClass of the Pod; overrides the one a TEE type implies (`kata-qemu-tdx`, `kata-qemu-snp`, `enclave-cc`).",
			},
			"priority_class_name": schema.StringAttribute{
				Optional:            true,
				MarkdownDescription: "PriorityClass of the Pod.",
			},
			"hardware_requirements": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Accelerator and TEE the performer needs. The reconciler turns them into resource requests, " +
					"node selectors, tolerations and a runtime class.",
				Validators: []validator.Object{hardwareRequirementsValidator{}},
				Attributes: map[string]schema.Attribute{
					"gpu_count": schema.Int64Attribute{
						Optional:            true,
						MarkdownDescription: "Number of `nvidia.com/gpu` devices, 0-1024. A count no node can satisfy fails the apply with the scheduler's message.",
						Validators:          []validator.Int64{int64validator.Between(0, 1024)},
					},
					"gpu_type": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "GPU product, matched against the node label `nvidia.com/gpu.product` (as GPU feature " +
							"discovery sets it), e.g. `NVIDIA-A100-SXM4-80GB` or `NVIDIA-H100-80GB-HBM3`. Requires `gpu_count` > 0.",
						Validators: []validator.String{
							stringvalidator.RegexMatches(labelValue, "must be a label value: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"),
						},
					},
					"gpu_resource": schema.StringAttribute{
						Optional: true,
						MarkdownDescription: "Extended resource the `gpu_count` GPUs are requested as: `nvidia.com/gpu` (default) or a per-type resource " +
							"such as `nvidia.com/a100`.\n\nA per-type resource is what Hourglass requests, `nvidia.com/<gpuType>` (device plugins that advertise GPUs by type, " +
							"MIG's mixed strategy: `nvidia.com/mig-1g.10gb`). Requires `gpu_count` > 0. With a MIG resource and a `gpu_type` whose MIG profiles " +
							"are known (NVIDIA's MIG user guide; see the [Instance types](../guides/instance-types.md) guide), the profile must be one that GPU offers: " +
							"`nvidia.com/mig-3g.40gb` with `gpu_type = \"NVIDIA-H200\"` fails the plan, naming the H200's profiles.",
						Validators: []validator.String{
							stringvalidator.RegexMatches(regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`),
								"must be an extended resource name such as nvidia.com/a100"),
							checkString{"not in a domain Kubernetes reserves", gpuResourceProblem, "Invalid GPU Resource"},
							requiresAnyOf{what: "gpu_count > 0", paths: []path.Expression{path.MatchRelative().AtParent().AtName("gpu_count")}},
						},
					},
					"tee_required": schema.BoolAttribute{
						Optional:            true,
						MarkdownDescription: "Place the performer in a trusted execution environment of `tee_type`. `true` requires `tee_type`.",
					},
					"tee_type": schema.StringAttribute{
						Optional:            true,
						MarkdownDescription: "TEE technology: `sgx`, `sev-snp` or `tdx`. Requires `tee_required = true`.",
						Validators: []validator.String{
							stringvalidator.OneOf(string(v1alpha1.TEESGX), string(v1alpha1.TEESEVSNP), string(v1alpha1.TEETDX)),
						},
					},
					"custom_labels": schema.MapAttribute{
						Optional:            true,
						ElementType:         types.StringType,
						MarkdownDescription: "Extra node labels the node must carry (added to the node selector).",
					},
				},
			},
			"network_policy":   networkPolicyAttribute(),
			"autoscaling":      performerAutoscalingAttribute(),
			"current_replicas": performerCurrentReplicasAttribute(),
			"desired_replicas": performerDesiredReplicasAttribute(),
			"phase": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Summary the reconciler reports (`status.phase`): `Pending`, `Creating`, `Scheduling`, `Running`, " +
					"`Upgrading`, `Failed` or `Terminating`. `Running` after a successful apply; refresh shows what it is now.",
			},
			"grpc_endpoint": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "gRPC endpoint: `performer-<name>.<namespace>.svc.cluster.local:<grpc_port>`. Known at plan time.",
			},
			"node_name": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Node the performer's Pod runs on.",
			},
			"pod_name": schema.StringAttribute{
				Computed: true,
				MarkdownDescription: "Name of the performer's Pod: `performer-<name>`; with `strategy = \"RollingUpdate\"`, the Deployment's current Pod (empty while it has none); " +
					"of several replicas (`autoscaling`), the newest Ready one.",
			},
			"service_name": schema.StringAttribute{
				Computed:            true,
				MarkdownDescription: "Name of the performer's Service: `performer-<name>`. Known at plan time.",
			},
			"candidate_nodes": candidateNodesAttribute(),
			"timeouts":        timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, DeleteDescription: timeoutsDeleteDescription}),
		},
	}
	resp.Schema.Attributes = withInputValidators(resp.Schema.Attributes)
}

// ValidateConfig runs the reconciler's own placement (hardware.Place) at plan once the
// hardware requirements and scheduling are known: a node_selector or custom label that
// contradicts what hardware_requirements implies (nvidia.com/gpu.product for gpu_type, the TEE
// labels) fails the plan naming both, and a MIG gpu_resource (nvidia.com/mig-<profile>) whose
// profile gpu_type's GPU does not offer (NVIDIA's MIG user guide) fails it naming gpu_resource,
// the product and its profiles, instead of failing the Performer at apply.
func (r *performerResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	validatePerformerTEE(root, &resp.Diagnostics)
	validatePerformerAutoscaling(root, resp)
	for _, a := range []string{"hardware_requirements", "node_selector", "tolerations", "runtime_class_name", "priority_class_name", "affinity"} {
		if !root.Attr(a).v.IsFullyKnown() {
			return
		}
	}
	if root.Attr("hardware_requirements").v.IsNull() && root.Attr("resources").v.IsNull() {
		// Nothing below can fail: without hardware requirements no selector or MIG rule is
		// implied, and without resources no GPU entry is compared. This skips reading the
		// whole configuration into the model (most of this function's cost on every plan).
		return
	}
	var m performerModelV0
	if req.Config.Get(ctx, &m).HasError() {
		return
	}
	u, err := expandPerformer(&m)
	if err != nil {
		return
	}
	var p v1alpha1.Performer
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) != nil {
		return
	}
	var conflict *hardware.ConflictError
	var mig *hardware.MIGProfileError
	_, err = hardware.Place(p.Spec.HardwareRequirements, p.Spec.Scheduling)
	switch {
	case errors.As(err, &conflict):
		at, msg := specErrorAttribute(err.Error())
		resp.Diagnostics.AddAttributeError(at, "Placement Contradicts Hardware Requirements",
			msg+": no node can satisfy both. Remove one of them or make them agree.")
	case errors.As(err, &mig):
		at, msg := specErrorAttribute(err.Error())
		resp.Diagnostics.AddAttributeError(at, "MIG Profile Not Offered by the GPU", msg+".")
	case err == nil && root.Attr("resources").v.IsFullyKnown():
		validatePerformerGPUResources(p.Spec, resp)
	}
}

// validatePerformerGPUResources checks a GPU entry of resources against the GPUs
// hardware_requirements asks for, as the reconciler will (hardware.Placement.ContainerResources):
// a count that differs from gpu_count for the same resource is an error naming both; an entry
// without gpu_count is a warning (the Pod requests GPUs but gets none of the GPU placement:
// the nvidia.com/gpu taint's toleration, nvidia.com/gpu.present). Hourglass's operator keeps
// such an entry beside the per-type GPU resource it adds; so does Gantry.
func validatePerformerGPUResources(spec v1alpha1.PerformerSpec, resp *resource.ValidateConfigResponse) {
	pl, err := hardware.Place(spec.HardwareRequirements, spec.Scheduling)
	if err != nil {
		return
	}
	lists := []struct {
		name      string
		user, hwl corev1.ResourceList
	}{{"limits", spec.Resources.Limits, pl.Limits}, {"requests", spec.Resources.Requests, pl.Requests}}
	for _, l := range lists {
		for name, want := range l.hwl {
			if have, ok := l.user[name]; ok && have.Cmp(want) != 0 {
				resp.Diagnostics.AddAttributeError(path.Root("resources").AtName(l.name).AtMapKey(string(name)), "GPU Count Contradicts Resources",
					fmt.Sprintf("resources.%s[%q] = %s, but hardware_requirements.gpu_count asks for %s of %s: make them equal, or remove the entry (gpu_count sets it).",
						l.name, name, have.String(), want.String(), name))
				return
			}
		}
	}
	if spec.HardwareRequirements.GPUCount > 0 {
		return
	}
	for _, field := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", spec.Resources.Limits}, {"requests", spec.Resources.Requests}} {
		if q, ok := field.list[hardware.ResourceGPU]; ok && !q.IsZero() {
			resp.Diagnostics.AddAttributeWarning(path.Root("resources").AtName(field.name).AtMapKey(string(hardware.ResourceGPU)), "GPUs Without GPU Placement",
				fmt.Sprintf("resources.%s[\"nvidia.com/gpu\"] = %s asks for GPUs, but hardware_requirements.gpu_count is not set, so the Pod gets no GPU placement "+
					"(the nvidia.com/gpu taint's toleration, nvidia.com/gpu.present): set hardware_requirements.gpu_count instead, or add tolerations and a node_selector yourself.", field.name, q.String()))
			return
		}
	}
}

// ModifyPlan is planRetry (kindResource: while the state says the performer is not Running,
// Failed or an apply interrupted mid-wait, the plan is an in-place update that re-applies it
// and waits again), planNaming (id, service_name, grpc_endpoint) and planCandidates
// (candidate_nodes and its warnings; the only step that calls the API, and only when the spec
// changes). A destroy plan is left alone.
func (r *performerResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	r.ops.planRetry(ctx, req, resp)
	r.planNaming(ctx, req, resp)
	if resp.Diagnostics.HasError() {
		return
	}
	r.planCandidates(ctx, req, resp)
}

// planNaming fills id, service_name and grpc_endpoint at plan time when they are unknown
// (create, or a change that could alter them) and their inputs are known: they follow from
// name, namespace and grpc_port (internal/performer.ObjectName, Endpoint), so dependent
// resources see them in the plan. No API call is made.
func (r *performerResource) planNaming(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	var name, namespace types.String
	var port types.Int64
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("name"), &name)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("namespace"), &namespace)...)
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("grpc_port"), &port)...)
	if resp.Diagnostics.HasError() || name.IsUnknown() || namespace.IsUnknown() || port.IsUnknown() {
		return
	}
	p := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: name.ValueString(), Namespace: namespace.ValueString()}}
	p.Spec.GRPCPort = int32(port.ValueInt64())
	derived := map[string]string{
		"id":            namespace.ValueString() + "/" + name.ValueString(),
		"service_name":  performer.ObjectName(p.Name),
		"grpc_endpoint": performer.Endpoint(p),
	}
	for attr, v := range derived {
		var cur types.String
		resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root(attr), &cur)...)
		if cur.IsUnknown() {
			resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(attr), types.StringValue(v))...)
		}
	}
}

// performerOps is gantry_performer's descriptor for the generic Create/Update/Delete path.
var performerOps = &kindOps[performerModelV0]{
	spec:          wait.Performer,
	logField:      "performer",
	summaryAttr:   "phase",
	statusAttrs:   []string{"phase", "node_name", "pod_name", "current_replicas", "desired_replicas"},
	createTimeout: performerCreateTimeout,
	updateTimeout: performerUpdateTimeout,
	deleteTimeout: performerDeleteTimeout,
	timeouts:      func(m *performerModelV0) timeouts.Value { return m.Timeouts },
	key:           func(m *performerModelV0) (string, string) { return m.Namespace.ValueString(), m.Name.ValueString() },
	expand:        expandPerformer,
	flatten:       flattenPerformer,
	setStatus:     setAppliedPerformerStatus,
	check:         checkPerformerNaming,
	prepare:       prepareCandidates,
	adopt:         hourglassAdopter,
}

// checkPerformerNaming: grpc_endpoint and service_name were planned from the naming contract;
// it says so plainly if the reconciler disagrees (instead of Terraform's "inconsistent result").
func checkPerformerNaming(plan, state *performerModelV0) diag.Diagnostics {
	var diags diag.Diagnostics
	for _, chk := range []struct{ attr, planned, got string }{
		{"grpc_endpoint", plan.GRPCEndpoint.ValueString(), state.GRPCEndpoint.ValueString()},
		{"service_name", plan.ServiceName.ValueString(), state.ServiceName.ValueString()},
	} {
		if chk.planned != "" && chk.got != chk.planned {
			diags.Append(unexpectedAttributeDiagnostic(chk.attr, chk.got, chk.planned))
		}
	}
	return diags
}

// ---------------------------------------------------------------------------------------------
// Model ↔ API mapping. expandPerformer and flattenPerformer are the only places that know both
// shapes; flattenPerformer(expandPerformer(m)) == m for every valid m (see the round-trip tests).

// expandPerformer maps the model to the Performer object to server-side apply: apiVersion,
// kind, metadata (name, namespace, labels, annotations) and spec. Fields the model leaves null
// are omitted, so the provider owns exactly what the configuration sets. affinity is sent as
// the JSON the user wrote. Errors: an unparsable quantity or affinity (normally caught at plan
// time by the validators).
func expandPerformer(m *performerModelV0) (*unstructured.Unstructured, error) {
	spec := v1alpha1.PerformerSpec{
		Image:              m.Image.ValueString(),
		Version:            m.Version.ValueString(),
		AVSAddress:         m.AVSAddress.ValueString(),
		ImagePullPolicy:    corev1.PullPolicy(m.ImagePullPolicy.ValueString()),
		Strategy:           v1alpha1.PerformerStrategy(m.Strategy.ValueString()),
		GRPCPort:           int32(m.GRPCPort.ValueInt64()),
		Env:                cloneMap(m.Env),
		Command:            m.Command,
		Args:               m.Args,
		ServiceAccountName: m.ServiceAccountName.ValueString(),
	}
	for _, s := range m.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	spec.EnvFrom = expandEnvFrom(m.EnvFrom)
	var err error
	if spec.Resources, err = expandResources(m.Resources); err != nil {
		return nil, err
	}
	spec.Scheduling = expandScheduling(m.NodeSelector, m.Tolerations, m.RuntimeClassName, m.PriorityClassName)
	if hw := m.HardwareRequirements; hw != nil {
		spec.HardwareRequirements = v1alpha1.HardwareRequirements{
			GPUCount:     int32(hw.GPUCount.ValueInt64()),
			GPUType:      hw.GPUType.ValueString(),
			GPUResource:  hw.GPUResource.ValueString(),
			TEERequired:  hw.TEERequired.ValueBool(),
			TEEType:      v1alpha1.TEEType(hw.TEEType.ValueString()),
			CustomLabels: cloneMap(hw.CustomLabels),
		}
	}
	spec.NetworkPolicy = expandNetworkPolicy(m.NetworkPolicy)
	spec.Autoscaling = expandAutoscaling(m.Autoscaling)
	specMap, err := toSpecMap(&spec)
	if err != nil {
		return nil, err
	}
	keepRequired(specMap, reflect.ValueOf(&spec))
	if err := expandAffinity(specMap, m.Affinity); err != nil {
		return nil, err
	}
	return newObject("Performer", m.Name.ValueString(), m.Namespace.ValueString(), m.Labels, m.Annotations, specMap), nil
}

// flattenPerformer maps a Performer read from the cluster to the model. prior (the state or
// plan the read refreshes; may be nil) only decides null versus empty: a field the cluster
// does not have is null unless prior held the empty value ("", 0, false, {} or []), and a
// quantity or affinity equal in meaning to prior's keeps prior's spelling. So a refresh of an
// unchanged object equals prior exactly, and any real difference shows as drift.
func flattenPerformer(u *unstructured.Unstructured, prior *performerModelV0) (*performerModelV0, error) {
	if prior == nil {
		prior = &performerModelV0{}
	}
	var p v1alpha1.Performer
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p); err != nil {
		return nil, err
	}
	s := p.Spec
	m := &performerModelV0{
		Name:               types.StringValue(p.Name),
		Namespace:          types.StringValue(p.Namespace),
		Labels:             readMeta(p.Labels, prior.Labels),
		Annotations:        readMeta(p.Annotations, prior.Annotations),
		Image:              types.StringValue(s.Image),
		Version:            optString(s.Version, prior.Version),
		AVSAddress:         optString(s.AVSAddress, prior.AVSAddress),
		ImagePullPolicy:    types.StringValue(string(s.ImagePullPolicy)),
		Strategy:           types.StringValue(string(s.Strategy)),
		GRPCPort:           types.Int64Value(int64(s.GRPCPort)),
		Env:                optMap(s.Env, prior.Env),
		Command:            optList(s.Command, prior.Command),
		Args:               optList(s.Args, prior.Args),
		ServiceAccountName: optString(s.ServiceAccountName, prior.ServiceAccountName),
		NodeSelector:       optMap(s.Scheduling.NodeSelector, prior.NodeSelector),
		RuntimeClassName:   optStringPtr(s.Scheduling.RuntimeClassName, prior.RuntimeClassName),
		PriorityClassName:  optStringPtr(s.Scheduling.PriorityClassName, prior.PriorityClassName),
		// candidate_nodes is counted at plan only: a refresh keeps the prior value, an import
		// or a list result (no prior) has none.
		CandidateNodes: candidateKnownOrNull(prior.CandidateNodes),
		Timeouts:       prior.Timeouts,
	}
	if s.ImagePullPolicy == "" {
		m.ImagePullPolicy = types.StringValue(string(corev1.PullIfNotPresent))
	}
	if s.Strategy == "" {
		m.Strategy = types.StringValue(string(v1alpha1.PerformerRecreate))
	}
	if s.GRPCPort == 0 {
		m.GRPCPort = types.Int64Value(int64(v1alpha1.DefaultGRPCPort))
	}
	var secrets []string
	for _, ref := range s.ImagePullSecrets {
		secrets = append(secrets, ref.Name)
	}
	m.ImagePullSecrets = optList(secrets, prior.ImagePullSecrets)

	m.EnvFrom = flattenEnvFrom(s.EnvFrom, prior.EnvFrom)

	m.Resources = flattenResources(s.Resources, prior.Resources)
	m.Tolerations = flattenTolerations(s.Scheduling.Tolerations, prior.Tolerations)

	var err error
	if m.Affinity, err = flattenAffinity(u, prior.Affinity); err != nil {
		return nil, err
	}

	hw := s.HardwareRequirements
	var ph hardwareModel
	if prior.HardwareRequirements != nil {
		ph = *prior.HardwareRequirements
	}
	hwEmpty := hw.GPUCount == 0 && hw.GPUType == "" && hw.GPUResource == "" && !hw.TEERequired && hw.TEEType == "" && len(hw.CustomLabels) == 0
	if !hwEmpty || prior.HardwareRequirements != nil {
		m.HardwareRequirements = &hardwareModel{
			GPUCount:     optInt64(int64(hw.GPUCount), ph.GPUCount),
			GPUType:      optString(hw.GPUType, ph.GPUType),
			GPUResource:  optString(hw.GPUResource, ph.GPUResource),
			TEERequired:  optBool(hw.TEERequired, ph.TEERequired),
			TEEType:      optString(string(hw.TEEType), ph.TEEType),
			CustomLabels: optMap(hw.CustomLabels, ph.CustomLabels),
		}
	}
	m.NetworkPolicy = flattenNetworkPolicy(s.NetworkPolicy, prior.NetworkPolicy)
	m.Autoscaling = flattenAutoscaling(s.Autoscaling, prior.Autoscaling)
	setPerformerStatus(m, u)
	return m, nil
}

// networkPolicyAttribute is gantry_performer's network_policy.
func networkPolicyAttribute() schema.SingleNestedAttribute {
	selector := func(what, alone string) schema.MapAttribute {
		return schema.MapAttribute{
			Optional:    true,
			ElementType: types.StringType,
			MarkdownDescription: fmt.Sprintf("Labels the %s must carry (a NetworkPolicy peer's `%s.matchLabels`); %s", what,
				map[string]string{"pods": "podSelector", "namespaces": "namespaceSelector"}[what], alone),
		}
	}
	return schema.SingleNestedAttribute{
		Optional: true,
		MarkdownDescription: "Isolates the performer with a Kubernetes NetworkPolicy so that only its executors (and the peers you list) can reach its gRPC port.\n\n" +
			"With `enabled = true` the reconciler keeps a `networking.k8s.io/v1` NetworkPolicy `performer-<name>`, owned by the Performer (deleted with it), " +
			"that selects the performer's Pods and admits ingress on `grpc_port` (TCP) only from the pods of the `gantry_executor`s in the same namespace " +
			"that use this performer (its name in their `performer_names`, its labels matched by their `performer_selector`, or created by them with " +
			"`manage_performers`), recomputed whenever executors change, plus the `allow_from` peers. Egress is not restricted. The kubelet's readiness " +
			"probe is not affected: it comes from the node, which NetworkPolicy implementations always admit; `kubectl port-forward` neither. " +
			"`enabled = false` (or removing the block) deletes the policy. The executors admitted are listed in the Performer's `status.allowedExecutors` " +
			"and its `NetworkPolicyReady` condition. Enforcement is the cluster network plugin's (Calico, Cilium, kube-router, ...): " +
			"without one that implements NetworkPolicy the object is created but has no effect. See the [Performer isolation](../guides/performer-isolation.md) guide.",
		Attributes: map[string]schema.Attribute{
			"enabled": schema.BoolAttribute{
				Required:            true,
				MarkdownDescription: "Create the NetworkPolicy `performer-<name>`; `false` deletes it.",
			},
			"allow_from": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "Extra peers admitted on the gRPC port besides the executors, at most 16.\n\nFor example a monitoring namespace: " +
					"`[{ namespace_selector = { \"kubernetes.io/metadata.name\" = \"monitoring\" } }]`. Each needs `pod_selector`, `namespace_selector` or both, " +
					"with NetworkPolicy's meaning: `pod_selector` alone selects pods of the performer's namespace, `namespace_selector` alone every pod of the " +
					"matching namespaces (`{}`: all namespaces), both together the matching pods in the matching namespaces.",
				Validators: []validator.List{listvalidator.SizeAtMost(16)},
				NestedObject: schema.NestedAttributeObject{Validators: []validator.Object{networkPeerValidator{}}, Attributes: map[string]schema.Attribute{
					"pod_selector":       selector("pods", "`{}` selects every pod."),
					"namespace_selector": selector("namespaces", "`{}` selects every namespace; null (the default) means the performer's own namespace."),
				}},
			},
		},
	}
}

// networkPeerValidator requires pod_selector, namespace_selector or both in an allow_from peer
// (the CRD's rule, checked at plan).
type networkPeerValidator struct{}

func (networkPeerValidator) Description(context.Context) string {
	return "needs pod_selector, namespace_selector or both"
}

func (v networkPeerValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (networkPeerValidator) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	a := req.ConfigValue.Attributes()
	pod, ns := a["pod_selector"], a["namespace_selector"]
	if pod == nil || ns == nil || pod.IsUnknown() || ns.IsUnknown() || !pod.IsNull() || !ns.IsNull() {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Peer Without Selectors",
		fmt.Sprintf("%s needs pod_selector, namespace_selector or both (to admit every pod of every namespace, set namespace_selector = {}).", req.Path))
}

// expandNetworkPolicy maps network_policy to spec.networkPolicy (nil when null); a peer's
// label map becomes a selector's matchLabels, {} an empty selector (everything).
func expandNetworkPolicy(m *networkPolicyModel) *v1alpha1.PerformerNetworkPolicy {
	if m == nil {
		return nil
	}
	out := &v1alpha1.PerformerNetworkPolicy{Enabled: m.Enabled.ValueBool()}
	if m.AllowFrom != nil {
		out.AllowFrom = []v1alpha1.PerformerNetworkPeer{}
	}
	sel := func(l map[string]string) *metav1.LabelSelector {
		if l == nil {
			return nil
		}
		return &metav1.LabelSelector{MatchLabels: cloneMap(l)}
	}
	for _, p := range m.AllowFrom {
		out.AllowFrom = append(out.AllowFrom, v1alpha1.PerformerNetworkPeer{PodSelector: sel(p.PodSelector), NamespaceSelector: sel(p.NamespaceSelector)})
	}
	return out
}

// flattenNetworkPolicy maps spec.networkPolicy back (prior decides [] versus null for
// allow_from and {} versus null for an empty selector's labels). A selector's
// matchExpressions (only writable outside Terraform) are not shown.
func flattenNetworkPolicy(np *v1alpha1.PerformerNetworkPolicy, prior *networkPolicyModel) *networkPolicyModel {
	if np == nil {
		return nil
	}
	var pp []networkPeerModel
	if prior != nil {
		pp = prior.AllowFrom
	}
	m := &networkPolicyModel{Enabled: types.BoolValue(np.Enabled)}
	if len(np.AllowFrom) == 0 {
		if pp != nil && len(pp) == 0 {
			m.AllowFrom = []networkPeerModel{}
		}
		return m
	}
	sel := func(s *metav1.LabelSelector) map[string]string {
		if s == nil {
			return nil
		}
		if len(s.MatchLabels) == 0 {
			return map[string]string{}
		}
		return cloneMap(s.MatchLabels)
	}
	for _, p := range np.AllowFrom {
		m.AllowFrom = append(m.AllowFrom, networkPeerModel{PodSelector: sel(p.PodSelector), NamespaceSelector: sel(p.NamespaceSelector)})
	}
	return m
}

// setAppliedPerformerStatus is setPerformerStatus for the state an apply returns: grpc_endpoint
// and service_name keep the values planned from the naming contract while the status lacks
// them (a wait that failed or was interrupted before the reconciler reported them), so the
// state matches the plan; checkPerformerNaming reports a status that disagrees.
// candidate_nodes keeps the count prepareCandidates made (m is the plan), null when none was made.
func setAppliedPerformerStatus(m *performerModelV0, u *unstructured.Unstructured) {
	endpoint, service := m.GRPCEndpoint, m.ServiceName
	m.CandidateNodes = candidateKnownOrNull(m.CandidateNodes)
	setPerformerStatus(m, u)
	if m.GRPCEndpoint.IsNull() && !endpoint.IsUnknown() {
		m.GRPCEndpoint = endpoint
	}
	if m.ServiceName.IsNull() && !service.IsUnknown() {
		m.ServiceName = service
	}
}

// setPerformerStatus fills the computed attributes from the object: id from its namespace and
// name, the rest from status ("" → null).
func setPerformerStatus(m *performerModelV0, u *unstructured.Unstructured) {
	m.ID = types.StringValue(u.GetNamespace() + "/" + u.GetName())
	m.Phase = statusString(u, "phase")
	m.GRPCEndpoint = statusString(u, "grpcEndpoint")
	m.NodeName = statusString(u, "nodeName")
	m.PodName = statusString(u, "podName")
	m.ServiceName = statusString(u, "serviceName")
	m.CurrentReplicas, m.DesiredReplicas = statusInt64(u, "currentReplicas"), statusInt64(u, "desiredReplicas")
}
