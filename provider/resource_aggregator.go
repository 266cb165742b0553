package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
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
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/gantry-dev/terraform-provider-gantry/internal/aggregator"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var (
	_ resource.Resource                   = (*aggregatorResource)(nil)
	_ resource.ResourceWithConfigure      = (*aggregatorResource)(nil)
	_ resource.ResourceWithIdentity       = (*aggregatorResource)(nil)
	_ resource.ResourceWithImportState    = (*aggregatorResource)(nil)
	_ resource.ResourceWithModifyPlan     = (*aggregatorResource)(nil)
	_ resource.ResourceWithValidateConfig = (*aggregatorResource)(nil)
)

// Default timeouts of gantry_aggregator.
const (
	aggregatorCreateTimeout = 10 * time.Minute
	aggregatorUpdateTimeout = 10 * time.Minute
	aggregatorDeleteTimeout = 5 * time.Minute
)

// aggregatorChainIDs are the chain IDs Hourglass's aggregator supports (ponos
// config.SupportedChainIds; the CRD's enum of chains[].chainId).
var aggregatorChainIDs = []int64{1, 17000, 560048, 11155111, 8453, 84532, 31337, 31338}

// aggregatorWOKeys are gantry_aggregator's write-only key attributes of operator_keys, each
// with the key of the provider-owned Secret it is written to.
var aggregatorWOKeys = map[string]string{"ecdsa_private_key_wo": woECDSAKey}

// aggregatorKeysSecretName is the name of the Secret holding an aggregator's write-only keys:
// <name>-aggregator-keys. An executor's always ends in -operator-keys, so no executor's name
// gives this one (aggregator-<name>-operator-keys would be the executor aggregator-<name>'s).
func aggregatorKeysSecretName(agg string) string { return agg + "-aggregator-keys" }

// NewAggregatorResource returns the gantry_aggregator resource.
func NewAggregatorResource() resource.Resource {
	return &aggregatorResource{kindResource[aggregatorModelV0]{ops: aggregatorOps}}
}

// NewAggregatorListResource returns the gantry_aggregator list resource (terraform query, Terraform >= 1.14).
func NewAggregatorListResource() list.ListResource {
	return &aggregatorResource{kindResource[aggregatorModelV0]{ops: aggregatorOps}}
}

type aggregatorResource struct {
	kindResource[aggregatorModelV0]
}

// aggregatorModelV0 is gantry_aggregator's Terraform model.
type aggregatorModelV0 struct {
	ID                 types.String            `tfsdk:"id"`
	Name               types.String            `tfsdk:"name"`
	Namespace          types.String            `tfsdk:"namespace"`
	Labels             map[string]string       `tfsdk:"labels"`
	Annotations        map[string]string       `tfsdk:"annotations"`
	Image              types.String            `tfsdk:"image"`
	ImagePullPolicy    types.String            `tfsdk:"image_pull_policy"`
	ImagePullSecrets   []string                `tfsdk:"image_pull_secrets"`
	OperatorAddress    types.String            `tfsdk:"operator_address"`
	OperatorKeys       *aggregatorKeysModel    `tfsdk:"operator_keys"`
	L1ChainID          types.Int64             `tfsdk:"l1_chain_id"`
	Chains             []aggregatorChainModel  `tfsdk:"chains"`
	AVSs               []aggregatorAVSModel    `tfsdk:"avss"`
	ManagementPort     types.Int64             `tfsdk:"management_port"`
	Debug              types.Bool              `tfsdk:"debug"`
	Resources          *resourcesModel         `tfsdk:"resources"`
	Persistence        *aggregatorPersistModel `tfsdk:"persistence"`
	Phase              types.String            `tfsdk:"phase"`
	ReadyReplicas      types.Int64             `tfsdk:"ready_replicas"`
	Revision           types.String            `tfsdk:"revision"`
	ConfigSecretName   types.String            `tfsdk:"config_secret_name"`
	ManagementEndpoint types.String            `tfsdk:"management_endpoint"`
	Timeouts           timeouts.Value          `tfsdk:"timeouts"`
}

// aggregatorKeysModel is gantry_aggregator's operator_keys: what Hourglass's aggregator reads
// (an ECDSA key, a BLS keystore, a remote signer), by reference or write-only.
type aggregatorKeysModel struct {
	SecretName             types.String       `tfsdk:"secret_name"`
	ECDSAKey               types.String       `tfsdk:"ecdsa_key"`
	BLSKeystoreKey         types.String       `tfsdk:"bls_keystore_key"`
	BLSKeystorePasswordKey types.String       `tfsdk:"bls_keystore_password_key"`
	RemoteSigner           *remoteSignerModel `tfsdk:"remote_signer"`
	ECDSAPrivateKeyWO      types.String       `tfsdk:"ecdsa_private_key_wo"`
	KeysWOVersion          types.Int64        `tfsdk:"private_keys_wo_version"`

	// woGiven are the Secret keys of the write-only keys the configuration gives (prepare); never in state.
	woGiven []string
}

type aggregatorChainModel struct {
	Name                types.String `tfsdk:"name"`
	ChainID             types.Int64  `tfsdk:"chain_id"`
	RPCURL              types.String `tfsdk:"rpc_url"`
	PollIntervalSeconds types.Int64  `tfsdk:"poll_interval_seconds"`
}

type aggregatorAVSModel struct {
	Address  types.String  `tfsdk:"address"`
	ChainIDs []types.Int64 `tfsdk:"chain_ids"`
}

type aggregatorPersistModel struct {
	Size             types.String `tfsdk:"size"`
	StorageClassName types.String `tfsdk:"storage_class_name"`
}

func (r *aggregatorResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_aggregator"
}

func (r *aggregatorResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "A Gantry **aggregator**: a Hourglass aggregator run as Hourglass's Helm chart runs it.\n\n" +
			"The reconciler owns a StatefulSet of one pod (`aggregator run --config /etc/secrets/hourglass/config.yaml`), a headless " +
			"Service `aggregator-<name>` on the management gRPC port and the Secret `aggregator-<name>-config` holding `config.yaml` in " +
			"Hourglass's own aggregator format (operator, `l1ChainId`, `chains`, `avss`, `storage`), rendered from these attributes. " +
			"Operator keys are only ever **references** to a Secret in the aggregator's namespace (or a remote signer), or a write-only " +
			"attribute the provider writes into a Secret it owns: the config holds empty placeholders that the aggregator's config loader " +
			"fills from environment variables `valueFrom.secretKeyRef`, and no key material is ever stored in the config, the plan or the state. " +
			"The apply waits until the pod runs, or fails with the scheduler's or kubelet's own words.",
		Attributes: map[string]schema.Attribute{
			"id": schema.StringAttribute{Computed: true, MarkdownDescription: "`<namespace>/<name>`, also the import ID.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.UseStateForUnknown()}},
			"name": schema.StringAttribute{Required: true,
				MarkdownDescription: "Name of the Aggregator: a DNS-1035 label of at most 40 characters (its StatefulSet and Service are " +
					"`aggregator-<name>`, its config Secret `aggregator-<name>-config`). Changing it replaces the aggregator.",
				PlanModifiers: []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators: []validator.String{stringvalidator.LengthBetween(1, 40),
					stringvalidator.RegexMatches(dns1035Label, "must be a DNS-1035 label: lower-case letters, digits and '-', starting with a letter and ending with a letter or digit")}},
			"namespace": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString("default"),
				MarkdownDescription: "Namespace of the Aggregator and its key Secret. Defaults to `default`. Changing it replaces the aggregator.",
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
				Validators:          []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dns1123Label, "must be a DNS-1123 label")}},
			"labels":      schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels of the Aggregator object."},
			"annotations": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Annotations of the Aggregator object."},
			"image": schema.StringAttribute{Required: true,
				MarkdownDescription: "Hourglass image holding the `aggregator` binary, e.g. `public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2` " +
					"(the chart's `hourglass.image`). A change rolls the pod (phase `Updating`).",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 512)}},
			"image_pull_policy": schema.StringAttribute{Optional: true, Computed: true, Default: stringdefault.StaticString(string(corev1.PullIfNotPresent)),
				MarkdownDescription: "Pull policy of the aggregator image: `Always`, `Never` or `IfNotPresent` (default).",
				Validators:          []validator.String{stringvalidator.OneOf(string(corev1.PullAlways), string(corev1.PullNever), string(corev1.PullIfNotPresent))}},
			"image_pull_secrets": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Names of Secrets used to pull the image (at most 16).",
				Validators: []validator.List{listvalidator.SizeAtMost(16), uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.LengthAtLeast(1))}},
			"operator_address": schema.StringAttribute{Required: true,
				MarkdownDescription: "Address of the operator running the aggregator (Hourglass `operator.address`): `0x` followed by 40 hex digits.",
				Validators:          []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits")}},
			"operator_keys": aggregatorKeysAttribute(),
			"l1_chain_id":   schema.Int64Attribute{Required: true, MarkdownDescription: "Chain ID of the L1 (Hourglass `l1ChainId`): the `chain_id` of one of `chains`."},
			"chains":        aggregatorChainsAttribute(),
			"avss":          aggregatorAVSsAttribute(),
			"management_port": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultAggregatorManagementPort)),
				MarkdownDescription: "Port of the aggregator's management gRPC server (Hourglass `managementServerGrpcPort`), 1-65535; default 9000, " +
					"the chart's `management-grpc` port. The container and Service port `management-grpc`.",
				Validators: []validator.Int64{int64validator.Between(1, 65535)}},
			"debug": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
				MarkdownDescription: "Turns on the aggregator's debug logging (Hourglass `debug`). Default `false`."},
			"resources": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "CPU and memory requests and limits of the aggregator container (the chart's `aggregator.resources`).\n\n" +
					"Hourglass's chart asks for `cpu = \"200m\"`, `memory = \"128Mi\"` and limits them to `800m` and `1048Mi`; unset here: none.",
				Attributes: map[string]schema.Attribute{
					"requests": quantityMapAttribute("Resource requests of the aggregator container, resource name → quantity, e.g. `{ cpu = \"200m\", memory = \"128Mi\" }`.", true),
					"limits":   quantityMapAttribute("Resource limits of the aggregator container, resource name → quantity, e.g. `{ memory = \"1048Mi\" }`.", true),
				}},
			"persistence": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "A volume for the aggregator's task store: the StatefulSet's volume claim template `data`, mounted at `" +
					v1alpha1.AggregatorDataPath + "`.\n\nWith it the config's storage is Hourglass's BadgerDB in `" + v1alpha1.AggregatorBadgerDir +
					"` (`storage.type = badger`), so tasks survive a restart; without it `storage.type = memory`, as in Hourglass's sample configs. " +
					"The claim is deleted with the aggregator. A StatefulSet's claim templates cannot change, so changing this replaces the aggregator.",
				PlanModifiers: []planmodifier.Object{objectplanmodifier.RequiresReplace()},
				Attributes: map[string]schema.Attribute{
					"size": schema.StringAttribute{Required: true, MarkdownDescription: "Size of the claim, a Kubernetes quantity above 0, e.g. `10Gi`.",
						Validators: []validator.String{quantityValidator{}, checkString{"a quantity above 0", positiveQuantityProblem, "Invalid Size"}}},
					"storage_class_name": schema.StringAttribute{Optional: true, MarkdownDescription: "StorageClass of the claim; unset: the cluster's default StorageClass.",
						Validators: []validator.String{stringvalidator.LengthAtMost(253), stringvalidator.RegexMatches(dns1123Name, "must be a StorageClass name (DNS-1123 subdomain)")}},
				}},
			"phase":          schema.StringAttribute{Computed: true, MarkdownDescription: "`status.phase`: `Pending`, `Creating`, `Running`, `Updating`, `Failed` or `Terminating`."},
			"ready_replicas": schema.Int64Attribute{Computed: true, MarkdownDescription: "Ready aggregator pods: 0 or 1."},
			"revision":       schema.StringAttribute{Computed: true, MarkdownDescription: "Revision (pod template hash, 16 hex digits) the StatefulSet runs."},
			"config_secret_name": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Secret holding the rendered `config.yaml` (`aggregator-<name>-config`); it holds no key material."},
			"management_endpoint": schema.StringAttribute{Computed: true,
				MarkdownDescription: "Management gRPC endpoint through the headless Service: `aggregator-<name>.<namespace>.svc.cluster.local:<management_port>`."},
			"timeouts": timeouts.Attributes(ctx, timeouts.Opts{Create: true, Update: true, Delete: true, DeleteDescription: timeoutsDeleteDescription}),
		},
	}
	resp.Schema.Attributes = withInputValidators(resp.Schema.Attributes)
}

// aggregatorKeysAttribute is gantry_aggregator's operator_keys.
func aggregatorKeysAttribute() schema.SingleNestedAttribute {
	sibling := func(name string) path.Expression { return path.MatchRelative().AtParent().AtName(name) }
	key := func(desc string, more ...validator.String) schema.StringAttribute {
		return schema.StringAttribute{Optional: true, MarkdownDescription: desc,
			Validators: append([]validator.String{stringvalidator.RegexMatches(secretKey, "must be a Secret key: letters, digits, '-', '_' or '.'")}, more...)}
	}
	return schema.SingleNestedAttribute{Required: true,
		MarkdownDescription: "Where the operator's keys come from: a Secret, a remote signer or a write-only key.\n\n" +
			"Hourglass's aggregator needs the operator's ECDSA key (`operator.operatorPrivateKey`, which signs its transactions): `ecdsa_key` " +
			"in the Secret `secret_name`, the write-only `ecdsa_private_key_wo` (Terraform 1.11 and later), or `remote_signer`. Its signing key is " +
			"a BLS keystore (`bls_keystore_key`) or else the same ECDSA key. Each reaches the pod only as an environment variable `valueFrom.secretKeyRef` " +
			"that fills an empty placeholder of the config (`" + executor.HourglassOperatorKeyEnv + "` and its siblings, read by Hourglass's config loader).",
		Attributes: map[string]schema.Attribute{
			"secret_name": schema.StringAttribute{Optional: true, MarkdownDescription: "Name of the Secret in the aggregator's namespace holding the keys.",
				Validators: []validator.String{stringvalidator.LengthAtMost(253), stringvalidator.RegexMatches(dns1123Name, "must be a Secret name (DNS-1123 subdomain)"),
					stringvalidator.ConflictsWith(sibling("private_keys_wo_version"))}},
			"ecdsa_key": key("Key in the Secret holding the operator's ECDSA private key (Hourglass `operator.operatorPrivateKey`, and `signingKeys.ecdsa` without a BLS keystore).",
				stringvalidator.AlsoRequires(sibling("secret_name"))),
			"bls_keystore_key": key("Key in the Secret holding a BLS keystore (EIP-2335 JSON), Hourglass's `signingKeys.bls.keystore`.",
				stringvalidator.AlsoRequires(sibling("secret_name"))),
			"bls_keystore_password_key": key("Key in the Secret holding the BLS keystore's password (Hourglass `signingKeys.bls.password`). Needs `bls_keystore_key`.",
				stringvalidator.AlsoRequires(sibling("bls_keystore_key"))),
			"remote_signer": remoteSignerAttribute("aggregator", "A remote signer (web3signer) for the operator's ECDSA key, instead of `ecdsa_key`.\n\n"+
				"Rendered as Hourglass's own `remoteSignerConfig` of `operator.operatorPrivateKey` and, without a BLS keystore, of "+
				"`operator.signingKeys.ecdsa`, with the remote-signer flag set: the aggregator then holds no ECDSA key. Only public values are in "+
				"Terraform; the TLS certificates and the client key come from Secrets as `valueFrom.secretKeyRef`."),
			"ecdsa_private_key_wo": schema.StringAttribute{Optional: true, WriteOnly: true, Sensitive: true,
				MarkdownDescription: "Terraform 1.11 and later: the ECDSA private key itself. The provider writes it into a Secret it owns, " +
					"`<name>-aggregator-keys` (key `ecdsa-private-key`), owned by the Aggregator; it is never stored in the plan, the " +
					"state or the logs. Needs `private_keys_wo_version`.",
				Validators: []validator.String{stringvalidator.LengthAtLeast(1), stringvalidator.AlsoRequires(sibling("private_keys_wo_version"))}},
			"private_keys_wo_version": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Version of the write-only key, at least 1.\n\nTerraform cannot see a change of a write-only value: increase " +
					"this number to rotate the key. The Secret is rewritten and the aggregator's pod rolls onto it. Needs `ecdsa_private_key_wo`.",
				Validators: []validator.Int64{int64validator.AtLeast(1), int64validator.AlsoRequires(sibling("ecdsa_private_key_wo"))}},
		},
	}
}

func aggregatorChainsAttribute() schema.ListNestedAttribute {
	ids := make([]string, len(aggregatorChainIDs))
	for i, id := range aggregatorChainIDs {
		ids[i] = strconv.FormatInt(id, 10)
	}
	return schema.ListNestedAttribute{Required: true,
		MarkdownDescription: "Chains the aggregator watches (Hourglass `chains`): 1-32, names and chain IDs unique.",
		Validators:          []validator.List{listvalidator.SizeBetween(1, 32), uniqueAggregatorChains{}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Chain name, e.g. `ethereum`, `base`: lower-case letters, digits and '-'.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(dns1123Label, "must be lower-case letters, digits and '-', starting and ending with a letter or digit")}},
			"chain_id": schema.Int64Attribute{Required: true,
				MarkdownDescription: "EIP-155 chain ID, one Hourglass supports: " + strings.Join(ids, ", ") +
					" (Ethereum, Holesky, Hoodi, Sepolia, Base, Base Sepolia, and the Anvil L1 and L2).",
				Validators: []validator.Int64{int64validator.OneOf(aggregatorChainIDs...)}},
			"rpc_url": schema.StringAttribute{Required: true, MarkdownDescription: "JSON-RPC endpoint: an `http(s)://` or `ws(s)://` URL.",
				Validators: []validator.String{stringvalidator.LengthAtMost(2048), stringvalidator.RegexMatches(rpcURL, "must be an http://, https://, ws:// or wss:// URL"), endpointPort{}}},
			"poll_interval_seconds": schema.Int64Attribute{Optional: true, Computed: true, Default: int64default.StaticInt64(int64(v1alpha1.DefaultAggregatorPollIntervalSeconds)),
				MarkdownDescription: "Seconds between polls of the chain for new blocks (Hourglass `pollIntervalSeconds`), 1-3600; default 2.",
				Validators:          []validator.Int64{int64validator.Between(1, 3600)}},
		}},
	}
}

func aggregatorAVSsAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true,
		MarkdownDescription: "AVSs the aggregator collects and distributes tasks for (Hourglass `avss`), one per address, at most 64.",
		Validators:          []validator.List{listvalidator.SizeAtMost(64), uniqueNames{what: "AVS Address", key: "address", fold: true}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"address": schema.StringAttribute{Required: true, MarkdownDescription: "AVS address: `0x` followed by 40 hex digits.",
				Validators: []validator.String{stringvalidator.RegexMatches(ethAddress, "must be an Ethereum address: 0x followed by 40 hexadecimal digits")}},
			"chain_ids": schema.ListAttribute{Required: true, ElementType: types.Int64Type,
				MarkdownDescription: "Chain IDs (of `chains`) on which the aggregator watches this AVS's tasks, 1-32, unique.",
				Validators:          []validator.List{listvalidator.SizeBetween(1, 32), listvalidator.UniqueValues()}},
		}},
	}
}

// positiveQuantityProblem says why s is not a quantity above 0 (nil when it is, or is not a
// quantity at all: quantityValidator says that).
func positiveQuantityProblem(s string) error {
	if q, err := apiresource.ParseQuantity(s); err == nil && q.Sign() <= 0 {
		return fmt.Errorf("%q is not above 0: the claim needs a size", s)
	}
	return nil
}

// ValidateConfig checks what one attribute's validators cannot see, with the values that are
// known, as Hourglass's aggregator checks its config at start: l1_chain_id must be one of
// chains' chain_id, each avss[].chain_ids entry too; operator_keys must give the ECDSA key
// (ecdsa_key, ecdsa_private_key_wo or remote_signer); a remote_signer stands for the ECDSA
// key and its TLS Secrets need an https:// url; no Secret key is used twice.
func (r *aggregatorResource) ValidateConfig(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	validateOperatorKeys(root, &resp.Diagnostics)
	keys := root.Attr("operator_keys")
	checkRemoteSigner(keys, []string{"ecdsa_key", "ecdsa_private_key_wo"}, &resp.Diagnostics)
	if ecdsa, wo, rs := keys.Attr("ecdsa_key"), keys.Attr("ecdsa_private_key_wo"), keys.Attr("remote_signer"); !keys.Unknown() && !keys.Null() &&
		ecdsa.Null() && wo.Null() && rs.Null() {
		resp.Diagnostics.AddAttributeError(ecdsa.Path(), "Missing ECDSA Key",
			"operator_keys needs the operator's ECDSA key (ecdsa_key, ecdsa_private_key_wo or remote_signer): Hourglass's aggregator requires "+
				"operator.operatorPrivateKey to sign its transactions.")
	}
	validateAggregatorChainRefs(root, &resp.Diagnostics)
}

// validateAggregatorChainRefs reports l1_chain_id and avss[].chain_ids entries that are not
// the chain_id of one of chains (when chains' IDs are all known and supported: an unsupported
// one is its own attribute's error), each on the attribute at fault.
func validateAggregatorChainRefs(root configValue, diags *diag.Diagnostics) {
	chains, ok := root.Attr("chains").List()
	if !ok {
		return
	}
	var ids []int64
	for _, c := range chains {
		id, known := c.Attr("chain_id").Int64()
		if !known || !slices.Contains(aggregatorChainIDs, id) {
			return
		}
		ids = append(ids, id)
	}
	list := fmt.Sprint(ids)
	if l1, known := root.Attr("l1_chain_id").Int64(); known && !slices.Contains(ids, l1) {
		diags.AddAttributeError(root.Attr("l1_chain_id").Path(), "Unknown L1 Chain",
			fmt.Sprintf("l1_chain_id = %d is not the chain_id of one of chains %s: Hourglass's aggregator requires l1ChainId to be one of the configured chains.", l1, list))
	}
	avss, _ := root.Attr("avss").List()
	for _, a := range avss {
		refs, _ := a.Attr("chain_ids").List()
		for _, ref := range refs {
			if id, known := ref.Int64(); known && !slices.Contains(ids, id) {
				diags.AddAttributeError(ref.Path(), "Unknown Chain",
					fmt.Sprintf("%s = %d is not the chain_id of one of chains %s: the aggregator watches only those.", ref.Path(), id, list))
			}
		}
	}
}

// uniqueAggregatorChains rejects two chains with the same name or chain ID.
type uniqueAggregatorChains struct{}

func (uniqueAggregatorChains) Description(context.Context) string {
	return "chain names and chain IDs must be unique"
}
func (v uniqueAggregatorChains) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (uniqueAggregatorChains) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	var chains []aggregatorChainModel
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || req.ConfigValue.ElementsAs(ctx, &chains, false).HasError() {
		return
	}
	asExecutor := make([]chainModel, len(chains))
	for i, c := range chains {
		asExecutor[i] = chainModel{Name: c.Name, ChainID: c.ChainID}
	}
	checkUniqueChains(req.Path, asExecutor, &resp.Diagnostics)
}

// aggregatorOps is gantry_aggregator's descriptor for the generic Create/Update/Delete path:
// the wait is wait.Aggregator (Running, or Failed with the pod's own words); write-only keys
// go to the provider-owned Secret first (prepare) and it is then owned by the Aggregator
// (applied).
var aggregatorOps = &kindOps[aggregatorModelV0]{
	spec:          wait.Aggregator,
	logField:      "aggregator",
	summaryAttr:   "phase",
	statusAttrs:   []string{"phase", "ready_replicas", "revision", "config_secret_name", "management_endpoint"},
	createTimeout: aggregatorCreateTimeout,
	updateTimeout: aggregatorUpdateTimeout,
	deleteTimeout: aggregatorDeleteTimeout,
	timeouts:      func(m *aggregatorModelV0) timeouts.Value { return m.Timeouts },
	key:           func(m *aggregatorModelV0) (string, string) { return m.Namespace.ValueString(), m.Name.ValueString() },
	expand:        expandAggregator,
	flatten:       flattenAggregator,
	setStatus:     setAggregatorStatus,
	prepare: func(ctx context.Context, data *providerData, config tfsdk.Config, plan, _ *aggregatorModelV0) diag.Diagnostics {
		k := plan.OperatorKeys
		if k == nil || k.KeysWOVersion.IsNull() {
			return nil
		}
		given, diags := writeWOKeys(ctx, data, config, plan.Namespace.ValueString(), aggregatorKeysSecretName(plan.Name.ValueString()), k.KeysWOVersion, aggregatorWOKeys)
		k.woGiven = given
		return diags
	},
	applied: func(ctx context.Context, c *kube.Clients, plan *aggregatorModelV0, live *unstructured.Unstructured) diag.Diagnostics {
		used := plan.OperatorKeys != nil && !plan.OperatorKeys.KeysWOVersion.IsNull()
		return ownWOKeys(ctx, c, plan.Namespace.ValueString(), aggregatorKeysSecretName(plan.Name.ValueString()), used, live)
	},
}

// expandAggregator maps the model to the Aggregator to server-side apply. Only references to
// key Secrets are sent.
func expandAggregator(m *aggregatorModelV0) (*unstructured.Unstructured, error) {
	spec := v1alpha1.AggregatorSpec{
		Image:           m.Image.ValueString(),
		ImagePullPolicy: corev1.PullPolicy(m.ImagePullPolicy.ValueString()),
		OperatorAddress: m.OperatorAddress.ValueString(),
		L1ChainID:       m.L1ChainID.ValueInt64(),
		ManagementPort:  int32(m.ManagementPort.ValueInt64()),
		Debug:           m.Debug.ValueBool(),
		OperatorKeys:    expandAggregatorKeys(m.OperatorKeys, m.Name.ValueString()),
	}
	for _, s := range m.ImagePullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	for _, c := range m.Chains {
		spec.Chains = append(spec.Chains, v1alpha1.AggregatorChain{Name: c.Name.ValueString(), ChainID: c.ChainID.ValueInt64(),
			RPCURL: c.RPCURL.ValueString(), PollIntervalSeconds: int32(c.PollIntervalSeconds.ValueInt64())})
	}
	for _, a := range m.AVSs {
		avs := v1alpha1.AggregatorAVS{Address: a.Address.ValueString(), ChainIDs: []int64{}}
		for _, id := range a.ChainIDs {
			avs.ChainIDs = append(avs.ChainIDs, id.ValueInt64())
		}
		spec.AVSs = append(spec.AVSs, avs)
	}
	if p := m.Persistence; p != nil {
		q, err := apiresource.ParseQuantity(p.Size.ValueString())
		if err != nil {
			return nil, fmt.Errorf("persistence.size = %q: %w", p.Size.ValueString(), err)
		}
		spec.Persistence = &v1alpha1.AggregatorPersistence{Size: q, StorageClassName: p.StorageClassName.ValueString()}
	}
	var err error
	if spec.Resources, err = expandResources(m.Resources); err != nil {
		return nil, err
	}
	specMap, err := toSpecMap(&spec)
	if err != nil {
		return nil, err
	}
	keepRequired(specMap, reflect.ValueOf(&spec))
	return newObject("Aggregator", m.Name.ValueString(), m.Namespace.ValueString(), m.Labels, m.Annotations, specMap), nil
}

// expandAggregatorKeys maps operator_keys to spec.operatorKeys: the references as given, or
// with private_keys_wo_version the provider-owned Secret <name>-aggregator-keys and
// its version.
func expandAggregatorKeys(k *aggregatorKeysModel, name string) v1alpha1.OperatorKeys {
	if k == nil {
		return v1alpha1.OperatorKeys{}
	}
	if !k.KeysWOVersion.IsNull() {
		out := v1alpha1.OperatorKeys{SecretName: aggregatorKeysSecretName(name), SecretVersion: strconv.FormatInt(k.KeysWOVersion.ValueInt64(), 10)}
		if slices.Contains(k.woGiven, woECDSAKey) {
			out.ECDSAKey = woECDSAKey
		}
		return out
	}
	return v1alpha1.OperatorKeys{SecretName: k.SecretName.ValueString(), ECDSAKey: k.ECDSAKey.ValueString(),
		BLSKeystoreKey: k.BLSKeystoreKey.ValueString(), BLSKeystorePasswordKey: k.BLSKeystorePasswordKey.ValueString(),
		RemoteSigner: expandRemoteSigner(k.RemoteSigner)}
}

// flattenAggregator maps an Aggregator read from the cluster to the model; prior decides null
// versus empty only (and keeps persistence.size as written when the API server's canonical
// form is the same quantity), so a refresh of an unchanged object equals prior.
func flattenAggregator(u *unstructured.Unstructured, prior *aggregatorModelV0) (*aggregatorModelV0, error) {
	if prior == nil {
		prior = &aggregatorModelV0{}
	}
	var x v1alpha1.Aggregator
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &x); err != nil {
		return nil, err
	}
	s := x.Spec
	m := &aggregatorModelV0{
		Name: types.StringValue(x.Name), Namespace: types.StringValue(x.Namespace),
		Labels: readMeta(x.Labels, prior.Labels), Annotations: readMeta(x.Annotations, prior.Annotations),
		Image: types.StringValue(s.Image), ImagePullPolicy: types.StringValue(string(s.ImagePullPolicy)),
		OperatorAddress: types.StringValue(s.OperatorAddress), L1ChainID: types.Int64Value(s.L1ChainID),
		ManagementPort: types.Int64Value(int64(aggregator.ManagementPort(&x))), Debug: types.BoolValue(s.Debug),
		Resources: flattenResources(s.Resources, prior.Resources), Timeouts: prior.Timeouts,
	}
	if s.ImagePullPolicy == "" {
		m.ImagePullPolicy = types.StringValue(string(corev1.PullIfNotPresent))
	}
	var pullSecrets []string
	for _, ref := range s.ImagePullSecrets {
		pullSecrets = append(pullSecrets, ref.Name)
	}
	m.ImagePullSecrets = optList(pullSecrets, prior.ImagePullSecrets)
	for _, c := range s.Chains {
		poll := int64(c.PollIntervalSeconds)
		if poll == 0 {
			poll = int64(v1alpha1.DefaultAggregatorPollIntervalSeconds)
		}
		m.Chains = append(m.Chains, aggregatorChainModel{Name: types.StringValue(c.Name), ChainID: types.Int64Value(c.ChainID),
			RPCURL: types.StringValue(c.RPCURL), PollIntervalSeconds: types.Int64Value(poll)})
	}
	for _, a := range s.AVSs {
		avs := aggregatorAVSModel{Address: types.StringValue(a.Address), ChainIDs: []types.Int64{}}
		for _, id := range a.ChainIDs {
			avs.ChainIDs = append(avs.ChainIDs, types.Int64Value(id))
		}
		m.AVSs = append(m.AVSs, avs)
	}
	if len(s.AVSs) == 0 && prior.AVSs != nil && len(prior.AVSs) == 0 {
		m.AVSs = []aggregatorAVSModel{}
	}
	if p := s.Persistence; p != nil {
		var pp aggregatorPersistModel
		if prior.Persistence != nil {
			pp = *prior.Persistence
		}
		size := flattenQuantities(corev1.ResourceList{corev1.ResourceStorage: p.Size}, map[string]string{string(corev1.ResourceStorage): pp.Size.ValueString()})
		m.Persistence = &aggregatorPersistModel{Size: types.StringValue(size[string(corev1.ResourceStorage)]),
			StorageClassName: optString(p.StorageClassName, pp.StorageClassName)}
	}
	var pk aggregatorKeysModel
	if prior.OperatorKeys != nil {
		pk = *prior.OperatorKeys
	}
	m.OperatorKeys = flattenAggregatorKeys(s.OperatorKeys, x.Name, pk)
	setAggregatorStatus(m, u)
	return m, nil
}

// flattenAggregatorKeys maps spec.operatorKeys to operator_keys. Keys in the provider-owned
// Secret (<name>-aggregator-keys with a secretVersion) read back as
// private_keys_wo_version only; the write-only attribute is always null in state.
func flattenAggregatorKeys(k v1alpha1.OperatorKeys, name string, prior aggregatorKeysModel) *aggregatorKeysModel {
	m := &aggregatorKeysModel{ECDSAPrivateKeyWO: types.StringNull(), KeysWOVersion: types.Int64Null(),
		SecretName: types.StringNull(), ECDSAKey: types.StringNull(), BLSKeystoreKey: types.StringNull(), BLSKeystorePasswordKey: types.StringNull()}
	if v, err := strconv.ParseInt(k.SecretVersion, 10, 64); err == nil && k.SecretName == aggregatorKeysSecretName(name) {
		m.KeysWOVersion = types.Int64Value(v)
		return m
	}
	m.SecretName, m.ECDSAKey = optString(k.SecretName, prior.SecretName), optString(k.ECDSAKey, prior.ECDSAKey)
	m.BLSKeystoreKey = optString(k.BLSKeystoreKey, prior.BLSKeystoreKey)
	m.BLSKeystorePasswordKey = optString(k.BLSKeystorePasswordKey, prior.BLSKeystorePasswordKey)
	m.RemoteSigner = flattenRemoteSigner(k.RemoteSigner, prior.RemoteSigner)
	return m
}

// setAggregatorStatus fills the computed attributes from the object.
func setAggregatorStatus(m *aggregatorModelV0, u *unstructured.Unstructured) {
	m.ID = types.StringValue(u.GetNamespace() + "/" + u.GetName())
	m.Phase = statusString(u, "phase")
	m.Revision = statusString(u, "revision")
	m.ConfigSecretName = statusString(u, "configSecretName")
	m.ManagementEndpoint = statusString(u, "managementEndpoint")
	ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
	m.ReadyReplicas = types.Int64Value(ready)
}
