package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

const (
	// ContainerName is the executor container's name (Hourglass: "executor").
	ContainerName = "executor"
	// HealthPortName names the HTTP health port (/healthz, /readyz; Hourglass: 8080).
	HealthPortName = "health"
	// configVolume is the pod volume holding executor-config.yaml.
	configVolume = "config"
	// keysVolume is the pod volume holding the BLS keystore (operatorKeys.blsKeystoreKey).
	keysVolume = "operator-keys"
	// GRPCPortName and ManagementPortName name the executor's gRPC container ports.
	GRPCPortName       = "grpc"
	ManagementPortName = "management"
)

// GRPCPort is spec.grpcPort or v1alpha1.DefaultExecutorGRPCPort (9090).
func GRPCPort(e *v1alpha1.Executor) int32 {
	if e.Spec.GRPCPort == 0 {
		return v1alpha1.DefaultExecutorGRPCPort
	}
	return e.Spec.GRPCPort
}

// ManagementPort is spec.managementPort or v1alpha1.DefaultExecutorManagementPort (9091).
func ManagementPort(e *v1alpha1.Executor) int32 {
	if e.Spec.ManagementPort == 0 {
		return v1alpha1.DefaultExecutorManagementPort
	}
	return e.Spec.ManagementPort
}

// AccessName is the name of the ServiceAccount, Role and RoleBinding an Executor with
// spec.managePerformers runs with: executor-<name>.
func AccessName(executor string) string { return "executor-" + executor }

// DeploymentName is the name of an Executor's Deployment: executor-<name>.
func DeploymentName(executor string) string { return "executor-" + executor }

// ConfigMapName is the name of the ConfigMap of one config: executor-<name>-<first 10 hex
// digits of the config hash>. ConfigMaps are immutable and named by content, so every kept
// revision (and a rollback) mounts exactly the config it was rolled out with.
func ConfigMapName(executor, configHash string) string {
	return fmt.Sprintf("executor-%s-%s", executor, configHash[:10])
}

// SelectorLabels select an Executor's pods: gantry.dev/executor=<name>.
func SelectorLabels(e *v1alpha1.Executor) map[string]string {
	return map[string]string{v1alpha1.LabelExecutor: e.Name}
}

// Labels are the labels of owned objects: the selector labels plus managed-by.
func Labels(e *v1alpha1.Executor) map[string]string {
	return map[string]string{v1alpha1.LabelExecutor: e.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
}

// Selector is the pod label selector in string form (status.selector, scale subresource).
func Selector(e *v1alpha1.Executor) string {
	return labels.SelectorFromSet(SelectorLabels(e)).String()
}

// Replicas is spec.replicas or the default 1.
func Replicas(e *v1alpha1.Executor) int32 {
	if e.Spec.Replicas == nil {
		return v1alpha1.DefaultExecutorReplicas
	}
	return *e.Spec.Replicas
}

// RollbackEnabled is spec.rollback.onFailure, default true.
func RollbackEnabled(e *v1alpha1.Executor) bool {
	return e.Spec.Rollback.OnFailure == nil || *e.Spec.Rollback.OnFailure
}

// KeepRevisions is spec.rollback.keepRevisions, default 3.
func KeepRevisions(e *v1alpha1.Executor) int32 {
	if e.Spec.Rollback.KeepRevisions == nil {
		return v1alpha1.DefaultRollbackKeepRevisions
	}
	return *e.Spec.Rollback.KeepRevisions
}

// Config is the content of executor-config.yaml. It holds no key material: the signer
// section names the environment variables the keys arrive in (from Secret references) or
// the remote signer URL.
type Config struct {
	AggregatorEndpoint       string               `json:"aggregator_endpoint"`
	LogLevel                 string               `json:"log_level"`
	GRPCPort                 int32                `json:"grpc_port"`
	ManagementServerGRPCPort int32                `json:"management_server_grpc_port"`
	OperatorAddress          string               `json:"operator_address,omitempty"`
	Chains                   []ConfigChain        `json:"chains"`
	Performers               []ConfigPerformer    `json:"performers"`
	AVSPerformers            []ConfigAVSPerformer `json:"avs_performers,omitempty"`
	Signer                   ConfigSigner         `json:"signer"`
	Kubernetes               *ConfigKubernetes    `json:"kubernetes,omitempty"`
}

// ConfigAVSPerformer is one AVS the executor serves (Hourglass avsPerformers[]).
type ConfigAVSPerformer struct {
	AVSAddress          string            `json:"avs_address"`
	AVSRegistrarAddress string            `json:"avs_registrar_address,omitempty"`
	ProcessType         string            `json:"process_type"`
	Image               string            `json:"image,omitempty"`
	Env                 map[string]string `json:"env,omitempty"`
}

// ConfigKubernetes tells an executor with spec.managePerformers where and how to create its
// Performers (Hourglass's kubernetes section: namespace, CRD group and version, in-cluster
// credentials), plus the labels to put on each one.
type ConfigKubernetes struct {
	Namespace       string            `json:"namespace"`
	CRDGroup        string            `json:"crd_group"`
	CRDVersion      string            `json:"crd_version"`
	InCluster       bool              `json:"in_cluster"`
	PerformerLabels map[string]string `json:"performer_labels"`
}

// ConfigChain is one chain in executor-config.yaml.
type ConfigChain struct {
	Name               string `json:"name"`
	ChainID            int64  `json:"chain_id"`
	RPCURL             string `json:"rpc_url"`
	TaskMailboxAddress string `json:"task_mailbox_address"`
}

// ConfigPerformer is one performer endpoint in executor-config.yaml (Hourglass's service
// discovery: performer-<name>.<namespace>.svc.cluster.local:<port>).
type ConfigPerformer struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
}

// ConfigSigner says how the executor signs: "local" keys from the environment variables
// named here, or "remote" through RemoteSignerURL.
type ConfigSigner struct {
	Mode                   string `json:"mode"`
	ECDSAKeyEnv            string `json:"ecdsa_private_key_env,omitempty"`
	BLSKeyEnv              string `json:"bls_private_key_env,omitempty"`
	BLSKeystoreFile        string `json:"bls_keystore_file,omitempty"`
	BLSKeystorePasswordEnv string `json:"bls_keystore_password_env,omitempty"`
	RemoteSignerURL        string `json:"remote_signer_url,omitempty"`
}

// RenderConfig renders executor-config.yaml from the spec and the performer endpoints (in the
// given order) and returns it with its hash (hex SHA-256). Deterministic: the same inputs give
// the same bytes. In Hourglass compatibility mode it is RenderHourglassConfig (Hourglass's
// own format; the executor creates its own performers, so there are no endpoints), or with
// configFormat hourglass-executor-v1alpha1 RenderHourglassExecutorV1alpha1Config (the removed
// HourglassExecutor operator's format).
func RenderConfig(e *v1alpha1.Executor, endpoints []v1alpha1.PerformerEndpoint) (data string, hash string, err error) {
	if HourglassExecutorV1alpha1(e) {
		data, hash = RenderHourglassExecutorV1alpha1Config(e)
		return data, hash, nil
	}
	if HourglassCompat(e) {
		return RenderHourglassConfig(e)
	}
	c := Config{
		AggregatorEndpoint:       e.Spec.AggregatorEndpoint,
		LogLevel:                 string(e.Spec.LogLevel),
		GRPCPort:                 GRPCPort(e),
		ManagementServerGRPCPort: ManagementPort(e),
		OperatorAddress:          e.Spec.OperatorAddress,
		Chains:                   []ConfigChain{},
		Performers:               []ConfigPerformer{},
	}
	for _, a := range e.Spec.AVSPerformers {
		pt := a.ProcessType
		if pt == "" {
			pt = v1alpha1.DefaultProcessType
		}
		c.AVSPerformers = append(c.AVSPerformers, ConfigAVSPerformer{AVSAddress: a.AVSAddress, AVSRegistrarAddress: a.AVSRegistrarAddress,
			ProcessType: pt, Image: a.Image, Env: a.Env})
	}
	if e.Spec.ManagePerformers {
		c.Kubernetes = &ConfigKubernetes{Namespace: e.Namespace, CRDGroup: v1alpha1.GroupVersion.Group, CRDVersion: v1alpha1.GroupVersion.Version,
			InCluster: true, PerformerLabels: map[string]string{v1alpha1.LabelCreatedByExecutor: e.Name}}
	}
	if c.LogLevel == "" {
		c.LogLevel = v1alpha1.DefaultExecutorLogLevel
	}
	for _, ch := range e.Spec.Chains {
		c.Chains = append(c.Chains, ConfigChain{Name: ch.Name, ChainID: ch.ChainID, RPCURL: ch.RPCURL, TaskMailboxAddress: ch.TaskMailboxAddress})
	}
	for _, p := range endpoints {
		c.Performers = append(c.Performers, ConfigPerformer{Name: p.Name, Endpoint: p.Endpoint})
	}
	k := e.Spec.OperatorKeys
	if k.RemoteSignerURL != "" {
		c.Signer = ConfigSigner{Mode: "remote", RemoteSignerURL: k.RemoteSignerURL}
	} else {
		c.Signer = ConfigSigner{Mode: "local"}
		if k.ECDSAKey != "" {
			c.Signer.ECDSAKeyEnv = v1alpha1.ExecutorECDSAKeyEnv
		}
		if k.BLSKey != "" {
			c.Signer.BLSKeyEnv = v1alpha1.ExecutorBLSKeyEnv
		}
		if k.BLSKeystoreKey != "" {
			c.Signer.BLSKeystoreFile = v1alpha1.ExecutorKeystorePath
		}
		if k.BLSKeystorePasswordKey != "" {
			c.Signer.BLSKeystorePasswordEnv = v1alpha1.ExecutorBLSKeystorePasswordEnv
		}
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	return string(b), hex.EncodeToString(sum[:]), nil
}

// DesiredConfigMap is the immutable ConfigMap holding the config under ConfigKey
// (executor-config.yaml, or config.yaml in Hourglass compatibility mode), without owner
// reference (the controller adds it).
func DesiredConfigMap(e *v1alpha1.Executor, data, hash string) *corev1.ConfigMap {
	immutable := true
	return &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name: ConfigMapName(e.Name, hash), Namespace: e.Namespace, Labels: Labels(e),
			Annotations: map[string]string{v1alpha1.AnnotationConfigHash: hash},
		},
		Immutable: &immutable,
		Data:      map[string]string{ConfigKey(e): data},
	}
}

// DesiredDeployment builds the Deployment executor-<name> (no owner reference): replicas from
// the spec, a rolling update that keeps every old pod until a new one is available
// (maxUnavailable 0, maxSurge 1), spec.progressDeadlineSeconds, revisionHistoryLimit =
// keepRevisions. The pod template mounts the ConfigMap cmName at ConfigMountPath, carries the
// config hash, the operator keys version (spec.operatorKeys.secretVersion, so a key rotation
// rolls the pods) and the revision (SpecHash of the template) as annotations, the spec's
// podLabels, and gets the operator keys only as Secret references. Errors come from
// hardware.Place / ContainerResources (scheduling that cannot be honoured).
func DesiredDeployment(e *v1alpha1.Executor, cmName, configHash string) (*appsv1.Deployment, error) {
	pl, err := hardware.Place(v1alpha1.HardwareRequirements{}, e.Spec.Scheduling)
	if err != nil {
		return nil, err
	}
	res, err := pl.ContainerResources(e.Spec.Resources.Core())
	if err != nil {
		return nil, err
	}
	env, mounts, volumes := containerInputs(e, cmName)
	serviceAccount := ""
	if ManagesPerformers(e) {
		serviceAccount = AccessName(e.Name)
	}
	pullPolicy := e.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	podLabels := make(map[string]string, len(e.Spec.PodLabels)+2)
	for k, v := range e.Spec.PodLabels {
		podLabels[k] = v
	}
	for k, v := range Labels(e) {
		podLabels[k] = v
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      podLabels,
			Annotations: map[string]string{v1alpha1.AnnotationConfigHash: configHash},
		},
		Spec: corev1.PodSpec{
			ServiceAccountName: serviceAccount,
			ImagePullSecrets:   append([]corev1.LocalObjectReference(nil), e.Spec.ImagePullSecrets...),
			NodeSelector:       pl.NodeSelector,
			Tolerations:        pl.Tolerations,
			Affinity:           pl.Affinity,
			RuntimeClassName:   pl.RuntimeClassName,
			PriorityClassName:  pl.PriorityClassName,
			Containers:         []corev1.Container{executorContainer(e, pullPolicy, env, res, mounts)},
			Volumes:            volumes,
		},
	}
	if k := e.Spec.OperatorKeys; k.SecretName != "" && k.SecretVersion != "" {
		tmpl.Annotations[v1alpha1.AnnotationOperatorKeysVersion] = k.SecretVersion
	}
	rev, err := SpecHash(tmpl)
	if err != nil {
		return nil, err
	}
	tmpl.Annotations[v1alpha1.AnnotationSpecHash] = rev
	replicas := Replicas(e)
	deadline := v1alpha1.DefaultProgressDeadlineSeconds
	if e.Spec.ProgressDeadlineSeconds != nil {
		deadline = *e.Spec.ProgressDeadlineSeconds
	}
	history := KeepRevisions(e)
	maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromInt32(1)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: DeploymentName(e.Name), Namespace: e.Namespace, Labels: Labels(e)},
		Spec: appsv1.DeploymentSpec{
			Replicas:                &replicas,
			Selector:                &metav1.LabelSelector{MatchLabels: SelectorLabels(e)},
			Template:                tmpl,
			ProgressDeadlineSeconds: &deadline,
			RevisionHistoryLimit:    &history,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}},
		},
	}, nil
}

// containerInputs are the executor container's environment, volume mounts and the pod's
// volumes: the config (ConfigMap cmName at ConfigMountPath: /etc/gantry, or /etc/hourglass
// with configFormat hourglass-executor-v1alpha1) and the operator keys, only as Secret
// references. Gantry's format and hourglass-executor-v1alpha1: ECDSA_PRIVATE_KEY,
// BLS_PRIVATE_KEY, BLS_KEYSTORE_PASSWORD (secretKeyRef), REMOTE_SIGNER_URL, the BLS keystore
// mounted at /etc/gantry-keys/bls-keystore.json (the API server lets through only the first
// two for hourglass-executor-v1alpha1). Hourglass compatibility mode with Hourglass's current
// format (ponos): the variables HourglassKeyEnv names (the keystore too arrives as a variable, as
// Hourglass's inline signingKeys.bls.keystore).
func containerInputs(e *v1alpha1.Executor, cmName string) ([]corev1.EnvVar, []corev1.VolumeMount, []corev1.Volume) {
	mounts := []corev1.VolumeMount{{Name: configVolume, MountPath: ConfigMountPath(e), ReadOnly: true}}
	volumes := []corev1.Volume{{Name: configVolume, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cmName}}}}}
	if HourglassCompat(e) && !HourglassExecutorV1alpha1(e) {
		return HourglassKeyEnv(e.Spec.OperatorKeys), mounts, volumes
	}
	var env []corev1.EnvVar
	k := e.Spec.OperatorKeys
	secretEnv := func(name, key string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: k.SecretName}, Key: key}}}
	}
	if k.SecretName != "" && k.ECDSAKey != "" {
		env = append(env, secretEnv(v1alpha1.ExecutorECDSAKeyEnv, k.ECDSAKey))
	}
	if k.SecretName != "" && k.BLSKey != "" {
		env = append(env, secretEnv(v1alpha1.ExecutorBLSKeyEnv, k.BLSKey))
	}
	if k.SecretName != "" && k.BLSKeystorePasswordKey != "" {
		env = append(env, secretEnv(v1alpha1.ExecutorBLSKeystorePasswordEnv, k.BLSKeystorePasswordKey))
	}
	if k.RemoteSignerURL != "" {
		env = append(env, corev1.EnvVar{Name: v1alpha1.ExecutorRemoteSignerEnv, Value: k.RemoteSignerURL})
	}
	if k.SecretName != "" && k.BLSKeystoreKey != "" {
		mode := int32(0o400)
		mounts = append(mounts, corev1.VolumeMount{Name: keysVolume, MountPath: path.Dir(v1alpha1.ExecutorKeystorePath), ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: keysVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: k.SecretName, DefaultMode: &mode,
			Items: []corev1.KeyToPath{{Key: k.BLSKeystoreKey, Path: path.Base(v1alpha1.ExecutorKeystorePath)}}}}})
	}
	return env, mounts, volumes
}

// executorContainer is the executor container. Gantry's format: args --config=<file>, ports
// health (8080), grpc and management, HTTP probes /healthz and /readyz on health. Hourglass
// compatibility mode, as Hourglass's Helm chart runs the image: command "executor run
// --config /etc/gantry/config.yaml", ports grpc and management (no HTTP health server in
// Hourglass's executor, so no health port and no liveness probe), readiness a TCP check of
// the grpc port; with configFormat hourglass-executor-v1alpha1 as the HourglassExecutor
// operator ran it (hourglassExecutorV1alpha1Container).
func executorContainer(e *v1alpha1.Executor, pullPolicy corev1.PullPolicy, env []corev1.EnvVar, res corev1.ResourceRequirements, mounts []corev1.VolumeMount) corev1.Container {
	c := corev1.Container{
		Name:            ContainerName,
		Image:           e.Spec.Image,
		ImagePullPolicy: pullPolicy,
		Env:             env,
		Ports: []corev1.ContainerPort{
			{Name: GRPCPortName, ContainerPort: GRPCPort(e), Protocol: corev1.ProtocolTCP},
			{Name: ManagementPortName, ContainerPort: ManagementPort(e), Protocol: corev1.ProtocolTCP},
		},
		Resources:    res,
		VolumeMounts: mounts,
	}
	file := ConfigFile(e)
	if HourglassExecutorV1alpha1(e) {
		hourglassExecutorV1alpha1Container(&c, e)
		return c
	}
	if HourglassCompat(e) {
		c.Command = []string{hourglassCommand, "run", "--config", file}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(GRPCPortName)}}, PeriodSeconds: 10}
		return c
	}
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString(HealthPortName)}}, PeriodSeconds: 10}
	}
	c.Args = []string{"--config=" + file}
	c.Ports = append([]corev1.ContainerPort{{Name: HealthPortName, ContainerPort: v1alpha1.DefaultExecutorHealthPort, Protocol: corev1.ProtocolTCP}}, c.Ports...)
	c.LivenessProbe, c.ReadinessProbe = probe("/healthz"), probe("/readyz")
	return c
}

// Revision is the revision a pod template carries (its gantry.dev/spec-hash annotation).
func Revision(t *corev1.PodTemplateSpec) string { return t.Annotations[v1alpha1.AnnotationSpecHash] }

// SpecHash is the revision of a pod template: the first 16 hex digits of the SHA-256 of its
// JSON (labels, annotations, spec) before the revision annotation is added.
func SpecHash(t corev1.PodTemplateSpec) (string, error) {
	b, err := json.Marshal(t)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16], nil
}

// ConfigMapsReferenced returns the ConfigMap names a pod template mounts.
func ConfigMapsReferenced(t *corev1.PodTemplateSpec) []string {
	var out []string
	for _, v := range t.Spec.Volumes {
		if v.ConfigMap != nil {
			out = append(out, v.ConfigMap.Name)
		}
	}
	return out
}

// Refs returns the Secrets an Executor references, with the keys it reads: the operator key
// Secret (ecdsaKey, blsKey, blsKeystoreKey, blsKeystorePasswordKey) and the remote signer's
// TLS Secrets (caSecretName: ca.crt; clientCertSecretName: tls.crt, tls.key); nil without any. Exists and HasKey are left for
// the controller to fill in.
func Refs(e *v1alpha1.Executor) []failure.Ref {
	return OperatorKeyRefs(e.Namespace, e.Spec.OperatorKeys)
}

// OperatorKeyRefs returns the Secrets in namespace that operator keys k reference, with the
// keys read from each: k.SecretName (ecdsaKey, blsKey, blsKeystoreKey, blsKeystorePasswordKey)
// and the remote signer's TLS Secrets (caSecretName: ca.crt; clientCertSecretName: tls.crt,
// tls.key); nil without any. Exists and HasKey are left for the controller to fill in.
func OperatorKeyRefs(namespace string, k v1alpha1.OperatorKeys) []failure.Ref {
	var out []failure.Ref
	add := func(name string, keys ...string) {
		if name == "" {
			return
		}
		i := slices.IndexFunc(out, func(r failure.Ref) bool { return r.Name == name })
		if i < 0 {
			out = append(out, failure.Ref{Kind: "Secret", Namespace: namespace, Name: name})
			i = len(out) - 1
		}
		for _, key := range keys {
			if key != "" && !slices.Contains(out[i].Keys, key) {
				out[i].Keys = append(out[i].Keys, key)
			}
		}
	}
	add(k.SecretName, k.ECDSAKey, k.BLSKey, k.BLSKeystoreKey, k.BLSKeystorePasswordKey)
	if rs := k.RemoteSigner; rs != nil {
		add(rs.CASecretName, RemoteSignerCAKey)
		add(rs.ClientCertSecretName, RemoteSignerCertKey, RemoteSignerKeyKey)
	}
	return out
}

// PodProblems reads why the Deployment's pods do not run, one message per pod that cannot
// pull its image or start its container (the kubelet's reason and message verbatim, sorted
// by pod name): "pod executor-x-5d4-abc: container executor: ErrImagePull: ...".
func PodProblems(pods []corev1.Pod) []string {
	var out []string
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.ContainerStatuses {
			w := c.State.Waiting
			if w != nil && (failure.ImagePullReasons[w.Reason] || failure.ContainerStartReasons[w.Reason]) {
				msg := fmt.Sprintf("pod %s: container %s: %s", p.Name, c.Name, w.Reason)
				if w.Message != "" {
					msg += ": " + w.Message
				}
				if t := c.LastTerminationState.Terminated; t != nil {
					msg += fmt.Sprintf("; last terminated: %s (exit code %d)", t.Reason, t.ExitCode)
				}
				out = append(out, msg)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// Disruptions are the pods that ended from outside (failure.EndedFromOutside: evicted,
// preempted, their node shut down or gone), in the order given. Plain deletions
// (failure.DisruptionDeleted) are left out: the ReplicaSet controller deletes pods itself on
// every rollout and scale-down.
func Disruptions(pods []corev1.Pod) []failure.Disruption {
	var out []failure.Disruption
	for i := range pods {
		if d, ok := failure.EndedFromOutside(&pods[i]); ok && d.Reason != failure.DisruptionDeleted {
			out = append(out, d)
		}
	}
	return out
}

// DeploymentFacts reads the Deployment facts (nil when dep is nil); owner is the Executor's UID.
func DeploymentFacts(dep *appsv1.Deployment, owner types.UID) *Deployment {
	if dep == nil {
		return nil
	}
	ref := metav1.GetControllerOf(dep)
	f := &Deployment{
		Foreign:             ref == nil || ref.UID != owner,
		Deleting:            dep.DeletionTimestamp != nil,
		Revision:            Revision(&dep.Spec.Template),
		Generation:          dep.Generation,
		ObservedGeneration:  dep.Status.ObservedGeneration,
		Replicas:            1,
		StatusReplicas:      dep.Status.Replicas,
		UpdatedReplicas:     dep.Status.UpdatedReplicas,
		ReadyReplicas:       dep.Status.ReadyReplicas,
		AvailableReplicas:   dep.Status.AvailableReplicas,
		UnavailableReplicas: dep.Status.UnavailableReplicas,
	}
	if dep.Spec.Replicas != nil {
		f.Replicas = *dep.Spec.Replicas
	}
	for _, c := range dep.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			f.Image = c.Image
		}
	}
	for _, c := range dep.Status.Conditions {
		dc := DeploymentCondition{Status: c.Status, Reason: c.Reason, Message: c.Message}
		switch c.Type {
		case appsv1.DeploymentProgressing:
			f.Progressing = dc
		case appsv1.DeploymentReplicaFailure:
			f.ReplicaFailure = dc
		}
	}
	return f
}

// PerformerRefFacts reads one referenced Performer (nil: not found).
func PerformerRefFacts(name string, p *v1alpha1.Performer) PerformerRef {
	if p == nil {
		return PerformerRef{Name: name}
	}
	r := PerformerRef{Name: name, Found: true, Phase: p.Status.Phase, Endpoint: p.Status.GRPCEndpoint,
		Current: p.Status.ObservedGeneration == p.Generation}
	for _, c := range p.Status.Conditions {
		if c.Type == v1alpha1.ConditionStalled && c.Status == metav1.ConditionTrue {
			r.Reason, r.Message = c.Reason, c.Message
		}
	}
	return r
}

// Endpoints lists the endpoints of the referenced performers (all Running), in order.
func Endpoints(refs []PerformerRef) []v1alpha1.PerformerEndpoint {
	out := make([]v1alpha1.PerformerEndpoint, 0, len(refs))
	for _, r := range refs {
		out = append(out, v1alpha1.PerformerEndpoint{Name: r.Name, Endpoint: r.Endpoint})
	}
	return out
}

// SortedNames returns names sorted, without duplicates.
func SortedNames(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// DesiredAccess builds what an Executor with spec.managePerformers runs as (no owner
// references; the controller adds them): the ServiceAccount executor-<name>, the Role
// executor-<name> allowing exactly what Hourglass's executor RBAC allows on its performers
// (Performers: create, delete, get, list, patch, update, watch; their status: get; Pods and
// Services: get, list, watch, to see why a performer does not run), and the RoleBinding
// executor-<name> of the two. Namespaced: the executor cannot touch other namespaces.
func DesiredAccess(e *v1alpha1.Executor) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	meta := metav1.ObjectMeta{Name: AccessName(e.Name), Namespace: e.Namespace, Labels: Labels(e)}
	sa := &corev1.ServiceAccount{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"}, ObjectMeta: *meta.DeepCopy()}
	role := &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, ObjectMeta: *meta.DeepCopy(),
		Rules: accessRulesFor(e)}
	rb := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, ObjectMeta: *meta.DeepCopy(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: AccessName(e.Name)},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: AccessName(e.Name), Namespace: e.Namespace}}}
	return sa, role, rb
}

// accessRulesFor are the Role rules of DesiredAccess: AccessRules, or in Hourglass
// compatibility mode hourglassAccessRules.
func accessRulesFor(e *v1alpha1.Executor) []rbacv1.PolicyRule {
	if HourglassCompat(e) {
		return hourglassAccessRules()
	}
	return AccessRules()
}

// AccessRules are the Role rules of DesiredAccess for Gantry's Performers.
func AccessRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"performers"}, Verbs: []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
		{APIGroups: []string{v1alpha1.GroupVersion.Group}, Resources: []string{"performers/status"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods", "services"}, Verbs: []string{"get", "list", "watch"}},
	}
}

// AccessFacts reads the access objects' facts: each nil when absent; owner is the Executor's UID.
func AccessFacts(sa *corev1.ServiceAccount, role *rbacv1.Role, rb *rbacv1.RoleBinding, want *rbacv1.Role, wantRB *rbacv1.RoleBinding, owner types.UID) Access {
	var a Access
	var objs []metav1.Object
	if sa != nil {
		objs = append(objs, sa)
	}
	if role != nil {
		objs = append(objs, role)
	}
	if rb != nil {
		objs = append(objs, rb)
	}
	for _, o := range objs {
		a.Exists = true
		if ref := metav1.GetControllerOf(o); ref == nil || ref.UID != owner {
			a.Foreign = true
		}
	}
	a.UpToDate = sa != nil && role != nil && rb != nil && !a.Foreign &&
		equality.Semantic.DeepEqual(role.Rules, want.Rules) && rb.RoleRef == wantRB.RoleRef &&
		equality.Semantic.DeepEqual(rb.Subjects, wantRB.Subjects)
	return a
}

// ManagedPerformers lists the Performers an executor created (v1alpha1.LabelCreatedByExecutor),
// sorted by name, as status.managedPerformers shows them.
func ManagedPerformers(list []v1alpha1.Performer) []v1alpha1.ManagedPerformer {
	out := make([]v1alpha1.ManagedPerformer, 0, len(list))
	for i := range list {
		p := &list[i]
		out = append(out, v1alpha1.ManagedPerformer{Name: p.Name, Phase: p.Status.Phase, Endpoint: p.Status.GRPCEndpoint})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// References reports whether the Executor's spec.performers picks the Performer named name
// with labels lbls: spec.performers.names lists it or spec.performers.selector matches lbls
// (an invalid selector matches nothing).
func References(e *v1alpha1.Executor, name string, lbls map[string]string) bool {
	if slices.Contains(e.Spec.Performers.Names, name) {
		return true
	}
	if s := e.Spec.Performers.Selector; s != nil {
		sel, err := metav1.LabelSelectorAsSelector(s)
		return err == nil && sel.Matches(labels.Set(lbls))
	}
	return false
}
