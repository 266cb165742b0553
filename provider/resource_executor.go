package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/list"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
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
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var (
	_ resource.Resource                = (*executorResource)(nil)
	_ resource.ResourceWithConfigure   = (*executorResource)(nil)
	_ resource.ResourceWithIdentity    = (*executorResource)(nil)
	_ resource.ResourceWithImportState = (*executorResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*executorResource)(nil)

	_ resource.ResourceWithValidateConfig = (*executorResource)(nil)
)

// Default timeouts of gantry_executor.
const (
	executorCreateTimeout = 10 * time.Minute
	executorUpdateTimeout = 15 * time.Minute
	executorDeleteTimeout = 5 * time.Minute
)

// NewExecutorResource returns the gantry_executor resource.
func NewExecutorResource() resource.Resource {
	return &executorResource{kindResource[executorModelV0]{ops: executorOps}}
}

// NewExecutorListResource returns the gantry_executor list resource (terraform query, Terraform >= 1.14).
func NewExecutorListResource() list.ListResource {
	return &executorResource{kindResource[executorModelV0]{ops: executorOps}}
}

type executorResource struct{ kindResource[executorModelV0] }

// executorModelV0 is gantry_executor's Terraform model.
type executorModelV0 struct {
	ID                      types.String          `tfsdk:"id"`
	Name                    types.String          `tfsdk:"name"`
	Namespace               types.String          `tfsdk:"namespace"`
	Labels                  map[string]string     `tfsdk:"labels"`
	Annotations             map[string]string     `tfsdk:"annotations"`
	Image                   types.String          `tfsdk:"image"`
	ImagePullPolicy         types.String          `tfsdk:"image_pull_policy"`
	ImagePullSecrets        []string              `tfsdk:"image_pull_secrets"`
	Replicas                types.Int64           `tfsdk:"replicas"`
	Chains                  []chainModel          `tfsdk:"chains"`
	AggregatorEndpoint      types.String          `tfsdk:"aggregator_endpoint"`
	PerformerNames          []string              `tfsdk:"performer_names"`
	PerformerSelector       map[string]string     `tfsdk:"performer_selector"`
	OperatorKeys            *operatorKeysModel    `tfsdk:"operator_keys"`
	LogLevel                types.String          `tfsdk:"log_level"`
	Resources               *resourcesModel       `tfsdk:"resources"`
	NodeSelector            map[string]string     `tfsdk:"node_selector"`
	Tolerations             []tolerationModel     `tfsdk:"tolerations"`
	Affinity                jsontypes.Normalized  `tfsdk:"affinity"`
	RuntimeClassName        types.String          `tfsdk:"runtime_class_name"`
	PriorityClassName       types.String          `tfsdk:"priority_class_name"`
	PodLabels               map[string]string     `tfsdk:"pod_labels"`
	ProgressDeadlineSeconds types.Int64           `tfsdk:"progress_deadline_seconds"`
	RollbackOnFailure       types.Bool            `tfsdk:"rollback_on_failure"`
	RollbackKeepRevisions   types.Int64           `tfsdk:"rollback_keep_revisions"`
	Phase                   types.String          `tfsdk:"phase"`
	ReadyReplicas           types.Int64           `tfsdk:"ready_replicas"`
	CurrentRevision         types.String          `tfsdk:"current_revision"`
	LastGoodRevision        types.String          `tfsdk:"last_good_revision"`
	FailedRevision          types.String          `tfsdk:"failed_revision"`
	ConfigMapName           types.String          `tfsdk:"config_map_name"`
	PerformerEndpoints      types.Map             `tfsdk:"performer_endpoints"`
	GRPCPort                types.Int64           `tfsdk:"grpc_port"`
	ManagementPort          types.Int64           `tfsdk:"management_port"`
	OperatorAddress         types.String          `tfsdk:"operator_address"`
	AVSPerformers           []avsPerformerModel   `tfsdk:"avs_performers"`
	ManagePerformers        types.Bool            `tfsdk:"manage_performers"`
	ManagedPerformers       types.Map             `tfsdk:"managed_performers"`
	HourglassCompat         *hourglassCompatModel `tfsdk:"hourglass_compat"`
	Timeouts                timeouts.Value        `tfsdk:"timeouts"`
}

// hourglassCompatModel is hourglass_compat (spec.hourglassCompat).
type hourglassCompatModel struct {
	ConfigFormat types.String `tfsdk:"config_format"`
	L1Chain      types.String `tfsdk:"l1_chain"`
}

// avsPerformerModel is one avs_performers element (Hourglass avsPerformers[]).
type avsPerformerModel struct {
	AVSAddress          types.String      `tfsdk:"avs_address"`
	AVSRegistrarAddress types.String      `tfsdk:"avs_registrar_address"`
	ProcessType         types.String      `tfsdk:"process_type"`
	Image               types.String      `tfsdk:"image"`
	Env                 map[string]string `tfsdk:"env"`
}

type operatorKeysModel struct {
	SecretName             types.String `tfsdk:"secret_name"`
	ECDSAKey               types.String `tfsdk:"ecdsa_key"`
	BLSKey                 types.String `tfsdk:"bls_key"`
	BLSKeystoreKey         types.String `tfsdk:"bls_keystore_key"`
	BLSKeystorePasswordKey types.String `tfsdk:"bls_keystore_password_key"`
	RemoteSignerURL        types.String `tfsdk:"remote_signer_url"`
	ECDSAPrivateKeyWO      types.String `tfsdk:"ecdsa_private_key_wo"`
	BLSPrivateKeyWO        types.String `tfsdk:"bls_private_key_wo"`
	KeysWOVersion          types.Int64  `tfsdk:"private_keys_wo_version"`
	// RemoteSigner is remote_signer (hourglass_compat's web3signer, executor_remote_signer.go).
	RemoteSigner *remoteSignerModel `tfsdk:"remote_signer"`

	// woGiven are the Secret keys (woECDSAKey, woBLSKey) of the write-only keys the
	// configuration gives, set by prepareOperatorKeys during apply; never in state.
	woGiven []string
}

func (r *executorResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_executor"
}

func (r *executorResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	quantityMap := func(what string) schema.MapAttribute {
		return quantityMapAttribute(fmt.Sprintf("Resource %s of the executor container, resource name → quantity, e.g. `{ cpu = \"500m\", memory = \"256Mi\" }`.", what), true)
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "A Gantry **executor**: an AVS executor Deployment configured for several chains, an aggregator and " +
			"the gRPC endpoints of the performers it uses. The reconciler renders `executor-config.yaml` into a ConfigMap " +
			"(a change rolls the pods), and on a failed update rolls back to the last good revision; the apply then fails " +
			"saying so and naming the revision that runs. Operator keys are only ever **references** to a Secret in the " +
			"executor's namespace (or a remote signer URL), or write-only attributes the provider writes into a Secret it owns: no " +
			"key material is ever stored in the plan or the state.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{
				Computed: true, MarkdownDescription: "`<namespace>/<name>`, also the import ID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
			"name": schema.StringAttribute{
				Required: true,
				MarkdownDescription: "Name of the Executor: a DNS-1035 label of at most 40 characters (its Deployment is " +
					"`executor-<name>`, its ConfigMaps `executor-<name>-<config hash>`). Changing it replaces the executor.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.LengthBetween(1, 40),
					stringvalidator.RegexMatches(dns1035Label, "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit")},
			},
			"namespace": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString("default"),
				MarkdownDescription: "Namespace of the Executor, its performers and its key Secret. Defaults to `default`. Changing it replaces the executor.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.LengthBetween(1, 63),
					stringvalidator.RegexMatches(dns1123Label, "must be a DNS-1123 label")},
			},
			"labels":      schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels of the Executor object."},
			"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Annotations of the Executor object."},
			"image": schema.StringAttribute{
				Required: true, MarkdownDescription: "Executor container image. A change rolls the Deployment (phase `Updating`).",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1)},
			},
			"image_pull_policy": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(string(corev1.PullIfNotPresent)),
				MarkdownDescription: "`Always`, `Never` or `IfNotPresent` (default).",
				Validators:          []validator.String{stringvalidator.OneOf(string(corev1.PullAlways), string(corev1.PullNever), string(corev1.PullIfNotPresent))},
			},
			"image_pull_secrets": schema.ListAttribute{
				Optional: true, ElementType: types.StringType, MarkdownDescription: "Names of Secrets used to pull the image.",
				Validators: []validator.List{uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))},
			},
			"replicas": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(1),
				MarkdownDescription: "Number of executor pods, 0-100 (default 1). A change alone is a `Scaling`.",
				Validators:          []validator.Int64{int64validator.Between(0, 100)},
			},
			"chains": schema.ListNestedAttribute{
				Required:            true,
				MarkdownDescription: "Chains the executor monitors (1-32; names and chain IDs unique).",
				Validators:          []validator.List{listvalidator.SizeBetween(1, 32), uniqueChainsValidator{}},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Chain name, e.g. `ethereum`, `base`: lower-case letters, digits and '-'.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dns1123Label, "must be lower-case letters, digits and '-', starting and ending with a letter or digit")}},
					"chain_id": schema.Int64Attribute{Required: true, MarkdownDescription: "EIP-155 chain ID, e.g. `1` (Ethereum), `8453` (Base); at least 1.",
						Validators: []validator.Int64{int64validator.AtLeast(1)}},
					"rpc_url": schema.StringAttribute{Required: true, MarkdownDescription: "JSON-RPC endpoint: an `http(s)://` or `ws(s)://` URL.",
						Validators: []validator.String{stringvalidator.LengthAtMost(2048), stringvalidator.RegexMatches(rpcURL, "must be an http://, https://, ws:// or wss:// URL"), endpointPort{}}},
					"task_mailbox_address": schema.StringAttribute{Required: true, MarkdownDescription: "TaskMailbox contract address: `0x` followed by 40 hex digits.",
						Validators: []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits"),
							checkString{"not the zero address", zeroAddressProblem, "Invalid TaskMailbox Address"}}},
				}},
			},
			"aggregator_endpoint": schema.StringAttribute{
				Required:            true,
				MarkdownDescription: "Aggregator gRPC endpoint: `host:port`, optionally with a scheme (`dns:///`, `grpcs://`, `https://`).",
				Validators: []validator.String{stringvalidator.LengthAtMost(512), stringvalidator.RegexMatches(grpcTarget, "must be host:port, optionally with a scheme such as dns:/// or grpcs://"),
					endpointPort{schemes: []string{"dns", "grpc", "grpcs", "http", "https", "passthrough"}},
					checkString{"host:port without a path", grpcTargetPathProblem, "Invalid Endpoint"}},
			},
			"performer_names": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Names of the `gantry_performer`s (same namespace) whose gRPC endpoints the executor uses, e.g. " +
					"`[gantry_performer.gpu.name]`.\n\nAt most one of `performer_names` and `performer_selector`; with neither, the executor runs " +
					"with no performer endpoints in its config (as upstream Hourglass executors do) and performers can be added later.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 64), uniqueValues{},
					listvalidator.ValueStringsAre(stringvalidator.LengthBetween(1, 53),
						stringvalidator.RegexMatches(dns1035Label, "must be a gantry_performer name: a DNS-1035 label of at most 53 characters")),
					listvalidator.ConflictsWith(path.MatchRoot("performer_selector"))},
			},
			"performer_selector": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Label selector (match labels) picking the performers in the namespace.",
				Validators:          []validator.Map{mapvalidator.SizeAtLeast(1)},
			},
			"operator_keys": schema.SingleNestedAttribute{
				Required: true,
				MarkdownDescription: "Where the operator's signing keys come from: a Secret, a remote signer or write-only keys.\n\nExactly one of: a Secret in the executor's namespace and " +
					"the keys in it (`secret_name` with `ecdsa_key` and/or `bls_key`); `remote_signer_url`; or the keys themselves as " +
					"write-only attributes (`ecdsa_private_key_wo` and/or `bls_private_key_wo` with `private_keys_wo_version`, " +
					"Terraform 1.11 and later), which the provider writes into a Secret it owns and never stores in plan or state. " +
					"With `hourglass_compat`, `remote_signer` (a web3signer for the ECDSA key) stands for `secret_name` and `ecdsa_key`, " +
					"or goes beside `secret_name` when that holds a BLS keystore. " +
					"The key material reaches the pods only as `valueFrom.secretKeyRef`.",
				Validators: []validator.Object{secretKeysValidator{}},
				Attributes: map[string]schema.Attribute{
					"secret_name": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of the Secret holding the private keys.",
						Validators: []validator.String{stringvalidator.LengthAtMost(253), stringvalidator.RegexMatches(dns1123Name, "must be a Secret name (DNS-1123 subdomain)"),
							exactlyOne(path.MatchRelative().AtParent().AtName("remote_signer_url"), path.MatchRelative().AtParent().AtName("private_keys_wo_version")).
								orNoneWith(path.MatchRelative().AtParent().AtName("remote_signer"))}},
					"ecdsa_key": schema.StringAttribute{Optional: true, MarkdownDescription: "Key in the Secret holding the ECDSA private key.",
						Validators: []validator.String{stringvalidator.RegexMatches(secretKey, "must be a Secret key: letters, digits, '-', '_' or '.'"),
							stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("secret_name"))}},
					"bls_key": schema.StringAttribute{Optional: true, MarkdownDescription: "Key in the Secret holding the BLS private key.",
						Validators: []validator.String{stringvalidator.RegexMatches(secretKey, "must be a Secret key: letters, digits, '-', '_' or '.'"),
							stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("secret_name"))}},
					"bls_keystore_key": schema.StringAttribute{Optional: true, MarkdownDescription: "Key in the Secret holding a BLS keystore (EIP-2335 JSON), as " +
						"Hourglass's `signingKeys.bls.keystore`. It is mounted read-only at `" + v1alpha1.ExecutorKeystorePath + "` and named in the config " +
						"(`signer.bls_keystore_file`). Conflicts with `bls_key`.",
						Validators: []validator.String{stringvalidator.RegexMatches(secretKey, "must be a Secret key: letters, digits, '-', '_' or '.'"),
							stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("secret_name")),
							stringvalidator.ConflictsWith(path.MatchRelative().AtParent().AtName("bls_key"))}},
					"bls_keystore_password_key": schema.StringAttribute{Optional: true, MarkdownDescription: "Key in the Secret holding the keystore's password, " +
						"passed as the environment variable `" + v1alpha1.ExecutorBLSKeystorePasswordEnv + "` (`valueFrom.secretKeyRef`). Needs `bls_keystore_key`.",
						Validators: []validator.String{stringvalidator.RegexMatches(secretKey, "must be a Secret key: letters, digits, '-', '_' or '.'"),
							stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("bls_keystore_key"))}},
					"remote_signer_url": schema.StringAttribute{Optional: true, MarkdownDescription: "URL of a remote signer (web3signer), `https://` or `http://`.",
						Validators: []validator.String{stringvalidator.LengthAtMost(2048), stringvalidator.RegexMatches(httpURL, "must be an http:// or https:// URL")}},
					"remote_signer": remoteSignerAttribute("executor", executorRemoteSignerLead),
					"ecdsa_private_key_wo": schema.StringAttribute{Optional: true, WriteOnly: true, Sensitive: true,
						MarkdownDescription: "Terraform 1.11 and later: the ECDSA private key itself. The provider writes it " +
							"into a Secret it owns, `<name>-operator-keys` (key `ecdsa-private-key`), owned by the Executor; it is never " +
							"stored in the plan, the state or the logs. Needs `private_keys_wo_version`; conflicts with `secret_name`.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("private_keys_wo_version"))}},
					"bls_private_key_wo": schema.StringAttribute{Optional: true, WriteOnly: true, Sensitive: true,
						MarkdownDescription: "Terraform 1.11 and later: the BLS private key itself, written like " +
							"`ecdsa_private_key_wo` (key `bls-private-key`). Needs `private_keys_wo_version`.",
						Validators: []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AlsoRequires(path.MatchRelative().AtParent().AtName("private_keys_wo_version"))}},
					"private_keys_wo_version": schema.Int64Attribute{Optional: true,
						MarkdownDescription: "Version of the write-only keys, at least 1.\n\nTerraform cannot see a change of a write-only value: " +
							"increase this number to rotate the keys. The Secret is rewritten and the executor pods roll onto the new keys " +
							"(annotation `gantry.dev/operator-keys-version`). Needs `ecdsa_private_key_wo` and/or `bls_private_key_wo`.",
						Validators: []validator.Int64{int64validator.AtLeast(1)}},
				},
			},
			"log_level": schema.StringAttribute{
				Optional: true, Computed: true, Default: stringdefault.StaticString(v1alpha1.DefaultExecutorLogLevel),
				MarkdownDescription: "`debug`, `info` (default), `warn` or `error`.",
				Validators:          []validator.String{stringvalidator.OneOf("debug", "info", "warn", "error")},
			},
			"resources": schema.SingleNestedAttribute{
				Optional: true, MarkdownDescription: "CPU and memory requests and limits of the executor container.",
				Attributes: map[string]schema.Attribute{"requests": quantityMap("requests"), "limits": quantityMap("limits")},
			},
			"node_selector":       schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Node labels the executor pods' nodes must carry."},
			"tolerations":         tolerationsAttribute("Tolerations of the executor pods."),
			"affinity":            affinityAttribute("executor pods"),
			"runtime_class_name":  schema.StringAttribute{Optional: true, MarkdownDescription: "RuntimeClass of the executor pods."},
			"priority_class_name": schema.StringAttribute{Optional: true, MarkdownDescription: "PriorityClass of the executor pods."},
			"pod_labels": schema.MapAttribute{
				Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Extra labels on the executor pods (no key under `gantry.dev/`, not `app.kubernetes.io/managed-by`: Gantry's own). A change rolls the pods.",
			},
			"progress_deadline_seconds": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultProgressDeadlineSeconds)),
				MarkdownDescription: "Seconds a rollout may make no progress before it counts as failed (the Deployment's `ProgressDeadlineExceeded`), 10-3600; default 600.",
				Validators:          []validator.Int64{int64validator.Between(10, 3600)},
			},
			"rollback_on_failure": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(true),
				MarkdownDescription: "Roll back to the last good revision when an update fails (default `true`). The apply fails either way; with rollback it says which revision runs.",
			},
			"rollback_keep_revisions": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultRollbackKeepRevisions)),
				MarkdownDescription: "Old revisions kept for rollback, 1-50 (default 3).",
				Validators:          []validator.Int64{int64validator.Between(1, 50)},
			},
			"phase":              schema.StringAttribute{Computed: true, MarkdownDescription: "`status.phase`: `Pending`, `Creating`, `Running`, `Updating`, `Scaling`, `Failed`, `RollingBack` or `Terminating`."},
			"ready_replicas":     schema.Int64Attribute{Computed: true, MarkdownDescription: "Ready executor pods."},
			"current_revision":   schema.StringAttribute{Computed: true, MarkdownDescription: "Revision (pod template hash) that runs now."},
			"last_good_revision": schema.StringAttribute{Computed: true, MarkdownDescription: "Last revision that rolled out fully: the rollback target."},
			"failed_revision": schema.StringAttribute{Computed: true, MarkdownDescription: "Revision whose rollout failed and was rolled back " +
				"(null when none). While it is set the executor runs `last_good_revision` and every plan proposes an update that re-applies the configuration."},
			"config_map_name": schema.StringAttribute{Computed: true, MarkdownDescription: "ConfigMap holding the rendered config: `executor-config.yaml`, or `config.yaml` in Hourglass's format with `hourglass_compat`."},
			"performer_endpoints": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Performer name → gRPC endpoint, as rendered into the config."},
			"grpc_port": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultExecutorGRPCPort)),
				MarkdownDescription: "Port of the executor's gRPC server (Hourglass `grpcPort`), 1-65535; default 9090. A container port named `grpc`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"management_port": schema.Int64Attribute{
				Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultExecutorManagementPort)),
				MarkdownDescription: "Port of the executor's management gRPC server (Hourglass `managementServerGrpcPort`), 1-65535; default 9091. A container port named `management`.",
				Validators:          []validator.Int64{int64validator.Between(1, 65535)},
			},
			"operator_address": schema.StringAttribute{
				Optional: true, MarkdownDescription: "The operator's Ethereum address (Hourglass `operator.address`): `0x` followed by 40 hex digits.",
				Validators: []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits")},
			},
			"avs_performers": schema.ListNestedAttribute{
				Optional: true,
				MarkdownDescription: "The AVSs this executor serves (Hourglass `avsPerformers`), one per AVS address, at most 64. With " +
					"`manage_performers` the executor deploys each one's `image` as a performer itself.",
				Validators: []validator.List{listvalidator.SizeBetween(1, 64), uniqueNames{what: "AVS Address", key: "avs_address", fold: true}},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"avs_address": schema.StringAttribute{Required: true, MarkdownDescription: "AVS contract address: `0x` followed by 40 hex digits.",
						Validators: []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits")}},
					"avs_registrar_address": schema.StringAttribute{Optional: true, MarkdownDescription: "AVS registrar contract address (Hourglass `avsRegistrarAddress`).",
						Validators: []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits")}},
					"process_type": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(v1alpha1.DefaultProcessType),
						MarkdownDescription: "`server` (a long-running gRPC server, the default) or `one-off` (a process per task), as Hourglass's `processType`.",
						Validators:          []validator.String{stringvalidator.OneOf("server", "one-off")}},
					"image": schema.StringAttribute{Optional: true, MarkdownDescription: "Performer image the executor deploys for this AVS (with `manage_performers`).",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 512)}},
					"env": schema.MapAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Plain environment variables for that performer, name → value. No key material."},
				}},
			},
			"manage_performers": schema.BoolAttribute{
				Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Let the executor create and remove performers itself, as Hourglass's executor does for each AVS it serves.\n\n" +
					"Its pods run as the ServiceAccount `executor-<name>`, bound by the Role `executor-<name>` to create, update and delete " +
					"Performers in this namespace (and to read Pods and Services), nothing else; the config's `kubernetes` section names the " +
					"namespace, the API group and the label `" + v1alpha1.LabelCreatedByExecutor + "=<name>` to put on them. `managed_performers` " +
					"lists them; destroying the executor (or turning this off) deletes them. Default `false`.",
			},
			"hourglass_compat": schema.SingleNestedAttribute{
				Optional: true,
				MarkdownDescription: "Hourglass compatibility mode: run an unmodified Hourglass executor (ponos) image.\n\nThe config is rendered " +
					"in Hourglass's own format (`config.yaml`: `grpcPort`, `managementServerGrpcPort`, `operator`, `l1Chain`, " +
					"`avsPerformers` with `deploymentMode: kubernetes`, `kubernetes` with `crdGroup: hourglass.eigenlayer.io`, " +
					"`storage: {type: memory}`) and the container runs `executor run --config /etc/gantry/config.yaml`, as Hourglass's " +
					"Helm chart runs it. The operator keys stay Secret references: the config holds empty placeholders that the " +
					"executor's config loader fills from the environment variables `" + executor.HourglassOperatorKeyEnv + "` " +
					"(from `ecdsa_key`), `" + executor.HourglassBLSKeystoreEnv + "` (from `bls_keystore_key`) and `" +
					executor.HourglassBLSPasswordEnv + "` (from `bls_keystore_password_key`), each `valueFrom.secretKeyRef`. " +
					"The pods run as the ServiceAccount `executor-<name>`, whose Role lets the executor create, update and delete " +
					"Hourglass `Performer` objects in this namespace (Hourglass's operator runs them, with the default scheduling " +
					"Hourglass gives them: none). With the default `config_format` (`\"" + v1alpha1.HourglassConfigFormatPonos + "\"`) it needs `operator_address` and `operator_keys.ecdsa_key` (or `ecdsa_private_key_wo`, or " +
					"`operator_keys.remote_signer`: a web3signer, rendered as Hourglass's `remoteSignerConfig`); " +
					"takes no `bls_key`, `bls_private_key_wo`, `remote_signer_url`, `performer_names` or `performer_selector`; " +
					"`avs_performers` images must be `repository:tag`. With `config_format = \"" + v1alpha1.HourglassConfigFormatExecutorV1alpha1 + "\"` " +
					"the config is instead the one the removed `HourglassExecutor` operator wrote (see `config_format`). " +
					"See the guide \"Moving from Skyhook, NixFleet, KAITO or the Hourglass operator\" (sections \"Running an unmodified Hourglass executor image\" " +
					"and \"Executor images built for the HourglassExecutor operator\").",
				Attributes: map[string]schema.Attribute{
					"config_format": schema.StringAttribute{Optional: true,
						MarkdownDescription: "Config format the executor image reads: `\"" + v1alpha1.HourglassConfigFormatPonos + "\"` (the default) or `\"" +
							v1alpha1.HourglassConfigFormatExecutorV1alpha1 + "\"`.\n\n`\"" + v1alpha1.HourglassConfigFormatPonos + "\"` (also when unset) is " +
							"Hourglass's current executor (ponos), as above. `\"" + v1alpha1.HourglassConfigFormatExecutorV1alpha1 + "\"` is for executor images " +
							"built for the removed `HourglassExecutor` operator (`hourglass.eigenlayer.io/v1alpha1`): `config.yaml` holds exactly what that " +
							"operator wrote (`aggregator_endpoint`, `performer_mode: \"kubernetes\"`, `log_level`, `chains` with `name`, `rpc`, `chain_id`, " +
							"`task_mailbox_address`, and `kubernetes.namespace`, the executor's namespace), mounted at `" + v1alpha1.HourglassExecutorV1alpha1MountPath +
							"`; the container keeps its image's entrypoint with the argument `--config=" + v1alpha1.HourglassExecutorV1alpha1MountPath + "/config.yaml`, " +
							"port `grpc` 9090, HTTP probes `/healthz` and `/readyz` on port 8080. That operator gave its executor no keys: here " +
							"`operator_keys.ecdsa_key` and `bls_key` (or the write-only keys) reach it as the environment variables `" + v1alpha1.ExecutorECDSAKeyEnv +
							"` and `" + v1alpha1.ExecutorBLSKeyEnv + "` (`valueFrom.secretKeyRef`), never in the config or in state. This format needs no " +
							"`operator_address` and takes no `avs_performers`, `l1_chain`, `bls_keystore_key`, `remote_signer`, `remote_signer_url`, " +
							"`management_port`, and no `grpc_port` but 9090.",
						Validators: []validator.String{stringvalidator.OneOf(v1alpha1.HourglassConfigFormatPonos, v1alpha1.HourglassConfigFormatExecutorV1alpha1)}},
					"l1_chain": schema.StringAttribute{Optional: true,
						MarkdownDescription: "Name of the chain in `chains` rendered as Hourglass's `l1Chain` (`rpcUrl`, `chainId`); default the " +
							"first chain. Hourglass's executor reads no other chain, no aggregator endpoint and no task mailbox address.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dns1123Label, "must be a chain name: lower-case letters, digits and '-', starting and ending with a letter or digit")}},
				},
			},
			"managed_performers": schema.MapAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "Performers the executor created itself (`manage_performers`): name → gRPC endpoint (empty until it has one)."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, DeleteDescription: timeoutsDeleteDescription}),
		},
	}
	resp.Schema.Attributes = withInputValidators(resp.Schema.Attributes)
}

// ValidateConfig checks what one attribute's validators cannot see, with the values that are
// known (Terraform calls it again at apply with the rest): grpc_port and management_port
// (defaults 9090 and 9091) must differ, since both are ports of the one executor container;
// hourglass_compat's requirements (validateHourglassCompat); with manage_performers every
// avs_performers element needs the image the executor deploys.
func (r *executorResource) ValidateConfig(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	validateHourglassCompat(root, resp)
	validateOperatorKeys(root, &resp.Diagnostics)
	validateRemoteSigner(root, resp)
	port := func(name string, def int32) (int64, bool) {
		v := root.Attr(name)
		if v.Null() {
			return int64(def), true
		}
		return v.Int64()
	}
	grpc, gok := port("grpc_port", v1alpha1.DefaultExecutorGRPCPort)
	mgmt, mok := port("management_port", v1alpha1.DefaultExecutorManagementPort)
	if gok && mok && grpc == mgmt {
		resp.Diagnostics.AddAttributeError(path.Root("management_port"), "Port Used Twice",
			fmt.Sprintf("management_port = %d is also grpc_port (default 9090; management_port's default is 9091): the executor's gRPC "+
				"and management servers listen in the same container and need different ports.", mgmt))
	}
	if manage, ok := root.Attr("manage_performers").Bool(); !ok || !manage {
		return
	}
	avs, ok := root.Attr("avs_performers").List()
	if !ok {
		return
	}
	for _, a := range avs {
		if img := a.Attr("image"); img.Null() {
			addr, _ := a.Attr("avs_address").String()
			resp.Diagnostics.AddAttributeError(img.Path(), "Missing Performer Image",
				fmt.Sprintf("%s: manage_performers = true makes the executor deploy each AVS's performer from its image, but the AVS %s "+
					"has none, so there would be nothing to deploy. Set its image, or set manage_performers = false and deploy the performer "+
					"yourself (gantry_performer).", img.Path(), addr))
		}
	}
}

// executorOps is gantry_executor's descriptor for the generic Create/Update/Delete path. Its
// plans retry (planRetry) while the state says the executor failed, is not Running, or a failed
// update was rolled back (failed_revision set, notLive); an apply whose wait ends on a rollback
// reports it as one (rolledBack).
var executorOps = &kindOps[executorModelV0]{
	spec:          wait.Executor,
	logField:      "executor",
	summaryAttr:   "phase",
	statusAttrs:   []string{"phase", "ready_replicas", "current_revision", "last_good_revision", "failed_revision", "config_map_name", "performer_endpoints"},
	createTimeout: executorCreateTimeout,
	updateTimeout: executorUpdateTimeout,
	deleteTimeout: executorDeleteTimeout,
	timeouts:      func(m *executorModelV0) timeouts.Value { return m.Timeouts },
	key:           func(m *executorModelV0) (string, string) { return m.Namespace.ValueString(), m.Name.ValueString() },
	expand:        expandExecutor,
	flatten:       flattenExecutor,
	setStatus:     setExecutorStatus,
	prepare:       prepareOperatorKeys,
	applied:       ownOperatorKeys,
	rolledBack:    executorRolledBack,
	notLive: func(m *executorModelV0) (bool, string) {
		if v := m.FailedRevision.ValueString(); v != "" {
			return true, "the update to revision " + v + " was rolled back"
		}
		return false, ""
	},
}

// executorRolledBack reports an Executor running its previous revision after a failed update
// (status.failedRevision set, Stalled=True with reason RolledBack).
func executorRolledBack(u *unstructured.Unstructured) bool {
	failed, _, _ := unstructured.NestedString(u.Object, "status", "failedRevision")
	for _, c := range wait.Conditions(u) {
		if c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue && c.Reason == "RolledBack" {
			return failed != ""
		}
	}
	return false
}

// expandExecutor maps the model to the Executor to server-side apply. Only references to key
// Secrets are sent.
func expandExecutor(m *executorModelV0) (*unstructured.Unstructured, error) {
	replicas := int32(m.Replicas.ValueInt64())
	deadline := int32(m.ProgressDeadlineSeconds.ValueInt64())
	onFailure := m.RollbackOnFailure.ValueBool()
	keep := int32(m.RollbackKeepRevisions.ValueInt64())
	spec := v1alpha1.ExecutorSpec{
		Image:                   m.Image.ValueString(),
		ImagePullPolicy:         corev1.PullPolicy(m.ImagePullPolicy.ValueString()),
		Replicas:                &replicas,
		AggregatorEndpoint:      m.AggregatorEndpoint.ValueString(),
		LogLevel:                v1alpha1.ExecutorLogLevel(m.LogLevel.ValueString()),
		PodLabels:               cloneMap(m.PodLabels),
		ProgressDeadlineSeconds: &deadline,
		Rollback:                v1alpha1.RollbackPolicy{OnFailure: &onFailure, KeepRevisions: &keep},
		GRPCPort:                int32(m.GRPCPort.ValueInt64()),
		ManagementPort:          int32(m.ManagementPort.ValueInt64()),
		OperatorAddress:         m.OperatorAddress.ValueString(),
		ManagePerformers:        m.ManagePerformers.ValueBool(),
	}
	if c := m.HourglassCompat; c != nil {
		spec.HourglassCompat = &v1alpha1.HourglassCompat{ConfigFormat: c.ConfigFormat.ValueString(), L1Chain: c.L1Chain.ValueString()}
	}
	for _, a := range m.AVSPerformers {
		spec.AVSPerformers = append(spec.AVSPerformers, v1alpha1.AVSPerformer{AVSAddress: a.AVSAddress.ValueString(),
			AVSRegistrarAddress: a.AVSRegistrarAddress.ValueString(), ProcessType: a.ProcessType.ValueString(),
			Image: a.Image.ValueString(), Env: cloneMap(a.Env)})
	}
	for _, s := range m.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	for _, ch := range m.Chains {
		spec.Chains = append(spec.Chains, v1alpha1.Chain{Name: ch.Name.ValueString(), ChainID: ch.ChainID.ValueInt64(),
			RPCURL: ch.RPCURL.ValueString(), TaskMailboxAddress: ch.TaskMailboxAddress.ValueString()})
	}
	spec.Performers.Names = append([]string(nil), m.PerformerNames...)
	if len(m.PerformerSelector) > 0 {
		spec.Performers.Selector = &metav1.LabelSelector{MatchLabels: cloneMap(m.PerformerSelector)}
	}
	if k := m.OperatorKeys; k != nil {
		spec.OperatorKeys = v1alpha1.OperatorKeys{SecretName: k.SecretName.ValueString(), ECDSAKey: k.ECDSAKey.ValueString(),
			BLSKey: k.BLSKey.ValueString(), RemoteSignerURL: k.RemoteSignerURL.ValueString(),
			BLSKeystoreKey: k.BLSKeystoreKey.ValueString(), BLSKeystorePasswordKey: k.BLSKeystorePasswordKey.ValueString(),
			RemoteSigner: expandRemoteSigner(k.RemoteSigner)}
		if !k.KeysWOVersion.IsNull() {
			spec.OperatorKeys = v1alpha1.OperatorKeys{SecretName: operatorKeysSecretName(m.Name.ValueString()),
				SecretVersion: strconv.FormatInt(k.KeysWOVersion.ValueInt64(), 10)}
			if slices.Contains(k.woGiven, woECDSAKey) {
				spec.OperatorKeys.ECDSAKey = woECDSAKey
			}
			if slices.Contains(k.woGiven, woBLSKey) {
				spec.OperatorKeys.BLSKey = woBLSKey
			}
		}
	}
	var err error
	if spec.Resources, err = expandResources(m.Resources); err != nil {
		return nil, err
	}
	spec.Scheduling = expandScheduling(m.NodeSelector, m.Tolerations, m.RuntimeClassName, m.PriorityClassName)
	specMap, err := toSpecMap(&spec)
	if err != nil {
		return nil, err
	}
	keepRequired(specMap, reflect.ValueOf(&spec))
	if err := expandAffinity(specMap, m.Affinity); err != nil {
		return nil, err
	}
	return newObject("Executor", m.Name.ValueString(), m.Namespace.ValueString(), m.Labels, m.Annotations, specMap), nil
}

// flattenExecutor maps an Executor read from the cluster to the model; prior decides null
// versus empty only, so a refresh of an unchanged object equals prior and any real
// difference is drift.
func flattenExecutor(u *unstructured.Unstructured, prior *executorModelV0) (*executorModelV0, error) {
	if prior == nil {
		prior = &executorModelV0{}
	}
	var x v1alpha1.Executor
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &x); err != nil {
		return nil, err
	}
	s := x.Spec
	m := &executorModelV0{
		Name:                    types.StringValue(x.Name),
		Namespace:               types.StringValue(x.Namespace),
		Labels:                  readMeta(x.Labels, prior.Labels),
		Annotations:             readMeta(x.Annotations, prior.Annotations),
		Image:                   types.StringValue(s.Image),
		ImagePullPolicy:         types.StringValue(string(s.ImagePullPolicy)),
		Replicas:                types.Int64Value(int64(v1alpha1.DefaultExecutorReplicas)),
		AggregatorEndpoint:      types.StringValue(s.AggregatorEndpoint),
		LogLevel:                types.StringValue(string(s.LogLevel)),
		PodLabels:               optMap(s.PodLabels, prior.PodLabels),
		NodeSelector:            optMap(s.Scheduling.NodeSelector, prior.NodeSelector),
		RuntimeClassName:        optStringPtr(s.Scheduling.RuntimeClassName, prior.RuntimeClassName),
		PriorityClassName:       optStringPtr(s.Scheduling.PriorityClassName, prior.PriorityClassName),
		ProgressDeadlineSeconds: types.Int64Value(int64(v1alpha1.DefaultProgressDeadlineSeconds)),
		RollbackOnFailure:       types.BoolValue(true),
		RollbackKeepRevisions:   types.Int64Value(int64(v1alpha1.DefaultRollbackKeepRevisions)),
		PerformerNames:          optList(s.Performers.Names, prior.PerformerNames),
		GRPCPort:                types.Int64Value(int64(executor.GRPCPort(&x))),
		ManagementPort:          types.Int64Value(int64(executor.ManagementPort(&x))),
		OperatorAddress:         optString(s.OperatorAddress, prior.OperatorAddress),
		ManagePerformers:        types.BoolValue(s.ManagePerformers),
		Timeouts:                prior.Timeouts,
	}
	for i, a := range s.AVSPerformers {
		var pa avsPerformerModel
		if i < len(prior.AVSPerformers) {
			pa = prior.AVSPerformers[i]
		}
		pt := a.ProcessType
		if pt == "" {
			pt = v1alpha1.DefaultProcessType
		}
		m.AVSPerformers = append(m.AVSPerformers, avsPerformerModel{AVSAddress: types.StringValue(a.AVSAddress),
			AVSRegistrarAddress: optString(a.AVSRegistrarAddress, pa.AVSRegistrarAddress), ProcessType: types.StringValue(pt),
			Image: optString(a.Image, pa.Image), Env: optMap(a.Env, pa.Env)})
	}
	if s.ImagePullPolicy == "" {
		m.ImagePullPolicy = types.StringValue(string(corev1.PullIfNotPresent))
	}
	if s.LogLevel == "" {
		m.LogLevel = types.StringValue(v1alpha1.DefaultExecutorLogLevel)
	}
	if s.Replicas != nil {
		m.Replicas = types.Int64Value(int64(*s.Replicas))
	}
	if s.ProgressDeadlineSeconds != nil {
		m.ProgressDeadlineSeconds = types.Int64Value(int64(*s.ProgressDeadlineSeconds))
	}
	if s.Rollback.OnFailure != nil {
		m.RollbackOnFailure = types.BoolValue(*s.Rollback.OnFailure)
	}
	if s.Rollback.KeepRevisions != nil {
		m.RollbackKeepRevisions = types.Int64Value(int64(*s.Rollback.KeepRevisions))
	}
	var secrets []string
	for _, ref := range s.ImagePullSecrets {
		secrets = append(secrets, ref.Name)
	}
	m.ImagePullSecrets = optList(secrets, prior.ImagePullSecrets)
	for _, ch := range s.Chains {
		m.Chains = append(m.Chains, chainModel{Name: types.StringValue(ch.Name), ChainID: types.Int64Value(ch.ChainID),
			RPCURL: types.StringValue(ch.RPCURL), TaskMailboxAddress: types.StringValue(ch.TaskMailboxAddress)})
	}
	if sel := s.Performers.Selector; sel != nil {
		m.PerformerSelector = cloneMap(sel.MatchLabels)
	}
	var pk operatorKeysModel
	if prior.OperatorKeys != nil {
		pk = *prior.OperatorKeys
	}
	m.OperatorKeys = flattenOperatorKeys(s.OperatorKeys, u.GetName(), pk)
	if c := s.HourglassCompat; c != nil {
		var pc hourglassCompatModel
		if prior.HourglassCompat != nil {
			pc = *prior.HourglassCompat
		}
		m.HourglassCompat = &hourglassCompatModel{ConfigFormat: optString(c.ConfigFormat, pc.ConfigFormat), L1Chain: optString(c.L1Chain, pc.L1Chain)}
	}
	m.Resources = flattenResources(s.Resources, prior.Resources)
	m.Tolerations = flattenTolerations(s.Scheduling.Tolerations, prior.Tolerations)
	var err error
	if m.Affinity, err = flattenAffinity(u, prior.Affinity); err != nil {
		return nil, err
	}
	setExecutorStatus(m, u)
	return m, nil
}

// flattenOperatorKeys maps spec.operatorKeys to operator_keys. Keys in the provider-owned
// Secret (secretName <executor>-operator-keys with a secretVersion) read back as
// private_keys_wo_version only: the Secret's name and keys are the provider's business, and
// the write-only keys are never read. The write-only attributes are always null in state.
func flattenOperatorKeys(k v1alpha1.OperatorKeys, executor string, prior operatorKeysModel) *operatorKeysModel {
	m := &operatorKeysModel{ECDSAPrivateKeyWO: types.StringNull(), BLSPrivateKeyWO: types.StringNull(), KeysWOVersion: types.Int64Null(),
		BLSKeystoreKey: types.StringNull(), BLSKeystorePasswordKey: types.StringNull()}
	if v, err := strconv.ParseInt(k.SecretVersion, 10, 64); err == nil && k.SecretName == operatorKeysSecretName(executor) {
		m.SecretName, m.ECDSAKey, m.BLSKey, m.RemoteSignerURL = types.StringNull(), types.StringNull(), types.StringNull(), types.StringNull()
		m.KeysWOVersion = types.Int64Value(v)
		return m
	}
	m.SecretName, m.ECDSAKey = optString(k.SecretName, prior.SecretName), optString(k.ECDSAKey, prior.ECDSAKey)
	m.BLSKey, m.RemoteSignerURL = optString(k.BLSKey, prior.BLSKey), optString(k.RemoteSignerURL, prior.RemoteSignerURL)
	m.BLSKeystoreKey = optString(k.BLSKeystoreKey, prior.BLSKeystoreKey)
	m.BLSKeystorePasswordKey = optString(k.BLSKeystorePasswordKey, prior.BLSKeystorePasswordKey)
	m.RemoteSigner = flattenRemoteSigner(k.RemoteSigner, prior.RemoteSigner)
	return m
}

// setExecutorStatus fills the computed attributes from the object.
func setExecutorStatus(m *executorModelV0, u *unstructured.Unstructured) {
	m.ID = types.StringValue(u.GetNamespace() + "/" + u.GetName())
	m.Phase = statusString(u, "phase")
	m.CurrentRevision = statusString(u, "currentRevision")
	m.LastGoodRevision = statusString(u, "lastGoodRevision")
	m.FailedRevision = statusString(u, "failedRevision")
	m.ConfigMapName = statusString(u, "configMapName")
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	m.ReadyReplicas = types.Int64Value(ready)
	elems := map[string]attr.Value{}
	raw, _, _ := unstructured.NestedSlice(u.Object, "status", "performerEndpoints")
	for _, r := range raw {
		if e, ok := r.(map[string]interface{}); ok {
			n, _ := e["name"].(string)
			ep, _ := e["endpoint"].(string)
			elems[n] = types.StringValue(ep)
		}
	}
	m.PerformerEndpoints = types.MapValueMust(types.StringType, elems)
	managed := map[string]attr.Value{}
	raw, _, _ = unstructured.NestedSlice(u.Object, "status", "managedPerformers")
	for _, r := range raw {
		if e, ok := r.(map[string]interface{}); ok {
			n, _ := e["name"].(string)
			ep, _ := e["endpoint"].(string)
			managed[n] = types.StringValue(ep)
		}
	}
	m.ManagedPerformers = types.MapValueMust(types.StringType, managed)
}

// uniqueChainsValidator rejects two chains with the same name or chain ID.
type uniqueChainsValidator struct{}

func (uniqueChainsValidator) Description(context.Context) string {
	return "chain names and chain IDs must be unique"
}
func (v uniqueChainsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (uniqueChainsValidator) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	var chains []chainModel
	if d := req.ConfigValue.ElementsAs(ctx, &chains, false); d.HasError() {
		return
	}
	checkUniqueChains(req.Path, chains, &resp.Diagnostics)
}

// secretKeysValidator requires ecdsa_key, bls_key and/or bls_keystore_key with secret_name (the CRD's CEL rule
// "operatorKeys.secretName needs ecdsaKey, blsKey and/or blsKeystoreKey"), and ecdsa_private_key_wo and/or
// bls_private_key_wo with private_keys_wo_version.
type secretKeysValidator struct{}

func (secretKeysValidator) Description(context.Context) string {
	return "secret_name needs ecdsa_key and/or bls_key"
}
func (v secretKeysValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (secretKeysValidator) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	a := req.ConfigValue.Attributes()
	set := func(k string) (bool, bool) {
		v, ok := a[k]
		if !ok || v.IsNull() {
			return false, true
		}
		return !v.IsUnknown(), !v.IsUnknown()
	}
	secret, k1 := set("secret_name")
	ecdsa, k2 := set("ecdsa_key")
	bls, k3 := set("bls_key")
	keystore, k7 := set("bls_keystore_key")
	if k1 && k2 && k3 && k7 && secret && !ecdsa && !bls && !keystore {
		resp.Diagnostics.AddAttributeError(req.Path.AtName("secret_name"), "secret_name Needs a Key",
			"operator_keys.secret_name names the Secret; also set ecdsa_key, bls_key and/or bls_keystore_key: the keys within it that hold the private keys.")
	}
	version, k4 := set("private_keys_wo_version")
	woECDSA, k5 := set("ecdsa_private_key_wo")
	woBLS, k6 := set("bls_private_key_wo")
	if k4 && k5 && k6 && version && !woECDSA && !woBLS {
		resp.Diagnostics.AddAttributeError(req.Path.AtName("private_keys_wo_version"), "private_keys_wo_version Needs a Key",
			"operator_keys.private_keys_wo_version versions the write-only keys; also set ecdsa_private_key_wo and/or bls_private_key_wo.")
	}
}

// validateHourglassCompat checks, at plan, what the executor image needs from a configuration
// with hourglass_compat (the same rules the Executor CRD enforces), each error on the
// attribute at fault: performer_names and performer_selector are refused (the executor creates
// its own performers and reads no endpoints); then the rules of the config format
// (config_format, default ponos): validateHourglassPonos or validateHourglassExecutorV1alpha1.
// Unknown values are skipped; with config_format unknown, only the rules common to both.
func validateHourglassCompat(root configValue, resp *resource.ValidateConfigResponse) {
	compat := root.Attr("hourglass_compat")
	if compat.Null() || compat.Unknown() {
		return
	}
	bad := func(v configValue, summary, detail string) {
		resp.Diagnostics.AddAttributeError(v.Path(), summary, fmt.Sprintf("%s: %s", v.Path(), detail))
	}
	for _, name := range []string{"performer_names", "performer_selector"} {
		if v := root.Attr(name); v.Set() {
			bad(v, "Not Supported By Hourglass", "hourglass_compat: Hourglass's executor creates its own performers from avs_performers "+
				"and reads no performer endpoints. Remove "+name+".")
		}
	}
	format := compat.Attr("config_format")
	switch f, known := format.String(); {
	case format.Null():
		validateHourglassPonos(root, compat, bad)
	case !known:
	case f == v1alpha1.HourglassConfigFormatExecutorV1alpha1:
		validateHourglassExecutorV1alpha1(root, compat, bad)
	default:
		validateHourglassPonos(root, compat, bad)
	}
}

// validateHourglassPonos checks hourglass_compat with Hourglass's current format (ponos):
// operator_address (Hourglass's operator.address is required); operator_keys.ecdsa_key,
// ecdsa_private_key_wo or remote_signer (operator.operatorPrivateKey is required); no
// operator_keys.bls_key, bls_private_key_wo or remote_signer_url (Hourglass reads a BLS
// keystore and a local ECDSA key; its remote signer needs a public key beside the URL);
// hourglass_compat.l1_chain naming one of chains; avs_performers images as repository:tag
// without a digest (Hourglass's image.repository and image.tag).
func validateHourglassPonos(root, compat configValue, bad func(configValue, string, string)) {
	if v := root.Attr("operator_address"); v.Null() {
		bad(v, "Missing Operator Address", "hourglass_compat needs the operator's address: Hourglass's executor requires operator.address.")
	}
	keys := root.Attr("operator_keys")
	if ecdsa, wo, rs := keys.Attr("ecdsa_key"), keys.Attr("ecdsa_private_key_wo"), keys.Attr("remote_signer"); ecdsa.Null() && wo.Null() && rs.Null() && !keys.Unknown() {
		bad(ecdsa, "Missing ECDSA Key", "hourglass_compat needs the operator's ECDSA key (ecdsa_key, or ecdsa_private_key_wo, or a remote_signer): "+
			"Hourglass's executor requires operator.operatorPrivateKey.")
	}
	for _, name := range []string{"bls_key", "bls_private_key_wo"} {
		if v := keys.Attr(name); v.Set() {
			bad(v, "Not Supported By Hourglass", "hourglass_compat: Hourglass's executor reads a BLS keystore (bls_keystore_key); "+
				"it has no raw BLS key. Remove "+name+".")
		}
	}
	if v := keys.Attr("remote_signer_url"); v.Set() {
		bad(v, "Not Supported By Hourglass", "hourglass_compat: Hourglass's remote signer needs the key's public key and address beside the URL: "+
			"use operator_keys.remote_signer = { url, public_key } instead of remote_signer_url.")
	}
	if l1, ok := compat.Attr("l1_chain").String(); ok {
		validateL1Chain(root, compat.Attr("l1_chain"), l1, bad)
	}
	avs, _ := root.Attr("avs_performers").List()
	for _, a := range avs {
		img, ok := a.Attr("image").String()
		if !ok {
			continue
		}
		if _, _, tagged := executor.SplitImage(img); !tagged || strings.Contains(img, "@") {
			bad(a.Attr("image"), "Image Needs A Tag", fmt.Sprintf("hourglass_compat: %q must be repository:tag without a digest, "+
				"e.g. \"ghcr.io/acme/performer:1.2.0\": Hourglass's executor config takes image.repository and image.tag.", img))
		}
	}
}

// validateHourglassExecutorV1alpha1 checks hourglass_compat with config_format =
// "hourglass-executor-v1alpha1" (the removed HourglassExecutor operator's config), each error
// on the attribute at fault: what that config has no place for is refused (avs_performers,
// hourglass_compat.l1_chain, management_port), as are the keys that cannot reach that
// executor as ECDSA_PRIVATE_KEY or BLS_PRIVATE_KEY (operator_keys.bls_keystore_key,
// bls_keystore_password_key, remote_signer, remote_signer_url), and a grpc_port other than
// 9090 (that operator's fixed port; its config names none, so the image listens there).
func validateHourglassExecutorV1alpha1(root, compat configValue, bad func(configValue, string, string)) {
	const pre = "hourglass_compat.config_format = \"" + v1alpha1.HourglassConfigFormatExecutorV1alpha1 + "\": "
	notInConfig := func(v configValue, what string) {
		if v.Set() {
			bad(v, "Not In The HourglassExecutor Config", pre+"the HourglassExecutor operator's config has no "+what+
				", so its executor would never see it. Remove it, or use config_format = \""+v1alpha1.HourglassConfigFormatPonos+"\" (Hourglass's current executor).")
		}
	}
	if avs, _ := root.Attr("avs_performers").List(); len(avs) > 0 {
		notInConfig(root.Attr("avs_performers"), "AVS performers")
	}
	notInConfig(compat.Attr("l1_chain"), "l1Chain (it lists every chain in chains)")
	notInConfig(root.Attr("management_port"), "management server port")
	keys := root.Attr("operator_keys")
	for _, name := range []string{"bls_keystore_key", "bls_keystore_password_key", "remote_signer", "remote_signer_url"} {
		if v := keys.Attr(name); v.Set() {
			bad(v, "Not Supported By The HourglassExecutor Config", pre+"the keys reach that executor only as the environment variables "+
				v1alpha1.ExecutorECDSAKeyEnv+" and "+v1alpha1.ExecutorBLSKeyEnv+" (operator_keys.ecdsa_key and bls_key, or the write-only keys). Remove "+name+".")
		}
	}
	if port, ok := root.Attr("grpc_port").Int64(); ok && port != int64(v1alpha1.HourglassExecutorV1alpha1GRPCPort) {
		bad(root.Attr("grpc_port"), "Fixed gRPC Port", fmt.Sprintf(pre+"grpc_port = %d, but that executor listens on %d: the HourglassExecutor "+
			"operator's config names no port. Remove grpc_port (default %[2]d).", port, v1alpha1.HourglassExecutorV1alpha1GRPCPort))
	}
}

// validateL1Chain reports hourglass_compat.l1_chain naming no chain of chains (when chains are known).
func validateL1Chain(root, at configValue, l1 string, bad func(configValue, string, string)) {
	chains, ok := root.Attr("chains").List()
	if !ok {
		return
	}
	var names []string
	for _, c := range chains {
		n, known := c.Attr("name").String()
		if !known {
			return
		}
		if n == l1 {
			return
		}
		names = append(names, n)
	}
	bad(at, "Unknown Chain", fmt.Sprintf("l1_chain = %q is not one of chains (%s).", l1, strings.Join(names, ", ")))
}
