package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The plan of a Hugging Face model without a preset shows its sizing with the real CLI and no
// cluster when model_size gives the size: the parameters, the memory the estimator works out
// and the GPUs that hold it; with model_config (a ConfigMap the plan cannot read without a
// cluster) the sizing is known after apply. What cannot hold the model fails the plan.
func TestWorkspace_anyModelAtPlan(t *testing.T) {
	requireTerraform(t)
	t.Setenv("KUBE_CONFIG_PATH", "")
	unreachableCluster(t)
	const addr = "gantry_workspace.w"
	for name, c := range map[string]struct {
		body string
		want *wsSizing // nil: unknown
	}{
		// 7.62B bfloat16 parameters: 15.2 GB of weights, 18Gi with headroom; a T4 has 16Gi,
		// so 2 GPUs of a g4dn.12xlarge's 4, two pods per node.
		"parameters on an instance type": {`
  resource  = { count = 2, instance_type = "g4dn.12xlarge" }
  inference = { model = "Qwen/Qwen2.5-7B-Instruct", model_size = { parameters = "7.62B", dtype = "bfloat16" } }
`, &wsSizing{Replicas: 2, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, InstanceType: "g4dn.12xlarge", GPUProduct: "Tesla-T4", NodeClaims: 1,
			ModelParameters: 7620000000, ModelGPUMemory: "18Gi"}},
		"gpu memory on a product": {`
  resource  = { gpu_product = "NVIDIA-L4" }
  inference = { model = "org/model", model_size = { gpu_memory = "40Gi" } }
`, &wsSizing{Replicas: 1, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, GPUProduct: "NVIDIA-L4", ModelGPUMemory: "40Gi"}},
		"model_config without a cluster": {`
  resource  = { gpu_product = "NVIDIA-L4" }
  inference = { model = "meta-llama/Llama-3.1-8B-Instruct", model_config = { config_map = "llama" } }
`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			check := plancheck.ExpectUnknownValue(addr, tfjsonpath.New("sizing"))
			if c.want != nil {
				check = plancheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), sizingCheck(*c.want))
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:             workspaceConfig("default", "w", c.body),
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate), check}},
				}},
			})
		})
	}
	for name, c := range map[string]struct{ body, want string }{
		"a gpu_count that cannot hold it": {`
  resource  = { gpu_count = 1, gpu_product = "NVIDIA-L4" }
  inference = { model = "org/model", model_size = { parameters = "14B" } }
`, `resource.gpu_count: 14.00B parameters (bfloat16) need 32Gi of GPU memory, but 1 × NVIDIA-L4 (24Gi) hold 24Gi: set it to 2 or more`},
		"larger than the instance type's node": {`
  resource  = { instance_type = "g6.xlarge" }
  inference = { model = "org/model", model_size = { parameters = "70B" } }
`, `inference.model_size: 70.00B parameters (bfloat16) need 157Gi of GPU memory, 8 × NVIDIA-L4 (24Gi), but a g6.xlarge node has 1: choose a larger instance type, or set resource.count to 8`},
		"a GPU of unknown memory": {`
  resource  = { gpu_product = "Some-GPU" }
  inference = { model = "org/model", model_size = { parameters = "7B" } }
`, `resource.gpu_product: 7.00B parameters (bfloat16) need 16Gi of GPU memory, but the GPU's memory is unknown`},
		"no image and not a Hugging Face model": {`
  resource  = { gpu_count = 1 }
  inference = { model = "m" }
`, `inference.image: required without a preset, unless the model is a Hugging Face model ID`},
		"size and config both": {`
  resource  = { gpu_count = 1 }
  inference = { model = "org/m", model_size = { parameters = "7B" }, model_config = { config_map = "c" } }
`, `Attribute "inference.model_config" cannot be specified when "inference.model_size" is specified`},
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps:                    []resource.TestStep{{Config: workspaceConfig("default", "w", c.body), PlanOnly: true, ExpectError: words(c.want)}},
			})
		})
	}
}

// llama8BConfigJSON is Llama-3.1-8B-Instruct's config.json (the fields the estimator reads):
// 8,030,261,248 parameters in bfloat16, 18Gi with headroom: one NVIDIA-L4 (24Gi).
const llama8BConfigJSON = `{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
 "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": false, "torch_dtype": "bfloat16"}`

// Against the cluster (and a reconciler with model_config): the plan reads the ConfigMap's
// config.json and shows the sizing; the apply stores it and the workspace goes Ready on one
// NVIDIA-L4 of KAITO's base image; the plan after it is empty.
func TestAccWorkspace_anyModelConfig(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-anymodel")
	sizingGPUNodes(t, c, "NVIDIA-L4", 1)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "llama", Namespace: ns}, Data: map[string]string{"config.json": llama8BConfigJSON}}
	if _, err := c.Core.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	body := `
  resource  = { gpu_product = "NVIDIA-L4", provision_nodes = false }
  inference = { model = "meta-llama/Llama-3.1-8B-Instruct", model_config = { config_map = "llama" } }
  timeouts  = { create = "3m" }
`
	addr := "gantry_workspace.anymodel"
	want := sizingCheck(wsSizing{Replicas: 1, NodesPerReplica: 1, GPUsPerNode: 1, GPUsPerReplica: 1, GPUProduct: "NVIDIA-L4",
		ModelParameters: 8030261248, ModelGPUMemory: "18Gi"})
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: workspaceConfig(ns, "anymodel", body),
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply:             []plancheck.PlanCheck{plancheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), want)},
				PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), want),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("inference").AtMapKey("image"), knownvalue.Null()),
			},
		}},
	})
}
