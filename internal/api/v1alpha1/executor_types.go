package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExecutorPhase is the one-word summary of an Executor (status.phase). It is derived from
// status.conditions and never drives control flow. Values follow Hourglass's HourglassExecutor
// lifecycle (Pending → Creating → Running; Running → Updating → Running; Running → Scaling →
// Running; Creating/Updating/Scaling → Failed → Creating; Running → Terminating) plus
// Hourglass's deployment rollback (FAILED → ROLLINGBACK → INSTALLED, here Failed → RollingBack → Running).
// Unlike Hourglass, the controller never writes a value outside this enum.
// +kubebuilder:validation:Enum=Pending;Creating;Running;Updating;Scaling;Failed;RollingBack;Terminating
type ExecutorPhase string

const (
	ExecutorPending     ExecutorPhase = "Pending"
	ExecutorCreating    ExecutorPhase = "Creating"
	ExecutorRunning     ExecutorPhase = "Running"
	ExecutorUpdating    ExecutorPhase = "Updating"
	ExecutorScaling     ExecutorPhase = "Scaling"
	ExecutorFailed      ExecutorPhase = "Failed"
	ExecutorRollingBack ExecutorPhase = "RollingBack"
	ExecutorTerminating ExecutorPhase = "Terminating"
)

// ExecutorLogLevel is the executor process's log level.
// +kubebuilder:validation:Enum=debug;info;warn;error
type ExecutorLogLevel string

// Executor defaults (: replicas 1, logLevel info; progress deadline as the
// Deployment API's default).
const (
	DefaultExecutorReplicas         int32 = 1
	DefaultExecutorLogLevel               = "info"
	DefaultProgressDeadlineSeconds  int32 = 600
	DefaultRollbackKeepRevisions    int32 = 3
	DefaultExecutorHealthPort       int32 = 8080
	LabelExecutor                         = "gantry.dev/executor"
	AnnotationConfigHash                  = "gantry.dev/config-hash"
	ExecutorConfigKey                     = "executor-config.yaml"
	ExecutorConfigMountPath               = "/etc/gantry"
	ExecutorECDSAKeyEnv                   = "ECDSA_PRIVATE_KEY"
	ExecutorBLSKeyEnv                     = "BLS_PRIVATE_KEY"
	ExecutorRemoteSignerEnv               = "REMOTE_SIGNER_URL"
	ExecutorReasonPerformerNotFound       = "PerformerNotFound"
	// DefaultExecutorGRPCPort and DefaultExecutorManagementPort are the executor's gRPC
	// and management gRPC ports when unset (Hourglass's executor-config.yaml template:
	// grpcPort 9090, managementServerGrpcPort 9091).
	DefaultExecutorGRPCPort       int32 = 9090
	DefaultExecutorManagementPort int32 = 9091
	// ExecutorBLSKeystorePasswordEnv holds the BLS keystore's password (valueFrom secretKeyRef);
	// the keystore itself is mounted at ExecutorKeystorePath.
	ExecutorBLSKeystorePasswordEnv = "BLS_KEYSTORE_PASSWORD"
	ExecutorKeystorePath           = "/etc/gantry-keys/bls-keystore.json"
	// LabelCreatedByExecutor marks a Performer an Executor created itself (spec.managePerformers):
	// gantry.dev/created-by-executor=<executor name>. The Executor lists them in
	// status.managedPerformers and deletes them when it is deleted.
	LabelCreatedByExecutor = "gantry.dev/created-by-executor"
	// DefaultProcessType is an AVS performer's process type when unset (Hourglass: server).
	DefaultProcessType = "server"
	// HourglassConfigKey is the ConfigMap key of the config in Hourglass compatibility mode
	// (spec.hourglassCompat), the file name Hourglass's Helm chart mounts.
	HourglassConfigKey = "config.yaml"
	// HourglassPerformerGroup is the API group of the Performers Hourglass's executor creates
	// (ponos kubernetes.crdGroup; Hourglass's operator reconciles them).
	HourglassPerformerGroup = "hourglass.eigenlayer.io"
	// HourglassConfigFormatPonos and HourglassConfigFormatExecutorV1alpha1 are the values of
	// spec.hourglassCompat.configFormat: Hourglass's current executor (ponos, the default) and
	// the removed HourglassExecutor operator's config (hourglass.eigenlayer.io/v1alpha1).
	HourglassConfigFormatPonos            = "ponos"
	HourglassConfigFormatExecutorV1alpha1 = "hourglass-executor-v1alpha1"
	// HourglassExecutorV1alpha1MountPath is where the HourglassExecutor operator mounted its
	// executor's config (--config=/etc/hourglass/config.yaml).
	HourglassExecutorV1alpha1MountPath = "/etc/hourglass"
	// HourglassExecutorV1alpha1GRPCPort and HourglassExecutorV1alpha1HealthPort are that
	// operator's fixed container port grpc and the port of its HTTP probes (/healthz, /readyz).
	HourglassExecutorV1alpha1GRPCPort   int32 = 9090
	HourglassExecutorV1alpha1HealthPort int32 = 8080
)

// Executor runs an AVS executor (Hourglass "ponos"): a Deployment that mounts a ConfigMap
// rendered from its multi-chain configuration and the gRPC endpoints of the Performers it
// uses. Operator keys reach the pods only as Secret references (env valueFrom secretKeyRef) or
// a remote signer URL: never in this object, the ConfigMap, events or logs (Hourglass kept
// them in plain text in the CR).
// Modelled on Hourglass (HourglassExecutor lifecycle, multi-chain config, service discovery,
// deployment state machine, rollback).
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=exec,categories=gantry
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.readyText`
// +kubebuilder:printcolumn:name="Chains",type=string,JSONPath=`.spec.chains[*].name`
// +kubebuilder:printcolumn:name="Performers",type=string,JSONPath=`.status.performerEndpoints[*].name`
// +kubebuilder:printcolumn:name="Managed",type=string,JSONPath=`.status.managedPerformers[*].name`,priority=1
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.currentRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 40 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 40 characters (it names the Deployment executor-<name> and its ConfigMaps executor-<name>-<config hash>)"
type Executor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExecutorSpec   `json:"spec"`
	Status ExecutorStatus `json:"status,omitempty"`
}

// ExecutorSpec is the desired state of an Executor.
// +kubebuilder:validation:XValidation:rule="!has(self.grpcPort) || !has(self.managementPort) || self.grpcPort != self.managementPort",message="grpcPort and managementPort must differ"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || (has(self.hourglassCompat.configFormat) && self.hourglassCompat.configFormat == 'hourglass-executor-v1alpha1') || has(self.operatorAddress)",message="hourglassCompat needs operatorAddress (Hourglass's executor requires operator.address)"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || (has(self.hourglassCompat.configFormat) && self.hourglassCompat.configFormat == 'hourglass-executor-v1alpha1') || has(self.operatorKeys.ecdsaKey) || has(self.operatorKeys.remoteSigner)",message="hourglassCompat needs operatorKeys.ecdsaKey (Hourglass's executor requires operator.operatorPrivateKey) or operatorKeys.remoteSigner"
// +kubebuilder:validation:XValidation:rule="!has(self.operatorKeys.remoteSigner) || has(self.hourglassCompat)",message="operatorKeys.remoteSigner is Hourglass's remoteSignerConfig: it needs hourglassCompat (without it, use operatorKeys.remoteSignerUrl)"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || (has(self.hourglassCompat.configFormat) && self.hourglassCompat.configFormat == 'hourglass-executor-v1alpha1') || (!has(self.operatorKeys.blsKey) && !has(self.operatorKeys.remoteSignerUrl))",message="hourglassCompat takes no operatorKeys.blsKey or remoteSignerUrl: Hourglass's executor reads a BLS keystore (blsKeystoreKey) and a local ECDSA key"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || !(has(self.hourglassCompat.configFormat) && self.hourglassCompat.configFormat == 'hourglass-executor-v1alpha1') || (!has(self.operatorKeys.blsKeystoreKey) && !has(self.operatorKeys.remoteSigner) && !has(self.operatorKeys.remoteSignerUrl))",message="hourglassCompat.configFormat hourglass-executor-v1alpha1 takes no operatorKeys.blsKeystoreKey, remoteSigner or remoteSignerUrl: the keys reach that executor only as ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY (operatorKeys.ecdsaKey, blsKey)"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || !(has(self.hourglassCompat.configFormat) && self.hourglassCompat.configFormat == 'hourglass-executor-v1alpha1') || ((!has(self.avsPerformers) || size(self.avsPerformers) == 0) && !has(self.hourglassCompat.l1Chain))",message="hourglassCompat.configFormat hourglass-executor-v1alpha1 takes no avsPerformers and no hourglassCompat.l1Chain: the HourglassExecutor config has neither"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || !(has(self.hourglassCompat.configFormat) && self.hourglassCompat.configFormat == 'hourglass-executor-v1alpha1') || !has(self.grpcPort) || self.grpcPort == 9090",message="hourglassCompat.configFormat hourglass-executor-v1alpha1 needs grpcPort 9090: the HourglassExecutor config names no port and its executor listens on 9090"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || !has(self.performers) || (!has(self.performers.names) && !has(self.performers.selector))",message="hourglassCompat takes no performers: Hourglass's executor creates its own Performers from avsPerformers"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || !has(self.hourglassCompat.l1Chain) || self.chains.exists(c, c.name == self.hourglassCompat.l1Chain)",message="hourglassCompat.l1Chain must name one of chains"
// +kubebuilder:validation:XValidation:rule="!has(self.hourglassCompat) || !has(self.avsPerformers) || self.avsPerformers.all(a, !has(a.image) || (!a.image.contains('@') && a.image.matches(':[^/:]+$')))",message="hourglassCompat: every avsPerformers image must be repository:tag without a digest (Hourglass's image.repository and image.tag)"
type ExecutorSpec struct {
	// Image is the executor container image, e.g. "ghcr.io/layr-labs/hourglass/executor:v0.4.0".
	// A change rolls the Deployment (phase Updating).
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	// ImagePullPolicy of the executor container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets are Secrets in the Executor's namespace used to pull the image.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Replicas is the number of executor pods, 0-100 (default 1; the scale subresource's
	// spec path). A change alone is a Scaling, not an Updating.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Chains are the chains the executor monitors (1-32, unique names and chain IDs).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.chainId == a.chainId))",message="chain IDs must be unique"
	Chains []Chain `json:"chains"`

	// AggregatorEndpoint is the aggregator's gRPC endpoint: host:port, optionally with a
	// scheme (dns:///, grpc://, grpcs://, http://, https://), e.g. "aggregator.avs.svc:9010".
	// +kubebuilder:validation:Pattern=`^([a-z][a-z0-9+.-]*://(/)?)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?:[0-9]{1,5}(/.*)?$`
	// +kubebuilder:validation:MaxLength=512
	AggregatorEndpoint string `json:"aggregatorEndpoint"`

	// Performers selects the Performers (same namespace) whose gRPC endpoints are rendered
	// into the config: by names or by a label selector (at most one). An executor without
	// performers (as every upstream Hourglass executor example is) runs with no performer
	// endpoints in its config; performers can be added later.
	// +optional
	Performers PerformerSelection `json:"performers,omitempty"`

	// OperatorKeys say where the operator's signing keys come from: a Secret (name and the
	// keys holding the ECDSA and/or BLS private keys) or a remote signer URL. Never key
	// material itself.
	OperatorKeys OperatorKeys `json:"operatorKeys"`

	// LogLevel of the executor process: debug, info (default), warn or error.
	// +kubebuilder:default=info
	// +optional
	LogLevel ExecutorLogLevel `json:"logLevel,omitempty"`

	// Resources are the executor container's CPU/memory requests and limits.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// Scheduling constrains where the executor pods run (as for Performers).
	// +optional
	Scheduling Scheduling `json:"scheduling,omitempty"`

	// PodLabels are extra labels on the executor pods (pod template); they cannot override
	// gantry.dev/executor or app.kubernetes.io/managed-by. At most 64; keys label keys
	// (optional DNS-subdomain prefix and '/', then a name of at most 63 characters), values at
	// most 63 characters. A change rolls the pods.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="podLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/')))",message="podLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="podLabels values must be label values of at most 63 characters"
	// +kubebuilder:validation:XValidation:rule="!('gantry.dev/executor' in self) && !('app.kubernetes.io/managed-by' in self)",message="podLabels cannot set gantry.dev/executor or app.kubernetes.io/managed-by"
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// ProgressDeadlineSeconds is how long a rollout may make no progress before the
	// Deployment reports ProgressDeadlineExceeded and the update counts as failed
	// (10-3600, default 600).
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=3600
	// +kubebuilder:default=600
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`

	// Rollback is what happens when an update fails (as Hourglass's deployment machine: FAILED → ROLLINGBACK).
	// +optional
	Rollback RollbackPolicy `json:"rollback,omitempty"`

	// GRPCPort is the port of the executor's gRPC server (Hourglass grpcPort), 1-65535,
	// default 9090: a container port named "grpc" and grpc_port in the config.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=9090
	// +optional
	GRPCPort int32 `json:"grpcPort,omitempty"`

	// ManagementPort is the port of the executor's management gRPC server (Hourglass
	// managementServerGrpcPort), 1-65535, default 9091: a container port named "management".
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=9091
	// +optional
	ManagementPort int32 `json:"managementPort,omitempty"`

	// OperatorAddress is the operator's Ethereum address (Hourglass operator.address): 0x
	// followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	// +optional
	OperatorAddress string `json:"operatorAddress,omitempty"`

	// AVSPerformers are the AVSs this executor serves (Hourglass avsPerformers[]), one per AVS
	// address (0-64). With managePerformers the executor deploys each one's image as a
	// Performer itself.
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=avsAddress
	// +optional
	AVSPerformers []AVSPerformer `json:"avsPerformers,omitempty"`

	// ManagePerformers lets the executor create and remove Performers itself, as Hourglass's
	// executor does for each AVS it serves: the pods run as the ServiceAccount executor-<name>,
	// bound by a Role executor-<name>-performers to create, update and delete Performers in
	// this namespace (nothing else), and the config's kubernetes section tells the executor
	// the namespace, API group and the label gantry.dev/created-by-executor=<name> to put on
	// them. status.managedPerformers lists them; deleting the Executor deletes them.
	// +optional
	ManagePerformers bool `json:"managePerformers,omitempty"`

	// HourglassCompat, when set, runs an unmodified Hourglass executor (ponos) image: the
	// config is rendered in Hourglass's own format (ponos executorConfig.ExecutorConfig:
	// grpcPort, managementServerGrpcPort, operator, l1Chain, avsPerformers with deploymentMode
	// kubernetes, kubernetes, storage) as config.yaml, the container runs
	// "executor run --config /etc/gantry/config.yaml" as Hourglass's Helm chart does, the
	// operator keys reach it as the environment variables its config loader (viper, prefix
	// EXECUTOR_) reads over the config's empty placeholders, and its ServiceAccount
	// executor-<name> may create, update and delete hourglass.eigenlayer.io Performers in
	// this namespace (as managePerformers does for Gantry's). configFormat
	// hourglass-executor-v1alpha1 renders instead the config of the removed HourglassExecutor
	// operator, for executor images built for it. See HourglassCompat.
	// +optional
	HourglassCompat *HourglassCompat `json:"hourglassCompat,omitempty"`
}

// HourglassCompat are the settings of Hourglass compatibility mode (spec.hourglassCompat).
// Requirements, checked by the API server: no performers; with configFormat ponos (the
// default) operatorAddress, operatorKeys.ecdsaKey (Hourglass's operator.operatorPrivateKey,
// also its ECDSA signing key when there is no BLS keystore) or remoteSigner, no
// operatorKeys.blsKey or remoteSignerUrl, and avsPerformers images as repository:tag; with
// configFormat hourglass-executor-v1alpha1 no avsPerformers, l1Chain,
// operatorKeys.blsKeystoreKey, remoteSigner or remoteSignerUrl, and grpcPort 9090.
type HourglassCompat struct {
	// ConfigFormat is the config format the executor image reads: "ponos" (the default, when
	// unset) is Hourglass's current executor (ponos executorConfig.ExecutorConfig, rendered as
	// config.yaml mounted at /etc/gantry, the container run as "executor run --config
	// /etc/gantry/config.yaml"). "hourglass-executor-v1alpha1" is the config the removed
	// HourglassExecutor operator (hourglass.eigenlayer.io/v1alpha1) wrote for its executor
	// images: config.yaml with aggregator_endpoint, performer_mode ("kubernetes"), log_level,
	// chains (name, rpc, chain_id, task_mailbox_address) and kubernetes.namespace (the
	// Executor's namespace), byte for byte as that operator wrote it, mounted at
	// /etc/hourglass; the container keeps its image's entrypoint with the argument
	// --config=/etc/hourglass/config.yaml, port grpc 9090 and HTTP probes /healthz and /readyz
	// on port 8080. That operator gave its executor no keys; here the keys reach it as
	// ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY (valueFrom secretKeyRef of operatorKeys.ecdsaKey,
	// blsKey), never in the config. That format takes no avsPerformers, l1Chain,
	// operatorKeys.blsKeystoreKey, remoteSigner or remoteSignerUrl, and grpcPort stays 9090.
	// +kubebuilder:validation:Enum=ponos;hourglass-executor-v1alpha1
	// +optional
	ConfigFormat string `json:"configFormat,omitempty"`

	// L1Chain names the chain of spec.chains rendered as Hourglass's l1Chain (rpcUrl, chainId);
	// default the first chain. Hourglass's executor reads no other chain, no aggregator
	// endpoint and no task mailbox address (it takes contract addresses from its embedded
	// per-chain-ID list).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	L1Chain string `json:"l1Chain,omitempty"`
}

// AVSPerformer is one AVS an executor serves (Hourglass executor config avsPerformers[]).
type AVSPerformer struct {
	// AVSAddress is the AVS contract address: 0x followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	AVSAddress string `json:"avsAddress"`
	// AVSRegistrarAddress is the AVS registrar contract address: 0x followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	// +optional
	AVSRegistrarAddress string `json:"avsRegistrarAddress,omitempty"`
	// ProcessType is how the executor runs the performer: server (a long-running gRPC server,
	// the default) or one-off (a process per task), as Hourglass's processType.
	// +kubebuilder:validation:Enum=server;one-off
	// +kubebuilder:default=server
	// +optional
	ProcessType string `json:"processType,omitempty"`
	// Image is the performer image the executor deploys for this AVS (with managePerformers),
	// e.g. "ghcr.io/acme/performer:1.2.0".
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`
	// Env are plain environment variables for that performer, name → value (no key material).
	// +optional
	Env map[string]string `json:"env,omitempty"`
}

// ManagedPerformer is one Performer an executor created itself, as observed.
type ManagedPerformer struct {
	// Name of the Performer.
	Name string `json:"name"`
	// Phase is its status.phase.
	// +optional
	Phase PerformerPhase `json:"phase,omitempty"`
	// Endpoint is its status.grpcEndpoint.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
}

// Chain is one chain the executor monitors (Hourglass config.chains[]).
type Chain struct {
	// Name of the chain, e.g. "ethereum", "base": lower-case letters, digits and '-', at most 63.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	Name string `json:"name"`
	// ChainID is the EIP-155 chain ID (1 for Ethereum mainnet, 8453 for Base), >= 1.
	// +kubebuilder:validation:Minimum=1
	ChainID int64 `json:"chainId"`
	// RPCURL is the chain's JSON-RPC endpoint: an http(s):// or ws(s):// URL.
	// +kubebuilder:validation:Pattern=`^(https?|wss?)://[^\s/?#]+([/?#]\S*)?$`
	// +kubebuilder:validation:MaxLength=2048
	RPCURL string `json:"rpcUrl"`
	// TaskMailboxAddress is the TaskMailbox contract address: 0x followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	TaskMailboxAddress string `json:"taskMailboxAddress"`
}

// PerformerSelection picks Performers by names or by a label selector (at most one; neither:
// no performers).
// +kubebuilder:validation:XValidation:rule="!(has(self.names) && has(self.selector))",message="set at most one of performers.names or performers.selector"
type PerformerSelection struct {
	// Names of Performers in the Executor's namespace (1-64, unique).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Names []string `json:"names,omitempty"`
	// Selector picks the Performers in the Executor's namespace whose labels match.
	// matchExpressions operators are In and NotIn (with values) or Exists and DoesNotExist
	// (without); matchLabels keys are label keys and values at most 63 characters.
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="matchExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchExpressions) || self.matchExpressions.all(r, r.operator in ['In', 'NotIn'] ? (has(r.values) && size(r.values) > 0) : (!has(r.values) || size(r.values) == 0))",message="matchExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="matchLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, !k.contains('/') || k.matches('^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/'))",message="matchLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="!has(self.matchLabels) || self.matchLabels.all(k, size(self.matchLabels[k]) <= 63)",message="matchLabels values must be label values of at most 63 characters"
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// OperatorKeys reference the operator's signing keys: a Secret and its keys, or a remote
// signer (exactly one). The executor pods get the Secret keys as the environment variables
// ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY (valueFrom secretKeyRef, as Hourglass's own
// statefulset template did), or REMOTE_SIGNER_URL.
// +kubebuilder:validation:XValidation:rule="has(self.remoteSignerUrl) ? !has(self.secretName) : (has(self.secretName) || has(self.remoteSigner))",message="set exactly one of operatorKeys.secretName or operatorKeys.remoteSignerUrl (operatorKeys.remoteSigner may stand for secretName, or go beside it for a BLS keystore)"
// +kubebuilder:validation:XValidation:rule="!has(self.remoteSigner) || (!has(self.remoteSignerUrl) && !has(self.ecdsaKey))",message="operatorKeys.remoteSigner signs with the operator's ECDSA key: no remoteSignerUrl or ecdsaKey beside it"
// +kubebuilder:validation:XValidation:rule="!has(self.secretName) || has(self.ecdsaKey) || has(self.blsKey) || has(self.blsKeystoreKey)",message="operatorKeys.secretName needs ecdsaKey, blsKey and/or blsKeystoreKey"
// +kubebuilder:validation:XValidation:rule="has(self.secretName) || (!has(self.ecdsaKey) && !has(self.blsKey) && !has(self.blsKeystoreKey))",message="operatorKeys.ecdsaKey, blsKey and blsKeystoreKey need secretName"
// +kubebuilder:validation:XValidation:rule="!(has(self.blsKey) && has(self.blsKeystoreKey))",message="set at most one of operatorKeys.blsKey and operatorKeys.blsKeystoreKey"
// +kubebuilder:validation:XValidation:rule="!has(self.blsKeystorePasswordKey) || has(self.blsKeystoreKey)",message="operatorKeys.blsKeystorePasswordKey needs blsKeystoreKey"
// +kubebuilder:validation:XValidation:rule="has(self.secretName) || !has(self.secretVersion)",message="operatorKeys.secretVersion needs secretName"
type OperatorKeys struct {
	// SecretName is a Secret in the Executor's namespace holding the private keys.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// ECDSAKey is the key within the Secret holding the ECDSA private key.
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	ECDSAKey string `json:"ecdsaKey,omitempty"`
	// BLSKey is the key within the Secret holding the BLS private key.
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	BLSKey string `json:"blsKey,omitempty"`
	// BLSKeystoreKey is the key within the Secret holding a BLS keystore (EIP-2335 JSON), as
	// Hourglass's signingKeys.bls.keystore: mounted read-only at
	// /etc/gantry-keys/bls-keystore.json and named in the config (signer.bls_keystore_file).
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	BLSKeystoreKey string `json:"blsKeystoreKey,omitempty"`
	// BLSKeystorePasswordKey is the key within the Secret holding the keystore's password,
	// passed as the environment variable BLS_KEYSTORE_PASSWORD (valueFrom secretKeyRef).
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	BLSKeystorePasswordKey string `json:"blsKeystorePasswordKey,omitempty"`
	// RemoteSigner is a remote signer (web3signer) for the operator's ECDSA key in Hourglass
	// compatibility mode (spec.hourglassCompat), rendered as Hourglass's remoteSignerConfig of
	// operator.operatorPrivateKey (and of operator.signingKeys.ecdsa without a BLS keystore), so
	// an unmodified Hourglass image signs through it. It carries only public values: the URL,
	// the key's public key and address, and the names of Secrets holding the TLS CA and client
	// certificate. Instead of ecdsaKey; beside secretName only for a BLS keystore.
	// +optional
	RemoteSigner *RemoteSigner `json:"remoteSigner,omitempty"`
	// RemoteSignerURL is the https:// (or http://) URL of a remote signer (web3signer).
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#]+([/?#]\S*)?$`
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	RemoteSignerURL string `json:"remoteSignerUrl,omitempty"`
	// SecretVersion, when set, names the version of the keys in the Secret: it is copied to
	// the executor pod template's annotation gantry.dev/operator-keys-version, so changing it
	// rolls the pods onto the rotated keys (environment variables from a Secret are read only
	// when a container starts). The Terraform provider sets it from
	// operator_keys.private_keys_wo_version when it writes the Secret itself.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	SecretVersion string `json:"secretVersion,omitempty"`
}

// RemoteSigner is operatorKeys.remoteSigner: Hourglass's remoteSignerConfig (ponos
// config.RemoteSignerConfig: url, caCert, cert, key, fromAddress, publicKey) with its TLS
// material by Secret reference.
// +kubebuilder:validation:XValidation:rule="self.url.startsWith('https://') || (!has(self.caSecretName) && !has(self.clientCertSecretName))",message="operatorKeys.remoteSigner: caSecretName and clientCertSecretName need an https:// url (Hourglass uses TLS only for https)"
type RemoteSigner struct {
	// URL of the web3signer, https:// (or http://), e.g. "https://web3signer.signers.svc:9000".
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#]+([/?#]\S*)?$`
	// +kubebuilder:validation:MaxLength=2048
	URL string `json:"url"`
	// PublicKey is the operator's ECDSA public key as web3signer lists it (eth1 keys):
	// 0x followed by 128 hex digits (uncompressed, without the 04 prefix) or 130 (with it).
	// Hourglass's publicKey: the key web3signer signs with.
	// +kubebuilder:validation:Pattern=`^0x(04)?[0-9a-fA-F]{128}$`
	PublicKey string `json:"publicKey"`
	// FromAddress is the key's address (0x followed by 40 hex digits), Hourglass's fromAddress:
	// the sender of the operator's transactions; default spec.operatorAddress.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	// +optional
	FromAddress string `json:"fromAddress,omitempty"`
	// CASecretName is a Secret in the Executor's namespace whose key ca.crt is the PEM CA
	// certificate the web3signer's server certificate is verified against (Hourglass's caCert).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CASecretName string `json:"caSecretName,omitempty"`
	// ClientCertSecretName is a kubernetes.io/tls Secret in the Executor's namespace (keys
	// tls.crt and tls.key) holding the client certificate and key for mutual TLS (Hourglass's
	// cert and key).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClientCertSecretName string `json:"clientCertSecretName,omitempty"`
}

// RollbackPolicy says what to do when an update fails.
type RollbackPolicy struct {
	// OnFailure restores the last good revision when an update fails (default true).
	// +kubebuilder:default=true
	// +optional
	OnFailure *bool `json:"onFailure,omitempty"`
	// KeepRevisions is how many old revisions (ReplicaSets and their ConfigMaps) are kept
	// for rollback, 1-50 (default 3).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +kubebuilder:default=3
	// +optional
	KeepRevisions *int32 `json:"keepRevisions,omitempty"`
}

// PerformerEndpoint is one referenced Performer's gRPC endpoint, as rendered in the config.
type PerformerEndpoint struct {
	// Name of the Performer.
	Name string `json:"name"`
	// Endpoint is its status.grpcEndpoint (performer-<name>.<namespace>.svc.cluster.local:<port>).
	Endpoint string `json:"endpoint"`
}

// ExecutorStatus is the observed state of an Executor (the status contract, docs/guides/status-and-conditions.md).
type ExecutorStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is the one-word summary derived from Conditions.
	// +optional
	Phase ExecutorPhase `json:"phase,omitempty"`
	// Conditions: Ready, Reconciling, Stalled (kstatus), ConfigReady, PerformersReady.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Replicas is the Deployment's status.replicas (scale subresource status path).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// ReadyReplicas is the Deployment's status.readyReplicas.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// ReadyText is "<ready>/<desired>" for the printer column.
	// +optional
	ReadyText string `json:"readyText,omitempty"`
	// Selector is the pods' label selector in string form (scale subresource selector path).
	// +optional
	Selector string `json:"selector,omitempty"`
	// CurrentRevision is the revision (16-hex pod template hash) the Deployment runs now.
	// +optional
	CurrentRevision string `json:"currentRevision,omitempty"`
	// LastGoodRevision is the last revision seen fully rolled out and Ready: the rollback target.
	// +optional
	LastGoodRevision string `json:"lastGoodRevision,omitempty"`
	// FailedRevision is the revision whose rollout failed and was rolled back; it is not
	// retried until the spec changes.
	// +optional
	FailedRevision string `json:"failedRevision,omitempty"`
	// Image is the image of the revision that runs now.
	// +optional
	Image string `json:"image,omitempty"`
	// ConfigMapName is the ConfigMap of the desired revision (executor-<name>-<config hash>).
	// +optional
	ConfigMapName string `json:"configMapName,omitempty"`
	// PerformerEndpoints are the performer endpoints rendered into the desired config.
	// +optional
	PerformerEndpoints []PerformerEndpoint `json:"performerEndpoints,omitempty"`
	// ManagedPerformers are the Performers the executor created itself (label
	// gantry.dev/created-by-executor=<name>), by name, with their phase and endpoint.
	// +optional
	ManagedPerformers []ManagedPerformer `json:"managedPerformers,omitempty"`
	// PodDisruptions counts the Pods that ended from outside (evicted, preempted, deleted,
	// their node shut down or gone) and bounds how many are waited through: more than 3 per
	// replica within 10 minutes is Stalled=True, reason PodDisruptedRepeatedly (PodDisruptions
	// has the rule). Absent until the first such Pod.
	// +optional
	PodDisruptions *PodDisruptions `json:"podDisruptions,omitempty"`
}

// ExecutorList is a list of Executors.
// +kubebuilder:object:root=true
type ExecutorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Executor `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Executor{}, &ExecutorList{})
}
