package adopt

import (
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func fromHourglass(t *testing.T, u *unstructured.Unstructured) (*v1alpha1.Performer, []string) {
	t.Helper()
	p, warn, err := FromHourglass(u)
	if err != nil {
		t.Fatal(err)
	}
	return p, warn
}

const (
	warnPriority      = "spec.scheduling.priorityClassName %q: Hourglass's operator never set it on the Pod; Gantry does (priority_class_name), and the Pod is rejected if no such PriorityClass exists"
	warnCustomLabels  = "spec.hardwareRequirements.customLabels: Hourglass's operator never applied them; Gantry adds them to the node selector (custom_labels), so the Pod runs only on nodes with these labels"
	warnSGX           = "spec.hardwareRequirements.teeType \"sgx\": Hourglass's operator never applied it; Gantry does (tee_type \"sgx\"): the Pod runs only on nodes labelled feature.node.kubernetes.io/cpu-security.sgx.enabled=true, with the TEE's runtime class unless scheduling sets one"
	warnUnsetGRPCPort = "spec.config.grpcPort: unset, and Hourglass's operator then serves on 8080 (its CRD's default 9090 applies only with spec.config); grpc_port = 8080 keeps the endpoint"
)

func sprintf(format, a string) string { return fmt.Sprintf(format, a) }

// Hourglass's own example Performers (hourglass-operator/docs/operator/examples.md and
// api-reference.md) translate field for field; each warns only about what Hourglass's
// operator ignored and Gantry applies (priority class, custom labels, TEE), and the minimal one
// about its unset gRPC port.
func TestFromHourglassExamples(t *testing.T) {
	for _, tc := range []struct {
		fixture, name, ns, image string
		port                     int32
		warn                     []string
	}{
		{"hourglass-basic.yaml", "basic-performer", "my-avs-project", "myavs/performer:v1.0.0", 9090, nil},
		{"hourglass-minimal.yaml", "minimal-performer", "my-avs-project", "myavs/performer:latest", 8080, []string{warnUnsetGRPCPort}},
		{"hourglass-gpu.yaml", "gpu-performer", "ml-workloads", "myavs/gpu-performer:v3.0.0", 9090, []string{warnCustomLabels, sprintf(warnPriority, "high-priority")}},
		{"hourglass-gpu-ref.yaml", "gpu-performer", "ml-workloads", "myavs/ml-performer:v3.0.0", 9090, nil},
		{"hourglass-tee.yaml", "tee-performer", "secure-compute", "myavs/tee-performer:v2.0.0", 8080, []string{warnCustomLabels, warnSGX, sprintf(warnPriority, "security-critical")}},
		{"hourglass-tee-ref.yaml", "tee-performer", "secure-compute", "myavs/secure-performer:v1.5.0", 8080, []string{warnCustomLabels, warnSGX}},
		{"hourglass-bottlerocket.yaml", "bottlerocket-performer", "secure-os", "myavs/secure-performer:v1.8.0", 9090, []string{sprintf(warnPriority, "system-critical")}},
		{"hourglass-complex.yaml", "complex-performer", "production", "myavs/performer:v2.1.0", 9090, []string{warnCustomLabels, sprintf(warnPriority, "high-priority")}},
	} {
		t.Run(tc.fixture, func(t *testing.T) {
			u := readFixture(t, tc.fixture)
			p, warn := fromHourglass(t, u)
			if p.Name != tc.name || p.Namespace != tc.ns || p.Spec.Image != tc.image || p.Spec.GRPCPort != tc.port || p.APIVersion != "gantry.dev/v1alpha1" || p.Kind != "Performer" {
				t.Errorf("got %s/%s image %s port %d (%s %s)", p.Namespace, p.Name, p.Spec.Image, p.Spec.GRPCPort, p.APIVersion, p.Kind)
			}
			avs, _, _ := unstructured.NestedString(u.Object, "spec", "avsAddress")
			version, _, _ := unstructured.NestedString(u.Object, "spec", "version")
			env, _, _ := unstructured.NestedStringMap(u.Object, "spec", "config", "environment")
			args, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "config", "args")
			cmd, _, _ := unstructured.NestedStringSlice(u.Object, "spec", "config", "command")
			sel, _, _ := unstructured.NestedStringMap(u.Object, "spec", "scheduling", "nodeSelector")
			custom, _, _ := unstructured.NestedStringMap(u.Object, "spec", "hardwareRequirements", "customLabels")
			if p.Spec.AVSAddress != avs || p.Spec.Version != version || !mapsEqual(p.Spec.Env, env) || !reflect.DeepEqual(p.Spec.Args, args) ||
				!reflect.DeepEqual(p.Spec.Command, cmd) || !mapsEqual(p.Spec.Scheduling.NodeSelector, sel) || !mapsEqual(p.Spec.HardwareRequirements.CustomLabels, custom) {
				t.Errorf("spec: %+v", p.Spec)
			}
			tol, _, _ := unstructured.NestedSlice(u.Object, "spec", "scheduling", "tolerations")
			_, hasAffinity, _ := unstructured.NestedMap(u.Object, "spec", "scheduling", "affinity")
			rc, _, _ := unstructured.NestedString(u.Object, "spec", "scheduling", "runtimeClass")
			if len(p.Spec.Scheduling.Tolerations) != len(tol) || (p.Spec.Scheduling.Affinity != nil) != hasAffinity || (rc != "") != (p.Spec.Scheduling.RuntimeClassName != nil) ||
				(rc != "" && *p.Spec.Scheduling.RuntimeClassName != rc) {
				t.Errorf("scheduling: %+v", p.Spec.Scheduling)
			}
			wantWarnings(t, warn, tc.warn)
		})
	}
}

// The GPU example: gpuType becomes the per-type resource Hourglass requests (gpu_resource
// nvidia.com/<gpuType>), not a node-label match (gpu_type); the nvidia.com/gpu entries of
// resources stay beside it, as Hourglass keeps them; affinity, tolerations, runtime class,
// priority class and image pull secrets carry over.
func TestFromHourglassGPU(t *testing.T) {
	p, _ := fromHourglass(t, readFixture(t, "hourglass-gpu.yaml"))
	hw := p.Spec.HardwareRequirements
	if hw.GPUCount != 2 || hw.GPUResource != "nvidia.com/nvidia-a100" || hw.GPUType != "" || hw.TEERequired {
		t.Errorf("hardware: %+v", hw)
	}
	if q, m := p.Spec.Resources.Requests["nvidia.com/gpu"], p.Spec.Resources.Limits[corev1.ResourceMemory]; q.Value() != 2 || m.String() != "16Gi" {
		t.Errorf("resources: %+v", p.Spec.Resources)
	}
	sc := p.Spec.Scheduling
	if *sc.RuntimeClassName != "nvidia" || *sc.PriorityClassName != "high-priority" || len(sc.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions) != 2 {
		t.Errorf("scheduling: %+v", sc)
	}
	if !reflect.DeepEqual(p.Spec.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "private-registry-secret"}}) {
		t.Errorf("image pull secrets: %v", p.Spec.ImagePullSecrets)
	}
}

// A Performer as ponos (Hourglass's executor) creates it: its hourglass.eigenlayer.io labels,
// kubectl's annotation and the status are left out; environmentFrom becomes env_from (an
// optional Secret key is a warning), the service account and pull policy carry over.
func TestFromHourglassPonos(t *testing.T) {
	p, warn := fromHourglass(t, readFixture(t, "hourglass-ponos.yaml"))
	if !reflect.DeepEqual(p.Labels, map[string]string{"app": "hourglass-performer"}) || !reflect.DeepEqual(p.Annotations, map[string]string{"team": "avs"}) {
		t.Errorf("metadata: %v %v", p.Labels, p.Annotations)
	}
	s := p.Spec
	want := []v1alpha1.EnvFromRef{{Name: "RPC_URL", ConfigMapKeyRef: &v1alpha1.KeyRef{Name: "avs-config", Key: "rpc-url"}},
		{Name: "API_KEY", SecretKeyRef: &v1alpha1.KeyRef{Name: "avs-secrets", Key: "api-key"}}}
	if !reflect.DeepEqual(s.EnvFrom, want) || s.ServiceAccountName != "hello-performer" || s.ImagePullPolicy != corev1.PullAlways || s.GRPCPort != 8080 ||
		s.AVSAddress != "0xCE2Ac75bE2E0951F1F7B288c7a6A9BfB6c331DC4" || s.Version != "v0.3.1" || !reflect.DeepEqual(s.Env, map[string]string{"LOG_LEVEL": "debug"}) {
		t.Errorf("spec: %+v", s)
	}
	wantWarnings(t, warn, []string{
		"metadata.labels[hourglass.eigenlayer.io/avs]: Hourglass's own label; left out",
		"metadata.labels[hourglass.eigenlayer.io/performer]: Hourglass's own label; left out",
		"spec.config.environmentFrom[1] (API_KEY): valueFrom.secretKeyRef.optional: Gantry waits for the Secret key (ReferenceNotFound) instead; left out",
	})
}

// What Gantry cannot carry, or Hourglass never applied, is a warning naming the field.
func TestFromHourglassLeftOut(t *testing.T) {
	u := readFixture(t, "hourglass-basic.yaml")
	set := func(v any, fields ...string) {
		if err := unstructured.SetNestedField(u.Object, v, fields...); err != nil {
			t.Fatal(err)
		}
	}
	u.SetName("Basic.Performer")
	set("0x1234", "spec", "avsAddress")
	set("Sometimes", "spec", "imagePullPolicy")
	set(int64(3), "spec", "replicas")
	set("x", "spec", "config", "logLevel")
	set(map[string]any{"requests": map[string]any{"nvidia.com/gpu": "1"}, "limits": map[string]any{"nvidia.com/gpu": "2"}, "claims": []any{map[string]any{"name": "c"}}}, "spec", "resources")
	set(map[string]any{"gpuCount": int64(2), "teeRequired": true, "teeType": "sev", "customLabels": map[string]any{"zone": "b", "bad key!": "x"}}, "spec", "hardwareRequirements")
	set(map[string]any{"nodeSelector": map[string]any{"zone": "a"}}, "spec", "scheduling")
	set([]any{map[string]any{"name": "A", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}, "configMapKeyRef": map[string]any{"name": "c", "key": "k"}}},
		map[string]any{"name": "1B", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}}, "spec", "config", "environmentFrom")
	p, warn := fromHourglass(t, u)
	hw := p.Spec.HardwareRequirements
	if hw.TEEType != v1alpha1.TEESEVSNP || !hw.TEERequired || hw.GPUCount != 2 || hw.CustomLabels != nil || p.Spec.AVSAddress != "" || p.Spec.ImagePullPolicy != "" || len(p.Spec.EnvFrom) != 0 {
		t.Errorf("spec: %+v", p.Spec)
	}
	if _, ok := p.Spec.Resources.Requests["nvidia.com/gpu"]; ok || p.Spec.Resources.Limits["nvidia.com/gpu"] != resource.MustParse("2") {
		t.Errorf("resources: %+v (the request of 1 GPU is not gpuCount's 2: left out; the limit of 2 kept)", p.Spec.Resources)
	}
	wantWarnings(t, warn, []string{
		"metadata.name \"Basic.Performer\": a Gantry Performer's name is a DNS-1035 label of at most 53 characters (it names the Pod and Service performer-<name>); the apply fails until the performer is declared under such a name",
		"spec.avsAddress \"0x1234\": Gantry's avs_address is 0x followed by 40 hex digits; left out",
		"spec.config.environmentFrom[0] (A): needs exactly one of valueFrom.secretKeyRef and valueFrom.configMapKeyRef; left out",
		"spec.config.environmentFrom[1] (1B): not an environment variable name Gantry accepts; left out",
		"spec.config.logLevel: not known to Gantry; left out",
		"spec.hardwareRequirements.customLabels[bad key!]: not a label key (name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')); left out",
		"spec.hardwareRequirements.customLabels[zone]: \"b\" conflicts with spec.scheduling.nodeSelector's \"a\"; left out",
		"spec.hardwareRequirements.teeType \"sev\": Hourglass's operator never applied it; Gantry does (tee_type \"sev-snp\"): the Pod runs only on nodes labelled feature.node.kubernetes.io/cpu-security.sev.snp.enabled=true, with the TEE's runtime class unless scheduling sets one",
		"spec.imagePullPolicy \"Sometimes\": not Always, Never or IfNotPresent; left out (IfNotPresent)",
		"spec.replicas: not known to Gantry; left out",
		"spec.resources.claims: dynamic resource claims are not supported by Gantry; left out",
		"spec.resources.requests[nvidia.com/gpu] 1: Hourglass's operator replaced it with gpuCount 2, as Gantry does; left out",
	})
}

// Not a Performer: an error.
func TestFromHourglassNotAPerformer(t *testing.T) {
	u := readFixture(t, "hourglass-basic.yaml")
	_ = unstructured.SetNestedField(u.Object, "not-a-map", "spec", "config")
	if _, _, err := FromHourglass(u); err == nil {
		t.Error("no error for spec.config: a string")
	}
}

func mapsEqual(a, b map[string]string) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b))
}
