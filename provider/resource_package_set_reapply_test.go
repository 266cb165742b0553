package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

func reapplyConfig(pool, flag string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name                   = %q
  node_selector          = { "gantry.dev/test-pool" = %q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  runtime_required       = true
  packages = [{
    name    = "dcgm-tool"
    version = "1.0.0"
    image   = "ghcr.io/gantry-dev/dcgm-tool:1"
%s
  }]
  timeouts = { create = "3m", update = "3m", delete = "3m" }
}
`, pool, pool, flag)
}

// setAccBootID sets a kwok node's status.nodeInfo.bootID, as a kubelet reports it after a boot,
// once kwok's node-initialize stage made it Ready (it writes the node's whole status).
func setAccBootID(t *testing.T, c *kube.Clients, name, id string) {
	t.Helper()
	ctx := context.Background()
	waitKwokNodeReady(t, c, name)
	patch := fmt.Sprintf(`{"status":{"nodeInfo":{"bootID":%q}}}`, id)
	if _, err := c.Core.CoreV1().Nodes().Patch(ctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatalf("set boot ID of %s: %v", name, err)
	}
}

// reapplyDone waits until the set re-applied dcgm-tool on the node after its reboot to boot:
// the record has seen boot, no re-gate is left, dcgm-tool's apply ran twice, the set is
// complete and the node has lost the runtime-required taint; and the set's events say why.
func reapplyDone(t *testing.T, c *kube.Clients, pool, node, from, boot string) error {
	ctx := context.Background()
	taint, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := c.Core.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		var rec packageset.NodeRecord
		_ = json.Unmarshal([]byte(n.Annotations[v1alpha1.AnnotationNodeStatePrefix+pool]), &rec)
		pods, err := c.Core.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPackageSet + "=" + pool + "," + v1alpha1.LabelStage + "=apply"})
		if err != nil {
			return false, nil
		}
		last = fmt.Sprintf("record bootID %q regate %+v, %d apply Pods, status %q, tainted %v", rec.BootID, rec.Regate, len(pods.Items),
			n.Annotations[v1alpha1.AnnotationNodeStatusPrefix+pool], packageset.HasTaint(n.Spec.Taints, taint))
		return rec.BootID == boot && rec.Regate == nil && len(pods.Items) == 2 && n.Annotations[v1alpha1.AnnotationNodeStatusPrefix+pool] == "complete" &&
			!packageset.HasTaint(n.Spec.Taints, taint), nil
	})
	if err != nil {
		return fmt.Errorf("no re-apply after the reboot to %s: %s", boot, last)
	}
	evs, err := c.Core.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pool})
	if err != nil {
		return err
	}
	want := map[string]string{
		"RebootedOutsideGantry": fmt.Sprintf("node %s rebooted outside Gantry (boot ID %s → %s): re-applying dcgm-tool", node, from, boot),
		"RuntimeTaintAdded":     "to node " + node + " again: re-gated after a reboot outside Gantry",
	}
	for _, ev := range evs.Items {
		if w, ok := want[ev.Reason]; ok && strings.Contains(ev.Message, w) {
			delete(want, ev.Reason)
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("events missing: %v", want)
	}
	return nil
}

// reapply_on_reboot (NodeWright's reapplyOnReboot, NVIDIA/nodewright #180) on a kwok node that
// joined with the runtime-required taint: the apply completes and the taint goes; the node then
// reports a new boot ID (a reboot outside Gantry): the reconciler taints it again, runs
// dcgm-tool's apply and config again and releases it, with events naming the boot IDs; the
// next plan is empty (nothing drifts); import reads the attribute back; without it, it reads
// back null.
func TestAccPackageSet_reapplyOnReboot(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-reapply-" + rand.String(5)
	accNodes(t, c, pool, 1)
	node := pool + "-0"
	setAccBootID(t, c, node, "boot-1")
	addRuntimeTaint(t, c, node)
	addr := "gantry_package_set.test"
	full := reapplyConfig(pool, "    reapply_on_reboot = true")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: full,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(0).AtMapKey("reapply_on_reboot"), knownvalue.Bool(true)),
				},
			},
			// The node reboots outside Gantry: it re-gates and is released again; the next
			// plan is empty.
			{
				PreConfig: func() {
					setAccBootID(t, c, node, "boot-2")
					if err := reapplyDone(t, c, pool, node, "boot-1", "boot-2"); err != nil {
						t.Fatal(err)
					}
				},
				Config:           full,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				Config: reapplyConfig(pool, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(0).AtMapKey("reapply_on_reboot"), knownvalue.Null()),
				},
			},
		},
	})
}
