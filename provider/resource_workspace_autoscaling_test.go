package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// wsAutoscaled is an A100 inference workspace whose replicas an autoscaler owns (min 1, max 3);
// scaler is the autoscaling block's rest: a metric, or external = true.
func wsAutoscaled(scaler string) string {
	return fmt.Sprintf(`
  resource = {
    gpu_count   = 1
    gpu_product = "NVIDIA-A100-SXM4-80GB"
  }
  inference = {
    model = "falcon-7b-instruct"
    image = "ghcr.io/gantry-dev/hello-model:1.0.0"
  }
  autoscaling = {
    min_replicas = 1
    max_replicas = 3
%s
  }
  timeouts = { create = "3m", update = "3m" }
`, scaler)
}

const vllmQueueMetric = `    metric = {
      pods = { name = "vllm:num_requests_waiting", average_value = "5" }
    }`

// Autoscaling that Terraform never fights (issue 40 item 4; kaito-project/kaito #1380, #1659),
// on kwok nodes. The apply creates the workspace with min_replicas and the reconciler's
// HorizontalPodAutoscaler; then the autoscaler is simulated (the local cluster has no metrics
// server, so the HPA itself never scales): the Deployment is scaled to 3 through its scale
// subresource. After the reconciler's passes the Deployment still has 3 replicas (not put
// back), the workspace reports them, and `terraform plan` is empty (refresh reads the new
// count into current_replicas and desired_replicas, which no plan shows as a change). An
// apply of the same configuration changes nothing and keeps 3. resource.count beside
// autoscaling fails the plan naming both. Switching to an external autoscaler (KEDA) deletes
// the HPA and still keeps the count, with an empty plan after.
func TestAccWorkspace_autoscaling(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-scale")
	a := autoscaledAcc{c: c, kind: gwait.Workspace, ns: ns, name: "chat", dep: "workspace-chat", addr: "gantry_workspace.chat",
		summary: "state", done: "Ready", counts: []string{"currentReplicas", "desiredReplicas"}}
	cfg := workspaceConfig(ns, "chat", wsAutoscaled(vllmQueueMetric))
	keda := workspaceConfig(ns, "chat", wsAutoscaled("    external = true"))
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			a.createdStep(cfg, statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("resource").AtMapKey("count"), knownvalue.Int64Exact(1))),
			a.scaledStep(t, cfg),
			a.keptStep(cfg),
			{
				// resource.count beside autoscaling fails the plan naming both.
				Config:      strings.Replace(cfg, "gpu_count   = 1", "gpu_count   = 1\n    count       = 2", 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Conflicting Attributes: resource.count and autoscaling.*resource.count conflicts with\s+autoscaling`),
			},
			a.kedaStep(keda),
			a.kedaScaledStep(t, keda),
		},
	})
}
