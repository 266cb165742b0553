package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
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

# One terraform_data for both environments (terraform-plugin-testing's legacy state shim,
# used for the post-test destroy, rejects for_each on a root-module resource).
resource "terraform_data" "env" {
  input = { for k, e in local.envs : k => {
    namespace      = e.namespace
    gpu_product    = e.gpu_product
    labels         = { "app.kubernetes.io/instance" = k, "team.gantry.dev/env" = k }
    driver_version = "550.54.15"
    node_selector  = { "gantry.dev/test-pool" = %[5]q }
  } }
}

module "stack" {
  source   = %[1]q
  for_each = local.envs

  name            = "%[2]s-${each.key}"
  namespace       = terraform_data.env.output[each.key].namespace
  labels          = terraform_data.env.output[each.key].labels
  performer_image = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  gpu             = { count = 1, product = terraform_data.env.output[each.key].gpu_product }
  tee_type        = each.value.tee_type

  executor_image      = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x1111111111111111111111111111111111111111" },
  ]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa", bls_key = "bls" }

  model  = { name = "falcon-7b-instruct", image = "ghcr.io/gantry-dev/hello-model:1.0.0", gpu_product = terraform_data.env.output[each.key].gpu_product }
  driver = {
    version       = terraform_data.env.output[each.key].driver_version
    image         = "ghcr.io/gantry-dev/gpu-driver:550"
    node_selector = terraform_data.env.output[each.key].node_selector
  }
  timeout = "5m"
}

output "endpoints" {
  value = { for k, m in module.stack : k => m.performer_endpoints }
}

output "summaries" {
  value = { for k, m in module.stack : k => m.summaries }
}

output "driver_nodes" {
  value = { for k, m in module.stack : k => m.drivers.complete_nodes }
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
	// The configuration goes in a directory (ConfigDirectory), not a string: terraform-plugin-
	// testing runs `terraform init`, which installs modules, on a step's whole configuration
	// only then (for a string it inits with the provider blocks alone), and only when the step
	// has providers of its own.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(gpuStackConfig(module, prefix, nsA, nsB, pool)), 0o600); err != nil {
		t.Fatal(err)
	}
	configDir := config.StaticDirectory(dir)

	var planChecks []plancheck.PlanCheck
	var stateChecks []statecheck.StateCheck
	// statecheck addresses root-module resources only: module resources are checked through
	// the root outputs, which carry the module's outputs.
	summaries, driverNodes := map[string]knownvalue.Check{}, map[string]knownvalue.Check{}
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
		summaries[k] = knownvalue.MapExact(map[string]knownvalue.Check{
			"performer_gpu": knownvalue.StringExact("Running"), "performer_tee": knownvalue.StringExact("Running"),
			"executor": knownvalue.StringExact("Running"), "workspace": knownvalue.StringExact("Ready"), "drivers": knownvalue.StringExact("complete")})
		driverNodes[k] = knownvalue.StringExact("2/2")
	}
	stateChecks = append(stateChecks,
		statecheck.ExpectKnownOutputValue("summaries", knownvalue.MapExact(summaries)),
		statecheck.ExpectKnownOutputValue("driver_nodes", knownvalue.MapExact(driverNodes)),
		statecheck.ExpectKnownOutputValue("endpoints", knownvalue.MapExact(map[string]knownvalue.Check{
			"a": knownvalue.MapExact(map[string]knownvalue.Check{
				"gpu": knownvalue.StringExact(fmt.Sprintf("performer-%s-a-gpu.%s.svc.cluster.local:9090", prefix, nsA)),
				"tee": knownvalue.StringExact(fmt.Sprintf("performer-%s-a-tee.%s.svc.cluster.local:9090", prefix, nsA))}),
			"b": knownvalue.MapExact(map[string]knownvalue.Check{
				"gpu": knownvalue.StringExact(fmt.Sprintf("performer-%s-b-gpu.%s.svc.cluster.local:9090", prefix, nsB)),
				"tee": knownvalue.StringExact(fmt.Sprintf("performer-%s-b-tee.%s.svc.cluster.local:9090", prefix, nsB))}),
		})))
	resource.Test(t, resource.TestCase{
		PreCheck: func() { testAccPreCheck(t) },
		CheckDestroy: func(*terraform.State) error {
			// Every object of both instances is gone (the state is empty by now: look in the cluster).
			for _, n := range []string{prefix + "-a-drivers", prefix + "-b-drivers"} {
				if _, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("package set %s still exists after destroy (err %v)", n, err)
				}
			}
			for _, ns := range []string{nsA, nsB} {
				for _, gvr := range []schema.GroupVersionResource{wait.Performer.GVR, wait.Executor.GVR, wait.Workspace.GVR} {
					l, err := c.Dynamic.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
					if err != nil {
						return err
					}
					if len(l.Items) > 0 {
						return fmt.Errorf("%d %s left in %s after destroy", len(l.Items), gvr.Resource, ns)
					}
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				ConfigPlanChecks:         resource.ConfigPlanChecks{PreApply: planChecks},
				ConfigStateChecks:        stateChecks,
			},
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				ConfigPlanChecks:         resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// Destroy in a step: the post-test destroy reads state through the legacy
				// shim, which rejects modules; after this step the state is empty.
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				Destroy:                  true,
			},
		},
	})
}
