package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// releaseTuningConfig is a tuning workspace on an instance type no node of the local cluster
// has, so the reconciler provisions its node through a Karpenter NodeClaim (the local
// cluster's Karpenter, kwok provider, makes it), with tuning.release_nodes_on_success = release.
// Its label_selector (the namespace, a label the claim's node gets) keeps its pod off the
// node another test's workspace of the same instance type provisioned in parallel: a pod
// placed there needed no claim of its own, and there was nothing to release.
func releaseTuningConfig(ns, name string, release bool) string {
	return workspaceConfig(ns, name, fmt.Sprintf(`
  resource = {
    count          = 1
    instance_type  = "Standard_NC40ads_H100_v5"
    label_selector = { "gantry.dev/acc-release" = %q }
  }
  tuning = {
    method                   = "lora"
    base_model               = "phi-3-mini-4k-instruct"
    image                    = "ghcr.io/gantry-dev/hello-tuner:1.0.0"
    input_urls               = ["https://example.com/data.parquet"]
    output_image             = "registry.example/adapters/phi:1"
    release_nodes_on_success = %t
  }
  timeouts = { create = "5m", update = "5m", delete = "5m" }
`, ns, release))
}

// claimsAndNodesGone waits until no NodeClaim of the workspaces of namespace ns is left and no
// node made for them either (Karpenter removes a claim's node).
func claimsAndNodesGone(c *kube.Clients, ns string) error {
	byNS := metav1.ListOptions{LabelSelector: workspace.LabelWorkspaceNamespace + "=" + ns}
	var left string
	err := kwait.PollUntilContextTimeout(context.Background(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		claims, err := c.Dynamic.Resource(nodeClaimGVR).List(ctx, byNS)
		if err != nil {
			return false, nil
		}
		nodes, err := c.Core.CoreV1().Nodes().List(ctx, byNS)
		if err != nil {
			return false, nil
		}
		left = fmt.Sprintf("%d NodeClaims, %d nodes", len(claims.Items), len(nodes.Items))
		return len(claims.Items) == 0 && len(nodes.Items) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the released NodeClaims and nodes are not gone: %s left", left)
	}
	return nil
}

// resourceReadyReason waits (up to a minute: the release follows the Succeeded the apply
// returned on, in a later pass) until the workspace's ResourceReady reason in the cluster is
// want and its status.nodeClaims is empty: the reconciler drops a claim from the status on its
// next poll (workspace.WaitPoll) after the claim is gone from the API server, so the next step's
// refresh reads node_claims empty only after that.
func resourceReadyReason(c *kube.Clients, ns, name, want string) error {
	gvr := schema.GroupVersionResource{Group: v1alpha1.GroupVersion.Group, Version: v1alpha1.GroupVersion.Version, Resource: "workspaces"}
	last := "no ResourceReady condition"
	err := kwait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := c.Dynamic.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		claims, _, _ := unstructured.NestedStringSlice(u.Object, "status", "nodeClaims")
		for _, cd := range wait.Conditions(u) {
			if cd.Type == workspace.ConditionResourceReady {
				last = fmt.Sprintf("ResourceReady reason %s (%s), status.nodeClaims %v", cd.Reason, cd.Message, claims)
				return cd.Reason == want && len(claims) == 0, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("%s, want %s", last, want)
	}
	return nil
}

// kaito-project/kaito #1107 (issue 40 item 6): a tuning run provisions its node through a
// Karpenter NodeClaim and Succeeds; with release_nodes_on_success set from the start the claim
// is deleted once it has, Karpenter removes the node, the workspace stays Succeeded with
// ResourceReady reason NodesReleased, and the next plan is empty (node_claims is read, not a diff).
func TestAccWorkspace_tuningReleasesNodes(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-release")
	addr := "gantry_workspace.tune"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             func(*terraform.State) error { return claimsAndNodesGone(c, ns) },
		Steps: []resource.TestStep{{
			Config: releaseTuningConfig(ns, "tune", true),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("tuning").AtMapKey("release_nodes_on_success"), knownvalue.Bool(true)),
			},
			Check: func(*terraform.State) error {
				if err := claimsAndNodesGone(c, ns); err != nil {
					return err
				}
				return resourceReadyReason(c, ns, "tune", workspace.ReasonNodesReleased)
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		}, {
			// Refreshed after the release: still Succeeded, no claims, nothing to change.
			Config:           releaseTuningConfig(ns, "tune", true),
			ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_claims"), knownvalue.ListSizeExact(0)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("conditions").AtMapKey("ResourceReady"), knownvalue.StringExact("False")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("conditions").AtMapKey("Ready"), knownvalue.StringExact("True")),
			},
		}},
	})
}

// Without release_nodes_on_success the Succeeded run holds its NodeClaim (node_claims names it);
// setting it later is an in-place update (not a replace: the one tuning attribute that may
// change) after which the claim and its node go, the workspace stays Succeeded and the next
// plan is empty.
func TestAccWorkspace_tuningReleasesNodesLater(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-release-later")
	addr := "gantry_workspace.tune"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             func(*terraform.State) error { return claimsAndNodesGone(c, ns) },
		Steps: []resource.TestStep{{
			Config: releaseTuningConfig(ns, "tune", false),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_claims"), knownvalue.ListSizeExact(1)),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("tuning").AtMapKey("release_nodes_on_success"), knownvalue.Bool(false)),
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
		}, {
			Config: releaseTuningConfig(ns, "tune", true),
			ConfigPlanChecks: resource.ConfigPlanChecks{
				PreApply:             []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)},
				PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
			},
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Succeeded")),
			},
			Check: func(*terraform.State) error {
				if err := claimsAndNodesGone(c, ns); err != nil {
					return err
				}
				if err := resourceReadyReason(c, ns, "tune", workspace.ReasonNodesReleased); err != nil {
					return err
				}
				evs, err := c.Core.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
				if err != nil {
					return err
				}
				for _, ev := range evs.Items {
					if ev.InvolvedObject.Name == "tune" && ev.Reason == workspace.ReasonNodesReleased && strings.Contains(ev.Message, "deleting its NodeClaims") {
						return nil
					}
				}
				return fmt.Errorf("no %s event on the workspace", workspace.ReasonNodesReleased)
			},
		}},
	})
}
