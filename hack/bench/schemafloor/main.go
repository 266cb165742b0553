// Command schemafloor is Terraform's own cost of a no-op plan for Gantry's schemas: a provider
// that serves gantry_performer's schema (and the others') but does no work, beside
// terraform_data. It answers the issue's question "what would any provider with this schema
// cost?" and is a reproduction that can be attached to an upstream report as it is.
//
// Run as a program (`go run ./hack/bench/schemafloor -terraform bin/terraform -n 1000`), it
// builds itself as the provider example/gantryecho into a filesystem mirror under -workdir,
// applies N gantry_performer with it (local name gantry, so the configuration is Gantry's),
// then times -rounds no-op plans of them at -parallelism, and the same for N terraform_data. It
// needs no cluster. It prints seconds and records two rows for `make bench`'s table.
//
// Run by Terraform (the plugin handshake variable set), it is the echo provider: the schemas,
// identity schemas and metadata of Gantry's provider (provider.Server), and for every other
// call no work at all: ConfigureProvider and ValidateResourceConfig answer nothing,
// UpgradeResourceState decodes the stored JSON with the schema's type, ReadResource returns
// the state, PlanResourceChange the proposed new state (the prior identity), and
// ApplyResourceChange the planned state with unknown values made null. The difference between
// this and Gantry's own no-op plan is what the provider (the framework and Gantry's code)
// costs; the difference between this and terraform_data is what Terraform spends on the
// schema's size.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/gantry-dev/terraform-provider-gantry/hack/bench/table"
	"github.com/gantry-dev/terraform-provider-gantry/provider"
)

const (
	address = "registry.terraform.io/example/gantryecho"
	version = "0.0.1"
)

func main() {
	if os.Getenv("TF_PLUGIN_MAGIC_COOKIE") != "" {
		serve()
		return
	}
	tf := flag.String("terraform", "terraform", "Terraform or OpenTofu CLI")
	workdir := flag.String("workdir", ".cache/bench/schemafloor", "scratch directory")
	n := flag.Int("n", 1000, "resources")
	parallelism := flag.Int("parallelism", 10, "terraform -parallelism")
	rounds := flag.Int("rounds", 3, "no-op plans timed (the median is reported)")
	flag.Parse()
	if err := run(*tf, *workdir, *n, *parallelism, *rounds); err != nil {
		log.Fatal(err)
	}
}

// echo is the provider that does nothing: Gantry's schemas, no work.
type echo struct {
	tfprotov6.ProviderServer // Gantry's, for the schemas and what Terraform never calls here
	types                    map[string]tftypes.Type
}

func serve() {
	err := tf6server.Serve(address, func() tfprotov6.ProviderServer {
		full := provider.Server(version)
		e := &echo{ProviderServer: full, types: map[string]tftypes.Type{}}
		s, err := full.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
		if err != nil {
			log.Fatal(err)
		}
		for name, rs := range s.ResourceSchemas {
			e.types[name] = rs.ValueType()
		}
		return e
	})
	if err != nil {
		log.Fatal(err)
	}
}

func (e *echo) ConfigureProvider(context.Context, *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	return &tfprotov6.ConfigureProviderResponse{}, nil
}

func (e *echo) ValidateResourceConfig(context.Context, *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	return &tfprotov6.ValidateResourceConfigResponse{}, nil
}

func (e *echo) UpgradeResourceState(_ context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	typ := e.types[req.TypeName]
	v, err := req.RawState.UnmarshalWithOpts(typ, tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}})
	if err != nil {
		return nil, err
	}
	dv, err := tfprotov6.NewDynamicValue(typ, v)
	return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: &dv}, err
}

func (e *echo) ReadResource(_ context.Context, req *tfprotov6.ReadResourceRequest) (*tfprotov6.ReadResourceResponse, error) {
	return &tfprotov6.ReadResourceResponse{NewState: req.CurrentState, NewIdentity: req.CurrentIdentity, Private: req.Private}, nil
}

func (e *echo) PlanResourceChange(_ context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	return &tfprotov6.PlanResourceChangeResponse{PlannedState: req.ProposedNewState, PlannedIdentity: req.PriorIdentity, PlannedPrivate: req.PriorPrivate}, nil
}

// ApplyResourceChange returns the planned state with every unknown value null (a create's
// computed attributes), or the planned null of a destroy.
func (e *echo) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	typ := e.types[req.TypeName]
	planned, err := req.PlannedState.Unmarshal(typ)
	if err != nil {
		return nil, err
	}
	known, err := tftypes.Transform(planned, func(_ *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if !v.IsKnown() {
			return tftypes.NewValue(v.Type(), nil), nil
		}
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	dv, err := tfprotov6.NewDynamicValue(typ, known)
	return &tfprotov6.ApplyResourceChangeResponse{NewState: &dv, Private: req.PlannedPrivate}, err
}

// run builds the echo provider into a mirror, then times the two no-op plans.
func run(tf, workdir string, n, parallelism, rounds int) error {
	workdir, err := filepath.Abs(workdir)
	if err != nil {
		return err
	}
	mirror := filepath.Join(workdir, "plugins")
	plat := runtime.GOOS + "_" + runtime.GOARCH
	bin := filepath.Join(mirror, "registry.terraform.io/example/gantryecho", version, plat, "terraform-provider-gantryecho_v"+version)
	if err := sh("", nil, "go", "build", "-o", bin, "./hack/bench/schemafloor"); err != nil {
		return err
	}
	rc := filepath.Join(workdir, "terraformrc")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf("provider_installation {\n  filesystem_mirror {\n    path = %q\n    include = [\"example/*\"]\n  }\n  direct {\n    exclude = [\"example/*\"]\n  }\n}\n", mirror)), 0o644); err != nil {
		return err
	}
	env := []string{"TF_CLI_CONFIG_FILE=" + rc, "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1"}
	configs := map[string]string{
		"echo":  fmt.Sprintf("terraform {\n  required_providers {\n    gantry = { source = \"example/gantryecho\" }\n  }\n}\nresource \"gantry_performer\" \"p\" {\n  count     = %d\n  name      = \"bench-${count.index}\"\n  namespace = \"gantry-bench\"\n  image     = \"ghcr.io/layr-labs/hello-performer:v1.0.0\"\n}\n", n),
		"floor": fmt.Sprintf("resource \"terraform_data\" \"d\" {\n  count = %d\n  input = count.index\n}\n", n),
	}
	median := map[string]float64{}
	for _, name := range []string{"echo", "floor"} {
		dir := filepath.Join(workdir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(configs[name]), 0o644); err != nil {
			return err
		}
		par := fmt.Sprintf("-parallelism=%d", parallelism)
		// The echo provider is rebuilt on every run: a lock file of an earlier build would
		// refuse its checksum.
		_ = os.Remove(filepath.Join(dir, ".terraform.lock.hcl"))
		if err := sh(dir, env, tf, "init", "-input=false", "-upgrade"); err != nil {
			return err
		}
		if err := sh(dir, env, tf, "apply", "-auto-approve", "-input=false", par); err != nil {
			return err
		}
		var times []float64
		for range rounds {
			start := time.Now()
			if err := sh(dir, env, tf, "plan", "-input=false", "-detailed-exitcode", par); err != nil {
				return fmt.Errorf("%s: the no-op plan planned changes or failed: %w", name, err)
			}
			times = append(times, time.Since(start).Seconds())
		}
		sort.Float64s(times)
		median[name] = times[len(times)/2]
		fmt.Printf("%s: no-op plan of %d, -parallelism %d: %v s (median %.2f s)\n", name, n, parallelism, times, median[name])
	}
	fmt.Printf("Terraform's cost of the schema: %d gantry_performer served by a provider that does no work take %.2f s, %.1f× %d terraform_data (%.2f s)\n",
		n, median["echo"], median["echo"]/median["floor"], n, median["floor"])
	table.Add(table.Row{Figure: fmt.Sprintf("%d gantry_performer, -parallelism %d: no-op plan, echo provider (Terraform's cost of the schema)", n, parallelism), Value: median["echo"], Unit: "s",
		Limit: median["floor"], LimitIs: fmt.Sprintf("%d terraform_data", n)})
	return nil
}

// sh runs a command in dir (the current directory if ""), its output discarded unless it fails.
func sh(dir string, env []string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %v: %w\n%s", name, args, err, out)
	}
	return nil
}
