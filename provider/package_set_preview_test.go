package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"k8s.io/apimachinery/pkg/util/rand"
)

// previewConfig is a driver with a reboot interrupt over the pool's nodes, one at a time, with
// a postcondition that allows at most maxReboots reboots per apply (0: no postcondition).
func previewConfig(pool, version string, maxReboots int) string {
	cond := ""
	if maxReboots > 0 {
		cond = fmt.Sprintf(`
  lifecycle {
    postcondition {
      condition     = try(self.rollout_preview.rebooted <= %d, true)
      error_message = "This change reboots ${self.rollout_preview.rebooted} nodes; at most %d per apply."
    }
  }`, maxReboots, maxReboots)
	}
	return fmt.Sprintf(`
resource "gantry_package_set" "driver" {
  name                   = %[1]q
  node_selector          = { "gantry.dev/test-pool" = %[1]q }
  interruption_budget    = { count = 1 }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{
    name      = "gpu-driver"
    version   = %[2]q
    image     = "ghcr.io/gantry-dev/gpu-driver"
    interrupt = { type = "reboot" }
  }]
  timeouts = { create = "5m", update = "5m" }
%[3]s
}
`, pool, version, cond)
}

// The rollout preview through the CLI: the create plans 3 nodes in 3 waves of 1, each
// cordoned, drained and rebooted, and keeps it in state (the plan after apply is empty); a
// version bump under a postcondition allowing 1 reboot fails at plan, naming the count; the
// bump applied, the preview is the new rollout's and a second plan is empty again.
func TestAccPackageSet_rolloutPreview(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-preview-" + rand.String(5)
	accNodes(t, c, pool, 3)
	addr := "gantry_package_set.driver"
	at := func(k string) tfjsonpath.Path { return tfjsonpath.New("rollout_preview").AtMapKey(k) }
	shape := []statecheck.StateCheck{
		statecheck.ExpectKnownValue(addr, at("selected_nodes"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue(addr, at("nodes"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue(addr, at("waves"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue(addr, at("max_wave_size"), knownvalue.Int64Exact(1)),
		statecheck.ExpectKnownValue(addr, at("rebooted"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue(addr, at("cordoned"), knownvalue.Int64Exact(3)),
		statecheck.ExpectKnownValue(addr, at("interrupts"), knownvalue.MapExact(map[string]knownvalue.Check{"reboot": knownvalue.Int64Exact(3)})),
		statecheck.ExpectKnownValue(addr, at("first_wave"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact(pool + "-0")})),
		statecheck.ExpectKnownValue(addr, at("completes"), knownvalue.Bool(true)),
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: previewConfig(pool, "550.90.7", 0),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(addr, at("rebooted"), knownvalue.Int64Exact(3)),
					plancheck.ExpectKnownValue(addr, at("waves"), knownvalue.Int64Exact(3)),
				}},
				ConfigStateChecks: shape,
			},
			{
				Config:      previewConfig(pool, "560.35.3", 1),
				ExpectError: regexp.MustCompile(`This change reboots 3 nodes; at most 1 per apply`),
			},
			{
				Config: previewConfig(pool, "560.35.3", 0),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(addr, at("rebooted"), knownvalue.Int64Exact(3)),
				}},
				ConfigStateChecks: shape,
			},
			{
				Config:           previewConfig(pool, "560.35.3", 0),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
