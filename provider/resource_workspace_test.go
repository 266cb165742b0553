package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

func workspaceConfig(ns, name, body string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_workspace" %[2]q {
  name      = %[2]q
  namespace = %[1]q
%[3]s
}
`, ns, name, body)
}

const wsInference = `
  resource = {
    count       = 2
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
    adapters = [
      { name = "style", image = "ghcr.io/gantry-dev/adapters/style:1", strength = "0.5" },
      { name = "tone", image = "ghcr.io/gantry-dev/adapters/tone:1" },
    ]
  }
  timeouts = { create = "3m" }
`

// wsPlacement adds a toleration, an affinity to the gpu pool and two adapters.
const wsPlacement = `
  tolerations = [{ key = "dedicated", operator = "Exists", effect = "NoSchedule" }]
  affinity = jsonencode({
    nodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution = {
        nodeSelectorTerms = [{ matchExpressions = [{ key = "gantry.dev/node-pool", operator = "In", values = ["gpu"] }] }]
      }
    }
  })
`

// Inference workspace with a toleration, affinity and adapters: Ready, endpoint, import, drift (a replica count changed behind
// Terraform's back shows in the plan and is put back), destroy.
func TestAccWorkspace_inference(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-inf")
	addr := "gantry_workspace.chat"
	cfg := workspaceConfig(ns, "chat", wsInference+wsPlacement)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("mode"), knownvalue.StringExact("Inference")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint"), knownvalue.StringExact(fmt.Sprintf("workspace-chat.%s.svc.cluster.local:8000", ns))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("conditions").AtMapKey("ResourceReady"), knownvalue.StringExact("True")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("conditions").AtMapKey("InferenceReady"), knownvalue.StringExact("True")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("adapters").AtSliceIndex(1).AtMapKey("strength"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("tolerations").AtSliceIndex(0).AtMapKey("value"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("runtime_class_name"), knownvalue.Null()),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: ns + "/chat", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"}},
			{
				PreConfig: func() {
					patch := []byte(`{"spec":{"resource":{"count":1}}}`)
					if _, err := c.Dynamic.Resource(wait.Workspace.GVR).Namespace(ns).Patch(context.Background(), "chat", ktypes.MergePatchType, patch, metav1.PatchOptions{FieldManager: "someone-else"}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resource").AtMapKey("count"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				},
			},
		},
	})
}

// A LoRA tuning run: the apply waits until Succeeded.
func TestAccWorkspace_tuning(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-tune")
	addr := "gantry_workspace.lora"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: workspaceConfig(ns, "lora", `
  resource = { gpu_count = 1 }
  tuning = {
    method       = "lora"
    base_model   = "phi-3-mini-4k-instruct"
    image        = "ghcr.io/gantry-dev/hello-tuner:1.0.0"
    input_urls   = ["https://example.com/data.parquet"]
    output_image = "registry.example/adapters/phi:1"
  }
`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("mode"), knownvalue.StringExact("Tuning")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("conditions").AtMapKey("JobStarted"), knownvalue.StringExact("True")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("endpoint"), knownvalue.Null()),
			},
		}},
	})
}

// The Pending trap fails the apply with the reason (Stalled=True), not at the timeout.
func TestAccWorkspace_impossibleGPUProductFailsFast(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-trap")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: workspaceConfig(ns, "nowhere", `
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-B200-NOWHERE"
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
  }
  timeouts = { create = "10m" }
`),
			ExpectError: regexp.MustCompile(`(?s)Workspace\s+Failed.*NoMatchingNodes.*NVIDIA-B200-NOWHERE`),
		}},
	})
}

// label_selector_expressions (KAITO's labelSelector.matchExpressions): requirements the A100
// nodes meet go Ready with the requirements in the Deployment's pod affinity (empty plan,
// import); a requirement no node meets fails the apply fast naming it as a selector.
func TestAccWorkspace_labelSelectorExpressions(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-expr")
	addr := "gantry_workspace.expr"
	body := func(exprs string) string {
		return fmt.Sprintf(`
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
    label_selector_expressions = [%s]
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
  }
  timeouts = { create = "5m", update = "5m" }
`, exprs)
	}
	meets := `
      { key = "nvidia.com/gpu.product", operator = "In", values = ["NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"] },
      { key = "gantry.dev/no-such-label", operator = "DoesNotExist" },
    `
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: workspaceConfig(ns, "expr", body(meets)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resource").AtMapKey("label_selector_expressions").AtSliceIndex(1).AtMapKey("values"), knownvalue.Null()),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: func(*terraform.State) error {
					d, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), "workspace-expr", metav1.GetOptions{})
					if err != nil {
						return err
					}
					a := d.Spec.Template.Spec.Affinity
					if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
						return fmt.Errorf("pod template has no required node affinity: %+v", a)
					}
					terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
					if len(terms) != 1 || len(terms[0].MatchExpressions) != 2 || terms[0].MatchExpressions[1].Operator != "DoesNotExist" {
						return fmt.Errorf("required node affinity terms %+v", terms)
					}
					return nil
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: ns + "/expr", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"}},
			{
				Config:      workspaceConfig(ns, "expr", body(`{ key = "kubernetes.io/hostname", operator = "In", values = ["no-such-node"] }`)),
				ExpectError: regexp.MustCompile(`(?s)NoMatchingNodes.*kubernetes\.io/hostname\s+in\s+\(no-such-node\)`),
			},
		},
	})
}

// A preset workspace (KAITO's inference.preset) with only the preset and the GPU product: it
// goes Ready on the preset's image and GPU count (phi-3-mini-4k-instruct: 1 GPU), state keeps
// what the configuration says (model and image null), and the next plan is empty.
func TestAccWorkspace_preset(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-preset")
	addr := "gantry_workspace.phi"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: workspaceConfig(ns, "phi", `
  resource  = { gpu_product = "NVIDIA-A100-SXM4-80GB" }
  inference = { preset = "phi-3-mini-4k-instruct" }
  timeouts  = { create = "3m" }
`),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("preset"), knownvalue.StringExact("phi-3-mini-4k-instruct")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("model"), knownvalue.Null()),
			},
			Check: func(*terraform.State) error {
				var dep appsv1.Deployment
				if err := c.Core.AppsV1().RESTClient().Get().Namespace(ns).Resource("deployments").Name("workspace-phi").Do(context.Background()).Into(&dep); err != nil {
					return err
				}
				ct := dep.Spec.Template.Spec.Containers[0]
				gpus := ct.Resources.Limits["nvidia.com/gpu"]
				if ct.Image != "mcr.microsoft.com/aks/kaito/kaito-phi-3-mini-4k-instruct:0.1.1" || gpus.Value() != 1 {
					return fmt.Errorf("preset not applied: image %s, GPUs %s", ct.Image, gpus.String())
				}
				return nil
			},
		}},
	})
}

// Preset mistakes fail the plan naming the attribute: an unknown name lists the closest
// presets; a preset that cannot be tuned lists those that can; neither preset nor model.
func TestWorkspace_presetAtPlan(t *testing.T) {
	requireTerraform(t)
	for name, c := range map[string]struct{ body, err string }{
		"typo": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "falcon-7b-instrct" }
`, `(?s)Unknown Model Preset.*inference.preset.*did you mean\s+falcon-7b-instruct`},
		"untunable": {`
  resource = { gpu_count = 1 }
  tuning = { method = "lora", preset = "falcon-40b", input_image = "d", output_image = "o" }
`, `(?s)Model Preset Cannot Be Tuned.*phi-3-mini-4k-instruct`},
		"gated without secret": {`
  resource  = { gpu_count = 1 }
  inference = { preset = "llama-3.1-8b-instruct" }
`, `(?s)Gated Model Needs a Model Access Secret.*inference.model_access_secret`},
		"unknown instance type": {`
  resource  = { instance_type = "Standard_NC24ads_A100" }
  inference = { model = "m", image = "i" }
`, `(?s)Unknown Instance Type.*did you mean\s+Standard_NC24ads_A100_v4`},
		"no model": {`
  resource  = { gpu_count = 1 }
  inference = { image = "i" }
`, `(?s)inference.model.*preset`},
		"product without count or preset": {`
  resource  = { gpu_product = "NVIDIA-A100-SXM4-80GB" }
  inference = { model = "m", image = "i" }
`, `(?s)Missing Required Attribute.*gpu_product\s+requires\s+gpu_count\s+>\s+0,\s+or\s+an\s+instance_type,\s+a\s+partition,\s+a\s+model\s+preset.*or\s+a\s+model\s+size`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: workspaceConfig("default", "w", c.body), PlanOnly: true, ExpectError: regexp.MustCompile(c.err)}},
			})
		})
	}
}

// inference and tuning together: a plan-time error naming both.
func TestWorkspace_inferenceAndTuningAtPlan(t *testing.T) {
	requireTerraform(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: workspaceConfig("default", "both", `
  resource  = { gpu_count = 1 }
  inference = { model = "m", image = "i" }
  tuning = {
    method = "lora", base_model = "b", image = "i", input_image = "d", output_image = "o"
  }
`),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(`(?s)inference.*tuning`),
		}},
	})
}

// wsRoundTrip expands m and passes the object through JSON, as the API server stores it.
func wsRoundTrip(t *testing.T, m workspaceModelV0) *unstructured.Unstructured {
	t.Helper()
	obj, err := expandWorkspace(&m)
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

func wsWithoutComputed(m workspaceModelV0) workspaceModelV0 {
	m.ID, m.State, m.Mode, m.Endpoint = types.String{}, types.String{}, types.String{}, types.String{}
	m.WorkerNodes, m.NodeClaims, m.Conditions, m.Timeouts = types.List{}, types.List{}, types.Map{}, timeouts.Value{}
	m.CurrentReplicas, m.DesiredReplicas = types.Int64{}, types.Int64{}
	return m
}

func wsModel() workspaceModelV0 {
	return workspaceModelV0{Name: str("chat"), Namespace: str("team-a"),
		Resource:  &wsResourceModel{Count: types.Int64Value(1), GPUCount: types.Int64Null(), GPUProduct: types.StringNull(), TEEType: types.StringNull(), ProvisionNodes: types.BoolValue(true)},
		Inference: &wsInferenceModel{Model: str("falcon-7b-instruct"), Image: str("img:1"), Port: types.Int64Value(8000), Config: types.StringNull()},
		Affinity:  jsontypes.NewNormalizedNull(), RuntimeClassName: types.StringNull(), PriorityClassName: types.StringNull()}
}

// Scheduling and adapters survive expand → API → flatten exactly; nulls stay null, empties
// stay empty, and an import (no prior) of a full object reads back the same.
func TestWorkspaceMappingRoundTrip(t *testing.T) {
	full := wsModel()
	full.NodeSelector = map[string]string{"gantry.dev/node-pool": "gpu"}
	full.Tolerations = []tolerationModel{
		{Key: str("dedicated"), Operator: str("Equal"), Value: str("ml"), Effect: str("NoSchedule"), TolerationSeconds: types.Int64Null()},
		{Key: str("node.kubernetes.io/unreachable"), Operator: str("Exists"), Value: types.StringNull(), Effect: str("NoExecute"), TolerationSeconds: types.Int64Value(30)},
	}
	full.Affinity = jsontypes.NewNormalizedValue(`{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}]}}}`)
	full.Resource.LabelExprs = []selectorExprModel{
		{Key: str("zone"), Operator: str("In"), Values: []string{"z1", "z2"}},
		{Key: str("spot"), Operator: str("DoesNotExist"), Values: nil},
	}
	full.RuntimeClassName = str("kata-qemu-tdx")
	full.PriorityClassName = str("high")
	full.Inference.Adapters = []wsAdapterModel{{Name: str("style"), Image: str("adapters/style:1"), Strength: str("0.5")}, {Name: str("tone"), Image: str("adapters/tone:1"), Strength: types.StringNull()}}
	// KAITO's resource.partition, private preset, performance mode and inference.template parts.
	full.Resource.Partition = &wsPartitionModel{Mode: str("mig"), Profile: str("1g.10gb")}
	full.Inference.Command, full.Inference.ImagePullSecrets = []string{"python3", "serve.py"}, []string{"regcred"}
	full.Inference.PerformanceMode, full.Inference.AccessMode = str("throughput"), str("private")
	full.Inference.ReadinessProbe = &wsProbeModel{HTTPPath: str("/health"), Port: types.Int64Value(9000), InitialDelaySeconds: types.Int64Value(5),
		PeriodSeconds: types.Int64Null(), FailureThreshold: types.Int64Value(4)}
	full.Inference.LivenessProbe = &wsProbeModel{HTTPPath: types.StringNull(), Port: types.Int64Null(), Exec: []string{"cat", "/tmp/ok"},
		InitialDelaySeconds: types.Int64Null(), PeriodSeconds: types.Int64Value(30), FailureThreshold: types.Int64Null()}
	full.Inference.Volumes = []wsVolumeModel{
		{Name: str("scratch"), MountPath: str("/scratch"), ReadOnly: types.BoolNull(), ConfigMap: types.StringNull(), Secret: types.StringNull(), PVC: types.StringNull(), EmptyDir: types.BoolValue(true)},
		{Name: str("cache"), MountPath: str("/cache"), ReadOnly: types.BoolValue(true), ConfigMap: types.StringNull(), Secret: types.StringNull(), PVC: str("model-cache"), EmptyDir: types.BoolNull()},
	}

	empties := wsModel()
	empties.NodeSelector = map[string]string{}
	empties.Tolerations = []tolerationModel{}
	empties.Affinity = jsontypes.NewNormalizedValue(`{}`)
	empties.RuntimeClassName, empties.PriorityClassName = str(""), str("")
	empties.Inference.Adapters = []wsAdapterModel{}
	empties.Inference.Volumes, empties.Inference.Command, empties.Inference.ImagePullSecrets = []wsVolumeModel{}, []string{}, []string{}

	spelled := wsModel()
	spelled.Affinity = jsontypes.NewNormalizedValue("{\n  \"podAntiAffinity\": {\"preferredDuringSchedulingIgnoredDuringExecution\": [{\"weight\": 100, \"podAffinityTerm\": {\"topologyKey\": \"kubernetes.io/hostname\"}}]}\n}")

	for name, m := range map[string]workspaceModelV0{"minimal": wsModel(), "full": full, "empties": empties, "spellings": spelled} {
		t.Run(name, func(t *testing.T) {
			got, err := flattenWorkspace(wsRoundTrip(t, m), &m)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := wsWithoutComputed(*got), wsWithoutComputed(m); !reflect.DeepEqual(g, w) {
				t.Errorf("round trip differs:\n got %+v\nwant %+v", g, w)
			}
		})
	}

	got, err := flattenWorkspace(wsRoundTrip(t, full), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g, w := wsWithoutComputed(*got), wsWithoutComputed(full); !reflect.DeepEqual(g, w) {
		t.Errorf("import of a full object differs:\n got %+v\nwant %+v", g, w)
	}
	got, err = flattenWorkspace(wsRoundTrip(t, empties), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.NodeSelector != nil || got.Tolerations != nil || got.Inference.Adapters != nil || !got.RuntimeClassName.IsNull() || !got.PriorityClassName.IsNull() {
		t.Errorf("empty values must import as null: %+v", got)
	}

	// Drift: an affinity or toleration changed in the cluster reads back as the new value.
	obj := wsRoundTrip(t, full)
	if err := unstructured.SetNestedField(obj.Object, map[string]interface{}{}, "spec", "scheduling", "affinity"); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(obj.Object, "spec", "scheduling", "tolerations")
	got, err = flattenWorkspace(obj, &full)
	if err != nil {
		t.Fatal(err)
	}
	if got.Affinity.ValueString() != "{}" || len(got.Tolerations) != 0 {
		t.Errorf("drift not visible: affinity %s, tolerations %+v", got.Affinity, got.Tolerations)
	}
}

// Adapter names must be unique and match the CRD's pattern; strength is a decimal in [0, 1].
func TestWorkspace_adaptersAtPlan(t *testing.T) {
	requireTerraform(t)
	for name, tc := range map[string]struct{ adapters, want string }{
		"duplicate name": {`[{ name = "a", image = "i" }, { name = "a", image = "j" }]`, `name "a" is already used`},
		"bad name":       {`[{ name = "A_b", image = "i" }]`, `lower-case letters`},
		"bad strength":   {`[{ name = "a", image = "i", strength = "1.5" }]`, `decimal between 0 and 1`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: workspaceConfig("default", "w", `
  resource  = { count = 1 }
  inference = {
    model    = "m"
    image    = "i"
    adapters = `+tc.adapters+`
  }
`),
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.want),
				}},
			})
		})
	}
}

// TestAccWorkspace_multiNode: a two-node model (KAITO multi-node inference). falcon-40b-instruct
// needs 2 GPUs; two nodes with one GPU each serve it as one group: the apply waits until the
// whole group is Ready, leader_address names pod 0's stable address, the endpoint Service
// routes to it, the pods run KAITO's Ray cluster (checkRayGroup), and the next plan is empty.
func TestAccWorkspace_multiNode(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-group")
	product := "NVIDIA-L4-ACC-" + rand.String(5)
	for i := 0; i < 2; i++ {
		name := fmt.Sprintf("acc-group-%s-%d", strings.ToLower(product[len(product)-5:]), i)
		one := k8sresource.MustParse("1")
		alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("32"), corev1.ResourceMemory: k8sresource.MustParse("256Gi"), corev1.ResourcePods: k8sresource.MustParse("110"), "nvidia.com/gpu": one}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
		}
		if _, err := c.Core.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	cfg := workspaceConfig(ns, "falcon", fmt.Sprintf(`
  resource  = { count = 2, gpu_count = 1, gpu_product = %q }
  inference = { preset = "falcon-40b-instruct" }
  timeouts  = { create = "3m" }
`, product))
	addr := "gantry_workspace.falcon"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("leader_address"),
						knownvalue.StringExact("workspace-falcon-0.workspace-falcon-group."+ns+".svc.cluster.local")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("worker_nodes"), knownvalue.ListSizeExact(2)),
				},
				Check: func(*terraform.State) error {
					sts, err := c.Core.AppsV1().StatefulSets(ns).Get(context.Background(), "workspace-falcon", metav1.GetOptions{})
					if err != nil {
						return fmt.Errorf("no StatefulSet for the two-node model: %w", err)
					}
					args := strings.Join(sts.Spec.Template.Spec.Containers[0].Args, " ")
					if *sts.Spec.Replicas != 2 || !strings.Contains(args, "--pipeline-parallel-size=2") || !strings.Contains(args, "--tensor-parallel-size=1") {
						return fmt.Errorf("statefulset replicas %d args %s", *sts.Spec.Replicas, args)
					}
					svc, err := c.Core.CoreV1().Services(ns).Get(context.Background(), "workspace-falcon", metav1.GetOptions{})
					if err != nil || svc.Spec.Selector["statefulset.kubernetes.io/pod-name"] != "workspace-falcon-0" {
						return fmt.Errorf("endpoint service selector %v (%v)", svc.Spec.Selector, err)
					}
					return checkRayGroup(sts, svc, "workspace-falcon-0.workspace-falcon-group."+ns+".svc.cluster.local")
				},
			},
			{Config: cfg, PlanOnly: true},
		},
	})
}

// Multi-node mistakes fail the plan naming inference.model_gpus (or inference.port, taken by
// the Ray head of KAITO's multi-node group, or inference.readiness_probe, which a Ray group's
// workers cannot pass).
func TestWorkspace_modelGPUsAtPlan(t *testing.T) {
	requireTerraform(t)
	for name, c := range map[string]struct{ body, err string }{
		"one replica": {`
  resource  = { gpu_count = 2 }
  inference = { model = "m", image = "i", model_gpus = 4 }
`, `(?s)Model Needs More GPUs Than One Replica Has.*inference.model_gpus.*resource.count to 2`},
		"too few in all": {`
  resource  = { count = 2, gpu_count = 1 }
  inference = { model = "m", image = "i", model_gpus = 4 }
`, `(?s)Not Enough GPUs for the Model.*2 × 1 = 2`},
		"a Ray port as the inference port of a group": {`
  resource  = { count = 2, gpu_count = 1 }
  inference = { preset = "falcon-40b-instruct", port = 6379 }
`, `(?s)Port Taken by the Ray Head.*inference.port: 6379 is a port of the Ray head`},
		"a readiness probe of its own on a Ray group": {`
  resource  = { count = 2, gpu_count = 1 }
  inference = { preset = "falcon-40b-instruct", readiness_probe = { http_path = "/ready" } }
`, `(?s)Readiness Probe on a Ray Group.*inference.readiness_probe: a multi-node group on KAITO's Ray cluster`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: workspaceConfig("default", "bad", c.body), PlanOnly: true, ExpectError: regexp.MustCompile(c.err)}},
			})
		})
	}
}

// checkRayGroup checks a two-pod preset group's StatefulSet and endpoint Service for KAITO's
// Ray cluster: the leader starts the Ray head and serves with --distributed-executor-backend=ray,
// the workers join it at leader, KAITO's multi-node health check probes, POD_INDEX, and the
// Service's ray (6379) and dashboard (8265) ports.
func checkRayGroup(sts *appsv1.StatefulSet, svc *corev1.Service, leader string) error {
	c := sts.Spec.Template.Spec.Containers[0]
	script := strings.Join(c.Command, " ")
	for _, want := range []string{"/workspace/vllm/multi-node-serving.sh leader --ray_cluster_size=2 --ray_port=6379", `exec python3 /workspace/vllm/inference_api.py "$@"`,
		"/workspace/vllm/multi-node-serving.sh worker --ray_address=" + leader + " --ray_port=6379"} {
		if !strings.Contains(script, want) {
			return fmt.Errorf("the group's command %q lacks %q", c.Command, want)
		}
	}
	if !slices.Contains(c.Args, "--distributed-executor-backend=ray") {
		return fmt.Errorf("args %q without --distributed-executor-backend=ray", c.Args)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "POD_INDEX" }) {
		return fmt.Errorf("no POD_INDEX in %+v", c.Env)
	}
	for _, p := range []*corev1.Probe{c.StartupProbe, c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.Exec == nil || !strings.Contains(strings.Join(p.Exec.Command, " "), "multi-node-health-check.py") {
			return fmt.Errorf("probes startup %+v readiness %+v liveness %+v: want KAITO's multi-node health check", c.StartupProbe, c.ReadinessProbe, c.LivenessProbe)
		}
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", p.Name, p.Port))
	}
	if !slices.Equal(ports, []string{"http:8000", "ray:6379", "dashboard:8265"}) {
		return fmt.Errorf("endpoint Service ports %v", ports)
	}
	return nil
}
