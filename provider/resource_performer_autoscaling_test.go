package provider

import (
	"context"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
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
	addr := "gantry_performer.scaled"
	dep := "performer-scaled"
	cfg := performerConfig(ns, "scaled", perfAutoscaled(tasksInFlightMetric))
	v2 := strings.Replace(cfg, "hello-performer:v1.0.0", "hello-performer:v1.1.0", 1)
	keda := strings.Replace(performerConfig(ns, "scaled", perfAutoscaled("    external = true")), "hello-performer:v1.0.0", "hello-performer:v1.1.0", 1)
	hpaGone := func(want bool) resource.TestCheckFunc {
		return func(*terraform.State) error {
			var last error
			_ = wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := c.Core.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, dep, metav1.GetOptions{})
				switch {
				case want && !apierrors.IsNotFound(err):
					last = fmt.Errorf("HorizontalPodAutoscaler %s/%s still exists (%v)", ns, dep, err)
				case !want && err != nil:
					last = fmt.Errorf("HorizontalPodAutoscaler %s/%s: %v", ns, dep, err)
				default:
					last = nil
				}
				return last == nil, nil
			})
			return last
		}
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("current_replicas"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("desired_replicas"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("autoscaling").AtMapKey("external"), knownvalue.Null()),
				},
				Check:            resource.ComposeTestCheckFunc(hpaGone(false), func(*terraform.State) error { return deploymentReplicas(c, ns, dep, 1) }),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The autoscaler scales to 3; the reconciler reports it and leaves it.
				PreConfig: func() {
					scaleDeployment(t, c, ns, dep, 3, "test-autoscaler")
					waitPerformerReplicas(t, c, ns, "scaled", 3)
					time.Sleep(5 * time.Second) // more reconciler passes (pods, the HPA's status)
					if err := deploymentReplicas(c, ns, dep, 3); err != nil {
						t.Fatal(err)
					}
				},
				Config:   cfg,
				PlanOnly: true, // the plan after the refresh must be empty
			},
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("current_replicas"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("desired_replicas"), knownvalue.Int64Exact(3)),
				},
				Check:            func(*terraform.State) error { return deploymentReplicas(c, ns, dep, 3) },
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}, PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// A new image rolls the pods; the count stays the autoscaler's.
				Config: v2,
				Check: func(*terraform.State) error {
					time.Sleep(3 * time.Second)
					return deploymentReplicas(c, ns, dep, 3)
				},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running"))},
				ConfigPlanChecks:  resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// strategy Recreate beside autoscaling fails the plan naming both.
				Config:      strings.Replace(v2, `strategy = "RollingUpdate"`, `strategy = "Recreate"`, 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Conflicting Attributes: strategy and autoscaling.*autoscaling needs strategy\s+=\s+"RollingUpdate"`),
			},
			{
				// KEDA takes over: the HPA goes, the count stays.
				Config: keda,
				Check: resource.ComposeTestCheckFunc(hpaGone(true), func(*terraform.State) error {
					time.Sleep(3 * time.Second)
					return deploymentReplicas(c, ns, dep, 3)
				}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("autoscaling").AtMapKey("external"), knownvalue.Bool(true)),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// KEDA scales to 2: still no diff.
				PreConfig: func() {
					scaleDeployment(t, c, ns, dep, 2, "keda-operator")
					waitPerformerReplicas(t, c, ns, "scaled", 2)
				},
				Config:   keda,
				PlanOnly: true,
			},
		},
	})
}

// waitPerformerReplicas waits until the Performer's status reports want current, desired and
// Ready replicas and phase Running.
func waitPerformerReplicas(t *testing.T, c *kube.Clients, ns, name string, want int64) {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := c.Dynamic.Resource(gwait.Performer.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = u
		cur, _, _ := unstructured.NestedInt64(u.Object, "status", "currentReplicas")
		des, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredReplicas")
		ready, _, _ := unstructured.NestedInt64(u.Object, "status", "readyReplicas")
		phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
		return cur == want && des == want && ready == want && phase == "Running", nil
	})
	if err != nil {
		t.Fatalf("performer %s/%s did not report %d replicas Running: %v; last status %v", ns, name, want, err, last.Object["status"])
	}
}
