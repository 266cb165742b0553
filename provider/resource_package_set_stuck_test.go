package provider

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

func uninstallConfig(pool, extraSet, extraPkg string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %q
  node_selector = { "gantry.dev/test-pool" = %q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
%s
  packages = [
    {
      name              = "dcgm-tool"
      version           = "1.0.0"
      image             = "ghcr.io/gantry-dev/dcgm-tool:1"
      uninstall_enabled = true
%s
    },
  ]
  timeouts = { create = "3m", update = "3m", delete = "3m" }
}
`, pool, pool, extraSet, extraPkg)
}

// A destroy whose uninstall fails stops at once (not after its delete timeout) naming the
// node, package, stage uninstall and the way out; the documented way out — uninstall_on_delete
// = false, terraform apply, terraform destroy — finishes it with no finalizer surgery and no
// gantry.dev/ annotation left.
func TestAccPackageSet_uninstallFailsOnDestroy(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-unin-" + rand.String(5)
	accNodes(t, c, pool, 1)
	addr := "gantry_package_set.test"
	// The same version's spec makes its stage container fail (kwok chaos label): the node
	// record follows the spec of the installed version, and the uninstall runs it.
	failing := `      pod_labels = { "pod-init-container-running-failed.stage.kwok.x-k8s.io" = "true" }`
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkSetAndAnnotationsGone(c, pool, 1),
		Steps: []resource.TestStep{
			{Config: uninstallConfig(pool, "", ""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete"))}},
			{Config: uninstallConfig(pool, "", failing)},
			{Config: uninstallConfig(pool, "", failing), Destroy: true,
				ExpectError: regexp.MustCompile(`(?s)PackageSet Uninstall Failed.*UninstallFailed.*node\s+` + pool + `-0\s+package\s+dcgm-tool\s+stage\s+uninstall.*uninstall_on_delete\s+=\s+false`)},
			// The way out. The set finishes deleting right after this apply, so the plan after
			// it (refresh finds it gone) is not empty.
			{Config: uninstallConfig(pool, "  uninstall_on_delete = false", failing), ExpectNonEmptyPlan: true},
		},
	})
}

// checkSetAndAnnotationsGone: the set is gone and none of its pool's n nodes keeps a
// gantry.dev/ annotation or a cordon.
func checkSetAndAnnotationsGone(c *kube.Clients, pool string, n int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("PackageSet %s still exists (err %v)", pool, err)
		}
		for i := 0; i < n; i++ {
			node, err := c.Core.CoreV1().Nodes().Get(context.Background(), fmt.Sprintf("%s-%d", pool, i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			for k := range node.Annotations {
				if len(k) > len("gantry.dev/") && k[:len("gantry.dev/")] == "gantry.dev/" {
					return fmt.Errorf("node %s keeps annotation %s", node.Name, k)
				}
			}
			if node.Spec.Unschedulable {
				return fmt.Errorf("node %s left cordoned", node.Name)
			}
		}
		return nil
	}
}

// A set queued behind a paused set: the apply returns at once (a warning names the paused
// set) with status waiting, instead of waiting until its create timeout; resuming the paused
// set lets it complete.
func TestAccPackageSet_waitingForPausedSet(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-held-" + rand.String(5)
	accNodes(t, c, pool, 1)
	cfg := func(paused bool) string {
		return fmt.Sprintf(`
resource "gantry_package_set" "first" {
  name          = "%[1]s-a"
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  priority      = 10
  paused        = %[2]v
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool:1" }]
}
resource "gantry_package_set" "second" {
  name          = "%[1]s-b"
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  priority      = 20
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{ name = "dcgm-exporter", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-exporter:1" }]
  timeouts = { create = "10m", update = "10m" }
  %[3]s
  depends_on = [gantry_package_set.first]
}
`, pool, paused, map[bool]string{true: "", false: "paused = false"}[paused])
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{Config: cfg(true),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_package_set.first", tfjsonpath.New("status"), knownvalue.StringExact("paused")),
					statecheck.ExpectKnownValue("gantry_package_set.second", tfjsonpath.New("status"), knownvalue.StringExact("waiting")),
				}},
			// Resumed (and the second set updated, so its apply waits): both complete.
			{Config: cfg(false),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_package_set.first", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue("gantry_package_set.second", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
				}},
		},
	})
}
