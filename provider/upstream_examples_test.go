package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// KAITO's own examples of its newer presets, as written: phi-4-mini-instruct on one GPU, and
// deepseek-r1-0528 served by a multi-node group on 6 × Standard_NC80adis_H100_v5 (12 GPUs)
// that no node of the cluster has yet: the reconciler provisions the 6 nodes through
// Karpenter NodeClaims and the group (a StatefulSet, pod 0 leading) goes Ready on them. The
// next plan is empty for both.
func TestAccWorkspace_kaitoNewPresets(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-presets")
	cfg := fmt.Sprintf(`
provider "gantry" {}

resource "gantry_workspace" "phi4" {
  name      = "phi-4-mini"
  namespace = %[1]q
  resource  = { gpu_product = "NVIDIA-A100-SXM4-80GB" }
  inference = { preset = "phi-4-mini-instruct" }
  timeouts  = { create = "3m" }
}

resource "gantry_workspace" "deepseek" {
  name      = "deepseek-r1"
  namespace = %[1]q
  resource = {
    count         = 6
    instance_type = "Standard_NC80adis_H100_v5"
  }
  inference = { preset = "deepseek-r1-0528" }
  timeouts  = { create = "5m", delete = "5m" }
}
`, ns)
	byNS := metav1.ListOptions{LabelSelector: workspace.LabelWorkspaceNamespace + "=" + ns}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             noNodeClaimsLeft(c, byNS, "workspaces"),
		Steps: []resource.TestStep{{
			Config: cfg,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gantry_workspace.phi4", tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				statecheck.ExpectKnownValue("gantry_workspace.deepseek", tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
				statecheck.ExpectKnownValue("gantry_workspace.deepseek", tfjsonpath.New("node_claims"), knownvalue.ListSizeExact(6)),
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: func(*terraform.State) error {
				ctx := context.Background()
				dep, err := c.Core.AppsV1().Deployments(ns).Get(ctx, "workspace-phi-4-mini", metav1.GetOptions{})
				if err != nil {
					return err
				}
				ct := dep.Spec.Template.Spec.Containers[0]
				if gpus := ct.Resources.Limits["nvidia.com/gpu"]; ct.Image != "mcr.microsoft.com/aks/kaito/kaito-phi-4-mini-instruct:0.2.0" || gpus.Value() != 1 {
					return fmt.Errorf("phi-4-mini-instruct: image %s, GPUs %s", ct.Image, gpus.String())
				}
				sts, err := c.Core.AppsV1().StatefulSets(ns).Get(ctx, "workspace-deepseek-r1", metav1.GetOptions{})
				if err != nil {
					return fmt.Errorf("deepseek-r1-0528 is served by a multi-node group (a StatefulSet): %w", err)
				}
				st := sts.Spec.Template.Spec.Containers[0]
				if sts.Status.ReadyReplicas != 6 || !strings.Contains(strings.Join(st.Args, " "), "--model=deepseek-ai/DeepSeek-R1-0528") {
					return fmt.Errorf("deepseek-r1-0528 group: %d ready of 6, args %v", sts.Status.ReadyReplicas, st.Args)
				}
				return nil
			},
		}},
	})
}

// Skyhook's tag rule on a real rollout: a package image whose written tag differs from its
// version runs the version's tag (the plan warns, naming both), and the configuration as
// written stays in state (no diff on the next plan).
func TestAccPackageSet_imageTagIsVersion(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-tag-" + rand.String(5)
	accNodes(t, c, pool, 3) // checkPackageSetGone reads nodes 0-2
	addr := "gantry_package_set.test"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %[1]q
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool:0.9" }]
}
`, pool),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(0).AtMapKey("image"), knownvalue.StringExact("ghcr.io/gantry-dev/dcgm-tool:0.9")),
			},
			ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			Check: func(*terraform.State) error {
				jobs, err := c.Core.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelPackageSet + "=" + pool})
				if err != nil {
					return err
				}
				if len(jobs.Items) == 0 {
					return fmt.Errorf("no stage Pod of set %s left to read its image from", pool)
				}
				for _, j := range jobs.Items {
					for _, ct := range j.Spec.Containers {
						if strings.HasPrefix(ct.Image, "ghcr.io/gantry-dev/dcgm-tool") && ct.Image != "ghcr.io/gantry-dev/dcgm-tool:1.0.0" {
							return fmt.Errorf("stage Pod %s runs %s, want the version's tag ghcr.io/gantry-dev/dcgm-tool:1.0.0", j.Name, ct.Image)
						}
					}
				}
				return nil
			},
		}},
	})
}
