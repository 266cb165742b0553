package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// A MIG profile the GPU offers plans cleanly with the real CLI and no cluster (the refusals are
// rows of TestBadInput_caughtAtPlan): the H200's own profiles by gpu_product and by an H200
// instance type, and a product the MIG table does not know (no table, no opinion).
func TestMIGProfile_offeredPlans(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	for name, res := range map[string]string{
		"gpu_product":     `{ count = 1, gpu_product = "NVIDIA-H200", partition = { mode = "mig", profile = "1g.18gb" } }`,
		"instance_type":   `{ count = 2, instance_type = "Standard_ND96isr_H200_v5", provision_nodes = false, partition = { mode = "mig", profile = "3g.71gb" } }`,
		"unknown product": `{ count = 1, gpu_product = "NVIDIA-B200", partition = { mode = "mig", profile = "1g.23gb" } }`,
		"a100 by label":   `{ count = 1, label_selector = { "nvidia.com/gpu.product" = "NVIDIA-A100-SXM4-40GB" }, partition = { mode = "mig", profile = "3g.20gb" } }`,
	} {
		t.Run(name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:             fmt.Sprintf("provider \"gantry\" {}\nresource \"gantry_workspace\" \"mig\" {\n  name = \"mig\"\n  resource = %s\n  inference = { model = \"m\", image = \"i\" }\n}\n", res),
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
				}},
			})
		})
	}
}
