package workspace

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// KAITO's custom inference.template (examples/custom-model-integration/custom-model-deployment.yaml):
// a named container and an in-memory emptyDir at /dev/shm. The container keeps its name (the
// default is "model"), and a volume's emptyDir carries its medium and sizeLimit; a plain
// emptyDir stays plain.
func TestPodTemplateKAITOCustomTemplate(t *testing.T) {
	gi := func(name string, vols ...v1alpha1.WorkspaceVolume) *v1alpha1.Workspace {
		return &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "custom-llm", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{
			Resource: v1alpha1.WorkspaceResource{GPUCount: 1},
			Inference: &v1alpha1.WorkspaceInference{Model: "custom-llm", Image: "mcr.microsoft.com/aks/kaito/kaito-base:0.2.0", ContainerName: name,
				Command: []string{"accelerate"}, Volumes: vols}}}
	}
	size := resource.MustParse("16Gi")
	for _, tc := range []struct {
		name      string
		w         *v1alpha1.Workspace
		container string
		emptyDir  *corev1.EmptyDirVolumeSource
	}{
		{"KAITO example: named container, memory emptyDir", gi("custom-llm-container", v1alpha1.WorkspaceVolume{Name: "dshm", MountPath: "/dev/shm", EmptyDir: true, Medium: "Memory"}),
			"custom-llm-container", &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}},
		{"memory emptyDir with a size limit", gi("vllm", v1alpha1.WorkspaceVolume{Name: "dshm", MountPath: "/dev/shm", EmptyDir: true, Medium: "Memory", SizeLimit: "16Gi"}),
			"vllm", &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &size}},
		{"disk emptyDir with a size limit", gi("", v1alpha1.WorkspaceVolume{Name: "scratch", MountPath: "/scratch", EmptyDir: true, SizeLimit: "16Gi"}),
			ContainerName, &corev1.EmptyDirVolumeSource{SizeLimit: &size}},
		{"plain emptyDir, default container name", gi("", v1alpha1.WorkspaceVolume{Name: "scratch", MountPath: "/scratch", EmptyDir: true}),
			ContainerName, &corev1.EmptyDirVolumeSource{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := resolvedTemplate(t, tc.w)
			if n := spec.Containers[0].Name; n != tc.container {
				t.Errorf("container name %q, want %q", n, tc.container)
			}
			if len(spec.Volumes) != 1 || !reflect.DeepEqual(spec.Volumes[0].EmptyDir, tc.emptyDir) {
				t.Fatalf("volumes %+v, want one emptyDir %+v", spec.Volumes, tc.emptyDir)
			}
			v := tc.w.Spec.Inference.Volumes[0]
			if want := []corev1.VolumeMount{{Name: v.Name, MountPath: v.MountPath}}; !reflect.DeepEqual(spec.Containers[0].VolumeMounts, want) {
				t.Errorf("mounts %+v, want %+v", spec.Containers[0].VolumeMounts, want)
			}
			if len(Refs(tc.w)) != 0 {
				t.Errorf("refs %+v: an emptyDir references nothing", Refs(tc.w))
			}
		})
	}
	// The container name is in the Deployment's template, so the spec hash changes with it and
	// the pods roll; a multi-node group's StatefulSet carries it too.
	a, err := DesiredDeployment(gi(""))
	if err != nil {
		t.Fatal(err)
	}
	b, err := DesiredDeployment(gi("custom-llm-container"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Annotations[v1alpha1.AnnotationSpecHash] == b.Annotations[v1alpha1.AnnotationSpecHash] {
		t.Error("a renamed container keeps the spec hash: the Deployment would not be updated")
	}
	g := gi("custom-llm-container")
	g.Spec.Resource.Count, g.Spec.Inference.ModelGPUs = 2, 2
	rg, err := Resolve(g)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := DesiredStatefulSet(rg)
	if err != nil {
		t.Fatal(err)
	}
	if n := ss.Spec.Template.Spec.Containers[0].Name; n != "custom-llm-container" {
		t.Errorf("group container name %q", n)
	}
}

// KAITO's tuning preset accessMode private with presetOptions.image and imagePullSecrets
// (examples/fine-tuning/kaito_workspace_tuning_falcon_7b_oai.yaml), and
// presetOptions.modelAccessSecret: the Job's container runs the private image, its pod pulls
// with the Secrets (as KAITO's tuning Job did, GetTuningImageInfo before v0.4.6), the
// container gets HF_TOKEN from the model access Secret (as KAITO's model servers), and every
// Secret is a ref (the token's key with it). Public and unset add nothing.
func TestPodTemplateTuningPresetOptions(t *testing.T) {
	tuning := func(tu v1alpha1.WorkspaceTuning) *v1alpha1.Workspace {
		tu.Method, tu.Preset = v1alpha1.TuningQLoRA, "falcon-7b"
		tu.Input, tu.Output = v1alpha1.WorkspaceDataSource{URLs: []string{"https://example.com/train.parquet"}}, v1alpha1.WorkspaceDataDestination{Image: "registry.example/adapters/x:1", ImagePushSecret: "push"}
		return &v1alpha1.Workspace{ObjectMeta: metav1.ObjectMeta{Name: "tune", Namespace: "ns"}, Spec: v1alpha1.WorkspaceSpec{Tuning: &tu}}
	}
	hfToken := corev1.EnvVar{Name: ModelAccessKey, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: ModelAccessKey}}}
	preset, _ := LookupPreset("falcon-7b")
	for _, tc := range []struct {
		name   string
		w      *v1alpha1.Workspace
		image  string
		pull   []corev1.LocalObjectReference
		token  bool
		secret []string // the Secret refs, "name" or "name:key"
	}{
		{"KAITO example: private", tuning(v1alpha1.WorkspaceTuning{AccessMode: "private", Image: "aimodelsregistrytest.azurecr.io/kaito-falcon-7b:0.0.4", ImagePullSecrets: []string{"acr-pull"}}),
			"aimodelsregistrytest.azurecr.io/kaito-falcon-7b:0.0.4", []corev1.LocalObjectReference{{Name: "acr-pull"}}, false, []string{"push", "acr-pull"}},
		{"private with a model access secret", tuning(v1alpha1.WorkspaceTuning{AccessMode: "private", Image: "registry.example/falcon:1", ImagePullSecrets: []string{"a", "b"}, ModelAccessSecret: "hf-token"}),
			"registry.example/falcon:1", []corev1.LocalObjectReference{{Name: "a"}, {Name: "b"}}, true, []string{"push", "a", "b", "hf-token:HF_TOKEN"}},
		{"public with a model access secret", tuning(v1alpha1.WorkspaceTuning{AccessMode: "public", ModelAccessSecret: "hf-token"}),
			preset.Image, nil, true, []string{"push", "hf-token:HF_TOKEN"}},
		{"unset", tuning(v1alpha1.WorkspaceTuning{}), preset.Image, nil, false, []string{"push"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := resolvedTemplate(t, tc.w)
			c := spec.Containers[0]
			if c.Image != tc.image {
				t.Errorf("image %q, want %q", c.Image, tc.image)
			}
			if !reflect.DeepEqual(spec.ImagePullSecrets, tc.pull) {
				t.Errorf("image pull secrets %v, want %v", spec.ImagePullSecrets, tc.pull)
			}
			if has := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return reflect.DeepEqual(e, hfToken) }); has != tc.token {
				t.Errorf("env %+v: HF_TOKEN from hf-token %v, want %v", c.Env, has, tc.token)
			}
			if n := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == ModelAccessKey && e.Value != "" }); n >= 0 {
				t.Errorf("env %+v: the token is a literal", c.Env)
			}
			var secrets []string
			for _, r := range Refs(tc.w) {
				if r.Kind != "Secret" {
					continue
				}
				s := r.Name
				for _, k := range r.Keys {
					s += ":" + k
				}
				secrets = append(secrets, s)
			}
			if !slices.Equal(secrets, tc.secret) {
				t.Errorf("secret refs %v, want %v", secrets, tc.secret)
			}
		})
	}
}
