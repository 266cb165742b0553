package provider

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

func edgesConfig(pool, driverExtra string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "drivers" {
  name          = "%[1]s-a"
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout = {
    node_edges   = [{ before = "%[1]s-0", after = "%[1]s-2", reason = "canary node first" }, { before = "not-selected", after = "%[1]s-1" }]
    fleet_budget = { name = %[1]q, max_in_flight = 1 }
  }
  packages = [{
    name              = "gpu-driver"
    version           = "1.0.0"
    image             = "ghcr.io/gantry-dev/gpu-driver"
    interrupt         = { type = "reboot" }
    uninstall_enabled = true
%[2]s
  }]
  timeouts = { create = "5m", update = "5m" }
}

resource "gantry_package_set" "tools" {
  name          = "%[1]s-b"
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout  = { fleet_budget = { name = %[1]q, max_in_flight = 1 } }
  packages = [{ name = "dcgm-tool", version = "1.0.0", image = "ghcr.io/gantry-dev/dcgm-tool" }]
  timeouts = { create = "5m", update = "5m" }
}
`, pool, driverExtra)
}

// accFleetSampler watches the pool's nodes and records the most in flight at once for any of
// sets (from the nodes' annotations, as the reconciler counts a fleet budget).
type accFleetSampler struct {
	mu     sync.Mutex
	max    int
	events int
}

func sampleAccFleet(t *testing.T, c *kube.Clients, pool string, sets ...string) *accFleetSampler {
	s := &accFleetSampler{}
	watchPoolInFlight(t, c, pool, sets, func(in map[string]bool) {
		c := 0
		for _, v := range in {
			if v {
				c++
			}
		}
		s.mu.Lock()
		s.max, s.events = max(s.max, c), s.events+1
		s.mu.Unlock()
	})
	return s
}

func (s *accFleetSampler) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.max != 1 {
		return fmt.Errorf("at most %d nodes in flight at once across the sets sharing the fleet budget (%d node events), want 1", s.max, s.events)
	}
	return nil
}

// stageJobs maps "<node>/<stage>" to the set's stage Pods' creation times, and each node to
// the times its finished stage Pods' last container terminated.
func stageJobs(c *kube.Clients, set string) (created, completed map[string][]metav1.Time, err error) {
	pods, err := c.Core.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelPackageSet + "=" + set})
	if err != nil {
		return nil, nil, err
	}
	created, completed = map[string][]metav1.Time{}, map[string][]metav1.Time{}
	for _, p := range pods.Items {
		k := p.Labels[v1alpha1.LabelNode] + "/" + p.Labels[v1alpha1.LabelStage]
		created[k] = append(created[k], p.CreationTimestamp)
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		var last metav1.Time
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && last.Before(&t.FinishedAt) {
				last = t.FinishedAt
			}
		}
		if !last.IsZero() {
			completed[p.Labels[v1alpha1.LabelNode]] = append(completed[p.Labels[v1alpha1.LabelNode]], last)
		}
	}
	return created, completed, nil
}

// NixFleet's edges between hosts and fleet-wide disruption budget, and NodeWright's interrupt
// after an uninstall, end to end: set A (a driver with a reboot) orders node 2 after node 0
// (an edge naming a node it does not select is ignored) and shares a fleet budget of 1 with set
// B, both created in the same apply (each says 1, as the docs ask: with different values the
// lowest wins only among the sets that exist, and B could start nodes before A does; the
// lowest-wins rule itself is covered by TestFleetFactsOf and the reconciler suite's
// TestPackageSetFleetBudget). Both complete with never more than one node in flight
// across them, node 2's first Job after node 0's last; import reads the new attributes back;
// uninstall_apply on the driver runs uninstall then uninstall-interrupt (the reboot) on every
// node, still one node at a time, and leaves none cordoned. A node edge cycle fails at plan.
func TestAccPackageSet_nodeEdgesFleetBudgetUninstallInterrupt(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-edge-" + rand.String(5)
	accNodes(t, c, pool, 3)
	a, b := pool+"-a", pool+"-b"
	var sampler *accFleetSampler
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkSetsGone(c, pool, a, b),
		Steps: []resource.TestStep{
			{
				Config: `
resource "gantry_package_set" "cycle" {
  name       = "cycle"
  rollout    = { node_edges = [{ before = "n0", after = "n1" }, { before = "n1", after = "n2" }, { before = "n2", after = "n1" }] }
  packages   = [{ name = "aa", version = "1.0.0", image = "x" }]
}`,
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)Node Edges Form a Cycle.*n1 → n2 → n1`),
			},
			{
				PreConfig: func() { sampler = sampleAccFleet(t, c, pool, a, b) },
				Config:    edgesConfig(pool, ""),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("gantry_package_set.drivers", "status", "complete"),
					resource.TestCheckResourceAttr("gantry_package_set.tools", "status", "complete"),
					resource.TestCheckResourceAttr("gantry_package_set.drivers", "rollout.node_edges.#", "2"),
					resource.TestCheckResourceAttr("gantry_package_set.drivers", "rollout.fleet_budget.max_in_flight", "1"),
					func(*terraform.State) error {
						created, completed, err := stageJobs(c, a)
						if err != nil {
							return err
						}
						var first2 []metav1.Time
						for k, ts := range created {
							if strings.HasPrefix(k, pool+"-2/") {
								first2 = append(first2, ts...)
							}
						}
						last0 := completed[pool+"-0"]
						if len(first2) == 0 || len(last0) == 0 {
							return fmt.Errorf("no Jobs on node 2 (%d) or none completed on node 0 (%d)", len(first2), len(last0))
						}
						sort.Slice(first2, func(i, j int) bool { return first2[i].Before(&first2[j]) })
						sort.Slice(last0, func(i, j int) bool { return last0[i].Before(&last0[j]) })
						if first2[0].Before(&last0[len(last0)-1]) {
							return fmt.Errorf("node 2's first Job created %s before node 0's last completed %s", first2[0], last0[len(last0)-1])
						}
						return sampler.check()
					},
				),
			},
			{ResourceName: "gantry_package_set.drivers", ImportState: true, ImportStateId: a, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				Config: edgesConfig(pool, "    uninstall_apply = true"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr("gantry_package_set.drivers", "status", "complete"),
					func(*terraform.State) error {
						created, _, err := stageJobs(c, a)
						if err != nil {
							return err
						}
						for i := 0; i < 3; i++ {
							node := fmt.Sprintf("%s-%d", pool, i)
							un, ui := created[node+"/uninstall"], created[node+"/uninstall-interrupt"]
							if len(un) != 1 || len(ui) != 1 || ui[0].Before(&un[0]) {
								return fmt.Errorf("node %s: uninstall Jobs %v, uninstall-interrupt Jobs %v: want one each, the interrupt after", node, un, ui)
							}
							n, err := c.Core.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
							if err != nil {
								return err
							}
							if n.Spec.Unschedulable {
								return fmt.Errorf("node %s still cordoned", node)
							}
						}
						return sampler.check()
					},
				),
			},
		},
	})
}

// checkSetsGone: the sets are gone and the pool's 3 nodes keep none of their annotations and
// no cordon.
func checkSetsGone(c *kube.Clients, pool string, sets ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, set := range sets {
			if _, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), set, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("PackageSet %s still exists (err %v)", set, err)
			}
		}
		for i := 0; i < 3; i++ {
			n, err := c.Core.CoreV1().Nodes().Get(context.Background(), fmt.Sprintf("%s-%d", pool, i), metav1.GetOptions{})
			if err != nil {
				return err
			}
			for k := range n.Annotations {
				for _, set := range sets {
					if strings.HasSuffix(k, "_"+set) {
						return fmt.Errorf("node %s keeps annotation %s after destroy", n.Name, k)
					}
				}
			}
			if n.Spec.Unschedulable {
				return fmt.Errorf("node %s left cordoned", n.Name)
			}
		}
		return nil
	}
}
