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
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// accNodes creates n kwok GPU-like nodes labelled gantry.dev/test-pool=<pool> (shape of
// hack/cluster/nodes-gpu.yaml) and deletes them when the test ends.
func accNodes(t *testing.T, c *kube.Clients, pool string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-%d", pool, i)
		alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("64"), corev1.ResourceMemory: k8sresource.MustParse("512Gi"), corev1.ResourcePods: k8sresource.MustParse("110")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "gantry.dev/test-pool": pool}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
		}
		if _, err := c.Core.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node %s: %v", name, err)
		}
		t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
}

func packageSetConfig(name, pool, toolVersion, extra string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %q
  node_selector = { "gantry.dev/test-pool" = %q }
  priority      = 50
  interruption_budget = { count = 2 }
  pod_non_interrupt_labels = { "app" = "training" }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [
    {
      name    = "dcgm-tool"
      version = %q
      image   = "ghcr.io/gantry-dev/dcgm-tool:1"
      config  = { interval = "30s" }
%s
    },
    {
      name       = "gpu-driver"
      version    = "550.54.15"
      image      = "ghcr.io/gantry-dev/gpu-driver:550"
      interrupt  = { type = "reboot" }
      depends_on = { "dcgm-tool" = %q }
      uninstall_enabled = true
      env_from = [
        { name = "DRIVER_TOKEN", secret_key_ref = { name = "driver-secrets", key = "token" } },
        { name = "DRIVER_MODE", config_map_key_ref = { name = "driver-config", key = "mode" } },
      ]
      resources         = { requests = { cpu = "500m", memory = "64Mi" }, limits = { memory = "128Mi" } }
      graceful_shutdown = "1m30s"
      pod_annotations   = { "team.gantry.dev/test" = "lifecycle" }
    },
  ]
  timeouts = { create = "5m", update = "5m", delete = "5m" }
}
`, name, pool, toolVersion, extra, toolVersion)
}

// Create → complete on 3 own nodes; import by name; a stage failing via kwok's chaos label
// fails the apply naming the node, package and stage; destroy waits for the finalizer, which
// removes every node annotation.
func TestAccPackageSet_lifecycle(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-ps-" + rand.String(5)
	accNodes(t, c, pool, 3)
	addr := "gantry_package_set.test"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: packageSetConfig(pool, pool, "1.0.0", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(pool)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("complete_nodes"), knownvalue.StringExact("3/3")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("node_status"), knownvalue.MapExact(map[string]knownvalue.Check{
						pool + "-0": knownvalue.StringExact("complete"), pool + "-1": knownvalue.StringExact("complete"), pool + "-2": knownvalue.StringExact("complete")})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(1).AtMapKey("name"), knownvalue.StringExact("gpu-driver")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(1).AtMapKey("graceful_shutdown"), knownvalue.StringExact("1m30s")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(1).AtMapKey("resources").AtMapKey("requests").AtMapKey("cpu"), knownvalue.StringExact("500m")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(0).AtMapKey("env_from"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("packages").AtSliceIndex(0).AtMapKey("graceful_shutdown"), knownvalue.Null()),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("quarantined_versions"), knownvalue.ListSizeExact(0)),
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: pool, ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts", "rollout_preview"}},
			{
				Config:      packageSetConfig(pool, pool, "1.1.0", `      pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`),
				ExpectError: regexp.MustCompile(`(?s)PackageSet Failed.*Stalled=True \(StageErroring:.*node\s+` + pool + `-[0-2]\s+package\s+dcgm-tool\s+stage\s+upgrade`),
			},
		},
	})
}

// Invalid configurations fail at plan with the attribute named.
func TestAccPackageSet_planValidation(t *testing.T) {
	skipUnlessAcc(t)
	base := func(pkgs string) string {
		return fmt.Sprintf(`
resource "gantry_package_set" "bad" {
  name = "bad"
  packages = [%s]
}`, pkgs)
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{PlanOnly: true, Config: base(`{ name = "a1", version = "1.0.0", image = "x" }`), ExpectError: regexp.MustCompile(`must match`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1", image = "x" }`), ExpectError: regexp.MustCompile(`semantic version`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", interrupt = { type = "kexec" } }`), ExpectError: regexp.MustCompile(`value must be one of`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", depends_on = { zz = "1.0.0" } }`), ExpectError: regexp.MustCompile(`Unknown Dependency`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", depends_on = { bb = "1.0.0" } }, { name = "bb", version = "1.0.0", image = "x", depends_on = { cc = "1.0.0" } }, { name = "cc", version = "1.0.0", image = "x", depends_on = { aa = "1.0.0" } }`),
				ExpectError: words(`packages[].depends_on form a cycle, aa → bb → cc → aa: each package would wait for the next for ever; remove one of the dependencies.`)},
			{PlanOnly: true, Config: strings.Replace(base(`{ name = "aa", version = "1.0.0", image = "x" }`), `name = "bad"`, "name = \"bad\"\n  interruption_budget = { count = 1, percent = 5 }", 1),
				ExpectError: regexp.MustCompile(`Invalid Attribute Combination`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", graceful_shutdown = "soon" }`), ExpectError: regexp.MustCompile(`Invalid Duration`)},
			{PlanOnly: true, Config: strings.Replace(base(`{ name = "aa", version = "1.0.0", image = "x" }`), `name = "bad"`, "name = \"bad\"\n  rollout = { soak_duration = \"1m\", soak_check_interval = \"500ms\" }", 1),
				ExpectError: regexp.MustCompile(`(?s)Invalid Duration.*shorter than 1s`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", env_from = [{ name = "A", secret_key_ref = { name = "s", key = "k" } }, { name = "A", config_map_key_ref = { name = "c", key = "k" } }] }`),
				ExpectError: regexp.MustCompile(`Duplicate Environment Variable`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", env_from = [{ name = "A" }] }`), ExpectError: regexp.MustCompile(`Invalid Attribute Combination`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", resources = { limits = { memory = "1x" } } }`), ExpectError: regexp.MustCompile(`quantity`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", config = { "a/b" = "1" } }`), ExpectError: regexp.MustCompile(`must be a file name`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", config = { "..a" = "1" } }`), ExpectError: regexp.MustCompile(`must be a file name`)},
			{PlanOnly: true, Config: strings.Replace(base(`{ name = "aa", version = "1.0.0", image = "x" }`), `name = "bad"`, "name = \"bad\"\n  node_selector_expressions = [{ key = \"k\", operator = \"In\" }]", 1),
				ExpectError: regexp.MustCompile(`(?s)Selector Needs Values.*operator In needs at least one value`)},
			{PlanOnly: true, Config: strings.Replace(base(`{ name = "aa", version = "1.0.0", image = "x" }`), `name = "bad"`, "name = \"bad\"\n  sequencing = \"global\"", 1),
				ExpectError: regexp.MustCompile(`value must be one of`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", uninstall_apply = true }`), ExpectError: regexp.MustCompile(`uninstall_apply Needs uninstall_enabled`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", host = { root_mount_path = "/" } }`), ExpectError: regexp.MustCompile(`(?s)host.root_mount_path.*absolute path\s+other\s+than\s+/`)},
			{PlanOnly: true, Config: base(`{ name = "aa", version = "1.0.0", image = "x", host = { privileged = true }, skyhook = { agent_image = "a" } }`),
				ExpectError: regexp.MustCompile(`Invalid Attribute Combination`)},
		},
	})
}

// checkPackageSetGone: the PackageSet named pool is gone, and every node of the pool
// (gantry.dev/test-pool=pool, at least one) keeps none of its annotations and is not cordoned.
func checkPackageSetGone(c *kube.Clients, pool string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("PackageSet %s still exists (err %v)", pool, err)
		}
		nodes, err := c.Core.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: "gantry.dev/test-pool=" + pool})
		if err != nil {
			return err
		}
		if len(nodes.Items) == 0 {
			return fmt.Errorf("no node of pool %s to check", pool)
		}
		for i := range nodes.Items {
			n := &nodes.Items[i]
			for k := range n.Annotations {
				if strings.HasSuffix(k, "_"+pool) {
					return fmt.Errorf("node %s keeps annotation %s after destroy", n.Name, k)
				}
			}
			if n.Spec.Unschedulable {
				return fmt.Errorf("node %s left cordoned", n.Name)
			}
		}
		return nil
	}
}

func rollbackConfig(pool, version, extra string) string {
	return fmt.Sprintf(`
resource "gantry_package_set" "test" {
  name          = %q
  node_selector = { "gantry.dev/test-pool" = %q }
  interruption_budget = { count = 1 }
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  rollout = { on_health_failure = "rollback", soak_duration = "2s", soak_check_interval = "1s" }
  packages = [
    {
      name    = "dcgm-tool"
      version = %q
      image   = "ghcr.io/gantry-dev/dcgm-tool:1"
%s
    },
  ]
  timeouts = { create = "5m", update = "5m", delete = "5m" }
}
`, pool, pool, version, extra)
}

// Policy rollback with a 2s soak checked every second: 1.0.0 complete on 3 own nodes (each
// soaked); 1.1.0 failing via kwok's chaos label fails
// the apply naming the rollback to 1.0.0 and the quarantined dcgm-tool@1.1.0; 1.2.0 then
// applies cleanly (the quarantine only holds the version it names).
func TestAccPackageSet_rollback(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-rb-" + rand.String(5)
	accNodes(t, c, pool, 3)
	addr := "gantry_package_set.test"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: rollbackConfig(pool, "1.0.0", ""),
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("rollout").AtMapKey("soak_check_interval"), knownvalue.StringExact("1s"))},
			},
			{
				Config: rollbackConfig(pool, "1.1.0", `      pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`),
				// The wait fails on the first pass that reports the failure, whichever it is: the
				// pass that starts the rollback ("... stage upgrade: <cause>; rolling back to 1.0.0,
				// dcgm-tool@1.1.0 quarantined"), one while it runs ("rolling back to 1.0.0 after the
				// change to 1.1.0 failed (<cause>); dcgm-tool@1.1.0 is quarantined") or, on a loaded
				// machine, one after it ("rolled back to 1.0.0 ..."). Each names the rollback to
				// 1.0.0 and the quarantined version; the steps below assert the outcome.
				ExpectError: regexp.MustCompile(`(?s)PackageSet\s+Failed.*roll(ed|ing)\s+back\s+to\s+1\.0\.0.*dcgm-tool@1\.1\.0`),
			},
			{
				// The rollback stays in the plan: an update that re-applies 1.1.0 (and fails again
				// while it is quarantined) until the configuration changes.
				Config:             rollbackConfig(pool, "1.1.0", `      pod_labels = { "pod-container-running-failed.stage.kwok.x-k8s.io" = "true" }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Once the rollback is done on every node, a refresh says what runs: 1.0.0, so
				// the plan shows the version change.
				PreConfig:          func() { waitRolledBack(t, c, pool, "dcgm-tool", "1.0.0") },
				RefreshState:       true,
				ExpectNonEmptyPlan: true,
				Check:              resource.TestCheckResourceAttr(addr, "packages.0.version", "1.0.0"),
			},
			{
				Config: rollbackConfig(pool, "1.2.0", ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact("complete")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("complete_nodes"), knownvalue.StringExact("3/3")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("quarantined_versions"), knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("dcgm-tool@1.1.0")})),
				},
			},
		},
	})
}

// waitRolledBack polls (up to 3 minutes) until every node of the PackageSet name reports
// package pkg at version (status.nodeState), i.e. a rollback has finished.
func waitRolledBack(t *testing.T, c *kube.Clients, name, pkg, version string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			nodes, _, _ := unstructured.NestedMap(u.Object, "status", "nodeState")
			done := len(nodes) > 0
			for _, pk := range nodes {
				v, _, _ := unstructured.NestedString(pk.(map[string]interface{}), pkg, "version")
				done = done && v == version
			}
			if done {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("PackageSet %s: %s is not at %s on every node after 3m (last error %v)", name, pkg, version, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// TestAccPackageSet_skyhookParity: a set written as Skyhook users write it:
// version "1.2" (kept as written), an image without a tag (the version is the tag), no
// interruption budget (every node at once, as Skyhook), and labels on the PackageSet object.
// A label changed outside Terraform is drift in the next plan.
func TestAccPackageSet_skyhookParity(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	pool := "acc-psk-" + rand.String(5)
	accNodes(t, c, pool, 3)
	addr := "gantry_package_set.sky"
	config := func(extra string) string {
		return fmt.Sprintf(`
resource "gantry_package_set" "sky" {
  name          = %[1]q
  labels        = { "team.example.com/owner" = "platform" }
  node_selector = { "gantry.dev/test-pool" = %[1]q }
  node_selector_expressions = [{ key = "gantry.dev/test-pool", operator = "In", values = [%[1]q] }]
  # A global gate that holds nothing here: no set comes after priority 999.
  sequencing = "all"
  serial     = true
  priority   = 999
  additional_tolerations = [{ key = "nvidia.com/gpu", operator = "Exists", effect = "NoSchedule" }]
  packages = [{
    name    = "tuned"
    version = "1.2"
    image   = "ghcr.io/gantry-dev/tuned"
    host    = { privileged = true, host_pid = true, root_mount_path = "/host" }
    %[2]s
  }]
  timeouts = { create = "5m", update = "5m", delete = "5m" }
}
`, pool, extra)
	}
	cfg := config("")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "status", "complete"),
					resource.TestCheckResourceAttr(addr, "packages.0.version", "1.2"),
					resource.TestCheckResourceAttr(addr, "serial", "true"),
					func(*terraform.State) error {
						u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
						if err != nil {
							return err
						}
						if u.GetLabels()["team.example.com/owner"] != "platform" {
							return fmt.Errorf("PackageSet labels %v", u.GetLabels())
						}
						exprs, _, _ := unstructured.NestedSlice(u.Object, "spec", "nodeSelector", "matchExpressions")
						seq, _, _ := unstructured.NestedString(u.Object, "spec", "sequencing")
						serial, _, _ := unstructured.NestedBool(u.Object, "spec", "serial")
						if len(exprs) != 1 || seq != "all" || !serial {
							return fmt.Errorf("spec.nodeSelector.matchExpressions %v, sequencing %q, serial %v", exprs, seq, serial)
						}
						jobs, err := c.Core.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelPackageSet + "=" + pool})
						if err != nil {
							return err
						}
						if len(jobs.Items) == 0 {
							return fmt.Errorf("no stage Pods")
						}
						for _, j := range jobs.Items {
							for _, ct := range append(j.Spec.InitContainers, j.Spec.Containers...) {
								if strings.HasPrefix(ct.Image, "ghcr.io/gantry-dev/tuned") && ct.Image != "ghcr.io/gantry-dev/tuned:1.2" {
									return fmt.Errorf("stage pod %s runs %s, want ghcr.io/gantry-dev/tuned:1.2", j.Name, ct.Image)
								}
								if ct.SecurityContext == nil || ct.SecurityContext.Privileged == nil || !*ct.SecurityContext.Privileged || !j.Spec.HostPID {
									return fmt.Errorf("stage pod %s container %s: host access missing", j.Name, ct.Name)
								}
							}
						}
						return nil
					},
				),
			},
			{
				// A label edited with kubectl is drift: the plan puts it back.
				PreConfig: func() {
					patch := []byte(`{"metadata":{"labels":{"team.example.com/owner":"someone-else"}}}`)
					if _, err := c.Dynamic.Resource(wait.PackageSet.GVR).Patch(context.Background(), pool, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// Explicit uninstall (Skyhook's uninstall.apply): the set stays, complete, and the
				// node no longer has the package.
				Config: config("uninstall_enabled = true\n    uninstall_apply   = true"),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "status", "complete"),
					func(*terraform.State) error {
						u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(context.Background(), pool, metav1.GetOptions{})
						if err != nil {
							return err
						}
						ns, _, _ := unstructured.NestedMap(u.Object, "status", "nodeState")
						for node, pkgs := range ns {
							if m, _ := pkgs.(map[string]interface{}); m["tuned"] != nil {
								return fmt.Errorf("node %s still has tuned after uninstall_apply: %v", node, m["tuned"])
							}
						}
						return nil
					},
				),
			},
		},
	})
}
