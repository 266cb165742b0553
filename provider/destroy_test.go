package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

func TestIsDestroyCommand(t *testing.T) {
	for _, c := range []struct {
		argv string
		want bool
	}{
		{"terraform destroy -auto-approve", true},
		{"/usr/local/bin/terraform -chdir=infra destroy", true},
		{"tofu plan -destroy -out=p", true},
		{"terraform apply -destroy", true},
		{"terraform apply --destroy=true", true},
		{"terraform apply -auto-approve", false},
		{"terraform plan -out=destroy", false},
		{"terraform apply destroy.tfplan", false},
		{"terraform validate", false},
		{"terraform", false},
		{"", false},
	} {
		if got := IsDestroyCommand(strings.Fields(c.argv)); got != c.want {
			t.Errorf("IsDestroyCommand(%q) = %v, want %v", c.argv, got, c.want)
		}
	}
}

// While destroying, validation errors of a resource come back as warnings that say why; in
// any other command they stay errors. A planned deletion keeps its errors.
func TestDestroyTolerant(t *testing.T) {
	config := func(t *testing.T) *tfprotov6.DynamicValue {
		srv := providerserver.NewProtocol6(New("test")())()
		schemas, err := srv.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
		if err != nil {
			t.Fatal(err)
		}
		ty := schemas.ResourceSchemas["gantry_performer"].ValueType().(tftypes.Object)
		dv, err := tfprotov6.NewDynamicValue(ty, nullObject(ty, map[string]tftypes.Value{"name": tftypes.NewValue(tftypes.String, "p"),
			"image": tftypes.NewValue(tftypes.String, "ghcr.io/acme/performer:1"), "grpc_port": tftypes.NewValue(tftypes.Number, 70000)}))
		if err != nil {
			t.Fatal(err)
		}
		return &dv
	}
	cfg := config(t)
	for _, destroying := range []bool{false, true} {
		srv := DestroyTolerant(providerserver.NewProtocol6(New("test")())(), func() bool { return destroying })
		resp, err := srv.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "gantry_performer", Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		var found *tfprotov6.Diagnostic
		for _, d := range resp.Diagnostics {
			if strings.Contains(d.Detail, "grpc_port") {
				found = d
			}
		}
		switch {
		case found == nil:
			t.Fatalf("destroying=%v: no diagnostic on grpc_port: %+v", destroying, resp.Diagnostics)
		case !destroying && found.Severity != tfprotov6.DiagnosticSeverityError:
			t.Errorf("not destroying: %q is a %v, want an error", found.Summary, found.Severity)
		case destroying && (found.Severity != tfprotov6.DiagnosticSeverityWarning || !strings.Contains(found.Summary, "not enforced while destroying") ||
			!strings.HasPrefix(found.Detail, destroyingNote)):
			t.Errorf("destroying: %v %q %q, want a warning saying why", found.Severity, found.Summary, found.Detail)
		}
	}
	// tf6server finds list resources and actions by type assertion: the wrapper keeps them.
	wrapped := DestroyTolerant(providerserver.NewProtocol6(New("test")())(), nil)
	if _, ok := wrapped.(tfprotov6.ActionServer); !ok {
		t.Error("the wrapped server does not serve actions")
	}
	if _, ok := wrapped.(tfprotov6.ListResourceServer); !ok {
		t.Error("the wrapped server does not serve list resources")
	}
	if !deletion(nil) || !deletion(&tfprotov6.DynamicValue{MsgPack: []byte{0xc0}}) || deletion(cfg) {
		t.Error("deletion: a null proposed state is a deletion, a config is not")
	}
}

// A value known only at apply turns out invalid: the apply fails after it created other
// objects, and `terraform destroy` (the real CLI with the provider binary, as users run them)
// then removes everything, although the configuration still holds the invalid value. Without
// DestroyTolerant the destroy stops with the apply's error ("grpc_port value must be between 1
// and 65535, got: 70000") and removes nothing.
func TestAccDestroyAfterApplyFailedOnUnknownValue(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-dstr")
	pool := "acc-dstr-" + rand.String(5)
	accNodes(t, c, pool, 1)
	cli := newCLI(t)
	dir := cli.workdir(t, fmt.Sprintf(`
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

resource "terraform_data" "port" {
  input = 70000
}

module "performers" {
  source    = "./performers"
  namespace = %[1]q
  pool      = %[2]q
  ports     = { ok = 9090, bad = terraform_data.port.output }
}
`, ns, pool))
	if err := os.MkdirAll(filepath.Join(dir, "performers"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeMain(t, filepath.Join(dir, "performers"), `
terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}

variable "namespace" { type = string }
variable "pool" { type = string }
variable "ports" { type = map(number) }

resource "gantry_performer" "p" {
  for_each      = var.ports
  name          = "dstr-${each.key}"
  namespace     = var.namespace
  image         = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  grpc_port     = each.value
  node_selector = { "gantry.dev/test-pool" = var.pool }
  tolerations   = [{ key = "gantry.dev/test-pool", operator = "Exists" }, { key = "nvidia.com/gpu", operator = "Exists" }]
}
`)
	run := func(args ...string) (string, int) {
		t.Helper()
		out, code := cli.run(t, dir, append(args, "-input=false", "-no-color")...)
		t.Logf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
		return out, code
	}
	// terraform get installs the local module (the provider comes from dev_overrides).
	if out, code := cli.run(t, dir, "get", "-no-color"); code != 0 {
		t.Fatalf("terraform get: exit %d\n%s", code, out)
	}
	out, code := run("apply", "-auto-approve")
	if code == 0 || !strings.Contains(out, "grpc_port value must be between 1 and 65535, got: 70000") {
		t.Fatalf("apply: exit %d, want a failure on grpc_port 70000", code)
	}
	st := readState(t, dir)
	if _, ok := st["gantry_performer.p[ok]"]; !ok {
		t.Fatalf("the apply created no performer before it failed (state %v): the test needs one to destroy", st)
	}
	_, code = run("destroy", "-auto-approve")
	if code != 0 { // Terraform does not print the softened warnings of its pre-destroy refresh
		t.Fatalf("destroy: exit %d, want success although grpc_port is still 70000", code)
	}
	if st := readState(t, dir); len(st) != 0 {
		t.Errorf("state after destroy: %v", st)
	}
	for _, name := range []string{"dstr-ok", "dstr-bad"} {
		if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("Performer %s/%s after destroy: %v", ns, name, err)
		}
	}
	svcs, err := c.Core.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(svcs.Items) != 0 {
		t.Errorf("Services left in %s after destroy: %v %v", ns, svcs, err)
	}
}
