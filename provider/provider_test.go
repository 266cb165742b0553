package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// testAccProtoV6ProviderFactories serve the provider in-process to the Terraform CLI of every
// test (acceptance and plan-only).
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"gantry": providerserver.NewProtocol6WithError(New("test")()),
}

// requireTerraform makes terraform-plugin-testing use the pinned CLI (bin/terraform, v1.8.5)
// unless TF_ACC_TERRAFORM_PATH names one, and skips when there is none: the tests must never
// download Terraform.
func requireTerraform(t *testing.T) {
	t.Helper()
	if p := os.Getenv("TF_ACC_TERRAFORM_PATH"); p != "" {
		if _, err := os.Stat(p); err == nil {
			return
		}
	}
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "bin", "terraform")
	if _, err := os.Stat(p); err != nil {
		t.Skip("no Terraform CLI: set TF_ACC_TERRAFORM_PATH or run make tools (bin/terraform)")
	}
	// os.Setenv, not t.Setenv: parallel tests may not use t.Setenv, and the value is the same
	// for every test in the process.
	_ = os.Setenv("TF_ACC_TERRAFORM_PATH", p)
}

// testAccPreCheck checks what acceptance tests need beyond TF_ACC: the CLI and a cluster
// (KUBE_CONFIG_PATH, which the provider reads) with the reconciler running.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	requireTerraform(t)
	if os.Getenv("KUBE_CONFIG_PATH") == "" {
		t.Fatal("KUBE_CONFIG_PATH must point at the test cluster's kubeconfig (make cluster: .cache/cluster/kubeconfig)")
	}
	_ = os.Setenv("CHECKPOINT_DISABLE", "1") // no version check calls to checkpoint-api.hashicorp.com
}

// testClients returns admin clients for the test cluster (acceptance tests only), for fixtures
// and assertions: GANTRY_TEST_ADMIN_KUBECONFIG when set (the provider itself then runs with the
// least-privilege runner's KUBE_CONFIG_PATH, see hack/runner-rbac.sh), else KUBE_CONFIG_PATH.
func testClients(t *testing.T) *kube.Clients {
	t.Helper()
	path := os.Getenv("GANTRY_TEST_ADMIN_KUBECONFIG")
	if path == "" {
		path = os.Getenv("KUBE_CONFIG_PATH")
	}
	cfg, err := kube.RESTConfig(kube.Settings{ConfigPath: path, QPS: kube.DefaultQPS, Burst: kube.DefaultBurst})
	if err != nil {
		t.Fatal(err)
	}
	c, err := kube.NewClients(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// testNamespace creates a namespace of its own for one acceptance test (so tests run in
// parallel without name clashes) and deletes it when the test ends. With
// GANTRY_TEST_RUNNER_SA=<namespace>/<name> it also binds the runner's namespaced ClusterRole
// gantry-terraform-runner (config/terraform-runner) to that ServiceAccount there, as a
// platform team does for each namespace a configuration manages.
func testNamespace(t *testing.T, c *kube.Clients, prefix string) string {
	t.Helper()
	ns := prefix + "-" + rand.String(5)
	if _, err := c.Core.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if sa := os.Getenv("GANTRY_TEST_RUNNER_SA"); sa != "" {
		saNS, saName, _ := strings.Cut(sa, "/")
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "gantry-terraform-runner", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "gantry-terraform-runner"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: saNS, Name: saName}},
		}
		if _, err := c.Core.RbacV1().RoleBindings(ns).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Core.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return ns
}

// The provider makes no API call at plan time: a plan against an unreachable API server
// succeeds and already knows id, service_name and grpc_endpoint.
func TestProvider_PlanNeedsNoCluster(t *testing.T) {
	requireTerraform(t)
	t.Setenv("KUBE_CONFIG_PATH", "")
	t.Setenv("KUBE_HOST", "https://127.0.0.1:1") // nothing listens there
	t.Setenv("KUBE_TOKEN", "unused")
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
provider "gantry" {}
resource "gantry_performer" "p" {
  name      = "plan-only"
  namespace = "team-a"
  image     = "ghcr.io/acme/performer:1"
  grpc_port = 8080
  hardware_requirements = { gpu_count = 2, gpu_type = "NVIDIA-H100-80GB-HBM3" }
}
output "endpoint" { value = gantry_performer.p.grpc_endpoint }
`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
			ConfigPlanChecks:   planOnlyEndpointCheck("gantry_performer.p", "team-a/plan-only", "performer-plan-only", "performer-plan-only.team-a.svc.cluster.local:8080"),
		}},
	})
}

// Provider configuration values unknown at plan time (e.g. a host from a cluster created in
// the same run) do not fail the plan.
func TestProvider_UnknownConfigAtPlan(t *testing.T) {
	requireTerraform(t)
	resource.UnitTest(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: `
resource "terraform_data" "cluster" { input = "https://127.0.0.1:1" }
provider "gantry" {
  host  = terraform_data.cluster.output
  token = "unused"
  qps   = 20
  burst = 40
}
resource "gantry_performer" "p" {
  name  = "unknown-config"
  image = "ghcr.io/acme/performer:1"
}
`,
			PlanOnly:           true,
			ExpectNonEmptyPlan: true,
		}},
	})
}

func TestProvider_ConfigValidation(t *testing.T) {
	requireTerraform(t)
	cases := []struct {
		name   string
		config string
		err    string
	}{
		{"exec with token", `exec {
    api_version = "client.authentication.k8s.io/v1beta1"
    command     = "aws"
  }
  token = "x"`, `(?s)Invalid Attribute Combination.*exec.*token`},
		{"token with client certificate", `token = "x"
  client_certificate = "c"
  client_key = "k"`, `(?s)Invalid Attribute Combination.*token`},
		{"client certificate without key", `client_certificate = "c"`, `(?s)Invalid Attribute Combination.*client_key`},
		{"config_path and config_paths", `config_path = "/a"
  config_paths = ["/b"]`, `(?s)Invalid Attribute Combination.*config_path`},
		{"qps zero", `qps = 0`, `(?s)qps.*at least 1`},
		{"burst zero", `burst = 0`, `(?s)burst.*at least 1`},
		{"exec without command", `exec {
    api_version = "client.authentication.k8s.io/v1beta1"
  }`, `(?s)"exec.command" must be specified`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config: "provider \"gantry\" {\n  " + tc.config + "\n}\n" + `
resource "gantry_performer" "p" {
  name  = "cfg"
  image = "ghcr.io/acme/performer:1"
}
`,
					PlanOnly:    true,
					ExpectError: regexp.MustCompile(tc.err),
				}},
			})
		})
	}
}

func TestSettingsFromModel(t *testing.T) {
	m := gantryProviderModel{}
	s := settingsFromModel(m)
	if s.Insecure != nil || s.Exec != nil || s.QPS != 0 || s.Burst != 0 {
		t.Errorf("unset config must leave settings unset (for the environment to fill): %+v", s)
	}
}

// planOnlyEndpointCheck asserts the values ModifyPlan derives from name, namespace and
// grpc_port are known in the plan.
func planOnlyEndpointCheck(addr, id, service, endpoint string) resource.ConfigPlanChecks {
	return resource.ConfigPlanChecks{PostApplyPreRefresh: []plancheck.PlanCheck{
		plancheck.ExpectResourceAction(addr, plancheck.ResourceActionCreate),
		plancheck.ExpectKnownValue(addr, tfjsonpath.New("id"), knownvalue.StringExact(id)),
		plancheck.ExpectKnownValue(addr, tfjsonpath.New("service_name"), knownvalue.StringExact(service)),
		plancheck.ExpectKnownValue(addr, tfjsonpath.New("grpc_endpoint"), knownvalue.StringExact(endpoint)),
		plancheck.ExpectUnknownValue(addr, tfjsonpath.New("node_name")),
		plancheck.ExpectUnknownValue(addr, tfjsonpath.New("phase")),
	}}
}

func TestImportIDParsing(t *testing.T) {
	for _, tc := range []struct {
		id, ns, name string
		ok           bool
	}{
		{"default/my-performer", "default", "my-performer", true},
		{"team-a/p1", "team-a", "p1", true},
		{"my-performer", "", "", false},
		{"a/b/c", "", "", false},
		{"/b", "", "", false},
		{"a/", "", "", false},
		{"Bad_NS/x", "", "", false},
	} {
		ns, name, err := parseImportID("Performer", tc.id)
		if (err == nil) != tc.ok || ns != tc.ns || name != tc.name {
			t.Errorf("parseImportID(%q) = %q, %q, %v", tc.id, ns, name, err)
		}
	}
}
