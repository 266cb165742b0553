package performer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/autoscale"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

const (
	// ManagedBy is v1alpha1.ManagedBy (kept for existing callers).
	ManagedBy = v1alpha1.ManagedBy
	// ContainerName is the performer container's name (Hourglass: "performer").
	ContainerName = "performer"
	// PortName is the name of the gRPC container and Service port (Hourglass: "grpc").
	PortName = "grpc"
	// AnnotationVersion on the Pod records spec.version (part of the spec hash).
	AnnotationVersion = "gantry.dev/version"
)

// ObjectName is the name of a Performer's Pod and Service: performer-<name> (Hourglass).
func ObjectName(performer string) string { return "performer-" + performer }

// GRPCPort is spec.grpcPort, or v1alpha1.DefaultGRPCPort (9090) when unset.
func GRPCPort(p *v1alpha1.Performer) int32 {
	if p.Spec.GRPCPort == 0 {
		return v1alpha1.DefaultGRPCPort
	}
	return p.Spec.GRPCPort
}

// Endpoint is the Performer's gRPC endpoint: performer-<name>.<namespace>.svc.cluster.local:<port>
// (Hourglass's ponos CreatePerformer format; Hourglass's own status omitted the port).
func Endpoint(p *v1alpha1.Performer) string {
	return fmt.Sprintf("%s.%s.svc.cluster.local:%d", ObjectName(p.Name), p.Namespace, GRPCPort(p))
}

// Labels are the labels of a Performer's Pod and Service; the Service selects on
// v1alpha1.LabelPerformer only.
func Labels(p *v1alpha1.Performer) map[string]string {
	return map[string]string{v1alpha1.LabelPerformer: p.Name, v1alpha1.LabelManagedBy: ManagedBy}
}

// DesiredPod builds the Pod a Performer asks for, without owner reference (the controller adds
// it). The Pod carries the spec hash annotation (SpecHash of the Pod spec and spec.version): a
// different hash on the live Pod means it must be re-created. The Performer's own labels are
// copied to the Pod (Labels win on a clash); they are not part of the hash, so a label change
// reaches the Pod when it is next created (this is how kwok's chaos labels, e.g.
// image-pull-failed.stage.gantry.dev=true, reach a Performer's Pod in tests). Errors come from hardware.Place
// and Placement.ContainerResources (*hardware.ConflictError, *hardware.InvalidError) and mean
// the spec cannot be honoured.
func DesiredPod(p *v1alpha1.Performer) (*corev1.Pod, error) {
	pl, err := hardware.Place(p.Spec.HardwareRequirements, p.Spec.Scheduling)
	if err != nil {
		return nil, err
	}
	res, err := pl.ContainerResources(p.Spec.Resources.Core())
	if err != nil {
		return nil, err
	}
	port := GRPCPort(p)

	names := make([]string, 0, len(p.Spec.Env))
	for k := range p.Spec.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	var env []corev1.EnvVar
	for _, k := range names {
		env = append(env, corev1.EnvVar{Name: k, Value: p.Spec.Env[k]})
	}
	for _, e := range p.Spec.EnvFrom {
		v := corev1.EnvVar{Name: e.Name, ValueFrom: &corev1.EnvVarSource{}}
		switch {
		case e.SecretKeyRef != nil:
			v.ValueFrom.SecretKeyRef = &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.SecretKeyRef.Name}, Key: e.SecretKeyRef.Key}
		case e.ConfigMapKeyRef != nil:
			v.ValueFrom.ConfigMapKeyRef = &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: e.ConfigMapKeyRef.Name}, Key: e.ConfigMapKeyRef.Key}
		default:
			return nil, &hardware.InvalidError{Field: fmt.Sprintf("spec.envFrom[%q]", e.Name), Detail: "exactly one of secretKeyRef or configMapKeyRef must be set"}
		}
		env = append(env, v)
	}

	pullPolicy := p.Spec.ImagePullPolicy
	if pullPolicy == "" {
		pullPolicy = corev1.PullIfNotPresent
	}
	spec := corev1.PodSpec{
		RestartPolicy:      corev1.RestartPolicyAlways,
		ServiceAccountName: p.Spec.ServiceAccountName,
		ImagePullSecrets:   append([]corev1.LocalObjectReference(nil), p.Spec.ImagePullSecrets...),
		NodeSelector:       pl.NodeSelector,
		Tolerations:        pl.Tolerations,
		Affinity:           pl.Affinity,
		RuntimeClassName:   pl.RuntimeClassName,
		PriorityClassName:  pl.PriorityClassName,
		Containers: []corev1.Container{{
			Name:            ContainerName,
			Image:           p.Spec.Image,
			ImagePullPolicy: pullPolicy,
			Command:         append([]string(nil), p.Spec.Command...),
			Args:            append([]string(nil), p.Spec.Args...),
			Env:             env,
			Ports:           []corev1.ContainerPort{{Name: PortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}},
			Resources:       res,
			// The gRPC server accepting connections is the readiness signal (Hourglass used
			// gRPC health probes, which require every performer image to implement them).
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString(PortName)}},
				PeriodSeconds: 10,
			},
		}},
	}
	restartedAt := p.Annotations[v1alpha1.AnnotationRestartedAt]
	hash, err := SpecHash(spec, p.Spec.Version, restartedAt)
	if err != nil {
		return nil, err
	}
	annotations := map[string]string{v1alpha1.AnnotationSpecHash: hash}
	if p.Spec.Version != "" {
		annotations[AnnotationVersion] = p.Spec.Version
	}
	if restartedAt != "" {
		annotations[v1alpha1.AnnotationRestartedAt] = restartedAt
	}
	labels := make(map[string]string, len(p.Labels)+2)
	for k, v := range p.Labels {
		labels[k] = v
	}
	for k, v := range Labels(p) {
		labels[k] = v
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        ObjectName(p.Name),
			Namespace:   p.Namespace,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: spec,
	}, nil
}

// DesiredDeployment builds the one-replica Deployment performer-<name> of spec.strategy
// RollingUpdate from the desired Pod (its labels, annotations and spec become the pod
// template; no owner reference: the controller adds it): selector gantry.dev/performer=<name>,
// RollingUpdate with maxSurge 1 and maxUnavailable 0, so the old Pod serves until the new one
// is Ready. The template keeps the spec-hash annotation, so a changed spec changes the template.
// Under spec.autoscaling (Autoscaling) its replicas are left out (nil): the autoscaler owns them
// and the reconciler writes them only when it creates the Deployment (ReplicasToWrite).
func DesiredDeployment(p *v1alpha1.Performer, pod *corev1.Pod) *appsv1.Deployment {
	var replicas *int32
	if Autoscaling(p) == nil {
		one := int32(1)
		replicas = &one
	}
	history := int32(2)
	maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromInt32(1)
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: ObjectName(p.Name), Namespace: p.Namespace, Labels: Labels(p)},
		Spec: appsv1.DeploymentSpec{
			Replicas:             replicas,
			RevisionHistoryLimit: &history,
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelPerformer: p.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
				Spec:       pod.Spec,
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &maxUnavailable, MaxSurge: &maxSurge}},
		},
	}
}

// DeploymentFacts reads the Deployment facts: dep nil means it does not exist (returns nil);
// owner is the Performer's UID. want is the desired Deployment (nil when it cannot be built):
// when its pod template's labels differ from the live one's (the Performer's labels changed),
// SpecHash reads "" so the template is re-applied: with RollingUpdate, labels reach the Pod.
// ScaleDiffers: want has a replica count (no spec.autoscaling) and the live one differs (an
// autoscaling removed, or a `kubectl scale`): the count is put back.
func DeploymentFacts(dep, want *appsv1.Deployment, owner types.UID) *Deployment {
	if dep == nil {
		return nil
	}
	f := &Deployment{Foreign: !controlledBy(dep, owner), Deleting: dep.DeletionTimestamp != nil,
		SpecHash: dep.Spec.Template.Annotations[v1alpha1.AnnotationSpecHash]}
	f.Replicas, f.CurrentReplicas = autoscale.DeploymentReplicas(dep)
	if want != nil && !maps.Equal(dep.Spec.Template.Labels, want.Spec.Template.Labels) {
		f.SpecHash = ""
	}
	f.ScaleDiffers = want != nil && want.Spec.Replicas != nil && f.Replicas != *want.Spec.Replicas
	return f
}

// Autoscaling is spec.autoscaling when it applies: with strategy RollingUpdate (the
// Deployment); nil otherwise (the CRD refuses it with Recreate).
func Autoscaling(p *v1alpha1.Performer) *v1alpha1.Autoscaling {
	if p.Spec.Strategy != v1alpha1.PerformerRollingUpdate {
		return nil
	}
	return p.Spec.Autoscaling
}

// DesiredAutoscaler is the HorizontalPodAutoscaler performer-<name> when spec.autoscaling wants
// one (not external; nil otherwise): it scales the Deployment performer-<name> between the
// bounds on the metric (autoscale.Desired), labelled as the other owned objects. No owner
// reference (the controller adds it).
func DesiredAutoscaler(p *v1alpha1.Performer) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	a := Autoscaling(p)
	if err := autoscale.Check(a); err != nil {
		return nil, err
	}
	return autoscale.Desired(a, autoscale.Target{Name: ObjectName(p.Name), Namespace: p.Namespace, Labels: Labels(p), Deployment: ObjectName(p.Name)})
}

// ReplicasToWrite is the spec.replicas the reconciler writes on the Deployment performer-<name>:
// 1 without spec.autoscaling; with it minReplicas when it creates the Deployment (exists
// false) and afterwards live, as it is (autoscale.ReplicasToWrite).
func ReplicasToWrite(p *v1alpha1.Performer, exists bool, live *int32) *int32 {
	return autoscale.ReplicasToWrite(Autoscaling(p), 1, exists, live)
}

// ReadyPods counts the Deployment's Pods (listed by gantry.dev/performer=<name>) of spec hash
// hash that are Ready and not being deleted (the Recreate strategy's bare Pod excluded).
func ReadyPods(pods []corev1.Pod, owner types.UID, hash string) int32 {
	var n int32
	for i := range pods {
		p := &pods[i]
		if !controlledBy(p, owner) && p.DeletionTimestamp == nil && p.Annotations[v1alpha1.AnnotationSpecHash] == hash && podIsReady(p) {
			n++
		}
	}
	return n
}

func podIsReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NewestPod picks, among a Deployment's Pods (listed by gantry.dev/performer=<name>), the
// one that is not being deleted and carries spec hash hash that the Performer's phase is read
// from during and after a rolling update: a Pod that has not ended (phase Failed or
// Succeeded) before one that has (the ReplicaSet's replacement of a Pod that ended, even one
// created in the same second: creationTimestamp counts whole seconds), then a Ready one
// before one that is not (of an autoscaled performer's replicas, one that serves), then the
// newest, then the greatest name (a stable choice). Pods controlled directly by the Performer (the Recreate
// strategy's) are skipped. nil when there is none.
func NewestPod(pods []corev1.Pod, owner types.UID, hash string) *corev1.Pod {
	var best *corev1.Pod
	ended := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
	}
	for i := range pods {
		p := &pods[i]
		if controlledBy(p, owner) || p.DeletionTimestamp != nil || p.Annotations[v1alpha1.AnnotationSpecHash] != hash {
			continue
		}
		switch {
		case best == nil, ended(best) && !ended(p):
			best = p
		case ended(best) != ended(p):
		case !podIsReady(best) && podIsReady(p):
			best = p
		case podIsReady(best) != podIsReady(p):
		case best.CreationTimestamp.Before(&p.CreationTimestamp),
			best.CreationTimestamp.Equal(&p.CreationTimestamp) && p.Name > best.Name:
			best = p
		}
	}
	return best
}

// EndedPods are the disruptions (failure.EndedFromOutside) of the Pods in pods that a
// Deployment of the Performer owner runs (the bare Pod performer-<name> and newest, the Pod
// the status describes, excluded) and that ended or are ending from outside: evicted,
// preempted, deleted, their node shut down or gone. With autoscaled, a Pod merely being
// deleted is not counted: the ReplicaSet deletes Pods when the autoscaler scales down, which
// is no disruption (an eviction still is: it carries a DisruptionTarget condition or a
// reason). Nil when there are none.
func EndedPods(pods []corev1.Pod, owner types.UID, newest *corev1.Pod, autoscaled bool) []failure.Disruption {
	var out []failure.Disruption
	for i := range pods {
		p := &pods[i]
		if controlledBy(p, owner) || newest != nil && p.UID == newest.UID {
			continue
		}
		if dis, ok := failure.EndedFromOutside(p); ok && (!autoscaled || dis.Reason != failure.DisruptionDeleted) {
			out = append(out, dis)
		}
	}
	return out
}

// SpecHash is the hex SHA-256 (first 16 digits) of the JSON of a Pod spec as DesiredPod builds
// it plus spec.version and the Performer's gantry.dev/restartedAt annotation (a restart
// request, as `kubectl rollout restart` stamps a pod template): the value of the
// gantry.dev/spec-hash annotation. An empty restartedAt leaves the hash as it was without it.
func SpecHash(spec corev1.PodSpec, version, restartedAt string) (string, error) {
	b, err := json.Marshal(struct {
		Spec        corev1.PodSpec `json:"spec"`
		Version     string         `json:"version"`
		RestartedAt string         `json:"restartedAt,omitempty"`
	}{spec, version, restartedAt})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16], nil
}

// DesiredService builds the ClusterIP Service performer-<name> on the gRPC port, selecting the
// Performer's Pod by v1alpha1.LabelPerformer; no owner reference (the controller adds it).
func DesiredService(p *v1alpha1.Performer) *corev1.Service {
	return &corev1.Service{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      ObjectName(p.Name),
			Namespace: p.Namespace,
			Labels:    Labels(p),
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: map[string]string{v1alpha1.LabelPerformer: p.Name},
			Ports: []corev1.ServicePort{{
				Name: PortName, Port: GRPCPort(p), TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP,
			}},
		},
	}
}

// ServiceUpToDate reports whether a live Service has the desired type, selector and ports
// (fields the API server defaults, such as clusterIP and nodePort, are ignored).
func ServiceUpToDate(have, want *corev1.Service) bool {
	if have.Spec.Type != want.Spec.Type || len(have.Spec.Selector) != len(want.Spec.Selector) || len(have.Spec.Ports) != len(want.Spec.Ports) {
		return false
	}
	for k, v := range want.Spec.Selector {
		if have.Spec.Selector[k] != v {
			return false
		}
	}
	for i, w := range want.Spec.Ports {
		h := have.Spec.Ports[i]
		if h.Name != w.Name || h.Port != w.Port || h.TargetPort != w.TargetPort || h.Protocol != w.Protocol {
			return false
		}
	}
	return true
}

// ServiceFacts reads the Service facts: svc nil means it does not exist; owner is the
// Performer's UID (a Service not controlled by it is Foreign).
func ServiceFacts(svc, want *corev1.Service, owner types.UID) Service {
	if svc == nil {
		return Service{}
	}
	if !controlledBy(svc, owner) {
		return Service{Exists: true, Foreign: true}
	}
	return Service{Exists: true, UpToDate: svc.DeletionTimestamp == nil && ServiceUpToDate(svc, want)}
}

// PodFacts reads the Pod facts from a live Pod: pod nil means it does not exist (returns nil);
// owner is the Performer's UID (a Pod not controlled by it is Foreign). Only the performer
// container's state is read, plus any other regular containers; Disrupted says whether the
// Pod ended from outside (failure.EndedFromOutside).
func PodFacts(pod *corev1.Pod, owner types.UID) *Pod {
	if pod == nil {
		return nil
	}
	f := &Pod{
		Name:     pod.Name,
		UID:      string(pod.UID),
		Foreign:  !controlledBy(pod, owner),
		Deleting: pod.DeletionTimestamp != nil,
		SpecHash: pod.Annotations[v1alpha1.AnnotationSpecHash],
		Phase:    pod.Status.Phase,
		Reason:   pod.Status.Reason,
		Message:  pod.Status.Message,
		NodeName: pod.Spec.NodeName,
	}
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case corev1.PodScheduled:
			f.Scheduled = PodCondition{Status: c.Status, Reason: c.Reason, Message: c.Message}
		case corev1.PodReady:
			f.Ready = c.Status == corev1.ConditionTrue
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		c := Container{Name: cs.Name}
		if w := cs.State.Waiting; w != nil {
			c.Waiting = &ContainerState{Reason: w.Reason, Message: w.Message}
		}
		if t := cs.State.Terminated; t != nil {
			c.Terminated = &ContainerState{Reason: t.Reason, Message: t.Message, ExitCode: t.ExitCode}
		}
		if t := cs.LastTerminationState.Terminated; t != nil {
			c.LastTerminated = &ContainerState{Reason: t.Reason, Message: t.Message, ExitCode: t.ExitCode}
		}
		f.Containers = append(f.Containers, c)
	}
	if dis, ok := failure.EndedFromOutside(pod); ok {
		f.Disrupted = &dis
	}
	return f
}

func controlledBy(obj metav1.Object, owner types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner
}

// Refs returns the Secrets and ConfigMaps spec.envFrom reads, one per object (in order of
// first reference) with the keys read from it; Exists and HasKey are left for the controller
// to fill in.
func Refs(p *v1alpha1.Performer) []failure.Ref {
	var out []failure.Ref
	add := func(kind string, r *v1alpha1.KeyRef) {
		for i := range out {
			if out[i].Kind == kind && out[i].Name == r.Name {
				if !slices.Contains(out[i].Keys, r.Key) {
					out[i].Keys = append(out[i].Keys, r.Key)
				}
				return
			}
		}
		out = append(out, failure.Ref{Kind: kind, Namespace: p.Namespace, Name: r.Name, Keys: []string{r.Key}})
	}
	for _, e := range p.Spec.EnvFrom {
		if e.SecretKeyRef != nil {
			add("Secret", e.SecretKeyRef)
		}
		if e.ConfigMapKeyRef != nil {
			add("ConfigMap", e.ConfigMapKeyRef)
		}
	}
	return out
}
