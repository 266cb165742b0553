package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	cryptorand "crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
)

// testAccProtoV6ProviderFactories serve the provider in-process to the Terraform CLI of every
// test (acceptance and plan-only).
var testAccProtoV6ProviderFactories = map[string]func() (tfprotov6.ProviderServer, error){
	"gantry": func() (tfprotov6.ProviderServer, error) { return Server("test"), nil },
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
	_ = os.Setenv("TF_ACC_TERRAFORM_PATH", p) //nolint:usetesting // see above
}

// testAccPreCheck checks what acceptance tests need beyond TF_ACC: the CLI and a cluster
// (KUBE_CONFIG_PATH, which the provider reads) with the reconciler running.
func testAccPreCheck(t *testing.T) {
	t.Helper()
	requireTerraform(t)
	if os.Getenv("KUBE_CONFIG_PATH") == "" {
		t.Fatal("KUBE_CONFIG_PATH must point at the test cluster's kubeconfig (make cluster: .cache/cluster/kubeconfig)")
	}
	_ = os.Setenv("CHECKPOINT_DISABLE", "1") //nolint:usetesting // process-wide, parallel tests; no version check calls to checkpoint-api.hashicorp.com
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
	// Pods are admitted only once the namespace's default ServiceAccount exists (created by
	// kube-controller-manager a moment later, or later still while it re-lists after an
	// outage test): wait for it, as a user's namespace would have it.
	if err := kwait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Core.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("namespace %s has no default ServiceAccount: %v", ns, err)
	}
	return ns
}

// The provider makes no API call at plan time: a plan against an unreachable API server
// succeeds and already knows id, service_name and grpc_endpoint.
func TestProvider_PlanNeedsNoCluster(t *testing.T) {
	requireTerraform(t)
	t.Setenv("KUBE_CONFIG_PATH", "")
	unreachableCluster(t)
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
resource "terraform_data" "ca" { input = "not known at plan" }
provider "gantry" {
  host  = terraform_data.cluster.output
  cluster_ca_certificate = terraform_data.ca.output
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
	t.Setenv("KUBE_CONFIG_PATH", "")
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-kubeconfig")
	kubeconfig := filepath.Join(dir, "kubeconfig.yaml")
	junk := filepath.Join(dir, "junk.yaml")
	if err := os.WriteFile(kubeconfig, []byte(twoContextKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(junk, []byte("clusters: [not: a, kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	certPEM, _ := testCertificate(t)
	_, otherKeyPEM := testCertificate(t)
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
		{"exec api_version", `exec {
    api_version = "client.authentication.k8s.io/v1alpha1"
    command     = "aws"
  }`, `(?s)exec.api_version.*value must be one of.*client.authentication.k8s.io/v1`},
		{"host scheme", `host = "ftp://203.0.113.10:6443"`, `(?s)Invalid Provider Configuration.*host: "ftp://203.0.113.10:6443": scheme "ftp"`},
		{"host port", `host = "https://203.0.113.10:99999"`, `(?s)host: .*port "99999" is not a number from 1 to 65535`},
		{"host syntax", `host = "https://api example:6443"`, `(?s)host: "https://api example:6443" is not a URL`},
		{"config_path unreadable", `config_path = "` + missing + `"`, `(?s)config_path: kubeconfig ".*no-such-kubeconfig" cannot be read`},
		{"config_paths unreadable", `config_paths = ["` + kubeconfig + `", "` + missing + `"]`, `(?s)config_paths\[1\]: kubeconfig ".*no-such-kubeconfig" cannot\s+be read`},
		{"config_path unparsable", `config_path = "` + junk + `"`, `(?s)config_path: kubeconfig ".*junk.yaml" does not parse`},
		{"unknown context", `config_path = "` + kubeconfig + `"
  config_context = "prod"`, `(?s)config_context: the kubeconfig has no context "prod" \(it has: dev, staging\)`},
		{"unknown context cluster", `config_path = "` + kubeconfig + `"
  config_context_cluster = "prod"`, `(?s)config_context_cluster: the kubeconfig has no cluster "prod"`},
		{"CA not PEM", `cluster_ca_certificate = "not a certificate"`, `(?s)cluster_ca_certificate: no PEM-encoded certificate found`},
		{"client key is a certificate", `client_certificate = <<-EOT
` + certPEM + `EOT
  client_key = <<-EOT
` + certPEM + `EOT`, `(?s)client_key: the PEM block is a "CERTIFICATE", want a private key`},
		{"client key of another certificate", `client_certificate = <<-EOT
` + certPEM + `EOT
  client_key = <<-EOT
` + otherKeyPEM + `EOT`, `(?s)client_certificate and client_key are not a key pair`},
		{"connect_timeout", `connect_timeout = "20"`, `(?s)connect_timeout: "20" is not a duration`},
		{"proxy_url without a scheme", `proxy_url = "proxy.internal:3128"`, `(?s)Invalid Proxy URL.*proxy_url: "proxy.internal:3128" has scheme "proxy.internal"; a proxy URL starts with http://`},
		{"exec plugin missing", `exec {
    api_version = "client.authentication.k8s.io/v1"
    command     = "gantry-no-such-credential-plugin"
  }`, `(?s)Credential Plugin Not Found.*gantry-no-such-credential-plugin.*cannot\s+be\s+run\s+on\s+the\s+machine\s+Terraform\s+runs\s+on`},
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
					ExpectError: regexp.MustCompile(wrapped(tc.err)),
				}},
			})
		})
	}
}

const twoContextKubeconfig = `apiVersion: v1
kind: Config
current-context: dev
clusters:
- {name: dev, cluster: {server: "https://127.0.0.1:1"}}
- {name: staging, cluster: {server: "https://127.0.0.1:2"}}
users:
- {name: dev, user: {token: unused}}
contexts:
- {name: dev, context: {cluster: dev, user: dev}}
- {name: staging, context: {cluster: staging, user: dev}}
`

// testCertificate returns a fresh self-signed CA certificate and its private key, PEM-encoded.
func testCertificate(t *testing.T) (certPEM, keyPEM string) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), cryptorand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gantry-test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(cryptorand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}))
}

// wrapped lets the spaces of an error pattern match the line breaks Terraform wraps
// diagnostics with.
func wrapped(pattern string) string {
	return strings.ReplaceAll(pattern, " ", `\s+`)
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

// closedPortURL returns an https URL on 127.0.0.1 where nothing listens.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "https://" + addr
}

// unreachableConfig is a provider pointed at host plus a performer; with importBlock, a plan
// imports (and so reads) an existing performer, which is how a refresh contacts the cluster.
func unreachableConfig(provider string, importBlock bool) string {
	cfg := "provider \"gantry\" {\n" + provider + "\n}\n" + `
resource "gantry_performer" "p" {
  name      = "unreachable"
  namespace = "default"
  image     = "ghcr.io/acme/performer:1"
}
`
	if importBlock {
		cfg += `
import {
  to = gantry_performer.p
  id = "default/unreachable"
}
`
	}
	return cfg
}

// An API server that cannot be reached fails plan (refresh/import) and apply within
// connect_timeout, quoting the dial or DNS error, instead of retrying until Terraform is
// killed. The bound is named in the error (the tests do not time it; see the report).
func TestProvider_UnreachableFailsWithinBound(t *testing.T) {
	requireTerraform(t)
	t.Setenv("KUBE_CONFIG_PATH", "")
	t.Setenv("KUBE_CONFIG_PATHS", "")
	t.Setenv("KUBE_CONNECT_TIMEOUT", "")
	closed := closedPortURL(t)
	cases := []struct {
		name     string
		provider string
		env      map[string]string
		plan     bool
		want     string
	}{
		{
			name:     "closed port, plan",
			provider: `  host = "` + closed + `"` + "\n  token = \"unused\"\n  connect_timeout = \"5s\"",
			plan:     true,
			want:     `cannot reach the Kubernetes API server ` + regexp.QuoteMeta(closed) + ` within 5s \(connect_timeout, KUBE_CONNECT_TIMEOUT; \d+ attempts\):.*connect: connection refused`,
		},
		{
			name:     "closed port, apply",
			provider: `  host = "` + closed + `"` + "\n  token = \"unused\"\n  connect_timeout = \"5s\"",
			want:     `cannot reach the Kubernetes API server ` + regexp.QuoteMeta(closed) + ` within 5s .*connection refused`,
		},
		{
			name:     "unresolvable host, plan, bound from KUBE_CONNECT_TIMEOUT",
			provider: `  host = "https://gantry-unreachable.invalid:6443"` + "\n  token = \"unused\"",
			env:      map[string]string{"KUBE_CONNECT_TIMEOUT": "4s"},
			plan:     true,
			want:     `cannot reach the Kubernetes API server https://gantry-unreachable.invalid:6443 within 4s .*lookup gantry-unreachable.invalid`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
				Steps: []resource.TestStep{{
					Config:      unreachableConfig(tc.provider, tc.plan),
					PlanOnly:    tc.plan,
					ExpectError: regexp.MustCompile(`(?s)` + wrapped(tc.want)),
				}},
			})
		})
	}
}

// The local cluster's API server with a CA that did not sign its certificate: plan fails at
// once (a certificate error is not retried), quoting the TLS error.
func TestAccProvider_TLSMismatchFailsAtOnce(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	host := testClients(t).Config.Host
	if !strings.HasPrefix(host, "https://") {
		t.Skipf("the test cluster serves %s, not https", host)
	}
	ca, _ := testCertificate(t)
	t.Setenv("KUBE_CONFIG_PATH", "")
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{{
			Config: unreachableConfig(`  host = "`+host+`"
  token = "unused"
  cluster_ca_certificate = <<-EOT
`+ca+`EOT`, true),
			PlanOnly: true,
			ExpectError: regexp.MustCompile(`(?s)` + wrapped(`cannot connect to the Kubernetes API server `+regexp.QuoteMeta(host)+
				`:.*x509: certificate signed by unknown authority.*not retried`)),
		}},
	})
}

// execPluginScript is a client-go credential plugin: it appends a line to $COUNT_FILE and prints
// the ServiceAccount token in $TOKEN_FILE as an ExecCredential that expires in
// $EXPIRES_SECONDS, so client-go must run it again for any request after that.
const execPluginScript = `#!/bin/sh
set -e
echo "$(date -u +%H:%M:%S.%N)" >> "$COUNT_FILE"
exp=$(date -u -d "+${EXPIRES_SECONDS} seconds" +%Y-%m-%dT%H:%M:%SZ)
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$(cat "$TOKEN_FILE")" "$exp"
`

// The exec plugin is run again when its credential expires during an apply (the provider caches
// no token), and an exported KUBE_TOKEN does not replace it: two performers are created 6 s
// apart (a terraform_data sleeps between them) with a credential that expires after 3 s, and
// the apply counts the plugin's runs. A provider that cached the first token, or used the bogus
// KUBE_TOKEN, fails the count or the apply.
func TestAccProvider_ExecCredentialRefreshed(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-exec")
	ctx := context.Background()

	// A ServiceAccount bound to cluster-admin; the plugin hands out its token.
	sa := "terraform-runner"
	if _, err := c.Core.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			t.Skipf("the test's own credentials cannot create a ServiceAccount (a least-privilege run): %v", err)
		}
		t.Fatal(err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "gantry-test-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}},
	}
	if _, err := c.Core.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			t.Skipf("the test's own credentials cannot bind a ClusterRole (a least-privilege run): %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Core.RbacV1().ClusterRoleBindings().Delete(context.Background(), crb.Name, metav1.DeleteOptions{})
	})
	exp := int64(1800)
	tr, err := c.Core.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("minting a ServiceAccount token: %v", err)
	}

	dir := t.TempDir()
	plugin, tokenFile, countFile := filepath.Join(dir, "plugin.sh"), filepath.Join(dir, "token"), filepath.Join(dir, "count")
	if err := os.WriteFile(plugin, []byte(execPluginScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte(tr.Status.Token), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := c.Config.CAData
	if len(ca) == 0 && c.Config.CAFile != "" {
		if ca, err = os.ReadFile(c.Config.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() int {
		b, _ := os.ReadFile(countFile)
		return strings.Count(string(b), "\n")
	}

	t.Setenv("KUBE_CONFIG_PATH", "")
	t.Setenv("KUBE_TOKEN", "bogus-token-from-the-environment")
	config := fmt.Sprintf(`
provider "gantry" {
  host                   = %q
  cluster_ca_certificate = %q
  exec {
    api_version = "client.authentication.k8s.io/v1"
    command     = %q
    env = {
      TOKEN_FILE      = %q
      COUNT_FILE      = %q
      EXPIRES_SECONDS = "3"
    }
  }
}
resource "gantry_performer" "first" {
  name      = "first"
  namespace = %q
  image     = "ghcr.io/acme/performer:1"
}
resource "terraform_data" "pause" {
  depends_on = [gantry_performer.first]
  provisioner "local-exec" { command = "sleep 6" }
}
resource "gantry_performer" "second" {
  depends_on = [terraform_data.pause]
  name       = "second"
  namespace  = %q
  image      = "ghcr.io/acme/performer:1"
}
`, c.Config.Host, string(ca), plugin, tokenFile, countFile, ns, ns)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue("gantry_performer.first", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
				statecheck.ExpectKnownValue("gantry_performer.second", tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
			},
			// Runs right after the apply, before any later plan starts another provider run.
			Check: func(*terraform.State) error {
				n := runs()
				t.Logf("exec plugin runs during the apply: %d", n)
				if n < 2 {
					return fmt.Errorf("the exec plugin ran %d time(s) during an apply that outlived its 3 s credential: the token was not refreshed", n)
				}
				return nil
			},
		}},
	})
}

// unreachableCluster points the provider at a port where nothing listens (KUBE_HOST, with a
// token so the configuration is complete) and bounds its connection attempts at 1s
// (KUBE_CONNECT_TIMEOUT; the default 20s is TestProvider_UnreachableFailsWithinBound's subject):
// for tests of what a plan does without a cluster, whose plans otherwise wait out the default
// bound on every resource that looks at the cluster (performer candidate nodes, a model's
// ConfigMap).
func unreachableCluster(t testing.TB) {
	t.Helper()
	t.Setenv("KUBE_HOST", "https://127.0.0.1:1")
	t.Setenv("KUBE_TOKEN", "unused")
	t.Setenv("KUBE_CONNECT_TIMEOUT", "1s")
}
