package provider

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Issue 38 item 7: a destroy is never blocked by a data source that cannot be read, nor by a
// provider configuration that only what needs the cluster would use; one diagnostic per
// input. The protocol tests below drive DestroyTolerant around the framework's server as
// Terraform drives it in the refresh before a destroy (ValidateProviderConfig, then
// ConfigureProvider on the same process, then ReadDataSource and ReadResource); the TF_ACC
// tests run the real CLI against the built binary (its destroy is read from the CLI's command
// line, which an in-process provider of terraform-plugin-testing does not have).

// destroySchemas is the provider's schemas as Terraform gets them.
func destroySchemas(t *testing.T) *tfprotov6.GetProviderSchemaResponse {
	t.Helper()
	s, err := providerserver.NewProtocol6(New("test")())().GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dynamicValue encodes an object of type ty with the given attributes set, the others null.
func dynamicValue(t *testing.T, ty tftypes.Type, set map[string]tftypes.Value) *tfprotov6.DynamicValue {
	t.Helper()
	obj := ty.(tftypes.Object) //nolint:forcetypeassert // schemas are objects
	dv, err := tfprotov6.NewDynamicValue(obj, nullObject(obj, set))
	if err != nil {
		t.Fatal(err)
	}
	return &dv
}

func tfStr(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }

// errorsOf returns the error diagnostics of ds as "summary: detail".
func errorsOf(ds []*tfprotov6.Diagnostic) []string {
	var out []string
	for _, d := range ds {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			out = append(out, d.Summary+": "+d.Detail)
		}
	}
	return out
}

// diagsText is ds as "severity summary: detail" lines.
func diagsText(ds []*tfprotov6.Diagnostic) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "\n  %s %s: %s", d.Severity, d.Summary, d.Detail)
	}
	return b.String()
}

// destroyRefresh is what the refresh before a destroy (destroying) or a plan asks the
// provider, with provider configuration cfg: the diagnostics of each request and the data
// sources' values.
type destroyRefresh struct {
	validate, configure, readDS, readNodes, readResource []*tfprotov6.Diagnostic
	performerDS, nodesDS                                 tftypes.Value
}

func runDestroyRefresh(t *testing.T, destroying bool, cfg map[string]tftypes.Value) destroyRefresh {
	t.Helper()
	ctx := context.Background()
	schemas := destroySchemas(t)
	srv := DestroyTolerant(providerserver.NewProtocol6(New("test")())(), func() bool { return destroying })
	var out destroyRefresh
	pcfg := dynamicValue(t, schemas.Provider.ValueType(), cfg)
	v, err := srv.ValidateProviderConfig(ctx, &tfprotov6.ValidateProviderConfigRequest{Config: pcfg})
	if err != nil {
		t.Fatal(err)
	}
	out.validate = v.Diagnostics
	c, err := srv.ConfigureProvider(ctx, &tfprotov6.ConfigureProviderRequest{Config: pcfg, TerraformVersion: "1.14.0"})
	if err != nil {
		t.Fatal(err)
	}
	out.configure = c.Diagnostics
	read := func(typ string, set map[string]tftypes.Value) ([]*tfprotov6.Diagnostic, tftypes.Value) {
		ty := schemas.DataSourceSchemas[typ].ValueType()
		r, err := srv.ReadDataSource(ctx, &tfprotov6.ReadDataSourceRequest{TypeName: typ, Config: dynamicValue(t, ty, set)})
		if err != nil {
			t.Fatal(err)
		}
		if r.State == nil {
			return r.Diagnostics, tftypes.Value{}
		}
		val, err := r.State.Unmarshal(ty)
		if err != nil {
			t.Fatalf("%s: state does not decode with the data source's type: %v", typ, err)
		}
		return r.Diagnostics, val
	}
	out.readDS, out.performerDS = read("gantry_performer", map[string]tftypes.Value{"name": tfStr("peer"), "namespace": tfStr("team-b")})
	out.readNodes, out.nodesDS = read("gantry_nodes", map[string]tftypes.Value{"min_nodes": tftypes.NewValue(tftypes.Number, 3)})
	rty := schemas.ResourceSchemas["gantry_performer"].ValueType()
	rr, err := srv.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: "gantry_performer",
		CurrentState: dynamicValue(t, rty, map[string]tftypes.Value{"id": tfStr("apps/mine"), "name": tfStr("mine"), "namespace": tfStr("apps"),
			"image": tfStr("ghcr.io/acme/performer:1")})})
	if err != nil {
		t.Fatal(err)
	}
	out.readResource = rr.Diagnostics
	return out
}

// objAttr is v's attribute name (v an object).
func objAttr(t *testing.T, v tftypes.Value, name string) tftypes.Value {
	t.Helper()
	var m map[string]tftypes.Value
	if err := v.As(&m); err != nil {
		t.Fatalf("%v is not an object: %v", v, err)
	}
	a, ok := m[name]
	if !ok {
		t.Fatalf("no attribute %q in %v", name, v)
	}
	return a
}

// A provider host known only at apply that is invalid: a plan stops on it at once (naming
// host); a destroy is not stopped by it. While destroying, validation and configuration say
// nothing, the data sources answer their arguments with empty attributes and no diagnostic,
// and the one request that needs the cluster (refreshing a performer in state) fails with
// one error naming host.
func TestDestroyTolerant_invalidHostStopsOnlyWhatNeedsTheCluster(t *testing.T) {
	cfg := map[string]tftypes.Value{"host": tfStr("ftp://bad host")}
	const named = `host: "ftp://bad host" is not a URL or host:port`

	plan := runDestroyRefresh(t, false, cfg)
	if errs := errorsOf(plan.validate); len(errs) != 1 || !strings.Contains(errs[0], named) {
		t.Errorf("plan: ValidateProviderConfig errors %q, want one naming host", errs)
	}
	// (Terraform stops at that error; were the provider configured, its clients fail at once.)
	if errs := errorsOf(plan.readDS); len(errs) != 1 || !strings.Contains(errs[0], "Kubernetes Client Configuration Error") {
		t.Errorf("plan: ReadDataSource errors %q, want the client error", errs)
	}

	d := runDestroyRefresh(t, true, cfg)
	for name, ds := range map[string][]*tfprotov6.Diagnostic{"ValidateProviderConfig": d.validate, "ConfigureProvider": d.configure,
		"ReadDataSource gantry_performer": d.readDS, "ReadDataSource gantry_nodes": d.readNodes} {
		if len(ds) != 0 {
			t.Errorf("destroying: %s answered %d diagnostics, want none:%s", name, len(ds), diagsText(ds))
		}
	}
	if errs := errorsOf(d.readResource); len(errs) != 1 || len(d.readResource) != 1 || !strings.Contains(errs[0], named) ||
		!strings.Contains(errs[0], "terraform state rm") {
		t.Errorf("destroying: ReadResource diagnostics:%s\nwant one error naming host and what to do", diagsText(d.readResource))
	}
	if got := objAttr(t, d.performerDS, "name"); !got.Equal(tfStr("peer")) {
		t.Errorf("destroying: data source name = %v, want its argument", got)
	}
	if got := objAttr(t, d.performerDS, "grpc_endpoint"); !got.Equal(tfStr("")) {
		t.Errorf("destroying: grpc_endpoint = %v, want empty (not null: a template over it must evaluate)", got)
	}
	if got := objAttr(t, d.nodesDS, "names"); got.IsNull() || !got.IsKnown() {
		t.Errorf("destroying: gantry_nodes names = %v, want an empty list", got)
	}
	if got := objAttr(t, d.nodesDS, "gpu_product"); !got.IsNull() {
		t.Errorf("destroying: gantry_nodes gpu_product (an argument left out) = %v, want null", got)
	}
	if got := objAttr(t, d.nodesDS, "min_nodes"); !got.Equal(tftypes.NewValue(tftypes.Number, 3)) {
		t.Errorf("destroying: gantry_nodes min_nodes = %v, want its argument 3", got)
	}
}

// A credential plugin that is not installed where Terraform runs: a plan stops at Configure
// naming exec.command; a destroy stops only on what needs the cluster, with that error.
func TestDestroyTolerant_missingCredentialPluginStopsOnlyWhatNeedsTheCluster(t *testing.T) {
	const plugin = "gantry-no-such-credential-plugin"
	if _, err := exec.LookPath(plugin); err == nil {
		t.Skipf("%s is installed", plugin)
	}
	schemas := destroySchemas(t)
	provTy := schemas.Provider.ValueType().(tftypes.Object)  //nolint:forcetypeassert // the provider's schema is an object
	execTy := provTy.AttributeTypes["exec"].(tftypes.Object) //nolint:forcetypeassert // exec is a block
	cfg := map[string]tftypes.Value{"host": tfStr("https://127.0.0.1:1"), "exec": nullObject(execTy, map[string]tftypes.Value{
		"api_version": tfStr("client.authentication.k8s.io/v1"), "command": tfStr(plugin)})}

	plan := runDestroyRefresh(t, false, cfg)
	if errs := errorsOf(plan.configure); len(errs) != 1 || !strings.Contains(errs[0], "Credential Plugin Not Found") {
		t.Errorf("plan: ConfigureProvider errors %q, want Credential Plugin Not Found", errs)
	}

	d := runDestroyRefresh(t, true, cfg)
	if before := append(append(append(d.validate, d.configure...), d.readDS...), d.readNodes...); len(before) != 0 {
		t.Errorf("destroying: diagnostics before anything needs the cluster:%s", diagsText(before))
	}
	if errs := errorsOf(d.readResource); len(errs) != 1 || !strings.Contains(errs[0], `Credential Plugin Not Found: exec.command = "`+plugin+`"`) {
		t.Errorf("destroying: ReadResource errors %q, want one naming exec.command", errs)
	}
}

// Every data source's answer while destroying encodes with its type, keeps the arguments and
// has no null computed attribute (nested objects are objects of empty attributes).
func TestDestroyFallback_everyDataSource(t *testing.T) {
	schemas := destroySchemas(t)
	srv := destroyTolerant{fullServer: providerserver.NewProtocol6(New("test")())().(fullServer), destroying: func() bool { return true }, config: &invalidConfig{}}
	for typ, s := range schemas.DataSourceSchemas {
		t.Run(typ, func(t *testing.T) {
			set := map[string]tftypes.Value{}
			for _, a := range s.Block.Attributes {
				if a.Required {
					set[a.Name] = tfStr("x")
				}
			}
			v, ok := srv.destroyFallback(context.Background(), &tfprotov6.ReadDataSourceRequest{TypeName: typ, Config: dynamicValue(t, s.ValueType(), set)})
			if !ok {
				t.Fatal("no fallback")
			}
			got, err := v.Unmarshal(s.ValueType())
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]tftypes.Value
			if err := got.As(&m); err != nil {
				t.Fatal(err)
			}
			for _, a := range s.Block.Attributes {
				switch {
				case set[a.Name].Type() != nil && !m[a.Name].Equal(set[a.Name]):
					t.Errorf("%s = %v, want the argument %v", a.Name, m[a.Name], set[a.Name])
				case a.Computed && (m[a.Name].IsNull() || !m[a.Name].IsFullyKnown()):
					t.Errorf("computed %s = %v, want a known empty value", a.Name, m[a.Name])
				}
			}
		})
	}
	// Not wholly known (Terraform reads no such data source): no fallback, the error stands.
	ty := schemas.DataSourceSchemas["gantry_performer"].ValueType()
	if _, ok := srv.destroyFallback(context.Background(), &tfprotov6.ReadDataSourceRequest{TypeName: "gantry_performer",
		Config: dynamicValue(t, ty, map[string]tftypes.Value{"name": tftypes.NewValue(tftypes.String, tftypes.UnknownValue)})}); ok {
		t.Error("a configuration with an unknown value got a fallback")
	}
}

func TestEmptyValue(t *testing.T) {
	obj := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"s": tftypes.String, "l": tftypes.List{ElementType: tftypes.String}}}
	for _, c := range []struct {
		ty   tftypes.Type
		want tftypes.Value
	}{
		{tftypes.String, tfStr("")},
		{tftypes.Number, tftypes.NewValue(tftypes.Number, 0)},
		{tftypes.Bool, tftypes.NewValue(tftypes.Bool, false)},
		{tftypes.List{ElementType: obj}, tftypes.NewValue(tftypes.List{ElementType: obj}, []tftypes.Value{})},
		{tftypes.Set{ElementType: tftypes.String}, tftypes.NewValue(tftypes.Set{ElementType: tftypes.String}, []tftypes.Value{})},
		{tftypes.Map{ElementType: tftypes.Number}, tftypes.NewValue(tftypes.Map{ElementType: tftypes.Number}, map[string]tftypes.Value{})},
		{obj, tftypes.NewValue(obj, map[string]tftypes.Value{"s": tfStr(""), "l": tftypes.NewValue(tftypes.List{ElementType: tftypes.String}, []tftypes.Value{})})},
		{tftypes.DynamicPseudoType, tftypes.NewValue(tftypes.DynamicPseudoType, nil)},
	} {
		if got := emptyValue(c.ty); !got.Equal(c.want) {
			t.Errorf("emptyValue(%v) = %v, want %v", c.ty, got, c.want)
		}
	}
}

// tfMain is a root module using the gantry provider from dev_overrides.
func tfMain(body string) string {
	return `terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}
` + body
}

// A data source names a performer another configuration manages; that performer is
// destroyed. The plan then fails naming the data source and the object, and `terraform
// destroy` (real CLI, the built provider) still removes everything this configuration
// created, its own performer included, though the data source's object is gone and an output
// interpolates its endpoint.
func TestAccDestroy_dataSourceMissingObject(t *testing.T) {
	skipUnlessAcc(t)
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "dsdestroy")
	cli := newCLI(t)
	run := func(dir string, args ...string) (string, int) {
		t.Helper()
		out, code := cli.run(t, dir, append(args, "-input=false", "-no-color")...)
		t.Logf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
		return out, code
	}
	performer := func(name string) string {
		return fmt.Sprintf(`
resource "gantry_performer" %[1]q {
  name      = %[1]q
  namespace = %[2]q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}
`, name, ns)
	}
	other := cli.workdir(t, tfMain(performer("peer")))
	if _, code := run(other, "apply", "-auto-approve"); code != 0 {
		t.Fatal("the other configuration's apply failed")
	}
	dir := cli.workdir(t, tfMain(performer("mine")+fmt.Sprintf(`
data "gantry_performer" "peer" {
  name      = "peer"
  namespace = %q
}

output "peer" {
  value = "grpc://${data.gantry_performer.peer.grpc_endpoint}"
}
`, ns)))
	if out, code := run(dir, "apply", "-auto-approve"); code != 0 || !strings.Contains(out, "grpc://performer-peer."+ns) {
		t.Fatalf("apply: exit %d, want success with the peer's endpoint", code)
	}
	if _, code := run(other, "destroy", "-auto-approve"); code != 0 {
		t.Fatal("the other configuration's destroy failed")
	}

	out, code := run(dir, "plan")
	for _, want := range []string{"Error: Performer Not Found", "with data.gantry_performer.peer", "Performer " + ns + "/peer does not exist in the cluster."} {
		if code == 0 || !strings.Contains(out, want) {
			t.Errorf("plan: exit %d, want a failure saying %q", code, want)
		}
	}
	if _, code := run(dir, "destroy", "-auto-approve"); code != 0 {
		t.Fatalf("destroy: exit %d, want success although the data source's object is gone", code)
	}
	if st := readState(t, dir); len(st) != 0 {
		t.Errorf("state after destroy: %v", st)
	}
	if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), "mine", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Performer %s/mine after destroy: %v", ns, err)
	}
}

// A provider host that comes from another resource and is bad (invalid, or nothing answers
// there): the apply creates that resource and fails on the host before anything of Gantry's
// exists. `terraform destroy` then finishes: nothing in the state needs the cluster, though
// the configuration still has the bad host and a gantry_nodes data source. Needs no cluster.
func TestAccDestroy_badHostNothingCreated(t *testing.T) {
	skipUnlessAcc(t)
	requireTerraform(t)
	cli := newCLI(t)
	for _, c := range []struct{ name, host, applyErr string }{
		{"invalid", "ftp://bad host", `host: "ftp://bad host" is not a URL or host:port`},
		{"unreachable", "https://127.0.0.1:1", "cannot reach the Kubernetes API server https://127.0.0.1:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := cli.workdir(t, tfMain(fmt.Sprintf(`
resource "terraform_data" "host" {
  input = %q
}

provider "gantry" {
  host            = terraform_data.host.output
  token           = "unused"
  connect_timeout = "2s"
}

resource "gantry_performer" "p" {
  name      = "p"
  namespace = "dsdestroy-none"
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}

data "gantry_nodes" "all" {
  depends_on = [terraform_data.host]
}
`, c.host)))
			run := func(args ...string) (string, int) {
				t.Helper()
				out, code := cli.run(t, dir, append(args, "-input=false", "-no-color")...)
				t.Logf("terraform %s: exit %d\n%s", strings.Join(args, " "), code, out)
				return out, code
			}
			out, code := run("apply", "-auto-approve")
			if code == 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), c.applyErr) {
				t.Fatalf("apply: exit %d, want a failure saying %q", code, c.applyErr)
			}
			if st := readState(t, dir); len(st) != 1 {
				t.Fatalf("state after the failed apply: %v, want terraform_data.host alone", st)
			}
			if _, code := run("destroy", "-auto-approve"); code != 0 {
				t.Fatalf("destroy: exit %d, want success: nothing in the state needs the cluster", code)
			}
			if st := readState(t, dir); len(st) != 0 {
				t.Errorf("state after destroy: %v", st)
			}
		})
	}
}

// With the provider configuration not known yet (a host from a cluster created in the same
// run), the plan of a new performer warns once that its candidate nodes are counted when the
// apply runs, without the remedy a request that needs the cluster now gets ("apply those
// first, e.g. with -target"): a warning that said both contradicted itself.
func TestConfigNotKnown_warningDoesNotContradict(t *testing.T) {
	ctx := context.Background()
	srv, sch := deferralServer(t, false)
	typ := sch.ResourceSchemas["gantry_performer"].ValueType()
	cfg := objectOf(typ, map[string]tftypes.Value{"name": tstr("p"), "namespace": tstr("default"), "image": tstr("ghcr.io/acme/performer:1")})
	plan, err := srv.PlanResourceChange(ctx, &tfprotov6.PlanResourceChangeRequest{TypeName: "gantry_performer",
		PriorState: dynValue(t, typ, tftypes.NewValue(typ, nil)), ProposedNewState: dynValue(t, typ, cfg), Config: dynValue(t, typ, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	var warned []string
	for _, d := range plan.Diagnostics {
		if d.Severity == tfprotov6.DiagnosticSeverityError {
			t.Errorf("plan error: %s: %s", d.Summary, d.Detail)
		}
		if d.Summary == candidatesSkipped {
			warned = append(warned, d.Detail)
		}
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "not known yet") || !strings.Contains(warned[0], "counted when the apply runs") ||
		strings.Contains(warned[0], "-target") {
		t.Errorf("plan warnings %q, want one saying the count is made at apply, without -target", warned)
	}
	read, err := srv.ReadResource(ctx, &tfprotov6.ReadResourceRequest{TypeName: "gantry_performer", CurrentState: dynValue(t, typ, cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if errs := errorsOf(read.Diagnostics); len(errs) != 1 || !strings.Contains(errs[0], "not known yet") || !strings.Contains(errs[0], "apply those first, e.g. with -target") {
		t.Errorf("refresh errors %q, want one naming the unknown configuration and the remedy", errs)
	}
}
