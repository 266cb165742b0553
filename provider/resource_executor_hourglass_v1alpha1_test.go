package provider

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// hourglassExecutorV1alpha1 is the migration guide's translation of the HourglassExecutor
// operator's "Simple Executor" (basic-executor: one chain, keys ecdsa and bls, now in the
// Secret basic-executor-keys) to gantry_executor with config_format =
// "hourglass-executor-v1alpha1", in namespace ns (the old manifest's kubernetes.namespace).
func hourglassExecutorV1alpha1(ns string) string {
	return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_executor" "basic" {
  name                = "basic-executor"
  namespace           = %[1]q
  image               = "hourglass/executor:v1.0.0"
  replicas            = 1
  aggregator_endpoint = "aggregator.example.com:9090"
  log_level           = "info"
  chains = [{
    name                 = "ethereum"
    rpc_url              = "https://eth-mainnet.alchemyapi.io/v2/YOUR_KEY"
    chain_id             = 1
    task_mailbox_address = "0x1234567890abcdef1234567890abcdef12345678"
  }]
  operator_keys = {
    secret_name = "basic-executor-keys"
    ecdsa_key   = "ecdsa"
    bls_key     = "bls"
  }
  resources = {
    requests = { cpu = "50m", memory = "64Mi" }
    limits   = { cpu = "2", memory = "4Gi" }
  }
  pod_labels = { app = "hourglass-executor", "hourglass.eigenlayer.io/name" = "basic-executor" }
  hourglass_compat = { config_format = "hourglass-executor-v1alpha1" }
}
`, ns)
}

// hourglassExecutorV1alpha1Config is the config.yaml the HourglassExecutor operator's
// buildExecutorConfig writes for basic-executor with kubernetes.namespace ns (byte for byte;
// internal/executor's tests compare Gantry's rendering with a verbatim copy of that function).
func hourglassExecutorV1alpha1Config(ns string) string {
	return `
aggregator_endpoint: "aggregator.example.com:9090"
performer_mode: "kubernetes"
log_level: "info"
chains:

  - name: "ethereum"
    rpc: "https://eth-mainnet.alchemyapi.io/v2/YOUR_KEY"
    chain_id: 1
    task_mailbox_address: "0x1234567890abcdef1234567890abcdef12345678"

kubernetes:
  namespace: "` + ns + `"
`
}

// guideHAExecutor is the migration guide's translation of the HourglassExecutor operator's
// "High-Availability Executor" (templates/guides/migrating.md.tmpl, section "Executor images
// built for the HourglassExecutor operator"), verbatim.
const guideHAExecutor = `provider "gantry" {}

resource "gantry_executor" "ha" {
  name                = "ha-executor"
  namespace           = "hourglass" # spec.config.kubernetes.namespace: where its performers go
  image               = "hourglass/executor:v1.2.0"
  replicas            = 3
  aggregator_endpoint = "aggregator-ha.example.com:9090"
  log_level           = "info"
  chains = [
    { name = "ethereum", rpc_url = "https://eth-mainnet.alchemyapi.io/v2/YOUR_KEY", chain_id = 1, task_mailbox_address = "0x1234567890abcdef1234567890abcdef12345678" },
    { name = "base", rpc_url = "https://base-mainnet.infura.io/v3/YOUR_KEY", chain_id = 8453, task_mailbox_address = "0xabcdef1234567890abcdef1234567890abcdef12" },
    { name = "arbitrum", rpc_url = "https://arbitrum-mainnet.infura.io/v3/YOUR_KEY", chain_id = 42161, task_mailbox_address = "0xfedcba0987654321fedcba0987654321fedcba09" },
  ]
  # spec.config.operatorKeys: the Secret's keys, never the values (or the write-only
  # ecdsa_private_key_wo / bls_private_key_wo, which the provider writes to its own Secret).
  operator_keys = {
    secret_name = "ha-executor-keys"
    ecdsa_key   = "ecdsa" # ECDSA_PRIVATE_KEY
    bls_key     = "bls"   # BLS_PRIVATE_KEY
  }
  resources = {
    requests = { cpu = "1", memory = "2Gi" }
    limits   = { cpu = "4", memory = "8Gi" }
  }
  node_selector      = { "node.kubernetes.io/instance-type" = "m5.xlarge" }
  tolerations        = [{ key = "dedicated", operator = "Equal", value = "hourglass", effect = "NoSchedule" }]
  image_pull_secrets = ["private-registry-secret"]
  # The old operator's pod labels, for Services or NetworkPolicies that select them.
  pod_labels = { app = "hourglass-executor", "hourglass.eigenlayer.io/name" = "ha-executor" }

  hourglass_compat = { config_format = "hourglass-executor-v1alpha1" }
}
`

// config_format reaches spec.hourglassCompat.configFormat and reads back as configured (null
// stays null: the default, ponos).
func TestExecutorConfigFormat_roundTrip(t *testing.T) {
	for _, f := range []types.String{types.StringNull(), types.StringValue(v1alpha1.HourglassConfigFormatPonos),
		types.StringValue(v1alpha1.HourglassConfigFormatExecutorV1alpha1)} {
		m := &executorModelV0{Name: str("x"), Namespace: str("default"), Image: str("i"), AggregatorEndpoint: str("agg:9010"),
			OperatorKeys:    &operatorKeysModel{SecretName: str("k"), ECDSAKey: str("e")},
			HourglassCompat: &hourglassCompatModel{ConfigFormat: f, L1Chain: types.StringNull()}}
		u, err := expandExecutor(m)
		if err != nil {
			t.Fatal(err)
		}
		got, found, _ := unstructured.NestedString(u.Object, "spec", "hourglassCompat", "configFormat")
		if found != !f.IsNull() || got != f.ValueString() {
			t.Errorf("%s: spec.hourglassCompat.configFormat = %q (found %v)", f, got, found)
		}
		back, err := flattenExecutor(u, m)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back.HourglassCompat, m.HourglassCompat) {
			t.Errorf("%s: read back %+v, want %+v", f, back.HourglassCompat, m.HourglassCompat)
		}
	}
}

// At plan, through the Terraform CLI (no cluster): config_format = "hourglass-executor-v1alpha1"
// needs no operator_address and takes a raw BLS key (the HourglassExecutor's operatorKeys.bls,
// as BLS_PRIVATE_KEY); config_format = "ponos" is the default, with its rules. The refusals of
// the format are rows of TestBadInput_caughtAtPlan.
func TestExecutor_hourglassExecutorV1alpha1AtPlan(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	for name, tc := range map[string]struct {
		config, want string
	}{
		"the acceptance test's translation": {config: hourglassExecutorV1alpha1("hourglass")},
		"the migration guide's translation": {config: guideHAExecutor},
		"only an ECDSA key": {config: strings.Replace(hourglassExecutorV1alpha1("hourglass"), `    bls_key     = "bls"
`, "", 1)},
		"ponos needs operator_address": {config: strings.Replace(strings.Replace(hourglassExecutorV1alpha1("hourglass"),
			`"hourglass-executor-v1alpha1"`, `"ponos"`, 1), `    bls_key     = "bls"
`, "", 1),
			want: `(?s)Missing Operator Address.*hourglass_compat needs the operator's address`},
	} {
		t.Run(name, func(t *testing.T) {
			step := resource.TestStep{Config: tc.config, PlanOnly: true, ExpectNonEmptyPlan: true}
			if tc.want != "" {
				step.ExpectError = regexp.MustCompile(tc.want)
			}
			resource.UnitTest(t, resource.TestCase{ProtoV6ProviderFactories: testAccProtoV6ProviderFactories, Steps: []resource.TestStep{step}})
		})
	}
}

// An executor image built for the removed HourglassExecutor operator, translated from that
// operator's "Simple Executor" as the migration guide writes it: the apply waits for it
// Running; the ConfigMap the state names holds config.yaml byte for byte as that operator's
// buildExecutorConfig wrote it (and nothing else: no key); the Deployment runs the image's own
// entrypoint with --config=/etc/hourglass/config.yaml, the ConfigMap mounted at
// /etc/hourglass, port grpc 9090, liveness /healthz and readiness /readyz on 8080, the keys
// only as ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY secretKeyRefs; the pod carries the old
// operator's labels (pod_labels); no key is in state; the next plan is empty; import reads it
// back whole.
func TestAccExecutor_hourglassExecutorV1alpha1(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec-hgv1")
	_, err := c.Core.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "basic-executor-keys"},
		StringData: map[string]string{"ecdsa": accKeyMaterial, "bls": "bls-" + accKeyMaterial[2:12]},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	addr := "gantry_executor.basic"
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkExecutorsDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config: hourglassExecutorV1alpha1(ns),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("ready_replicas"), knownvalue.Int64Exact(1)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("hourglass_compat").AtMapKey("config_format"),
						knownvalue.StringExact(v1alpha1.HourglassConfigFormatExecutorV1alpha1)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkHourglassExecutorV1alpha1Config(c, ns, addr),
					checkHourglassExecutorV1alpha1Pod(c, ns),
					checkHourglassRole(c, ns, "basic-executor"),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ns + "/basic-executor",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts"},
			},
		},
	})
}

// checkHourglassExecutorV1alpha1Config compares the ConfigMap the state names with what the
// HourglassExecutor operator wrote, byte for byte, and greps state and ConfigMap for the keys.
func checkHourglassExecutorV1alpha1Config(c *kube.Clients, ns, addr string) resource.TestCheckFunc {
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
		if want := map[string]string{"config.yaml": hourglassExecutorV1alpha1Config(ns)}; !reflect.DeepEqual(cm.Data, want) {
			return fmt.Errorf("ConfigMap %s data:\n%q\nwant (the HourglassExecutor operator's config.yaml):\n%q", cm.Name, cm.Data, want)
		}
		return nil
	}
}

// checkHourglassExecutorV1alpha1Pod checks the Deployment's pod template as the
// HourglassExecutor operator built it (see TestAccExecutor_hourglassExecutorV1alpha1).
func checkHourglassExecutorV1alpha1Pod(c *kube.Clients, ns string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		dep, err := c.Core.AppsV1().Deployments(ns).Get(context.Background(), "executor-basic-executor", metav1.GetOptions{})
		if err != nil {
			return err
		}
		pod := dep.Spec.Template.Spec
		ct := pod.Containers[0]
		if ct.Command != nil || !reflect.DeepEqual(ct.Args, []string{"--config=/etc/hourglass/config.yaml"}) {
			return fmt.Errorf("command %q args %q, want the image's entrypoint with --config=/etc/hourglass/config.yaml", ct.Command, ct.Args)
		}
		if len(ct.VolumeMounts) != 1 || ct.VolumeMounts[0].MountPath != "/etc/hourglass" || !ct.VolumeMounts[0].ReadOnly {
			return fmt.Errorf("mounts %+v, want the config read-only at /etc/hourglass", ct.VolumeMounts)
		}
		if len(ct.Ports) != 1 || ct.Ports[0].Name != "grpc" || ct.Ports[0].ContainerPort != 9090 {
			return fmt.Errorf("ports %+v, want only grpc 9090", ct.Ports)
		}
		for _, p := range []struct {
			probe *corev1.Probe
			path  string
		}{{ct.LivenessProbe, "/healthz"}, {ct.ReadinessProbe, "/readyz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != intstr.FromInt32(8080) {
				return fmt.Errorf("probe %+v, want HTTP GET %s on 8080", p.probe, p.path)
			}
		}
		env := map[string]string{}
		for _, e := range ct.Env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
				return fmt.Errorf("env %s is not a secretKeyRef", e.Name)
			}
			env[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
		if want := map[string]string{"ECDSA_PRIVATE_KEY": "basic-executor-keys/ecdsa", "BLS_PRIVATE_KEY": "basic-executor-keys/bls"}; !reflect.DeepEqual(env, want) {
			return fmt.Errorf("env %v, want %v", env, want)
		}
		if l := dep.Spec.Template.Labels; l["app"] != "hourglass-executor" || l["hourglass.eigenlayer.io/name"] != "basic-executor" {
			return fmt.Errorf("pod labels %v, want the HourglassExecutor operator's", l)
		}
		return nil
	}
}
