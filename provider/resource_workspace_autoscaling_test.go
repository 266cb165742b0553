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

// scaleDeployment sets the Deployment's replicas through its scale subresource under manager,
// as the HorizontalPodAutoscaler controller (or KEDA) does.
func scaleDeployment(t *testing.T, c *kube.Clients, ns, name string, replicas int32, manager string) {
	t.Helper()
	ctx := context.Background()
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := c.Core.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s.Spec.Replicas = replicas
		_, err = c.Core.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{FieldManager: manager})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("scale %s/%s to %d: %v", ns, name, replicas, err)
	}
}

// deploymentReplicas fails the test unless the Deployment has want replicas.
func deploymentReplicas(c *kube.Clients, ns, name string, want int32) error {
	d, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		return fmt.Errorf("deployment %s/%s has %v replicas, want %d (the autoscaler's count was taken back)", ns, name, d.Spec.Replicas, want)
	}
	return nil
}

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
	addr := "gantry_workspace.chat"
	dep := "workspace-chat"
	cfg := workspaceConfig(ns, "chat", wsAutoscaled(vllmQueueMetric))
	keda := workspaceConfig(ns, "chat", wsAutoscaled("    external = true"))
	// hpaGone checks the HorizontalPodAutoscaler is there (false) or gone (true): the
	// reconciler deletes it in the pass that reports Ready, so it may still be going for a
	// moment when the apply returns.
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
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("current_replicas"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("desired_replicas"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("resource").AtMapKey("count"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("autoscaling").AtMapKey("external"), knownvalue.Null()),
				},
				Check:            resource.ComposeTestCheckFunc(hpaGone(false), func(*terraform.State) error { return deploymentReplicas(c, ns, dep, 1) }),
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The autoscaler scales to 3; the reconciler reports it and leaves it.
				PreConfig: func() {
					scaleDeployment(t, c, ns, dep, 3, "test-autoscaler")
					waitWorkspaceReplicas(t, c, ns, "chat", 3)
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
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("current_replicas"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("desired_replicas"), knownvalue.Int64Exact(3)),
				},
				Check:            func(*terraform.State) error { return deploymentReplicas(c, ns, dep, 3) },
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}, PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// resource.count beside autoscaling fails the plan naming both.
				Config:      strings.Replace(cfg, "gpu_count   = 1", "gpu_count   = 1\n    count       = 2", 1),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Conflicting Attributes: resource.count and autoscaling.*resource.count conflicts with\s+autoscaling`),
			},
			{
				// KEDA takes over: the HPA goes, the count stays.
				Config: keda,
				Check: resource.ComposeTestCheckFunc(hpaGone(true), func(*terraform.State) error {
					time.Sleep(3 * time.Second)
					return deploymentReplicas(c, ns, dep, 3)
				}),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("autoscaling").AtMapKey("external"), knownvalue.Bool(true)),
				},
				ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// KEDA scales to 2: still no diff.
				PreConfig: func() {
					scaleDeployment(t, c, ns, dep, 2, "keda-operator")
					waitWorkspaceReplicas(t, c, ns, "chat", 2)
				},
				Config:   keda,
				PlanOnly: true,
			},
		},
	})
}

// waitWorkspaceReplicas waits until the Workspace's status reports want current and desired
// replicas and state Ready.
func waitWorkspaceReplicas(t *testing.T, c *kube.Clients, ns, name string, want int64) {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := c.Dynamic.Resource(gwait.Workspace.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = u
		cur, _, _ := unstructured.NestedInt64(u.Object, "status", "currentReplicas")
		des, _, _ := unstructured.NestedInt64(u.Object, "status", "desiredReplicas")
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		return cur == want && des == want && state == "Ready", nil
	})
	if err != nil {
		t.Fatalf("workspace %s/%s did not report %d replicas Ready: %v; last status %v", ns, name, want, err, last.Object["status"])
	}
}
