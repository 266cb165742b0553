package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// dataSourcesConfig reads back each object of identityStack with its data source, from a
// module instantiated with for_each (as a stack composing on another team's objects does).
func dataSourcesConfig(ns, pool, module string) string {
	return identityStack(ns, pool, pool) + fmt.Sprintf(`
module "read" {
  source     = %[2]q
  for_each   = { perf = gantry_performer.p.name }
  namespace  = %[1]q
  performer  = each.value
  executor   = gantry_executor.x.name
  workspace  = gantry_workspace.w.name
  set        = gantry_package_set.s.name
  depends_on = [gantry_performer.p, gantry_executor.x, gantry_workspace.w, gantry_package_set.s]
}

data "gantry_performer" "missing" {
  name       = "no-such-performer"
  namespace  = %[1]q
  depends_on = [gantry_performer.p]
  count      = var.read_missing ? 1 : 0
}

variable "read_missing" {
  type    = bool
  default = false
}

output "endpoint" { value = module.read["perf"].endpoint }
output "phase" { value = module.read["perf"].phase }
output "executor_endpoints" { value = module.read["perf"].executor_endpoints }
output "workspace_state" { value = module.read["perf"].workspace_state }
output "node_status" { value = module.read["perf"].node_status }
output "same_endpoint" { value = module.read["perf"].endpoint == gantry_performer.p.grpc_endpoint }
output "signer" { value = module.read["perf"].signer }
`, ns, module)
}

const readModule = `
variable "namespace" { type = string }
variable "performer" { type = string }
variable "executor" { type = string }
variable "workspace" { type = string }
variable "set" { type = string }

data "gantry_performer" "p" {
  name      = var.performer
  namespace = var.namespace
}
data "gantry_executor" "x" {
  name      = var.executor
  namespace = var.namespace
}
data "gantry_workspace" "w" {
  name      = var.workspace
  namespace = var.namespace
}
data "gantry_package_set" "s" {
  name = var.set
}

output "endpoint" { value = data.gantry_performer.p.grpc_endpoint }
output "phase" { value = data.gantry_performer.p.phase }
output "executor_endpoints" { value = data.gantry_executor.x.performer_endpoints }
output "workspace_state" { value = data.gantry_workspace.w.state }
output "node_status" { value = data.gantry_package_set.s.node_status }
output "signer" { value = data.gantry_executor.x.operator_keys.remote_signer_url }
`

// Data sources of the four kinds: read from a module instantiated with for_each
// that depends on the resources (so it reads once they are created), they return what the resources
// hold — the performer's endpoint and phase, the executor's performer endpoints, the
// workspace's state, the package set's per-node status. Reading an object that does not
// exist fails naming it.
func TestAccDataSources_kinds(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-ds")
	pool := "acc-ds-" + rand.String(5)
	accNodes(t, c, pool, 3)
	module := t.TempDir()
	if err := os.WriteFile(filepath.Join(module, "main.tf"), []byte(readModule), 0o600); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"main.tf": dataSourcesConfig(ns, pool, module)}
	endpoint := fmt.Sprintf("performer-perf.%s.svc.cluster.local:9090", ns)
	dir := configDir(t, files)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:     func() { testAccPreCheck(t) },
		CheckDestroy: checkPackageSetGone(c, pool),
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          dir,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("endpoint", knownvalue.StringExact(endpoint)),
					statecheck.ExpectKnownOutputValue("same_endpoint", knownvalue.Bool(true)),
					statecheck.ExpectKnownOutputValue("phase", knownvalue.StringExact("Running")),
					statecheck.ExpectKnownOutputValue("executor_endpoints", knownvalue.MapExact(map[string]knownvalue.Check{"perf": knownvalue.StringExact(endpoint)})),
					statecheck.ExpectKnownOutputValue("workspace_state", knownvalue.StringExact("Ready")),
					statecheck.ExpectKnownOutputValue("node_status", knownvalue.MapExact(map[string]knownvalue.Check{
						pool + "-0": knownvalue.StringExact("complete"), pool + "-1": knownvalue.StringExact("complete"), pool + "-2": knownvalue.StringExact("complete")})),
					statecheck.ExpectKnownOutputValue("signer", knownvalue.StringExact("https://signer.example.com")),
				},
			},
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          dir,
				ConfigVariables:          config.Variables{"read_missing": config.BoolVariable(true)},
				ExpectError:              regexp.MustCompile(`(?s)Performer Not Found.*` + ns + `/no-such-performer does\s+not\s+exist`),
			},
			{
				// Destroy in a step: the post-test destroy reads state through the legacy shim,
				// which rejects modules.
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          dir,
				Destroy:                  true,
			},
		},
	})
}

// configDir writes files (name → content) into a new directory, for steps whose configuration
// has modules (terraform-plugin-testing installs modules only for ConfigDirectory, and copies
// only the directory's own files: modules are referenced by absolute path).
func configDir(t *testing.T, files map[string]string) config.TestStepConfigFunc {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return config.StaticDirectory(dir)
}

// gpuTestNode creates a node simulated by kwok with gpus nvidia.com/gpu of product, and a pod
// bound to it requesting used of them; both go when the test ends.
func gpuTestNode(t *testing.T, c *kube.Clients, ns, name, product string, gpus, used int64) {
	t.Helper()
	alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("64"), corev1.ResourceMemory: k8sresource.MustParse("512Gi"),
		corev1.ResourcePods: k8sresource.MustParse("110"), hardware.ResourceGPU: *k8sresource.NewQuantity(gpus, k8sresource.DecimalSI)}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, hardware.LabelGPUProduct: product,
				hardware.LabelGPUPresent: "true", hardware.LabelInstanceType: "acc.gpu.x" + fmt.Sprint(gpus)}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: hardware.TaintGPU, Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}
	if _, err := c.Core.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	q := *k8sresource.NewQuantity(used, k8sresource.DecimalSI)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-job", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: name, Tolerations: []corev1.Toleration{{Key: hardware.TaintGPU, Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "train", Image: "ghcr.io/gantry-dev/train:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{hardware.ResourceGPU: q}, Limits: corev1.ResourceList{hardware.ResourceGPU: q}}}}},
	}
	if _, err := c.Core.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// gantry_nodes: the local cluster's GPU and TEE nodes found by product, TEE type and
// RuntimeClass; a node of the test's own product with 3 of 4 GPUs requested by a running pod
// shows 3 in use and 1 free; min_nodes fails early naming what the cluster has.
func TestAccNodesDataSource(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-nodes")
	product := "ACC-GPU-" + rand.String(5)
	gpuTestNode(t, c, ns, "acc-nodes-"+rand.String(5), product, 4, 3)
	cfg := fmt.Sprintf(`
data "gantry_nodes" "a100" {
  gpu_product = "NVIDIA-A100-SXM4-80GB"
}
data "gantry_nodes" "tdx" {
  tee_type = "tdx"
}
data "gantry_nodes" "snp" {
  runtime_class = "kata-qemu-snp"
  ready_only    = true
}
data "gantry_nodes" "mine" {
  gpu_product = %[1]q
  min_nodes   = 1
}
`, product)
	names := func(n ...string) knownvalue.Check {
		var cs []knownvalue.Check
		for _, s := range n {
			cs = append(cs, knownvalue.StringExact(s))
		}
		return knownvalue.ListExact(cs)
	}
	mine := tfjsonpath.New("nodes").AtSliceIndex(0)
	// The real node, where it runs, has SEV-SNP too (hack/realnode.sh: a runc alias for the
	// kata-qemu-snp handler), so it is found beside the kwok TEE node.
	snp := []string{"gantry-tee-snp-0"}
	if n, err := c.Core.CoreV1().Nodes().Get(context.Background(), realNodeName, metav1.GetOptions{}); err == nil && n.Labels[hardware.LabelSEVSNP] == "true" {
		snp = []string{realNodeName, "gantry-tee-snp-0"}
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: cfg,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("data.gantry_nodes.a100", tfjsonpath.New("names"), names("gantry-gpu-0", "gantry-gpu-1")),
					statecheck.ExpectKnownValue("data.gantry_nodes.a100", tfjsonpath.New("nodes").AtSliceIndex(0).AtMapKey("gpu_allocatable"), knownvalue.Int64Exact(8)),
					statecheck.ExpectKnownValue("data.gantry_nodes.tdx", tfjsonpath.New("names"), names("gantry-tee-tdx-0")),
					statecheck.ExpectKnownValue("data.gantry_nodes.tdx", tfjsonpath.New("nodes").AtSliceIndex(0).AtMapKey("runtime_classes"), names("kata-qemu-tdx")),
					statecheck.ExpectKnownValue("data.gantry_nodes.snp", tfjsonpath.New("names"), names(snp...)),
					statecheck.ExpectKnownValue("data.gantry_nodes.mine", tfjsonpath.New("gpu_products"), names(product)),
					statecheck.ExpectKnownValue("data.gantry_nodes.mine", mine.AtMapKey("gpu_capacity"), knownvalue.Int64Exact(4)),
					statecheck.ExpectKnownValue("data.gantry_nodes.mine", mine.AtMapKey("gpu_in_use"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue("data.gantry_nodes.mine", mine.AtMapKey("gpu_free"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue("data.gantry_nodes.mine", mine.AtMapKey("instance_type"), knownvalue.StringExact("acc.gpu.x4")),
					statecheck.ExpectKnownValue("data.gantry_nodes.mine", mine.AtMapKey("taints").AtSliceIndex(0).AtMapKey("key"), knownvalue.StringExact("nvidia.com/gpu")),
				},
			},
			{
				Config: fmt.Sprintf("data \"gantry_nodes\" \"x\" {\n  gpu_product   = %q\n  min_free_gpus = 2\n  min_nodes     = 1\n}\n", product),
				ExpectError: regexp.MustCompile(`(?s)Not Enough Matching Nodes.*0 node\(s\) match gpu_product = "` + product +
					`", min_free_gpus = 2, 1 needed.*nodes with GPU product\s+` + product + `:\s+acc-nodes-\w+\s+\(` + product + `,\s+1\s+of\s+4\s+GPUs\s+free\)`),
			},
			{
				Config:      "data \"gantry_nodes\" \"x\" {\n  gpu_product = \"NVIDIA-B200\"\n  min_nodes   = 1\n}\n",
				ExpectError: regexp.MustCompile(`(?s)Not Enough Matching Nodes.*no node has GPU product NVIDIA-B200`),
			},
		},
	})
}
