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

// Executor defaults (seed-systems.md §2.1: replicas 1, logLevel info; progress deadline as the
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
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.currentRevision`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Executor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExecutorSpec   `json:"spec"`
	Status ExecutorStatus `json:"status,omitempty"`
}

// ExecutorSpec is the desired state of an Executor.
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
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Scheduling constrains where the executor pods run (as for Performers).
	// +optional
	Scheduling Scheduling `json:"scheduling,omitempty"`

	// PodLabels are extra labels on the executor pods (pod template); they cannot override
	// gantry.dev/executor or app.kubernetes.io/managed-by. A change rolls the pods.
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
}

// Chain is one chain the executor monitors (Hourglass config.chains[]).
type Chain struct {
	// Name of the chain, e.g. "ethereum", "base": lower-case letters, digits and '-'.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
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
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// OperatorKeys reference the operator's signing keys: a Secret and its keys, or a remote
// signer (exactly one). The executor pods get the Secret keys as the environment variables
// ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY (valueFrom secretKeyRef, as Hourglass's own
// statefulset template did), or REMOTE_SIGNER_URL.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.remoteSignerUrl)",message="set exactly one of operatorKeys.secretName or operatorKeys.remoteSignerUrl"
// +kubebuilder:validation:XValidation:rule="!has(self.secretName) || has(self.ecdsaKey) || has(self.blsKey)",message="operatorKeys.secretName needs ecdsaKey and/or blsKey"
// +kubebuilder:validation:XValidation:rule="has(self.secretName) || (!has(self.ecdsaKey) && !has(self.blsKey))",message="operatorKeys.ecdsaKey and blsKey need secretName"
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

// ExecutorStatus is the observed state of an Executor (the status contract of DESIGN.md).
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
