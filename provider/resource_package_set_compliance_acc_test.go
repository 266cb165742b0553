package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// NixFleet's compliance probes as compliance health checks: an enforce-mode nis2 check
// (default evidence path; on kwok nodes its pod completes) and an observe-mode anssi-bp028 check
// with its own evidence path whose pod fails (kwok's chaos label). The apply completes, the
// HealthChecksObserved condition names the anssi check on every node, the stored checks carry
// compliance { framework, evidencePath } as written (no evidencePath for nis2: the reconciler's
// default), state keeps evidence_path null where unset, and import reads both back.
func TestAccPackageSet_healthCheckCompliance(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-hcc-" + rand.String(5)
	accNodes(t, c, pool, 3) // checkPackageSetGone reads nodes 0-2
	addr := "gantry_package_set.test"
	checks := tfjsonpath.New("rollout").AtMapKey("health_checks")
	config := fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %[1]q
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout = {
    soak_duration       = "2s"
    soak_check_interval = "1s"
    on_health_failure   = "rollback"
    health_checks = [
      { name = "nis2", compliance = { framework = "nis2" } },
      { name = "anssi", compliance = { framework = "anssi-bp028", evidence_path = "/srv/compliance/evidence.json" }, mode = "observe",
        pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" } },
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
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(0).AtMapKey("compliance").AtMapKey("framework"), knownvalue.StringExact("nis2")),
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(0).AtMapKey("compliance").AtMapKey("evidence_path"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(0).AtMapKey("mode"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(0).AtMapKey("image"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(1).AtMapKey("compliance").AtMapKey("framework"), knownvalue.StringExact("anssi-bp028")),
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(1).AtMapKey("compliance").AtMapKey("evidence_path"), knownvalue.StringExact("/srv/compliance/evidence.json")),
					statecheck.ExpectKnownValue(addr, checks.AtSliceIndex(1).AtMapKey("mode"), knownvalue.StringExact("observe")),
				},
				Check: func(*terraform.State) error {
					u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
					if err != nil {
						return err
					}
					hcs, _, _ := unstructured.NestedSlice(u.Object, "spec", "rollout", "healthChecks")
					if len(hcs) != 2 {
						return fmt.Errorf("spec.rollout.healthChecks = %v", hcs)
					}
					if got := fmt.Sprint(hcs[0].(map[string]interface{})["compliance"]); got != "map[framework:nis2]" {
						return fmt.Errorf("healthChecks[0].compliance = %s, want map[framework:nis2]", got)
					}
					if got := fmt.Sprint(hcs[1].(map[string]interface{})["compliance"]); got != "map[evidencePath:/srv/compliance/evidence.json framework:anssi-bp028]" {
						return fmt.Errorf("healthChecks[1].compliance = %s", got)
					}
					conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
					for _, cond := range conds {
						if m, _ := cond.(map[string]interface{}); m["type"] == "HealthChecksObserved" {
							msg, _ := m["message"].(string)
							for i := 0; i < 3; i++ {
								if !strings.Contains(msg, fmt.Sprintf("%s-%d: health check anssi failed in round", pool, i)) {
									return fmt.Errorf("HealthChecksObserved %q does not name node %d and the anssi check", msg, i)
								}
							}
							if strings.Contains(msg, "health check nis2") {
								return fmt.Errorf("HealthChecksObserved %q names the passing nis2 check", msg)
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

// Invalid compliance checks fail at plan with the attribute named: a framework NixFleet does
// not name, a relative evidence path, a compliance check beside another kind.
func TestAccPackageSet_complianceCheckPlanValidation(t *testing.T) {
	skipUnlessAcc(t)
	cfg := func(check string) string {
		return fmt.Sprintf(`
resource "gantry_package_set" "bad" {
  name    = "bad"
  rollout = { soak_duration = "1m", health_checks = [%s] }
  packages = [{ name = "aa", version = "1.0.0", image = "x" }]
}`, check)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: cfg(`{ name = "a", compliance = { framework = "nis2-essential" } }`),
				ExpectError: regexp.MustCompile(`(?s)compliance\.framework.*value\s+must\s+be\s+one\s+of.*"anssi-bp028"\s+"nis2"\s+"dora"\s+"iso27001"`)},
			{PlanOnly: true, Config: cfg(`{ name = "a", compliance = { framework = "nis2", evidence_path = "evidence.json" } }`),
				ExpectError: regexp.MustCompile(`(?s)compliance\.evidence_path.*must\s+be\s+an\s+absolute\s+path`)},
			{PlanOnly: true, Config: cfg(`{ name = "a", compliance = { framework = "nis2" }, systemd_failed_units = {} }`),
				ExpectError: regexp.MustCompile(`(?s)Invalid Health Check.*exactly\s+one\s+of\s+command.*systemd_failed_units\s+or\s+compliance`)},
		},
	})
}
