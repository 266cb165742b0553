package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// candidate_nodes through the CLI on the local cluster (hack/cluster: gantry-gpu-0..2 carry
// nvidia.com/gpu.present=true, the nvidia.com/gpu taint and 8 allocatable GPUs; no node has
// the SGX label). The performer's required node affinity pins it to two of the GPU nodes, so
// the count does not depend on the nodes other tests add: known after apply at plan (a count
// known at plan would fail the apply with "inconsistent final plan" when nodes join or leave
// before the apply plans again), 2 in state after the apply, and the next plan is empty. An
// SGX performer added to the configuration plans with its count unknown (the plan's warning,
// unit-tested, says no node can take it).
func TestAccPerformer_candidateNodes(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-cand")
	addr, sgx := "gantry_performer.pinned", "gantry_performer.sgx"
	pinned := performerConfig(ns, "pinned", `
  hardware_requirements = { gpu_count = 1 }
  affinity = jsonencode({
    nodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution = {
        nodeSelectorTerms = [{
          matchExpressions = [{ key = "kubernetes.io/hostname", operator = "In", values = ["gantry-gpu-0", "gantry-gpu-1"] }]
        }]
      }
    }
  })
  timeouts = { create = "3m" }
`)
	withSGX := pinned + fmt.Sprintf(`
resource "gantry_performer" "sgx" {
  name      = "sgx"
  namespace = %q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  hardware_requirements = { tee_required = true, tee_type = "sgx" }
}
`, ns)
	count := tfjsonpath.New("candidate_nodes")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: pinned,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(addr, count),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, count, knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
			},
			{
				Config:           pinned,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config:             withSGX,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction(sgx, plancheck.ResourceActionCreate),
					plancheck.ExpectUnknownValue(sgx, count),
				}},
			},
		},
	})
}
