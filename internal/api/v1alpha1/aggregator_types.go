package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AggregatorPhase is the one-word summary of an Aggregator (status.phase), derived from
// status.conditions. Pending → Creating → Running; Running → Updating → Running; Creating |
// Updating → Failed → Creating | Updating (a spec change or the pod recovering); any →
// Terminating.
// +kubebuilder:validation:Enum=Pending;Creating;Running;Updating;Failed;Terminating
type AggregatorPhase string

const (
	AggregatorPending     AggregatorPhase = "Pending"
	AggregatorCreating    AggregatorPhase = "Creating"
	AggregatorRunning     AggregatorPhase = "Running"
	AggregatorUpdating    AggregatorPhase = "Updating"
	AggregatorFailed      AggregatorPhase = "Failed"
	AggregatorTerminating AggregatorPhase = "Terminating"
)

// Aggregator defaults and names, as Hourglass's Helm chart (ponos/charts/hourglass,
// values.yaml aggregator.*) and its aggregator config (ponos aggregatorConfig.AggregatorConfig).
const (
	// LabelAggregator is set on an aggregator's pods and owned objects; value: its name.
	LabelAggregator = "gantry.dev/aggregator"
	// DefaultAggregatorManagementPort is the management gRPC port when unset: the chart's
	// aggregator.ports management-grpc (port and targetPort 9000).
	DefaultAggregatorManagementPort int32 = 9000
	// DefaultAggregatorPollIntervalSeconds is a chain's pollIntervalSeconds when unset
	// (Hourglass's hgctl aggregator template: L1_POLL_INTERVAL default 2).
	DefaultAggregatorPollIntervalSeconds int32 = 2
	// AggregatorConfigKey is the config Secret's key and file name (the chart's
	// aggregator.secret.data config.yaml).
	AggregatorConfigKey = "config.yaml"
	// AggregatorConfigMountPath is where the chart mounts the config Secret
	// (aggregator.command: aggregator run --config /etc/secrets/hourglass/config.yaml).
	AggregatorConfigMountPath = "/etc/secrets/hourglass"
	// AggregatorDataPath is where spec.persistence's volume is mounted; the BadgerDB store
	// (storage.badger.dir) is AggregatorBadgerDir below it (the path Hourglass's demo config
	// names).
	AggregatorDataPath  = "/var/lib/ponos/aggregator"
	AggregatorBadgerDir = "/var/lib/ponos/aggregator/badger"
)

// Aggregator runs a Hourglass aggregator (ponos "aggregator run"), as Hourglass's Helm chart
// does: a StatefulSet of one pod, a headless Service on its management gRPC port and a Secret
// holding its config.yaml. The config is rendered from this spec in Hourglass's own format
// (ponos aggregatorConfig.AggregatorConfig); operator keys reach the pod only as Secret
// references (environment variables valueFrom secretKeyRef that Hourglass's config loader reads
// over the config's empty placeholders): never in this object, the config Secret, events or logs.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=agg,categories=gantry
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.readyText`
// +kubebuilder:printcolumn:name="L1",type=integer,JSONPath=`.spec.l1ChainId`
// +kubebuilder:printcolumn:name="Chains",type=string,JSONPath=`.spec.chains[*].name`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.managementEndpoint`,priority=1
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.image`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 40 characters (it names the StatefulSet and Service aggregator-<name> and the Secret aggregator-<name>-config)"
type Aggregator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AggregatorSpec   `json:"spec"`
	Status AggregatorStatus `json:"status,omitempty"`
}

// AggregatorSpec is the desired state of an Aggregator: what Hourglass's aggregator config
// holds (operator, l1ChainId, chains, avss, storage, managementServerGrpcPort, debug) and what
// its Helm chart sets (image, resources, ports).
// +kubebuilder:validation:XValidation:rule="self.chains.exists(c, c.chainId == self.l1ChainId)",message="l1ChainId must be the chainId of one of chains (Hourglass: l1ChainId must be one of the configured chains)"
// +kubebuilder:validation:XValidation:rule="!has(self.avss) || self.avss.all(a, a.chainIds.all(id, self.chains.exists(c, c.chainId == id)))",message="every avss[].chainIds entry must be the chainId of one of chains"
// +kubebuilder:validation:XValidation:rule="has(self.operatorKeys.ecdsaKey) || has(self.operatorKeys.remoteSigner)",message="operatorKeys needs ecdsaKey or remoteSigner (Hourglass's aggregator requires operator.operatorPrivateKey)"
// +kubebuilder:validation:XValidation:rule="!has(self.operatorKeys.blsKey) && !has(self.operatorKeys.remoteSignerUrl)",message="operatorKeys takes no blsKey or remoteSignerUrl: Hourglass's aggregator reads a BLS keystore (blsKeystoreKey), a local ECDSA key (ecdsaKey) or a remote signer (remoteSigner)"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.persistence) == has(self.persistence) && (!has(self.persistence) || oldSelf.persistence == self.persistence)",message="persistence cannot change after creation: it is the StatefulSet's volumeClaimTemplate, which Kubernetes does not update (replace the Aggregator)"
type AggregatorSpec struct {
	// Image is the Hourglass image that holds the aggregator binary, e.g.
	// "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2" (the chart's hourglass.image).
	// A change rolls the pod (phase Updating).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`

	// ImagePullPolicy of the aggregator container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets are Secrets in the Aggregator's namespace used to pull the image.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// OperatorAddress is the address of the operator running the aggregator (Hourglass
	// operator.address): 0x followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	OperatorAddress string `json:"operatorAddress"`

	// OperatorKeys say where the operator's keys come from: a Secret in the Aggregator's
	// namespace and its keys (ecdsaKey: operator.operatorPrivateKey, also the ECDSA signing key
	// without a BLS keystore; blsKeystoreKey and blsKeystorePasswordKey: signingKeys.bls) or a
	// remote signer (web3signer) for the ECDSA key. Never key material itself. blsKey and
	// remoteSignerUrl are the executor's and are refused here.
	OperatorKeys OperatorKeys `json:"operatorKeys"`

	// L1ChainID is the chain ID of the L1 (Hourglass l1ChainId): one of chains' chainId.
	// +kubebuilder:validation:Minimum=1
	L1ChainID int64 `json:"l1ChainId"`

	// Chains are the chains the aggregator watches (Hourglass chains[]: 1-32, unique names and
	// chain IDs).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.chainId == a.chainId))",message="chain IDs must be unique"
	Chains []AggregatorChain `json:"chains"`

	// AVSs are the AVSs the aggregator collects and distributes tasks for (Hourglass avss[]),
	// one per address (0-64).
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=address
	// +optional
	AVSs []AggregatorAVS `json:"avss,omitempty"`

	// ManagementPort is the port of the aggregator's management gRPC server (Hourglass
	// managementServerGrpcPort), 1-65535, default 9000 (the chart's management-grpc port): a
	// container port and a Service port named management-grpc.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=9000
	// +optional
	ManagementPort int32 `json:"managementPort,omitempty"`

	// Debug turns on the aggregator's debug logging (Hourglass debug).
	// +optional
	Debug bool `json:"debug,omitempty"`

	// Resources are the aggregator container's CPU/memory requests and limits (the chart's
	// aggregator.resources).
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// Persistence, when set, gives the aggregator a PersistentVolumeClaim (the StatefulSet's
	// volumeClaimTemplate "data", mounted at /var/lib/ponos/aggregator) and renders Hourglass's
	// storage as BadgerDB in it (storage.type badger, badger.dir
	// /var/lib/ponos/aggregator/badger), so tasks survive a restart. Unset: storage.type
	// memory, as in Hourglass's sample configs. A StatefulSet's volumeClaimTemplates cannot
	// change: changing or removing persistence after creation is refused.
	// +optional
	Persistence *AggregatorPersistence `json:"persistence,omitempty"`
}

// AggregatorChain is one chain the aggregator watches (Hourglass aggregatorConfig.Chain).
type AggregatorChain struct {
	// Name of the chain, e.g. "ethereum", "base": lower-case letters, digits and '-', at most 63.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ChainID is the EIP-155 chain ID, one Hourglass supports (config.SupportedChainIds): 1
	// (Ethereum), 17000 (Holesky), 560048 (Hoodi), 11155111 (Sepolia), 8453 (Base), 84532
	// (Base Sepolia), 31337 and 31338 (Anvil).
	// +kubebuilder:validation:Enum=1;17000;560048;11155111;8453;84532;31337;31338
	ChainID int64 `json:"chainId"`
	// RPCURL is the chain's JSON-RPC endpoint: an http(s):// or ws(s):// URL.
	// +kubebuilder:validation:Pattern=`^(https?|wss?)://[^\s/?#]+([/?#]\S*)?$`
	// +kubebuilder:validation:MaxLength=2048
	RPCURL string `json:"rpcUrl"`
	// PollIntervalSeconds is how often the aggregator polls the chain for new blocks, in
	// seconds, 1-3600 (default 2).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=2
	// +optional
	PollIntervalSeconds int32 `json:"pollIntervalSeconds,omitempty"`
}

// AggregatorAVS is one AVS the aggregator serves (Hourglass aggregatorConfig.AggregatorAvs).
type AggregatorAVS struct {
	// Address is the AVS's address: 0x followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	Address string `json:"address"`
	// ChainIDs are the chains (chain IDs of spec.chains) the aggregator watches for this AVS's
	// tasks (1-32, unique).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	ChainIDs []int64 `json:"chainIds"`
}

// AggregatorPersistence is the aggregator's volume (spec.persistence).
type AggregatorPersistence struct {
	// Size of the PersistentVolumeClaim, a quantity such as "10Gi" (more than 0).
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="persistence.size must be more than 0"
	Size resource.Quantity `json:"size"`
	// StorageClassName of the claim; unset: the cluster's default StorageClass.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName string `json:"storageClassName,omitempty"`
}

// AggregatorStatus is the observed state of an Aggregator (the status contract,
// docs/guides/status-and-conditions.md).
type AggregatorStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is the one-word summary derived from Conditions.
	// +optional
	Phase AggregatorPhase `json:"phase,omitempty"`
	// Conditions: Ready, Reconciling, Stalled (kstatus), ConfigReady.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ReadyReplicas is the StatefulSet's status.readyReplicas (0 or 1).
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ReadyText is "<ready>/1" for the printer column.
	// +optional
	ReadyText string `json:"readyText,omitempty"`
	// Revision is the pod template revision (16 hex digits) the StatefulSet is to run.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Image is the aggregator image of the StatefulSet's pod template.
	// +optional
	Image string `json:"image,omitempty"`
	// ConfigSecretName is the Secret holding config.yaml (aggregator-<name>-config).
	// +optional
	ConfigSecretName string `json:"configSecretName,omitempty"`
	// ManagementEndpoint is the management gRPC endpoint through the headless Service:
	// aggregator-<name>.<namespace>.svc.cluster.local:<managementPort>.
	// +optional
	ManagementEndpoint string `json:"managementEndpoint,omitempty"`
}

// AggregatorList is a list of Aggregators.
// +kubebuilder:object:root=true
type AggregatorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Aggregator `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Aggregator{}, &AggregatorList{})
}
