package workspace

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func resolvedTemplate(t *testing.T, w *v1alpha1.Workspace) corev1.PodSpec {
	t.Helper()
	rw, err := Resolve(w)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := PodTemplate(rw)
	if err != nil {
		t.Fatal(err)
	}
	return tpl.Spec
}

// resource.partition (KAITO's MIG mode): the pod requests one nvidia.com/mig-<profile> and no
// nvidia.com/gpu, tolerates the MIG key's NoSchedule taint, and a preset does not set
// gpuCount or a multi-node group (one slice per replica, as KAITO).
func TestPodTemplateMIGPartition(t *testing.T) {
	w := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{
		Resource:  v1alpha1.WorkspaceResource{Count: 2, GPUProduct: "NVIDIA-A100-SXM4-80GB", Partition: &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.10gb"}},
		Inference: &v1alpha1.WorkspaceInference{Preset: "falcon-40b-instruct"},
	}}
	rw, err := Resolve(w)
	if err != nil {
		t.Fatal(err)
	}
	if rw.Spec.Resource.GPUCount != 0 || MultiNode(rw) {
		t.Fatalf("gpuCount %d, multi-node %v: a partition is one slice per replica", rw.Spec.Resource.GPUCount, MultiNode(rw))
	}
	spec := resolvedTemplate(t, w)
	res := spec.Containers[0].Resources
	one := resource.MustParse("1")
	for _, l := range []corev1.ResourceList{res.Requests, res.Limits} {
		if q := l["nvidia.com/mig-1g.10gb"]; q.Cmp(one) != 0 || len(l) != 1 {
			t.Errorf("resources %v, want exactly nvidia.com/mig-1g.10gb: 1", l)
		}
	}
	if spec.NodeSelector["nvidia.com/gpu.product"] != "NVIDIA-A100-SXM4-80GB" {
		t.Errorf("node selector %v", spec.NodeSelector)
	}
	want := corev1.Toleration{Key: "nvidia.com/mig-1g.10gb", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	if !slices.Contains(spec.Tolerations, want) {
		t.Errorf("tolerations %v lack %v", spec.Tolerations, want)
	}
}

// KAITO's runtime arguments: a preset with inference.config gets
// --kaito-config-file=/mnt/config/inference_config.yaml and needs the ConfigMap's key;
// performanceMode (or KAITO's annotation) other than balanced gets --performance-mode; a
// custom image gets neither; flags already in args are not repeated.
func TestRuntimeArgs(t *testing.T) {
	ws := func(in v1alpha1.WorkspaceInference, ann map[string]string) *v1alpha1.Workspace {
		return &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Annotations: ann}, Spec: v1alpha1.WorkspaceSpec{Inference: &in}}
	}
	for _, tc := range []struct {
		name string
		w    *v1alpha1.Workspace
		want []string
	}{
		{"preset without config", ws(v1alpha1.WorkspaceInference{Preset: "phi-2"}, nil), nil},
		{"preset with config", ws(v1alpha1.WorkspaceInference{Preset: "phi-2", Config: "cfg"}, nil), []string{"--kaito-config-file=/mnt/config/inference_config.yaml"}},
		{"attribute", ws(v1alpha1.WorkspaceInference{Preset: "phi-2", Config: "cfg", PerformanceMode: "throughput"}, nil),
			[]string{"--kaito-config-file=/mnt/config/inference_config.yaml", "--performance-mode=throughput"}},
		{"balanced adds nothing", ws(v1alpha1.WorkspaceInference{Preset: "phi-2", PerformanceMode: "balanced"}, map[string]string{AnnotationPerformanceMode: "throughput"}), nil},
		{"KAITO annotation", ws(v1alpha1.WorkspaceInference{Preset: "phi-2"}, map[string]string{AnnotationPerformanceMode: "interactivity"}), []string{"--performance-mode=interactivity"}},
		{"invalid annotation ignored", ws(v1alpha1.WorkspaceInference{Preset: "phi-2"}, map[string]string{AnnotationPerformanceMode: "fast"}), nil},
		{"custom image", ws(v1alpha1.WorkspaceInference{Model: "m", Image: "i", Config: "cfg", PerformanceMode: "throughput"}, nil), nil},
		{"flag in args", ws(v1alpha1.WorkspaceInference{Preset: "phi-2", Config: "cfg", Args: []string{"--kaito-config-file=/x.yaml"}}, nil), nil},
	} {
		if got := RuntimeArgs(tc.w); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	w := ws(v1alpha1.WorkspaceInference{Preset: "phi-2", Config: "cfg", PerformanceMode: "throughput"}, nil)
	args := resolvedTemplate(t, w).Containers[0].Args
	if n := len(args); n < 2 || args[n-2] != "--kaito-config-file=/mnt/config/inference_config.yaml" || args[n-1] != "--performance-mode=throughput" {
		t.Errorf("container args %v: the runtime arguments come last", args)
	}
	refs := Refs(w)
	if len(refs) != 1 || refs[0].Kind != "ConfigMap" || !slices.Equal(refs[0].Keys, []string{InferenceConfigKey}) {
		t.Errorf("refs %+v, want the ConfigMap cfg with key %s", refs, InferenceConfigKey)
	}
}

// KAITO's inference.template settings and private presets on the pod: command, probes,
// volumes and their mounts, image pull secrets; the Secrets, ConfigMaps and claims are refs.
func TestPodTemplateInferenceTemplate(t *testing.T) {
	w := &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{Inference: &v1alpha1.WorkspaceInference{
		Preset: "phi-2", AccessMode: "private", Image: "registry.example/private/phi-2:1", ImagePullSecrets: []string{"regcred"},
		Command:        []string{"python3", "/workspace/serve.py"},
		ReadinessProbe: &v1alpha1.WorkspaceProbe{HTTPPath: "/health", InitialDelaySeconds: 5},
		LivenessProbe:  &v1alpha1.WorkspaceProbe{Exec: []string{"cat", "/tmp/ok"}, PeriodSeconds: 30, FailureThreshold: 5},
		Volumes: []v1alpha1.WorkspaceVolume{
			{Name: "extra", MountPath: "/etc/extra", ConfigMap: "extra-cm"},
			{Name: "creds", MountPath: "/etc/creds", Secret: "creds"},
			{Name: "cache", MountPath: "/cache", PVC: "model-cache", ReadOnly: true},
			{Name: "scratch", MountPath: "/scratch", EmptyDir: true},
		},
	}}}
	spec := resolvedTemplate(t, w)
	c := spec.Containers[0]
	if c.Image != "registry.example/private/phi-2:1" || !slices.Equal(c.Command, []string{"python3", "/workspace/serve.py"}) {
		t.Errorf("image %s command %v", c.Image, c.Command)
	}
	if !reflect.DeepEqual(spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "regcred"}}) {
		t.Errorf("image pull secrets %v", spec.ImagePullSecrets)
	}
	wantReady := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString(PortName), Scheme: corev1.URISchemeHTTP}},
		InitialDelaySeconds: 5, PeriodSeconds: 10, FailureThreshold: 3}
	if !reflect.DeepEqual(c.ReadinessProbe, wantReady) {
		t.Errorf("readiness %+v", c.ReadinessProbe)
	}
	wantLive := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ok"}}}, PeriodSeconds: 30, FailureThreshold: 5}
	if !reflect.DeepEqual(c.LivenessProbe, wantLive) {
		t.Errorf("liveness %+v", c.LivenessProbe)
	}
	if len(spec.Volumes) != 4 || spec.Volumes[0].ConfigMap.Name != "extra-cm" || spec.Volumes[1].Secret.SecretName != "creds" ||
		spec.Volumes[2].PersistentVolumeClaim.ClaimName != "model-cache" || spec.Volumes[3].EmptyDir == nil {
		t.Fatalf("volumes %+v", spec.Volumes)
	}
	wantMounts := []corev1.VolumeMount{{Name: "extra", MountPath: "/etc/extra", ReadOnly: true}, {Name: "creds", MountPath: "/etc/creds", ReadOnly: true},
		{Name: "cache", MountPath: "/cache", ReadOnly: true}, {Name: "scratch", MountPath: "/scratch"}}
	if !reflect.DeepEqual(c.VolumeMounts, wantMounts) {
		t.Errorf("mounts %+v", c.VolumeMounts)
	}
	var got []string
	for _, r := range Refs(w) {
		got = append(got, r.Kind+"/"+r.Name)
	}
	if want := []string{"Secret/regcred", "ConfigMap/extra-cm", "Secret/creds", "PersistentVolumeClaim/model-cache"}; !slices.Equal(got, want) {
		t.Errorf("refs %v, want %v", got, want)
	}
}

// With a MIG partition the Pending-trap check counts the profile's slices, one per replica:
// a node with 3 nvidia.com/mig-1g.10gb of which 2 are in use holds one replica, and the
// message names the MIG resource.
func TestCapacityOfMIGSlices(t *testing.T) {
	w := &v1alpha1.Workspace{Spec: v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Partition: &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: "1g.10gb"}}}}
	res, per := Accelerator(w)
	if res != "nvidia.com/mig-1g.10gb" || per != 1 {
		t.Fatalf("accelerator %s × %d", res, per)
	}
	nodes := []Node{
		{Name: "mig", Ready: true, AllocatableGPU: 8, Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8"), res: resource.MustParse("3")}},
		{Name: "whole", Ready: true, AllocatableGPU: 8, Allocatable: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("8")}},
	}
	mig := ForAccelerator(nodes, res)
	if nodes[0].AllocatableGPU != 8 {
		t.Fatal("ForAccelerator changed its input")
	}
	mig[0].UsedGPU = 2
	c := CapacityOf(mig, nil, nil, nil, per)
	c.Resource = string(res)
	if c.TotalGPUs != 3 || c.FreeGPUs != 1 || c.PlaceableReplicas != 1 {
		t.Fatalf("capacity %+v", c)
	}
	if msg := c.insufficientMessage(2); !strings.Contains(msg, "2 replica(s) of 1 nvidia.com/mig-1g.10gb each") || !strings.Contains(msg, "1 of 3 nvidia.com/mig-1g.10gb free") {
		t.Errorf("message %q", msg)
	}
}
