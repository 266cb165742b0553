package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

const (
	// LabelWorkspace is set on a Workspace's pods (and used as the Deployment and Service
	// selector); value: the Workspace's name.
	LabelWorkspace = "gantry.dev/workspace"
	// ContainerName is the workload container's name unless spec.inference.containerName
	// names it (ModelContainerName).
	ContainerName = "model"
	// PortName is the inference port's name.
	PortName = "http"
)

// Paths are the Workspace spec paths hardware errors name.
var Paths = hardware.Paths{
	GPUCount:     "spec.resource.gpuCount",
	GPUType:      "spec.resource.gpuProduct",
	TEEType:      "spec.resource.teeType",
	CustomLabels: "spec.resource.labelSelector",
	NodeSelector: "spec.scheduling.nodeSelector",
}

// ObjectName is the name of a Workspace's Deployment, Service or Job: workspace-<name>.
func ObjectName(ws string) string { return "workspace-" + ws }

// ModeOf is Tuning when spec.tuning is set, else Inference.
func ModeOf(w *v1alpha1.Workspace) Mode {
	if w.Spec.Tuning != nil {
		return v1alpha1.WorkspaceModeTuning
	}
	return v1alpha1.WorkspaceModeInference
}

// Replicas is spec.resource.count (default 1); always 1 for tuning; under spec.autoscaling
// (Autoscaled) spec.autoscaling.minReplicas, the replicas that must be Ready and fit.
func Replicas(w *v1alpha1.Workspace) int32 {
	switch {
	case w.Spec.Tuning != nil:
		return 1
	case Autoscaled(w):
		return max(w.Spec.Autoscaling.MinReplicas, 1)
	case w.Spec.Resource.Count < 1:
		return 1
	}
	return w.Spec.Resource.Count
}

// ModelContainerName is the workload container's name: spec.inference.containerName (the
// name of the container of KAITO's inference.template), else ContainerName.
func ModelContainerName(w *v1alpha1.Workspace) string {
	if in := w.Spec.Inference; in != nil && in.ContainerName != "" {
		return in.ContainerName
	}
	return ContainerName
}

// Port is spec.inference.port or v1alpha1.DefaultInferencePort (8000).
func Port(w *v1alpha1.Workspace) int32 {
	if w.Spec.Inference == nil || w.Spec.Inference.Port == 0 {
		return v1alpha1.DefaultInferencePort
	}
	return w.Spec.Inference.Port
}

// Endpoint is workspace-<name>.<namespace>.svc.cluster.local:<port> (inference; "" for tuning).
func Endpoint(w *v1alpha1.Workspace) string {
	if w.Spec.Inference == nil {
		return ""
	}
	return fmt.Sprintf("%s.%s.svc.cluster.local:%d", ObjectName(w.Name), w.Namespace, Port(w))
}

// Labels are the labels of owned objects; the selector uses LabelWorkspace only.
func Labels(w *v1alpha1.Workspace) map[string]string {
	return map[string]string{LabelWorkspace: w.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedBy}
}

// Placement maps spec.resource and spec.scheduling through hardware.PlaceAt (errors name
// spec.resource.* fields); spec.resource.labelSelectorExpressions become required node
// affinity (withNodeRequirements); a workspace that provisions nodes (WantsProvisioning) also
// tolerates their sku=gpu:NoSchedule taint.
func Placement(w *v1alpha1.Workspace) (hardware.Placement, error) {
	r := w.Spec.Resource
	hw := v1alpha1.HardwareRequirements{GPUCount: r.GPUCount, GPUType: r.GPUProduct, CustomLabels: r.LabelSelector}
	if r.TEEType != "" {
		hw.TEERequired, hw.TEEType = true, r.TEEType
	}
	if r.Partition != nil {
		// One MIG slice per replica, as KAITO: the device plugin's nvidia.com/mig-<profile>.
		hw.GPUCount, hw.GPUResource = 1, MIGResource(r.Partition.Profile)
	}
	pl, err := hardware.PlaceAt(hw, w.Spec.Scheduling, Paths)
	if err != nil {
		return pl, err
	}
	if r.Partition != nil {
		// KAITO's pods tolerate a NoSchedule taint of the MIG resource's key, in case the
		// cluster operator taints MIG nodes (the device plugin does not by default).
		mig := corev1.Toleration{Key: MIGResource(r.Partition.Profile), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
		if !slices.ContainsFunc(pl.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&mig) }) {
			pl.Tolerations = append(pl.Tolerations, mig)
		}
	}
	pl.Affinity = withNodeRequirements(pl.Affinity, v1alpha1.Requirements(r.LabelSelectorExpressions))
	if WantsProvisioning(w) && !slices.ContainsFunc(pl.Tolerations, func(t corev1.Toleration) bool { return t.MatchToleration(&SKUToleration) }) {
		// Provisioned nodes carry KAITO's sku=gpu:NoSchedule taint (DesiredNodeClaim).
		pl.Tolerations = append(pl.Tolerations, SKUToleration)
	}
	return pl, nil
}

// withNodeRequirements returns aff (a copy, never modified) with exprs (label selector
// requirements: In, NotIn, Exists, DoesNotExist) as required node affinity: ANDed into every
// required node selector term aff already has (the terms stay ORed), or one new term. aff
// itself when exprs is empty.
func withNodeRequirements(aff *corev1.Affinity, exprs []metav1.LabelSelectorRequirement) *corev1.Affinity {
	if len(exprs) == 0 {
		return aff
	}
	reqs := make([]corev1.NodeSelectorRequirement, len(exprs))
	for i, e := range exprs {
		reqs[i] = corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOperator(e.Operator), Values: append([]string(nil), e.Values...)}
	}
	out := &corev1.Affinity{}
	if aff != nil {
		out = aff.DeepCopy()
	}
	if out.NodeAffinity == nil {
		out.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := out.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{}}}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		terms[i].MatchExpressions = append(terms[i].MatchExpressions, reqs...)
	}
	return out
}

// PodTemplate builds the pod template of the Deployment or Job. The Workspace's own labels
// are copied to the pods (Labels win), so kwok chaos labels reach them in tests.
func PodTemplate(w *v1alpha1.Workspace) (corev1.PodTemplateSpec, error) {
	pl, err := Placement(w)
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	res, err := pl.ContainerResources(corev1.ResourceRequirements{})
	if err != nil {
		return corev1.PodTemplateSpec{}, err
	}
	c := corev1.Container{Name: ModelContainerName(w), Resources: res}
	var volumes []corev1.Volume
	var pullSecrets []corev1.LocalObjectReference
	config := ""
	switch {
	case w.Spec.Inference != nil:
		in := w.Spec.Inference
		c.Image, c.Args = in.Image, append([]string(nil), in.Args...)
		c.Env = []corev1.EnvVar{{Name: "MODEL_NAME", Value: in.Model}, {Name: "PORT", Value: fmt.Sprint(Port(w))}}
		c.Env = withModelAccess(c.Env, in.ModelAccessSecret)
		for i, a := range in.Adapters {
			strength := a.Strength
			if strength == "" {
				strength = "1.0"
			}
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("ADAPTER_%d", i), Value: a.Name + "=" + a.Image + "@" + strength})
		}
		c.Args = append(c.Args, RuntimeArgs(w)...)
		c.Ports = []corev1.ContainerPort{{Name: PortName, ContainerPort: Port(w), Protocol: corev1.ProtocolTCP}}
		volumes, pullSecrets = inferenceTemplate(w, &c)
		config = in.Config
	case w.Spec.Tuning != nil:
		t := w.Spec.Tuning
		c.Image = t.Image
		c.Env = []corev1.EnvVar{
			{Name: "BASE_MODEL", Value: t.BaseModel},
			{Name: "TUNING_METHOD", Value: string(t.Method)},
		}
		if t.Output.Image != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: "OUTPUT_IMAGE", Value: t.Output.Image})
		}
		if t.Input.Image != "" {
			c.Env = append(c.Env, corev1.EnvVar{Name: "INPUT_IMAGE", Value: t.Input.Image})
		}
		volumes, c.VolumeMounts, c.Env = claimVolumes(t, volumes, c.VolumeMounts, c.Env)
		for i, u := range t.Input.URLs {
			c.Env = append(c.Env, corev1.EnvVar{Name: fmt.Sprintf("INPUT_URL_%d", i), Value: u})
		}
		c.Env = withModelAccess(c.Env, t.ModelAccessSecret)
		pullSecrets = localRefs(t.ImagePullSecrets)
		if t.Output.ImagePushSecret != "" {
			volumes = append(volumes, corev1.Volume{Name: "push-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: t.Output.ImagePushSecret}}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "push-secret", MountPath: "/mnt/push-secret", ReadOnly: true})
		}
		config = t.Config
	}
	if config != "" {
		volumes = append(volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: config}}}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: ConfigDir, ReadOnly: true})
	}
	labels := map[string]string{}
	for k, v := range w.Labels {
		labels[k] = v
	}
	for k, v := range Labels(w) {
		labels[k] = v
	}
	restart := corev1.RestartPolicyAlways
	if w.Spec.Tuning != nil {
		restart = corev1.RestartPolicyNever
	}
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:     restart,
			NodeSelector:      pl.NodeSelector,
			Tolerations:       pl.Tolerations,
			Affinity:          pl.Affinity,
			RuntimeClassName:  pl.RuntimeClassName,
			PriorityClassName: pl.PriorityClassName,
			Containers:        []corev1.Container{c},
			Volumes:           volumes,
			ImagePullSecrets:  pullSecrets,
		},
	}, nil
}

// DesiredDeployment is the inference Deployment workspace-<name> with resource.count
// replicas, annotated with the hash of its replicas and template (AnnotationSpecHash). Under
// spec.autoscaling (Autoscaled) its replicas are left out (nil) and out of the hash: the
// autoscaler owns them (ReplicasToWrite). No owner reference (the controller adds it).
func DesiredDeployment(w *v1alpha1.Workspace) (*appsv1.Deployment, error) {
	tpl, err := PodTemplate(w)
	if err != nil {
		return nil, err
	}
	var replicas *int32
	hashed := int32(0)
	if !Autoscaled(w) {
		n := Replicas(w)
		replicas, hashed = &n, n
	}
	hash := hashOf(struct {
		Replicas int32
		Template corev1.PodTemplateSpec
	}{hashed, tpl})
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(w.Name), Namespace: w.Namespace, Labels: Labels(w),
			Annotations: map[string]string{v1alpha1.AnnotationSpecHash: hash}},
		Spec: appsv1.DeploymentSpec{
			Replicas: replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelWorkspace: w.Name}},
			Template: tpl,
		},
	}, nil
}

// DesiredService is the ClusterIP Service workspace-<name> on the inference port: to every
// replica, or, for a multi-node group, to the leader (pod 0) only; a Ray group's (RayGroup)
// also has the Ray head's ports, as KAITO's Service: ray 6379 and dashboard 8265.
func DesiredService(w *v1alpha1.Workspace) *corev1.Service {
	sel := map[string]string{LabelWorkspace: w.Name}
	if MultiNode(w) {
		sel[appsv1.StatefulSetPodNameLabel] = LeaderPod(w)
	}
	ports := []corev1.ServicePort{{Name: PortName, Port: Port(w), TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP}}
	if RayGroup(w) {
		ports = append(ports, rayServicePorts()...)
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(w.Name), Namespace: w.Namespace, Labels: Labels(w)},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    ports,
		},
	}
}

// MultiNode reports whether a resolved inference workspace serves one model across its
// replicas (KAITO's multi-node inference): count > 1 and spec.inference.modelGPUs more than
// one replica's spec.resource.gpuCount (Resolve settles both).
func MultiNode(w *v1alpha1.Workspace) bool {
	inf := w.Spec.Inference
	return inf != nil && Replicas(w) > 1 && inf.ModelGPUs > w.Spec.Resource.GPUCount
}

// GroupServiceName is the headless Service of a multi-node group: workspace-<name>-group.
func GroupServiceName(ws string) string { return ObjectName(ws) + "-group" }

// LeaderPod is the multi-node group's leader: the StatefulSet's pod 0, workspace-<name>-0.
func LeaderPod(w *v1alpha1.Workspace) string { return ObjectName(w.Name) + "-0" }

// LeaderAddress is the leader's stable DNS name:
// workspace-<name>-0.workspace-<name>-group.<namespace>.svc.cluster.local.
func LeaderAddress(w *v1alpha1.Workspace) string {
	return fmt.Sprintf("%s.%s.%s.svc.cluster.local", LeaderPod(w), GroupServiceName(w.Name), w.Namespace)
}

// Group environment variables of a multi-node group's pods.
const (
	EnvGroupSize     = "GROUP_SIZE"     // pods in the group (spec.resource.count)
	EnvRank          = "RANK"           // this pod's index, 0 = leader (label apps.kubernetes.io/pod-index)
	EnvLeaderAddress = "LEADER_ADDRESS" // LeaderAddress
)

// DesiredStatefulSet is a multi-node group's StatefulSet workspace-<name>: count pods with
// stable names workspace-<name>-0..count-1 through the headless Service GroupServiceName,
// started in parallel (the group needs all of them), each with GROUP_SIZE, RANK and
// POD_INDEX (its pod index, KAITO's name) and LEADER_ADDRESS; a Ray group (RayGroup) runs
// KAITO's Ray cluster (withRay: RayCommand, the multi-node probes; RayArgs after the
// arguments); the spec hash annotation as DesiredDeployment's.
func DesiredStatefulSet(w *v1alpha1.Workspace) (*appsv1.StatefulSet, error) {
	tpl, err := PodTemplate(w)
	if err != nil {
		return nil, err
	}
	replicas := Replicas(w)
	c := &tpl.Spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: EnvGroupSize, Value: fmt.Sprint(replicas)},
		corev1.EnvVar{Name: EnvRank, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['" + appsv1.PodIndexLabel + "']"}}},
		podIndexEnv(),
		corev1.EnvVar{Name: EnvLeaderAddress, Value: LeaderAddress(w)})
	if RayGroup(w) {
		c.Args = append(c.Args, RayArgs(w, c.Args)...)
		withRay(w, c)
	}
	hash := hashOf(struct {
		Replicas int32
		Template corev1.PodTemplateSpec
		Group    bool
	}{replicas, tpl, true})
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(w.Name), Namespace: w.Namespace, Labels: Labels(w),
			Annotations: map[string]string{v1alpha1.AnnotationSpecHash: hash}},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			ServiceName:         GroupServiceName(w.Name),
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{LabelWorkspace: w.Name}},
			Template:            tpl,
		},
	}, nil
}

// DesiredGroupService is the headless Service workspace-<name>-group of a multi-node group:
// it gives each pod its stable DNS name, published before the pod is Ready (the workers must
// reach the leader to become Ready).
func DesiredGroupService(w *v1alpha1.Workspace) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: GroupServiceName(w.Name), Namespace: w.Namespace, Labels: Labels(w)},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			PublishNotReadyAddresses: true,
			Selector:                 map[string]string{LabelWorkspace: w.Name},
			Ports:                    []corev1.ServicePort{{Name: PortName, Port: Port(w), TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// GroupFacts reads a live multi-node StatefulSet and its headless Service (nil: absent)
// against the desired ones, as WorkloadFacts reads a Deployment: UpToDate also needs the
// headless Service.
func GroupFacts(have, want *appsv1.StatefulSet, groupSvc *corev1.Service, owner types.UID) *Workload {
	if have == nil {
		return nil
	}
	if !controlledBy(have, owner) || groupSvc != nil && !controlledBy(groupSvc, owner) {
		return &Workload{Foreign: true} // the StatefulSet or the group's Service is someone else's
	}
	f := &Workload{UpToDate: have.DeletionTimestamp == nil && want != nil && groupSvc != nil && groupSvc.DeletionTimestamp == nil &&
		have.Annotations[v1alpha1.AnnotationSpecHash] == want.Annotations[v1alpha1.AnnotationSpecHash] &&
		have.Spec.Replicas != nil && *have.Spec.Replicas == *want.Spec.Replicas && sameImages(have.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers)}
	replicas := int32(1)
	if have.Spec.Replicas != nil {
		replicas = *have.Spec.Replicas
	}
	f.Replicas, f.CurrentReplicas = replicas, have.Status.Replicas
	f.RolledOut = have.Status.ObservedGeneration == have.Generation && have.Status.UpdatedReplicas >= replicas
	return f
}

// DesiredJob is the tuning Job workspace-<name>: one pod, restartPolicy Never,
// backoffLimit spec.tuning.backoffLimit (default 0), and a podFailurePolicy that ignores a pod
// ended from outside (DisruptionTarget=True: evicted, preempted, its node gone): the Job
// controller replaces it without counting it against the backoff limit, so only the tuning
// container's own failures fail the run.
func DesiredJob(w *v1alpha1.Workspace) (*batchv1.Job, error) {
	tpl, err := PodTemplate(w)
	if err != nil {
		return nil, err
	}
	var backoff int32
	if w.Spec.Tuning.BackoffLimit != nil {
		backoff = *w.Spec.Tuning.BackoffLimit
	}
	one := int32(1)
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(w.Name), Namespace: w.Namespace, Labels: Labels(w)},
		Spec: batchv1.JobSpec{Parallelism: &one, Completions: &one, BackoffLimit: &backoff, Template: tpl,
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
			}}}},
	}, nil
}

func hashOf(v any) string {
	b, _ := json.Marshal(v) // plain API structs: cannot fail
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

func controlledBy(obj metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner
}

// WorkloadFacts reads a live Deployment (nil: absent) against the desired one. RolledOut is
// `kubectl rollout status`'s test without availability: the Deployment controller has seen
// the spec (observedGeneration), every replica is of the new template (updatedReplicas), and
// no pod of an older template is left (status.replicas is no more than updatedReplicas). The
// last part matters from 4 replicas on: the default strategy's maxUnavailable (25%, rounded
// down) lets the controller create the last new pods while an old Ready pod still counts, so
// a workspace Ready then went NotReady when the old pod went before the new one was Ready.
func WorkloadFacts(have, want *appsv1.Deployment, owner types.UID) *Workload {
	if have == nil {
		return nil
	}
	if !controlledBy(have, owner) {
		return &Workload{Foreign: true}
	}
	f := &Workload{UpToDate: have.DeletionTimestamp == nil && want != nil && have.Annotations[v1alpha1.AnnotationSpecHash] == want.Annotations[v1alpha1.AnnotationSpecHash] &&
		sameScaleAndImages(have, want)}
	f.Replicas, f.CurrentReplicas = WorkloadReplicas(have)
	f.RolledOut = have.Status.ObservedGeneration == have.Generation && have.Status.UpdatedReplicas >= f.Replicas &&
		have.Status.Replicas <= have.Status.UpdatedReplicas
	return f
}

// sameScaleAndImages: have runs want's replica count and container images. The spec hash
// annotation says what the reconciler last wrote; this catches what was changed out of band
// since (`kubectl scale` to 3 replicas, `kubectl set image`), which the next pass puts back.
// A want without replicas (spec.autoscaling: the autoscaler's) matches any count.
func sameScaleAndImages(have, want *appsv1.Deployment) bool {
	if want.Spec.Replicas != nil && (have.Spec.Replicas == nil || *have.Spec.Replicas != *want.Spec.Replicas) {
		return false
	}
	return sameImages(have.Spec.Template.Spec.Containers, want.Spec.Template.Spec.Containers)
}

// sameImages: the same containers by name and image, in order.
func sameImages(hc, wc []corev1.Container) bool {
	if len(hc) != len(wc) {
		return false
	}
	for i := range wc {
		if hc[i].Name != wc[i].Name || hc[i].Image != wc[i].Image {
			return false
		}
	}
	return true
}

// ServiceFacts reads a live Service (nil: absent) against the desired one.
func ServiceFacts(have, want *corev1.Service, owner types.UID) Object {
	if have == nil {
		return Object{}
	}
	if !controlledBy(have, owner) {
		return Object{Exists: true, Foreign: true}
	}
	up := have.DeletionTimestamp == nil && have.Spec.Type == want.Spec.Type && len(have.Spec.Ports) == len(want.Spec.Ports) &&
		maps.Equal(have.Spec.Selector, want.Spec.Selector)
	for i := range want.Spec.Ports {
		if up {
			h, w := have.Spec.Ports[i], want.Spec.Ports[i]
			up = h.Name == w.Name && h.Port == w.Port && h.TargetPort == w.TargetPort && h.Protocol == w.Protocol
		}
	}
	return Object{Exists: true, UpToDate: up}
}

// JobFacts reads a live Job (nil: absent).
func JobFacts(have *batchv1.Job, owner types.UID) *Job {
	if have == nil {
		return nil
	}
	if !controlledBy(have, owner) {
		return &Job{Foreign: true}
	}
	f := &Job{Active: have.Status.Active, Succeeded: have.Status.Succeeded, FailedPods: have.Status.Failed}
	f.Complete, f.Failed, f.FailedReason, f.FailedMessage = failure.JobOutcome(have)
	return f
}

// NodeFacts reads a live Node.
func NodeFacts(n *corev1.Node) Node {
	out := Node{Name: n.Name, Labels: n.Labels, Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints, Allocatable: n.Status.Allocatable}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	if q, ok := n.Status.Allocatable[hardware.ResourceGPU]; ok {
		out.AllocatableGPU = q.Value()
	}
	return out
}

// PodFacts reads a live pod; nodeReady tells whether its node exists and is Ready. Disrupted
// is failure.EndedFromOutside's verdict, except a plain deletion (failure.DisruptionDeleted):
// the Deployment's, StatefulSet's and Job's controllers delete pods themselves.
func PodFacts(p *corev1.Pod, nodeReady bool) Pod {
	out := Pod{Name: p.Name, Deleting: p.DeletionTimestamp != nil, Phase: p.Status.Phase, NodeName: p.Spec.NodeName, NodeReady: nodeReady}
	if d, ok := failure.EndedFromOutside(p); ok && d.Reason != failure.DisruptionDeleted {
		out.Disrupted = &d
	}
	for _, c := range p.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			out.Unschedulable = c.Message
		case c.Type == corev1.PodReady:
			out.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && out.WaitingReason == "" && w.Reason != "" && w.Reason != "ContainerCreating" {
			out.WaitingReason, out.WaitingMessage = w.Reason, w.Message
		}
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t != nil && t.ExitCode != 0 && out.Terminated == "" {
			out.Terminated = fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
			if t.Message != "" {
				out.Terminated += ": " + t.Message
			}
		}
	}
	return out
}

// InputDir and OutputDir are where a tuning pod mounts its input and output
// PersistentVolumeClaims (tuning.input.pvc read-only, tuning.output.pvc read-write).
const (
	InputDir  = "/mnt/input"
	OutputDir = "/mnt/output"
)

// claimVolumes adds the tuning input and output PersistentVolumeClaims (when set) as volumes,
// mounts and the INPUT_DIR / OUTPUT_DIR environment variables.
func claimVolumes(t *v1alpha1.WorkspaceTuning, vols []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) ([]corev1.Volume, []corev1.VolumeMount, []corev1.EnvVar) {
	for _, c := range []struct {
		claim, name, dir, env string
		readOnly              bool
	}{{t.Input.PVC, "input", InputDir, "INPUT_DIR", true}, {t.Output.PVC, "output", OutputDir, "OUTPUT_DIR", false}} {
		if c.claim == "" {
			continue
		}
		vols = append(vols, corev1.Volume{Name: c.name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.claim, ReadOnly: c.readOnly}}})
		mounts = append(mounts, corev1.VolumeMount{Name: c.name, MountPath: c.dir, ReadOnly: c.readOnly})
		env = append(env, corev1.EnvVar{Name: c.env, Value: c.dir})
	}
	return vols, mounts, env
}

// inferenceTemplate applies what KAITO's inference.template would set on the model server
// container c: spec.inference.command, the readiness probe (default: a TCP connect to the
// port every 10s) and liveness probe, the volumes (returned, with their mounts on c) and the
// image pull secrets (returned).
func inferenceTemplate(w *v1alpha1.Workspace, c *corev1.Container) ([]corev1.Volume, []corev1.LocalObjectReference) {
	in := w.Spec.Inference
	c.Command = append([]string(nil), in.Command...)
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortName)}}, PeriodSeconds: 10}
	if in.ReadinessProbe != nil {
		c.ReadinessProbe = probe(in.ReadinessProbe)
	}
	if in.LivenessProbe != nil {
		c.LivenessProbe = probe(in.LivenessProbe)
	}
	var vols []corev1.Volume
	for _, v := range in.Volumes {
		var src corev1.VolumeSource
		readOnly := v.ReadOnly
		switch {
		case v.ConfigMap != "":
			src.ConfigMap, readOnly = &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: v.ConfigMap}}, true
		case v.Secret != "":
			src.Secret, readOnly = &corev1.SecretVolumeSource{SecretName: v.Secret}, true
		case v.PVC != "":
			src.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: v.PVC, ReadOnly: v.ReadOnly}
		default:
			src.EmptyDir = emptyDir(v)
		}
		vols = append(vols, corev1.Volume{Name: v.Name, VolumeSource: src})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: v.Name, MountPath: v.MountPath, ReadOnly: readOnly})
	}
	return vols, localRefs(in.ImagePullSecrets)
}

// localRefs is names as local object references (nil for none): the pod's imagePullSecrets.
func localRefs(names []string) []corev1.LocalObjectReference {
	var out []corev1.LocalObjectReference
	for _, n := range names {
		out = append(out, corev1.LocalObjectReference{Name: n})
	}
	return out
}

// withModelAccess appends to env, when secret is set, HF_TOKEN from the key HF_TOKEN of the
// Secret secret, as KAITO gives its model servers the preset's modelAccessSecret
// (presetOptions.modelAccessSecret; KAITO's SetHFToken).
func withModelAccess(env []corev1.EnvVar, secret string) []corev1.EnvVar {
	if secret == "" {
		return env
	}
	return append(env, corev1.EnvVar{Name: ModelAccessKey, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: ModelAccessKey}}})
}

// emptyDir is the emptyDir source of a volume (spec.inference.volumes[].emptyDir) with its
// medium and sizeLimit, as KAITO's inference.template writes emptyDir: {medium: Memory,
// sizeLimit: ...}; a sizeLimit that does not parse (the CRD refuses one) is left out.
func emptyDir(v v1alpha1.WorkspaceVolume) *corev1.EmptyDirVolumeSource {
	out := &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMedium(v.Medium)}
	if q, err := resource.ParseQuantity(v.SizeLimit); v.SizeLimit != "" && err == nil {
		out.SizeLimit = &q
	}
	return out
}

// probe is p as a container probe: an HTTP GET of p.HTTPPath on p.Port (default: the
// inference port by name) or p.Exec; period 10s and failure threshold 3 when unset.
func probe(p *v1alpha1.WorkspaceProbe) *corev1.Probe {
	out := &corev1.Probe{InitialDelaySeconds: p.InitialDelaySeconds, PeriodSeconds: p.PeriodSeconds, FailureThreshold: p.FailureThreshold}
	if out.PeriodSeconds == 0 {
		out.PeriodSeconds = 10
	}
	if out.FailureThreshold == 0 {
		out.FailureThreshold = 3
	}
	if len(p.Exec) > 0 {
		out.Exec = &corev1.ExecAction{Command: append([]string(nil), p.Exec...)}
		return out
	}
	port := intstr.FromString(PortName)
	if p.Port != 0 {
		port = intstr.FromInt32(p.Port)
	}
	out.HTTPGet = &corev1.HTTPGetAction{Path: p.HTTPPath, Port: port, Scheme: corev1.URISchemeHTTP}
	return out
}

// MIGResource is the NVIDIA device plugin's extended resource of a MIG profile under the GPU
// operator's "mixed" strategy, as KAITO's mig.MIGResourceName: "1g.10gb" →
// "nvidia.com/mig-1g.10gb".
func MIGResource(profile string) string { return "nvidia.com/mig-" + profile }

// KAITO's inference runtime contract (KAITO pkg/model, pkg/utils, api/v1beta1).
const (
	// InferenceConfigKey is the key of spec.inference.config KAITO's runtime reads
	// (ConfigfileNameVLLM), mounted under ConfigDir.
	InferenceConfigKey = "inference_config.yaml"
	// ConfigDir is where spec.inference.config and spec.tuning.config are mounted
	// (KAITO's DefaultConfigMapMountPath).
	ConfigDir = "/mnt/config"
	// AnnotationPerformanceMode is KAITO's Workspace annotation selecting vLLM's performance
	// preset (balanced, interactivity, throughput); spec.inference.performanceMode wins.
	AnnotationPerformanceMode = "kaito.sh/performance-mode"
	// PerformanceModeBalanced is the default performance mode (no argument is added).
	PerformanceModeBalanced = "balanced"
)

// PerformanceModes are the values of spec.inference.performanceMode and KAITO's
// kaito.sh/performance-mode annotation.
var PerformanceModes = []string{PerformanceModeBalanced, "interactivity", "throughput"}

// PerformanceMode is spec.inference.performanceMode, else the Workspace's
// kaito.sh/performance-mode annotation when it holds a valid mode, else balanced.
func PerformanceMode(w *v1alpha1.Workspace) string {
	if in := w.Spec.Inference; in != nil && in.PerformanceMode != "" {
		return in.PerformanceMode
	}
	if v := w.Annotations[AnnotationPerformanceMode]; slices.Contains(PerformanceModes, v) {
		return v
	}
	return PerformanceModeBalanced
}

// RuntimeArgs are the arguments a preset inference workspace's model server gets after
// spec.inference.args, as KAITO builds its vLLM command: --kaito-config-file=
// /mnt/config/inference_config.yaml with spec.inference.config, and
// --performance-mode=<mode> for a PerformanceMode other than balanced. None without a preset
// or a Hugging Face model on KAITO's runtime (AnyModel): a custom image is the user's command,
// as KAITO's inference.template; none either when args already pass the flag.
func RuntimeArgs(w *v1alpha1.Workspace) []string {
	in := w.Spec.Inference
	if in == nil || (in.Preset == "" && !AnyModel(w)) {
		return nil
	}
	has := func(flag string) bool {
		return slices.ContainsFunc(in.Args, func(a string) bool { return a == flag || strings.HasPrefix(a, flag+"=") })
	}
	var out []string
	if in.Config != "" && !has("--kaito-config-file") {
		out = append(out, "--kaito-config-file="+path.Join(ConfigDir, InferenceConfigKey))
	}
	if m := PerformanceMode(w); m != PerformanceModeBalanced && !has("--performance-mode") {
		out = append(out, "--performance-mode="+m)
	}
	return out
}

// ModelAccessKey is the key of spec.inference.modelAccessSecret holding the hub token, and the
// model server's environment variable that gets it (as KAITO's model access Secret).
const ModelAccessKey = "HF_TOKEN"

// Refs returns the objects a Workspace's pods use: the config ConfigMap (inference.config,
// with its key inference_config.yaml for a preset, or tuning.config), the image pull Secrets
// and the ConfigMaps, Secrets and claims of inference.volumes, the model access Secret with
// its key HF_TOKEN (inference.modelAccessSecret), and the tuning output's push Secret
// (tuning.output.imagePushSecret), image pull Secrets and model access Secret (with its key
// HF_TOKEN); Exists is left for the controller to fill in.
func Refs(w *v1alpha1.Workspace) []failure.Ref {
	var out []failure.Ref
	if in := w.Spec.Inference; in != nil && in.Config != "" {
		ref := failure.Ref{Kind: "ConfigMap", Namespace: w.Namespace, Name: in.Config}
		if in.Preset != "" {
			ref.Keys = []string{InferenceConfigKey} // KAITO's runtime reads it (RuntimeArgs)
		}
		out = append(out, ref)
	}
	if in := w.Spec.Inference; in != nil {
		for _, s := range in.ImagePullSecrets {
			out = append(out, failure.Ref{Kind: "Secret", Namespace: w.Namespace, Name: s})
		}
		for _, v := range in.Volumes {
			switch {
			case v.ConfigMap != "":
				out = append(out, failure.Ref{Kind: "ConfigMap", Namespace: w.Namespace, Name: v.ConfigMap})
			case v.Secret != "":
				out = append(out, failure.Ref{Kind: "Secret", Namespace: w.Namespace, Name: v.Secret})
			case v.PVC != "":
				out = append(out, failure.Ref{Kind: "PersistentVolumeClaim", Namespace: w.Namespace, Name: v.PVC})
			}
		}
	}
	if in := w.Spec.Inference; in != nil && in.ModelAccessSecret != "" {
		out = append(out, failure.Ref{Kind: "Secret", Namespace: w.Namespace, Name: in.ModelAccessSecret, Keys: []string{ModelAccessKey}})
	}
	if t := w.Spec.Tuning; t != nil {
		if t.Config != "" {
			out = append(out, failure.Ref{Kind: "ConfigMap", Namespace: w.Namespace, Name: t.Config})
		}
		if t.Output.ImagePushSecret != "" {
			out = append(out, failure.Ref{Kind: "Secret", Namespace: w.Namespace, Name: t.Output.ImagePushSecret})
		}
		for _, s := range t.ImagePullSecrets {
			out = append(out, failure.Ref{Kind: "Secret", Namespace: w.Namespace, Name: s})
		}
		if t.ModelAccessSecret != "" {
			out = append(out, failure.Ref{Kind: "Secret", Namespace: w.Namespace, Name: t.ModelAccessSecret, Keys: []string{ModelAccessKey}})
		}
		for _, claim := range []string{t.Input.PVC, t.Output.PVC} {
			if claim != "" {
				out = append(out, failure.Ref{Kind: "PersistentVolumeClaim", Namespace: w.Namespace, Name: claim})
			}
		}
	}
	return out
}

// UnboundClaims names the PersistentVolumeClaims among refs (Refs, checked by the controller:
// Exists and Phase filled in) that exist and are not Bound, "namespace/name (phase)" in refs'
// order, e.g. "ns/train-data (Pending)"; nil when none. Missing claims are not listed (they
// are MissingRefs: Stalled, ReferenceNotFound).
func UnboundClaims(refs []failure.Ref) []string {
	var out []string
	for _, r := range refs {
		if r.Kind != "PersistentVolumeClaim" || !r.Exists || r.Phase == string(corev1.ClaimBound) {
			continue
		}
		phase := r.Phase
		if phase == "" {
			phase = "no phase yet"
		}
		out = append(out, fmt.Sprintf("%s/%s (%s)", r.Namespace, r.Name, phase))
	}
	return out
}

// MIGProfiles are the MIG profiles KAITO accepts (its pkg/utils/mig knownProfiles, from
// NVIDIA's supported MIG profiles of A30, A100, H100, H200 and B200), sorted.
var MIGProfiles = []string{
	"1g.10gb", "1g.12gb", "1g.18gb", "1g.20gb", "1g.23gb", "1g.24gb", "1g.35gb", "1g.45gb", "1g.5gb", "1g.6gb",
	"2g.10gb", "2g.12gb", "2g.20gb", "2g.24gb", "2g.35gb", "2g.45gb",
	"3g.20gb", "3g.40gb", "3g.47gb", "3g.48gb", "3g.71gb", "3g.90gb",
	"4g.20gb", "4g.24gb", "4g.40gb", "4g.47gb", "4g.48gb", "4g.71gb", "4g.90gb",
	"7g.141gb", "7g.180gb", "7g.40gb", "7g.80gb", "7g.94gb", "7g.96gb",
}
