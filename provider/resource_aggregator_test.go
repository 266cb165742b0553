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

	tfjson "github.com/hashicorp/terraform-json"

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
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/aggregator"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// aggregatorConfig is one Hourglass aggregator (demo/aggregator-chain.yaml's: an Anvil L1 and
// L2, one AVS on the L2) with the operator key from the Secret operator-keys, plus extra.
func aggregatorConfig(ns, image, extra string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_aggregator" "a" {
  name             = "agg"
  namespace        = %[1]q
  image            = %[2]q
  operator_address = "0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc"
  l1_chain_id      = 31337
  chains = [
    { name = "ethereum", chain_id = 31337, rpc_url = "http://anvil-l1.example.com:8545", poll_interval_seconds = 10 },
    { name = "base", chain_id = 31338, rpc_url = "http://anvil-l2.example.com:9545" },
  ]
  avss = [{ address = "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4", chain_ids = [31338] }]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa" }
%[3]s
}
`, ns, image, extra)
}

// checkAggregatorObjects: the StatefulSet, headless Service and config Secret exist, owned by
// the Aggregator; the config is Hourglass's format (holding want) and no key material is in
// it or in the Terraform state.
func checkAggregatorObjects(c *kube.Clients, ns, name string, want ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		return aggregatorObjects(c, ns, name, b, want...)
	}
}

// aggregatorObjects is checkAggregatorObjects on the state as JSON (either format).
func aggregatorObjects(c *kube.Clients, ns, name string, state []byte, want ...string) error {
	ctx := context.Background()
	if strings.Contains(string(state), accKeyMaterial[2:]) || !strings.Contains(string(state), "operator-keys") {
		return fmt.Errorf("state holds key material, or not even the Secret reference")
	}
	sts, err := c.Core.AppsV1().StatefulSets(ns).Get(ctx, aggregator.StatefulSetName(name), metav1.GetOptions{})
	if err != nil {
		return err
	}
	svc, err := c.Core.CoreV1().Services(ns).Get(ctx, aggregator.ServiceName(name), metav1.GetOptions{})
	if err != nil {
		return err
	}
	sec, err := c.Core.CoreV1().Secrets(ns).Get(ctx, aggregator.SecretName(name), metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, o := range []metav1.Object{sts, svc, sec} {
		if ref := metav1.GetControllerOf(o); ref == nil || ref.Kind != "Aggregator" || ref.Name != name {
			return fmt.Errorf("%s is not controlled by the Aggregator %s: %+v", o.GetName(), name, ref)
		}
	}
	if *sts.Spec.Replicas != 1 || svc.Spec.ClusterIP != corev1.ClusterIPNone || svc.Spec.Ports[0].Port != 9000 {
		return fmt.Errorf("statefulset replicas %d, service %s port %d", *sts.Spec.Replicas, svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	}
	cfg := string(sec.Data[v1alpha1.AggregatorConfigKey])
	for _, w := range append(want, "l1ChainId: 31337\n", "operatorPrivateKey:\n    privateKey: \"\"\n") {
		if !strings.Contains(cfg, w) {
			return fmt.Errorf("config.yaml lacks %q:\n%s", w, cfg)
		}
	}
	if strings.Contains(cfg, accKeyMaterial[2:]) {
		return fmt.Errorf("config.yaml holds key material")
	}
	return nil
}

// checkAggregatorsDestroyed: no Aggregator of the state, nor its StatefulSet, Service or
// config Secret, is left.
func checkAggregatorsDestroyed(c *kube.Clients) func(*terraform.State) error {
	return func(s *terraform.State) error {
		ctx := context.Background()
		for _, rs := range s.RootModule().Resources {
			if rs.Type != "gantry_aggregator" {
				continue
			}
			ns, name, err := parseImportID("Aggregator", rs.Primary.ID)
			if err != nil {
				return err
			}
			if _, err := c.Dynamic.Resource(wait.Aggregator.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("Aggregator %s still exists after destroy (%v)", rs.Primary.ID, err)
			}
			if _, err := c.Core.AppsV1().StatefulSets(ns).Get(ctx, aggregator.StatefulSetName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("StatefulSet of %s left (%v)", rs.Primary.ID, err)
			}
			if _, err := c.Core.CoreV1().Services(ns).Get(ctx, aggregator.ServiceName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("Service of %s left (%v)", rs.Primary.ID, err)
			}
			if _, err := c.Core.CoreV1().Secrets(ns).Get(ctx, aggregator.SecretName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("config Secret of %s left (%v)", rs.Primary.ID, err)
			}
		}
		return nil
	}
}

// Create (Running, the three objects owned and shaped as Hourglass's chart makes them), import
// by ID, update (a config change and an image: a new revision), drift (a change made with
// kubectl shows in the plan and is undone), destroy leaves nothing; neither the state nor the
// config Secret holds key material.
func TestAccAggregator_basic(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-agg")
	createKeySecret(t, c, ns)
	addr := "gantry_aggregator.a"
	v1 := aggregatorConfig(ns, "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2", `  resources = { requests = { cpu = "10m", memory = "32Mi" } }`)
	v2 := aggregatorConfig(ns, "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0", `  resources = { requests = { cpu = "10m", memory = "32Mi" } }
  debug = true`)
	var rev1 string
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkAggregatorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: v1,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(ns+"/agg")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_replicas"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("config_secret_name"), knownvalue.StringExact("aggregator-agg-config")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("management_endpoint"), knownvalue.StringExact(fmt.Sprintf("aggregator-agg.%s.svc.cluster.local:9000", ns))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("revision"), knownvalue.StringRegexp(regexp.MustCompile(`^[0-9a-f]{16}$`))),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("chains").AtSliceIndex(1).AtMapKey("poll_interval_seconds"), knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkAggregatorObjects(c, ns, "agg", "pollIntervalSeconds: 10\n", "storage:\n  type: memory\n", "debug: false\n"),
					func(s *terraform.State) error {
						rev1 = s.RootModule().Resources[addr].Primary.Attributes["revision"]
						return nil
					},
				),
			},
			{ResourceName: addr, ImportState: true, ImportStateId: ns + "/agg", ImportStateVerify: true, ImportStateVerifyIgnore: []string{"timeouts"}},
			{
				Config: v2,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkAggregatorObjects(c, ns, "agg", "debug: true\n"),
					func(s *terraform.State) error {
						if rev2 := s.RootModule().Resources[addr].Primary.Attributes["revision"]; rev2 == rev1 || rev2 == "" {
							return fmt.Errorf("image and debug change did not roll a new revision (%q → %q)", rev1, rev2)
						}
						return nil
					},
				),
			},
			{
				PreConfig: func() {
					patch := `{"spec":{"managementPort":9999,"l1ChainId":31338}}`
					if _, err := c.Dynamic.Resource(wait.Aggregator.GVR).Namespace(ns).Patch(context.Background(), "agg", k8stypes.MergePatchType, []byte(patch),
						metav1.PatchOptions{FieldManager: "drift-test"}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             v2,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: v2,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("management_port"), knownvalue.Int64Exact(9000)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("l1_chain_id"), knownvalue.Int64Exact(31337)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
			},
		},
	})
}

// A pod the scheduler cannot place fails the apply at once with the scheduler's own words
// (Failed, reason Unschedulable); the next plan retries; a request that fits heals it.
func TestAccAggregator_unschedulable(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-agg-unsched")
	createKeySecret(t, c, ns)
	img := "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkAggregatorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config:      aggregatorConfig(ns, img, `  resources = { requests = { cpu = "500" } }`),
				ExpectError: regexp.MustCompile(`(?s)Unschedulable.*pod\s+aggregator-agg-0\s+cannot\s+be\s+scheduled.*Insufficient\s+cpu`),
			},
			{
				Config:             aggregatorConfig(ns, img, `  resources = { requests = { cpu = "500" } }`),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: aggregatorConfig(ns, img, `  resources = { requests = { cpu = "10m" } }`),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("gantry_aggregator.a", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				},
			},
		},
	})
}

// A missing key Secret fails the apply at once, naming it (SecretNotFound).
func TestAccAggregator_missingKeySecret(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-agg-nokeys")
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkAggregatorsDestroyed(c),
		Steps: []resource.TestStep{{
			Config:      aggregatorConfig(ns, "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2", ""),
			ExpectError: regexp.MustCompile(`(?s)SecretNotFound.*Secret\s+` + ns + `/operator-keys\s+not\s+found`),
		}},
	})
}

// Invalid input fails at plan time naming the attribute; no cluster is needed.
func TestAggregator_InvalidInputFailsAtPlan(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	l1 := `{ name = "ethereum", chain_id = 31337, rpc_url = "http://anvil:8545" }`
	keys := `{ secret_name = "k", ecdsa_key = "e" }`
	cases := []struct {
		name, chains, l1, keys, extra string
		err                           *regexp.Regexp
	}{
		{"l1 not a chain", `[` + l1 + `]`, "1", keys, "", words("l1_chain_id = 1 is not the chain_id of one of chains [31337]")},
		{"unsupported chain", `[` + l1 + `, { name = "arb", chain_id = 42161, rpc_url = "https://arb" }]`, "31337", keys, "",
			words("Attribute chains[1].chain_id value must be one of")},
		{"duplicate chain id", `[` + l1 + `, ` + strings.Replace(l1, "ethereum", "mainnet", 1) + `]`, "31337", keys, "", words("Duplicate Chain ID")},
		{"avs on an unknown chain", `[` + l1 + `]`, "31337", keys, `avss = [{ address = "0x` + strings.Repeat("ab", 20) + `", chain_ids = [31338] }]`,
			words("avss[0].chain_ids[0] = 31338 is not the chain_id of one of chains")},
		{"no ECDSA key", `[` + l1 + `]`, "31337", `{ secret_name = "k", bls_keystore_key = "ks" }`, "", words("Missing ECDSA Key")},
		{"key without secret", `[` + l1 + `]`, "31337", `{ ecdsa_key = "e" }`, "", words("Invalid Attribute Combination")},
		{"remote signer beside ecdsa_key", `[` + l1 + `]`, "31337",
			`{ secret_name = "k", ecdsa_key = "e", remote_signer = { url = "https://s:9000", public_key = "0x` + strings.Repeat("ab", 64) + `" } }`, "",
			words("operator_keys.ecdsa_key conflicts with operator_keys.remote_signer")},
		{"TLS on http", `[` + l1 + `]`, "31337",
			`{ remote_signer = { url = "http://s:9000", public_key = "0x` + strings.Repeat("ab", 64) + `", ca_secret_name = "ca" } }`, "",
			words("TLS Needs an https:// URL")},
		{"poll interval", `[{ name = "ethereum", chain_id = 31337, rpc_url = "http://anvil:8545", poll_interval_seconds = 0 }]`, "31337", keys, "",
			words("Attribute chains[0].poll_interval_seconds value must be between 1 and 3600")},
		{"persistence size 0", `[` + l1 + `]`, "31337", keys, `persistence = { size = "0" }`, words("is not above 0")},
		{"bad operator address", `[` + l1 + `]`, "31337", keys, "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			addr := `"0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc"`
			want := tc.err
			if want == nil {
				addr, want = `"0x12"`, words("Attribute operator_address must be an Ethereum address")
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "gantry" {}
resource "gantry_aggregator" "bad" {
  name             = "bad"
  image            = "x"
  operator_address = %s
  l1_chain_id      = %s
  chains           = %s
  operator_keys    = %s
  %s
}
`, addr, tc.l1, tc.chains, tc.keys, tc.extra),
					PlanOnly:    true,
					ExpectError: want,
				}},
			})
		})
	}
}

// The write-only operator key and resource identity (Terraform >= 1.12): the provider writes
// ecdsa_private_key_wo into the Secret agg-aggregator-keys, owned by the Aggregator,
// and the pod gets it by reference; the key is never in the state. The identity
// {namespace, name} is in state after create, and an import block giving it plans no change.
func TestAccAggregator_writeOnlyKeyAndIdentity(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.12.0", "write-only attributes and resource identity")
	c := testClients(t)
	ns := testNamespace(t, c, "acc-agg-wo")
	key := "0xaggwo" + strings.Repeat("5e", 16)
	config := strings.Replace(aggregatorConfig(ns, "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2", ""),
		`operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa" }`,
		fmt.Sprintf(`operator_keys = { ecdsa_private_key_wo = %q, private_keys_wo_version = 1 }`, key), 1)
	addr := "gantry_aggregator.a"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkAggregatorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: config,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("operator_keys").AtMapKey("private_keys_wo_version"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("operator_keys").AtMapKey("ecdsa_private_key_wo"), knownvalue.Null()),
					statecheck.ExpectIdentity(addr, map[string]knownvalue.Check{"namespace": knownvalue.StringExact(ns), "name": knownvalue.StringExact("agg")}),
				},
				Check: func(s *terraform.State) error {
					b, _ := json.Marshal(s)
					if strings.Contains(string(b), key) {
						return fmt.Errorf("the write-only key is in the state")
					}
					sec, err := c.Core.CoreV1().Secrets(ns).Get(context.Background(), "agg-aggregator-keys", metav1.GetOptions{})
					if err != nil {
						return err
					}
					if string(sec.Data[woECDSAKey]) != key || len(sec.OwnerReferences) != 1 || sec.OwnerReferences[0].Kind != "Aggregator" {
						return fmt.Errorf("Secret agg-aggregator-keys: keys %v owners %v", len(sec.Data), sec.OwnerReferences)
					}
					sts, err := c.Core.AppsV1().StatefulSets(ns).Get(context.Background(), aggregator.StatefulSetName("agg"), metav1.GetOptions{})
					if err != nil {
						return err
					}
					env := sts.Spec.Template.Spec.Containers[0].Env
					if len(env) == 0 || env[0].ValueFrom == nil || env[0].ValueFrom.SecretKeyRef.Name != "agg-aggregator-keys" {
						return fmt.Errorf("env %+v", env)
					}
					return nil
				},
			},
			{
				Config: config, ResourceName: addr, ImportState: true,
				ImportStateKind:  resource.ImportBlockWithResourceIdentity,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop)}},
			},
		},
	})
}

// aggregatorModule wraps one gantry_aggregator as a team would (an operator's AVS on an L2),
// instantiated with for_each by TestAccAggregator_moduleForEachUnknown.
const aggregatorModule = `
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

variable "name" { type = string }
variable "namespace" { type = string }
variable "avs_address" { type = string }
variable "l2_poll" {
  type    = number
  default = null
}

resource "gantry_aggregator" "this" {
  name             = var.name
  namespace        = var.namespace
  image            = "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2"
  operator_address = "0x6B58f6762689DF33fe8fa3FC40Fb5a3089D3a8cc"
  l1_chain_id      = 31337
  chains = [
    { name = "ethereum", chain_id = 31337, rpc_url = "http://anvil-l1.example.com:8545" },
    { name = "base", chain_id = 31338, rpc_url = "http://anvil-l2.example.com:9545", poll_interval_seconds = var.l2_poll },
  ]
  avss          = [{ address = var.avs_address, chain_ids = [31338] }]
  operator_keys = { secret_name = "operator-keys", ecdsa_key = "ecdsa" }
  resources     = { requests = { cpu = "10m", memory = "32Mi" } }
}

output "summary" {
  value = {
    phase    = gantry_aggregator.this.phase
    endpoint = gantry_aggregator.this.management_endpoint
    l2_poll  = gantry_aggregator.this.chains[1].poll_interval_seconds
  }
}
`

// TestAccAggregator_moduleForEachUnknown drives gantry_aggregator as users do: a module
// instantiated with for_each over two aggregators, the AVS address unknown until apply
// (terraform_data) and a chain's poll interval left to its default in one instance. Both come
// up Running with their own objects and config; the next plan is empty; destroy leaves nothing.
func TestAccAggregator_moduleForEachUnknown(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-agg-mod")
	createKeySecret(t, c, ns)
	// As TestAccExecutor_managedPerformers: the module requires gantry-dev/gantry, and only a
	// configuration directory gets its modules installed.
	t.Setenv("TF_ACC_PROVIDER_NAMESPACE", "gantry-dev")
	dir, moduleDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(moduleDir, "main.tf"), []byte(aggregatorModule), 0o644); err != nil {
		t.Fatal(err)
	}
	avs := "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4"
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

module "agg" {
  source      = %[1]q
  for_each    = { one = 5, two = null }
  name        = "agg-${each.key}"
  namespace   = %[2]q
  l2_poll     = each.value
  avs_address = terraform_data.avs.output
}

output "aggregators" {
  value = { for k, m in module.agg : k => m.summary }
}
`, moduleDir, ns, avs)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	configDir := tfconfig.StaticDirectory(dir)
	summary := func(name string, poll int64) knownvalue.Check {
		return knownvalue.ObjectExact(map[string]knownvalue.Check{
			"phase":    knownvalue.StringExact("Running"),
			"endpoint": knownvalue.StringExact(fmt.Sprintf("aggregator-%s.%s.svc.cluster.local:9000", name, ns)),
			"l2_poll":  knownvalue.Int64Exact(poll),
		})
	}
	objects := stateCheckFunc(func(s *tfjson.State) error {
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		for name, poll := range map[string]string{"agg-one": "pollIntervalSeconds: 5\n", "agg-two": "pollIntervalSeconds: 2\n"} {
			if err := aggregatorObjects(c, ns, name, b, poll, avs); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	resource.Test(t, resource.TestCase{
		PreCheck: func() { testAccPreCheck(t) },
		CheckDestroy: func(*terraform.State) error {
			for _, name := range []string{"agg-one", "agg-two"} {
				if _, err := c.Dynamic.Resource(wait.Aggregator.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("Aggregator %s still exists after destroy: %v", name, err)
				}
				if _, err := c.Core.AppsV1().StatefulSets(ns).Get(context.Background(), aggregator.StatefulSetName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return fmt.Errorf("StatefulSet of %s left: %v", name, err)
				}
			}
			return nil
		},
		Steps: []resource.TestStep{
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(`module.agg["one"].gantry_aggregator.this`, tfjsonpath.New("avss").AtSliceIndex(0).AtMapKey("address")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownOutputValue("aggregators", knownvalue.MapExact(map[string]knownvalue.Check{
						"one": summary("agg-one", 5), "two": summary("agg-two", 2),
					})),
					objects,
				},
			},
			{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				ConfigDirectory:          configDir,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, ConfigDirectory: configDir, Destroy: true},
		},
	})
}
