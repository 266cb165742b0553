package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// Bad input by class, each caught at plan with the real CLI and no cluster, with the exact
// words the user sees (the classes of "bad input on every surface"): known at plan but once
// caught only at apply; accepted but wrong; unclear messages. The rows the CRD refuses are in
// reconciler/crd_validation_test.go, the error classification in internal/failure.
// manyLabels is n node_selector entries "k<i>" = "v".
func manyLabels(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, " k%d = \"v\",", i)
	}
	return b.String()
}

func TestBadInput_caughtAtPlan(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	packageSet := func(set string) string {
		return "resource \"gantry_package_set\" \"bad\" {\n  name = \"bad\"\n" + set +
			"\n  packages = [{ name = \"aa\", version = \"1.0.0\", image = \"x\" }]\n}\n"
	}
	addr := "0x" + strings.Repeat("cd", 20)
	hgV1 := `hourglass_compat = { config_format = "hourglass-executor-v1alpha1" }`
	cases := []struct{ class, name, config, want string }{
		// Known at plan, once caught only at apply.
		{"plan", "after names the set itself", packageSet(`after = ["bad"]`),
			`after[0]: "bad" is this set's own name; a set cannot wait until it is complete itself.`},
		{"plan", "after_converged names the set itself", packageSet(`after_converged = [{ name = "bad", reason = "r" }]`),
			`after_converged[0].name: "bad" is this set's own name; a set cannot wait until it has converged itself.`},
		{"plan", "more GPUs than the instance type has", badWorkspace("resource = { count = 1, instance_type = \"g6.xlarge\", gpu_count = 4 }\n  inference = { model = \"m\", image = \"i\" }"),
			`resource.gpu_count: 4 GPUs per replica, but a g6.xlarge node has 1 (NVIDIA-L4); choose a larger instance type, or set resource.count above 1 to serve the model across nodes`},
		{"plan", "model_gpus above the instance type's GPUs", badWorkspace("resource = { count = 1, instance_type = \"g6.xlarge\" }\n  inference = { model = \"m\", image = \"i\", model_gpus = 4 }"),
			`inference.model_gpus: the model needs 4 GPUs but one replica has 1 (resource.gpu_count): set resource.count to 4 or more to serve it across nodes`},
		{"plan", "a gpu_product the instance type contradicts", badWorkspace("resource = { count = 1, instance_type = \"p4d.24xlarge\", gpu_product = \"NVIDIA-L4\" }\n  inference = { model = \"m\", image = \"i\" }"),
			`resource.gpu_product = "NVIDIA-L4" contradicts resource.instance_type "p4d.24xlarge" (NVIDIA-A100-SXM4-40GB): no node carries both GPUs`},
		{"plan", "a node_selector GPU the instance type contradicts", badWorkspace("resource = { count = 1, instance_type = \"g6.xlarge\" }\n  inference = { model = \"m\", image = \"i\" }\n  node_selector = { \"nvidia.com/gpu.product\" = \"NVIDIA-H200\" }"),
			`node_selector["nvidia.com/gpu.product"] = "NVIDIA-H200" contradicts resource.instance_type "g6.xlarge" (NVIDIA-L4)`},
		{"plan", "two volumes at one mount path", badWorkspace("resource = { count = 1, gpu_count = 1 }\n  inference = { model = \"m\", image = \"i\", volumes = [{ name = \"a\", mount_path = \"/data\", empty_dir = true }, { name = \"b\", mount_path = \"/data\", empty_dir = true }] }"),
			`inference.volumes[1].mount_path: mount_path "/data" is already used by inference.volumes[0]; they must be unique.`},
		{"plan", "tuning on two nodes", badWorkspace("resource = { count = 2, gpu_count = 1 }\n  tuning = { method = \"qlora\", preset = \"phi-3-mini-4k-instruct\", input_image = \"d\", output_image = \"o\" }"),
			`resource.count: 2, but a tuning workspace runs one pod on one node (KAITO refuses multi-node tuning too): set it to 1`},
		{"plan", "a MIG profile the GPU does not offer", badWorkspace("resource = { count = 1, gpu_product = \"NVIDIA-H200\", partition = { mode = \"mig\", profile = \"3g.40gb\" } }\n  inference = { model = \"m\", image = \"i\" }"),
			`resource.partition.profile: MIG profile "3g.40gb" is not one NVIDIA-H200 (resource.gpu_product) offers; its profiles are 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (NVIDIA's MIG user guide)`},
		{"plan", "a MIG profile the instance type's GPU does not offer", badWorkspace("resource = { count = 1, instance_type = \"p5en.48xlarge\", provision_nodes = false, partition = { mode = \"mig\", profile = \"7g.80gb\" } }\n  inference = { model = \"m\", image = \"i\" }"),
			`resource.partition.profile: MIG profile "7g.80gb" is not one NVIDIA-H200 (the GPU of resource.instance_type p5en.48xlarge) offers; its profiles are 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb`},
		{"plan", "a MIG profile on a GPU without MIG", badWorkspace("resource = { count = 1, gpu_product = \"NVIDIA-L4\", partition = { mode = \"mig\", profile = \"1g.10gb\" } }\n  inference = { model = \"m\", image = \"i\" }"),
			`resource.partition.profile: MIG profile "1g.10gb" cannot run on NVIDIA-L4 (resource.gpu_product): that GPU has no MIG (Multi-Instance GPU) support`},
		{"plan", "a performer's MIG resource the GPU does not offer", badPerformer(`hardware_requirements = { gpu_count = 1, gpu_type = "NVIDIA-H200", gpu_resource = "nvidia.com/mig-3g.40gb" }`),
			`hardware_requirements.gpu_resource: MIG profile "3g.40gb" is not one NVIDIA-H200 (hardware_requirements.gpu_type) offers; its profiles are 1g.18gb, 1g.35gb, 2g.35gb, 3g.71gb, 4g.71gb, 7g.141gb (NVIDIA's MIG user guide).`},
		{"plan", "selector expression key", packageSet(`node_selector_expressions = [{ key = "bad key!", operator = "Exists" }]`),
			`node_selector_expressions[0].key: "bad key!" is not a valid label key`},
		{"plan", "selector expression value", packageSet(`node_selector_expressions = [{ key = "pool", operator = "In", values = ["a b"] }]`),
			`node_selector_expressions[0].values[0]: "a b" is not a valid label value`},
		{"plan", "grpc_port is management_port", badExecutor(`management_port = 9090`),
			`management_port = 9090 is also grpc_port (default 9090; management_port's default is 9091): the executor's gRPC and management servers listen in the same container and need different ports.`},
		{"plan", "an env too large to store", badPerformer(`env = { BIG = format("%01100000d", 0) }`),
			`env holds 1100003 bytes of names and values; Kubernetes cannot store an object that large`},
		// Hourglass compatibility mode: what Hourglass's executor needs, named at plan.
		{"plan", "hourglass_compat without operator_address", badExecutor(`hourglass_compat = {}`),
			`operator_address: hourglass_compat needs the operator's address: Hourglass's executor requires operator.address.`},
		{"plan", "hourglass_compat with a raw BLS key", strings.Replace(badExecutor("hourglass_compat = {}\n  operator_address = \""+addr+"\""), `ecdsa_key = "e" }`, `ecdsa_key = "e", bls_key = "b" }`, 1),
			`operator_keys.bls_key: hourglass_compat: Hourglass's executor reads a BLS keystore (bls_keystore_key); it has no raw BLS key`},
		{"plan", "hourglass_compat with performer_names", badExecutor("hourglass_compat = {}\n  operator_address = \"" + addr + "\"\n  performer_names = [\"p\"]"),
			`performer_names: hourglass_compat: Hourglass's executor creates its own performers from avs_performers and reads no performer endpoints. Remove performer_names.`},
		{"plan", "hourglass_compat l1_chain not a chain", badExecutor("hourglass_compat = { l1_chain = \"base\" }\n  operator_address = \"" + addr + "\""),
			`hourglass_compat.l1_chain: l1_chain = "base" is not one of chains (ethereum).`},
		{"plan", "hourglass_compat image without a tag", badExecutor("hourglass_compat = {}\n  operator_address = \"" + addr + "\"\n  avs_performers = [{ avs_address = \"" + addr + "\", image = \"ghcr.io/acme/perf\" }]"),
			`avs_performers[0].image: hourglass_compat: "ghcr.io/acme/perf" must be repository:tag without a digest`},
		// config_format = "hourglass-executor-v1alpha1": what the HourglassExecutor operator's config has no place for.
		{"plan", "config_format not a format", badExecutor(`hourglass_compat = { config_format = "v1alpha1" }`),
			`hourglass_compat.config_format value must be one of: ["ponos" "hourglass-executor-v1alpha1"]`},
		{"plan", "hourglass-executor-v1alpha1 with avs_performers", badExecutor(hgV1 + "\n  avs_performers = [{ avs_address = \"" + addr + "\", image = \"p:1\" }]"),
			`avs_performers: hourglass_compat.config_format = "hourglass-executor-v1alpha1": the HourglassExecutor operator's config has no AVS performers, so its executor would never see it.`},
		{"plan", "hourglass-executor-v1alpha1 with l1_chain", badExecutor(`hourglass_compat = { config_format = "hourglass-executor-v1alpha1", l1_chain = "ethereum" }`),
			`hourglass_compat.l1_chain: hourglass_compat.config_format = "hourglass-executor-v1alpha1": the HourglassExecutor operator's config has no l1Chain`},
		{"plan", "hourglass-executor-v1alpha1 with another grpc_port", badExecutor(hgV1 + "\n  grpc_port = 9000"),
			`grpc_port: hourglass_compat.config_format = "hourglass-executor-v1alpha1": grpc_port = 9000, but that executor listens on 9090`},
		{"plan", "hourglass-executor-v1alpha1 with management_port", badExecutor(hgV1 + "\n  management_port = 9001"),
			`management_port: hourglass_compat.config_format = "hourglass-executor-v1alpha1": the HourglassExecutor operator's config has no management server port`},
		{"plan", "hourglass-executor-v1alpha1 with a BLS keystore", strings.Replace(badExecutor(hgV1), `ecdsa_key = "e" }`, `ecdsa_key = "e", bls_keystore_key = "ks" }`, 1),
			`operator_keys.bls_keystore_key: hourglass_compat.config_format = "hourglass-executor-v1alpha1": the keys reach that executor only as the environment variables ECDSA_PRIVATE_KEY and BLS_PRIVATE_KEY`},
		{"plan", "hourglass-executor-v1alpha1 with performer_names", badExecutor(hgV1 + "\n  performer_names = [\"p\"]"),
			`performer_names: hourglass_compat: Hourglass's executor creates its own performers from avs_performers and reads no performer endpoints. Remove performer_names.`},
		// Accepted but wrong.
		{"wrong", "manage_performers without an image", badExecutor("manage_performers = true\n  avs_performers = [{ avs_address = \"" + addr + "\" }]"),
			`avs_performers[0].image: manage_performers = true makes the executor deploy each AVS's performer from its image, but the AVS ` + addr + ` has none`},
		{"wrong", "a wave that contradicts the set's selector", packageSet("node_selector = { pool = \"a\" }\n  rollout = { waves = [{ name = \"w1\", node_selector = { pool = \"b\" } }] }"),
			`rollout.waves[0].node_selector["pool"] = "b" contradicts node_selector["pool"] = "a": the set runs only on nodes labelled pool=a, so this wave could pick none of them.`},
		{"wrong", "a GPU product that is not a label value", `data "gantry_nodes" "h100" {
  gpu_product = "NVIDIA H100 80GB"
}`, `gpu_product: "NVIDIA H100 80GB" is not a nvidia.com/gpu.product label value`},
		{"wrong", "a GPU product's closest names", `data "gantry_nodes" "h100" {
  gpu_product = "NVIDIA H100 80GB"
}`, `GPU feature discovery writes spaces as '-'. Closest known products: NVIDIA-H100-NVL, NVIDIA-H100-80GB-HBM3.`},
		// Found by a sweep of 529 bad inputs at plan (each wrong, each planned before).
		{"wrong", "an image reference with a space", strings.Replace(badPerformer(""), `image = "i"`, `image = "ghcr.io/acme/performer 1.2.0"`, 1),
			`image: "ghcr.io/acme/performer 1.2.0" is not a container image reference`},
		{"wrong", "an image with an upper-case repository", strings.Replace(packageSet(""), `image = "x"`, `image = "ghcr.io/ACME/x"`, 1),
			`packages[0].image: "ghcr.io/ACME/x" is not a container image reference`},
		{"wrong", "a priority class that is not an object name", badPerformer(`priority_class_name = "Avs_Critical"`),
			`priority_class_name: "Avs_Critical" is not a valid priority class name`},
		{"wrong", "an image pull secret that is not an object name", badExecutor(`image_pull_secrets = ["Bad_Secret"]`),
			`image_pull_secrets[0]: "Bad_Secret" is not a valid Secret name`},
		{"wrong", "a toleration with Exists and a value", badWorkspace("resource = { count = 1, gpu_count = 1 }\n  inference = { model = \"m\", image = \"i\" }\n  tolerations = [{ key = \"k\", operator = \"Exists\", value = \"v\" }]"),
			`tolerations[0].value: operator "Exists" takes no value (got "v")`},
		{"wrong", "toleration_seconds without NoExecute", badExecutor(`tolerations = [{ key = "k", operator = "Exists", effect = "NoSchedule", toleration_seconds = 30 }]`),
			`tolerations[0].toleration_seconds: toleration_seconds applies only to effect "NoExecute"`},
		{"wrong", "a number that would wrap in the CRD's int32", packageSet(`priority = 4294967297`),
			`Attribute priority value must be between -2147483648 and 2147483647, got: 4294967297`},
		{"wrong", "more node_selector entries than the CRD takes", badPerformer("node_selector = {" + manyLabels(65) + "}"),
			`Attribute node_selector map must contain at most 64 elements, got: 65`},
		{"wrong", "a workspace namespace that is not a DNS label", badWorkspace("namespace = \"Models\"\n  resource = { count = 1, gpu_count = 1 }\n  inference = { model = \"m\", image = \"i\" }"),
			`Attribute namespace must be a DNS-1123 label`},
		{"wrong", "a performer name that cannot be one", badExecutor(`performer_names = ["Bad_Name"]`),
			`must be a gantry_performer name: a DNS-1035 label of at most 53 characters`},
		{"wrong", "one AVS written in two cases", badExecutor("avs_performers = [{ avs_address = \"" + strings.ToUpper(addr[:3]) + addr[3:] + "\" }, { avs_address = \"" + addr + "\" }]"),
			`avs_performers[1].avs_address: avs_address "` + addr + `" is already used by avs_performers[0]`},
		{"wrong", "two waves of one name", packageSet(`rollout = { waves = [{ name = "w", node_selector = { a = "1" } }, { name = "w", node_selector = { a = "2" } }] }`),
			`rollout.waves[1].name: name "w" is already used by rollout.waves[0]`},
		{"wrong", "a node edge reason longer than the CRD allows", packageSet(`rollout = { node_edges = [{ before = "a", after = "b", reason = "` + strings.Repeat("r", 257) + `" }] }`),
			`Attribute rollout.node_edges[0].reason string length must be between 1 and 256, got: 257`},
		{"wrong", "a fleet budget with a count and a percentage", packageSet(`rollout = { fleet_budget = { name = "f", max_in_flight = 2, max_in_flight_pct = 25 } }`),
			`2 attributes specified when one (and only one) of [rollout.fleet_budget.max_in_flight.<.max_in_flight,rollout.fleet_budget.max_in_flight.<.max_in_flight_pct] is required`},
		{"wrong", "a fleet budget with neither a count nor a percentage", packageSet(`rollout = { fleet_budget = { name = "f" } }`),
			`No attribute specified when one (and only one) of [rollout.fleet_budget.max_in_flight.<.max_in_flight,rollout.fleet_budget.max_in_flight.<.max_in_flight_pct] is required`},
		{"wrong", "two after_converged entries naming one set", packageSet(`after_converged = [{ name = "canary" }, { name = "canary", reason = "again" }]`),
			`after_converged[1].name: name "canary" is already used by after_converged[0]`},
		{"wrong", "an after_converged reason longer than the CRD allows", packageSet(`after_converged = [{ name = "canary", reason = "` + strings.Repeat("r", 257) + `" }]`),
			`Attribute after_converged[0].reason string length must be between 1 and 256, got: 257`},
		{"wrong", "a fleet budget node_selector key that is no label", packageSet(`rollout = { fleet_budget = { name = "f", max_in_flight = 1, node_selector = { "bad key" = "a" } } }`),
			`rollout.fleet_budget.node_selector["bad key"]: "bad key" is not a valid label key`},
		{"wrong", "a fleet budget selector expression In without values", packageSet(`rollout = { fleet_budget = { name = "f", max_in_flight = 1, node_selector_expressions = [{ key = "rack", operator = "In" }] } }`),
			`node_selector_expressions[0]: operator In needs at least one value.`},
		{"wrong", "a fleet budget percentage above 100", packageSet(`rollout = { fleet_budget = { name = "f", max_in_flight_pct = 101 } }`),
			`Attribute rollout.fleet_budget.max_in_flight_pct value must be between 1 and 100, got: 101`},
		{"wrong", "a gantry_nodes label that is no label", `data "gantry_nodes" "n" {
  labels = { "bad key" = "x" }
}`, `labels: "bad key" is not a valid label key`},
		{"wrong", "a negative memory limit", badPerformer(`resources = { limits = { memory = "-1Gi" } }`),
			`resources.limits["memory"] = "-1Gi": a quantity must be zero or more.`},
		{"wrong", "a resource that is not one", badPerformer(`resources = { requests = { gpu = "1" } }`),
			`resources.requests["gpu"]: "gpu" is not a container resource: use cpu, memory, ephemeral-storage, hugepages-<size>, or a name with a domain such as nvidia.com/gpu.`},
		{"wrong", "a stage timeout under a second", strings.Replace(packageSet(""), `image = "x" }`, `image = "x", stage_timeout = "500ms" }`, 1),
			`packages[0].stage_timeout = "500ms" is shorter than 1s.`},
		{"wrong", "a root mount path with '..'", strings.Replace(packageSet(""), `image = "x" }`, `image = "x", host = { root_mount_path = "/host/../etc" } }`, 1),
			`packages[0].host.root_mount_path: "/host/../etc" has a '..' element, which a container mount path cannot have.`},
		{"wrong", "a node_selector against gpu_type", badPerformer("node_selector = { \"nvidia.com/gpu.product\" = \"A100\" }\n  hardware_requirements = { gpu_count = 1, gpu_type = \"H100\" }"),
			`requires "H100": no node can satisfy both.`},
		{"wrong", "an affinity operator in lower case", badPerformer(`affinity = jsonencode({ nodeAffinity = { requiredDuringSchedulingIgnoredDuringExecution = { nodeSelectorTerms = [{ matchExpressions = [{ key = "zone", operator = "in", values = ["a"] }] }] } } })`),
			`nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator "in" is not In, NotIn, Exists, DoesNotExist, Gt or Lt`},
		{"wrong", "a pod anti-affinity without topologyKey", badPerformer(`affinity = jsonencode({ podAntiAffinity = { requiredDuringSchedulingIgnoredDuringExecution = [{ labelSelector = { matchLabels = { app = "x" } } }] } })`),
			`podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey is empty`},
		{"wrong", "an aggregator port out of range", strings.Replace(badExecutor(""), `aggregator_endpoint = "agg:9010"`, `aggregator_endpoint = "aggregator:99999"`, 1),
			`port "99999" is not a number from 1 to 65535.`},
		{"wrong", "an interrupt service that is no unit name", strings.Replace(packageSet(""), `image = "x" }`, `image = "x", interrupt = { type = "service", services = ["containerd; reboot"] } }`, 1),
			`must be a systemd unit name`},
		{"wrong", "a zero timeout", badPerformer(`timeouts = { create = "0s" }`),
			`timeouts.create = "0s": a timeout of zero ends the wait before it starts`},
		{"wrong", "a selector expression against the node_selector", packageSet("node_selector = { zone = \"a\" }\n  node_selector_expressions = [{ key = \"zone\", operator = \"NotIn\", values = [\"a\"] }]"),
			`node_selector_expressions[0] (zone NotIn) contradicts node_selector["zone"] = "a": no node can meet both`},
		{"unclear", "model_gpus no group can have", badWorkspace("resource = { count = 1, gpu_count = 1 }\n  inference = { model = \"m\", image = \"i\", model_gpus = 100 }"),
			`inference.model_gpus = 100 but resource.gpu_count = 1: that takes 100 replicas, and resource.count is at most 64.`},
		{"unclear", "a fraction in a data source", `data "gantry_nodes" "n" {
  min_nodes = 1.5
}`, `min_nodes = 1.5: this attribute takes a whole number`},
		// Unclear before.
		{"unclear", "a number too large for an integer", badPerformer(`grpc_port = 1e30`),
			`grpc_port = 1e+30: this attribute takes a whole number from -9223372036854775808 to 9223372036854775807; this one is too large to hold.`},
		{"unclear", "a duplicate performer name", badExecutor(`performer_names = ["a", "b", "a"]`),
			`performer_names[2]: "a" appears twice in performer_names (also at performer_names[0]).`},
	}
	for _, tc := range cases {
		t.Run(tc.class+": "+tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      fmt.Sprintf("provider \"gantry\" {}\n%s", tc.config),
					PlanOnly:    true,
					ExpectError: words(tc.want),
				}},
			})
		})
	}
}

// An object too large to store is refused by the API server (etcd's limit, answered as a 500)
// and the apply fails on the first refusal, naming the cause, instead of retrying it as a
// transient error until the create timeout ("... retried for 1m59s, 24 attempts").
func TestAccBadInput_objectTooLargeNotRetried(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-big")
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			// 0.9 MiB of env (under the plan-time bound) and 0.9 MiB of args: 1.8 MiB in all.
			Config: fmt.Sprintf(`
resource "gantry_performer" "big" {
  name      = "big"
  namespace = %q
  image     = "ghcr.io/acme/performer:1"
  env       = { BIG = format("%%0900000d", 0) }
  args      = [format("%%0900000d", 1)]
}
`, ns),
			// A retried error would read "... retried it with backoff until the timeout".
			ExpectError: regexp.MustCompile(`(?s)refused\s+the\s+request\s+\(object\s+too\s+large\s+for\s+etcd.*it\s+is\s+not\s+retried`),
		}},
	})
}
