package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// perfAutoscaled is a RollingUpdate performer whose replicas an autoscaler owns (min 1, max
// 3); scaler is the autoscaling block's rest: a metric, or external = true.
func perfAutoscaled(scaler string) string {
	return fmt.Sprintf(`
  strategy = "RollingUpdate"
  autoscaling = {
    min_replicas = 1
    max_replicas = 3
%s
  }
  timeouts = { create = "3m", update = "3m" }
`, scaler)
}

const tasksInFlightMetric = `    metric = {
      pods = { name = "performer_tasks_in_flight", average_value = "4" }
    }`

// Performer autoscaling (issue 40 item 8; Hourglass's roadmap 6.3 "HPA integration for
// performers"), on the workspaces' model (TestAccWorkspace_autoscaling). The apply creates the
// Deployment performer-<name> with min_replicas and the reconciler's HorizontalPodAutoscaler;
// the autoscaler is simulated (no metrics server: the Deployment is scaled to 3 through its
// scale subresource). The reconciler keeps the 3 and reports them, `terraform plan` is empty
// (current_replicas and desired_replicas are only read), an apply of the same configuration
// changes nothing, an image change rolls the pods and keeps the count, strategy Recreate beside
// autoscaling fails the plan naming both, and switching to KEDA (external) deletes the HPA and
// keeps the count.
func TestAccPerformer_autoscaling(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-perf-scale")
	a := autoscaledAcc{c: c, kind: gwait.Performer, ns: ns, name: "scaled", dep: "performer-scaled", addr: "gantry_performer.scaled",
		summary: "phase", done: "Running", counts: []string{"currentReplicas", "desiredReplicas", "readyReplicas"}}
	cfg := performerConfig(ns, "scaled", perfAutoscaled(tasksInFlightMetric))
	v2 := strings.Replace(cfg, "hello-performer:v1.0.0", "hello-performer:v1.1.0", 1)
	keda := strings.Replace(performerConfig(ns, "scaled", perfAutoscaled("    external = true")), "hello-performer:v1.0.0", "hello-performer:v1.1.0", 1)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			a.createdStep(cfg),
			a.scaledStep(t, cfg),
			a.keptStep(cfg),
			{
				// A new image rolls the pods; the count stays the autoscaler's.
				Config: v2,
				Check: func(*terraform.State) error {
					time.Sleep(3 * time.Second)
					return deploymentReplicas(c, ns, a.dep, 3)
				},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(a.addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running"))},
				ConfigPlanChecks:  resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// strategy Recreate beside autoscaling fails the plan naming both.
				Config:      strings.Replace(v2, `strategy = "RollingUpdate"`, `strategy = "Recreate"`, 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Conflicting Attributes: strategy and autoscaling.*autoscaling needs strategy\s+=\s+"RollingUpdate"`),
			},
			a.kedaStep(keda),
			a.kedaScaledStep(t, keda),
		},
	})
}
