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
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// drainConfig is a driver with a reboot interrupt over the pool's node, with drain (a block's
// attributes; "" leaves drain out).
func drainConfig(pool, drain string) string {
	block := ""
	if drain != "" {
		block = "  drain = {\n" + drain + "\n  }"
	}
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name                   = %[1]q
  node_selector          = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{
    name      = "gpu-driver"
    version   = "550.90.7"
    image     = "ghcr.io/gantry-dev/gpu-driver"
    interrupt = { type = "reboot" }
  }]
%[2]s
  timeouts = { create = "3m", update = "3m", delete = "3m" }
}
`, pool, block)
}

// drainWorkload runs a plain pod on node in ns with labels, waits until kwok has it Running and
// Ready, and returns it.
func drainWorkload(t *testing.T, c *kube.Clients, ns, name, node string, labels map[string]string) *corev1.Pod {
	t.Helper()
	waitKwokNodeReady(t, c, node)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{NodeName: node, Tolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	if _, err := c.Core.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := kwait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Core.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning {
			return false, nil
		}
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s not Running and Ready", ns, name)
	}
	return pod
}

// podsStay: the pods exist and are not being deleted.
func podsStay(c *kube.Clients, pods ...*corev1.Pod) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, p := range pods {
			got, err := c.Core.CoreV1().Pods(p.Namespace).Get(context.Background(), p.Name, metav1.GetOptions{})
			if err != nil || got.DeletionTimestamp != nil {
				return fmt.Errorf("pod %s/%s evicted by the drain: %v", p.Namespace, p.Name, err)
			}
		}
		return nil
	}
}

// drain through the CLI: on the node, web runs behind a PodDisruptionBudget that allows no
// disruption and agent is labelled to be skipped. on_timeout without a timeout fails the plan
// naming the attribute. With a 5s timeout (on_timeout unset: Fail) the apply fails at the
// timeout naming the pod left and the budget. With on_timeout Continue (and a grace period)
// the apply completes: the node was rebooted with web still on it, agent was never touched.
// A refresh plans nothing, an import reads the block back, and removing it reads back null.
func TestAccPackageSet_drain(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-drain-" + rand.String(5)
	accNodes(t, c, pool, 1)
	ns := testNamespace(t, c, "acc-drain")
	node := pool + "-0"
	web := drainWorkload(t, c, ns, "web", node, map[string]string{"app": "web"})
	agent := drainWorkload(t, c, ns, "agent", node, map[string]string{"gantry.dev/drain": "skip"})
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := c.Core.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := kwait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := c.Core.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.CurrentHealthy == 1 && p.Status.DisruptionsAllowed == 0, nil
	}); err != nil {
		t.Fatal("PDB status not computed by the disruption controller")
	}
	addr := "gantry_package_set.test"
	skip := `    skip_pod_labels = { "gantry.dev/drain" = "skip" }`
	cont := drainConfig(pool, "    timeout      = \"5s\"\n    on_timeout   = \"Continue\"\n    grace_period = \"2s\"\n"+skip)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: drainConfig(pool, `    on_timeout = "Continue"`),
				ExpectError: regexp.MustCompile(`(?s)on_timeout\s+Needs\s+timeout.*Set\s+drain.timeout`)},
			{Config: drainConfig(pool, "    timeout = \"5s\"\n"+skip),
				ExpectError: regexp.MustCompile(`(?s)stage\s+interrupt:\s+drain\s+timed\s+out\s+after\s+5s;\s+pods\s+left:\s+` + ns + `/web\s+\(eviction\s+refused:\s+Cannot\s+evict\s+pod.*disruption\s+budget\s+web`)},
			{
				Config: cont,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain").AtMapKey("timeout"), knownvalue.StringExact("5s")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain").AtMapKey("on_timeout"), knownvalue.StringExact("Continue")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain").AtMapKey("grace_period"), knownvalue.StringExact("2s")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain").AtMapKey("force"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain").AtMapKey("delete_empty_dir_data"), knownvalue.Null()),
				},
				Check: podsStay(c, web, agent),
			},
			{Config: cont, ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				Config:            drainConfig(pool, ""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("drain"), knownvalue.Null())},
			},
		},
	})
}

// drain.non_interrupt_timeout (NVIDIA/nodewright #543) through the CLI: a training pod matching
// pod_non_interrupt_labels runs on the node. on_non_interrupt_timeout without the timeout fails
// the plan; with a 5s timeout and Fail the apply fails naming the pod (the node waits on for it);
// with Drain the pod is evicted after the timeout and the interrupt runs: the apply completes.
func TestAccPackageSet_nonInterruptTimeout(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-nit-" + rand.String(5)
	accNodes(t, c, pool, 1)
	ns := testNamespace(t, c, "acc-nit")
	train := drainWorkload(t, c, ns, "train", pool+"-0", map[string]string{"ml": "train"})
	cfg := func(drain string) string {
		return strings.Replace(drainConfig(pool, drain), "  packages = [{", "  pod_non_interrupt_labels = { ml = \"train\" }\n  packages = [{", 1)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: cfg(`    on_non_interrupt_timeout = "Drain"`),
				ExpectError: regexp.MustCompile(`(?s)on_non_interrupt_timeout\s+Needs\s+non_interrupt_timeout`)},
			{Config: cfg("    non_interrupt_timeout = \"5s\""),
				ExpectError: regexp.MustCompile(`(?s)non-interrupt\s+pods\s+still\s+running\s+after\s+5s\s+\(drain.nonInterruptTimeout,\s+onNonInterruptTimeout\s+Fail\):\s+` + ns + `/train`)},
			{
				Config: cfg("    non_interrupt_timeout    = \"5s\"\n    on_non_interrupt_timeout = \"Drain\""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_package_set.test", tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue("gantry_package_set.test", tfjsonpath.New("drain").AtMapKey("on_non_interrupt_timeout"), knownvalue.StringExact("Drain")),
				},
				Check: func(*terraform.State) error {
					p, err := c.Core.CoreV1().Pods(ns).Get(context.Background(), train.Name, metav1.GetOptions{})
					if err == nil && p.DeletionTimestamp == nil {
						return fmt.Errorf("the non-interrupt pod was not drained after the timeout under Drain")
					}
					return nil
				},
			},
		},
	})
}
