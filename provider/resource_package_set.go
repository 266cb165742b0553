package provider

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
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
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var (
	_ resource.Resource                   = (*packageSetResource)(nil)
	_ resource.ResourceWithConfigure      = (*packageSetResource)(nil)
	_ resource.ResourceWithIdentity       = (*packageSetResource)(nil)
	_ resource.ResourceWithImportState    = (*packageSetResource)(nil)
	_ resource.ResourceWithValidateConfig = (*packageSetResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*packageSetResource)(nil)
)

// Default timeouts of gantry_package_set.
const (
	packageSetCreateTimeout = 30 * time.Minute
	packageSetUpdateTimeout = 30 * time.Minute
	packageSetDeleteTimeout = 30 * time.Minute
)

var (
	packageNameRe = regexp.MustCompile(`^[a-z][-a-z0-9]{0,41}[a-z]$`)
	// configKeyRe: a ConfigMap key that is also a plain file name (not ".", not "..*").
	configKeyRe = regexp.MustCompile(`^(\.[-_a-zA-Z0-9]|[-_a-zA-Z0-9])[-._a-zA-Z0-9]*$`)
	hostPathRe  = regexp.MustCompile(`^/[A-Za-z0-9._/-]+$`)
)

// NewPackageSetResource returns the gantry_package_set resource.
func NewPackageSetResource() resource.Resource {
	return &packageSetResource{kindResource[packageSetModel]{ops: packageSetOps}}
}

// NewPackageSetListResource returns the gantry_package_set list resource (terraform query, Terraform >= 1.14).
func NewPackageSetListResource() list.ListResource {
	return &packageSetResource{kindResource[packageSetModel]{ops: packageSetOps}}
}

type packageSetResource struct{ kindResource[packageSetModel] }

type packageSetModel struct {
	ID                    types.String           `tfsdk:"id"`
	Name                  types.String           `tfsdk:"name"`
	Labels                map[string]string      `tfsdk:"labels"`
	AdoptFromSkyhook      types.String           `tfsdk:"adopt_from_skyhook"`
	NodeSelector          map[string]string      `tfsdk:"node_selector"`
	NodeSelectorExprs     []selectorExprModel    `tfsdk:"node_selector_expressions"`
	Sequencing            types.String           `tfsdk:"sequencing"`
	Serial                types.Bool             `tfsdk:"serial"`
	After                 []string               `tfsdk:"after"`
	AfterConverged        []convergedEdgeModel   `tfsdk:"after_converged"`
	Priority              types.Int64            `tfsdk:"priority"`
	Paused                types.Bool             `tfsdk:"paused"`
	Disabled              types.Bool             `tfsdk:"disabled"`
	UninstallOnDelete     types.Bool             `tfsdk:"uninstall_on_delete"`
	InterruptionBudget    *budgetModel           `tfsdk:"interruption_budget"`
	PodNonInterruptLabels map[string]string      `tfsdk:"pod_non_interrupt_labels"`
	Drain                 *drainModel            `tfsdk:"drain"`
	AdditionalTolerations []tolerationModel      `tfsdk:"additional_tolerations"`
	Rollout               *rolloutModel          `tfsdk:"rollout"`
	DeploymentPolicy      *deploymentPolicyModel `tfsdk:"deployment_policy"`
	Packages              []packageModel         `tfsdk:"packages"`
	RuntimeRequired       types.Bool             `tfsdk:"runtime_required"`
	AutoTaintNewNodes     types.Bool             `tfsdk:"auto_taint_new_nodes"`
	CordonAfter           types.Bool             `tfsdk:"runtime_required_cordon_after"`
	Status                types.String           `tfsdk:"status"`
	CompleteNodes         types.String           `tfsdk:"complete_nodes"`
	NodeStatus            types.Map              `tfsdk:"node_status"`
	QuarantinedVersions   types.List             `tfsdk:"quarantined_versions"`
	Compartments          types.List             `tfsdk:"compartments"`
	RolloutPreview        types.Object           `tfsdk:"rollout_preview"`
	Timeouts              timeouts.Value         `tfsdk:"timeouts"`
}

type budgetModel struct {
	Percent types.Int64 `tfsdk:"percent"`
	Count   types.Int64 `tfsdk:"count"`
}

type rolloutModel struct {
	SoakDuration      types.String       `tfsdk:"soak_duration"`
	SoakCheckInterval types.String       `tfsdk:"soak_check_interval"`
	OnHealthFailure   types.String       `tfsdk:"on_health_failure"`
	Waves             []waveModel        `tfsdk:"waves"`
	HealthChecks      []healthCheckModel `tfsdk:"health_checks"`
	NodeEdges         []nodeEdgeModel    `tfsdk:"node_edges"`
	FleetBudget       *fleetBudgetModel  `tfsdk:"fleet_budget"`
	Release           *releaseModel      `tfsdk:"release"`
}

type waveModel struct {
	Name              types.String        `tfsdk:"name"`
	NodeSelector      map[string]string   `tfsdk:"node_selector"`
	NodeSelectorExprs []selectorExprModel `tfsdk:"node_selector_expressions"`
	// SoakDuration is the wave's own soak window (NixFleet's waves[].soakMinutes).
	SoakDuration types.String `tfsdk:"soak_duration"`
}

type interruptModel struct {
	Type     types.String `tfsdk:"type"`
	Services []string     `tfsdk:"services"`
}

type packageModel struct {
	Name             types.String              `tfsdk:"name"`
	Version          types.String              `tfsdk:"version"`
	Image            types.String              `tfsdk:"image"`
	Env              map[string]string         `tfsdk:"env"`
	EnvFrom          []envFromModel            `tfsdk:"env_from"`
	Config           map[string]string         `tfsdk:"config"`
	Interrupt        *interruptModel           `tfsdk:"interrupt"`
	ConfigInterrupts map[string]interruptModel `tfsdk:"config_interrupts"`
	DependsOn        map[string]string         `tfsdk:"depends_on"`
	Resources        *resourcesModel           `tfsdk:"resources"`
	GracefulShutdown types.String              `tfsdk:"graceful_shutdown"`
	StageTimeout     types.String              `tfsdk:"stage_timeout"`
	PodLabels        map[string]string         `tfsdk:"pod_labels"`
	PodAnnotations   map[string]string         `tfsdk:"pod_annotations"`
	UninstallEnabled types.Bool                `tfsdk:"uninstall_enabled"`
	UninstallApply   types.Bool                `tfsdk:"uninstall_apply"`
	ReapplyOnReboot  types.Bool                `tfsdk:"reapply_on_reboot"`
	Host             *hostAccessModel          `tfsdk:"host"`
	Skyhook          *skyhookModel             `tfsdk:"skyhook"`
}

// uninstallApplyValidator requires uninstall_enabled = true beside uninstall_apply = true (the
// CRD's rule "uninstall.apply needs uninstall.enabled").
type uninstallApplyValidator struct{}

func (uninstallApplyValidator) Description(context.Context) string {
	return "uninstall_apply needs uninstall_enabled = true"
}
func (v uninstallApplyValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (uninstallApplyValidator) ValidateBool(ctx context.Context, req validator.BoolRequest, resp *validator.BoolResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || !req.ConfigValue.ValueBool() {
		return
	}
	var enabled types.Bool
	if req.Config.GetAttribute(ctx, req.Path.ParentPath().AtName("uninstall_enabled"), &enabled).HasError() || enabled.IsUnknown() {
		return
	}
	if !enabled.ValueBool() {
		resp.Diagnostics.AddAttributeError(req.Path, "uninstall_apply Needs uninstall_enabled",
			"uninstall_apply = true runs the package's uninstall stage: set uninstall_enabled = true too.")
	}
}

// needsRuntimeRequired requires runtime_required = true beside its attribute set to true (the
// CRD's rules "spec.autoTaintNewNodes / spec.runtimeRequiredCordonAfter needs
// spec.runtimeRequired = true"); why ends the error's detail.
type needsRuntimeRequired struct{ attr, why string }

func (v needsRuntimeRequired) Description(context.Context) string {
	return v.attr + " needs runtime_required = true"
}
func (v needsRuntimeRequired) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (v needsRuntimeRequired) ValidateBool(ctx context.Context, req validator.BoolRequest, resp *validator.BoolResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || !req.ConfigValue.ValueBool() {
		return
	}
	var required types.Bool
	if req.Config.GetAttribute(ctx, path.Root("runtime_required"), &required).HasError() || required.IsUnknown() {
		return
	}
	if !required.ValueBool() {
		resp.Diagnostics.AddAttributeError(req.Path, v.attr+" Needs runtime_required", v.attr+" = true "+v.why+": set runtime_required = true too.")
	}
}

// hostAccessModel is packages[].host (v1alpha1.HostAccess).
type hostAccessModel struct {
	Privileged    types.Bool   `tfsdk:"privileged"`
	HostPID       types.Bool   `tfsdk:"host_pid"`
	HostNetwork   types.Bool   `tfsdk:"host_network"`
	RootMountPath types.String `tfsdk:"root_mount_path"`
}

// skyhookModel is packages[].skyhook (v1alpha1.SkyhookExecution).
type skyhookModel struct {
	AgentImage  types.String `tfsdk:"agent_image"`
	CopyDirRoot types.String `tfsdk:"copy_dir_root"`
	LogRoot     types.String `tfsdk:"log_root"`
}

func (r *packageSetResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_package_set"
}

// unitNameRe is a systemd unit name (the characters systemd allows in unit names).
var unitNameRe = regexp.MustCompile(`^[A-Za-z0-9:_.@\\-]+$`)

func (r *packageSetResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	interruptTypes := []string{"service", "reboot", "noop", "restartAllServices"}
	interruptAttrs := map[string]schema.Attribute{
		"type": schema.StringAttribute{Required: true, MarkdownDescription: "`service`, `reboot`, `noop` or `restartAllServices`.",
			Validators: []validator.String{stringvalidator.OneOf(interruptTypes...)}},
		"services": schema.ListAttribute{Optional: true, ElementType: types.StringType,
			MarkdownDescription: "Services to restart (type `service` only, required there): systemd unit names, each once.",
			Validators: []validator.List{uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.RegexMatches(unitNameRe,
				"must be a systemd unit name such as containerd or nvidia-persistenced.service (letters, digits, ':', '-', '_', '.', '@', '\\')"))}},
	}
	quantityMap := func(what string) schema.MapAttribute {
		return quantityMapAttribute(fmt.Sprintf("Resource %s of the stage containers, resource name → quantity, e.g. `{ cpu = \"500m\", memory = \"256Mi\" }`.", what), false)
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A Gantry **package set**: packages (images whose lifecycle stages run as Pods on each node) " +
			"applied to the nodes a selector picks, with Skyhook's stage flow (`uninstall → apply → config`, `upgrade → config`, " +
			"`… → config → interrupt → post-interrupt`), interrupts (cordon, drain as `drain` sets it, reboot/service restart) bounded by an " +
			"interruption budget, per-node priority ordering, pause/disable, and a soak window. The provider writes a cluster-scoped " +
			"`gantry.dev/v1alpha1` `PackageSet` with server-side apply and waits until its `status` is `complete` (`paused` and " +
			"`disabled` return at once, and so does a set that only waits for a paused earlier set: with a warning naming that set); " +
			"`erroring` or `blocked` fail the apply naming each failing node, package, stage and message. A node held by a taint that a controller in the " +
			"cluster removes (Kubernetes' `node.kubernetes.io/not-ready`, `unreachable`, pressure and `network-unavailable` taints and the cloud's " +
			"`uninitialized`; on a `runtime_required` set any other taint, as Skyhook waits for the controllers bringing the node up) is `waiting`, not " +
			"`blocked`: the apply keeps waiting, bounded by the create/update timeout, with the taint named in status (reason `WaitingForTaint`). " +
			"A destroy whose uninstall fails stops at once naming them too; see `uninstall_on_delete` for the way out.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "The name; also the import ID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true,
				MarkdownDescription: "Name of the PackageSet: a DNS-1123 label of at most 40 characters (it names node annotations `gantry.dev/state_<name>`). Changing it replaces the set.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.LengthBetween(1, 40),
					stringvalidator.RegexMatches(setNameRe, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")}},
			"labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Labels of the PackageSet object itself (as Skyhook objects carry theirs), e.g. to select sets with `kubectl get packagesets -l`.\n\n" +
					"Keys under `gantry.dev/` and `app.kubernetes.io/managed-by` are Gantry's own and refused at plan. Labels whose prefix is exactly `kubernetes.io/`, `k8s.io/` or `gantry.dev/` that other tools add are ignored on read; any other label shows as drift when changed outside Terraform."},
			"adopt_from_skyhook": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Name of the Skyhook (NVIDIA Skyhook / NodeWright) this set replaces, so that nodes Skyhook already brought to a package do not run it again.\n\n" +
					"Written as the PackageSet annotation `gantry.dev/adopt-from-skyhook`. On each node the set selects, a package the node has no Gantry record of is recorded complete, " +
					"without running a stage Pod, when the node's Skyhook state (annotation `skyhook.nvidia.com/nodeState_<name>`) says Skyhook completed the same package at the same " +
					"version (at `post-interrupt`, or at `config` for a package without interrupt) from the same image repository; any other package runs its flow as usual, and a Warning " +
					"event `NotAdoptedFromSkyhook` says why. `terraform query` with `from = \"skyhook\"` on the `gantry_package_set` list resource generates it. Removing it later changes nothing " +
					"on the nodes. See the migration guide.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
			"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Node labels that pick the nodes (all must match). Unset or empty: every node."},
			"node_selector_expressions": selectorExprsAttribute("Label selector requirements the nodes must also meet (Kubernetes `matchExpressions`, as Skyhook's `nodeSelectors`): " +
				"`In` and `NotIn` need `values`, `Exists` and `DoesNotExist` take none."),
			"sequencing": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(v1alpha1.SequencingNode)),
				MarkdownDescription: "How later sets (higher `priority` number) wait for this one, as NodeWright's `sequencing`. `node` (default) lets a node go on once this set is " +
					"complete on it; `all` holds every node of every later set until this set is complete on all its nodes (a global gate).",
				Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.SequencingNode), string(v1alpha1.SequencingAll))}},
			"serial": schema.BoolAttribute{Optional: true, MarkdownDescription: "Run the packages one at a time on each node, as Skyhook's `serial`.\n\nA package's flow " +
				"(apply or upgrade through config and interrupt, or an uninstall) starts on a node only once no other package of the set has a flow unfinished there, even when " +
				"the packages do not depend on each other. Unset or `false`: independent packages run side by side. Nodes still go in parallel within the budget."},
			"after": schema.ListAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Names of package sets that must be complete on a node before this set starts there, whatever their `priority` (NixFleet's edges between deployments).\n\n" +
					"A named set that does not select the node does not hold it. Sets whose `after` edges form a cycle (`a` after `b` after `c` after `a`) are an invalid spec: the apply fails naming the cycle; a set naming itself fails the plan.",
				Validators: []validator.List{listvalidator.SizeAtMost(16), uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 40),
					stringvalidator.RegexMatches(setNameRe, "must be a package set name: a DNS-1123 label"))}},
			"after_converged": afterConvergedAttribute(),
			"priority": schema.Int64Attribute{Optional: true, MarkdownDescription: "Lower runs first on a node; ties by name. Default 200 (set by the API server when unset).",
				Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"paused":   schema.BoolAttribute{Optional: true, MarkdownDescription: "Stop this set and every later set on its nodes (running stages finish). The apply returns at once."},
			"disabled": schema.BoolAttribute{Optional: true, MarkdownDescription: "Skip this set; later sets continue. The apply returns at once."},
			"uninstall_on_delete": schema.BoolAttribute{Optional: true, MarkdownDescription: "On destroy, run the `uninstall` stage of the packages with " +
				"`uninstall_enabled` on every node (unset: `true`).\n\n`false` destroys the set without running any stage: the node annotations and the set's cordons " +
				"are removed, the packages stay installed. A destroy whose uninstall fails stops at once naming node, package, stage and message; to finish it " +
				"without uninstalling, set `uninstall_on_delete = false`, run `terraform apply`, then `terraform destroy` again (no finalizer to edit)."},
			"interruption_budget": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "Most nodes in flight (stages running, interrupted, soaking) at once: exactly one of `percent` or `count`. Unset: every selected node at once, as Skyhook (100%); set `count = 1` to go one node at a time. " +
					"For budgets per group of nodes and batches, see `deployment_policy`.",
				Attributes: budgetAttributes("the selected nodes")},
			"pod_non_interrupt_labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Pod labels (all must match) of pods that must finish before a node is interrupted: the drain waits for them instead of evicting them. Unset or empty: none. " +
					"To leave pods running through the drain and the interrupt instead, see `drain.skip_pod_labels`."},
			"drain": drainAttribute(),
			"additional_tolerations": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Tolerations added to every stage pod. A node whose taints are not tolerated is `blocked` (the apply fails), or `waiting` when a controller in the cluster removes the taint (see the resource description).",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"key":                schema.StringAttribute{Optional: true, MarkdownDescription: "Taint key; empty with operator Exists matches every taint."},
					"operator":           schema.StringAttribute{Optional: true, MarkdownDescription: "`Exists` or `Equal` (default).", Validators: []validator.String{stringvalidator.OneOf("Exists", "Equal")}},
					"value":              schema.StringAttribute{Optional: true, MarkdownDescription: "Taint value (operator Equal)."},
					"effect":             schema.StringAttribute{Optional: true, MarkdownDescription: "`NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty matches all.", Validators: []validator.String{stringvalidator.OneOf("NoSchedule", "PreferNoSchedule", "NoExecute")}},
					"toleration_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "How long a NoExecute taint is tolerated (seconds)."},
				}}},
			"rollout": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Soak window and health-failure policy (as NixFleet's rollout does).",
				Attributes: map[string]schema.Attribute{
					"soak_duration": schema.StringAttribute{Optional: true, MarkdownDescription: "How long a node soaks after its last stage, e.g. `30s` (unset or `0s`: no soak).\n\n" +
						"While it soaks, each package's last check is re-run as a Pod in rounds: one at once, then every `soak_check_interval`, the last when the window ends. " +
						"The node is Converged once that last round passed; a failed round makes it Failed and `on_health_failure` applies. " +
						"With no soak, `health_checks` still run once after the last stage.", Validators: []validator.String{durationValidator{}}},
					"soak_check_interval": schema.StringAttribute{Optional: true, MarkdownDescription: "Time between the starts of two soak check rounds, e.g. `10s`, at least `1s` " +
						"(a round still running delays the next). Unset: `soak_duration`/3, at least 5s.", Validators: []validator.String{durationValidator{min: time.Second}}},
					"on_health_failure": schema.StringAttribute{Optional: true, MarkdownDescription: "What happens when a node's change fails: `halt` (default) starts no new node meanwhile; `rollback` returns the node to what it had and stops the rollout.\n\n`halt`: no new node starts while one is Failed (its stage is retried with backoff); " +
						"`rollback`: a node whose change fails (a stage or a soak check round) returns to what it had and the rollout stops: a new version to the previous one " +
						"(uninstall of the new one if `uninstall_enabled`, then apply of the previous), a new package is uninstalled (if `uninstall_enabled`) and forgotten, " +
						"a config-only change goes back to the previous config (with its config interrupt), and a downgrade whose uninstall of the installed version fails re-applies the installed version. " +
						"What failed is quarantined, `<package>@<version>` (for a downgrade, its target) or `<package>@<version>#config-<hash>` for a config: " +
						"the apply fails naming the rollback, and the set stays erroring (Stalled) until the version (or config) changes.", Validators: []validator.String{stringvalidator.OneOf("halt", "rollback")}},
					"waves": schema.ListNestedAttribute{Optional: true,
						MarkdownDescription: "Roll out in order, as NixFleet's waves. A node belongs to the first wave whose selector matches it (nodes no wave picks come last), and no node of a wave " +
							"starts until every node of the earlier waves is done (complete, soak included). `status.currentWave` names the wave under way.",
						Validators: []validator.List{listvalidator.SizeAtMost(16), uniqueNames{what: "Wave"}},
						NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
							"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the wave (a DNS-1123 label, unique).",
								Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(setNameRe, "must be a DNS-1123 label")}},
							"node_selector":             schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Node labels that pick the wave's nodes (all must match)."},
							"node_selector_expressions": selectorExprsAttribute("Label selector requirements the wave's nodes must also meet (`matchExpressions`)."),
							"soak_duration": schema.StringAttribute{Optional: true, MarkdownDescription: "How long this wave's nodes soak, instead of `rollout.soak_duration` " +
								"(NixFleet's per-wave `soakMinutes`), e.g. `10m` for a canary wave and `1m` after it; `0s`: no soak for this wave. Unset: the rollout's.",
								Validators: []validator.String{durationValidator{}}},
						}}},
					"health_checks": healthChecksAttribute(),
					"node_edges":    nodeEdgesAttribute(),
					"fleet_budget":  fleetBudgetAttribute(),
					"release":       releaseAttribute(),
				}},
			"deployment_policy": deploymentPolicyAttribute(),
			"packages": schema.ListNestedAttribute{Required: true, MarkdownDescription: "The packages, in your order (ties in dependency order follow it).",
				Validators: []validator.List{listvalidator.SizeBetween(1, 32)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Lower-case letters, digits and '-', starting and ending with a letter, at most 43 characters.",
						Validators: []validator.String{stringvalidator.RegexMatches(packageNameRe, "must match ^[a-z][-a-z0-9]{0,41}[a-z]$ (lower-case letters, digits and '-', starting and ending with a letter, 2-43 characters)")}},
					"version": schema.StringAttribute{Required: true, MarkdownDescription: "Semantic version, e.g. `1.2.3`, or `MAJOR.MINOR` as Skyhook users write it (`1.2`, compared as 1.2.0, kept as written). Up: upgrade; down: uninstall (if enabled) then apply.",
						Validators: []validator.String{stringvalidator.LengthAtMost(64), stringvalidator.RegexMatches(semverRe, "must be a semantic version such as 1.2.3 or 2.0.0-rc.1, or MAJOR.MINOR such as 1.2")}},
					"image": schema.StringAttribute{Required: true, MarkdownDescription: "Package image; the stage is its first argument.\n\nThe version is the tag (as Skyhook): `ghcr.io/acme/tuned` at `1.2` runs `ghcr.io/acme/tuned:1.2`, and a tag written here is replaced by the version (a plan warning names both when they differ); a digest (`@sha256:...`) is used as written; OCI tags cannot contain `+`, so build metadata is tagged with `_` (as Helm does): `1.2.3+build.5` runs `ghcr.io/acme/tuned:1.2.3_build.5`.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 512)}},
					"env":      schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Environment variables of the stage containers."},
					"env_from": envFromAttribute("the namespace of the stage Pods"),
					"resources": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "CPU and memory requests and limits of the stage containers.",
						Attributes: map[string]schema.Attribute{"requests": quantityMap("requests"), "limits": quantityMap("limits")}},
					"host": schema.SingleNestedAttribute{Optional: true,
						MarkdownDescription: "Node access of the stage containers, as Skyhook packages have (drivers, kernel settings). Unset: the stages run unprivileged with no host access. " +
							"Explicit on purpose: a privileged stage with the host's root filesystem can change anything on the node.",
						Attributes: map[string]schema.Attribute{
							"privileged":   schema.BoolAttribute{Optional: true, MarkdownDescription: "Run the stage containers privileged."},
							"host_pid":     schema.BoolAttribute{Optional: true, MarkdownDescription: "Run the stage pods in the host's PID namespace."},
							"host_network": schema.BoolAttribute{Optional: true, MarkdownDescription: "Run the stage pods in the host's network namespace."},
							"root_mount_path": schema.StringAttribute{Optional: true,
								MarkdownDescription: "Mount the host's root filesystem (hostPath `/`) read-write at this path in the stage containers, e.g. `/root` as Skyhook. Not `/`.",
								Validators: []validator.String{stringvalidator.RegexMatches(hostPathRe, "must be an absolute path other than /, e.g. /root"), stringvalidator.LengthAtMost(256),
									checkString{"no '..' element", func(v string) error {
										if strings.Contains(v+"/", "/../") {
											return fmt.Errorf("%q has a '..' element, which a container mount path cannot have", v)
										}
										return nil
									}, "Invalid Mount Path"}}},
						}},
					"skyhook": schema.SingleNestedAttribute{Optional: true,
						MarkdownDescription: "Run an existing Skyhook package image unchanged, as Skyhook's operator runs it.\n\nAn init container copies the image's `/skyhook-package` to the host, then " +
							"`agent_image` runs each stage and its check (`<stage> /root <copy dir>`, `<stage>-check ...`) with Skyhook's environment (`SKYHOOK_LOG_DIR`, `SKYHOOK_ROOT_DIR`, " +
							"`COPY_RESOLV`, `SKYHOOK_RESOURCE_ID`) and `config` at `/skyhook-package/configmaps`. Implies full host access (privileged, host PID and network, the host's `/` at `/root`).",
						Validators: []validator.Object{objectvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("host"))},
						Attributes: map[string]schema.Attribute{
							"agent_image": schema.StringAttribute{Required: true, MarkdownDescription: "Skyhook agent image, e.g. `ghcr.io/nvidia/skyhook/agent:6.3.0` (Skyhook's `AGENT_IMAGE` or `agentImageOverride`).",
								Validators: []validator.String{stringvalidator.LengthBetween(1, 512)}},
							"copy_dir_root": schema.StringAttribute{Optional: true, MarkdownDescription: "Host directory the content is copied under (Skyhook's `COPY_DIR_ROOT`); default `/var/lib/skyhook`.",
								Validators: []validator.String{stringvalidator.RegexMatches(hostPathRe, "must be an absolute path other than /")}},
							"log_root": schema.StringAttribute{Optional: true, MarkdownDescription: "Host directory of the agent's logs (Skyhook's `AGENT_LOG_ROOT`); default `/var/log/skyhook`.",
								Validators: []validator.String{stringvalidator.RegexMatches(hostPathRe, "must be an absolute path other than /")}},
						}},
					"graceful_shutdown": schema.StringAttribute{Optional: true,
						MarkdownDescription: "Grace period of the stage pods, e.g. `30s`: it becomes their `terminationGracePeriodSeconds` (whole seconds, rounded down). Unset: the Kubernetes default (30s).",
						Validators:          []validator.String{durationValidator{}}},
					"config": schema.MapAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Configuration of the stage pods, key → value: mounted read-only at `/etc/gantry/config` in every stage container, one file per key (`GANTRY_CONFIG_DIR` names the path). Keys are file names: letters, digits, `-`, `_` and `.`, not `.` and not starting with `..`. A change re-runs `config`.",
						Validators:          []validator.Map{mapvalidator.KeysAre(stringvalidator.LengthAtMost(253), stringvalidator.RegexMatches(configKeyRe, "must be a file name (ConfigMap key): letters, digits, '-', '_' and '.', not '.' and not starting with '..'"))}},
					"interrupt": schema.SingleNestedAttribute{Optional: true, Attributes: interruptAttrs,
						MarkdownDescription: "Interrupt the node needs after `config` (cordon, drain, interrupt, post-interrupt).\n\nAs NodeWright, an uninstall of the package " +
							"(`uninstall_apply`, removed from the set, or the set destroyed, with `uninstall_enabled`) runs it too: the node is cordoned and drained within the " +
							"interruption budget before the `uninstall` stage, the interrupt runs after it (stage `uninstall-interrupt`, which cannot be cancelled once the uninstall " +
							"is done), then the node is uncordoned."},
					"config_interrupts": schema.MapNestedAttribute{Optional: true, NestedObject: schema.NestedAttributeObject{Attributes: interruptAttrs},
						MarkdownDescription: "Config key → interrupt needed when only that key changes. Keys must be keys of `config`."},
					"depends_on": schema.MapAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Package name → version of packages of this set that must be complete on a node first."},
					"stage_timeout": schema.StringAttribute{Optional: true, MarkdownDescription: "Bound of one stage attempt (default 10m), at least `1s` (it becomes the stage Pod's `activeDeadlineSeconds`, whole seconds); past it the stage is erroring.",
						Validators: []validator.String{durationValidator{min: time.Second}}},
					"pod_labels":        schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels added to the stage pods."},
					"pod_annotations":   schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Annotations added to the stage pods."},
					"uninstall_enabled": schema.BoolAttribute{Optional: true, MarkdownDescription: "Run the uninstall stage when the package is removed, downgraded or the set destroyed."},
					"uninstall_apply": schema.BoolAttribute{Optional: true,
						MarkdownDescription: "Uninstall the package from every node now, keeping it in the set (Skyhook's `uninstall.apply`; needs `uninstall_enabled = true`).\n\n" +
							"Its uninstall stage runs and its node record is dropped. Back to `false` before a node's uninstall started cancels it there; after, the package is applied again. " +
							"Every package of a set may be uninstalled this way.",
						Validators: []validator.Bool{uninstallApplyValidator{}}},
					"reapply_on_reboot": schema.BoolAttribute{Optional: true,
						MarkdownDescription: "Run the package again on a node that boots into a fresh OS, as NodeWright's `reapplyOnReboot`.\n\nIt suits read-only or " +
							"stateless systems such as GKE's Container-Optimized OS, which lose at every boot what the package did (NVIDIA/nodewright #180). When a node's boot ID (`status.nodeInfo.bootID`) " +
							"changes outside a reboot interrupt of this set, the package, if complete there, runs its `apply` and `config` stages (and their checks) again, same " +
							"version and config, without its `interrupt` (no cordon, drain or second reboot); the node's status is `in_progress` meanwhile and the set's " +
							"`RebootedOutsideGantry` event names the boot IDs and packages. With `runtime_required`, the node gets the runtime-required taint again until the set " +
							"is complete there. A reboot interrupt of another package set counts as a reboot outside this set's. A node that reports no boot ID never re-applies. " +
							"The re-apply is a node's work like any other: it waits for the interruption budget, the deployment policy, waves and a pause."},
				}}},
			"runtime_required": schema.BoolAttribute{Optional: true, MarkdownDescription: "The packages must be complete on a node before workloads run there, as Skyhook's " +
				"`runtimeRequired`.\n\nNodes join with the runtime-required taint `" + v1alpha1.DefaultRuntimeRequiredTaint + "` (e.g. kubelet `--register-with-taints`; the reconciler's " +
				"`--runtime-required-taint` names another), which every stage pod tolerates; the reconciler removes it from a node once every runtime-required set selecting " +
				"that node is complete there, node by node (a failing node keeps it). The set's status condition `RuntimeRequiredTaint` names the nodes still tainted and the sets they wait for. " +
				"A node that also carries another taint the stage pods do not tolerate waits for it to go (Skyhook's behaviour: the other controllers bringing the node up remove theirs): " +
				"status `waiting`, reason `WaitingForTaint` naming the node and taint, never a failed apply; the resource timeout bounds the wait."},
			"auto_taint_new_nodes": schema.BoolAttribute{Optional: true, MarkdownDescription: "Add the runtime-required taint to new nodes this set selects, as Skyhook's `autoTaintNewNodes`.\n\nNew nodes are those no set has touched " +
				"(no `gantry.dev/` annotation); a node once handled is never tainted again. Needs `runtime_required = true`. " +
				"Tainting at provisioning is safer: until the reconciler sees a new node, pods may be scheduled there.",
				Validators: []validator.Bool{needsRuntimeRequired{attr: "auto_taint_new_nodes", why: "adds the runtime-required taint, which only runtime-required sets remove"}}},
			"runtime_required_cordon_after": schema.BoolAttribute{Optional: true, MarkdownDescription: "Leave each node cordoned once it is brought up, as NodeWright's `runtimeRequiredCordonAfter` (NVIDIA/nodewright #284).\n\nWhen the runtime-required taint " +
				"leaves a node, the reconciler cordons it in the same update and annotates it `" + v1alpha1.AnnotationRuntimeRequiredCordon + "=<set>`, " +
				"so the node takes no general workload until an operator releases it " +
				"(`kubectl uncordon NODE` and `kubectl annotate node NODE " + v1alpha1.AnnotationRuntimeRequiredCordon + "-`), e.g. after a burn-in. Later interrupts keep " +
				"the node cordoned. A `RuntimeRequiredCordon` event names each node. Needs `runtime_required = true`.",
				Validators: []validator.Bool{needsRuntimeRequired{attr: "runtime_required_cordon_after", why: "cordons nodes when the runtime-required taint leaves them"}}},
			"status":         schema.StringAttribute{Computed: true, MarkdownDescription: "`status.status`: complete, blocked, waiting, disabled, paused, in_progress, erroring or unknown."},
			"complete_nodes": schema.StringAttribute{Computed: true, MarkdownDescription: "Complete nodes over selected nodes, e.g. `3/5`."},
			"node_status":    schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Each selected node's status (`complete`, `in_progress`, `waiting`, ...), for at most 500 nodes.\n\nThose needing attention come first, then complete ones; `complete_nodes` counts all (see the [Status and conditions](../guides/status-and-conditions.md) guide)."},
			"quarantined_versions": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "What the rollout rolled back from (`on_health_failure = \"rollback\"`) and holds back until it changes.\n\nEach entry is `<package>@<version>` (a version, or the target of a downgrade whose uninstall failed), not rolled out again until the package's version changes; or `<package>@<version>#config-<hash>` (a config of that version), not rolled out again until its config (or version) changes."},
			"compartments":    compartmentsAttribute(),
			"rollout_preview": rolloutPreviewAttribute(),
			"timeouts":        timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, DeleteDescription: timeoutsDeleteDescription}),
		},
	}
	resp.Schema.Attributes = withInputValidators(resp.Schema.Attributes)
}

// ValidateConfig checks what the CRD's CEL rules check, at plan: unique package names,
// dependsOn naming a package of the set at its version, no dependency cycle, services only
// (and required) for service interrupts, config_interrupts keys in config. It reads the
// configuration through configValue, so values not known yet (module inputs, for_each, values
// of other resources) are skipped here and checked once known; a check that needs a value
// not known yet (e.g. the set's package versions for depends_on) is deferred as a whole.
func (r *packageSetResource) ValidateConfig(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	validateRolloutConfig(configRoot(req.Config.Raw), &resp.Diagnostics)
	validateNodeEdges(configRoot(req.Config.Raw), &resp.Diagnostics)
	validateReleaseConfig(configRoot(req.Config.Raw), &resp.Diagnostics)
	validateSetSelection(configRoot(req.Config.Raw), &resp.Diagnostics)
	validateDrainConfig(configRoot(req.Config.Raw), &resp.Diagnostics)
	pkgs, known := configRoot(req.Config.Raw).Attr("packages").List()
	if !known {
		return
	}
	// versions: name → version of every package; complete when every name and version is known.
	versions, complete := map[string]string{}, true
	for _, p := range pkgs {
		name, nok := p.Attr("name").String()
		version, vok := p.Attr("version").String()
		if !nok || !vok {
			complete = false
			continue
		}
		if _, dup := versions[name]; dup {
			resp.Diagnostics.AddAttributeError(p.Attr("name").Path(), "Duplicate Package", fmt.Sprintf("%s: package %q appears twice in packages.", p.Attr("name").Path(), name))
		}
		versions[name] = version
	}
	var wants []packageset.Want
	for _, p := range pkgs {
		w, ok := validatePackageConfig(p, versions, complete, &resp.Diagnostics)
		if !ok {
			complete = false
		}
		wants = append(wants, w)
	}
	if complete && !resp.Diagnostics.HasError() {
		if _, err := packageset.Order(wants); err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("packages"), "Dependency Cycle",
				strings.Replace(err.Error(), "spec.packages[].dependsOn", "packages[].depends_on", 1)+".")
		}
	}
}

// validateSetSelection checks what the set selects and waits for, with the values known: after
// must not name the set itself (it would wait for itself for ever), and a wave's node_selector
// must not contradict the set's (a key both name with different values: the wave could pick
// none of the set's nodes).
func validateSetSelection(root configValue, diags *diag.Diagnostics) {
	if name, ok := root.Attr("name").String(); ok {
		after, _ := root.Attr("after").List()
		for _, a := range after {
			if v, ok := a.String(); ok && v == name {
				diags.AddAttributeError(a.Path(), "Package Set Waits for Itself",
					fmt.Sprintf("%s: %q is this set's own name; a set cannot wait until it is complete itself. Name other package sets in after.", a.Path(), v))
			}
		}
		validateAfterConverged(root, name, diags)
	}
	set, ok := root.Attr("node_selector").StringMap()
	if !ok || len(set) == 0 {
		return
	}
	exprs, _ := root.Attr("node_selector_expressions").List()
	exprContradictions(set, exprs, "node_selector", "so the set would select nothing", diags)
	waves, _ := root.Attr("rollout").Attr("waves").List()
	for _, w := range waves {
		sel, _ := w.Attr("node_selector").Map()
		for _, k := range sortedKeys(sel) {
			v, ok := sel[k].String()
			if want, both := set[k]; ok && both && v != want {
				diags.AddAttributeError(sel[k].Path(), "Wave Selects No Node of the Set",
					fmt.Sprintf("%s = %q contradicts node_selector[%q] = %q: the set runs only on nodes labelled %s=%s, so this wave could pick none of them.",
						sel[k].Path(), v, k, want, k, want))
			}
		}
	}
}

// validatePackageConfig checks one element p of packages: depends_on against versions (all
// packages' versions; checked only when complete), interrupts and config_interrupts keys
// (duplicate env_from names: uniqueNames, added by
// withInputValidators). It returns the package's dependencies for the cycle check, and false
// when its name or depends_on is not known yet.
func validatePackageConfig(p configValue, versions map[string]string, complete bool, diags *diag.Diagnostics) (packageset.Want, bool) {
	name, known := p.Attr("name").String()
	image, iok := p.Attr("image").String()
	version, vok := p.Attr("version").String()
	// An image that is no reference at all gets imageRef's error alone, not also this warning.
	if tag := packageset.WrittenTag(image); iok && vok && tag != "" && tag != strings.ReplaceAll(version, "+", "_") && imageRefError(image) == "" {
		diags.AddAttributeWarning(p.Attr("image").Path(), "Image Tag Replaced by the Version",
			fmt.Sprintf("%s = %q names the tag %q, but the package's version is %q. As Skyhook does, the version is the tag: the stages run %s. "+
				"Leave the tag out of image (or write the version's) to keep this warning away.", p.Attr("image").Path(), image, tag, version,
				packageset.ImageOf(v1alpha1.Package{Image: image, Version: version})))
	}
	validateGracefulShutdown(p, diags)
	w := packageset.Want{Name: name}
	deps, depsKnown := p.Attr("depends_on").Map()
	known = known && depsKnown
	for _, d := range sortedKeys(deps) {
		v, vok := deps[d].String()
		if complete && vok {
			if have, ok := versions[d]; !ok || have != v {
				diags.AddAttributeError(deps[d].Path(), "Unknown Dependency",
					fmt.Sprintf("%s: package %q depends on %s %s, which is not a package of this set at that version.", deps[d].Path(), name, d, v))
			}
		}
		w.DependsOn = append(w.DependsOn, d)
	}
	checkInterrupt := func(it configValue) {
		typ, ok := it.Attr("type").String()
		services, sok := it.Attr("services").List()
		if !ok || !sok {
			return
		}
		if (typ == "service") != (len(services) > 0) {
			diags.AddAttributeError(it.Attr("services").Path(), "Invalid Interrupt",
				fmt.Sprintf("%s: services are required for type service and only allowed for it (type is %q).", it.Path(), typ))
		}
	}
	if it := p.Attr("interrupt"); it.usable() {
		checkInterrupt(it)
	}
	cis, _ := p.Attr("config_interrupts").Map()
	configKeys, configKnown := p.Attr("config").Map()
	for _, k := range sortedKeys(cis) {
		if cis[k].usable() {
			checkInterrupt(cis[k])
		}
		if _, ok := configKeys[k]; configKnown && !ok {
			diags.AddAttributeError(cis[k].Path(), "Unknown Config Key",
				fmt.Sprintf("%s: config_interrupts key %q is not a key of %s.", cis[k].Path(), k, p.Attr("config").Path()))
		}
	}
	return w, known
}

// packageSetOps is gantry_package_set's descriptor for the generic Create/Update/Delete path
// (cluster-scoped: namespace ""). Its plans retry (planRetry) while the state's status is not
// complete (nor paused/disabled/waiting) — erroring, blocked, or a rollout rolled back with the
// version quarantined (notLive). Delete waits until the PackageSet is gone: its finalizer runs
// the uninstall stages of packages with uninstall enabled, releases cordons and removes the node
// annotations.
var packageSetOps = &kindOps[packageSetModel]{
	spec:          wait.PackageSet,
	logField:      "package_set",
	summaryAttr:   "status",
	statusAttrs:   []string{"status", "complete_nodes", "node_status", "quarantined_versions"},
	createTimeout: packageSetCreateTimeout,
	updateTimeout: packageSetUpdateTimeout,
	deleteTimeout: packageSetDeleteTimeout,
	timeouts:      func(m *packageSetModel) timeouts.Value { return m.Timeouts },
	key:           func(m *packageSetModel) (string, string) { return "", m.Name.ValueString() },
	expand:        expandPackageSet,
	flatten:       flattenPackageSet,
	setStatus:     setPackageSetStatus,
	notLive:       quarantinedInState,
	ready:         waitingForPausedSet,
	settled:       []string{string(v1alpha1.StatusWaiting)},
	adopt:         skyhookAdopter,
}

// waitingForPausedSet warns when the wait returned because a paused set holds this one (Ready
// False with reason WaitingForPausedSet, whose message names the paused set).
func waitingForPausedSet(id string, final *unstructured.Unstructured) diag.Diagnostics {
	var diags diag.Diagnostics
	if c := wait.FindCondition(wait.Conditions(final), v1alpha1.ConditionReady); c != nil && c.Status == metav1.ConditionFalse && c.Reason == packageset.ReasonWaitingForPausedSet {
		diags.Append(waitingForPausedSetDiagnostic(id, c.Message))
	}
	return diags
}

// quarantinedInState reports a package whose version in state ("<package>@<version>") a
// rollback quarantined: the nodes run the previous version, not the configuration.
func quarantinedInState(m *packageSetModel) (bool, string) {
	if m.QuarantinedVersions.IsNull() || m.QuarantinedVersions.IsUnknown() {
		return false, ""
	}
	q := map[string]bool{}
	for _, v := range m.QuarantinedVersions.Elements() {
		if s, ok := v.(types.String); ok {
			q[s.ValueString()] = true
		}
	}
	for _, p := range m.Packages {
		if pv := p.Name.ValueString() + "@" + p.Version.ValueString(); q[pv] {
			return true, pv + " was rolled back and is quarantined"
		}
	}
	return false, ""
}

// expandPackageSet maps the model to the PackageSet to server-side apply (fields the model
// leaves null are omitted).
func expandPackageSet(m *packageSetModel) (*unstructured.Unstructured, error) {
	s := v1alpha1.PackageSetSpec{Paused: m.Paused.ValueBool(), Disabled: m.Disabled.ValueBool(), Priority: int32(m.Priority.ValueInt64())}
	if !m.UninstallOnDelete.IsNull() && !m.UninstallOnDelete.IsUnknown() {
		s.UninstallOnDelete = m.UninstallOnDelete.ValueBoolPointer()
	}
	s.NodeSelector = expandSelector(m.NodeSelector, m.NodeSelectorExprs)
	s.Sequencing = v1alpha1.Sequencing(m.Sequencing.ValueString())
	s.Serial = m.Serial.ValueBool()
	s.After = append([]string(nil), m.After...)
	s.AfterConverged = expandConvergedEdges(m.AfterConverged)
	s.InterruptionBudget = expandBudget(m.InterruptionBudget)
	s.DeploymentPolicy = expandDeploymentPolicy(m.DeploymentPolicy)
	s.RuntimeRequired, s.AutoTaintNewNodes, s.RuntimeRequiredCordonAfter = m.RuntimeRequired.ValueBool(), m.AutoTaintNewNodes.ValueBool(), m.CordonAfter.ValueBool()
	if len(m.PodNonInterruptLabels) > 0 {
		s.PodNonInterruptLabels = &metav1.LabelSelector{MatchLabels: cloneMap(m.PodNonInterruptLabels)}
	}
	drain, err := expandDrain(m.Drain)
	if err != nil {
		return nil, err
	}
	s.Drain = drain
	for _, t := range m.AdditionalTolerations {
		s.AdditionalTolerations = append(s.AdditionalTolerations, corev1.Toleration{Key: t.Key.ValueString(),
			Operator: corev1.TolerationOperator(t.Operator.ValueString()), Value: t.Value.ValueString(), Effect: corev1.TaintEffect(t.Effect.ValueString()),
			TolerationSeconds: t.TolerationSeconds.ValueInt64Pointer()})
	}
	if m.Rollout != nil {
		ro, err := expandRollout(m.Rollout)
		if err != nil {
			return nil, err
		}
		s.Rollout = ro
	}
	for _, p := range m.Packages {
		ap, err := expandPackage(p)
		if err != nil {
			return nil, err
		}
		s.Packages = append(s.Packages, ap)
	}
	spec, err := toSpecMap(&s)
	if err != nil {
		return nil, err
	}
	keepRequired(spec, reflect.ValueOf(&s))
	obj := &unstructured.Unstructured{Object: map[string]interface{}{"spec": spec}}
	obj.SetAPIVersion(v1alpha1.GroupVersion.String())
	obj.SetKind("PackageSet")
	obj.SetName(m.Name.ValueString())
	if len(m.Labels) > 0 {
		obj.SetLabels(cloneMap(m.Labels))
	}
	if from := m.AdoptFromSkyhook.ValueString(); from != "" {
		obj.SetAnnotations(map[string]string{v1alpha1.AnnotationAdoptFromSkyhook: from})
	}
	return obj, nil
}

// expandRollout maps rollout { ... } to the PackageSet's spec.rollout. Errors: an unparsable
// duration (normally caught at plan time by the validators), naming the wave for a wave's
// soak_duration; the health checks' and release's mapping errors.
func expandRollout(ro *rolloutModel) (*v1alpha1.Rollout, error) {
	out := &v1alpha1.Rollout{OnHealthFailure: v1alpha1.HealthFailurePolicy(ro.OnHealthFailure.ValueString())}
	var err error
	if out.SoakDuration, err = metaDuration(ro.SoakDuration, "rollout.soak_duration"); err != nil {
		return nil, err
	}
	if out.SoakCheckInterval, err = metaDuration(ro.SoakCheckInterval, "rollout.soak_check_interval"); err != nil {
		return nil, err
	}
	for _, w := range ro.Waves {
		wave := v1alpha1.Wave{Name: w.Name.ValueString(), Selector: expandSelector(w.NodeSelector, w.NodeSelectorExprs)}
		if wave.SoakDuration, err = metaDuration(w.SoakDuration, fmt.Sprintf("rollout.waves[%q].soak_duration", wave.Name)); err != nil {
			return nil, err
		}
		out.Waves = append(out.Waves, wave)
	}
	hcs, err := expandHealthChecks(ro.HealthChecks)
	if err != nil {
		return nil, err
	}
	out.HealthChecks = hcs
	out.NodeEdges, out.FleetBudget = expandNodeEdges(ro.NodeEdges), expandFleetBudget(ro.FleetBudget)
	if out.Release, err = expandRelease(ro.Release); err != nil {
		return nil, err
	}
	return out, nil
}

// expandPackage maps one packages element to the PackageSet's spec.packages entry. Errors:
// an unparsable quantity (naming the package) or duration (normally caught at plan time).
func expandPackage(p packageModel) (v1alpha1.Package, error) {
	ap := v1alpha1.Package{Name: p.Name.ValueString(), Version: p.Version.ValueString(), Image: p.Image.ValueString(),
		Env: cloneMap(p.Env), EnvFrom: expandEnvFrom(p.EnvFrom), Config: cloneMap(p.Config), DependsOn: cloneMap(p.DependsOn),
		PodLabels: cloneMap(p.PodLabels), PodAnnotations: cloneMap(p.PodAnnotations)}
	res, err := expandResources(p.Resources)
	if err != nil {
		return ap, fmt.Errorf("packages[%q].%w", ap.Name, err)
	}
	ap.Resources = res.Core()
	if ap.GracefulShutdown, err = metaDuration(p.GracefulShutdown, fmt.Sprintf("packages[%q].graceful_shutdown", ap.Name)); err != nil {
		return ap, err
	}
	if p.Interrupt != nil {
		ap.Interrupt = &v1alpha1.Interrupt{Type: v1alpha1.InterruptType(p.Interrupt.Type.ValueString()), Services: p.Interrupt.Services}
	}
	if len(p.ConfigInterrupts) > 0 {
		ap.ConfigInterrupts = map[string]v1alpha1.Interrupt{}
		for k, it := range p.ConfigInterrupts {
			ap.ConfigInterrupts[k] = v1alpha1.Interrupt{Type: v1alpha1.InterruptType(it.Type.ValueString()), Services: it.Services}
		}
	}
	if ap.StageTimeout, err = metaDuration(p.StageTimeout, fmt.Sprintf("packages[%q].stage_timeout", ap.Name)); err != nil {
		return ap, err
	}
	if !p.UninstallEnabled.IsNull() {
		ap.Uninstall = &v1alpha1.Uninstall{Enabled: p.UninstallEnabled.ValueBool(), Apply: p.UninstallApply.ValueBool()}
	}
	ap.ReapplyOnReboot = p.ReapplyOnReboot.ValueBool()
	if h := p.Host; h != nil {
		ap.Host = &v1alpha1.HostAccess{Privileged: h.Privileged.ValueBool(), HostPID: h.HostPID.ValueBool(), HostNetwork: h.HostNetwork.ValueBool(),
			RootMountPath: h.RootMountPath.ValueString()}
	}
	if sk := p.Skyhook; sk != nil {
		ap.Skyhook = &v1alpha1.SkyhookExecution{AgentImage: sk.AgentImage.ValueString(), CopyDirRoot: sk.CopyDirRoot.ValueString(), LogRoot: sk.LogRoot.ValueString()}
	}
	return ap, nil
}

// flattenPackageSet maps a live PackageSet to the model; optional attributes the API reports
// at their zero value stay null when the prior state had them null (no spurious drift).
func flattenPackageSet(u *unstructured.Unstructured, prior *packageSetModel) (*packageSetModel, error) {
	var ps v1alpha1.PackageSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &ps); err != nil {
		return nil, err
	}
	s := ps.Spec
	m := &packageSetModel{ID: types.StringValue(ps.Name), Name: types.StringValue(ps.Name), Timeouts: prior.Timeouts,
		Labels: readMeta(ps.Labels, prior.Labels), RolloutPreview: prior.RolloutPreview, AdoptFromSkyhook: types.StringNull()}
	if from := ps.Annotations[v1alpha1.AnnotationAdoptFromSkyhook]; from != "" {
		m.AdoptFromSkyhook = types.StringValue(from)
	}
	if m.RolloutPreview.IsNull() || m.RolloutPreview.IsUnknown() {
		m.RolloutPreview = previewNull() // import, list: a preview is made at plan only
	}
	m.NodeSelector = optMap(s.NodeSelector.MatchLabels, prior.NodeSelector)
	m.NodeSelectorExprs = flattenSelectorExprs(s.NodeSelector.MatchExpressions, prior.NodeSelectorExprs)
	m.Sequencing = types.StringValue(string(s.Sequencing))
	m.After = optList(s.After, prior.After)
	m.AfterConverged = flattenConvergedEdges(s.AfterConverged, prior.AfterConverged)
	m.Serial = optBool(s.Serial, prior.Serial)
	if s.Sequencing == "" {
		m.Sequencing = types.StringValue(string(v1alpha1.SequencingNode))
	}
	m.Priority = types.Int64Value(int64(s.Priority))
	if prior.Priority.IsNull() && s.Priority == v1alpha1.DefaultPackageSetPriority {
		m.Priority = types.Int64Null()
	}
	m.Paused = optBool(s.Paused, prior.Paused)
	m.Disabled = optBool(s.Disabled, prior.Disabled)
	m.UninstallOnDelete = types.BoolPointerValue(s.UninstallOnDelete)
	m.InterruptionBudget = flattenBudget(s.InterruptionBudget)
	m.DeploymentPolicy = flattenDeploymentPolicy(s.DeploymentPolicy, prior.DeploymentPolicy)
	m.RuntimeRequired = optBool(s.RuntimeRequired, prior.RuntimeRequired)
	m.AutoTaintNewNodes = optBool(s.AutoTaintNewNodes, prior.AutoTaintNewNodes)
	m.CordonAfter = optBool(s.RuntimeRequiredCordonAfter, prior.CordonAfter)
	if s.PodNonInterruptLabels != nil {
		m.PodNonInterruptLabels = optMap(s.PodNonInterruptLabels.MatchLabels, prior.PodNonInterruptLabels)
	} else {
		m.PodNonInterruptLabels = optMap(nil, prior.PodNonInterruptLabels)
	}
	m.Drain = flattenDrain(s.Drain, prior.Drain)
	m.AdditionalTolerations = flattenTolerations(s.AdditionalTolerations, prior.AdditionalTolerations)
	if ro := s.Rollout; ro != nil {
		var pr rolloutModel
		if prior.Rollout != nil {
			pr = *prior.Rollout
		}
		m.Rollout = &rolloutModel{OnHealthFailure: optString(string(ro.OnHealthFailure), pr.OnHealthFailure), SoakDuration: types.StringNull(), SoakCheckInterval: types.StringNull()}
		if pr.OnHealthFailure.IsNull() && ro.OnHealthFailure == v1alpha1.HealthFailureHalt {
			m.Rollout.OnHealthFailure = types.StringNull()
		}
		if ro.SoakDuration != nil {
			m.Rollout.SoakDuration = durationString(ro.SoakDuration.Duration, pr.SoakDuration)
		}
		if ro.SoakCheckInterval != nil {
			m.Rollout.SoakCheckInterval = durationString(ro.SoakCheckInterval.Duration, pr.SoakCheckInterval)
		}
		m.Rollout.Waves = flattenWaves(ro.Waves, pr.Waves)
		m.Rollout.HealthChecks = flattenHealthChecks(ro.HealthChecks, pr.HealthChecks)
		m.Rollout.NodeEdges, m.Rollout.FleetBudget = flattenNodeEdges(ro.NodeEdges, pr.NodeEdges), flattenFleetBudget(ro.FleetBudget, pr.FleetBudget)
		m.Rollout.Release = flattenRelease(ro.Release, pr.Release)
	}
	for i, p := range s.Packages {
		var pp packageModel
		if i < len(prior.Packages) {
			pp = prior.Packages[i]
		}
		m.Packages = append(m.Packages, flattenPackage(p, pp))
	}
	reportRunningVersions(m, &ps.Status)
	setPackageSetStatus(m, u)
	return m, nil
}

// flattenPackage maps one spec.packages element to the model; pp (the prior element at the
// same index) decides null versus empty only.
func flattenPackage(p v1alpha1.Package, pp packageModel) packageModel {
	mp := packageModel{Name: types.StringValue(p.Name), Version: types.StringValue(p.Version), Image: types.StringValue(p.Image),
		Env: optMap(p.Env, pp.Env), Config: optMap(p.Config, pp.Config), DependsOn: optMap(p.DependsOn, pp.DependsOn),
		PodLabels: optMap(p.PodLabels, pp.PodLabels), PodAnnotations: optMap(p.PodAnnotations, pp.PodAnnotations),
		EnvFrom: flattenEnvFrom(p.EnvFrom, pp.EnvFrom), Resources: flattenResources(v1alpha1.ResourceRequirementsOf(p.Resources), pp.Resources),
		GracefulShutdown: types.StringNull(), StageTimeout: types.StringNull(), UninstallEnabled: types.BoolNull(), UninstallApply: types.BoolNull(),
		ReapplyOnReboot: optBool(p.ReapplyOnReboot, pp.ReapplyOnReboot)}
	if p.GracefulShutdown != nil {
		mp.GracefulShutdown = durationString(p.GracefulShutdown.Duration, pp.GracefulShutdown)
	}
	if p.Interrupt != nil {
		mp.Interrupt = &interruptModel{Type: types.StringValue(string(p.Interrupt.Type)), Services: optList(p.Interrupt.Services, priorServices(pp.Interrupt))}
	}
	if len(p.ConfigInterrupts) > 0 || (pp.ConfigInterrupts != nil && len(pp.ConfigInterrupts) == 0) {
		mp.ConfigInterrupts = map[string]interruptModel{}
		for k, it := range p.ConfigInterrupts {
			var pi *interruptModel
			if x, ok := pp.ConfigInterrupts[k]; ok {
				pi = &x
			}
			mp.ConfigInterrupts[k] = interruptModel{Type: types.StringValue(string(it.Type)), Services: optList(it.Services, priorServices(pi))}
		}
	}
	if p.StageTimeout != nil {
		mp.StageTimeout = durationString(p.StageTimeout.Duration, pp.StageTimeout)
	}
	if p.Uninstall != nil {
		mp.UninstallEnabled = types.BoolValue(p.Uninstall.Enabled)
		mp.UninstallApply = optBool(p.Uninstall.Apply, pp.UninstallApply)
	} else {
		mp.UninstallApply = optBool(false, pp.UninstallApply) // uninstall_apply = false alone sends nothing
	}
	if h := p.Host; h != nil {
		ph := &hostAccessModel{}
		if pp.Host != nil {
			ph = pp.Host
		}
		mp.Host = &hostAccessModel{Privileged: optBool(h.Privileged, ph.Privileged), HostPID: optBool(h.HostPID, ph.HostPID),
			HostNetwork: optBool(h.HostNetwork, ph.HostNetwork), RootMountPath: optString(h.RootMountPath, ph.RootMountPath)}
	}
	if sk := p.Skyhook; sk != nil {
		ps := &skyhookModel{}
		if pp.Skyhook != nil {
			ps = pp.Skyhook
		}
		mp.Skyhook = &skyhookModel{AgentImage: types.StringValue(sk.AgentImage), CopyDirRoot: optString(sk.CopyDirRoot, ps.CopyDirRoot), LogRoot: optString(sk.LogRoot, ps.LogRoot)}
	}
	return mp
}

// reportRunningVersions makes a refresh say what really runs after a rollback: a package
// whose configured version ("<package>@<version>") is quarantined, and which every node
// reporting it runs at one other version (status.nodeState), gets that version, so the
// plan shows the version change (e.g. 1.0.0 → 1.1.0) as an update that re-applies it.
func reportRunningVersions(m *packageSetModel, st *v1alpha1.PackageSetStatus) {
	quarantined := map[string]bool{}
	for _, q := range st.QuarantinedVersions {
		quarantined[q] = true
	}
	for i := range m.Packages {
		p := &m.Packages[i]
		name, want := p.Name.ValueString(), p.Version.ValueString()
		if !quarantined[name+"@"+want] {
			continue
		}
		running := ""
		for _, pkgs := range st.NodeState {
			ps, ok := pkgs[name]
			switch {
			case !ok || ps.Version == "":
			case running == "":
				running = ps.Version
			case running != ps.Version:
				running = want // the nodes disagree: keep the configured version
			}
		}
		if running != "" && running != want {
			p.Version = types.StringValue(running)
		}
	}
}

func priorServices(i *interruptModel) []string {
	if i == nil {
		return nil
	}
	return i.Services
}

func setPackageSetStatus(m *packageSetModel, u *unstructured.Unstructured) {
	m.ID = types.StringValue(u.GetName())
	st, _, _ := unstructured.NestedString(u.Object, "status", "status")
	cn, _, _ := unstructured.NestedString(u.Object, "status", "completeNodes")
	ns, _, _ := unstructured.NestedStringMap(u.Object, "status", "nodeStatus")
	m.Status, m.CompleteNodes = types.StringValue(st), types.StringValue(cn)
	elems := map[string]attr.Value{}
	for k, v := range ns {
		elems[k] = types.StringValue(v)
	}
	m.NodeStatus, _ = types.MapValue(types.StringType, elems)
	qv, _, _ := unstructured.NestedStringSlice(u.Object, "status", "quarantinedVersions")
	q := make([]attr.Value, 0, len(qv))
	for _, v := range qv {
		q = append(q, types.StringValue(v))
	}
	m.QuarantinedVersions, _ = types.ListValue(types.StringType, q)
	var st2 v1alpha1.PackageSetStatus
	if raw, ok, _ := unstructured.NestedMap(u.Object, "status"); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &st2) // a status the API server accepted
	}
	m.Compartments = compartmentsValue(st2.Compartments)
	if m.RolloutPreview.IsUnknown() {
		m.RolloutPreview = previewNull() // planned unknown (no preview could be made): none
	}
}
