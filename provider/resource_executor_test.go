package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	tfconfig "github.com/hashicorp/terraform-plugin-testing/config"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// accKeyMaterial is the fake operator key the acceptance tests put in a Secret; it must never
// reach Terraform state or the rendered ConfigMap.
const accKeyMaterial = "0x8da4ef21b864d2cc526dbdb2a120bd2874c36c9d0a1fb7f8c63d7f7a8b41de8f"

// executorStack is two performers and an executor over them with three chains.
func executorStack(ns, image string, replicas int, extra string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" "a" {
  name      = "perf-a"
  namespace = %[1]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

resource "gantry_performer" "b" {
  name      = "perf-b"
  namespace = %[1]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

resource "gantry_executor" "x" {
  name                = "exec"
  namespace           = %[1]q
  image               = %[2]q
  replicas            = %[3]d
  aggregator_endpoint = "aggregator.avs.svc:9010"
  performer_names     = [gantry_performer.a.name, gantry_performer.b.name]
  chains = [
    { name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x%[5]s" },
    { name = "base", chain_id = 8453, rpc_url = "https://base.example.com", task_mailbox_address = "0x%[5]s" },
    { name = "arbitrum", chain_id = 42161, rpc_url = "wss://arb.example.com", task_mailbox_address = "0x%[5]s" },
  ]
  operator_keys = {
    secret_name = "operator-keys"
    ecdsa_key   = "ecdsa"
    bls_key     = "bls"
  }
%[4]s
}
`, ns, image, replicas, extra, strings.Repeat("ab", 20))
}

func createKeySecret(t *testing.T, c *kube.Clients, ns string) {
	t.Helper()
	_, err := c.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-keys"},
		StringData: map[string]string{"ecdsa": accKeyMaterial, "bls": accKeyMaterial + "00"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// checkNoKeyMaterial greps the Terraform state and the rendered ConfigMap for the key.
func checkNoKeyMaterial(c *kube.Clients, ns string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), accKeyMaterial[2:]) {
			return fmt.Errorf("key material found in Terraform state")
		}
		if !strings.Contains(string(b), "operator-keys") {
			return fmt.Errorf("state does not even hold the Secret reference: the grep proves nothing")
		}
		rs := s.RootModule().Resources["gantry_executor.x"]
		cmName := rs.Primary.Attributes["config_map_name"]
		cm, err := c.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), cmName, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("config map %q: %w", cmName, err)
		}
		cfg := cm.Data["executor-config.yaml"]
		if !strings.Contains(cfg, "chain_id: 42161") || strings.Contains(cfg, accKeyMaterial[2:]) {
			return fmt.Errorf("config map content unexpected or holds key material:\n%s", cfg)
		}
		return nil
	}
}

func checkExecutorsDestroyed(c *kube.Clients) func(*terraform.State) error {
	return func(s *terraform.State) error {
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "gantry_executor" && rs.Type != "gantry_performer" {
				continue
			}
			spec := wait.Executor
			if rs.Type == "gantry_performer" {
				spec = wait.Performer
			}
			ns, name, err := parseImportID(spec.Kind, rs.Primary.ID)
			if err != nil {
				return err
			}
			if _, err := c.Dynamic.Resource(spec.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s %s still exists after destroy (%v)", spec.Kind, rs.Primary.ID, err)
			}
		}
		return nil
	}
}

// execCPUAffinity pins the executor pods to the cpu node pool (affinity attribute).
const execCPUAffinity = `  affinity = jsonencode({
    nodeAffinity = {
      requiredDuringSchedulingIgnoredDuringExecution = {
        nodeSelectorTerms = [{ matchExpressions = [{ key = "gantry.dev/node-pool", operator = "In", values = ["cpu"] }] }]
      }
    }
  })
`

// checkExecutorPodsOnCPUNodes checks that want running executor pods exist, all on nodes of
// the cpu pool (what execCPUAffinity requires).
func checkExecutorPodsOnCPUNodes(c *kube.Clients, ns string, want int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		pods, err := c.Core.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelExecutor + "=exec"})
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
				continue
			}
			n++
			if !strings.HasPrefix(p.Spec.NodeName, "gantry-cpu-") {
				return fmt.Errorf("executor pod %s runs on %q, not a cpu node", p.Name, p.Spec.NodeName)
			}
		}
		if n < want {
			return fmt.Errorf("%d running executor pods, want %d", n, want)
		}
		return nil
	}
}

// Create (two performers, three chains, affinity to the cpu pool), import, update (config + scale), drift and destroy,
// with the real CLI; neither state nor the ConfigMap holds key material.
// An executor without performers (upstream Hourglass executors declare none): Running with no
// performer endpoints; the next plan is empty.
func TestAccExecutor_withoutPerformers(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec-np")
	createKeySecret(t, c, ns)
	addr := "gantry_executor.solo"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkExecutorsDestroyed(c),
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`
provider "gantry" {}

resource "gantry_executor" "solo" {
  name                = "solo"
  namespace           = %[1]q
  image               = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  chains = [{ name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x%[2]s" }]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa", bls_key = "bls" }
}
`, ns, strings.Repeat("ab", 20)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				statecheck.ExpectKnownValue(addr, tfjsonpath.New("performer_endpoints"), knownvalue.MapSizeExact(0)),
			},
		}},
	})
}

func TestAccExecutor_basic(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec")
	createKeySecret(t, c, ns)
	addr := "gantry_executor.x"
	v1 := executorStack(ns, "ghcr.io/layr-labs/hourglass/executor:1.0.0", 2, execCPUAffinity)
	v2 := executorStack(ns, "ghcr.io/layr-labs/hourglass/executor:1.0.0", 3, execCPUAffinity+`  log_level = "debug"`)
	var rev1 string
	ri := c.Dynamic.Resource(wait.Executor.GVR).Namespace(ns)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkExecutorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: v1,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(ns+"/exec")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_replicas"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("performer_endpoints"), knownvalue.MapExact(map[string]knownvalue.Check{
						"perf-a": knownvalue.StringExact(fmt.Sprintf("performer-perf-a.%s.svc.cluster.local:9090", ns)),
						"perf-b": knownvalue.StringExact(fmt.Sprintf("performer-perf-b.%s.svc.cluster.local:9090", ns)),
					})),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("current_revision"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{16}$`))),
				},
				Check: resource.ComposeTestCheckFunc(
					checkNoKeyMaterial(c, ns),
					checkExecutorPodsOnCPUNodes(c, ns, 2),
					func(s *terraform.State) error {
						rev1 = s.RootModule().Resources[addr].Primary.Attributes["current_revision"]
						return nil
					},
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ns + "/exec",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
			{
				Config: v2,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_replicas"), knownvalue.Int64Exact(3)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkNoKeyMaterial(c, ns),
					checkExecutorPodsOnCPUNodes(c, ns, 3),
					func(s *terraform.State) error {
						if rev2 := s.RootModule().Resources[addr].Primary.Attributes["current_revision"]; rev2 == rev1 || rev2 == "" {
							return fmt.Errorf("log_level change did not roll a new revision (%q → %q)", rev1, rev2)
						}
						return nil
					},
				),
			},
			{
				PreConfig: func() {
					patch := `{"spec":{"replicas":5,"aggregatorEndpoint":"evil.example.com:1"}}`
					if _, err := ri.Patch(context.Background(), "exec", k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "drift-test"}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             v2,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: v2,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("replicas"), knownvalue.Int64Exact(3)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("aggregator_endpoint"), knownvalue.StringExact("aggregator.avs.svc:9010")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
			},
		},
	})
}

// An update whose pods cannot pull their image is rolled back: the apply fails saying so and
// naming the revision that runs; the next plan still shows the change; reverting applies.
func TestAccExecutor_rollback(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec-rb")
	createKeySecret(t, c, ns)
	good := executorStack(ns, "ghcr.io/layr-labs/hourglass/executor:1.0.0", 2, `  progress_deadline_seconds = 10`)
	bad := executorStack(ns, "ghcr.io/layr-labs/hourglass/executor:2.0.0", 2, `  progress_deadline_seconds = 10
  pod_labels = { "image-pull-failed.stage.gantry.dev" = "true" }`)
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkExecutorsDestroyed(c),
		Steps: []resource.TestStep{
			{Config: good},
			{
				Config:      bad,
				ExpectError: regexp.MustCompile(`(?s)Executor Update Rolled Back.*update to revision [0-9a-f]{16}\s+failed\s+and\s+was\s+rolled\s+back.*revision\s+[0-9a-f]{16}\s+\(image\s+ghcr.io/layr-labs/hourglass/executor:1.0.0\)\s+is\s+running`),
			},
			{
				Config:             bad,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
				Check: func(*terraform.State) error {
					u, err := c.Dynamic.Resource(wait.Executor.GVR).Namespace(ns).Get(context.Background(), "exec", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if img := u.Object["status"].(map[string]interface{})["image"]; img != "ghcr.io/layr-labs/hourglass/executor:1.0.0" {
						return fmt.Errorf("running image %v", img)
					}
					return nil
				},
			},
			{
				Config: good,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_executor.x", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
			},
		},
	})
}

// Invalid input fails at plan time naming the attribute; no cluster is needed.
func TestExecutor_InvalidInputFailsAtPlan(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	chain := `{ name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x` + strings.Repeat("ab", 20) + `" }`
	cases := []struct {
		name, chains, performers, keys string
		err                            *regexp.Regexp
	}{
		{"bad address", `[{ name = "eth", chain_id = 1, rpc_url = "https://e", task_mailbox_address = "0x12" }]`, `performer_names = ["a"]`, `{ secret_name = "k", ecdsa_key = "e" }`,
			words("Attribute chains[0].task_mailbox_address must be an Ethereum address")},
		{"chain id 0", `[{ name = "eth", chain_id = 0, rpc_url = "https://e", task_mailbox_address = "0x` + strings.Repeat("ab", 20) + `" }]`, `performer_names = ["a"]`, `{ secret_name = "k", ecdsa_key = "e" }`,
			words("Attribute chains[0].chain_id value must be at least 1")},
		{"bad rpc", `[{ name = "eth", chain_id = 1, rpc_url = "ftp://e", task_mailbox_address = "0x` + strings.Repeat("ab", 20) + `" }]`, `performer_names = ["a"]`, `{ secret_name = "k", ecdsa_key = "e" }`,
			words("Attribute chains[0].rpc_url must be an http://, https://, ws:// or wss:// URL")},
		{"duplicate chain id", `[` + chain + `, ` + strings.Replace(chain, "ethereum", "mainnet", 1) + `]`, `performer_names = ["a"]`, `{ secret_name = "k", ecdsa_key = "e" }`,
			words("Duplicate Chain ID")},
		{"names and selector", `[` + chain + `]`, "performer_names = [\"a\"]\n  performer_selector = { tier = \"x\" }", `{ secret_name = "k", ecdsa_key = "e" }`,
			words("Invalid Attribute Combination")},
		{"secret and signer", `[` + chain + `]`, `performer_names = ["a"]`, `{ secret_name = "k", ecdsa_key = "e", remote_signer_url = "https://s" }`,
			words("Invalid Attribute Combination")},
		{"secret without keys", `[` + chain + `]`, `performer_names = ["a"]`, `{ secret_name = "k" }`, words("also set ecdsa_key, bls_key and/or bls_keystore_key")},
		{"key without secret", `[` + chain + `]`, `performer_names = ["a"]`, `{ remote_signer_url = "https://s", ecdsa_key = "e" }`, words("Invalid Attribute Combination")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "gantry" {}
resource "gantry_executor" "bad" {
  name                = "bad"
  image               = "x"
  aggregator_endpoint = "agg:9010"
  chains              = %s
  %s
  operator_keys       = %s
}
`, tc.chains, tc.performers, tc.keys),
					PlanOnly:    true,
					ExpectError: tc.err,
				}},
			})
		})
	}
}

// affinity on the executor: null stays null, a value keeps the configuration's spelling, an
// import reads the API's JSON, and a change in the cluster shows as drift.
func TestExecutorAffinityMapping(t *testing.T) {
	spelled := "{\n  \"nodeAffinity\": {\"requiredDuringSchedulingIgnoredDuringExecution\": {\"nodeSelectorTerms\": [{\"matchExpressions\": [{\"key\": \"gantry.dev/node-pool\", \"operator\": \"In\", \"values\": [\"cpu\"]}]}]}}\n}"
	for name, aff := range map[string]jsontypes.Normalized{"null": jsontypes.NewNormalizedNull(), "empty": jsontypes.NewNormalizedValue(`{}`), "spelled": jsontypes.NewNormalizedValue(spelled)} {
		t.Run(name, func(t *testing.T) {
			m := executorModelV0{Name: str("exec"), Namespace: str("default"), Image: str("img:1"), Affinity: aff}
			obj, err := expandExecutor(&m)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(obj.Object)
			live := &unstructured.Unstructured{}
			if err := live.UnmarshalJSON(b); err != nil {
				t.Fatal(err)
			}
			got, err := flattenExecutor(live, &m)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Affinity.Equal(aff) {
				t.Errorf("affinity = %s, want %s", got.Affinity, aff)
			}
			imported, err := flattenExecutor(live, nil)
			if err != nil {
				t.Fatal(err)
			}
			if aff.IsNull() != imported.Affinity.IsNull() || (!aff.IsNull() && !jsonEqual(imported.Affinity.ValueString(), aff.ValueString())) {
				t.Errorf("imported affinity = %s, want %s", imported.Affinity, aff)
			}
			if !aff.IsNull() {
				_ = unstructured.SetNestedField(live.Object, map[string]interface{}{"podAntiAffinity": map[string]interface{}{}}, "spec", "scheduling", "affinity")
				drifted, err := flattenExecutor(live, &m)
				if err != nil {
					t.Fatal(err)
				}
				if drifted.Affinity.Equal(aff) {
					t.Errorf("drifted affinity not visible: %s", drifted.Affinity)
				}
			}
		})
	}
}

// executorModule is a module over one gantry_executor with the Hourglass executor fields,
// as a team would wrap it (instantiated with for_each by TestAccExecutor_managedPerformers).
const executorModule = `
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

variable "name" { type = string }
variable "namespace" { type = string }
variable "avs_address" { type = string }
variable "grpc_port" {
  type    = number
  default = null
}

resource "gantry_executor" "this" {
  name                = var.name
  namespace           = var.namespace
  image               = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  grpc_port           = var.grpc_port
  operator_address    = "0xefefefefefefefefefefefefefefefefefefefef"
  manage_performers   = true
  chains = [{ name = "devnet-${var.name}", chain_id = 31337, rpc_url = "http://anvil:8545", task_mailbox_address = "0xefefefefefefefefefefefefefefefefefefefef" }]
  operator_keys = {
    secret_name               = "operator-keys"
    ecdsa_key                 = "ecdsa"
    bls_keystore_key          = "keystore.json"
    bls_keystore_password_key = "password"
  }
  avs_performers = [{
    avs_address           = var.avs_address
    avs_registrar_address = "0xefefefefefefefefefefefefefefefefefefefef"
    image                 = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  }]
}

output "summary" {
  value = {
    phase        = gantry_executor.this.phase
    grpc_port    = gantry_executor.this.grpc_port
    mgmt_port    = gantry_executor.this.management_port
    process_type = gantry_executor.this.avs_performers[0].process_type
    managed      = gantry_executor.this.managed_performers
  }
}
`

// TestAccExecutor_managedPerformers drives the Hourglass executor fields the way users do:
// a module instantiated with for_each over two executors, an AVS address unknown until apply
// (terraform_data), manage_performers on. The executor's ServiceAccount then creates a
// Performer (as Hourglass's executor does for the AVS it serves), which the next apply's
// refresh shows in managed_performers with an empty plan; destroy removes it with its executor.
func TestAccExecutor_managedPerformers(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec-mp")
	_, err := c.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-keys"},
		StringData: map[string]string{"ecdsa": accKeyMaterial, "keystore.json": `{"crypto":{}}`, "password": "pw"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// As module_gpu_stack_test.go: the module requires gantry-dev/gantry, and only a
	// configuration directory gets its modules installed; the destroy is a step of its own.
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "gantry-dev")
	dir, moduleDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(moduleDir, "main.tf"), []byte(executorModule), 0o644); err != nil {
		t.Fatal(err)
	}
	avs := "0x" + strings.Repeat("d4", 20)
	config := fmt.Sprintf(`
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

provider "gantry" {}

resource "terraform_data" "avs" {
  input = %[3]q
}

module "exec" {
  source      = %[1]q
  for_each    = { one = 9095, two = null }
  name        = "exec-${each.key}"
  namespace   = %[2]q
  grpc_port   = each.value
  avs_address = terraform_data.avs.output
}

output "executors" {
  value = { for k, m in module.exec : k => m.summary }
}
`, moduleDir, ns, avs)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	configDir := tfconfig.StaticDirectory(dir)
	made := "avs-perf-1"
	summary := func(grpc int64, managed map[string]knownvalue.Check) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"phase": knownvalue.StringExact("Running"), "grpc_port": knownvalue.Int64Exact(grpc), "mgmt_port": knownvalue.Int64Exact(9091),
			"process_type": knownvalue.StringExact("server"), "managed": knownvalue.MapExact(managed),
		})
	}
	resource.Test(t, resource.TestCase{
		PreCheck: func() { testAccPreCheck(t) },
		CheckDestroy: func(s *terraform.State) error {
			for _, n := range []string{"exec-one", "exec-two"} {
				if _, err := c.Dynamic.Resource(wait.Executor.GVR).Namespace(ns).Get(context.Background(), n, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("executor %s still exists after destroy: %v", n, err)
				}
			}
			_, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), made, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				return fmt.Errorf("performer %s created by the executor outlived it: %v", made, err)
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(`module.exec["one"].gantry_executor.this`, tfjsonpath.New("avs_performers").AtSliceIndex(0).AtMapKey("avs_address")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("executors", knownvalue.MapExact(map[string]knownvalue.Check{
						"one": summary(9095, map[string]knownvalue.Check{}), "two": summary(9090, map[string]knownvalue.Check{}),
					})),
				},
			},
			{
				// Once the executor lists it Running, the next apply's refresh shows it and proposes nothing.
				PreConfig: func() {
					// As the executor's ServiceAccount (what its pods run as): create the performer.
					cfg := rest.CopyConfig(c.Config)
					cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":executor-exec-one"}
					dyn, err := dynamic.NewForConfig(cfg)
					if err != nil {
						t.Fatal(err)
					}
					p := &unstructured.Unstructured{Object: map[string]interface{}{
						"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
						"metadata": map[string]interface{}{"name": made, "labels": map[string]interface{}{v1alpha1.LabelCreatedByExecutor: "exec-one"}},
						"spec":     map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v1.0.0", "avsAddress": avs},
					}}
					_, err = dyn.Resource(wait.Performer.GVR).Namespace(ns).Create(context.Background(), p, metav1.CreateOptions{})
					if err != nil {
						t.Fatalf("the executor's ServiceAccount cannot create a Performer: %v", err)
					}
					deadline := time.Now().Add(time.Minute)
					for time.Now().Before(deadline) {
						u, err := c.Dynamic.Resource(wait.Executor.GVR).Namespace(ns).Get(context.Background(), "exec-one", metav1.GetOptions{})
						if err == nil {
							l, _, _ := unstructured.NestedSlice(u.Object, "status", "managedPerformers")
							if len(l) == 1 && strings.Contains(fmt.Sprint(l[0]), "svc.cluster.local") {
								return
							}
						}
						time.Sleep(200 * time.Millisecond)
					}
				},
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(`module.exec["one"].gantry_executor.this`, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("executors", knownvalue.MapExact(map[string]knownvalue.Check{
						"one": summary(9095, map[string]knownvalue.Check{made: knownvalue.StringExact("performer-" + made + "." + ns + ".svc.cluster.local:9090")}),
						"two": summary(9090, map[string]knownvalue.Check{}),
					})),
				},
			},
			{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, ConfigDirectory: configDir, Destroy: true},
		},
	})
}
