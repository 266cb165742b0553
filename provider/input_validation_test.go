package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// Every bad input fails at plan with the real CLI and no cluster, and the message names the
// exact attribute.
func TestInputValidation_namesTheAttribute(t *testing.T) {
	requireTerraform(t)
	unreachableCluster(t)
	packageSet := func(set, pkg string) string {
		return "resource \"gantry_package_set\" \"bad\" {\n  name = \"bad\"\n" + set +
			"\n  packages = [{ name = \"aa\", version = \"1.0.0\", image = \"x\"\n" + pkg + "\n  }]\n}\n"
	}
	long := strings.Repeat("x", 64)
	cases := []struct{ name, config, want string }{
		// labels, annotations, selectors
		{"label key", badPerformer(`labels = { "bad key!" = "x" }`), `labels: "bad key!" is not a valid label key`},
		{"label value", badPerformer(`labels = { a = "` + long + `" }`), `labels["a"]: "` + long + `" is not a valid label value`},
		{"annotation key", badPerformer(`annotations = { "a/b/c" = "1" }`), `annotations: "a/b/c" is not a valid annotation key`},
		{"annotations size", badPerformer(`annotations = { a = format("%0300000d", 0) }`), `annotations: annotations size 300001 is larger than limit 262144`},
		{"node_selector value", badPerformer(`node_selector = { "gantry.dev/pool" = "has space" }`), `node_selector["gantry.dev/pool"]: "has space" is not a valid label value`},
		{"custom_labels key", badPerformer(`hardware_requirements = { custom_labels = { "-x" = "1" } }`), `hardware_requirements.custom_labels: "-x" is not a valid label key`},
		{"performer_selector", badExecutor(`performer_selector = { tier = "a b" }`), `performer_selector["tier"]: "a b" is not a valid label value`},
		{"label_selector", badWorkspace("resource = { count = 1, label_selector = { \"x/\" = \"1\" } }\n  inference = { model = \"m\", image = \"i\" }"), `resource.label_selector: "x/" is not a valid label key`},
		{"pod_annotations", packageSet("", `pod_annotations = { "/x" = "1" }`), `packages[0].pod_annotations: "/x" is not a valid annotation key`},
		{"pod_non_interrupt_labels", packageSet(`pod_non_interrupt_labels = { app = "-bad" }`, ""), `pod_non_interrupt_labels["app"]: "-bad" is not a valid label value`},
		// quantities, requests and limits
		{"quantity", badPerformer(`resources = { requests = { cpu = "lots" } }`), `resources.requests["cpu"] = "lots" is not a Kubernetes quantity`},
		{"request over limit", badPerformer(`resources = {
    requests = { memory = "2Gi" }
    limits   = { memory = "1Gi" }
  }`), `resources.requests["memory"] = "2Gi" is more than resources.limits["memory"] = "1Gi"`},
		{"package request over limit", packageSet("", `resources = { requests = { cpu = "2" }, limits = { cpu = "500m" } }`), `packages[0].resources.requests["cpu"] = "2" is more than packages[0].resources.limits["cpu"] = "500m"`},
		// durations and timeouts
		{"negative timeout", badPerformer(`timeouts = { create = "-1m" }`), `timeouts.create = "-1m" is not a non-negative duration`},
		{"bad timeout", badWorkspace("resource = { count = 1 }\n  inference = { model = \"m\", image = \"i\" }\n  timeouts = { update = \"soon\" }"), `timeouts.update = "soon" is not a non-negative duration`},
		{"duration", packageSet("", `graceful_shutdown = "soon"`), `packages[0].graceful_shutdown = "soon" is not a non-negative duration`},
		// whole numbers and ports
		{"fractional port", badPerformer(`grpc_port = 9090.5`), `grpc_port = 9090.5: this attribute takes a whole number`},
		{"fractional inference port", badWorkspace("resource = { count = 1 }\n  inference = { model = \"m\", image = \"i\", port = 8000.5 }"), `inference.port = 8000.5: this attribute takes a whole number`},
		{"fractional priority", packageSet(`priority = 1.5`, ""), `priority = 1.5: this attribute takes a whole number`},
		{"port zero", badPerformer(`grpc_port = 0`), `Attribute grpc_port value must be between 1 and 65535, got: 0`},
		// exactly one of
		{"env_from both refs", badPerformer(`env_from = [{
    name               = "K"
    secret_key_ref     = { name = "s", key = "k" }
    config_map_key_ref = { name = "c", key = "k" }
  }]`), `Set exactly one of env_from[0].config_map_key_ref or env_from[0].secret_key_ref, not env_from[0].config_map_key_ref and env_from[0].secret_key_ref`},
		{"env_from no ref", badPerformer(`env_from = [{ name = "K" }]`), `Set exactly one of env_from[0].config_map_key_ref or env_from[0].secret_key_ref: none is set`},
		{"names and selector", badExecutor("performer_names = [\"a\"]\n  performer_selector = { tier = \"x\" }"), `cannot be specified when`},
		{"inference and tuning", badWorkspace("resource = { count = 1 }\n  inference = { model = \"m\", image = \"i\" }\n  tuning = { method = \"lora\", base_model = \"b\", image = \"i\", input_urls = [\"https://x\"], output_image = \"o\" }"),
			`Set exactly one of inference or tuning, not inference and tuning`},
		{"budget percent and count", packageSet(`interruption_budget = { percent = 10, count = 1 }`, ""), `Set exactly one of interruption_budget.count or interruption_budget.percent, not`},
		// duplicates and references
		{"duplicate env_from", badPerformer(`env_from = [
    { name = "K", secret_key_ref = { name = "s", key = "k" } },
    { name = "K", secret_key_ref = { name = "s", key = "j" } },
  ]`), `env_from[1].name: name "K" is already used by env_from[0]`},
		{"duplicate package env_from", packageSet("", `env_from = [
    { name = "K", secret_key_ref = { name = "s", key = "k" } },
    { name = "K", secret_key_ref = { name = "s", key = "j" } },
  ]`), `packages[0].env_from[1].name: name "K" is already used by packages[0].env_from[0]`},
		{"depends_on", packageSet("", `depends_on = { zz = "1.0.0" }`), `packages[0].depends_on["zz"]: package "aa" depends on zz 1.0.0`},
		{"config_interrupts key", packageSet("", "config = { a = \"1\" }\n  config_interrupts = { b = { type = \"reboot\" } }"), `packages[0].config_interrupts["b"]: config_interrupts key "b" is not a key of packages[0].config`},
		// names from which a Service is derived (performer-<name> is a DNS-1035 label <= 63)
		{"performer name too long", "resource \"gantry_performer\" \"bad\" {\n  name  = \"" + strings.Repeat("a", 54) + "\"\n  image = \"i\"\n}\n", `Attribute name string length must be between 1 and 53`},
		{"performer name not DNS-1035", "resource \"gantry_performer\" \"bad\" {\n  name  = \"1abc\"\n  image = \"i\"\n}\n", `Attribute name must be a DNS-1035 label`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
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
