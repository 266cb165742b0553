package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PerformerPhase is the one-word summary of a Performer (status.phase). It is derived from
// status.conditions and never drives control flow. Values follow Hourglass's Performer
// lifecycle: Pending → Creating → Scheduling → Running; Running → Upgrading → Running;
// Scheduling/ImagePull/ContainerStart failures → Failed → Creating (retry with backoff);
// deletion → Terminating.
// +kubebuilder:validation:Enum=Pending;Creating;Scheduling;Running;Upgrading;Failed;Terminating
type PerformerPhase string

const (
	PerformerPending     PerformerPhase = "Pending"
	PerformerCreating    PerformerPhase = "Creating"
	PerformerScheduling  PerformerPhase = "Scheduling"
	PerformerRunning     PerformerPhase = "Running"
	PerformerUpgrading   PerformerPhase = "Upgrading"
	PerformerFailed      PerformerPhase = "Failed"
	PerformerTerminating PerformerPhase = "Terminating"
)

// PerformerStrategy is how a spec change replaces a performer's Pod.
type PerformerStrategy string

const (
	// PerformerRecreate deletes the Pod, then creates the new one (the default).
	PerformerRecreate PerformerStrategy = "Recreate"
	// PerformerRollingUpdate runs the performer as a one-replica Deployment that starts the
	// new Pod before it removes the old one.
	PerformerRollingUpdate PerformerStrategy = "RollingUpdate"
)

// TEEType names a trusted execution environment technology.
// +kubebuilder:validation:Enum=sgx;sev-snp;tdx
type TEEType string

const (
	TEESGX    TEEType = "sgx"
	TEESEVSNP TEEType = "sev-snp"
	TEETDX    TEEType = "tdx"
)

// DefaultGRPCPort is the Performer gRPC port when spec.grpcPort is unset (Hourglass: 9090;
// unlike Hourglass, the code and the CRD agree on it).
const DefaultGRPCPort int32 = 9090

// Performer runs one AVS performer: a Pod plus a ClusterIP Service performer-<name> on its
// gRPC port, placed on nodes that satisfy its hardware requirements (GPU, TEE).
// Modelled on the Hourglass operator's Performer.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=perf,categories=gantry
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.spec.hardwareRequirements.gpuCount`
// +kubebuilder:printcolumn:name="TEE",type=string,JSONPath=`.spec.hardwareRequirements.teeType`
// +kubebuilder:printcolumn:name="Node",type=string,JSONPath=`.status.nodeName`
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.grpcEndpoint`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.desiredReplicas`,priority=1
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 53 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 53 characters (it names the Pod and Service performer-<name>)"
type Performer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PerformerSpec   `json:"spec"`
	Status PerformerStatus `json:"status,omitempty"`
}

// PerformerSpec is the desired state of a Performer.
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || (has(self.strategy) && self.strategy == 'RollingUpdate')",message="spec.autoscaling needs spec.strategy RollingUpdate: an autoscaler scales the Deployment performer-<name>, and strategy Recreate runs one bare Pod"
type PerformerSpec struct {
	// Image is the performer container image reference, e.g. "ghcr.io/acme/performer:1.2.0".
	// A change recreates the Pod (phase Upgrading).
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	// Strategy is how a spec change replaces the performer's Pod: Recreate (the default, as
	// Hourglass: the Pod performer-<name> is deleted, then created from the new spec) or
	// RollingUpdate (the performer runs as a one-replica Deployment performer-<name> with
	// maxSurge 1 and maxUnavailable 0: the new Pod is Ready before the old one is removed,
	// so an image or env change never leaves the performer without a serving Pod).
	// +kubebuilder:validation:Enum=Recreate;RollingUpdate
	// +kubebuilder:default=Recreate
	// +optional
	Strategy PerformerStrategy `json:"strategy,omitempty"`

	// Version is a free-form version label tracked for upgrades; a change recreates the Pod.
	// +optional
	Version string `json:"version,omitempty"`

	// AVSAddress is the AVS contract address this performer serves: 0x followed by 40 hex digits.
	// +kubebuilder:validation:Pattern=`^0x[0-9a-fA-F]{40}$`
	// +optional
	AVSAddress string `json:"avsAddress,omitempty"`

	// ImagePullPolicy of the performer container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +kubebuilder:default=IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets are Secrets in the Performer's namespace used to pull the image.
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// GRPCPort is the container and Service port of the performer's gRPC server (1-65535).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=9090
	// +optional
	GRPCPort int32 `json:"grpcPort,omitempty"`

	// Env holds plain environment variables, name → value. Never put key material here: use EnvFrom.
	// +optional
	Env map[string]string `json:"env,omitempty"`

	// EnvFrom holds environment variables read from a Secret or ConfigMap key.
	// +listType=map
	// +listMapKey=name
	// +optional
	EnvFrom []EnvFromRef `json:"envFrom,omitempty"`

	// Command overrides the image entrypoint.
	// +optional
	Command []string `json:"command,omitempty"`

	// Args are the arguments to the entrypoint.
	// +optional
	Args []string `json:"args,omitempty"`

	// ServiceAccountName is the ServiceAccount the performer Pod runs as (a DNS subdomain name
	// of at most 253 characters).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Resources are the container's CPU/memory requests and limits. GPU resources are added
	// from HardwareRequirements; do not set them here.
	// +optional
	Resources ResourceRequirements `json:"resources,omitempty"`

	// Scheduling constrains where the Pod may run, in addition to what HardwareRequirements implies.
	// +optional
	Scheduling Scheduling `json:"scheduling,omitempty"`

	// HardwareRequirements are mapped to resource requests, node selectors, tolerations and a
	// runtime class by the reconciler (internal/hardware).
	// +optional
	HardwareRequirements HardwareRequirements `json:"hardwareRequirements,omitempty"`

	// NetworkPolicy isolates the performer (opt-in): with enabled, the reconciler keeps a
	// networking.k8s.io/v1 NetworkPolicy performer-<name>, owned by the Performer, that admits
	// ingress to the performer's Pods only on the gRPC port and only from the pods of the
	// Executors in this namespace that use the performer (spec.performers.names lists it,
	// spec.performers.selector matches its labels, or the executor created it) and from the
	// peers in allowFrom. Egress is not restricted. Enforcement is the cluster network
	// plugin's: without one that implements NetworkPolicy the object has no effect.
	// +optional
	NetworkPolicy *PerformerNetworkPolicy `json:"networkPolicy,omitempty"`

	// Autoscaling hands the performer's replicas to an autoscaler (Hourglass's roadmap 6.3,
	// "HPA integration for performers"); it needs strategy RollingUpdate (the Deployment
	// performer-<name>). A HorizontalPodAutoscaler (autoscaling/v2) performer-<name> the
	// reconciler owns scales the Deployment between minReplicas and maxReplicas on metric, or,
	// with external, an autoscaler of the user's (a KEDA ScaledObject targeting the Deployment
	// performer-<name>) does. Either way the reconciler sets the Deployment's spec.replicas only
	// when it creates it (to minReplicas) and never writes it again, so it never takes the
	// autoscaler's count back. The performer is Running while at least minReplicas replicas of
	// the current spec are Ready; the Service performer-<name> balances over all of them.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`
}

// PerformerNetworkPolicy is spec.networkPolicy: whether the performer is isolated by a
// NetworkPolicy, and which peers besides its executors may reach its gRPC port.
type PerformerNetworkPolicy struct {
	// Enabled creates the NetworkPolicy performer-<name>; false (or no networkPolicy) deletes it.
	Enabled bool `json:"enabled"`
	// AllowFrom are extra peers admitted on the gRPC port, as in a NetworkPolicy ingress rule
	// (0-16): podSelector alone selects pods in the performer's namespace, namespaceSelector
	// alone every pod of the matching namespaces ({} = all namespaces), both together the
	// matching pods in the matching namespaces.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	AllowFrom []PerformerNetworkPeer `json:"allowFrom,omitempty"`
}

// PerformerNetworkPeer is one extra peer of spec.networkPolicy.allowFrom (a NetworkPolicyPeer
// without ipBlock).
// +kubebuilder:validation:XValidation:rule="has(self.podSelector) || has(self.namespaceSelector)",message="an allowFrom peer needs podSelector, namespaceSelector or both"
type PerformerNetworkPeer struct {
	// PodSelector selects pods by their labels.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`
	// NamespaceSelector selects namespaces by their labels ({} = all namespaces).
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// EnvFromRef sets one environment variable from a key of a Secret or a ConfigMap
// (exactly one of the two).
// +kubebuilder:validation:XValidation:rule="has(self.secretKeyRef) != has(self.configMapKeyRef)",message="exactly one of secretKeyRef or configMapKeyRef must be set"
type EnvFromRef struct {
	// Name of the environment variable.
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`
	// SecretKeyRef selects a key of a Secret in the Performer's namespace.
	// +optional
	SecretKeyRef *KeyRef `json:"secretKeyRef,omitempty"`
	// ConfigMapKeyRef selects a key of a ConfigMap in the Performer's namespace.
	// +optional
	ConfigMapKeyRef *KeyRef `json:"configMapKeyRef,omitempty"`
}

// KeyRef names one key of a Secret or ConfigMap in the same namespace.
type KeyRef struct {
	// Name of the Secret or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Key within it.
	// +kubebuilder:validation:MinLength=1
	Key string `json:"key"`
}

// ResourceRequirements are a container's requests and limits: corev1.ResourceRequirements
// with at most 8 resources in each map and none negative (the bound keeps the CRD's CEL rules
// within the API server's cost budget; a negative quantity is refused by the API server,
// naming spec.resources.requests or .limits, instead of stalling the object). Claims stay
// (passed to the container as written) so the schema keeps every field the upstream type had
// and InstallCRDs upgrades CRDs installed before.
type ResourceRequirements struct {
	// Limits are the most of each resource the container may use, e.g. {"memory": "2Gi"}.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="a limit must not be negative"
	// +optional
	Limits map[corev1.ResourceName]resource.Quantity `json:"limits,omitempty"`
	// Requests are what the scheduler reserves for the container, e.g. {"cpu": "500m"}.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="a request must not be negative"
	// +optional
	Requests map[corev1.ResourceName]resource.Quantity `json:"requests,omitempty"`
	// Claims name entries of the Pod's resourceClaims the container uses (dynamic resource
	// allocation), as in a Pod's container.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Claims []corev1.ResourceClaim `json:"claims,omitempty"`
}

// Core returns r as the corev1.ResourceRequirements of a container (deep-copied maps).
func (r ResourceRequirements) Core() corev1.ResourceRequirements {
	c := r.DeepCopy()
	return corev1.ResourceRequirements{Limits: c.Limits, Requests: c.Requests, Claims: c.Claims}
}

// ResourceRequirementsOf returns c as ResourceRequirements (deep-copied maps and claims).
func ResourceRequirementsOf(c corev1.ResourceRequirements) ResourceRequirements {
	d := c.DeepCopy()
	return ResourceRequirements{Limits: d.Limits, Requests: d.Requests, Claims: d.Claims}
}

// Scheduling holds the Pod placement fields a user may set directly.
type Scheduling struct {
	// NodeSelector labels the node must carry (merged with those HardwareRequirements implies):
	// at most 64, keys label keys (optional DNS-subdomain prefix and '/', then a name of at most
	// 63 characters), values at most 63 characters.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="nodeSelector keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/')))",message="nodeSelector key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="nodeSelector values must be label values of at most 63 characters"
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations added to the Pod (merged with those HardwareRequirements implies), at most 64.
	// As the Pod API requires: operator Exists or Equal (empty: Equal); a toleration without a
	// key needs Exists; Exists takes no value; a value is at most 63 characters; effect
	// NoSchedule, PreferNoSchedule or NoExecute (empty: all); tolerationSeconds only with
	// NoExecute.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator in ['', 'Exists', 'Equal']",message="a toleration's operator must be Exists or Equal"
	// +kubebuilder:validation:items:XValidation:rule="(has(self.key) && self.key != '') || (has(self.operator) && self.operator == 'Exists')",message="a toleration without a key must have operator Exists (it tolerates every taint)"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",message="a toleration with operator Exists takes no value"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.value) || size(self.value) <= 63",message="a toleration's value must be a label value of at most 63 characters"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.effect) || self.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute']",message="a toleration's effect must be NoSchedule, PreferNoSchedule or NoExecute (empty: every effect)"
	// +kubebuilder:validation:items:XValidation:rule="!has(self.tolerationSeconds) || (has(self.effect) && self.effect == 'NoExecute')",message="a toleration's tolerationSeconds needs effect NoExecute"
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the Pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// RuntimeClassName of the Pod (a RuntimeClass name: a DNS subdomain name of at most 253
	// characters); overrides the one a TEE type implies.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`
	// PriorityClassName of the Pod (a PriorityClass name: a DNS subdomain name of at most 253
	// characters).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	PriorityClassName *string `json:"priorityClassName,omitempty"`
}

// HardwareRequirements describe the accelerator and TEE a performer needs.
// +kubebuilder:validation:XValidation:rule="!has(self.teeType) || (has(self.teeRequired) && self.teeRequired)",message="teeType requires teeRequired: true"
// +kubebuilder:validation:XValidation:rule="!has(self.teeRequired) || !self.teeRequired || has(self.teeType)",message="teeRequired: true requires teeType (sgx, sev-snp or tdx)"
// +kubebuilder:validation:XValidation:rule="!has(self.gpuType) || (has(self.gpuCount) && self.gpuCount > 0)",message="gpuType requires gpuCount > 0"
// +kubebuilder:validation:XValidation:rule="!has(self.gpuResource) || (has(self.gpuCount) && self.gpuCount > 0)",message="gpuResource requires gpuCount > 0"
type HardwareRequirements struct {
	// GPUCount is the number of nvidia.com/gpu devices requested (0-1024).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1024
	// +optional
	GPUCount int32 `json:"gpuCount,omitempty"`
	// GPUType is the GPU product, matched against the node label nvidia.com/gpu.product
	// (as GPU feature discovery sets it), e.g. "NVIDIA-A100-SXM4-80GB".
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`
	// +optional
	GPUType string `json:"gpuType,omitempty"`
	// GPUResource is the extended resource the gpuCount GPUs are requested as: nvidia.com/gpu
	// (the default) or a per-type resource such as nvidia.com/a100, as Hourglass requests
	// nvidia.com/<gpuType>, for clusters whose device plugin advertises GPUs by type (renamed
	// resources, MIG's mixed strategy: nvidia.com/mig-1g.10gb). The GPU node label and
	// toleration are the same either way.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	// +optional
	GPUResource string `json:"gpuResource,omitempty"`
	// TEERequired asks for a node with a trusted execution environment of TEEType.
	// +optional
	TEERequired bool `json:"teeRequired,omitempty"`
	// TEEType is the TEE technology: sgx, sev-snp or tdx.
	// +optional
	TEEType TEEType `json:"teeType,omitempty"`
	// CustomLabels are extra node labels the node must carry (added to the node selector): at
	// most 32, keys label keys, values at most 63 characters.
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="customLabels keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/')))",message="customLabels key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="customLabels values must be label values of at most 63 characters"
	// +optional
	CustomLabels map[string]string `json:"customLabels,omitempty"`
}

// PerformerStatus is the observed state of a Performer (the status contract, docs/guides/status-and-conditions.md).
type PerformerStatus struct {
	// ObservedGeneration is the metadata.generation this status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LastHandledReconcileAt is the gantry.dev/reconcileRequestedAt annotation's value the
	// reconciler saw when it computed this status ("" without the annotation): with
	// observedGeneration, it tells a waiting client that the status is about the object's
	// current labels too (a change of labels does not bump metadata.generation). Always
	// written, "" included: a status without the field is from a reconciler that predates the
	// handshake, whose waits then go by observedGeneration alone.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt"`
	// Phase is the one-word summary derived from Conditions.
	// +optional
	Phase PerformerPhase `json:"phase,omitempty"`
	// Conditions: Ready, Reconciling, Stalled (kstatus), Scheduled, ServiceReady, and
	// NetworkPolicyReady while spec.networkPolicy.enabled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// GRPCEndpoint is performer-<name>.<namespace>.svc.cluster.local:<grpcPort>.
	// +optional
	GRPCEndpoint string `json:"grpcEndpoint,omitempty"`
	// PodName is the name of the owned Pod: performer-<name>; with strategy RollingUpdate,
	// the Deployment's current Pod (empty while it has none): of several replicas, the newest
	// Ready one of the current spec (else the newest of the current spec).
	// +optional
	PodName string `json:"podName,omitempty"`
	// ServiceName is the name of the owned Service.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`
	// NodeName is the node the Pod (PodName) is bound to, once scheduled.
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// Image is the image of the Pod that is running now (differs from spec.image while Upgrading).
	// +optional
	Image string `json:"image,omitempty"`
	// LastUpgradeTime is when the last image/version change finished.
	// +optional
	LastUpgradeTime *metav1.Time `json:"lastUpgradeTime,omitempty"`
	// PodDisruptions counts the Pods that ended from outside (evicted, preempted, deleted,
	// their node shut down or gone) and bounds how many are waited through: more than 3 per
	// replica within 10 minutes is Stalled=True, reason PodDisruptedRepeatedly (PodDisruptions
	// has the rule). Absent until the first such Pod.
	// +optional
	PodDisruptions *PodDisruptions `json:"podDisruptions,omitempty"`
	// DesiredReplicas is the replicas asked for: 1 without spec.autoscaling; with it the
	// HorizontalPodAutoscaler's status.desiredReplicas (with an external autoscaler, the
	// Deployment's spec.replicas it sets).
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// CurrentReplicas is the performer's pods now (the Deployment's status.replicas; with
	// strategy Recreate 1 while the Pod exists).
	// +optional
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`
	// ReadyReplicas is the performer's Ready pods of the current spec.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// AllowedExecutors are the Executors (same namespace) whose pods the NetworkPolicy
	// performer-<name> admits, sorted by name, as last applied; absent without
	// spec.networkPolicy.enabled. The NetworkPolicyReady condition says whether it is applied.
	// +listType=set
	// +optional
	AllowedExecutors []string `json:"allowedExecutors,omitempty"`
}

// PerformerList is a list of Performers.
// +kubebuilder:object:root=true
type PerformerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Performer `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Performer{}, &PerformerList{})
}
