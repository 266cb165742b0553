package provider

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/objectplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

var (
	_ resource.Resource                = (*workspaceResource)(nil)
	_ resource.ResourceWithConfigure   = (*workspaceResource)(nil)
	_ resource.ResourceWithIdentity    = (*workspaceResource)(nil)
	_ resource.ResourceWithImportState = (*workspaceResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*workspaceResource)(nil)
)

// Default timeouts of gantry_workspace.
const (
	workspaceCreateTimeout = 20 * time.Minute
	workspaceUpdateTimeout = 20 * time.Minute
	workspaceDeleteTimeout = 5 * time.Minute
)

// NewWorkspaceResource returns the gantry_workspace resource.
func NewWorkspaceResource() resource.Resource {
	return &workspaceResource{kindResource[workspaceModelV0]{ops: workspaceOps}}
}

// NewWorkspaceListResource returns the gantry_workspace list resource (terraform query, Terraform >= 1.14).
func NewWorkspaceListResource() list.ListResource {
	return &workspaceResource{kindResource[workspaceModelV0]{ops: workspaceOps}}
}

// workspaceResource manages one gantry.dev/v1alpha1 Workspace (KAITO).
type workspaceResource struct{ kindResource[workspaceModelV0] }

type workspaceModelV0 struct {
	ID                types.String         `tfsdk:"id"`
	Name              types.String         `tfsdk:"name"`
	Namespace         types.String         `tfsdk:"namespace"`
	Labels            map[string]string    `tfsdk:"labels"`
	Annotations       map[string]string    `tfsdk:"annotations"`
	Resource          *wsResourceModel     `tfsdk:"resource"`
	Inference         *wsInferenceModel    `tfsdk:"inference"`
	Tuning            *wsTuningModel       `tfsdk:"tuning"`
	NodeSelector      map[string]string    `tfsdk:"node_selector"`
	Tolerations       []tolerationModel    `tfsdk:"tolerations"`
	Affinity          jsontypes.Normalized `tfsdk:"affinity"`
	RuntimeClassName  types.String         `tfsdk:"runtime_class_name"`
	PriorityClassName types.String         `tfsdk:"priority_class_name"`
	State             types.String         `tfsdk:"state"`
	Mode              types.String         `tfsdk:"mode"`
	Endpoint          types.String         `tfsdk:"endpoint"`
	WorkerNodes       types.List           `tfsdk:"worker_nodes"`
	NodeClaims        types.List           `tfsdk:"node_claims"`
	LeaderAddress     types.String         `tfsdk:"leader_address"`
	Conditions        types.Map            `tfsdk:"conditions"`
	// Autoscaling is autoscaling (workspace_autoscaling.go); CurrentReplicas and
	// DesiredReplicas are read from status, never planned from the state.
	Autoscaling     *wsAutoscalingModel `tfsdk:"autoscaling"`
	CurrentReplicas types.Int64         `tfsdk:"current_replicas"`
	DesiredReplicas types.Int64         `tfsdk:"desired_replicas"`
	// Sizing is sizing (workspace_sizing.go): resolved at plan, stored as planned.
	Sizing   types.Object   `tfsdk:"sizing"`
	Timeouts timeouts.Value `tfsdk:"timeouts"`
}

type wsResourceModel struct {
	Count        types.Int64  `tfsdk:"count"`
	GPUCount     types.Int64  `tfsdk:"gpu_count"`
	InstanceType types.String `tfsdk:"instance_type"`
	// ProvisionNodes is provision_nodes (KAITO provisions by default): Karpenter NodeClaims.
	ProvisionNodes types.Bool        `tfsdk:"provision_nodes"`
	GPUProduct     types.String      `tfsdk:"gpu_product"`
	LabelSelector  map[string]string `tfsdk:"label_selector"`
	// LabelExprs is label_selector_expressions (KAITO's labelSelector.matchExpressions).
	LabelExprs []selectorExprModel `tfsdk:"label_selector_expressions"`
	TEEType    types.String        `tfsdk:"tee_type"`
	// Partition is KAITO's resource.partition (mode mig).
	Partition *wsPartitionModel `tfsdk:"partition"`
}

type wsPartitionModel struct {
	Mode    types.String `tfsdk:"mode"`
	Profile types.String `tfsdk:"profile"`
}

// wsProbeModel is readiness_probe / liveness_probe (KAITO's inference.template probes).
type wsProbeModel struct {
	HTTPPath            types.String `tfsdk:"http_path"`
	Port                types.Int64  `tfsdk:"port"`
	Exec                []string     `tfsdk:"exec"`
	InitialDelaySeconds types.Int64  `tfsdk:"initial_delay_seconds"`
	PeriodSeconds       types.Int64  `tfsdk:"period_seconds"`
	FailureThreshold    types.Int64  `tfsdk:"failure_threshold"`
}

// wsVolumeModel is one of inference.volumes (KAITO's inference.template volumes and mounts).
type wsVolumeModel struct {
	Name      types.String `tfsdk:"name"`
	MountPath types.String `tfsdk:"mount_path"`
	ReadOnly  types.Bool   `tfsdk:"read_only"`
	ConfigMap types.String `tfsdk:"config_map"`
	Secret    types.String `tfsdk:"secret"`
	PVC       types.String `tfsdk:"pvc"`
	EmptyDir  types.Bool   `tfsdk:"empty_dir"`
	// Medium and SizeLimit go with EmptyDir (KAITO's emptyDir: {medium: Memory, sizeLimit}).
	Medium    types.String `tfsdk:"medium"`
	SizeLimit types.String `tfsdk:"size_limit"`
}

type wsInferenceModel struct {
	Preset types.String `tfsdk:"preset"`
	Model  types.String `tfsdk:"model"`
	Image  types.String `tfsdk:"image"`
	Args   []string     `tfsdk:"args"`
	Port   types.Int64  `tfsdk:"port"`
	Config types.String `tfsdk:"config"`
	// ModelAccessSecret is only a Secret's name: the token never passes through Terraform.
	ModelAccessSecret types.String     `tfsdk:"model_access_secret"`
	Adapters          []wsAdapterModel `tfsdk:"adapters"`
	ModelGPUs         types.Int64      `tfsdk:"model_gpus"`
	Command           []string         `tfsdk:"command"`
	ContainerName     types.String     `tfsdk:"container_name"`
	PerformanceMode   types.String     `tfsdk:"performance_mode"`
	AccessMode        types.String     `tfsdk:"access_mode"`
	ImagePullSecrets  []string         `tfsdk:"image_pull_secrets"`
	ReadinessProbe    *wsProbeModel    `tfsdk:"readiness_probe"`
	LivenessProbe     *wsProbeModel    `tfsdk:"liveness_probe"`
	Volumes           []wsVolumeModel  `tfsdk:"volumes"`
	// ModelSize and ModelConfig size a Hugging Face model without a preset
	// (workspace_anymodel.go).
	ModelSize   *wsModelSizeModel   `tfsdk:"model_size"`
	ModelConfig *wsModelConfigModel `tfsdk:"model_config"`
}

type wsAdapterModel struct {
	Name     types.String `tfsdk:"name"`
	Image    types.String `tfsdk:"image"`
	Strength types.String `tfsdk:"strength"`
}

type wsTuningModel struct {
	Method    types.String `tfsdk:"method"`
	Preset    types.String `tfsdk:"preset"`
	BaseModel types.String `tfsdk:"base_model"`
	Image     types.String `tfsdk:"image"`
	// AccessMode, ImagePullSecrets and ModelAccessSecret are KAITO's tuning preset accessMode
	// and presetOptions (resource_workspace_template.go).
	AccessMode        types.String `tfsdk:"access_mode"`
	ImagePullSecrets  []string     `tfsdk:"image_pull_secrets"`
	ModelAccessSecret types.String `tfsdk:"model_access_secret"`
	InputURLs         []string     `tfsdk:"input_urls"`
	InputImage        types.String `tfsdk:"input_image"`
	InputPVC          types.String `tfsdk:"input_pvc"`
	OutputImage       types.String `tfsdk:"output_image"`
	OutputPVC         types.String `tfsdk:"output_pvc"`
	OutputPushSecret  types.String `tfsdk:"output_push_secret"`
	Config            types.String `tfsdk:"config"`
	BackoffLimit      types.Int64  `tfsdk:"backoff_limit"`
	// ReleaseNodesOnSuccess is release_nodes_on_success: the one tuning attribute a change of
	// which updates the workspace in place (replaceTuningIf).
	ReleaseNodesOnSuccess types.Bool `tfsdk:"release_nodes_on_success"`
}

var (
	modelNameRe = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_./:-]{0,126}[A-Za-z0-9])?$`)
	objNameRe   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
	productRe   = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)
	adapterRe   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	strengthRe  = regexp.MustCompile(`^(0(\.[0-9]+)?|1(\.0+)?)$`)
)

func (r *workspaceResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_workspace"
}

func (r *workspaceResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	replaceOnModeSwitch := objectplanmodifier.RequiresReplaceIf(func(_ context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
		resp.RequiresReplace = !req.StateValue.IsNull() && req.StateValue.IsNull() != req.PlanValue.IsNull()
	}, "Switching between inference and tuning replaces the workspace.", "Switching between `inference` and `tuning` replaces the workspace.")
	resp.Schema = schema.Schema{
		MarkdownDescription: "A Gantry **Workspace** (`gantry.dev/v1alpha1`, modelled on KAITO's Workspace): an inference service (a Deployment of " +
			"`resource.count` replicas plus the Service `workspace-<name>`) or a LoRA/QLoRA tuning run (a Job). The apply waits " +
			"until `state` is `Ready` (inference) or `Succeeded` (tuning); it fails at once when the tuning run is `Failed` or the " +
			"workspace is `Stalled` — for example when no node has the GPU product asked for (KAITO's \"Pending trap\", made " +
			"visible: `ResourceReady=False` with the reason). A stalled workspace proceeds on its own when the cluster changes.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`<namespace>/<name>`.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name: a DNS-1035 label of at most 53 characters. Changing it replaces the workspace.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:    []validator.String{stringvalidator.LengthBetween(1, 53), stringvalidator.RegexMatches(regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`), "must be a DNS-1035 label (lower case letters, digits, '-', starting with a letter)")}},
			"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("default"),
				MarkdownDescription: "Namespace (default `default`). Changing it replaces the workspace.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.LengthBetween(1, 63),
					stringvalidator.RegexMatches(dns1123Label, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")}},
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels of the Workspace; copied to its pods."},
			"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Annotations of the Workspace. KAITO's `kaito.sh/performance-mode` " +
				"(`balanced`, `interactivity`, `throughput`) is honoured when `inference.performance_mode` is unset.",
				Validators: []validator.Map{performanceModeAnnotation{}}},
			"resource": schema.SingleNestedAttribute{Required: true, MarkdownDescription: "Per-replica resource requirements. Changing them on a tuning workspace replaces it (a Job cannot change).",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplaceIf(func(ctx context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
					var tuning types.Object
					resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, path.Root("tuning"), &tuning)...)
					resp.RequiresReplace = !tuning.IsNull()
				}, "Replaces a tuning workspace.", "Replaces a tuning workspace.")},
				Attributes: map[string]schema.Attribute{
					"count": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(1),
						MarkdownDescription: "Replicas (1-64, default 1); must be 1 for tuning. Conflicts with `autoscaling`, whose autoscaler owns the replicas.", Validators: []validator.Int64{int64validator.Between(1, 64)}},
					"gpu_count": schema.Int64Attribute{Optional: true, MarkdownDescription: "`nvidia.com/gpu` devices per replica (0-64), all on one node.",
						Validators: []validator.Int64{int64validator.Between(0, 64)}},
					"gpu_product": schema.StringAttribute{Optional: true, MarkdownDescription: "GPU product, matched against the node label `nvidia.com/gpu.product`, e.g. `NVIDIA-H100-80GB-HBM3`. Requires `gpu_count` > 0, or a model preset (which sets it).",
						Validators: []validator.String{stringvalidator.RegexMatches(productRe, "must be a label value such as NVIDIA-H100-80GB-HBM3"),
							requiresAnyOf{what: "gpu_count > 0, or an instance_type, a partition, a model preset (inference.preset, tuning.preset) or a model size (inference.model_size, inference.model_config), which set it", paths: []path.Expression{
								path.MatchRoot("inference").AtName("model_size"), path.MatchRoot("inference").AtName("model_config"),
								path.MatchRelative().AtParent().AtName("gpu_count"), path.MatchRelative().AtParent().AtName("instance_type"), path.MatchRelative().AtParent().AtName("partition"),
								path.MatchRoot("inference").AtName("preset"), path.MatchRoot("tuning").AtName("preset")}}}},
					"instance_type": schema.StringAttribute{Optional: true, MarkdownDescription: "A cloud GPU instance type as KAITO's `resource.instanceType` writes it " +
						"(e.g. `Standard_NC24ads_A100_v4`, `p4d.24xlarge`).\n\nSee the [Instance types](../guides/instance-types.md) guide. Replicas run on nodes labelled " +
						"`node.kubernetes.io/instance-type` with it, `gpu_count` defaults to the type's GPUs per node, and asking for more GPUs than one node has fails. " +
						"An unknown type fails the plan, naming the closest.",
						Validators: []validator.String{instanceTypeValidator{}}},
					"provision_nodes": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(true),
						MarkdownDescription: "Create the missing nodes of `instance_type` through Karpenter, as KAITO does, when the matching nodes lack free GPUs.\n\nWith `instance_type`: when the matching Ready nodes have too few free GPUs for the replicas, the reconciler creates the missing nodes " +
							"as KAITO does, through Karpenter `karpenter.sh/v1` NodeClaims of the instance type (on the node class of the reconciler's `--node-class`), " +
							"waits for them (the apply waits too, within the create timeout), names them in `node_claims`, and deletes them with the workspace. " +
							"Where Karpenter is not installed nothing is created and the workspace's `ResourceReady` condition says so. Default `true`, as KAITO; " +
							"`false` only selects existing nodes. See the [Node provisioning](../guides/node-provisioning.md) guide."},
					"label_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Node labels (key = value) a node must carry."},
					"label_selector_expressions": selectorExprsAttribute("Node label requirements a node must also meet (KAITO's `resource.labelSelector.matchExpressions`): " +
						"`In` and `NotIn` need `values`, `Exists` and `DoesNotExist` take none.\n\nThe pods get them as required node affinity (ANDed into each required term of " +
						"`scheduling.affinity`), and the capacity check counts only the nodes that meet them."),
					"tee_type": schema.StringAttribute{Optional: true, MarkdownDescription: "Trusted execution environment: `sgx`, `sev-snp` or `tdx` (node label and runtime class follow).",
						Validators: []validator.String{stringvalidator.OneOf("sgx", "sev-snp", "tdx")}},
					"partition": partitionAttribute(),
				},
			},
			"inference": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Serve a model. Exactly one of `inference` and `tuning`.",
				Validators:    []validator.Object{exactlyOne(path.MatchRoot("tuning"))},
				PlanModifiers: []planmodifier.Object{replaceOnModeSwitch},
				Attributes: map[string]schema.Attribute{
					"preset": schema.StringAttribute{Optional: true, MarkdownDescription: "A model preset by KAITO's name, e.g. `falcon-7b-instruct` (see the [Model presets](../guides/model-presets.md) guide).\n\n" +
						"It sets `model`, `image`, `args` and `resource.gpu_count` where they are not given. The preset's `args` serve across all of a replica's GPUs " +
						"(vLLM's `--tensor-parallel-size`, as KAITO) and, for a group of replicas, across the nodes (`--pipeline-parallel-size`). " +
						"An unknown name fails the plan, naming the closest presets.",
						Validators: []validator.String{presetValidator{}}},
					"model": schema.StringAttribute{Optional: true, MarkdownDescription: "Model name, e.g. `falcon-7b-instruct`, or a Hugging Face model ID (`org/name`); required without `preset` (default: the preset's).\n\n" +
						"A Hugging Face model ID without `preset` and with `model_size` or `model_config` (or without `image`) is served as KAITO serves any Hugging Face model: " +
						"on KAITO's base vLLM image (`" + workspace.DefaultModelImage + "`) unless `image` names another, with `--served-model-name=<model>`, `--port=$(PORT)`, " +
						"`--model=<model>` and the tensor parallelism of a preset, on the GPUs its size needs.",
						Validators: []validator.String{stringvalidator.RegexMatches(modelNameRe, "must be a model name such as falcon-7b-instruct"), stringvalidator.AtLeastOneOf(path.MatchRelative().AtParent().AtName("preset"))}},
					"image": schema.StringAttribute{Optional: true, MarkdownDescription: "Serving container image; required without `preset`, unless `model` is a Hugging Face model ID (default: the preset's, or KAITO's base vLLM image).",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AtLeastOneOf(path.MatchRelative().AtParent().AtName("preset"), path.MatchRelative().AtParent().AtName("model"))}},
					"args": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Container arguments (default with a preset: " +
						"`--served-model-name=<model>`, `--port=$(PORT)` and the preset's own; the container's `PORT` is `port`)."},
					"port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultInferencePort)),
						MarkdownDescription: "Container and Service port (1-65535, default 8000).", Validators: []validator.Int64{int64validator.Between(1, 65535)}},
					"config": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of a ConfigMap mounted at `/mnt/config` (KAITO's `inference.config`).\n\nWith a `preset`, as KAITO does, " +
						"the ConfigMap must have the key `inference_config.yaml` (the apply fails naming it otherwise) and the model server gets " +
						"`--kaito-config-file=/mnt/config/inference_config.yaml`, the argument KAITO's vLLM runtime reads its engine arguments from. " +
						"Without a preset the file is only mounted: pass its path in `args` or `command`.",
						Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a ConfigMap name")}},
					"performance_mode": schema.StringAttribute{Optional: true, MarkdownDescription: "KAITO's vLLM performance preset (its `kaito.sh/performance-mode` annotation): " +
						"`balanced` (default), `interactivity` (low per-request latency) or `throughput` (aggregate tokens/s).\n\nWith a `preset`, `interactivity` and `throughput` " +
						"add `--performance-mode=<mode>` to the model server's arguments, as KAITO does. Unset, a `kaito.sh/performance-mode` entry in `annotations` is honoured the same way.",
						Validators: []validator.String{stringvalidator.OneOf(workspace.PerformanceModes...)}},
					"access_mode": schema.StringAttribute{Optional: true, MarkdownDescription: "KAITO's preset `accessMode`: `public` (default) or `private`. `private` means the preset's " +
						"image is in a private registry: `image` must name it (KAITO's `presetOptions.image`), usually with `image_pull_secrets`.",
						Validators: []validator.String{stringvalidator.OneOf("public", "private"), privateNeedsImage{block: "inference"}}},
					"image_pull_secrets": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Names of docker-config Secrets in the namespace used to pull `image` " +
						"(KAITO's `presetOptions.imagePullSecrets`; at most 8): the pods' `imagePullSecrets`. The reconciler checks that they exist (the apply fails naming a missing one) and never reads them.",
						Validators: []validator.List{listvalidator.SizeBetween(1, 8), uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.RegexMatches(objNameRe, "must be a Secret name"))}},
					"command": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Container entrypoint (the `command` of KAITO's `inference.template` pod; at most 64 items).\n\n" +
						"Default: the image's, or on a multi-node group of KAITO's vLLM runtime KAITO's Ray command (`model_gpus`). A command of your own runs on every pod of a group, without Ray.",
						Validators: []validator.List{listvalidator.SizeBetween(1, 64)}},
					"container_name": containerNameAttribute(),
					"readiness_probe": probeAttribute("Replaces the default readiness check (a TCP connect to `port` every 10s), as a probe in KAITO's `inference.template`. " +
						"Refused on a multi-node group served on KAITO's Ray cluster, whose workers serve nothing: KAITO's health check is used there."),
					"liveness_probe": probeAttribute("Restarts the model server when it fails (default: none), as a probe in KAITO's `inference.template`."),
					"volumes":        volumesAttribute(),
					"model_access_secret": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of a Secret in the namespace whose key `HF_TOKEN` holds a Hugging Face token " +
						"(KAITO's model access Secret): the model server gets it as `HF_TOKEN` to download gated weights.\n\nRequired by gated presets. Only the name is in Terraform; " +
						"the reconciler checks that the Secret and its key exist and never reads the token.",
						Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a Secret name")}},
					"model_gpus": schema.Int64Attribute{Optional: true, MarkdownDescription: "GPUs the model needs in all (0-512; default: the preset's, " +
						"else `resource.gpu_count`).\n\nWhen it is more than one replica has (`resource.gpu_count`, or what `resource.instance_type`'s nodes have) and " +
						"`resource.count` > 1, the replicas serve ONE model together across `count` nodes, as KAITO's multi-node inference: a StatefulSet " +
						"`workspace-<name>` whose pod 0 leads, each pod with `GROUP_SIZE`, `RANK`, `POD_INDEX` and `LEADER_ADDRESS` (pod 0's stable DNS name through the " +
						"headless Service `workspace-<name>-group`); the endpoint routes to the leader and the workspace is Ready only when the whole group is. " +
						"`count` × `gpu_count` must cover it. With a preset model spread over smaller replicas this is automatic.\n\n" +
						"On KAITO's vLLM runtime (a preset or a Hugging Face model, without `command`) the group runs KAITO's Ray cluster: the leader starts the Ray head " +
						"(`/workspace/vllm/multi-node-serving.sh leader`, port 6379) and then serves (`python3 /workspace/vllm/inference_api.py` with the arguments and " +
						"`--distributed-executor-backend=ray`), the workers join the head at `leader_address`; the pods get KAITO's multi-node health check as startup, " +
						"readiness and liveness probes (`readiness_probe` and `liveness_probe` replace them), the endpoint Service the ports `ray` (6379) and " +
						"`dashboard` (8265), and `port` cannot be 6379 or 8265.",
						Validators: []validator.Int64{int64validator.Between(0, 512)}},
					"adapters": schema.ListNestedAttribute{Optional: true, MarkdownDescription: "LoRA adapters loaded beside the model (at most 16, names unique).",
						Validators: []validator.List{listvalidator.SizeAtMost(16), uniqueNames{}},
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"name": schema.StringAttribute{Required: true, MarkdownDescription: "Adapter name: lower-case letters, digits and '-', at most 63 characters.",
								Validators: []validator.String{stringvalidator.RegexMatches(adapterRe, "must be lower-case letters, digits and '-' (at most 63), starting and ending with a letter or digit")}},
							"image": schema.StringAttribute{Required: true, MarkdownDescription: "Image holding the adapter's weights.", Validators: []validator.String{stringvalidator.LengthAtLeast(1)}},
							"strength": schema.StringAttribute{Optional: true, MarkdownDescription: "Adapter weight, a decimal in [0, 1] such as `\"0.5\"`; unset means `1.0`.",
								Validators: []validator.String{stringvalidator.RegexMatches(strengthRe, "must be a decimal between 0 and 1 such as 0.5")}},
						}},
					},
				},
			},
			"tuning": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Fine-tune a model (a Job). Exactly one of `inference` and `tuning`. " +
				"Any change but `release_nodes_on_success` replaces the workspace.",
				PlanModifiers: []planmodifier.Object{replaceTuningIf()},
				Attributes: map[string]schema.Attribute{
					"method": schema.StringAttribute{Required: true, MarkdownDescription: "`lora` or `qlora`.", Validators: []validator.String{stringvalidator.OneOf("lora", "qlora")}},
					"preset": schema.StringAttribute{Optional: true, MarkdownDescription: "A model preset that can be fine-tuned (see the [Model presets](../guides/model-presets.md) guide): " +
						"it sets `base_model`, `image` and `resource.gpu_count` where they are not given.",
						Validators: []validator.String{presetValidator{tuning: true}}},
					"base_model": schema.StringAttribute{Optional: true, MarkdownDescription: "Model to tune, e.g. `phi-3-mini-4k-instruct`; required without `preset`.",
						Validators: []validator.String{stringvalidator.RegexMatches(modelNameRe, "must be a model name"), stringvalidator.AtLeastOneOf(path.MatchRelative().AtParent().AtName("preset"))}},
					"image": schema.StringAttribute{Optional: true, MarkdownDescription: "Tuning container image; required without `preset`, and with `access_mode = \"private\"` (default: the preset's).",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AtLeastOneOf(path.MatchRelative().AtParent().AtName("preset"))}},
					"access_mode":         tuningAccessModeAttribute(),
					"image_pull_secrets":  tuningPullSecretsAttribute(),
					"model_access_secret": tuningModelAccessAttribute(),
					"input_urls": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Training data URLs (https). Exactly one of `input_urls`, `input_image` and `input_pvc`.",
						Validators: []validator.List{listvalidator.SizeBetween(1, 64), uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.RegexMatches(regexp.MustCompile(`^https://\S+$`), "must be an https URL")),
							exactlyOne(path.MatchRelative().AtParent().AtName("input_image"), path.MatchRelative().AtParent().AtName("input_pvc"))}},
					"input_image": schema.StringAttribute{Optional: true, MarkdownDescription: "Image holding the training data under `/data`."},
					"input_pvc": schema.StringAttribute{Optional: true, MarkdownDescription: "PersistentVolumeClaim (same namespace) holding the training data, mounted read-only at `/mnt/input` " +
						"(`INPUT_DIR`); KAITO's `input.volumeSource`.\n\nThe reconciler checks that it exists (a missing claim fails the apply). A claim not bound yet is waited for, as KAITO does: " +
						"the workspace stays Pending with `ResourceReady` reason `WaitingForVolumeBinding` quoting the scheduler's \"unbound immediate PersistentVolumeClaims\" and naming the claims, until the " +
						"PersistentVolume controller binds them, bounded by the resource timeout.", Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a PersistentVolumeClaim name")}},
					"output_image": schema.StringAttribute{Optional: true, MarkdownDescription: "Image reference the tuned adapter is pushed to. Exactly one of `output_image` and `output_pvc`.",
						Validators: []validator.String{exactlyOne(path.MatchRelative().AtParent().AtName("output_pvc"))}},
					"output_pvc": schema.StringAttribute{Optional: true, MarkdownDescription: "PersistentVolumeClaim (same namespace) the tuned adapter is written to, mounted at `/mnt/output` " +
						"(`OUTPUT_DIR`); KAITO's `output.volumeSource`. Checked and waited for as `input_pvc`.", Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a PersistentVolumeClaim name")}},
					"output_push_secret": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of a docker-config Secret used to push (only the name is stored; never credentials).", Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a Secret name")}},
					"config":             schema.StringAttribute{Optional: true, MarkdownDescription: "Name of a ConfigMap with tuning parameters.", Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a ConfigMap name")}},
					"backoff_limit": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(0),
						MarkdownDescription: "Retries of a failed tuning pod before the run is `Failed` (0-10, default 0).", Validators: []validator.Int64{int64validator.Between(0, 10)}},
					"release_nodes_on_success": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
						MarkdownDescription: "Releases the GPU nodes the workspace provisioned once the tuning run has `Succeeded`, keeping the workspace, its Job and the output.\n\n" +
							"KAITO users ask to free a finished tuning run's GPUs (kaito-project/kaito#1107). The reconciler deletes the workspace's Karpenter NodeClaims " +
							"(`resource.provision_nodes` with `resource.instance_type`) and Karpenter removes their nodes; `state` stays `Succeeded`, `node_claims` becomes empty, " +
							"the `ResourceReady` condition turns `False` with reason `NodesReleased` and a `NodesReleased` event names the claims; no claim is made again, and the " +
							"next plan is empty. A `Failed` run keeps its nodes, to inspect them. The only tuning attribute that changes in place: set on a workspace that " +
							"already `Succeeded`, it releases the nodes then. Nodes the workspace did not provision are never touched. Default `false`: the nodes are held " +
							"until the workspace is destroyed. See the [Node provisioning](../guides/node-provisioning.md) guide."},
				},
			},
			"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Extra node selector (merged with what `resource` implies; a conflicting key is an error the workspace reports)."},
			"tolerations":   tolerationsAttribute("Tolerations of the workspace's pods, added to those `resource` implies (GPU nodes' `nvidia.com/gpu` taint is tolerated automatically)."),
			"affinity":      affinityAttribute("workspace's pods"),
			"runtime_class_name": schema.StringAttribute{Optional: true,
				MarkdownDescription: "RuntimeClass of the workspace's pods; overrides the one `resource.tee_type` implies."},
			"priority_class_name": schema.StringAttribute{Optional: true, MarkdownDescription: "PriorityClass of the workspace's pods."},
			"state":               schema.StringAttribute{Computed: true, MarkdownDescription: "The workspace state (as KAITO's Workspace state proposal defines it): `Pending`, `Ready`, `NotReady` (inference) or `Pending`, `Running`, `Succeeded`, `Failed` (tuning)."},
			"mode":                schema.StringAttribute{Computed: true, MarkdownDescription: "`Inference` or `Tuning`."},
			"endpoint":            schema.StringAttribute{Computed: true, MarkdownDescription: "Inference endpoint `workspace-<name>.<namespace>.svc.cluster.local:<port>`; null for tuning."},
			"worker_nodes":        schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Nodes the workspace's pods are bound to."},
			"node_claims": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The Karpenter NodeClaims (cluster-scoped) the reconciler created for this workspace's nodes (`resource.provision_nodes`), sorted."},
			"leader_address": schema.StringAttribute{Computed: true, MarkdownDescription: "Multi-node inference (`inference.model_gpus`): the group leader's stable address " +
				"`workspace-<name>-0.workspace-<name>-group.<namespace>.svc.cluster.local`; null when the replicas are independent."},
			"conditions":  schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Conditions summary: type → `True`/`False` (`ResourceReady`, `InferenceReady` or `JobStarted`, `WorkspaceSucceeded`, `Ready`, `Reconciling`, `Stalled`)."},
			"autoscaling": autoscalingAttribute(),
			"current_replicas": schema.Int64Attribute{Computed: true, MarkdownDescription: "Inference: the pods the workspace's workload has now (`status.currentReplicas`), " +
				"as read at the last refresh; null for tuning. Read only: an autoscaler changing it is never a diff (a plan that changes nothing else keeps the refreshed value; " +
				"one that changes something shows it as known after apply)."},
			"desired_replicas": schema.Int64Attribute{Computed: true, MarkdownDescription: "Inference: the replicas asked for (`status.desiredReplicas`). With `autoscaling` they are " +
				"the HorizontalPodAutoscaler's desired replicas (with an external autoscaler, the Deployment's replicas it set), else `resource.count`; null for tuning. " +
				"Read only, as `current_replicas`."},
			"sizing":   sizingAttribute(),
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, DeleteDescription: timeoutsDeleteDescription}),
		},
	}
	if inf, ok := resp.Schema.Attributes["inference"].(schema.SingleNestedAttribute); ok {
		for k, a := range modelSizeAttributes() {
			inf.Attributes[k] = a
		}
		resp.Schema.Attributes["inference"] = inf
	}
	resp.Schema.Attributes = withInputValidators(resp.Schema.Attributes)
}

// replaceTuningIf is tuning's plan modifier: any change replaces the workspace (a Job cannot
// change; the CRD refuses it too), a switch to or from inference included, except a change of
// release_nodes_on_success alone, which updates it in place (the reconciler then releases the
// nodes of a Succeeded run). An unknown value replaces, as RequiresReplace does.
func replaceTuningIf() planmodifier.Object {
	return objectplanmodifier.RequiresReplaceIf(func(_ context.Context, req planmodifier.ObjectRequest, resp *objectplanmodifier.RequiresReplaceIfFuncResponse) {
		resp.RequiresReplace = !onlyReleaseChanged(req.StateValue, req.PlanValue)
	}, "Any change but release_nodes_on_success replaces the workspace.", "Any change but `release_nodes_on_success` replaces the workspace.")
}

// onlyReleaseChanged reports whether the tuning objects state and plan, both known and not
// null, are equal but for release_nodes_on_success.
func onlyReleaseChanged(state, plan types.Object) bool {
	if state.IsNull() || state.IsUnknown() || plan.IsNull() || plan.IsUnknown() {
		return false
	}
	sa, pa := state.Attributes(), plan.Attributes()
	if len(sa) != len(pa) {
		return false
	}
	for k, v := range sa {
		if k == "release_nodes_on_success" {
			continue
		}
		if pv, ok := pa[k]; !ok || !v.Equal(pv) {
			return false
		}
	}
	return true
}

// workspaceOps is gantry_workspace's descriptor for the generic Create/Update/Delete path. Its
// plans retry (planRetry) while the state's state is not Ready (inference) or Succeeded
// (tuning).
var workspaceOps = &kindOps[workspaceModelV0]{
	spec:          wait.Workspace,
	logField:      "workspace",
	summaryAttr:   "state",
	statusAttrs:   []string{"state", "mode", "endpoint", "worker_nodes", "node_claims", "leader_address", "conditions", "current_replicas", "desired_replicas"},
	createTimeout: workspaceCreateTimeout,
	updateTimeout: workspaceUpdateTimeout,
	deleteTimeout: workspaceDeleteTimeout,
	timeouts:      func(m *workspaceModelV0) timeouts.Value { return m.Timeouts },
	key:           func(m *workspaceModelV0) (string, string) { return m.Namespace.ValueString(), m.Name.ValueString() },
	expand:        expandWorkspace,
	flatten:       flattenWorkspaceSized,
	setStatus:     setWorkspaceStatus,
	prepare:       prepareWorkspaceSizing,
	adopt:         kaitoAdopter,
}

// ModifyPlan is planRetry (as every kind's: while the state says the workspace is not Ready or
// Succeeded, the plan re-applies it and waits again) followed by planWorkspaceSizing: the
// plan shows sizing, resolved from the planned resource, inference and tuning by the
// reconciler's own code (unknown while an input is; the state's on a plan that changes
// nothing). The only API call is the read of inference.model_config's ConfigMap, for a
// Hugging Face model sized from its config.json (workspace_anymodel.go).
func (r *workspaceResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.ops.planRetry(ctx, req, resp)
	if resp.Diagnostics.HasError() {
		return
	}
	planWorkspaceSizing(ctx, r.data, req, resp)
}

// expandWorkspace maps the model to the Workspace to server-side apply (null fields omitted).
func expandWorkspace(m *workspaceModelV0) (*unstructured.Unstructured, error) {
	var spec v1alpha1.WorkspaceSpec
	if r := m.Resource; r != nil {
		spec.Resource = v1alpha1.WorkspaceResource{Count: int32(r.Count.ValueInt64()), GPUCount: int32(r.GPUCount.ValueInt64()),
			GPUProduct: r.GPUProduct.ValueString(), InstanceType: r.InstanceType.ValueString(), LabelSelector: cloneMap(r.LabelSelector), TEEType: v1alpha1.TEEType(r.TEEType.ValueString())}
		if !r.ProvisionNodes.IsNull() && !r.ProvisionNodes.IsUnknown() {
			spec.Resource.ProvisionNodes = r.ProvisionNodes.ValueBoolPointer()
		}
		spec.Resource.LabelSelectorExpressions = v1alpha1.LabelRequirements(expandSelector(nil, r.LabelExprs).MatchExpressions)
		spec.Resource.Partition = expandPartition(r.Partition)
	}
	if i := m.Inference; i != nil {
		spec.Inference = &v1alpha1.WorkspaceInference{Preset: i.Preset.ValueString(), Model: i.Model.ValueString(), Image: i.Image.ValueString(), Args: i.Args,
			Port: int32(i.Port.ValueInt64()), Config: i.Config.ValueString(), ModelAccessSecret: i.ModelAccessSecret.ValueString(),
			ModelGPUs: int32(i.ModelGPUs.ValueInt64()), ModelSize: expandModelSize(i.ModelSize), ModelConfig: expandModelConfig(i.ModelConfig)}
		for _, a := range i.Adapters {
			spec.Inference.Adapters = append(spec.Inference.Adapters, v1alpha1.WorkspaceAdapter{Name: a.Name.ValueString(), Image: a.Image.ValueString(), Strength: a.Strength.ValueString()})
		}
		expandInferenceTemplate(i, spec.Inference)
	}
	if t := m.Tuning; t != nil {
		bl := int32(t.BackoffLimit.ValueInt64())
		spec.Tuning = &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningMethod(t.Method.ValueString()), Preset: t.Preset.ValueString(), BaseModel: t.BaseModel.ValueString(),
			Image: t.Image.ValueString(), Config: t.Config.ValueString(), BackoffLimit: &bl, ReleaseNodesOnSuccess: t.ReleaseNodesOnSuccess.ValueBool(),
			Input:  v1alpha1.WorkspaceDataSource{URLs: t.InputURLs, Image: t.InputImage.ValueString(), PVC: t.InputPVC.ValueString()},
			Output: v1alpha1.WorkspaceDataDestination{Image: t.OutputImage.ValueString(), PVC: t.OutputPVC.ValueString(), ImagePushSecret: t.OutputPushSecret.ValueString()}}
		expandTuningPreset(t, spec.Tuning)
	}
	spec.Scheduling = expandScheduling(m.NodeSelector, m.Tolerations, m.RuntimeClassName, m.PriorityClassName)
	spec.Autoscaling = expandAutoscaling(m.Autoscaling)
	specMap, err := toSpecMap(&spec)
	if err != nil {
		return nil, err
	}
	keepRequired(specMap, reflect.ValueOf(&spec))
	if err := expandAffinity(specMap, m.Affinity); err != nil {
		return nil, err
	}
	if t, ok := specMap["tuning"].(map[string]interface{}); ok && spec.Tuning != nil {
		t["backoffLimit"] = int64(*spec.Tuning.BackoffLimit) // 0 is meaningful
	}
	return newObject("Workspace", m.Name.ValueString(), m.Namespace.ValueString(), m.Labels, m.Annotations, specMap), nil
}

// flattenWorkspace maps a live Workspace to the model; prior only decides null versus empty,
// and its sizing is kept as it is (flattenWorkspaceSized fills one it lacks).
func flattenWorkspace(u *unstructured.Unstructured, prior *workspaceModelV0) (*workspaceModelV0, error) {
	if prior == nil {
		prior = &workspaceModelV0{}
	}
	var w v1alpha1.Workspace
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w); err != nil {
		return nil, err
	}
	m := &workspaceModelV0{Timeouts: prior.Timeouts, Sizing: prior.Sizing, Name: types.StringValue(w.Name), Namespace: types.StringValue(w.Namespace),
		Labels: readMeta(w.Labels, prior.Labels), Annotations: readMeta(w.Annotations, prior.Annotations)}
	pr := prior.Resource
	if pr == nil {
		pr = &wsResourceModel{}
	}
	r := w.Spec.Resource
	m.Resource = &wsResourceModel{Count: types.Int64Value(int64(max(r.Count, 1))), GPUCount: optInt64(int64(r.GPUCount), pr.GPUCount),
		GPUProduct: optString(r.GPUProduct, pr.GPUProduct), InstanceType: optString(r.InstanceType, pr.InstanceType),
		ProvisionNodes: types.BoolValue(r.ProvisionNodes == nil || *r.ProvisionNodes), LabelSelector: optMap(r.LabelSelector, pr.LabelSelector), TEEType: optString(string(r.TEEType), pr.TEEType),
		LabelExprs: flattenSelectorExprs(v1alpha1.Requirements(r.LabelSelectorExpressions), pr.LabelExprs), Partition: flattenPartition(r.Partition)}
	if in := w.Spec.Inference; in != nil {
		pi := prior.Inference
		if pi == nil {
			pi = &wsInferenceModel{}
		}
		port := in.Port
		if port == 0 {
			port = v1alpha1.DefaultInferencePort
		}
		m.Inference = &wsInferenceModel{Preset: optString(in.Preset, pi.Preset), Model: optString(in.Model, pi.Model), Image: optString(in.Image, pi.Image), Args: optList(in.Args, pi.Args),
			Port: types.Int64Value(int64(port)), Config: optString(in.Config, pi.Config), ModelAccessSecret: optString(in.ModelAccessSecret, pi.ModelAccessSecret),
			ModelGPUs: optInt64(int64(in.ModelGPUs), pi.ModelGPUs), ModelSize: flattenModelSize(in.ModelSize, pi.ModelSize), ModelConfig: flattenModelConfig(in.ModelConfig, pi.ModelConfig)}
		for i, a := range in.Adapters {
			var pa wsAdapterModel
			if i < len(pi.Adapters) {
				pa = pi.Adapters[i]
			}
			m.Inference.Adapters = append(m.Inference.Adapters, wsAdapterModel{Name: types.StringValue(a.Name), Image: types.StringValue(a.Image), Strength: optString(a.Strength, pa.Strength)})
		}
		if m.Inference.Adapters == nil && pi.Adapters != nil {
			m.Inference.Adapters = []wsAdapterModel{}
		}
		flattenInferenceTemplate(in, pi, m.Inference)
	}
	if t := w.Spec.Tuning; t != nil {
		pt := prior.Tuning
		if pt == nil {
			pt = &wsTuningModel{}
		}
		var bl int64
		if t.BackoffLimit != nil {
			bl = int64(*t.BackoffLimit)
		}
		m.Tuning = &wsTuningModel{Method: types.StringValue(string(t.Method)), Preset: optString(t.Preset, pt.Preset), BaseModel: optString(t.BaseModel, pt.BaseModel), Image: optString(t.Image, pt.Image),
			InputURLs: optList(t.Input.URLs, pt.InputURLs), InputImage: optString(t.Input.Image, pt.InputImage), InputPVC: optString(t.Input.PVC, pt.InputPVC),
			OutputImage: optString(t.Output.Image, pt.OutputImage), OutputPVC: optString(t.Output.PVC, pt.OutputPVC), OutputPushSecret: optString(t.Output.ImagePushSecret, pt.OutputPushSecret),
			Config: optString(t.Config, pt.Config), BackoffLimit: types.Int64Value(bl), ReleaseNodesOnSuccess: types.BoolValue(t.ReleaseNodesOnSuccess)}
		flattenTuningPreset(t, pt, m.Tuning)
	}
	sc := w.Spec.Scheduling
	m.NodeSelector = optMap(sc.NodeSelector, prior.NodeSelector)
	m.Tolerations = flattenTolerations(sc.Tolerations, prior.Tolerations)
	m.RuntimeClassName = optStringPtr(sc.RuntimeClassName, prior.RuntimeClassName)
	m.PriorityClassName = optStringPtr(sc.PriorityClassName, prior.PriorityClassName)
	m.Autoscaling = flattenAutoscaling(w.Spec.Autoscaling, prior.Autoscaling)
	var err error
	if m.Affinity, err = flattenAffinity(u, prior.Affinity); err != nil {
		return nil, err
	}
	setWorkspaceStatus(m, u)
	return m, nil
}

// statusStringList is status.<field> (a list of strings) sorted, as a Terraform list (empty when
// absent).
func statusStringList(u *unstructured.Unstructured, field string) types.List {
	items, _, _ := unstructured.NestedStringSlice(u.Object, "status", field)
	sort.Strings(items)
	nv := make([]attr.Value, 0, len(items))
	for _, n := range items {
		nv = append(nv, types.StringValue(n))
	}
	return types.ListValueMust(types.StringType, nv)
}

// setWorkspaceStatus fills the computed attributes from status.
func setWorkspaceStatus(m *workspaceModelV0, u *unstructured.Unstructured) {
	m.ID = types.StringValue(u.GetNamespace() + "/" + u.GetName())
	m.State, m.Mode, m.Endpoint = statusString(u, "state"), statusString(u, "mode"), statusString(u, "endpoint")
	m.LeaderAddress = statusString(u, "leaderAddress")
	m.WorkerNodes = statusStringList(u, "workerNodes")
	m.NodeClaims = statusStringList(u, "nodeClaims")
	m.CurrentReplicas, m.DesiredReplicas = statusInt64(u, "currentReplicas"), statusInt64(u, "desiredReplicas")
	cv := map[string]attr.Value{}
	for _, c := range wait.Conditions(u) {
		cv[c.Type] = types.StringValue(string(c.Status))
	}
	m.Conditions = types.MapValueMust(types.StringType, cv)
}

// ConfigValidators checks multi-node inference at plan: inference.model_gpus above one
// replica's resource.gpu_count needs resource.count > 1 and count × gpu_count GPUs in all
// (the reconciler's Resolve says the same at apply; an instance type or a preset filling
// gpu_count is left to it); what the reconciler's Resolve would refuse (resolveValidator);
// the autoscaling block against resource.count and the rest (autoscalingValidator); and a
// gpu_count = 0 or args = [] that a preset or instance type would silently replace
// (readAsUnsetValidator); a tuning.release_nodes_on_success with no node to release
// (releaseNodesValidator, a warning); and the cross-field rules of the input sweep
// (workspaceCrossField).
func (r *workspaceResource) ConfigValidators(context.Context) []resource.ConfigValidator {
	return []resource.ConfigValidator{modelGPUsValidator{}, resolveValidator{}, autoscalingValidator{}, readAsUnsetValidator{}, releaseNodesValidator{}, workspaceCrossField{}}
}

// resolveValidator runs the reconciler's own workspace.Resolve at plan (preset, then the instance
// type from the provider's catalog) once resource, inference and tuning are known, and reports
// what attribute validators cannot see: GPUs, GPU products, model_gpus and MIG partition profiles
// (workspace.CheckPartition) that contradict the instance type, preset or selectors; a tuning
// workspace with count above 1; a Ray multi-node group serving on a Ray port. Errors name the
// Terraform attribute ("resource.gpu_count: 4 GPUs per replica, but a g6.xlarge node has 1 ...").
type resolveValidator struct{}

func (resolveValidator) Description(context.Context) string {
	return "the preset and the instance type resolve as the reconciler resolves them"
}
func (v resolveValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (resolveValidator) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	for _, a := range []string{"resource", "inference", "tuning", "node_selector"} {
		if !root.Attr(a).v.IsFullyKnown() {
			return
		}
	}
	var m workspaceModelV0
	if req.Config.Get(ctx, &m).HasError() {
		return
	}
	u, err := expandWorkspace(&m)
	if err != nil {
		return
	}
	var w v1alpha1.Workspace
	if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &w) != nil {
		return
	}
	resolved, err := workspace.Resolve(&w)
	if err == nil {
		if msg := gpuMemoryProblem(resolved); msg != "" {
			resp.Diagnostics.AddAttributeError(path.Root("resource").AtName("instance_type"), "Model Larger Than the GPU Memory", msg)
		}
		return
	}
	at, msg := specErrorAttribute(err.Error())
	gpuCountSet := !root.Attr("resource").Attr("gpu_count").Null()
	summary := "Workspace Does Not Fit Its Nodes"
	switch at.String() {
	case "resource.gpu_count":
	case "resource.label_selector", "resource.gpu_product", "node_selector":
		if strings.Contains(msg, "no node carries both GPUs") {
			summary = "Contradictory GPU Products" // workspace's checkGPUProduct
		}
	case "resource.count":
		summary = "Tuning Runs on One Node"
	case "resource.partition.profile":
		summary = "MIG Profile Not Offered by the GPU" // workspace.CheckPartition
	case "inference.model_gpus":
		if gpuCountSet {
			return // modelGPUsValidator's
		}
	case "inference.image":
		summary = "Missing Serving Image"
	case "inference.port":
		summary = "Port Taken by the Ray Head" // workspace's checkRayGroup
	case "inference.readiness_probe":
		summary = "Readiness Probe on a Ray Group" // workspace's checkRayGroup
	case "inference.model_size", "inference.model_config":
		if errors.Is(err, workspace.ErrModelConfigNotRead) {
			return // read at plan by the sizing step when the cluster answers, else by the reconciler
		}
		summary = "Model Does Not Fit Its GPUs"
	default:
		return // an attribute validator's (presets, instance types, gated models)
	}
	resp.Diagnostics.AddAttributeError(at, summary, msg)
}

// maxWorkspaceCount is the Workspace CRD's maximum of spec.resource.count.
const maxWorkspaceCount = 64

type modelGPUsValidator struct{}

func (modelGPUsValidator) Description(context.Context) string {
	return "inference.model_gpus needs resource.count × resource.gpu_count GPUs"
}
func (v modelGPUsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (modelGPUsValidator) ValidateResource(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var inf, res types.Object
	if req.Config.GetAttribute(ctx, path.Root("inference"), &inf).HasError() || req.Config.GetAttribute(ctx, path.Root("resource"), &res).HasError() ||
		inf.IsNull() || inf.IsUnknown() || res.IsNull() || res.IsUnknown() || !configRoot(req.Config.Raw).Attr("autoscaling").Null() {
		return // with autoscaling: autoscalingValidator's
	}
	mg, _ := inf.Attributes()["model_gpus"].(types.Int64)
	count, _ := res.Attributes()["count"].(types.Int64)
	gpus, _ := res.Attributes()["gpu_count"].(types.Int64)
	if mg.IsNull() || mg.IsUnknown() || gpus.IsNull() || gpus.IsUnknown() || count.IsUnknown() || mg.ValueInt64() <= gpus.ValueInt64() {
		return
	}
	n := int64(1)
	if !count.IsNull() {
		n = count.ValueInt64()
	}
	at := path.Root("inference").AtName("model_gpus")
	need := (mg.ValueInt64() + max(gpus.ValueInt64(), 1) - 1) / max(gpus.ValueInt64(), 1)
	switch {
	case need > maxWorkspaceCount:
		resp.Diagnostics.AddAttributeError(at, "Model Needs More GPUs Than a Group Can Have",
			fmt.Sprintf("inference.model_gpus = %d but resource.gpu_count = %d: that takes %d replicas, and resource.count is at most %d. "+
				"Give each replica more GPUs (resource.gpu_count, or a larger resource.instance_type) or lower model_gpus.",
				mg.ValueInt64(), gpus.ValueInt64(), need, maxWorkspaceCount))
	case n <= 1:
		resp.Diagnostics.AddAttributeError(at, "Model Needs More GPUs Than One Replica Has",
			fmt.Sprintf("inference.model_gpus = %d but resource.gpu_count = %d: set resource.count to %d or more to serve the model across nodes (multi-node inference).",
				mg.ValueInt64(), gpus.ValueInt64(), (mg.ValueInt64()+max(gpus.ValueInt64(), 1)-1)/max(gpus.ValueInt64(), 1)))
	case n*gpus.ValueInt64() < mg.ValueInt64():
		resp.Diagnostics.AddAttributeError(at, "Not Enough GPUs for the Model",
			fmt.Sprintf("inference.model_gpus = %d but resource.count × resource.gpu_count = %d × %d = %d.", mg.ValueInt64(), n, gpus.ValueInt64(), n*gpus.ValueInt64()))
	}
}
