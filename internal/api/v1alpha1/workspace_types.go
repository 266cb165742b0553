package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkspaceState is the high-level state of a Workspace (status.state), exactly as KAITO's
// "Workspace Status Field Proposal" defines it. It is derived from the
// WorkspaceSucceeded condition and never drives control flow.
//
//   - inference: Pending → Ready ↔ NotReady; once it leaves Pending it never returns there.
//   - tuning:    Pending → Running → Succeeded | Failed; Succeeded and Failed are terminal.
//
// +kubebuilder:validation:Enum=Pending;Ready;NotReady;Running;Succeeded;Failed
type WorkspaceState string

const (
	// WorkspaceStatePending is common to both modes: initializing (placing, pulling, starting).
	WorkspaceStatePending WorkspaceState = "Pending"

	// WorkspaceStateReady (inference): every replica is serving.
	WorkspaceStateReady WorkspaceState = "Ready"
	// WorkspaceStateNotReady (inference): an established workspace lost replicas; the
	// condition with status False gives the root cause.
	WorkspaceStateNotReady WorkspaceState = "NotReady"

	// WorkspaceStateRunning (tuning): the tuning Job is executing.
	WorkspaceStateRunning WorkspaceState = "Running"
	// WorkspaceStateSucceeded (tuning): the Job completed. Terminal.
	WorkspaceStateSucceeded WorkspaceState = "Succeeded"
	// WorkspaceStateFailed (tuning): the Job failed. Terminal.
	WorkspaceStateFailed WorkspaceState = "Failed"
)

// WorkspaceMode says which of spec.inference and spec.tuning is set (status.mode).
// +kubebuilder:validation:Enum=Inference;Tuning
type WorkspaceMode string

const (
	WorkspaceModeInference WorkspaceMode = "Inference"
	WorkspaceModeTuning    WorkspaceMode = "Tuning"
)

// TuningMethod is the fine-tuning method (KAITO's TuningSpec.method).
// +kubebuilder:validation:Enum=lora;qlora
type TuningMethod string

const (
	TuningLoRA  TuningMethod = "lora"
	TuningQLoRA TuningMethod = "qlora"
)

// DefaultInferencePort is the inference container and Service port when spec.inference.port
// is unset (8000, the OpenAI-compatible server port of vLLM).
const DefaultInferencePort int32 = 8000

// Workspace runs a model on GPU nodes: either an inference service (a Deployment of
// resource.count replicas plus a ClusterIP Service workspace-<name>) or a fine-tuning run (a
// Job workspace-<name>). Its status.state is KAITO's workspace state machine; unlike KAITO, a
// workspace the cluster cannot place is not silently Pending: ResourceReady=False says why and
// Stalled=True (KAITO's "Pending trap" made visible).
// Modelled on KAITO's Workspace.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wks,categories=gantry
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="GPUs",type=integer,JSONPath=`.spec.resource.gpuCount`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Current",type=integer,JSONPath=`.status.currentReplicas`
// +kubebuilder:printcolumn:name="Ready-Replicas",type=integer,JSONPath=`.status.readyReplicas`,priority=1
// +kubebuilder:printcolumn:name="ResourceReady",type=string,JSONPath=`.status.conditions[?(@.type=="ResourceReady")].status`
// +kubebuilder:printcolumn:name="InferenceReady",type=string,JSONPath=`.status.conditions[?(@.type=="InferenceReady")].status`
// +kubebuilder:printcolumn:name="JobStarted",type=string,JSONPath=`.status.conditions[?(@.type=="JobStarted")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 53 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label of at most 53 characters (it names the Service workspace-<name>)"
type Workspace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkspaceSpec   `json:"spec"`
	Status WorkspaceStatus `json:"status,omitempty"`
}

// WorkspaceSpec is the desired state of a Workspace: resource requirements plus exactly one of
// inference or tuning. The mode cannot change, and a tuning workspace's spec is immutable
// (its Job cannot be changed) except spec.tuning.releaseNodesOnSuccess: delete and re-create
// instead. The immutability rule names every field but that one (TestWorkspaceTuningImmutableRule
// in reconciler/ checks that a field added later is named too).
// +kubebuilder:validation:XValidation:rule="has(self.inference) != has(self.tuning)",message="exactly one of spec.inference or spec.tuning must be set"
// +kubebuilder:validation:XValidation:rule="has(self.inference) == has(oldSelf.inference)",message="the mode cannot change between inference and tuning: delete and re-create the workspace"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.tuning) || (has(self.tuning) && self.resource == oldSelf.resource && (has(self.scheduling) ? has(oldSelf.scheduling) && self.scheduling == oldSelf.scheduling : !has(oldSelf.scheduling)) && self.tuning.method == oldSelf.tuning.method && (has(self.tuning.preset) ? has(oldSelf.tuning.preset) && self.tuning.preset == oldSelf.tuning.preset : !has(oldSelf.tuning.preset)) && (has(self.tuning.baseModel) ? has(oldSelf.tuning.baseModel) && self.tuning.baseModel == oldSelf.tuning.baseModel : !has(oldSelf.tuning.baseModel)) && (has(self.tuning.image) ? has(oldSelf.tuning.image) && self.tuning.image == oldSelf.tuning.image : !has(oldSelf.tuning.image)) && self.tuning.input == oldSelf.tuning.input && self.tuning.output == oldSelf.tuning.output && (has(self.tuning.config) ? has(oldSelf.tuning.config) && self.tuning.config == oldSelf.tuning.config : !has(oldSelf.tuning.config)) && (has(self.tuning.backoffLimit) ? has(oldSelf.tuning.backoffLimit) && self.tuning.backoffLimit == oldSelf.tuning.backoffLimit : !has(oldSelf.tuning.backoffLimit)) && (has(self.tuning.accessMode) ? has(oldSelf.tuning.accessMode) && self.tuning.accessMode == oldSelf.tuning.accessMode : !has(oldSelf.tuning.accessMode)) && (has(self.tuning.imagePullSecrets) ? has(oldSelf.tuning.imagePullSecrets) && self.tuning.imagePullSecrets == oldSelf.tuning.imagePullSecrets : !has(oldSelf.tuning.imagePullSecrets)) && (has(self.tuning.modelAccessSecret) ? has(oldSelf.tuning.modelAccessSecret) && self.tuning.modelAccessSecret == oldSelf.tuning.modelAccessSecret : !has(oldSelf.tuning.modelAccessSecret)))",message="a tuning workspace's spec is immutable but for spec.tuning.releaseNodesOnSuccess (its Job cannot change): delete and re-create the workspace"
// +kubebuilder:validation:XValidation:rule="!has(self.tuning) || self.resource.count == 1",message="a tuning workspace runs one Job pod: spec.resource.count must be 1"
// +kubebuilder:validation:XValidation:rule="!has(self.resource.partition) || !has(self.resource.gpuCount) || self.resource.gpuCount == 0",message="spec.resource.partition gives each replica one MIG slice: spec.resource.gpuCount must be 0 or unset"
// +kubebuilder:validation:XValidation:rule="!has(self.resource.partition) || !has(self.inference) || !has(self.inference.modelGPUs) || self.inference.modelGPUs == 0",message="spec.inference.modelGPUs cannot be set with spec.resource.partition: a model is served from one MIG slice (as in KAITO)"
// +kubebuilder:validation:XValidation:rule="!has(self.resource.partition) || has(self.inference)",message="spec.resource.partition is not supported for tuning (as in KAITO)"
// +kubebuilder:validation:XValidation:rule="!has(self.resource.partition) || !has(self.resource.instanceType) || (has(self.resource.provisionNodes) && !self.resource.provisionNodes)",message="spec.resource.partition needs existing nodes (as in KAITO): set spec.resource.provisionNodes to false or drop spec.resource.instanceType"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || has(self.inference)",message="spec.autoscaling scales inference replicas: a tuning workspace runs one Job pod"
// +kubebuilder:validation:XValidation:rule="!has(self.resource.gpuProduct) || (has(self.resource.gpuCount) && self.resource.gpuCount > 0) || has(self.resource.instanceType) || (has(self.inference) && (has(self.inference.preset) || has(self.inference.modelSize) || has(self.inference.modelConfig))) || (has(self.tuning) && has(self.tuning.preset)) || has(self.resource.partition)",message="spec.resource.gpuProduct requires spec.resource.gpuCount > 0 (or an instance type, a preset, a model size or config, or a partition, which set it)"
type WorkspaceSpec struct {
	// Resource is what each replica needs and how many replicas there are.
	Resource WorkspaceResource `json:"resource"`

	// Inference serves a model (mutually exclusive with Tuning).
	// +optional
	Inference *WorkspaceInference `json:"inference,omitempty"`

	// Tuning fine-tunes a model (mutually exclusive with Inference).
	// +optional
	Tuning *WorkspaceTuning `json:"tuning,omitempty"`

	// Scheduling constrains where the pods may run, as for performers (node selector,
	// tolerations, affinity, runtime class, priority class); merged with what Resource implies.
	// +optional
	Scheduling Scheduling `json:"scheduling,omitempty"`

	// Autoscaling hands the inference replicas to an autoscaler (KAITO's autoscaling asks:
	// kaito-project/kaito #1380, the KEDA autoscaler, and #1659, the InferenceSet): a
	// HorizontalPodAutoscaler (autoscaling/v2) workspace-<name> the reconciler owns scales the
	// Deployment between minReplicas and maxReplicas on metric, or, with external, an
	// autoscaler of the user's (a KEDA ScaledObject targeting the Deployment workspace-<name>)
	// does. Either way the reconciler sets the Deployment's spec.replicas only when it creates it
	// (to minReplicas) and never writes it again, so it never takes the autoscaler's count back;
	// spec.resource.count is ignored. The workspace is Ready while at least minReplicas replicas
	// are. Inference only, not with a multi-node group (spec.inference.modelGPUs above one
	// replica's GPUs).
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`
}

// WorkspaceResource is the per-replica accelerator and node requirement (KAITO's ResourceSpec:
// instanceType becomes gpuProduct, labelSelector its matchLabels; count is the replica count).
type WorkspaceResource struct {
	// Count is the number of replicas (inference) — 1 for tuning. 1-64, default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=64
	// +kubebuilder:default=1
	// +optional
	Count int32 `json:"count,omitempty"`
	// GPUCount is the number of nvidia.com/gpu devices per replica (0-64); every replica's GPUs
	// are on one node.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=64
	// +optional
	GPUCount int32 `json:"gpuCount,omitempty"`
	// GPUProduct is the GPU product, matched against the node label nvidia.com/gpu.product
	// (GPU feature discovery), e.g. "NVIDIA-H100-80GB-HBM3".
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`
	// +optional
	GPUProduct string `json:"gpuProduct,omitempty"`
	// InstanceType is a cloud GPU instance type as KAITO's resource.instanceType writes it
	// (e.g. "Standard_NC24ads_A100_v4", "p4d.24xlarge"): replicas run on nodes labelled
	// node.kubernetes.io/instance-type=<it>, gpuCount defaults to the type's GPUs per node, and
	// a replica asking for more GPUs than one node of the type has is refused (InvalidSpec).
	// Known types and their GPUs: the Instance types guide; an unknown one stalls the
	// workspace naming the closest.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`
	// +optional
	InstanceType string `json:"instanceType,omitempty"`
	// ProvisionNodes (default true, as KAITO provisions by default) lets the reconciler create
	// nodes of instanceType when the matching Ready nodes have too few free GPUs for the
	// replicas: it creates Karpenter karpenter.sh/v1 NodeClaims (the engine KAITO's
	// gpu-provisioner is built on), labelled gantry.dev/workspace and
	// gantry.dev/workspace-namespace, annotated karpenter.sh/do-not-disrupt, tainted
	// sku=gpu:NoSchedule (which the workspace's pods tolerate), and deletes them with the
	// workspace. status.nodeClaims names them. Without Karpenter's NodeClaim API in the cluster
	// nothing is created and ResourceReady says so. Ignored without instanceType.
	// +kubebuilder:default=true
	// +optional
	ProvisionNodes *bool `json:"provisionNodes,omitempty"`
	// LabelSelector holds node labels (key → value) a node must carry to run a replica (at
	// most 32; keys label keys: optional DNS-subdomain prefix and '/', then a name of at most 63
	// characters; values at most 63 characters).
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([^/]+/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="labelSelector keys must be label keys: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.contains('/') || (k.indexOf('/') <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/')))",message="labelSelector key prefixes (before '/') must be DNS subdomains of at most 253 characters"
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="labelSelector values must be label values of at most 63 characters"
	// +optional
	LabelSelector map[string]string `json:"labelSelector,omitempty"`
	// LabelSelectorExpressions are node label requirements a node must also meet to run a
	// replica (KAITO's resource.labelSelector.matchExpressions): In and NotIn need values,
	// Exists and DoesNotExist take none. The pods get them as required node affinity (ANDed
	// into every term of spec.scheduling.affinity's required node selector terms), and the
	// capacity check counts only the nodes that meet them.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.operator in ['In', 'NotIn', 'Exists', 'DoesNotExist'])",message="labelSelectorExpressions: operator must be In, NotIn, Exists or DoesNotExist"
	// +kubebuilder:validation:XValidation:rule="self.all(r, r.operator in ['In', 'NotIn'] ? (has(r.values) && size(r.values) > 0) : (!has(r.values) || size(r.values) == 0))",message="labelSelectorExpressions: In and NotIn need values, Exists and DoesNotExist take none"
	// +optional
	LabelSelectorExpressions []LabelRequirement `json:"labelSelectorExpressions,omitempty"`
	// TEEType asks for nodes with this trusted execution environment (sgx, sev-snp, tdx), as
	// performers' hardwareRequirements.teeType does: the node-feature-discovery label and the
	// runtime class follow from it.
	// +optional
	TEEType TEEType `json:"teeType,omitempty"`
	// Partition runs each replica on one GPU partition instead of whole GPUs (KAITO's
	// resource.partition, mode "mig"): the pods request one nvidia.com/mig-<profile> (the
	// NVIDIA device plugin's resource under the GPU operator's "mixed" MIG strategy) instead of
	// nvidia.com/gpu, and tolerate a NoSchedule taint of that key, as KAITO's pods do; the
	// capacity check counts the matching nodes' free slices of the profile. As in
	// KAITO, gpuCount must be 0 (one slice per replica, no tensor parallelism across slices),
	// inference only, on existing nodes (no provisioned instance types).
	// +optional
	Partition *WorkspacePartition `json:"partition,omitempty"`
}

// PartitionMode is the GPU partitioning technology (KAITO's PartitionMode); only NVIDIA
// Multi-Instance GPU ("mig") is supported (KAITO's "accelerator" mode is resource.gpuCount).
// +kubebuilder:validation:Enum=mig
type PartitionMode string

// PartitionModeMIG partitions a GPU with NVIDIA Multi-Instance GPU.
const PartitionModeMIG PartitionMode = "mig"

// WorkspacePartition is KAITO's PartitionSpec for mode "mig".
type WorkspacePartition struct {
	// Mode is "mig" (NVIDIA Multi-Instance GPU).
	Mode PartitionMode `json:"mode"`
	// Profile is the MIG profile, <compute slices>g.<memory>gb as NVIDIA names them, e.g.
	// "1g.10gb", "3g.40gb" (the Terraform provider checks it against KAITO's list of known
	// profiles at plan).
	// +kubebuilder:validation:Pattern=`^[1-7]g\.[0-9]+(\.[0-9]+)?gb$`
	// +kubebuilder:validation:MaxLength=16
	Profile string `json:"profile"`
}

// WorkspaceInference serves a model (KAITO's InferenceSpec): a preset from Gantry's model
// catalog, or an explicit model and image.
// +kubebuilder:validation:XValidation:rule="has(self.preset) || (has(self.model) && (has(self.image) || self.model.contains('/')))",message="spec.inference needs a preset, or a model and an image (the image may be left out for a Hugging Face model ID, org/name)"
// +kubebuilder:validation:XValidation:rule="!has(self.modelSize) || !has(self.modelConfig)",message="spec.inference.modelSize and modelConfig are exclusive: give the size, or the config.json it is derived from"
// +kubebuilder:validation:XValidation:rule="!has(self.preset) || (!has(self.modelSize) && !has(self.modelConfig))",message="spec.inference.modelSize and modelConfig are for a model without a preset (a preset carries its own size)"
// +kubebuilder:validation:XValidation:rule="!has(self.accessMode) || self.accessMode != 'private' || has(self.image)",message="spec.inference.accessMode private needs spec.inference.image (the private preset image, KAITO's presetOptions.image)"
type WorkspaceInference struct {
	// Preset names a model of Gantry's preset catalog (KAITO's preset names, e.g.
	// "falcon-7b-instruct"; see the Model presets guide): it fills model, image, args and
	// resource.gpuCount (when 0) where they are empty. An unknown name stalls the workspace
	// (InvalidSpec) naming the closest presets.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9.-]{0,62}[a-z0-9])?$`
	// +optional
	Preset string `json:"preset,omitempty"`
	// Model is the model name, e.g. "falcon-7b-instruct" (passed to the container as MODEL_NAME);
	// default: the preset's.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9_./:-]{0,126}[A-Za-z0-9])?$`
	// +optional
	Model string `json:"model,omitempty"`
	// Image is the serving container image; default: the preset's.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`
	// Args are the container arguments.
	// +optional
	Args []string `json:"args,omitempty"`
	// ContainerName is the model server container's name (the name of the container in KAITO's
	// inference.template), a DNS label; default "model".
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +optional
	ContainerName string `json:"containerName,omitempty"`
	// Command is the container's entrypoint (the pod template's command, as in KAITO's
	// inference.template); default: the image's, or on a multi-node group of KAITO's vLLM
	// runtime KAITO's Ray command (modelGPUs). A command of its own runs on every pod of a
	// group, without Ray.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Command []string `json:"command,omitempty"`
	// ReadinessProbe replaces the default readiness check (a TCP connect to the port every
	// 10s), as a custom pod template in KAITO's inference.template would.
	// +optional
	ReadinessProbe *WorkspaceProbe `json:"readinessProbe,omitempty"`
	// LivenessProbe restarts the model server when it fails (default: none).
	// +optional
	LivenessProbe *WorkspaceProbe `json:"livenessProbe,omitempty"`
	// Volumes are mounted into the model server container (the volumes and volumeMounts of
	// KAITO's inference.template): each a ConfigMap, Secret or PersistentVolumeClaim of the
	// workspace's namespace, or an emptyDir. The ConfigMaps, Secrets and claims named must
	// exist (ReferenceNotFound otherwise).
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Volumes []WorkspaceVolume `json:"volumes,omitempty"`
	// ModelGPUs is how many GPUs the model needs in all (0-512; default: the preset's GPUs, else
	// resource.gpuCount). When it is more than one replica has (resource.gpuCount, or what
	// resource.instanceType's nodes have) and resource.count > 1, the replicas serve ONE model
	// together across count nodes, as KAITO's multi-node inference: a StatefulSet
	// workspace-<name> whose pod 0 is the leader and the others workers, with stable names,
	// GROUP_SIZE, RANK and POD_INDEX (the pod index) and LEADER_ADDRESS (pod 0's stable DNS
	// name through the headless Service workspace-<name>-group); the Service workspace-<name>
	// routes to the leader, and the workspace is Ready only when the whole group is. count ×
	// gpuCount must cover it. On KAITO's vLLM runtime (a preset or a Hugging Face model, with
	// no command of its own) the group runs KAITO's Ray cluster: the leader starts the Ray
	// head (/workspace/vllm/multi-node-serving.sh leader, port 6379) and then serves
	// (python3 /workspace/vllm/inference_api.py with the args and
	// --distributed-executor-backend=ray), the workers join the head at LEADER_ADDRESS; the
	// pods get KAITO's multi-node health check as startup, readiness and liveness probes
	// (readinessProbe and livenessProbe replace them), the Service also the ports ray (6379)
	// and dashboard (8265), and port cannot be 6379 or 8265.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=512
	// +optional
	ModelGPUs int32 `json:"modelGPUs,omitempty"`
	// Port is the container and Service port (1-65535, default 8000).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=8000
	// +optional
	Port int32 `json:"port,omitempty"`
	// Config is the name of a ConfigMap in the workspace's namespace, mounted at /mnt/config
	// (KAITO's inference.config). With a preset, as KAITO does, the ConfigMap must have the key
	// inference_config.yaml (ReferenceNotFound otherwise) and the model server gets
	// --kaito-config-file=/mnt/config/inference_config.yaml, the argument KAITO's vLLM
	// runtime reads its engine arguments from. Without a preset the file is only mounted: pass
	// it in args or command.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Config string `json:"config,omitempty"`
	// PerformanceMode is KAITO's vLLM performance preset (the kaito.sh/performance-mode
	// annotation): balanced (the default), interactivity (low per-request latency) or
	// throughput (aggregate tokens/s). With a preset, interactivity and throughput add
	// --performance-mode=<mode> to the model server's arguments, as KAITO does. Unset, the
	// Workspace's kaito.sh/performance-mode annotation is honoured the same way.
	// +kubebuilder:validation:Enum=balanced;interactivity;throughput
	// +optional
	PerformanceMode string `json:"performanceMode,omitempty"`
	// AccessMode is KAITO's preset accessMode: public (default) or private. Private means the
	// preset's image is in a private registry: image must name it (KAITO's
	// presetOptions.image) and imagePullSecrets usually hold its credentials.
	// +kubebuilder:validation:Enum=public;private
	// +optional
	AccessMode string `json:"accessMode,omitempty"`
	// ImagePullSecrets are names of docker-config Secrets in the workspace's namespace used to
	// pull image (KAITO's presetOptions.imagePullSecrets): the pods' imagePullSecrets. The
	// reconciler checks that they exist (ReferenceNotFound otherwise) and never reads them.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// ModelAccessSecret is the name of a Secret in the workspace's namespace whose key HF_TOKEN
	// holds a Hugging Face token (KAITO's presetOptions.modelAccessSecret): the model server
	// gets it as the environment variable HF_TOKEN to download gated weights. Required by gated
	// presets. The reconciler checks that the Secret and its key exist (ReferenceNotFound
	// otherwise) and never reads the value.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ModelAccessSecret string `json:"modelAccessSecret,omitempty"`
	// Adapters are LoRA adapters loaded beside the model.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Adapters []WorkspaceAdapter `json:"adapters,omitempty"`
	// ModelSize is the size of a Hugging Face model served without a preset (model "org/name"):
	// its parameters and dtype, or the GPU memory it needs. The GPUs per replica
	// (resource.gpuCount when 0) follow from it and the GPU's memory (the instance type's or
	// gpuProduct's); see workspace.EstimateModel.
	// +optional
	ModelSize *WorkspaceModelSize `json:"modelSize,omitempty"`
	// ModelConfig names the model's Hugging Face config.json in a ConfigMap of the workspace's
	// namespace; the model's size is derived from it as from modelSize (no network). A missing
	// ConfigMap or key, or a config.json the estimator cannot read, stalls the workspace
	// (InvalidSpec) naming spec.inference.modelConfig.
	// +optional
	ModelConfig *WorkspaceModelConfig `json:"modelConfig,omitempty"`
}

// WorkspaceModelSize is a model's size given by hand: parameters (with dtype), or gpuMemory.
// +kubebuilder:validation:XValidation:rule="has(self.parameters) != has(self.gpuMemory)",message="spec.inference.modelSize needs exactly one of parameters and gpuMemory"
type WorkspaceModelSize struct {
	// Parameters is the parameter count with a K, M, B or T suffix, e.g. "7B", "8.03B", "500M".
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?[KMBT]$`
	// +optional
	Parameters string `json:"parameters,omitempty"`
	// DType is the weights' data type (default bfloat16): float32, float16, bfloat16, fp8, int8
	// or int4.
	// +kubebuilder:validation:Enum=float32;float16;bfloat16;fp8;int8;int4
	// +optional
	DType string `json:"dtype,omitempty"`
	// GPUMemory is the GPU memory one copy of the model needs in all, a quantity ("40Gi"),
	// instead of parameters.
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?(Mi|Gi|Ti|M|G|T)$`
	// +optional
	GPUMemory string `json:"gpuMemory,omitempty"`
}

// WorkspaceModelConfig is a ConfigMap key holding a Hugging Face config.json.
type WorkspaceModelConfig struct {
	// ConfigMap is the ConfigMap's name, in the workspace's namespace.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ConfigMap string `json:"configMap"`
	// Key is the key holding config.json (default "config.json").
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// WorkspaceProbe is a container probe: an HTTP GET of httpPath on port, or a command run in
// the container (exactly one).
// +kubebuilder:validation:XValidation:rule="has(self.httpPath) != has(self.exec)",message="a probe needs exactly one of httpPath and exec"
// +kubebuilder:validation:XValidation:rule="!has(self.port) || has(self.httpPath)",message="a probe's port goes with httpPath"
type WorkspaceProbe struct {
	// HTTPPath is the path of an HTTP GET that must answer 200-399, e.g. "/health" (KAITO's
	// model servers' probe path).
	// +kubebuilder:validation:Pattern=`^/\S*$`
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	HTTPPath string `json:"httpPath,omitempty"`
	// Port is the HTTP GET's port (1-65535); default: the inference port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// Exec is a command run in the container that must exit 0.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Exec []string `json:"exec,omitempty"`
	// InitialDelaySeconds before the first probe (0-3600, default 0).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	// PeriodSeconds between probes (1-3600, default 10).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	// FailureThreshold is the consecutive failures that count as failed (1-100, default 3).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	FailureThreshold int32 `json:"failureThreshold,omitempty"`
}

// WorkspaceVolume is a volume mounted into the model server: exactly one of configMap, secret,
// pvc and emptyDir.
// +kubebuilder:validation:XValidation:rule="[has(self.configMap), has(self.secret), has(self.pvc), has(self.emptyDir) && self.emptyDir].filter(x, x).size() == 1",message="a volume needs exactly one of configMap, secret, pvc and emptyDir"
// +kubebuilder:validation:XValidation:rule="(!has(self.medium) && !has(self.sizeLimit)) || (has(self.emptyDir) && self.emptyDir)",message="a volume's medium and sizeLimit go with emptyDir"
type WorkspaceVolume struct {
	// Name of the volume, a DNS label; not "config" (spec.inference.config's volume).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'config'",message="the volume name config is spec.inference.config's"
	Name string `json:"name"`
	// MountPath is the absolute path it is mounted at in the container.
	// +kubebuilder:validation:Pattern=`^/.*$`
	// +kubebuilder:validation:MaxLength=1024
	MountPath string `json:"mountPath"`
	// ReadOnly mounts it read-only (ConfigMaps and Secrets are always read-only).
	// +optional
	ReadOnly bool `json:"readOnly,omitempty"`
	// ConfigMap is a ConfigMap's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ConfigMap string `json:"configMap,omitempty"`
	// Secret is a Secret's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Secret string `json:"secret,omitempty"`
	// PVC is a PersistentVolumeClaim's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	PVC string `json:"pvc,omitempty"`
	// EmptyDir is a scratch directory that lives as long as the pod.
	// +optional
	EmptyDir bool `json:"emptyDir,omitempty"`
	// Medium is the emptyDir's storage medium: Memory (a tmpfs, e.g. the /dev/shm KAITO's
	// inference templates give vLLM) or unset (the node's disk). With emptyDir only.
	// +kubebuilder:validation:Enum=Memory
	// +optional
	Medium string `json:"medium,omitempty"`
	// SizeLimit is the emptyDir's size limit, a quantity above 0 such as "8Gi" (a Memory
	// medium's counts against the container's memory). With emptyDir only.
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0.]+[A-Za-z]*$')",message="sizeLimit must be above 0"
	// +optional
	SizeLimit string `json:"sizeLimit,omitempty"`
}

// WorkspaceAdapter is one adapter (KAITO's AdapterSpec): an image holding its weights.
type WorkspaceAdapter struct {
	// Name of the adapter.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	Name string `json:"name"`
	// Image holding the adapter's weights.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`
	// Strength is the adapter's weight, a decimal in [0, 1] such as "0.5" (default "1.0").
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]+)?|1(\.0+)?)$`
	// +optional
	Strength string `json:"strength,omitempty"`
}

// WorkspaceTuning fine-tunes a base model (KAITO's TuningSpec): a preset that can be tuned,
// or an explicit base model and image.
// +kubebuilder:validation:XValidation:rule="has(self.preset) || (has(self.baseModel) && has(self.image))",message="spec.tuning needs a preset, or a baseModel and an image"
// +kubebuilder:validation:XValidation:rule="!has(self.accessMode) || self.accessMode != 'private' || has(self.image)",message="spec.tuning.accessMode private needs spec.tuning.image (the private tuning image, KAITO's presetOptions.image)"
type WorkspaceTuning struct {
	// Method is lora or qlora.
	Method TuningMethod `json:"method"`
	// Preset names a model of Gantry's preset catalog that can be fine-tuned (see the Model
	// presets guide): it fills baseModel, image and resource.gpuCount (when 0) where empty.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([a-z0-9.-]{0,62}[a-z0-9])?$`
	// +optional
	Preset string `json:"preset,omitempty"`
	// BaseModel is the model to tune, e.g. "phi-3-mini-4k-instruct"; default: the preset's.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9]([A-Za-z0-9_./:-]{0,126}[A-Za-z0-9])?$`
	// +optional
	BaseModel string `json:"baseModel,omitempty"`
	// Image is the tuning container image; default: the preset's.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`
	// AccessMode is KAITO's tuning preset accessMode (deprecated in KAITO v1beta1, still
	// written by its fine-tuning examples): public (default) or private. Private means the
	// tuning image is in a private registry: image must name it (KAITO's presetOptions.image)
	// and imagePullSecrets usually hold its credentials, as KAITO's tuning Job took them.
	// +kubebuilder:validation:Enum=public;private
	// +optional
	AccessMode string `json:"accessMode,omitempty"`
	// ImagePullSecrets are names of docker-config Secrets in the workspace's namespace used to
	// pull image (KAITO's tuning presetOptions.imagePullSecrets): the tuning Job pod's
	// imagePullSecrets. The reconciler checks that they exist (ReferenceNotFound otherwise)
	// and never reads them.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +listType=set
	// +optional
	ImagePullSecrets []string `json:"imagePullSecrets,omitempty"`
	// ModelAccessSecret is the name of a Secret in the workspace's namespace whose key HF_TOKEN
	// holds a Hugging Face token (KAITO's presetOptions.modelAccessSecret): the tuning container
	// gets it as the environment variable HF_TOKEN, as KAITO's model servers do, to download a
	// gated base model. The reconciler checks that the Secret and its key exist
	// (ReferenceNotFound otherwise) and never reads the value.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ModelAccessSecret string `json:"modelAccessSecret,omitempty"`
	// Input is the training data.
	Input WorkspaceDataSource `json:"input"`
	// Output is where the tuned adapter goes.
	Output WorkspaceDataDestination `json:"output"`
	// Config is the name of a ConfigMap with tuning parameters, mounted at /mnt/config.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	Config string `json:"config,omitempty"`
	// BackoffLimit is the number of retries of a failed tuning pod before the run is Failed
	// (0-10, default 0: a tuning run fails on its first pod failure).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=0
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// ReleaseNodesOnSuccess releases the GPU nodes the workspace provisioned once the tuning
	// run has Succeeded (kaito-project/kaito #1107): the reconciler deletes its Karpenter
	// NodeClaims (spec.resource.provisionNodes) and Karpenter removes their nodes, while the
	// Workspace, its Job and the output stay; the workspace stays Succeeded, with
	// ResourceReady=False reason NodesReleased naming the claims, and no claim is made again.
	// A Failed run keeps its nodes (to inspect them). The only field of a tuning workspace
	// that may change: set on a Succeeded workspace, it releases the nodes then. Default false.
	// +optional
	ReleaseNodesOnSuccess bool `json:"releaseNodesOnSuccess,omitempty"`
}

// WorkspaceDataSource is the tuning input: exactly one of URLs, an image with the data, or a
// PersistentVolumeClaim (KAITO's DataSource urls, image, volumeSource).
// +kubebuilder:validation:XValidation:rule="[has(self.urls), has(self.image), has(self.pvc)].filter(x, x).size() == 1",message="exactly one of input.urls, input.image or input.pvc must be set"
type WorkspaceDataSource struct {
	// URLs of the training data (https).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^https://\S+$`
	// +optional
	URLs []string `json:"urls,omitempty"`
	// Image holding the training data under /data.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`
	// PVC is a PersistentVolumeClaim in the workspace's namespace holding the training data,
	// mounted read-only at /mnt/input (INPUT_DIR).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	PVC string `json:"pvc,omitempty"`
}

// WorkspaceDataDestination is where the tuned adapter goes: an image pushed to a registry or
// a PersistentVolumeClaim (exactly one; KAITO's DataDestination image, volumeSource).
// +kubebuilder:validation:XValidation:rule="has(self.image) != has(self.pvc)",message="exactly one of output.image or output.pvc must be set"
type WorkspaceDataDestination struct {
	// Image is the reference the adapter image is pushed to, e.g. "registry.example/adapters/x:1".
	// +kubebuilder:validation:MinLength=1
	// +optional
	Image string `json:"image,omitempty"`
	// PVC is a PersistentVolumeClaim in the workspace's namespace the adapter is written to,
	// mounted read-write at /mnt/output (OUTPUT_DIR).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	PVC string `json:"pvc,omitempty"`
	// ImagePushSecret is the name of a Secret (docker config) in the workspace's namespace used
	// to push; only the name is stored, never the credentials.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +optional
	ImagePushSecret string `json:"imagePushSecret,omitempty"`
}

// WorkspaceStatus is the observed state of a Workspace (the status contract, docs/guides/status-and-conditions.md).
type WorkspaceStatus struct {
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
	// State is KAITO's high-level workspace state, derived from the WorkspaceSucceeded condition.
	// +optional
	State WorkspaceState `json:"state,omitempty"`
	// Mode is Inference or Tuning (from the spec).
	// +optional
	Mode WorkspaceMode `json:"mode,omitempty"`
	// Conditions: Ready, Reconciling, Stalled (kstatus), ResourceReady, InferenceReady
	// (inference) or JobStarted (tuning), WorkspaceSucceeded.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// NodeClaims are the Karpenter NodeClaims (karpenter.sh/v1, cluster-scoped) the reconciler
	// created for this workspace (spec.resource.provisionNodes), sorted; deleted with it.
	// +optional
	NodeClaims []string `json:"nodeClaims,omitempty"`
	// WorkerNodes are the nodes the workspace's pods are bound to, sorted.
	// +optional
	WorkerNodes []string `json:"workerNodes,omitempty"`
	// GroupSize is the number of pods serving one model together (multi-node inference,
	// spec.inference.modelGPUs); 0 when the replicas are independent copies.
	// +optional
	GroupSize int32 `json:"groupSize,omitempty"`
	// LeaderAddress is the multi-node group leader's stable address (pod 0 through the
	// headless Service), "" without a group.
	// +optional
	LeaderAddress string `json:"leaderAddress,omitempty"`
	// ReadyReplicas is the number of inference replicas Ready on a Ready node.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// CurrentReplicas (inference) is the pods the workload has now (its status.replicas).
	// +optional
	CurrentReplicas int32 `json:"currentReplicas,omitempty"`
	// DesiredReplicas (inference) is the replicas asked for: under spec.autoscaling the
	// HorizontalPodAutoscaler's status.desiredReplicas (with an external autoscaler, the
	// Deployment's spec.replicas it sets), else spec.resource.count.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`
	// Endpoint (inference) is workspace-<name>.<namespace>.svc.cluster.local:<port>.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// WorkloadName is the owned Deployment (inference) or Job (tuning): workspace-<name>.
	// +optional
	WorkloadName string `json:"workloadName,omitempty"`
	// PodDisruptions counts the Pods that ended from outside (evicted, preempted, deleted,
	// their node shut down or gone) and bounds how many are waited through: more than 3 per
	// replica within 10 minutes is Stalled=True, reason PodDisruptedRepeatedly (PodDisruptions
	// has the rule). Absent until the first such Pod.
	// +optional
	PodDisruptions *PodDisruptions `json:"podDisruptions,omitempty"`
}

// WorkspaceList is a list of Workspaces.
// +kubebuilder:object:root=true
type WorkspaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workspace `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Workspace{}, &WorkspaceList{})
}

// LabelRequirement is one node label requirement (metav1.LabelSelectorRequirement's fields
// and JSON), bounded so the CRD itself can check its key and values with CEL: a label key of
// at most 317 characters (an optional DNS subdomain prefix of at most 253 and '/', then a name
// of at most 63), at most 64 values of at most 63 characters each.
// +kubebuilder:validation:XValidation:rule="self.key.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$')",message="key must be a label key: a name of at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit, optionally after a DNS subdomain prefix and '/'"
// +kubebuilder:validation:XValidation:rule="!has(self.values) || self.values.all(v, v.matches('^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$'))",message="values must be label values: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
type LabelRequirement struct {
	// Key is the node label key.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	Key string `json:"key"`
	// Operator is In, NotIn, Exists or DoesNotExist.
	Operator metav1.LabelSelectorOperator `json:"operator"`
	// Values are the label values (In and NotIn).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	Values []string `json:"values,omitempty"`
}

// Requirements is the requirements as metav1 label selector requirements.
func Requirements(rs []LabelRequirement) []metav1.LabelSelectorRequirement {
	if rs == nil {
		return nil
	}
	out := make([]metav1.LabelSelectorRequirement, len(rs))
	for i, r := range rs {
		out[i] = metav1.LabelSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
	}
	return out
}

// LabelRequirements is rs as LabelRequirements.
func LabelRequirements(rs []metav1.LabelSelectorRequirement) []LabelRequirement {
	if rs == nil {
		return nil
	}
	out := make([]LabelRequirement, len(rs))
	for i, r := range rs {
		out[i] = LabelRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values}
	}
	return out
}
