package aggregator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// Upstream: Layr-Labs/hourglass-monorepo@11f1554, ponos/charts/hourglass (templates
// aggregatorStatefulSet.yaml, aggregatorService.yaml, aggregatorSecret.yaml, values.yaml
// aggregator.*), ponos/pkg/aggregator/aggregatorConfig/aggregatorConfig.go (the config) and
// ponos/cmd/aggregator (the loader: viper with the env prefix EXECUTOR_, as the executor's).
const (
	// ContainerName is the aggregator container's name (the chart: aggregator.name, "aggregator").
	ContainerName = "aggregator"
	// ManagementPortName names the management gRPC port (the chart's aggregator.ports[0].name).
	ManagementPortName = "management-grpc"
	// configVolume is the pod volume holding the config Secret (the chart: aggregator-config).
	configVolume = "aggregator-config"
	// DataVolume is the volumeClaimTemplate of spec.persistence.
	DataVolume = "data"
	// command is the aggregator binary of Hourglass's image (the chart's aggregator.command).
	command = "aggregator"
	// StorageMemory and StorageBadger are Hourglass's storage.type values.
	StorageMemory = "memory"
	StorageBadger = "badger"
)

// StatefulSetName is the name of an Aggregator's StatefulSet and Service: aggregator-<name>.
func StatefulSetName(agg string) string { return "aggregator-" + agg }

// ServiceName is the name of the headless Service: aggregator-<name>, the StatefulSet's serviceName.
func ServiceName(agg string) string { return "aggregator-" + agg }

// SecretName is the name of the config Secret: aggregator-<name>-config.
func SecretName(agg string) string { return "aggregator-" + agg + "-config" }

// PodName is the name of the StatefulSet's one pod: aggregator-<name>-0.
func PodName(agg string) string { return StatefulSetName(agg) + "-0" }

// ClaimName is the name of the PersistentVolumeClaim the StatefulSet makes from spec.persistence
// for its pod: data-aggregator-<name>-0 (<template>-<pod>, Kubernetes's rule).
func ClaimName(agg string) string { return DataVolume + "-" + PodName(agg) }

// Revision is the revision a StatefulSet's pod template carries (executor.Revision: its
// gantry.dev/spec-hash annotation).
func Revision(sts *appsv1.StatefulSet) string { return executor.Revision(&sts.Spec.Template) }

// SelectorLabels select an Aggregator's pod: gantry.dev/aggregator=<name>.
func SelectorLabels(a *v1alpha1.Aggregator) map[string]string {
	return map[string]string{v1alpha1.LabelAggregator: a.Name}
}

// Labels are the labels of owned objects and the pod: the selector labels plus managed-by.
func Labels(a *v1alpha1.Aggregator) map[string]string {
	return map[string]string{v1alpha1.LabelAggregator: a.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
}

// ManagementPort is spec.managementPort or v1alpha1.DefaultAggregatorManagementPort (9000).
func ManagementPort(a *v1alpha1.Aggregator) int32 {
	if a.Spec.ManagementPort == 0 {
		return v1alpha1.DefaultAggregatorManagementPort
	}
	return a.Spec.ManagementPort
}

// Endpoint is the management gRPC endpoint through the headless Service:
// aggregator-<name>.<namespace>.svc.cluster.local:<port>.
func Endpoint(a *v1alpha1.Aggregator) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local:%d", ServiceName(a.Name), a.Namespace, ManagementPort(a))
}

// Config is Hourglass's aggregator config (ponos aggregatorConfig.AggregatorConfig) as YAML,
// with the same keys and only the fields Gantry sets. Left unset, as in Hourglass's sample
// configs: tlsEnabled, contracts and overrideContracts (embedded per chain ID), authentication
// (off).
type Config struct {
	Debug                    bool                       `json:"debug"`
	ManagementServerGRPCPort int32                      `json:"managementServerGrpcPort"`
	Operator                 executor.HourglassOperator `json:"operator"`
	L1ChainID                int64                      `json:"l1ChainId"`
	Chains                   []ConfigChain              `json:"chains"`
	AVSs                     []ConfigAVS                `json:"avss"`
	Storage                  ConfigStorage              `json:"storage"`
}

// ConfigChain is ponos aggregatorConfig.Chain.
type ConfigChain struct {
	Name                string `json:"name"`
	ChainID             int64  `json:"chainId"`
	RPCURL              string `json:"rpcUrl"`
	PollIntervalSeconds int32  `json:"pollIntervalSeconds"`
}

// ConfigAVS is ponos aggregatorConfig.AggregatorAvs.
type ConfigAVS struct {
	Address  string  `json:"address"`
	ChainIDs []int64 `json:"chainIds"`
}

// ConfigStorage is ponos aggregatorConfig.StorageConfig.
type ConfigStorage struct {
	Type string `json:"type"`
	// Badger and BadgerConfig carry the same directory under both keys: Hourglass's YAML
	// parser reads the field's tag (badger), while its aggregator's config loader (viper, in
	// ponos/cmd/aggregator) matches keys to field names (BadgerConfig) and fails its own
	// validation ("badger config is required") without it.
	Badger       *ConfigBadger `json:"badger,omitempty"`
	BadgerConfig *ConfigBadger `json:"badgerConfig,omitempty"`
}

// ConfigBadger is ponos aggregatorConfig.BadgerConfig with its directory only (Hourglass's
// defaults for the rest).
type ConfigBadger struct {
	Dir string `json:"dir"`
}

// RenderConfig renders config.yaml in Hourglass's format (Config) and returns it with its hash
// (hex SHA-256). Deterministic. Mapping: debug from spec.debug; managementServerGrpcPort from
// ManagementPort; operator from spec.operatorAddress and spec.operatorKeys
// (executor.HourglassOperatorOf: empty key placeholders, or the remote signer); l1ChainId;
// chains in spec order with pollIntervalSeconds (default 2); avss in spec order; storage
// memory, or with spec.persistence badger in /var/lib/ponos/aggregator/badger. The error is
// the YAML encoder's.
func RenderConfig(a *v1alpha1.Aggregator) (data string, hash string, err error) {
	s := a.Spec
	c := Config{
		Debug:                    s.Debug,
		ManagementServerGRPCPort: ManagementPort(a),
		Operator:                 executor.HourglassOperatorOf(s.OperatorAddress, s.OperatorKeys),
		L1ChainID:                s.L1ChainID,
		Chains:                   []ConfigChain{},
		AVSs:                     []ConfigAVS{},
		Storage:                  ConfigStorage{Type: StorageMemory},
	}
	for _, ch := range s.Chains {
		poll := ch.PollIntervalSeconds
		if poll == 0 {
			poll = v1alpha1.DefaultAggregatorPollIntervalSeconds
		}
		c.Chains = append(c.Chains, ConfigChain{Name: ch.Name, ChainID: ch.ChainID, RPCURL: ch.RPCURL, PollIntervalSeconds: poll})
	}
	for _, avs := range s.AVSs {
		c.AVSs = append(c.AVSs, ConfigAVS{Address: avs.Address, ChainIDs: append([]int64{}, avs.ChainIDs...)})
	}
	if s.Persistence != nil {
		badger := &ConfigBadger{Dir: v1alpha1.AggregatorBadgerDir}
		c.Storage = ConfigStorage{Type: StorageBadger, Badger: badger, BadgerConfig: badger}
	}
	b, err := yaml.Marshal(c)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(b)
	return string(b), hex.EncodeToString(sum[:]), nil
}

// DesiredSecret is the config Secret aggregator-<name>-config holding config.yaml (Opaque, as
// the chart's aggregatorSecret.yaml), with the config hash as annotation and no owner reference
// (the controller adds it). It holds no key material (RenderConfig).
func DesiredSecret(a *v1alpha1.Aggregator, data, hash string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName(a.Name), Namespace: a.Namespace, Labels: Labels(a),
			Annotations: map[string]string{v1alpha1.AnnotationConfigHash: hash}},
		Type:       corev1.SecretTypeOpaque,
		StringData: map[string]string{v1alpha1.AggregatorConfigKey: data},
	}
}

// SecretUpToDate reports whether a live config Secret holds the desired config (its
// config-hash annotation and its config.yaml bytes).
func SecretUpToDate(live *corev1.Secret, want *corev1.Secret) bool {
	return live.Annotations[v1alpha1.AnnotationConfigHash] == want.Annotations[v1alpha1.AnnotationConfigHash] &&
		string(live.Data[v1alpha1.AggregatorConfigKey]) == want.StringData[v1alpha1.AggregatorConfigKey] && live.Type == want.Type
}

// DesiredService is the headless Service aggregator-<name> (clusterIP None, as the chart's
// aggregatorService.yaml) with the port management-grpc, without owner reference.
func DesiredService(a *v1alpha1.Aggregator) *corev1.Service {
	port := ManagementPort(a)
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName(a.Name), Namespace: a.Namespace, Labels: Labels(a)},
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  SelectorLabels(a),
			Ports: []corev1.ServicePort{{Name: ManagementPortName, Protocol: corev1.ProtocolTCP, Port: port,
				TargetPort: intstr.FromInt32(port)}},
		},
	}
}

// ServiceUpToDate reports whether a live Service has the desired selector, ports and headless
// cluster IP (what DesiredService sets; the API server's defaults are not compared).
func ServiceUpToDate(live, want *corev1.Service) bool {
	if live.Spec.ClusterIP != want.Spec.ClusterIP || !equality.Semantic.DeepEqual(live.Spec.Selector, want.Spec.Selector) ||
		len(live.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for i, p := range want.Spec.Ports {
		l := live.Spec.Ports[i]
		if l.Name != p.Name || l.Port != p.Port || l.Protocol != p.Protocol || l.TargetPort != p.TargetPort {
			return false
		}
	}
	return true
}

// DesiredStatefulSet builds the StatefulSet aggregator-<name> (no owner reference) as Hourglass's
// chart does: one replica running "aggregator run" on the mounted config Secret, keys from the
// Secret as environment variables, a TCP readiness probe (the aggregator serves no HTTP), and
// spec.persistence as a volume claim deleted with the StatefulSet. Beyond the chart:
// podManagementPolicy Parallel, so a spec change replaces a pod that never became Ready
// (OrderedReady would wait forever), and the config hash, key version and revision as pod
// annotations so a change rolls the pod. Errors are hardware.ContainerResources' or the hash's.
func DesiredStatefulSet(a *v1alpha1.Aggregator, configHash string) (*appsv1.StatefulSet, error) {
	pl, err := hardware.Place(v1alpha1.HardwareRequirements{}, v1alpha1.Scheduling{})
	if err != nil {
		return nil, err
	}
	res, err := pl.ContainerResources(a.Spec.Resources.Core())
	if err != nil {
		return nil, err
	}
	pullPolicy := a.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	file := v1alpha1.AggregatorConfigMountPath + "/" + v1alpha1.AggregatorConfigKey
	c := corev1.Container{
		Name: ContainerName, Image: a.Spec.Image, ImagePullPolicy: pullPolicy,
		Command:        []string{command, "run", "--config", file},
		Env:            executor.HourglassKeyEnv(a.Spec.OperatorKeys),
		Ports:          []corev1.ContainerPort{{Name: ManagementPortName, ContainerPort: ManagementPort(a), Protocol: corev1.ProtocolTCP}},
		Resources:      res,
		VolumeMounts:   []corev1.VolumeMount{{Name: configVolume, MountPath: v1alpha1.AggregatorConfigMountPath, ReadOnly: true}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(ManagementPortName)}}, PeriodSeconds: 10},
	}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: Labels(a), Annotations: map[string]string{v1alpha1.AnnotationConfigHash: configHash}},
		Spec: corev1.PodSpec{
			ImagePullSecrets: append([]corev1.LocalObjectReference(nil), a.Spec.ImagePullSecrets...),
			Volumes: []corev1.Volume{{Name: configVolume, VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: SecretName(a.Name)}}}},
		},
	}
	var claims []corev1.PersistentVolumeClaim
	if p := a.Spec.Persistence; p != nil {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: DataVolume, MountPath: v1alpha1.AggregatorDataPath})
		claims = []corev1.PersistentVolumeClaim{VolumeClaim(p)}
	}
	tmpl.Spec.Containers = []corev1.Container{c}
	if k := a.Spec.OperatorKeys; k.SecretName != "" && k.SecretVersion != "" {
		tmpl.Annotations[v1alpha1.AnnotationOperatorKeysVersion] = k.SecretVersion
	}
	rev, err := executor.SpecHash(tmpl)
	if err != nil {
		return nil, err
	}
	tmpl.Annotations[v1alpha1.AnnotationSpecHash] = rev
	one := int32(1)
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: StatefulSetName(a.Name), Namespace: a.Namespace, Labels: Labels(a)},
		Spec: appsv1.StatefulSetSpec{
			Replicas:             &one,
			ServiceName:          ServiceName(a.Name),
			Selector:             &metav1.LabelSelector{MatchLabels: SelectorLabels(a)},
			Template:             tmpl,
			VolumeClaimTemplates: claims,
			PodManagementPolicy:  appsv1.ParallelPodManagement,
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType, WhenScaled: appsv1.RetainPersistentVolumeClaimRetentionPolicyType},
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
		},
	}, nil
}

// VolumeClaim is the volumeClaimTemplate "data" of spec.persistence: ReadWriteOnce, the size
// requested, the storage class when given.
func VolumeClaim(p *v1alpha1.AggregatorPersistence) corev1.PersistentVolumeClaim {
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: DataVolume},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: p.Size.DeepCopy()}},
		},
	}
	if p.StorageClassName != "" {
		sc := p.StorageClassName
		pvc.Spec.StorageClassName = &sc
	}
	return pvc
}

// Refs returns the Secrets the Aggregator's operator keys reference, with the keys read
// (executor.OperatorKeyRefs); Exists and HasKey are left for the controller to fill in.
func Refs(a *v1alpha1.Aggregator) []failure.Ref {
	return executor.OperatorKeyRefs(a.Namespace, a.Spec.OperatorKeys)
}

// StatefulSetFacts reads the StatefulSet facts (nil when sts is nil); owner is the
// Aggregator's UID.
func StatefulSetFacts(sts *appsv1.StatefulSet, owner types.UID) *StatefulSet {
	if sts == nil {
		return nil
	}
	ref := metav1.GetControllerOf(sts)
	f := &StatefulSet{
		Foreign:            ref == nil || ref.UID != owner,
		Deleting:           sts.DeletionTimestamp != nil,
		Revision:           Revision(sts),
		Generation:         sts.Generation,
		ObservedGeneration: sts.Status.ObservedGeneration,
		ReadyReplicas:      sts.Status.ReadyReplicas,
		AvailableReplicas:  sts.Status.AvailableReplicas,
		UpdatedReplicas:    sts.Status.UpdatedReplicas,
		CurrentRevision:    sts.Status.CurrentRevision,
		UpdateRevision:     sts.Status.UpdateRevision,
	}
	for _, c := range sts.Spec.Template.Spec.Containers {
		if c.Name == ContainerName {
			f.Image = c.Image
		}
	}
	return f
}

// PodFacts reads why the aggregator's pod does not run (nil pod: no problem): the kubelet's
// image pull and container start failures (executor.PodProblems: "pod aggregator-x-0:
// container aggregator: CrashLoopBackOff: ...") and the scheduler's Unschedulable message
// (Unschedulable; one that only waits for its claims to bind is Binding instead, which is
// progress: failure.WaitsForVolumeBinding).
func PodFacts(pod *corev1.Pod) Pod {
	if pod == nil || pod.DeletionTimestamp != nil {
		return Pod{}
	}
	f := Pod{Exists: true, Name: pod.Name, Revision: pod.Annotations[v1alpha1.AnnotationSpecHash], Problems: executor.PodProblems([]corev1.Pod{*pod})}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			if failure.WaitsForVolumeBinding(c.Message) {
				f.Binding = c.Message
			} else {
				f.Unschedulable = c.Message
			}
		}
	}
	return f
}
