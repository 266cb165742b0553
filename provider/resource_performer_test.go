package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// ---------------------------------------------------------------------------------------------
// Mapping: model → CR → model.

func str(s string) types.String { return types.StringValue(s) }

func minimalModel() performerModelV0 {
	return performerModelV0{
		Name:            str("p"),
		Namespace:       str("default"),
		Image:           str("ghcr.io/acme/performer:1"),
		ImagePullPolicy: str("IfNotPresent"),
		Strategy:        str("Recreate"),
		GRPCPort:        types.Int64Value(9090),
		Affinity:        jsontypes.NewNormalizedNull(),
	}
}

func fullModel() performerModelV0 {
	m := minimalModel()
	m.Name = str("full")
	m.Namespace = str("team-a")
	m.Labels = map[string]string{"app": "avs", "tier": "performer"}
	m.Annotations = map[string]string{"owner": "platform"}
	m.Version = str("1.2.0")
	m.AVSAddress = str("0x1234567890abcdef1234567890abcdef12345678")
	m.ImagePullPolicy = str("Always")
	m.ImagePullSecrets = []string{"regcred", "backup"}
	m.GRPCPort = types.Int64Value(8080)
	m.Env = map[string]string{"LOG_LEVEL": "debug", "CHAIN": "holesky"}
	m.EnvFrom = []envFromModel{
		{Name: str("OPERATOR_KEY"), SecretKeyRef: &keyRefModel{Name: str("keys"), Key: str("operator")}},
		{Name: str("RPC_URL"), ConfigMapKeyRef: &keyRefModel{Name: str("chains"), Key: str("rpc")}},
	}
	m.Command = []string{"/performer"}
	m.Args = []string{"--port", "8080"}
	m.ServiceAccountName = str("performer")
	m.Resources = &resourcesModel{Requests: map[string]string{"cpu": "500m", "memory": "256Mi"}, Limits: map[string]string{"memory": "1Gi"}}
	m.NodeSelector = map[string]string{"topology.kubernetes.io/zone": "zone-a"}
	m.Tolerations = []tolerationModel{
		{Key: str("dedicated"), Operator: str("Equal"), Value: str("avs"), Effect: str("NoSchedule"), TolerationSeconds: types.Int64Null()},
		{Key: str("node.kubernetes.io/unreachable"), Operator: str("Exists"), Value: types.StringNull(), Effect: str("NoExecute"), TolerationSeconds: types.Int64Value(30)},
	}
	m.Affinity = jsontypes.NewNormalizedValue(`{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}]}}}`)
	m.RuntimeClassName = str("kata-qemu-tdx")
	m.PriorityClassName = str("high")
	m.HardwareRequirements = &hardwareModel{
		GPUCount: types.Int64Value(2), GPUType: str("NVIDIA-H100-80GB-HBM3"),
		TEERequired: types.BoolValue(true), TEEType: str("tdx"),
		CustomLabels: map[string]string{"example.com/rack": "r1"},
	}
	m.NetworkPolicy = &networkPolicyModel{Enabled: types.BoolValue(true), AllowFrom: []networkPeerModel{
		{NamespaceSelector: map[string]string{"kubernetes.io/metadata.name": "monitoring"}},
		{PodSelector: map[string]string{"app": "debug"}},
		{PodSelector: map[string]string{"app": "prometheus"}, NamespaceSelector: map[string]string{}},
	}}
	return m
}

// apiRoundTrip expands m and passes the object through JSON, as the API server stores it.
func apiRoundTrip(t *testing.T, m performerModelV0) *unstructured.Unstructured {
	t.Helper()
	obj, err := expandPerformer(&m)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	return out
}

// withoutComputed clears the attributes flatten fills from status.
func withoutComputed(m performerModelV0) performerModelV0 {
	m.ID, m.Phase, m.GRPCEndpoint, m.NodeName, m.PodName, m.ServiceName = types.String{}, types.String{}, types.String{}, types.String{}, types.String{}, types.String{}
	m.CurrentReplicas, m.DesiredReplicas = types.Int64{}, types.Int64{}
	return m
}

func TestPerformerMappingRoundTrip(t *testing.T) {
	empties := minimalModel()
	empties.Name = str("empties")
	empties.Labels = map[string]string{}
	empties.Annotations = map[string]string{}
	empties.Version = str("")
	empties.AVSAddress = str("")
	empties.ImagePullSecrets = []string{}
	empties.Env = map[string]string{}
	empties.EnvFrom = []envFromModel{}
	empties.Command = []string{}
	empties.Args = []string{}
	empties.ServiceAccountName = str("")
	empties.Resources = &resourcesModel{Requests: map[string]string{}}
	empties.NodeSelector = map[string]string{}
	empties.Tolerations = []tolerationModel{}
	empties.Affinity = jsontypes.NewNormalizedValue(`{}`)
	empties.RuntimeClassName = str("")
	empties.PriorityClassName = str("")
	empties.HardwareRequirements = &hardwareModel{GPUCount: types.Int64Value(0), TEERequired: types.BoolValue(false), CustomLabels: map[string]string{}}
	empties.NetworkPolicy = &networkPolicyModel{Enabled: types.BoolValue(false), AllowFrom: []networkPeerModel{}}

	emptyHW := minimalModel()
	emptyHW.HardwareRequirements = &hardwareModel{}
	emptyHW.Resources = &resourcesModel{}

	spelled := minimalModel()
	spelled.Resources = &resourcesModel{Requests: map[string]string{"cpu": "0.5", "memory": "1024Mi"}}
	spelled.Affinity = jsontypes.NewNormalizedValue("{\n  \"podAntiAffinity\": {\"preferredDuringSchedulingIgnoredDuringExecution\": [{\"weight\": 100, \"podAffinityTerm\": {\"topologyKey\": \"kubernetes.io/hostname\", \"labelSelector\": {\"matchLabels\": {\"app\": \"avs\"}}}}]}\n}")

	for name, m := range map[string]performerModelV0{"minimal": minimalModel(), "full": fullModel(), "empties": empties, "empty objects": emptyHW, "spellings": spelled} {
		t.Run(name, func(t *testing.T) {
			obj := apiRoundTrip(t, m)
			got, err := flattenPerformer(obj, &m)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := withoutComputed(*got), withoutComputed(m); !reflect.DeepEqual(g, w) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", g, w)
			}
			if got.ID.ValueString() != m.Namespace.ValueString()+"/"+m.Name.ValueString() {
				t.Errorf("id = %s", got.ID)
			}
		})
	}
}

// An import has no prior state: empty values read as null, and a full object reads back
// exactly (this is what ImportStateVerify checks against the applied state).
func TestPerformerFlattenWithoutPrior(t *testing.T) {
	full := fullModel()
	obj := apiRoundTrip(t, full)
	got, err := flattenPerformer(obj, &performerModelV0{ID: str("team-a/full"), Name: str("full"), Namespace: str("team-a")})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := withoutComputed(*got), withoutComputed(full); !reflect.DeepEqual(g, w) {
		t.Errorf("import of a full object differs:\n got %+v\nwant %+v", g, w)
	}

	m := minimalModel()
	m.Env = map[string]string{}
	m.HardwareRequirements = &hardwareModel{GPUCount: types.Int64Value(0)}
	got, err = flattenPerformer(apiRoundTrip(t, m), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Env != nil || got.HardwareRequirements != nil || !got.Version.IsNull() || !got.Affinity.IsNull() {
		t.Errorf("empty values must import as null: %+v", got)
	}
}

func TestPerformerExpandShape(t *testing.T) {
	m := minimalModel()
	obj, err := expandPerformer(&m)
	if err != nil {
		t.Fatal(err)
	}
	spec := obj.Object["spec"].(map[string]interface{})
	for _, k := range []string{"resources", "scheduling", "hardwareRequirements", "env", "version"} {
		if _, ok := spec[k]; ok {
			t.Errorf("minimal spec carries %q: %v", k, spec)
		}
	}
	if _, ok := obj.Object["metadata"].(map[string]interface{})["creationTimestamp"]; ok {
		t.Errorf("metadata carries creationTimestamp")
	}
	if spec["grpcPort"] != int64(9090) || spec["imagePullPolicy"] != "IfNotPresent" {
		t.Errorf("defaults not sent explicitly: %v", spec)
	}

	full := fullModel()
	obj, err = expandPerformer(&full)
	if err != nil {
		t.Fatal(err)
	}
	hw, _, _ := unstructured.NestedMap(obj.Object, "spec", "hardwareRequirements")
	if hw["gpuCount"] != int64(2) || hw["teeType"] != "tdx" || hw["teeRequired"] != true {
		t.Errorf("hardwareRequirements = %v", hw)
	}
	aff, _, _ := unstructured.NestedMap(obj.Object, "spec", "scheduling", "affinity")
	if _, ok := aff["nodeAffinity"]; !ok {
		t.Errorf("affinity = %v", aff)
	}
	refs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "envFrom")
	if len(refs) != 2 || refs[0].(map[string]interface{})["secretKeyRef"] == nil || refs[1].(map[string]interface{})["configMapKeyRef"] == nil {
		t.Errorf("envFrom = %v", refs)
	}
}

// Out-of-band changes show up in the refreshed model (and so as drift in the plan).
func TestPerformerFlattenShowsDrift(t *testing.T) {
	m := fullModel()
	obj := apiRoundTrip(t, m)
	_ = unstructured.SetNestedField(obj.Object, "ghcr.io/acme/performer:evil", "spec", "image")
	_ = unstructured.SetNestedField(obj.Object, "1", "spec", "env", "INJECTED")
	_ = unstructured.SetNestedField(obj.Object, int64(7), "spec", "hardwareRequirements", "gpuCount")
	_ = unstructured.SetNestedField(obj.Object, "2", "spec", "resources", "requests", "cpu")
	labels := obj.GetLabels()
	delete(labels, "tier")
	labels["kubectl.kubernetes.io/restartedAt"] = "now" // system key: ignored
	obj.SetLabels(labels)
	got, err := flattenPerformer(obj, &m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Image.ValueString() != "ghcr.io/acme/performer:evil" || got.Env["INJECTED"] != "1" ||
		got.HardwareRequirements.GPUCount.ValueInt64() != 7 || got.Resources.Requests["cpu"] != "2" {
		t.Errorf("drift not reflected: %+v", got)
	}
	if _, ok := got.Labels["tier"]; ok || len(got.Labels) != 1 {
		t.Errorf("labels = %v, want only app (tier removed, system key ignored)", got.Labels)
	}
}

func TestPerformerStatusMapping(t *testing.T) {
	m := minimalModel()
	obj := apiRoundTrip(t, m)
	obj.Object["status"] = map[string]interface{}{
		"phase": "Running", "grpcEndpoint": "performer-p.default.svc.cluster.local:9090", "nodeName": "gantry-gpu-0",
		"podName": "performer-p", "serviceName": "performer-p", "observedGeneration": int64(1),
	}
	got, err := flattenPerformer(obj, &m)
	if err != nil {
		t.Fatal(err)
	}
	if got.Phase.ValueString() != "Running" || got.GRPCEndpoint.ValueString() != "performer-p.default.svc.cluster.local:9090" ||
		got.NodeName.ValueString() != "gantry-gpu-0" || got.PodName.ValueString() != "performer-p" || got.ServiceName.ValueString() != "performer-p" {
		t.Errorf("status mapping: %+v", got)
	}
	delete(obj.Object, "status")
	got, _ = flattenPerformer(obj, &m)
	if !got.Phase.IsNull() || !got.NodeName.IsNull() {
		t.Errorf("missing status must map to null: %+v", got)
	}
}

// converge removes map entries another field manager added, keeps system labels.
func TestConvergeRemovesForeignFields(t *testing.T) {
	m := minimalModel()
	m.Env = map[string]string{"A": "1"}
	m.Labels = map[string]string{"app": "avs"}
	desired, err := expandPerformer(&m)
	if err != nil {
		t.Fatal(err)
	}
	live := desired.DeepCopy()
	_ = unstructured.SetNestedField(live.Object, "injected", "spec", "env", "B")
	live.SetLabels(map[string]string{"app": "avs", "foreign": "x", "kubectl.kubernetes.io/restartedAt": "t"})
	live.SetResourceVersion("5")
	gvr := wait.Performer.GVR
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "PerformerList"}, live.DeepCopy())
	out, err := converge(context.Background(), dyn.Resource(gvr).Namespace("default"), desired, live)
	if err != nil {
		t.Fatal(err)
	}
	env, _, _ := unstructured.NestedStringMap(out.Object, "spec", "env")
	if !reflect.DeepEqual(env, map[string]string{"A": "1"}) {
		t.Errorf("env = %v", env)
	}
	if l := out.GetLabels(); !reflect.DeepEqual(l, map[string]string{"app": "avs", "kubectl.kubernetes.io/restartedAt": "t"}) {
		t.Errorf("labels = %v", l)
	}
	// Nothing to do: no request.
	dyn.ClearActions()
	if _, err := converge(context.Background(), dyn.Resource(gvr).Namespace("default"), desired, desired.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if n := len(dyn.Actions()); n != 0 {
		t.Errorf("converge of an equal object made %d requests", n)
	}
}

// ---------------------------------------------------------------------------------------------
// Validators (Go level; the plan-level tests below check the attribute paths Terraform shows).

func TestHardwareRequirementsValidator(t *testing.T) {
	attrTypes := map[string]attr.Type{"gpu_count": types.Int64Type, "gpu_type": types.StringType, "tee_required": types.BoolType, "tee_type": types.StringType, "custom_labels": types.MapType{ElemType: types.StringType}}
	obj := func(gpuCount types.Int64, gpuType types.String, teeRequired types.Bool, teeType types.String) types.Object {
		return types.ObjectValueMust(attrTypes, map[string]attr.Value{
			"gpu_count": gpuCount, "gpu_type": gpuType, "tee_required": teeRequired, "tee_type": teeType,
			"custom_labels": types.MapNull(types.StringType),
		})
	}
	n, ns, nb := types.Int64Null(), types.StringNull(), types.BoolNull()
	cases := []struct {
		name string
		v    types.Object
		want []string // attribute paths with errors
	}{
		{"empty", obj(n, ns, nb, ns), nil},
		{"tdx", obj(n, ns, types.BoolValue(true), str("tdx")), nil},
		{"tee_type alone", obj(n, ns, nb, str("tdx")), []string{"hardware_requirements.tee_type"}},
		{"tee_type with tee_required false", obj(n, ns, types.BoolValue(false), str("sgx")), []string{"hardware_requirements.tee_type"}},
		{"tee_required without type", obj(n, ns, types.BoolValue(true), ns), []string{"hardware_requirements.tee_required"}},
		{"gpu_type without count", obj(n, str("NVIDIA-H100-80GB-HBM3"), nb, ns), []string{"hardware_requirements.gpu_type"}},
		{"gpu_type with zero count", obj(types.Int64Value(0), str("NVIDIA-H100-80GB-HBM3"), nb, ns), []string{"hardware_requirements.gpu_type"}},
		{"gpu_type with count", obj(types.Int64Value(1), str("NVIDIA-H100-80GB-HBM3"), nb, ns), nil},
		{"unknown tee_required", obj(n, ns, types.BoolUnknown(), str("tdx")), nil},
		{"unknown gpu_count", obj(types.Int64Unknown(), str("NVIDIA-H100-80GB-HBM3"), nb, ns), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := &validator.ObjectResponse{}
			hardwareRequirementsValidator{}.ValidateObject(context.Background(), validator.ObjectRequest{Path: path.Root("hardware_requirements"), ConfigValue: tc.v}, resp)
			var got []string
			for _, d := range resp.Diagnostics.Errors() {
				if wp, ok := d.(interface{ Path() path.Path }); ok {
					got = append(got, wp.Path().String())
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors at %v, want %v (%v)", got, tc.want, resp.Diagnostics)
			}
		})
	}
}

func TestStringValidators(t *testing.T) {
	cases := []struct {
		v     validator.String
		value string
		ok    bool
	}{
		{quantityValidator{}, "500m", true},
		{quantityValidator{}, "2Gi", true},
		{quantityValidator{}, "1", true},
		{quantityValidator{}, "two", false},
		{quantityValidator{}, "0", true},
		{quantityValidator{}, "-1", false},
		{quantityValidator{}, "-500m", false},
		{quantityValidator{}, "1GB", false},
		{affinityValidatorForTest(), `{"nodeAffinity":{}}`, true},
		{affinityValidatorForTest(), `{"nodeAffinty":{}}`, false},
		{affinityValidatorForTest(), `{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":"x"}}}`, false},
	}
	for _, tc := range cases {
		resp := &validator.StringResponse{}
		tc.v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("x"), ConfigValue: types.StringValue(tc.value)}, resp)
		if ok := !resp.Diagnostics.HasError(); ok != tc.ok {
			t.Errorf("%T(%q): ok = %v, want %v (%v)", tc.v, tc.value, ok, tc.ok, resp.Diagnostics)
		}
	}
}

func affinityValidatorForTest() validator.String {
	return jsonDecodesInto{typeName: "Affinity", new: func() any { return &corev1.Affinity{} }}
}

// words turns a message into a regexp that tolerates Terraform's line wrapping.
func words(s string) *regexp.Regexp {
	parts := strings.Fields(s)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`(?s)` + strings.Join(parts, `\s+`))
}

// Invalid input fails at plan time, naming the attribute; no cluster is needed.
func TestPerformer_InvalidInputFailsAtPlan(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	cases := []struct {
		name string
		body string
		err  *regexp.Regexp
	}{
		{"negative gpu_count", `hardware_requirements = { gpu_count = -1 }`, words("Attribute hardware_requirements.gpu_count value must be between 0 and 1024, got: -1")},
		{"too many gpus", `hardware_requirements = { gpu_count = 2048 }`, words("Attribute hardware_requirements.gpu_count value must be between 0 and 1024, got: 2048")},
		{"unknown tee_type", `hardware_requirements = {
    tee_required = true
    tee_type     = "sgx2"
  }`, words(`Attribute hardware_requirements.tee_type value must be one of: ["sgx" "sev-snp" "tdx"], got: "sgx2"`)},
		{"tee_type without tee_required", `hardware_requirements = { tee_type = "tdx" }`, words(`tee_type = "tdx" only takes effect with tee_required = true`)},
		{"tee_type with tee_required false", `hardware_requirements = {
    tee_required = false
    tee_type     = "tdx"
  }`, words(`tee_type = "tdx" only takes effect with tee_required = true`)},
		{"tee_required without tee_type", `hardware_requirements = { tee_required = true }`, words("tee_required = true needs tee_type")},
		{"gpu_type without gpu_count", `hardware_requirements = { gpu_type = "NVIDIA-H100-80GB-HBM3" }`, words(`gpu_type = "NVIDIA-H100-80GB-HBM3" selects the GPU product of the requested GPUs: set gpu_count to 1 or more`)},
		{"grpc_port too high", `grpc_port = 70000`, words("Attribute grpc_port value must be between 1 and 65535, got: 70000")},
		{"bad avs_address", `avs_address = "0x123"`, words("Attribute avs_address must be 0x followed by 40 hexadecimal digits")},
		{"bad pull policy", `image_pull_policy = "Sometimes"`, words("Attribute image_pull_policy value must be one of")},
		{"bad quantity", `resources = { requests = { cpu = "lots" } }`, words(`"lots" is not a Kubernetes quantity`)},
		{"nvidia.com/gpu in resources against gpu_count", `hardware_requirements = { gpu_count = 2 }
  resources = { limits = { "nvidia.com/gpu" = "1" } }`,
			words(`resources.limits["nvidia.com/gpu"] = 1, but hardware_requirements.gpu_count asks for 2 of nvidia.com/gpu: make them equal, or remove the entry (gpu_count sets it).`)},
		{"env_from with both refs", `env_from = [{
    name               = "K"
    secret_key_ref     = { name = "s", key = "k" }
    config_map_key_ref = { name = "c", key = "k" }
  }]`, words("Invalid Attribute Combination")},
		{"env_from with no ref", `env_from = [{ name = "K" }]`, words("Invalid Attribute Combination")},
		{"bad toleration operator", `tolerations = [{ key = "k", operator = "Maybe" }]`, words("Attribute tolerations[0].operator value must be one of")},
		{"affinity typo", `affinity = jsonencode({ nodeAffinty = {} })`, words(`unknown field "nodeAffinty"`)},
		{"affinity not json", `affinity = "{"`, words("Invalid JSON String Value")},
		{"bad name", `name_override = true`, regexp.MustCompile(`(?s)Unsupported argument`)},
		{"network_policy peer without selectors", `network_policy = {
    enabled    = true
    allow_from = [{}]
  }`, words(`network_policy.allow_from[0] needs pod_selector, namespace_selector or both`)},
		{"network_policy bad label key", `network_policy = {
    enabled    = true
    allow_from = [{ pod_selector = { "bad key!" = "x" } }]
  }`, words(`network_policy.allow_from[0].pod_selector`)},
		{"network_policy without enabled", `network_policy = {}`, words(`attribute "enabled" is required`)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "gantry" {}
resource "gantry_performer" "bad" {
  name  = "bad"
  image = "ghcr.io/acme/performer:1"
  %s
}
`, tc.body),
					PlanOnly:    true,
					ExpectError: tc.err,
				}},
			})
		})
	}
	t.Run("bad performer name", func(t *testing.T) {
		resource.UnitTest(t, resource.TestCase{
			ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
			Steps: []resource.TestStep{{
				Config:      "resource \"gantry_performer\" \"bad\" {\n  image = \"x\"\n  name  = \"Not_A_DNS_Label\"\n}\n",
				PlanOnly:    true,
				ExpectError: words("Attribute name must be a DNS-1035 label"),
			}},
		})
	})
}

// ---------------------------------------------------------------------------------------------
// Acceptance tests: real Terraform CLI, local cluster, reconciler (TF_ACC=1).

func performerConfig(ns, name, body string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" %[2]q {
  name      = %[2]q
  namespace = %[1]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
%[3]s
}
`, ns, name, body)
}

// checkPerformersDestroyed is the CheckDestroy of every acceptance test: the CRs in state are
// gone from the API (the delete waited for the finalizer).
func checkPerformersDestroyed(c *kube.Clients) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "gantry_performer" {
				continue
			}
			ns, name, err := parseImportID("Performer", rs.Primary.ID)
			if err != nil {
				return err
			}
			_, err = c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
			if err == nil {
				return fmt.Errorf("performer %s still exists after destroy", rs.Primary.ID)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
}

// checkKStatusCurrent checks that kstatus (kubectl wait, Flux, Argo CD) agrees with the
// provider's wait: a Performer the apply waited for is Current.
func checkKStatusCurrent(c *kube.Clients, ns, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s, msg, err := wait.KStatus(u); err != nil || s != "Current" {
			return fmt.Errorf("kstatus of %s/%s = %s (%s, %v), want Current", ns, name, s, msg, err)
		}
		return nil
	}
}

func TestAccPerformer_basic(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-basic")
	addr := "gantry_performer.basic"
	v1 := performerConfig(ns, "basic", `
  labels = { team = "avs" }
  env    = { LOG_LEVEL = "info" }
  resources = {
    requests = { cpu = "0.5", memory = "256Mi" }
  }
  hardware_requirements = {
    gpu_count = 1
    gpu_type  = "NVIDIA-A100-SXM4-80GB"
  }
  timeouts = { create = "3m" }
`)
	v2 := performerConfig(ns, "basic", `
  labels    = { team = "avs", stage = "canary" }
  version   = "1.1.0"
  grpc_port = 8080
  env       = { LOG_LEVEL = "debug" }
  resources = {
    requests = { cpu = "0.5", memory = "256Mi" }
  }
  hardware_requirements = {
    gpu_count = 1
    gpu_type  = "NVIDIA-A100-SXM4-80GB"
  }
  timeouts = { create = "3m", update = "3m" }
`)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: v1,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("grpc_endpoint"), knownvalue.StringExact(fmt.Sprintf("performer-basic.%s.svc.cluster.local:9090", ns))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(ns+"/basic")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("grpc_endpoint"), knownvalue.StringExact(fmt.Sprintf("performer-basic.%s.svc.cluster.local:9090", ns))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("service_name"), knownvalue.StringExact("performer-basic")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_name"), knownvalue.StringRegexp(regexp.MustCompile(`^gantry-gpu-[01]$`))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("pod_name"), knownvalue.NotNull()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("grpc_port"), knownvalue.Int64Exact(9090)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("image_pull_policy"), knownvalue.StringExact("IfNotPresent")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resources").AtMapKey("requests").AtMapKey("cpu"), knownvalue.StringExact("0.5")),
				},
				Check: checkKStatusCurrent(c, ns, "basic"),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ns + "/basic",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "resources.requests.cpu", "candidate_nodes"}, // the API spells 0.5 as 500m; candidate_nodes is counted at plan, null on import
			},
			{
				Config: v2,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, tfjsonpath.New("grpc_endpoint"), knownvalue.StringExact(fmt.Sprintf("performer-basic.%s.svc.cluster.local:8080", ns))),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("version"), knownvalue.StringExact("1.1.0")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("grpc_endpoint"), knownvalue.StringExact(fmt.Sprintf("performer-basic.%s.svc.cluster.local:8080", ns))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_name"), knownvalue.StringRegexp(regexp.MustCompile(`^gantry-gpu-[01]$`))),
				},
			},
		},
	})
}

// Each GPU product and TEE technology lands on its node.
func TestAccPerformer_placement(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-place")
	config := fmt.Sprintf(`
provider "gantry" {}

locals {
  image = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  ns    = %q
}

resource "gantry_performer" "h100" {
  name      = "h100"
  namespace = local.ns
  image     = local.image
  hardware_requirements = {
    gpu_count = 2
    gpu_type  = "NVIDIA-H100-80GB-HBM3"
  }
}

resource "gantry_performer" "tdx" {
  name      = "tdx"
  namespace = local.ns
  image     = local.image
  hardware_requirements = {
    tee_required = true
    tee_type     = "tdx"
  }
}

resource "gantry_performer" "snp" {
  name      = "snp"
  namespace = local.ns
  image     = local.image
  hardware_requirements = {
    tee_required = true
    tee_type     = "sev-snp"
  }
}

resource "gantry_performer" "cpu" {
  name      = "cpu"
  namespace = local.ns
  image     = local.image
  affinity = jsonencode({
    nodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution = {
        nodeSelectorTerms = [{
          matchExpressions = [{ key = "kubernetes.io/hostname", operator = "In", values = ["gantry-cpu-1"] }]
        }]
      }
    }
  })
}
`, ns)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gantry_performer.h100", tfjsonpath.New("node_name"), knownvalue.StringExact("gantry-gpu-2")),
				statecheck.ExpectKnownValue("gantry_performer.tdx", tfjsonpath.New("node_name"), knownvalue.StringExact("gantry-tee-tdx-0")),
				statecheck.ExpectKnownValue("gantry_performer.snp", tfjsonpath.New("node_name"), knownvalue.StringExact("gantry-tee-snp-0")),
				statecheck.ExpectKnownValue("gantry_performer.cpu", tfjsonpath.New("node_name"), knownvalue.StringExact("gantry-cpu-1")),
				statecheck.ExpectKnownValue("gantry_performer.h100", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				statecheck.ExpectKnownValue("gantry_performer.tdx", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
			},
		}},
	})
}

// Out-of-band edits show in the plan, and apply puts the configuration back (including map
// entries another field manager added); a CR deleted out of band is planned for creation.
func TestAccPerformer_drift(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-drift")
	addr := "gantry_performer.drift"
	config := performerConfig(ns, "drift", `
  labels = { team = "avs" }
  env    = { LOG_LEVEL = "info" }
`)
	ri := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns)
	editOutOfBand := func() {
		patch := `{"metadata":{"labels":{"team":"other","injected":"yes"}},"spec":{"image":"ghcr.io/layr-labs/hello-performer:v9.9.9","env":{"INJECTED":"1"}}}`
		if _, err := ri.Patch(context.Background(), "drift", k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "drift-test"}); err != nil {
			t.Fatal(err)
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{Config: config},
			{
				PreConfig:          editOutOfBand,
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("image"), knownvalue.StringExact("ghcr.io/layr-labs/hello-performer:v1.0.0")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("env"), knownvalue.MapExact(map[string]knownvalue.Check{"LOG_LEVEL": knownvalue.StringExact("info")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("labels"), knownvalue.MapExact(map[string]knownvalue.Check{"team": knownvalue.StringExact("avs")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
				Check: func(*terraform.State) error {
					u, err := ri.Get(context.Background(), "drift", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if env, _, _ := unstructured.NestedStringMap(u.Object, "spec", "env"); !reflect.DeepEqual(env, map[string]string{"LOG_LEVEL": "info"}) {
						return fmt.Errorf("env in the cluster = %v, want the configuration's", env)
					}
					if _, ok := u.GetLabels()["injected"]; ok {
						return fmt.Errorf("label added out of band was not removed: %v", u.GetLabels())
					}
					return nil
				},
			},
			{
				PreConfig: func() {
					if err := ri.Delete(context.Background(), "drift", metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
					reg := wait.NewRegistry(c.Dynamic, c.Core)
					defer reg.Close()
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					if err := reg.WaitDeleted(ctx, wait.Performer, wait.Target{Namespace: ns, Name: "drift"}); err != nil {
						t.Fatal(err)
					}
				},
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
			},
		},
	})
}

// A request no node can satisfy fails the apply with the scheduler's message: the error is
// "Performer Failed" (the reconciler's verdict), never "Timed Out Waiting for Performer", which
// is what the 10m create timeout would give; no wall clock is asserted.
func TestAccPerformer_impossibleGPURequestFailsFast(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-nogpu")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{{
			Config: performerConfig(ns, "greedy", `
  hardware_requirements = { gpu_count = 64 }
  timeouts = { create = "10m" }
`),
			ExpectError: regexp.MustCompile(`(?s)Performer\s+Failed.*Insufficient\s+nvidia\.com/gpu`),
		}},
	})
}

// A container that cannot start fails the apply with the kubelet's message (kwok's chaos stage
// image-pull-failed.stage.gantry.dev, which the reconciler copies from the Performer's labels to
// its Pod); the tainted performer is replaced once the configuration is fixed.
func TestAccPerformer_imagePullFailureThenFix(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-pull")
	addr := "gantry_performer.pull"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`
provider "gantry" {}
resource "gantry_performer" "pull" {
  name      = "pull"
  namespace = %q
  image     = "ghcr.io/layr-labs/does-not-exist:v0"
  labels    = { "image-pull-failed.stage.gantry.dev" = "true" }
}
`, ns),
				ExpectError: regexp.MustCompile(`(?s)Performer\s+Failed.*ErrImagePull`),
			},
			{
				Config: performerConfig(ns, "pull", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionReplace),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("labels"), knownvalue.Null()),
				},
			},
		},
	})
}

func TestPerformer_ImportIDErrors(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config:        "resource \"gantry_performer\" \"x\" {\n  name  = \"x\"\n  image = \"i\"\n}\n",
			ResourceName:  "gantry_performer.x",
			ImportState:   true,
			ImportStateId: "just-a-name",
			ExpectError:   words(`import ID "just-a-name" is not of the form <namespace>/<name>`),
		}},
	})
}

// skipUnlessAcc skips an acceptance test unless TF_ACC is set (before it touches the cluster;
// resource.Test would skip too, but only later).
func skipUnlessAcc(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance tests need TF_ACC=1, a cluster (KUBE_CONFIG_PATH) and a running gantry-reconciler")
	}
}

// A failed update stays in the plan until it is fixed: the apply fails with the kubelet's
// message and says the next plan re-applies; the next plan is an in-place update (not "No
// changes", not a replacement); applying it unchanged retries (and fails again); applying a
// fixed configuration updates the same object (same UID) to Running.
func TestAccPerformer_failedUpdateStaysInPlan(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-failupd")
	addr := "gantry_performer.upd"
	good := performerConfig(ns, "upd", `  timeouts = { create = "3m", update = "3m" }`)
	bad := performerConfig(ns, "upd", `  version = "broken"
  labels  = { "image-pull-failed.stage.gantry.dev" = "true" }
  timeouts = { create = "3m", update = "3m" }`)
	var uid string
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: good,
				Check:  captureUID(c, wait.Performer, ns, "upd", &uid),
			},
			{
				Config:      bad,
				ExpectError: regexp.MustCompile(`(?s)Performer\s+Failed.*ErrImagePull.*next\s+plan\s+shows\s+an\s+update\s+that\s+re-applies`),
			},
			{
				Config:             bad,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: bad,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("phase")),
				}},
				ExpectError: regexp.MustCompile(`(?s)Performer\s+Failed.*ErrImagePull`),
			},
			{
				Config: good,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
				Check: checkSameUID(c, wait.Performer, ns, "upd", &uid),
			},
			{
				Config:             good,
				PlanOnly:           true,
				ExpectNonEmptyPlan: false,
			},
		},
	})
}

// captureUID stores the UID of the object ns/name of spec's kind in *uid.
func captureUID(c *kube.Clients, spec wait.Spec, ns, name string, uid *string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := c.Dynamic.Resource(spec.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		*uid = string(u.GetUID())
		return nil
	}
}

// checkSameUID fails unless the object ns/name of spec's kind still has UID *uid (it was
// updated in place, never replaced).
func checkSameUID(c *kube.Clients, spec wait.Spec, ns, name string, uid *string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := c.Dynamic.Resource(spec.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got := string(u.GetUID()); got != *uid {
			return fmt.Errorf("%s %s/%s was replaced: UID %s, want %s", spec.Kind, ns, name, got, *uid)
		}
		return nil
	}
}

// An update that could not finish for a reason outside the configuration (no Pod capacity in
// the namespace: a ResourceQuota) times out; the next plan is an update that waits again;
// once the capacity is back and the performer is Running by itself, the plan is empty — no
// update, no replacement.
func TestAccPerformer_updateHealedByItselfPlansNoChange(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-heal")
	addr := "gantry_performer.heal"
	v1 := performerConfig(ns, "heal", `  timeouts = { create = "3m", update = "15s" }`)
	v2 := performerConfig(ns, "heal", `  version  = "2.0.0"
  timeouts = { create = "3m", update = "15s" }`)
	var uid string
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: k8sresource.MustParse("0")}}}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{Config: v1, Check: captureUID(c, wait.Performer, ns, "heal", &uid)},
			{
				PreConfig: func() {
					if _, err := c.Core.CoreV1().ResourceQuotas(ns).Create(context.Background(), quota, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config: v2,
				// The quota's rejection is Stalled at once (exceeded quota, the API server's words).
				ExpectError: regexp.MustCompile(`(?s)Performer\s+Failed.*exceeded\s+quota.*next\s+plan\s+shows\s+an\s+update\s+that\s+re-applies`),
			},
			{Config: v2, PlanOnly: true, ExpectNonEmptyPlan: true},
			{
				PreConfig: func() {
					if err := c.Core.CoreV1().ResourceQuotas(ns).Delete(context.Background(), "no-pods", metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
					waitPerformerRunning(t, c, ns, "heal")
				},
				// A refresh sees Running, and the plan after it must be empty.
				RefreshState: true,
			},
			{
				Config:            v2,
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running"))},
				Check:             checkSameUID(c, wait.Performer, ns, "heal", &uid),
			},
		},
	})
}

// waitPerformerRunning touches the performer ns/name (a gantry.dev/ annotation, which the
// provider ignores, so the reconciler, possibly in a long error backoff, tries again at once)
// and polls up to 3 minutes until its phase is Running for its current generation.
func waitPerformerRunning(t *testing.T, c *kube.Clients, ns, name string) {
	t.Helper()
	ri := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns)
	patch := []byte(`{"metadata":{"annotations":{"gantry.dev/acc-nudge":"` + time.Now().Format("150405.000") + `"}}}`)
	if _, err := ri.Patch(context.Background(), name, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		u, err := ri.Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			ph, _, _ := unstructured.NestedString(u.Object, "status", "phase")
			og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
			if ph == "Running" && og == u.GetGeneration() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("performer %s/%s not Running after 3m (last error %v)", ns, name, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestAccPerformer_rollingUpdate: strategy = "RollingUpdate" (Hourglass item 5): the apply
// waits for the Deployment's pod; an image change applies without a Recreate and ends Running
// on the new image with a different pod; the next plan is empty.
func TestAccPerformer_rollingUpdate(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-perf-roll")
	cfg := func(image string) string {
		return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" "r" {
  name      = "rolling"
  namespace = %q
  image     = %q
  strategy  = "RollingUpdate"
  labels    = { "team.gantry.dev/owner" = "avs" }
}
`, ns, image)
	}
	addr := "gantry_performer.r"
	var firstPod string
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg("ghcr.io/layr-labs/hello-performer:v1.0.0"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "phase", "Running"),
					resource.TestCheckResourceAttr(addr, "strategy", "RollingUpdate"),
					func(s *terraform.State) error {
						firstPod = s.RootModule().Resources[addr].Primary.Attributes["pod_name"]
						if !strings.HasPrefix(firstPod, "performer-rolling-") || firstPod == "performer-rolling" {
							return fmt.Errorf("pod_name = %q, want a pod of the Deployment performer-rolling", firstPod)
						}
						pod, err := c.Core.CoreV1().Pods(ns).Get(context.Background(), firstPod, metav1.GetOptions{})
						if err != nil {
							return err
						}
						if pod.Labels["team.gantry.dev/owner"] != "avs" {
							return fmt.Errorf("the performer's labels did not reach its pod: %v", pod.Labels)
						}
						return nil
					},
				),
			},
			{
				Config: cfg("ghcr.io/layr-labs/hello-performer:v2.0.0"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "phase", "Running"),
					func(s *terraform.State) error {
						if p := s.RootModule().Resources[addr].Primary.Attributes["pod_name"]; p == firstPod {
							return fmt.Errorf("pod_name still %s after the image change", p)
						}
						dep, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), "performer-rolling", metav1.GetOptions{})
						if err != nil {
							return err
						}
						if img := dep.Spec.Template.Spec.Containers[0].Image; img != "ghcr.io/layr-labs/hello-performer:v2.0.0" {
							return fmt.Errorf("deployment image %s", img)
						}
						return nil
					},
				),
			},
			{Config: cfg("ghcr.io/layr-labs/hello-performer:v2.0.0"), PlanOnly: true},
		},
	})
}
