package provider

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// hourglassExecutor is the Hourglass compatibility example of the migration guide (an
// unmodified Hourglass executor image, its keys in a Secret), in namespace ns.
func hourglassExecutor(ns string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_executor" "hourglass" {
  name                = "hourglass"
  namespace           = %[1]q
  image               = "public.ecr.aws/z6g0f8n7/eigenlayer-hourglass:v1.0.0-rc.2"
  grpc_port           = 9000
  management_port     = 9001
  aggregator_endpoint = "aggregator.avs.svc.cluster.local:9000"
  operator_address    = "0x6ca766d180398847cEb1a58f03e029D65d88a878"
  chains = [{
    name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com",
    task_mailbox_address = "0x132b466d9d5723531F68797519DfED701aC2C749",
  }, {
    name = "base", chain_id = 8453, rpc_url = "https://base.example.com",
    task_mailbox_address = "0x132b466d9d5723531F68797519DfED701aC2C749",
  }]
  operator_keys = {
    secret_name               = "operator-keys"
    ecdsa_key                 = "operator-private-key"
    bls_keystore_key          = "bls-keystore"
    bls_keystore_password_key = "bls-password"
  }
  avs_performers = [{
    avs_address           = "0xCE2Ac75bE2E0951F1F7B288c7a6A9BfB6c331DC4"
    avs_registrar_address = "0x5897a9b8b746c78e0cae876962796949832e3357"
    image                 = "hello-performer:latest"
  }]
  hourglass_compat = { l1_chain = "base" }
}
`, ns)
}

// An unmodified Hourglass executor image, as the migration guide writes it: the apply waits
// for it Running; the ConfigMap holds Hourglass's own config format (config.yaml, l1Chain the
// chain hourglass_compat names, the AVS performer in deploymentMode kubernetes, empty key
// placeholders); the container runs Hourglass's command with the keys only as secretKeyRef
// variables; its Role lets it manage Hourglass Performer objects; no key is in state; the
// next plan is empty; import reads it back whole.
func TestAccExecutor_hourglassCompat(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec-hg")
	_, err := c.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "operator-keys"},
		StringData: map[string]string{"operator-private-key": accKeyMaterial, "bls-keystore": `{"crypto":{"cipher":"aes-128-ctr"}}`, "bls-password": "pw-" + accKeyMaterial[2:12]},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := "gantry_executor.hourglass"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkExecutorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: hourglassExecutor(ns),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_replicas"), knownvalue.Int64Exact(1)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkHourglassConfig(c, ns, addr),
					checkHourglassPod(c, ns),
					checkHourglassRole(c, ns, "hourglass"),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ns + "/hourglass",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

// checkHourglassConfig reads the rendered config.yaml back from the ConfigMap the state names
// and compares the fields Hourglass's executor reads; it also greps state and ConfigMap for the
// Secret's key material.
func checkHourglassConfig(c *kube.Clients, ns, addr string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs := s.RootModule().Resources[addr]
		for k, v := range rs.Primary.Attributes {
			if strings.Contains(v, accKeyMaterial[2:12]) {
				return fmt.Errorf("key material in Terraform state attribute %s", k)
			}
		}
		cm, err := c.Core.CoreV1().ConfigMaps(ns).Get(context.Background(), rs.Primary.Attributes["config_map_name"], metav1.GetOptions{})
		if err != nil {
			return err
		}
		raw, ok := cm.Data["config.yaml"]
		if !ok {
			return fmt.Errorf("ConfigMap %s has no config.yaml (keys: %v)", cm.Name, slices.Sorted(maps.Keys(cm.Data)))
		}
		if strings.Contains(raw, accKeyMaterial[2:12]) {
			return fmt.Errorf("key material in the ConfigMap")
		}
		var doc map[string]any
		if err := yaml.Unmarshal([]byte(raw), &doc); err != nil {
			return fmt.Errorf("config.yaml does not parse: %w", err)
		}
		got := map[string]any{}
		flatten("", doc, got)
		want := map[string]any{
			"grpcPort": float64(9000), "managementServerGrpcPort": float64(9001),
			"operator.address":                       "0x6ca766d180398847cEb1a58f03e029D65d88a878",
			"operator.operatorPrivateKey.privateKey": "", "operator.signingKeys.bls.keystore": "", "operator.signingKeys.bls.password": "",
			"l1Chain.chainId": float64(8453), "l1Chain.rpcUrl": "https://base.example.com",
			"avsPerformers.0.avsAddress":          "0xCE2Ac75bE2E0951F1F7B288c7a6A9BfB6c331DC4",
			"avsPerformers.0.avsRegistrarAddress": "0x5897a9b8b746c78e0cae876962796949832e3357",
			"avsPerformers.0.image.repository":    "hello-performer", "avsPerformers.0.image.tag": "latest",
			"avsPerformers.0.deploymentMode": "kubernetes",
			"kubernetes.namespace":           ns, "kubernetes.crdGroup": "hourglass.eigenlayer.io", "kubernetes.crdVersion": "v1alpha1", "kubernetes.inCluster": true,
			"storage.type": "memory",
		}
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("config.yaml %s = %#v, want %#v\n%s", k, got[k], v, raw)
			}
		}
		return nil
	}
}

// checkHourglassPod checks the executor's running pod: Hourglass's command over config.yaml and
// the key variables bound to the Secret, never literal.
func checkHourglassPod(c *kube.Clients, ns string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		deps, err := c.Core.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil || len(deps.Items) != 1 {
			return fmt.Errorf("want one Deployment in %s: %v %v", ns, len(deps.Items), err)
		}
		ct := deps.Items[0].Spec.Template.Spec.Containers[0]
		if got := strings.Join(ct.Command, " "); got != "executor run --config /etc/gantry/config.yaml" {
			return fmt.Errorf("command %q, want Hourglass's `executor run --config /etc/gantry/config.yaml`", got)
		}
		bound := map[string]string{}
		for _, e := range ct.Env {
			if strings.HasPrefix(e.Name, "EXECUTOR__") && e.Value != "" {
				return fmt.Errorf("%s has a literal value", e.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil && e.ValueFrom.SecretKeyRef.Name == "operator-keys" {
				bound[e.Name] = e.ValueFrom.SecretKeyRef.Key
			}
		}
		for name, key := range map[string]string{
			"EXECUTOR__OPERATOR_OPERATORPRIVATEKEY_PRIVATEKEY": "operator-private-key",
			"EXECUTOR__OPERATOR_SIGNINGKEYS_BLS_KEYSTORE":      "bls-keystore",
			"EXECUTOR__OPERATOR_SIGNINGKEYS_BLS_PASSWORD":      "bls-password",
		} {
			if bound[name] != key {
				return fmt.Errorf("env %s bound to Secret key %q, want %q (all: %v)", name, bound[name], key, bound)
			}
		}
		return nil
	}
}

// checkHourglassRole checks that the Role the executor's pods run under lets them create and
// delete Hourglass Performer objects in its namespace (what Hourglass's executor does).
func checkHourglassRole(c *kube.Clients, ns, executor string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		role, err := c.Core.RbacV1().Roles(ns).Get(context.Background(), "executor-"+executor, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, "hourglass.eigenlayer.io") && slices.Contains(r.Resources, "performers") && slices.Contains(r.Verbs, "create") && slices.Contains(r.Verbs, "delete") {
				return nil
			}
		}
		return fmt.Errorf("Role executor-%s does not allow creating and deleting hourglass.eigenlayer.io performers: %v", executor, role.Rules)
	}
}

// flatten writes a decoded YAML document as dotted paths (list items by index) → leaf values.
func flatten(prefix string, v any, out map[string]any) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			flatten(join(k), x, out)
		}
	case []any:
		for i, x := range t {
			flatten(join(fmt.Sprint(i)), x, out)
		}
	default:
		out[prefix] = v
	}
}
