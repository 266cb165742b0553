package adopt

import (
	"os"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func readFixture(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	return u
}

func fromKAITO(t *testing.T, fixture string) (*v1alpha1.Workspace, []string) {
	t.Helper()
	ws, warn, err := FromKAITO(readFixture(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	return ws, warn
}

func wantWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
}

// A preset inference Workspace: resource, preset options, config, adapters and the
// performance-mode annotation map; preferredNodes, a Gt selector, a URL adapter, KAITO's
// controller annotations and unknown fields are warnings.
func TestFromKAITOInference(t *testing.T) {
	ws, warn := fromKAITO(t, "kaito-inference.yaml")
	if ws.Name != "phi-4" || ws.Namespace != "ml" || ws.Labels["team"] != "ml" || !reflect.DeepEqual(ws.Annotations, map[string]string{"owner": "alice"}) {
		t.Errorf("metadata: %+v", ws.ObjectMeta)
	}
	r := ws.Spec.Resource
	if r.Count != 2 || r.InstanceType != "Standard_NC24ads_A100_v4" || r.LabelSelector["apps"] != "phi-4" || r.ProvisionNodes != nil || r.Partition != nil {
		t.Errorf("resource: %+v", r)
	}
	if want := []v1alpha1.LabelRequirement{{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}}}; !reflect.DeepEqual(r.LabelSelectorExpressions, want) {
		t.Errorf("expressions: %+v", r.LabelSelectorExpressions)
	}
	in := ws.Spec.Inference
	if in == nil || ws.Spec.Tuning != nil {
		t.Fatalf("spec: %+v", ws.Spec)
	}
	want := &v1alpha1.WorkspaceInference{Preset: "phi-4-mini-instruct", AccessMode: "private", Image: "registry.local/phi-4:0.1", ImagePullSecrets: []string{"regcred"},
		ModelAccessSecret: "hf-token", Config: "phi-4-config", PerformanceMode: "throughput",
		Adapters: []v1alpha1.WorkspaceAdapter{{Name: "falcon-7b-adapter", Image: "registry.local/adapter:1", Strength: "0.2"}}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("inference:\n got %+v\nwant %+v", in, want)
	}
	wantWarnings(t, warn, []string{
		"inference.adapters[1]: only an adapter whose source is an image carries over; left out",
		"inference.rag: not known to Gantry; left out",
		"metadata.annotations[kaito.sh/runtime]: a KAITO controller setting Gantry does not read; left out",
		"resource.labelSelector.matchExpressions[gpus Gt]: operator not supported by label_selector_expressions; left out",
		"resource.preferredNodes: not supported by Gantry (deprecated in KAITO v1beta1); left out (gpu-0)",
	})
}

// A custom pod template maps to the typed template (image, command, args, first port, probes,
// volumes, pull secrets); the rest of the pod template is warned by field name, and a MIG
// partition with an instance type turns provisioning off.
func TestFromKAITOTemplate(t *testing.T) {
	ws, warn := fromKAITO(t, "kaito-template.yaml")
	r := ws.Spec.Resource
	if r.Partition == nil || r.Partition.Mode != v1alpha1.PartitionModeMIG || r.Partition.Profile != "1g.10gb" || r.ProvisionNodes == nil || *r.ProvisionNodes || r.Count != 0 {
		t.Errorf("resource: %+v", r)
	}
	want := &v1alpha1.WorkspaceInference{Model: "custom", ContainerName: "server", Image: "registry.local/server:2", Command: []string{"python", "serve.py"}, Args: []string{"--port", "5000"}, Port: 5000,
		ImagePullSecrets: []string{"regcred"},
		ReadinessProbe:   &v1alpha1.WorkspaceProbe{HTTPPath: "/health", Port: 5000, PeriodSeconds: 5},
		LivenessProbe:    &v1alpha1.WorkspaceProbe{Exec: []string{"cat", "/tmp/ok"}, FailureThreshold: 4},
		Volumes: []v1alpha1.WorkspaceVolume{{Name: "weights", MountPath: "/weights", ReadOnly: true, PVC: "weights-pvc"},
			{Name: "scratch", MountPath: "/scratch", EmptyDir: true, Medium: "Memory", SizeLimit: "8Gi"}}}
	if !reflect.DeepEqual(ws.Spec.Inference, want) {
		t.Errorf("inference:\n got %+v\nwant %+v", ws.Spec.Inference, want)
	}
	wantWarnings(t, warn, []string{
		`inference.template.metadata: a pod template's metadata is not supported; left out`,
		`inference.template.spec.containers[0].env: not supported by Gantry's typed template; left out`,
		`inference.template.spec.containers[0].ports[1:]: Gantry serves one port (the first, 5000); left out`,
		`inference.template.spec.containers[0].readinessProbe.timeoutSeconds: Gantry's probes are an HTTP GET or exec; left out`,
		`inference.template.spec.containers[1] (sidecar): Gantry runs one container (sidecars are not supported); left out`,
		`inference.template.spec.nodeSelector: not supported by Gantry's typed template; left out`,
		`inference.template.spec.volumes[host]: only configMap, secret, persistentVolumeClaim and emptyDir volumes are supported; left out`,
		`inference.template.spec.volumes[unused]: not mounted by the serving container; left out`,
		`inference.template: Gantry names the model of a custom image (inference.model, passed as MODEL_NAME); set to the workspace's name "custom"`,
	})
}

// A tuning Workspace: preset with its accessMode and presetOptions (image, pull secrets, model
// access secret), method (lowercased), config, input URLs, output image and push secret map;
// the input's name is a warning.
func TestFromKAITOTuning(t *testing.T) {
	ws, warn := fromKAITO(t, "kaito-tuning.yaml")
	want := &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningQLoRA, Preset: "phi-3-mini-4k-instruct", Config: "tuning-config",
		AccessMode: "private", Image: "registry.local/kaito-phi-3:private", ImagePullSecrets: []string{"regcred"}, ModelAccessSecret: "hf-token",
		Input:  v1alpha1.WorkspaceDataSource{URLs: []string{"https://example.com/data.parquet"}},
		Output: v1alpha1.WorkspaceDataDestination{Image: "registry.local/adapter:tuned", ImagePushSecret: "push-cred"}}
	if !reflect.DeepEqual(ws.Spec.Tuning, want) || ws.Spec.Inference != nil || ws.Spec.Resource.Count != 1 || ws.Spec.Resource.InstanceType != "Standard_NC6s_v3" {
		t.Errorf("spec:\n got %+v %+v\nwant tuning %+v", ws.Spec.Resource, ws.Spec.Tuning, want)
	}
	wantWarnings(t, warn, []string{"tuning.input.name: not used by Gantry; left out"})

	ws, warn = fromKAITO(t, "kaito-tuning-pvc.yaml")
	if tu := ws.Spec.Tuning; tu.Input.PVC != "data" || tu.Output.PVC != "" || tu.Method != v1alpha1.TuningLoRA {
		t.Errorf("tuning: %+v", tu)
	}
	wantWarnings(t, warn, []string{"tuning.output.volumeSource: only a persistentVolumeClaim carries over (tuning.output_pvc); left out"})
}

// KAITO's own examples translate whole: the custom model's named container and in-memory
// /dev/shm emptyDir (custom-model-deployment.yaml), and the private falcon-7b tuning preset
// (kaito_workspace_tuning_falcon_7b_oai.yaml).
func TestFromKAITOExamples(t *testing.T) {
	ws, warn := fromKAITO(t, "kaito-custom-model.yaml")
	in := ws.Spec.Inference
	if in == nil || in.ContainerName != "custom-llm-container" || in.Image != "mcr.microsoft.com/aks/kaito/kaito-base:0.2.0" || len(in.Command) != 1 || in.Command[0] != "accelerate" {
		t.Fatalf("inference: %+v", in)
	}
	if want := []v1alpha1.WorkspaceVolume{{Name: "dshm", MountPath: "/dev/shm", EmptyDir: true, Medium: "Memory"}}; !reflect.DeepEqual(in.Volumes, want) {
		t.Errorf("volumes %+v, want %+v", in.Volumes, want)
	}
	if in.ReadinessProbe == nil || in.ReadinessProbe.HTTPPath != "/health" || in.ReadinessProbe.Port != 5000 || in.LivenessProbe == nil || in.LivenessProbe.InitialDelaySeconds != 600 {
		t.Errorf("probes %+v %+v", in.ReadinessProbe, in.LivenessProbe)
	}
	for _, w := range warn {
		if strings.Contains(w, "dshm") || strings.Contains(w, "containers[0].name") {
			t.Errorf("warning %q: the name and the emptyDir carry over", w)
		}
	}

	ws, warn = fromKAITO(t, "kaito-tuning-private.yaml")
	want := &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningQLoRA, Preset: "falcon-7b", AccessMode: "private", Image: "aimodelsregistrytest.azurecr.io/kaito-falcon-7b:0.0.4",
		Config: "my-qlora-params", Input: v1alpha1.WorkspaceDataSource{URLs: []string{
			"https://huggingface.co/datasets/philschmid/dolly-15k-oai-style/resolve/main/data/train-00000-of-00001-54e3756291ca09c6.parquet?download=true"}},
		Output: v1alpha1.WorkspaceDataDestination{Image: "ACR_REPO_HERE.azurecr.io/IMAGE_NAME_HERE:0.0.1", ImagePushSecret: "ACR_REGISTRY_SECRET_HERE"}}
	if !reflect.DeepEqual(ws.Spec.Tuning, want) {
		t.Errorf("tuning:\n got %+v\nwant %+v", ws.Spec.Tuning, want)
	}
	wantWarnings(t, warn, nil)
}

// An emptyDir's medium other than Memory, and a sizeLimit the CRD cannot hold, are warnings.
func TestKAITOEmptyDir(t *testing.T) {
	for _, tc := range []struct {
		in   corev1.EmptyDirVolumeSource
		want v1alpha1.WorkspaceVolume
		warn int
	}{
		{corev1.EmptyDirVolumeSource{}, v1alpha1.WorkspaceVolume{}, 0},
		{corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr(resource.MustParse("2Gi"))}, v1alpha1.WorkspaceVolume{Medium: "Memory", SizeLimit: "2Gi"}, 0},
		{corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumHugePages}, v1alpha1.WorkspaceVolume{}, 1},
		{corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("0"))}, v1alpha1.WorkspaceVolume{}, 1},
		{corev1.EmptyDirVolumeSource{SizeLimit: ptr(resource.MustParse("1500m"))}, v1alpha1.WorkspaceVolume{}, 1},
	} {
		var got v1alpha1.WorkspaceVolume
		if w := kaitoEmptyDir("v", &tc.in, &got); got != tc.want || len(w) != tc.warn {
			t.Errorf("%+v: %+v %q, want %+v and %d warning(s)", tc.in, got, w, tc.want, tc.warn)
		}
	}
}

func ptr[T any](v T) *T { return &v }
