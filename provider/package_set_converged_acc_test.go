package provider

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// convergedConfig is a canary set on node 0 and a prod set on nodes 0-2 that waits for it to
// converge (after_converged, with extraEdge appended) and limits nodes 0 and 1 to one in flight
// at once (a fleet budget with a node selector); version is prod's, update its update timeout.
func convergedConfig(pool, version, extraEdge, update string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "canary" {
  name                      = "%[1]s-canary"
  node_selector             = { "gantry.dev/test-pool" = %[1]q }
  node_selector_expressions = [{ key = "kubernetes.io/hostname", operator = "In", values = ["%[1]s-0"] }]
  additional_tolerations    = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages                  = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts                  = { create = "5m", update = "5m" }
}

resource "gantry_package_set" "prod" {
  name                   = "%[1]s-prod"
  node_selector          = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  interruption_budget    = { percent = 100 }
  after_converged        = [{ name = gantry_package_set.canary.name, reason = "canary first" }%[3]s]
  rollout = {
    fleet_budget = {
      name                      = %[1]q
      max_in_flight             = 1
      node_selector_expressions = [{ key = "kubernetes.io/hostname", operator = "In", values = ["%[1]s-0", "%[1]s-1"] }]
    }
  }
  packages = [{ name = "dcgm-tool", version = %[2]q, image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts = { create = "5m", update = %[4]q }
}
`, pool, version, extraEdge, update)
}

// convergedSampler watches the pool's nodes and records the most of them in flight at once for
// set: over every node (all) and over the budget's nodes (rack).
type convergedSampler struct {
	mu        sync.Mutex
	all, rack int
}

func sampleConverged(t *testing.T, c *kube.Clients, pool, set string, rack map[string]bool) *convergedSampler {
	s := &convergedSampler{}
	watchPoolInFlight(t, c, pool, []string{set}, func(in map[string]bool) {
		all, r := 0, 0
		for name, v := range in {
			if v {
				all++
				if rack[name] {
					r++
				}
			}
		}
		s.mu.Lock()
		s.all, s.rack = max(s.all, all), max(s.rack, r)
		s.mu.Unlock()
	})
	return s
}

// createGate creates, outside Terraform, a package set on node 0 whose stage fails (kwok's
// chaos label), and waits until the reconciler reports it erroring (a halted set with history).
func createGate(t *testing.T, c *kube.Clients, pool, name string) {
	t.Helper()
	pkg := v1alpha1.Package{Name: "dcgm-tool", Version: "1.0.0", Image: "ghcr.io/gantry-dev/dcgm-tool",
		PodLabels: map[string]string{"pod-container-running-failed.stage.kwok.x-k8s.io": "true"}}
	keep := false
	set := &v1alpha1.PackageSet{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PackageSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PackageSetSpec{Priority: 300, UninstallOnDelete: &keep,
			NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool, "kubernetes.io/hostname": pool + "-0"}},
			AdditionalTolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Packages:              []v1alpha1.Package{pkg}}}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(set)
	if err != nil {
		t.Fatal(err)
	}
	res := c.Dynamic.Resource(wait.PackageSet.GVR)
	if _, err := res.Create(context.Background(), &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = res.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	for end := time.Now().Add(3 * time.Minute); time.Now().Before(end); time.Sleep(time.Second) {
		u, err := res.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st, _, _ := unstructured.NestedString(u.Object, "status", "status"); st == string(v1alpha1.StatusErroring) {
			return
		}
	}
	t.Fatalf("package set %s never turned erroring", name)
}

// NixFleet's channelEdges and disruptionBudgets[].selector end to end. after_converged naming
// the set itself fails at plan. prod waits for canary to converge (Terraform's reference orders
// the create too) and shares a fleet budget of 1 limited to nodes 0 and 1: prod's first stage
// Pod comes after canary's last finished, never more than one of nodes 0 and 1 is in flight
// for prod, while node 2 (outside the budget's selector) goes beside one of them (2 in flight
// at once); import reads the new attributes back. Then a halted set (erroring, created outside
// Terraform) named in after_converged holds prod's new version: the update times out with the
// Ready message naming the set, its reason and "is halted". With that set deleted (no such
// set: it does not hold), a next version applies.
func TestAccPackageSet_afterConvergedFleetBudgetSelector(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-conv-" + rand.String(5)
	accNodes(t, c, pool, 3)
	canary, prod, gate := pool+"-canary", pool+"-prod", pool+"-gate"
	var sampler *convergedSampler
	gateEdge := fmt.Sprintf(`, { name = %q, reason = "gate" }`, gate)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkSetsGone(c, pool, canary, prod),
		Steps: []resource.TestStep{
			{
				Config: `
resource "gantry_package_set" "self" {
  name            = "self"
  after_converged = [{ name = "self" }]
  packages        = [{ name = "aa", version = "1.0.0", image = "x" }]
}`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Package\s+Set\s+Waits\s+for\s+Itself.*has\s+converged\s+itself`),
			},
			{
				PreConfig: func() {
					sampler = sampleConverged(t, c, pool, prod, map[string]bool{pool + "-0": true, pool + "-1": true})
				},
				Config: convergedConfig(pool, "1.0.0", "", "5m"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("gantry_package_set.canary", "status", "complete"),
					resource.TestCheckResourceAttr("gantry_package_set.prod", "status", "complete"),
					resource.TestCheckResourceAttr("gantry_package_set.prod", "after_converged.0.name", canary),
					resource.TestCheckResourceAttr("gantry_package_set.prod", "after_converged.0.reason", "canary first"),
					resource.TestCheckResourceAttr("gantry_package_set.prod", "rollout.fleet_budget.node_selector_expressions.0.values.#", "2"),
					func(*terraform.State) error {
						_, completed, err := stageJobs(c, canary)
						if err != nil {
							return err
						}
						created, _, err := stageJobs(c, prod)
						if err != nil {
							return err
						}
						var lastCanary metav1.Time
						for _, ts := range completed {
							for _, ts := range ts {
								if lastCanary.Before(&ts) {
									lastCanary = ts
								}
							}
						}
						for k, ts := range created {
							for _, ts := range ts {
								if ts.Before(&lastCanary) {
									return fmt.Errorf("prod's stage Pod %s created %s before canary's last finished %s", k, ts, lastCanary)
								}
							}
						}
						sampler.mu.Lock()
						defer sampler.mu.Unlock()
						if sampler.rack != 1 || sampler.all < 2 {
							return fmt.Errorf("prod had at most %d of nodes 0 and 1 in flight at once (want 1) and at most %d nodes in all (want 2 or more: node 2 is outside the budget)",
								sampler.rack, sampler.all)
						}
						return nil
					},
				),
			},
			{ResourceName: "gantry_package_set.prod", ImportState: true, ImportStateId: prod, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				PreConfig:   func() { createGate(t, c, pool, gate) },
				Config:      convergedConfig(pool, "1.0.1", gateEdge, "45s"),
				ExpectError: regexp.MustCompile(`(?s)after\s+converged:\s+package\s+set\s+` + gate + `\s+\(gate\)\s+is\s+halted`),
			},
			{
				PreConfig: func() {
					if err := c.Dynamic.Resource(wait.PackageSet.GVR).Delete(context.Background(), gate, metav1.DeleteOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				// A new version again: the apply waits for it whatever state the timed-out update left.
				Config: convergedConfig(pool, "1.0.2", gateEdge, "5m"),
				Check:  resource.TestCheckResourceAttr("gantry_package_set.prod", "status", "complete"),
			},
		},
	})
}
