package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"

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
  }
  timeouts = { create = "3m" }
`

// Inference workspace: Ready, endpoint, import, drift (a replica count changed behind
// Terraform's back shows in the plan and is put back), destroy.
func TestAccWorkspace_inference(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-inf")
	addr := "gantry_workspace.chat"
	cfg := workspaceConfig(ns, "chat", wsInference)
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
				},
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
