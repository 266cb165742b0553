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
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// sizingCheck is a check of the whole sizing object; "" strings are null.
func sizingCheck(s wsSizing) knownvalue.Check {
	str := func(v string) knownvalue.Check {
		if v == "" {
			return knownvalue.Null()
		}
		return knownvalue.StringExact(v)
	}
	return knownvalue.ObjectExact(map[string]knownvalue.Check{
		"replicas": knownvalue.Int64Exact(s.Replicas), "nodes_per_replica": knownvalue.Int64Exact(s.NodesPerReplica),
		"gpus_per_node": knownvalue.Int64Exact(s.GPUsPerNode), "gpus_per_replica": knownvalue.Int64Exact(s.GPUsPerReplica),
		"instance_type": str(s.InstanceType), "gpu_product": str(s.GPUProduct), "mig_profile": str(s.MIGProfile),
		"node_claims": knownvalue.Int64Exact(s.NodeClaims), "model_gpu_memory": str(s.ModelGPUMemory), "model_parameters": i64(s.ModelParameters),
	})
}

// i64 is a check of a number; 0 is null.
func i64(v int64) knownvalue.Check {
	if v == 0 {
		return knownvalue.Null()
	}
	return knownvalue.Int64Exact(v)
}

// The plan of a new workspace shows its sizing (the CLI's plan, no cluster): presets and
// instance types from the real catalogs, a multi-node group, a MIG partition; unknown only
// while an input of it is (a gpu_count from another resource), not while something it does
// not depend on is (an image from another resource).
func TestWorkspace_sizingAtPlan(t *testing.T) {
	requireTerraform(t)
	t.Setenv("KUBE_CONFIG_PATH", "")
	unreachableCluster(t)
	const addr = "gantry_workspace.w"
	for name, c := range map[string]struct {
		body string
		want *wsSizing // nil: unknown
	}{
		"preset on an instance type": {`
  resource  = { count = 3, instance_type = "g5.12xlarge" }
  inference = { preset = "falcon-40b-instruct" }
`, &wsSizing{Replicas: 3, NodesPerReplica: 1, GPUsPerNode: 2, GPUsPerReplica: 2, InstanceType: "g5.12xlarge", GPUProduct: "NVIDIA-A10G", NodeClaims: 2, ModelGPUMemory: "90Gi"}},
		"multi-node group": {`
  resource  = { count = 6, instance_type = "Standard_NC80adis_H100_v5" }
  inference = { preset = "deepseek-r1-0528" }
`, &wsSizing{Replicas: 1, NodesPerReplica: 6, GPUsPerNode: 2, GPUsPerReplica: 12, InstanceType: "Standard_NC80adis_H100_v5", GPUProduct: "NVIDIA-H100-NVL", NodeClaims: 6, ModelGPUMemory: "720Gi"}},
		"mig partition": {`
  resource  = { count = 2, gpu_product = "NVIDIA-A100-SXM4-80GB", partition = { mode = "mig", profile = "1g.10gb" } }
  inference = { preset = "phi-3-mini-4k-instruct" }
`, &wsSizing{Replicas: 2, NodesPerReplica: 1, GPUProduct: "NVIDIA-A100-SXM4-80GB", MIGProfile: "1g.10gb", ModelGPUMemory: "9Gi"}},
		"existing nodes only": {`
  resource = { instance_type = "p4d.24xlarge", provision_nodes = false }
  tuning   = { method = "qlora", preset = "phi-3-mini-4k-instruct", input_image = "d", output_image = "o" }
`, &wsSizing{Replicas: 1, NodesPerReplica: 1, GPUsPerNode: 1, GPUsPerReplica: 1, InstanceType: "p4d.24xlarge", GPUProduct: "NVIDIA-A100-SXM4-40GB", ModelGPUMemory: "9Gi"}},
		"image unknown": {`
  resource  = { count = 2, gpu_count = 1, gpu_product = "NVIDIA-L4" }
  inference = { model = "m", image = terraform_data.later.output }
`, &wsSizing{Replicas: 2, NodesPerReplica: 1, GPUsPerNode: 1, GPUsPerReplica: 1, GPUProduct: "NVIDIA-L4"}},
		"gpu_count unknown": {`
  resource  = { count = 2, gpu_count = terraform_data.later.output, gpu_product = "NVIDIA-L4" }
  inference = { model = "m", image = "i" }
`, nil},
	} {
		t.Run(name, func(t *testing.T) {
			check := plancheck.ExpectUnknownValue(addr, tfjsonpath.New("sizing"))
			later := `resource "terraform_data" "later" { input = "i" }`
			if strings.Contains(c.body, "gpu_count = terraform_data") {
				later = `resource "terraform_data" "later" { input = 1 }`
			}
			if c.want != nil {
				check = plancheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), sizingCheck(*c.want))
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:             later + workspaceConfig("default", "w", c.body),
					PlanOnly:           true,
					ExpectNonEmptyPlan: true,
					ConfigPlanChecks: resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate), check}},
				}},
			})
		})
	}
}

// sizingGPUNodes adds n kwok nodes with one nvidia.com/gpu of product each (removed after t).
func sizingGPUNodes(t *testing.T, c *kube.Clients, product string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("acc-sizing-%s-%d", strings.ToLower(product[len(product)-5:]), i)
		alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("32"), corev1.ResourceMemory: k8sresource.MustParse("256Gi"),
			corev1.ResourcePods: k8sresource.MustParse("110"), "nvidia.com/gpu": k8sresource.MustParse("1")}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
				Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product}},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
		}
		if _, err := c.Core.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		// kwok marks the node Ready shortly after; a workspace placed before that finds no
		// Ready node of the product and is Stalled (NoMatchingNodes), failing the apply at once.
		waitKwokNodeReady(t, c, name)
	}
}

// Against the cluster: the sizing the plan showed is what the apply stores (no "inconsistent
// result"), the plan after the apply is empty, an import resolves the same sizing from the
// object, and an update that does not touch the sizing plans it unchanged (known).
func TestAccWorkspace_sizing(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ws-sizing")
	product := "NVIDIA-L4-SZ-" + rand.String(5)
	sizingGPUNodes(t, c, product, 2)
	body := fmt.Sprintf(`
  resource  = { count = 2, gpu_count = 1, gpu_product = %q }
  inference = { preset = "falcon-40b-instruct" }
  timeouts  = { create = "3m" }
`, product)
	addr := "gantry_workspace.sized"
	want := sizingCheck(wsSizing{Replicas: 1, NodesPerReplica: 2, GPUsPerNode: 1, GPUsPerReplica: 2, GPUProduct: product, ModelGPUMemory: "90Gi"})
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: workspaceConfig(ns, "sized", body),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), want)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("state"), knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), want),
				},
			},
			{ResourceName: addr, ImportState: true, ImportStateId: ns + "/sized", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"}},
			{
				Config: workspaceConfig(ns, "sized", body+`  labels = { team = "sizing" }
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
						plancheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), want)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("sizing"), want)},
			},
		},
	})
}
