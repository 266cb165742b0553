package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"k8s.io/apimachinery/pkg/util/rand"
)

// gpuStackConfig instantiates examples/modules/gpu-stack once per environment (for_each) with
// values from terraform_data outputs, which are unknown at plan: namespace, labels, GPU
// products, the driver's version and node selector.
func gpuStackConfig(module, prefix, nsA, nsB, pool string) string {
	return fmt.Sprintf(`
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

provider "gantry" {}

locals {
  envs = {
    a = { namespace = %[3]q, gpu_product = "NVIDIA-A100-SXM4-80GB", tee_type = "sev-snp" }
    b = { namespace = %[4]q, gpu_product = "NVIDIA-H100-80GB-HBM3", tee_type = "tdx" }
  }
}

resource "terraform_data" "env" {
  for_each = local.envs
  input = {
    namespace      = each.value.namespace
    gpu_product    = each.value.gpu_product
    labels         = { "app.kubernetes.io/instance" = each.key, "team.gantry.dev/env" = each.key }
    driver_version = "550.54.15"
    node_selector  = { "gantry.dev/test-pool" = %[5]q }
  }
}

module "stack" {
  source   = %[1]q
  for_each = local.envs

  name            = "%[2]s-${each.key}"
  namespace       = terraform_data.env[each.key].output.namespace
  labels          = terraform_data.env[each.key].output.labels
  performer_image = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  gpu             = { count = 1, product = terraform_data.env[each.key].output.gpu_product }
  tee_type        = each.value.tee_type

  executor_image      = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
  ]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa", bls_key = "bls" }

  model  = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_product = terraform_data.env[each.key].output.gpu_product }
  driver = {
    version       = terraform_data.env[each.key].output.driver_version
    image         = "ghcr.io/gantry-dev/gpu-driver:550"
    node_selector = terraform_data.env[each.key].output.node_selector
  }
  timeout = "5m"
}

output "endpoints" {
  value = { for k, m in module.stack : k => m.performer_endpoints }
}
`, module, prefix, nsA, nsB, pool)
}

// Issue 10 §1: the GPU-stack module, twice with for_each, with inputs unknown at plan. The
// plan is accepted (the values are unknown in it), the apply brings every resource of both
// instances to its success summary, and the next plan is empty.
func TestAccModuleGPUStack_forEachUnknown(t *testing.T) {
	skipUnlessAcc(t)
	module, err := filepath.Abs("../examples/modules/gpu-stack")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(module, "main.tf")); err != nil {
		t.Fatal(err)
	}
	// The module requires gantry-dev/gantry: serve the provider under that address (the
	// default is hashicorp/gantry). t.Setenv: this test does not run in parallel.
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "gantry-dev")
	c := testClients(t)
	nsA, nsB := testNamespace(t, c, "acc-mod-a"), testNamespace(t, c, "acc-mod-b")
	createKeySecret(t, c, nsA)
	createKeySecret(t, c, nsB)
	prefix := "m" + rand.String(5)
	pool := prefix + "-pool"
	accNodes(t, c, pool, 2)
	config := gpuStackConfig(module, prefix, nsA, nsB, pool)

	var planChecks []plancheck.PlanCheck
	var stateChecks []statecheck.StateCheck
	for _, k := range []string{"a", "b"} {
		m := fmt.Sprintf("module.stack[%q].", k)
		planChecks = append(planChecks,
			plancheck.ExpectUnknownValue(m+"gantry_performer.gpu", tfjsonpath.New("namespace")),
			plancheck.ExpectUnknownValue(m+"gantry_performer.gpu", tfjsonpath.New("labels")),
			plancheck.ExpectUnknownValue(m+"gantry_performer.gpu", tfjsonpath.New("hardware_requirements").AtMapKey("gpu_type")),
			plancheck.ExpectUnknownValue(m+"gantry_package_set.drivers", tfjsonpath.New("node_selector")),
			plancheck.ExpectUnknownValue(m+"gantry_package_set.drivers", tfjsonpath.New("packages").AtSliceIndex(0).AtMapKey("config").AtMapKey("driver.conf")),
			plancheck.ExpectUnknownValue(m+"gantry_workspace.chat", tfjsonpath.New("resource").AtMapKey("gpu_product")),
		)
		stateChecks = append(stateChecks,
			statecheck.ExpectKnownValue(m+"gantry_performer.gpu", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
			statecheck.ExpectKnownValue(m+"gantry_performer.tee", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
			statecheck.ExpectKnownValue(m+"gantry_executor.this", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
			statecheck.ExpectKnownValue(m+"gantry_workspace.chat", tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
			statecheck.ExpectKnownValue(m+"gantry_package_set.drivers", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
			statecheck.ExpectKnownValue(m+"gantry_package_set.drivers", tfjsonpath.New("complete_nodes"), knownvalue.StringExact("2/2")),
			statecheck.ExpectKnownValue(m+"gantry_performer.gpu", tfjsonpath.New("labels").AtMapKey("team.gantry.dev/env"), knownvalue.StringExact(k)),
		)
	}
	stateChecks = append(stateChecks,
		statecheck.ExpectKnownOutputValue("endpoints", knownvalue.MapExact(map[string]knownvalue.Check{
			"a": knownvalue.MapExact(map[string]knownvalue.Check{
				"gpu": knownvalue.StringExact(fmt.Sprintf("performer-%s-a-gpu.%s.svc.cluster.local:9090", prefix, nsA)),
				"tee": knownvalue.StringExact(fmt.Sprintf("performer-%s-a-tee.%s.svc.cluster.local:9090", prefix, nsA))}),
			"b": knownvalue.MapExact(map[string]knownvalue.Check{
				"gpu": knownvalue.StringExact(fmt.Sprintf("performer-%s-b-gpu.%s.svc.cluster.local:9090", prefix, nsB)),
				"tee": knownvalue.StringExact(fmt.Sprintf("performer-%s-b-tee.%s.svc.cluster.local:9090", prefix, nsB))}),
		})))
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config:            config,
				ConfigPlanChecks:  resource.ConfigPlanChecks{PreApply: planChecks},
				ConfigStateChecks: stateChecks,
			},
			{
				Config:           config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
