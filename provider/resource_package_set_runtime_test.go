package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

func runtimeRequiredConfig(pool, extra string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name                   = %q
  node_selector          = { "gantry.dev/test-pool" = %q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool:1" }]
%s
  timeouts = { create = "3m", update = "3m", delete = "3m" }
}
`, pool, pool, extra)
}

// addRuntimeTaint gives node name the runtime-required taint, as a node joining with it
// (kwok updates the node too, its status: retried on a conflict).
func addRuntimeTaint(t *testing.T, c *kube.Clients, name string) {
	t.Helper()
	taint, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := c.Core.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Spec.Taints = append(node.Spec.Taints, taint)
		_, err = c.Core.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("taint node %s: %v", name, err)
	}
}

// runtimeTaintOf reports, per node of the pool, whether it carries the runtime-required taint.
func runtimeTaintOf(t *testing.T, c *kube.Clients, pool string, n int) map[string]bool {
	t.Helper()
	taint, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	out := map[string]bool{}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", pool, i)
		node, err := c.Core.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out[name] = packageset.HasTaint(node.Spec.Taints, taint)
	}
	return out
}

// runtime_required and auto_taint_new_nodes: two nodes join with the runtime-required taint;
// the apply completes (the stage pods tolerate it) and the nodes lose it; refresh plans
// nothing; import reads both attributes back; auto_taint_new_nodes without runtime_required
// fails at plan naming the attribute.
func TestAccPackageSet_runtimeRequired(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-rr-" + rand.String(5)
	accNodes(t, c, pool, 2)
	for i := 0; i < 2; i++ {
		addRuntimeTaint(t, c, fmt.Sprintf("%s-%d", pool, i))
	}
	addr := "gantry_package_set.test"
	full := runtimeRequiredConfig(pool, "  runtime_required     = true\n  auto_taint_new_nodes = true")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: runtimeRequiredConfig(pool, "  auto_taint_new_nodes = true"),
				ExpectError: regexp.MustCompile(`(?s)auto_taint_new_nodes\s+Needs\s+runtime_required.*set\s+runtime_required\s+=\s+true`)},
			{
				Config: full,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("runtime_required"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("auto_taint_new_nodes"), knownvalue.Bool(true)),
				},
				Check: func(*terraform.State) error {
					// The taint goes in the pass that writes complete, before the status the
					// apply waited on: no polling needed.
					for n, tainted := range runtimeTaintOf(t, c, pool, 2) {
						if tainted {
							return fmt.Errorf("node %s keeps the runtime-required taint after the set completed", n)
						}
					}
					return nil
				},
			},
			// Refresh: nothing to change.
			{Config: full, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			// Back to a plain set: both attributes removed, read back as null.
			{
				Config: runtimeRequiredConfig(pool, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("runtime_required"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("auto_taint_new_nodes"), knownvalue.Null()),
				},
			},
		},
	})
}

// runtime_required_cordon_after (NodeWright's runtimeRequiredCordonAfter): a node joining with
// the runtime-required taint loses it when the set completes and is cordoned in the same update,
// annotated with the set's name; the next plan is empty; the attribute without runtime_required
// fails at plan naming it.
func TestAccPackageSet_runtimeRequiredCordonAfter(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-rrc-" + rand.String(5)
	accNodes(t, c, pool, 1)
	taint, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	name := pool + "-0"
	addRuntimeTaint(t, c, name)
	full := runtimeRequiredConfig(pool, "  runtime_required              = true\n  runtime_required_cordon_after = true")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: runtimeRequiredConfig(pool, "  runtime_required_cordon_after = true"),
				ExpectError: regexp.MustCompile(`(?s)runtime_required_cordon_after\s+Needs\s+runtime_required.*set\s+runtime_required\s+=\s+true`)},
			{
				Config: full,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_package_set.test", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue("gantry_package_set.test", tfjsonpath.New("runtime_required_cordon_after"), knownvalue.Bool(true)),
				},
				Check: func(*terraform.State) error {
					node, err := c.Core.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
					if err != nil {
						return err
					}
					if packageset.HasTaint(node.Spec.Taints, taint) || !node.Spec.Unschedulable || node.Annotations[v1alpha1.AnnotationRuntimeRequiredCordon] != pool {
						return fmt.Errorf("node %s after the set completed: taints %v, unschedulable %v, %s=%q; want untainted, cordoned, annotated %q",
							name, node.Spec.Taints, node.Spec.Unschedulable, v1alpha1.AnnotationRuntimeRequiredCordon, node.Annotations[v1alpha1.AnnotationRuntimeRequiredCordon], pool)
					}
					return nil
				},
			},
			{Config: full, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
		},
	})
}
