package performer

import (
	"errors"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

func samplePerformer() *v1alpha1.Performer {
	sa := "high"
	return &v1alpha1.Performer{
		ObjectMeta: metav1.ObjectMeta{Name: "avs", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"team": "x", v1alpha1.LabelManagedBy: "terraform"}},
		Spec: v1alpha1.PerformerSpec{
			Image:              imgA,
			ImagePullSecrets:   []corev1.LocalObjectReference{{Name: "regcred"}},
			Env:                map[string]string{"B": "2", "A": "1"},
			EnvFrom:            []v1alpha1.EnvFromRef{{Name: "KEY", SecretKeyRef: &v1alpha1.KeyRef{Name: "keys", Key: "bls"}}, {Name: "CFG", ConfigMapKeyRef: &v1alpha1.KeyRef{Name: "cfg", Key: "c"}}},
			Command:            []string{"/performer"},
			Args:               []string{"--port=9090"},
			ServiceAccountName: "performer",
			Resources:          v1alpha1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
			Scheduling:         v1alpha1.Scheduling{PriorityClassName: &sa},
			HardwareRequirements: v1alpha1.HardwareRequirements{
				GPUCount: 1, GPUType: "NVIDIA-H100-80GB-HBM3", TEERequired: true, TEEType: v1alpha1.TEETDX,
			},
		},
	}
}

func TestDesiredPod(t *testing.T) {
	p := samplePerformer()
	pod, err := DesiredPod(p)
	if err != nil {
		t.Fatal(err)
	}
	if pod.Name != "performer-avs" || pod.Namespace != "ns" {
		t.Errorf("name %s/%s", pod.Namespace, pod.Name)
	}
	wantLabels := map[string]string{"team": "x", v1alpha1.LabelPerformer: "avs", v1alpha1.LabelManagedBy: ManagedBy}
	if !reflect.DeepEqual(pod.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", pod.Labels, wantLabels)
	}
	if pod.Annotations[v1alpha1.AnnotationSpecHash] == "" {
		t.Error("no spec hash")
	}
	s := pod.Spec
	if s.RestartPolicy != corev1.RestartPolicyAlways || s.ServiceAccountName != "performer" || s.PriorityClassName != "high" ||
		s.RuntimeClassName == nil || *s.RuntimeClassName != hardware.RuntimeClassTDX || len(s.ImagePullSecrets) != 1 {
		t.Errorf("pod spec %+v", s)
	}
	wantSel := map[string]string{hardware.LabelGPUPresent: "true", hardware.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", hardware.LabelTDX: "true"}
	if !reflect.DeepEqual(s.NodeSelector, wantSel) {
		t.Errorf("nodeSelector %v", s.NodeSelector)
	}
	if len(s.Tolerations) != 1 || s.Tolerations[0].Key != hardware.TaintGPU {
		t.Errorf("tolerations %v", s.Tolerations)
	}
	c := s.Containers[0]
	if c.Name != "performer" || c.Image != imgA || c.ImagePullPolicy != corev1.PullIfNotPresent ||
		!reflect.DeepEqual(c.Command, []string{"/performer"}) || !reflect.DeepEqual(c.Args, []string{"--port=9090"}) {
		t.Errorf("container %+v", c)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "grpc" || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("ports %v", c.Ports)
	}
	var envNames []string
	for _, e := range c.Env {
		envNames = append(envNames, e.Name)
	}
	if !reflect.DeepEqual(envNames, []string{"A", "B", "KEY", "CFG"}) || c.Env[2].ValueFrom.SecretKeyRef.Key != "bls" || c.Env[3].ValueFrom.ConfigMapKeyRef.Name != "cfg" {
		t.Errorf("env %v", c.Env)
	}
	if q := c.Resources.Limits[hardware.ResourceGPU]; q.Value() != 1 {
		t.Errorf("gpu limit %v", c.Resources.Limits)
	}
	if q := c.Resources.Requests[corev1.ResourceCPU]; q.String() != "1" {
		t.Errorf("cpu request %v", c.Resources.Requests)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket.Port != intstr.FromString("grpc") {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}
}

func TestSpecHash(t *testing.T) {
	hashOf := func(mod func(*v1alpha1.Performer)) string {
		p := samplePerformer()
		mod(p)
		pod, err := DesiredPod(p)
		if err != nil {
			t.Fatal(err)
		}
		return pod.Annotations[v1alpha1.AnnotationSpecHash]
	}
	base := hashOf(func(*v1alpha1.Performer) {})
	for i := 0; i < 20; i++ { // map iteration order must not matter
		if h := hashOf(func(*v1alpha1.Performer) {}); h != base {
			t.Fatalf("unstable hash %s vs %s", h, base)
		}
	}
	changes := map[string]func(*v1alpha1.Performer){
		"image":    func(p *v1alpha1.Performer) { p.Spec.Image = imgB },
		"version":  func(p *v1alpha1.Performer) { p.Spec.Version = "2" },
		"env":      func(p *v1alpha1.Performer) { p.Spec.Env["A"] = "3" },
		"gpuCount": func(p *v1alpha1.Performer) { p.Spec.HardwareRequirements.GPUCount = 2 },
		"grpcPort": func(p *v1alpha1.Performer) { p.Spec.GRPCPort = 7070 },
		"args":     func(p *v1alpha1.Performer) { p.Spec.Args = nil },
		"restart": func(p *v1alpha1.Performer) {
			p.Annotations = map[string]string{v1alpha1.AnnotationRestartedAt: "2026-11-24T23:30:00Z"}
		},
	}
	for name, mod := range changes {
		if hashOf(mod) == base {
			t.Errorf("%s change does not change the spec hash", name)
		}
	}
	if hashOf(func(p *v1alpha1.Performer) { p.Labels["other"] = "y" }) != base {
		t.Error("a label change changed the spec hash")
	}
}

func TestDesiredPodErrors(t *testing.T) {
	p := samplePerformer()
	p.Spec.Scheduling.NodeSelector = map[string]string{hardware.LabelGPUProduct: "NVIDIA-A100-SXM4-80GB"}
	_, err := DesiredPod(p)
	var ce *hardware.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want ConflictError", err)
	}
	p = samplePerformer()
	p.Spec.EnvFrom = []v1alpha1.EnvFromRef{{Name: "X"}}
	_, err = DesiredPod(p)
	var ie *hardware.InvalidError
	if !errors.As(err, &ie) {
		t.Fatalf("err = %v, want InvalidError", err)
	}
}

func TestServiceAndEndpoint(t *testing.T) {
	p := samplePerformer()
	svc := DesiredService(p)
	if svc.Name != "performer-avs" || svc.Spec.Type != corev1.ServiceTypeClusterIP ||
		!reflect.DeepEqual(svc.Spec.Selector, map[string]string{v1alpha1.LabelPerformer: "avs"}) ||
		svc.Spec.Ports[0].Name != "grpc" || svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("service %+v", svc)
	}
	if got := Endpoint(p); got != "performer-avs.ns.svc.cluster.local:9090" {
		t.Errorf("endpoint %s", got)
	}
	p.Spec.GRPCPort = 7070
	if got := Endpoint(p); got != "performer-avs.ns.svc.cluster.local:7070" {
		t.Errorf("endpoint %s", got)
	}

	live := svc.DeepCopy()
	live.Spec.ClusterIP = "10.0.0.1" // defaulted fields are ignored
	if !ServiceUpToDate(live, svc) {
		t.Error("defaulted service reported out of date")
	}
	if ServiceUpToDate(live, DesiredService(p)) {
		t.Error("port change not detected")
	}
	owned := live.DeepCopy()
	ctrl := true
	owned.OwnerReferences = []metav1.OwnerReference{{UID: "uid-1", Controller: &ctrl}}
	if got := ServiceFacts(owned, svc, "uid-1"); got != (Service{Exists: true, UpToDate: true}) {
		t.Errorf("ServiceFacts owned = %+v", got)
	}
	if got := ServiceFacts(live, svc, "uid-1"); got != (Service{Exists: true, Foreign: true}) {
		t.Errorf("ServiceFacts foreign = %+v", got)
	}
	if got := ServiceFacts(nil, svc, "uid-1"); got != (Service{}) {
		t.Errorf("ServiceFacts nil = %+v", got)
	}
}

func TestPodFacts(t *testing.T) {
	if PodFacts(nil, "u") != nil {
		t.Fatal("nil pod")
	}
	ctrl := true
	now := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Annotations:       map[string]string{v1alpha1.AnnotationSpecHash: "h"},
			OwnerReferences:   []metav1.OwnerReference{{UID: types.UID("u"), Controller: &ctrl}},
			DeletionTimestamp: &now,
		},
		Spec: corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse},
			},
			ContainerStatuses: []corev1.ContainerStatus{{
				Name:                 "performer",
				State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}},
			}},
		},
	}
	got := PodFacts(pod, "u")
	want := &Pod{
		Deleting: true, SpecHash: "h", Phase: corev1.PodRunning, NodeName: "n1",
		Scheduled:  PodCondition{Status: corev1.ConditionTrue},
		Containers: []Container{{Name: "performer", Waiting: &ContainerState{Reason: "CrashLoopBackOff", Message: "back-off"}, LastTerminated: &ContainerState{Reason: "Error", ExitCode: 1}}},
		// Being deleted: ended from outside unless the machine deleted it itself.
		Disrupted: &failure.Disruption{Reason: failure.DisruptionDeleted, Message: "the pod is being deleted", At: now.Time},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PodFacts = %+v, want %+v", got, want)
	}
	if !PodFacts(pod, "other").Foreign {
		t.Error("foreign pod not detected")
	}
}

// NewestPod reads the ReplicaSet's replacement of a Pod that ended, even when both were created
// in the same second (creationTimestamp counts whole seconds); among live Pods the newest wins.
func TestNewestPodPrefersALivePod(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 28, 23, 26, 17, 0, time.UTC))
	pod := func(name string, phase corev1.PodPhase, created metav1.Time) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: created, Annotations: map[string]string{v1alpha1.AnnotationSpecHash: "h"}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	later := metav1.NewTime(at.Add(time.Second))
	for name, c := range map[string]struct {
		pods []corev1.Pod
		want string
	}{
		"ended first, replacement in the same second": {[]corev1.Pod{pod("b-ended", corev1.PodFailed, at), pod("a-new", corev1.PodPending, at)}, "a-new"},
		"replacement listed first":                    {[]corev1.Pod{pod("a-new", corev1.PodRunning, at), pod("b-ended", corev1.PodFailed, at)}, "a-new"},
		"an ended pod newer than the live one":        {[]corev1.Pod{pod("old", corev1.PodRunning, at), pod("ended", corev1.PodFailed, later)}, "old"},
		"two live pods: the newest":                   {[]corev1.Pod{pod("new", corev1.PodPending, later), pod("old", corev1.PodRunning, at)}, "new"},
		"only an ended pod":                           {[]corev1.Pod{pod("ended", corev1.PodFailed, at)}, "ended"},
	} {
		if got := NewestPod(c.pods, "performer-uid", "h"); got == nil || got.Name != c.want {
			t.Errorf("%s: got %v, want %s", name, got, c.want)
		}
	}
}
