package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"k8s.io/apimachinery/pkg/util/rand"
)

// cliVersion returns the version of the CLI at TF_ACC_TERRAFORM_PATH and whether it is
// OpenTofu (`version -json`: terraform_version; OpenTofu names itself in `version`).
func cliVersion(t *testing.T) (*version.Version, bool) {
	t.Helper()
	requireTerraform(t)
	out, err := exec.Command(os.Getenv("TF_ACC_TERRAFORM_PATH"), "version", "-json").Output()
	if err != nil {
		t.Fatalf("terraform version -json: %v", err)
	}
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("terraform version -json: %v: %s", err, out)
	}
	plain, _ := exec.Command(os.Getenv("TF_ACC_TERRAFORM_PATH"), "version").Output()
	return version.Must(version.NewVersion(v.Version)), strings.Contains(string(plain), "OpenTofu")
}

// skipBelowTerraform skips a test that needs Terraform min or later (and skips it on OpenTofu,
// whose releases number differently and lack the feature tested).
func skipBelowTerraform(t *testing.T, minVersion, feature string) {
	t.Helper()
	v, tofu := cliVersion(t)
	if tofu {
		t.Skipf("%s: not tested on OpenTofu %s", feature, v)
	}
	if v.LessThan(version.Must(version.NewVersion(minVersion))) {
		t.Skipf("%s needs Terraform %s or later; this CLI is %s", feature, minVersion, v)
	}
}

// requiredGantry is the terraform block of configurations run by the CLI harness (newCLI),
// whose dev_overrides serve gantry-dev/gantry.
const requiredGantry = `terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}
`

// identityStack is one object of each kind, all labelled acc-query=<label> where the kind has
// labels: a performer, an executor over it, a one-replica inference workspace and a package set
// on the test's own pool.
func identityStack(ns, pool, label string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" "p" {
  name      = "perf"
  namespace = %[1]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  labels    = { "acc-query" = %[3]q }
}

resource "gantry_executor" "x" {
  name                = "exec"
  namespace           = %[1]q
  image               = "ghcr.io/layr-labs/hourglass-executor:v1.0.0"
  labels              = { "acc-query" = %[3]q }
  aggregator_endpoint = "aggregator.avs.svc:9010"
  performer_names     = [gantry_performer.p.name]
  chains = [{ name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x%[4]s" }]
  operator_keys = { remote_signer_url = "https://signer.example.com" }
}

resource "gantry_workspace" "w" {
  name      = "ws"
  namespace = %[1]q
  labels    = { "acc-query" = %[3]q }
  resource = {
    count       = 1
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
  }
}

resource "gantry_package_set" "s" {
  name          = %[2]q
  node_selector = { "gantry.dev/test-pool" = %[2]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool:1" }]
}
`, ns, pool, label, strings.Repeat("ab", 20))
}

// Resource identity (Terraform >= 1.12): each of the four resources has an identity
// in state after create ({namespace, name}; {name} for the cluster-scoped package set), and an
// `import` block giving that identity instead of an ID imports it with a plan of no changes.
func TestAccIdentity_importByIdentity(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.12.0", "resource identity")
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ident")
	pool := "acc-ident-" + rand.String(5)
	accNodes(t, c, pool, 3)
	config := identityStack(ns, pool, pool)
	nsName := func(name string) map[string]knownvalue.Check {
		return map[string]knownvalue.Check{"namespace": knownvalue.StringExact(ns), "name": knownvalue.StringExact(name)}
	}
	step := func(addr string) resource.TestStep {
		return resource.TestStep{
			Config: config, ResourceName: addr, ImportState: true,
			ImportStateKind:  resource.ImportBlockWithResourceIdentity,
			ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop)}},
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity("gantry_performer.p", nsName("perf")),
					statecheck.ExpectIdentity("gantry_executor.x", nsName("exec")),
					statecheck.ExpectIdentity("gantry_workspace.w", nsName("ws")),
					statecheck.ExpectIdentity("gantry_package_set.s", map[string]knownvalue.Check{"name": knownvalue.StringExact(pool)}),
				},
			},
			step("gantry_performer.p"),
			step("gantry_executor.x"),
			step("gantry_workspace.w"),
			step("gantry_package_set.s"),
		},
	})
}
