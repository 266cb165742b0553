package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

func policyConfig(pool, version, extraPkg string, failureThreshold int) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %[1]q
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  after         = ["%[1]s-other"]
  rollout       = { waves = [{ name = "zone-a", node_selector = { "gantry.dev/zone" = "a" } }] }
  deployment_policy = {
    default = { budget = { count = 1 } }
    compartments = [{
      name          = "zone-a"
      node_selector = { "gantry.dev/zone" = "a" }
      budget        = { count = 2 }
      strategy      = { type = "exponential", initial_batch = 1, failure_threshold = %[4]d }
    }]
  }
  packages = [{
    name    = "dcgm-tool"
    version = %[2]q
    image   = "ghcr.io/gantry-dev/dcgm-tool"
%[3]s
  }]
  timeouts = { create = "5m", update = "5m" }
}
`, pool, version, extraPkg, failureThreshold)
}

// A deployment policy over 5 nodes (3 in compartment zone-a, 2 in the default compartment),
// zone-a also the first wave, and after naming a set that does not exist (holds nothing):
// the apply waits until both compartments are complete and `compartments` shows them; import
// reads the policy back; a failing version stops zone-a after its first batch and the apply
// fails naming the compartment.
func TestAccPackageSet_deploymentPolicy(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-pol-" + rand.String(5)
	accNodes(t, c, pool, 5)
	for i := 0; i < 3; i++ {
		patch := []byte(`{"metadata":{"labels":{"gantry.dev/zone":"a"}}}`)
		if _, err := c.Core.CoreV1().Nodes().Patch(context.Background(), fmt.Sprintf("%s-%d", pool, i), k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	addr := "gantry_package_set.test"
	comp := func(name string, matched, ceiling int64) knownvalue.Check {
		return knownvalue.ObjectPartial(map[string]knownvalue.Check{"name": knownvalue.StringExact(name), "matched": knownvalue.Int64Exact(matched),
			"ceiling": knownvalue.Int64Exact(ceiling), "completed": knownvalue.Int64Exact(matched), "progress_percent": knownvalue.Int64Exact(100),
			"stopped": knownvalue.Bool(false)})
	}
	failing := `    pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`
	stopped := regexp.MustCompile(`(?s)DeploymentStopped.*compartment\s+zone-a\s+stopped\s+after\s+1\s+failed\s+batches\s+in\s+a\s+row.*stage\s+upgrade`)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: policyConfig(pool, "1.0.0", "", 3),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("complete_nodes"), knownvalue.StringExact("5/5")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("compartments"), knownvalue.ListExact([]knownvalue.Check{
						comp("zone-a", 3, 2), comp("default", 2, 1)})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("deployment_policy").AtMapKey("compartments").AtSliceIndex(0).AtMapKey("strategy").AtMapKey("growth_factor"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("waves").AtSliceIndex(0).AtMapKey("name"), knownvalue.StringExact("zone-a")),
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				Config:      policyConfig(pool, "1.1.0", failing, 1),
				ExpectError: stopped,
			},
			// The failed node's record is version 1.1.0 with its stage pods' failing label, so its
			// uninstall would fail too and block the deletion (by design: "Uninstall Failed").
			// Delete without uninstalling, as that diagnostic advises, so the destroy after the
			// test does not depend on how far node 0's retries got.
			{
				Config:      strings.Replace(policyConfig(pool, "1.1.0", failing, 1), "  after ", "  uninstall_on_delete = false\n  after ", 1),
				ExpectError: stopped,
			},
		},
	})
}

// Invalid deployment policies fail at plan with the attribute named.
func TestAccPackageSet_deploymentPolicyPlanValidation(t *testing.T) {
	skipUnlessAcc(t)
	cfg := func(policy string) string {
		return fmt.Sprintf(`
resource "gantry_package_set" "bad" {
  name = "bad"
  deployment_policy = %s
  packages = [{ name = "aa", version = "1.0.0", image = "x" }]
}`, policy)
	}
	comp := func(name, strategy string) string {
		return fmt.Sprintf(`{ name = %q, node_selector = { zone = "a" }, budget = { count = 1 }%s }`, name, strategy)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: strings.Replace(cfg(`{}`), `name = "bad"`, "name = \"bad\"\n  interruption_budget = { count = 1 }", 1),
				ExpectError: regexp.MustCompile(`(?s)Invalid Attribute Combination.*interruption_budget`)},
			{PlanOnly: true, Config: cfg(`{ compartments = [` + comp("a", `, strategy = { type = "exponential", delta = 2 }`) + `] }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid Strategy.*delta\s+is\s+only\s+for\s+type\s+"linear"`)},
			{PlanOnly: true, Config: cfg(`{ compartments = [` + comp("a", `, strategy = { type = "linear", growth_factor = 2 }`) + `] }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid Strategy.*growth_factor\s+is\s+only\s+for\s+type\s+"exponential"`)},
			{PlanOnly: true, Config: cfg(`{ compartments = [` + comp("a", "") + `, ` + comp("a", "") + `] }`),
				ExpectError: regexp.MustCompile(`(?s)Duplicate Compartment.*compartment\s+"a"\s+appears\s+twice`)},
			{PlanOnly: true, Config: cfg(`{ compartments = [` + comp("default", "") + `] }`),
				ExpectError: regexp.MustCompile(`(?s)compartments\[0\].name.*value must be none of`)},
			{PlanOnly: true, Config: cfg(`{ default = { strategy = { type = "geometric" } } }`), ExpectError: regexp.MustCompile(`value must be one of`)},
			{PlanOnly: true, Config: cfg(`{ default = { budget = { count = 1, percent = 10 } } }`), ExpectError: regexp.MustCompile(`Invalid Attribute Combination`)},
			{PlanOnly: true, Config: cfg(`{ compartments = [{ name = "a", budget = { count = 1 }, node_selector_expressions = [{ key = "k", operator = "In" }] }] }`),
				ExpectError: regexp.MustCompile(`operator\s+In\s+needs\s+at\s+least\s+one\s+value`)},
		},
	})
}

func healthConfig(pool, version, probeLabels string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %[1]q
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout = {
    soak_duration       = "2s"
    soak_check_interval = "1s"
    on_health_failure   = "rollback"
    health_checks = [
      { name = "dcgm", image = "ghcr.io/gantry-dev/dcgm-probe:1", command = ["/probe", "http://$(NODE_IP):9400/health"]%[3]s },
      { name = "exporter", http_get = { url = "http://$(NODE_IP):9100/metrics" }, timeout = "10s" },
    ]
  }
  packages = [{ name = "dcgm-tool", version = %[2]q, image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts = { create = "5m", update = "5m" }
}
`, pool, version, probeLabels)
}

// Health checks (NixFleet's health gates) on 3 nodes: passing, the apply completes and import
// reads them back; a failing one (kwok's chaos label on its pod only) with version 1.1.0 fails
// the apply naming the check, the rollback to 1.0.0 and the quarantine.
func TestAccPackageSet_healthChecks(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-hc-" + rand.String(5)
	accNodes(t, c, pool, 3) // checkPackageSetGone reads nodes 0-2
	addr := "gantry_package_set.test"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: healthConfig(pool, "1.0.0", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("health_checks").AtSliceIndex(1).AtMapKey("image"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("health_checks").AtSliceIndex(1).AtMapKey("timeout"), knownvalue.StringExact("10s")),
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				Config: healthConfig(pool, "1.1.0", `, pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`),
				// The rollback keeps its cause (the health check) in every pass from the
				// quarantine on, so whichever pass the wait sees names it.
				ExpectError: regexp.MustCompile(`(?s)health\s+check\s+dcgm\s+failed\s+in\s+round.*dcgm-tool@1\.1\.0`),
			},
			{
				// The health check's failure (only the check's pod carries the chaos label: the
				// package's own stages pass) rolled every node back to 1.0.0 and quarantined
				// 1.1.0; the set's Stalled condition says so and why (the health check), and the
				// failure stays in the plan.
				PreConfig: func() {
					waitRolledBack(t, c, pool, "dcgm-tool", "1.0.0")
					u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					q, _, _ := unstructured.NestedStringSlice(u.Object, "status", "quarantinedVersions")
					conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
					stalled := ""
					for _, c := range conds {
						if m, _ := c.(map[string]interface{}); m["type"] == "Stalled" {
							stalled, _ = m["message"].(string)
						}
					}
					if !slices.Contains(q, "dcgm-tool@1.1.0") || !strings.Contains(stalled, "quarantined by a rollback") || !strings.Contains(stalled, "health check dcgm failed") {
						t.Fatalf("after the failing health check: quarantined %v, Stalled %q", q, stalled)
					}
				},
				Config:             healthConfig(pool, "1.1.0", `, pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
		},
	})
}

func healthGateConfig(pool, version, probeLabels string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %[1]q
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout = {
    on_health_failure = "rollback"
    health_checks     = [{ name = "dcgm", image = "ghcr.io/gantry-dev/dcgm-probe:1", command = ["/probe"]%[3]s }]
  }
  packages = [{ name = "dcgm-tool", version = %[2]q, image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts = { create = "5m", update = "5m" }
}
`, pool, version, probeLabels)
}

// Health gates at soak 0 (NixFleet's healthGate with soakMinutes = 0): health checks with no
// soak_duration plan and apply; the check runs once per node after its last stage and the
// apply completes. With 1.1.0 and the check failing (kwok's chaos label on its pod only) the
// apply fails naming the check "failed after the last stage", the rollback and the quarantine.
func TestAccPackageSet_healthGateNoSoak(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-hg-" + rand.String(5)
	accNodes(t, c, pool, 3) // checkPackageSetGone reads nodes 0-2
	addr := "gantry_package_set.test"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: healthGateConfig(pool, "1.0.0", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("soak_duration"), knownvalue.Null()),
				},
			},
			{
				Config:      healthGateConfig(pool, "1.1.0", `, pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`),
				ExpectError: regexp.MustCompile(`(?s)health\s+check\s+dcgm\s+failed\s+after\s+the\s+last\s+stage.*dcgm-tool@1\.1\.0`),
			},
		},
	})
}

// NixFleet's observe mode and systemd gate: an observe-mode check whose pod fails (kwok's
// chaos label) does not fail the apply: the set completes and its HealthChecksObserved
// condition names the check on every node; the systemd_failed_units check round-trips
// (max kept as written) and import reads both back.
func TestAccPackageSet_healthCheckObserve(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-hco-" + rand.String(5)
	accNodes(t, c, pool, 3) // checkPackageSetGone reads nodes 0-2
	addr := "gantry_package_set.test"
	config := fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %[1]q
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout = {
    soak_duration       = "2s"
    soak_check_interval = "1s"
    health_checks = [
      { name = "cis", image = "ghcr.io/gantry-dev/cis-probe:1", command = ["/probe"], mode = "observe",
        pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" } },
      { name = "units", systemd_failed_units = { max = 1 }, mode = "enforce" },
    ]
  }
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts = { create = "5m" }
}
`, pool)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("health_checks").AtSliceIndex(0).AtMapKey("mode"), knownvalue.StringExact("observe")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("health_checks").AtSliceIndex(1).AtMapKey("systemd_failed_units").AtMapKey("max"), knownvalue.Int64Exact(1)),
				},
				Check: func(*terraform.State) error {
					u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
					if err != nil {
						return err
					}
					conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
					for _, cond := range conds {
						if m, _ := cond.(map[string]interface{}); m["type"] == "HealthChecksObserved" {
							msg, _ := m["message"].(string)
							for i := 0; i < 3; i++ {
								if !strings.Contains(msg, fmt.Sprintf("%s-%d: health check cis failed in round", pool, i)) {
									return fmt.Errorf("HealthChecksObserved %q does not name node %d", msg, i)
								}
							}
							return nil
						}
					}
					return fmt.Errorf("no HealthChecksObserved condition: %v", conds)
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
		},
	})
}

// Invalid health checks fail at plan with the attribute named.
func TestAccPackageSet_healthChecksPlanValidation(t *testing.T) {
	skipUnlessAcc(t)
	cfg := func(rollout string) string {
		return fmt.Sprintf(`
resource "gantry_package_set" "bad" {
  name    = "bad"
  rollout = %s
  packages = [{ name = "aa", version = "1.0.0", image = "x" }]
}`, rollout)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: cfg(`{ soak_duration = "1m", health_checks = [{ name = "a", image = "x", command = ["true"], http_get = { url = "http://x" } }] }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid Health Check.*exactly\s+one\s+of\s+command`)},
			{PlanOnly: true, Config: cfg(`{ soak_duration = "1m", health_checks = [{ name = "a", command = ["true"] }] }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid Health Check.*needs\s+image`)},
			{PlanOnly: true, Config: cfg(`{ soak_duration = "1m", health_checks = [{ name = "a", image = "x", command = ["true"], systemd_failed_units = {} }] }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid Health Check.*exactly\s+one\s+of\s+command.*systemd_failed_units`)},
			{PlanOnly: true, Config: cfg(`{ soak_duration = "1m", health_checks = [{ name = "a", systemd_failed_units = { max = -1 } }] }`),
				ExpectError: regexp.MustCompile(`(?s)max.*must\s+be\s+between\s+0\s+and\s+1000`)},
			{PlanOnly: true, Config: cfg(`{ soak_duration = "1m", health_checks = [{ name = "a", http_get = { url = "http://x" }, mode = "audit" }] }`),
				ExpectError: regexp.MustCompile(`(?s)mode.*value must be one of`)},
		},
	})
}
