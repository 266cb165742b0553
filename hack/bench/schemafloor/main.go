// Command schemafloor measures Terraform's own cost of a no-op plan for Gantry's schemas: an echo
// provider that serves Gantry's schemas (provider.Server) but does no work, so it can be attached
// to an upstream report as is. As a program it builds itself into a filesystem mirror and times
// the apply, no-op plans and destroy of N gantry_performer, of N gantry_min (same plugin, tiny
// schema) and of N terraform_data; it needs no cluster. Run by Terraform, it is the echo provider: every
// call returns its input (state, proposed state, planned state with unknowns nulled). Echo vs
// Gantry is the provider's cost; echo vs terraform_data is what Terraform spends on the schema's
// size. The echo's state is slightly lighter (defaulted values null), which matters little:
// Terraform's work follows the schema far more than the values.
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
		e.types["gantry_min"] = minType
		return e
	})
	if err != nil {
		log.Fatal(err)
	}
}

// minType is gantry_min's type: one optional number, the smallest resource a plugin can serve
// (the floor that includes the plugin's RPCs, beside terraform_data, which has none).
var minType = tftypes.Object{AttributeTypes: map[string]tftypes.Type{"input": tftypes.Number}}

// GetProviderSchema is Gantry's schemas plus gantry_min.
func (e *echo) GetProviderSchema(ctx context.Context, req *tfprotov6.GetProviderSchemaRequest) (*tfprotov6.GetProviderSchemaResponse, error) {
	resp, err := e.ProviderServer.GetProviderSchema(ctx, req)
	if err == nil {
		resp.ResourceSchemas["gantry_min"] = &tfprotov6.Schema{Block: &tfprotov6.SchemaBlock{
			Attributes: []*tfprotov6.SchemaAttribute{{Name: "input", Type: tftypes.Number, Optional: true}}}}
	}
	return resp, err
}

// GetMetadata is Gantry's metadata plus gantry_min.
func (e *echo) GetMetadata(ctx context.Context, req *tfprotov6.GetMetadataRequest) (*tfprotov6.GetMetadataResponse, error) {
	resp, err := e.ProviderServer.GetMetadata(ctx, req)
	if err == nil {
		resp.Resources = append(resp.Resources, tfprotov6.ResourceMetadata{TypeName: "gantry_min"})
	}
	return resp, err
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

// PlanResourceChange returns the proposed new state, except for a create of a Gantry type,
// which Gantry's own plan answers (its defaults and unknown computed values, so the state the
// no-op plans read is shaped like Gantry's).
func (e *echo) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	if prior, err := req.PriorState.Unmarshal(e.types[req.TypeName]); req.TypeName != "gantry_min" && err == nil && prior.IsNull() {
		if resp, err := e.ProviderServer.PlanResourceChange(ctx, req); err == nil && len(resp.Diagnostics) == 0 {
			return resp, nil
		}
	}
	return &tfprotov6.PlanResourceChangeResponse{PlannedState: req.ProposedNewState, PlannedIdentity: req.PriorIdentity, PlannedPrivate: req.PriorPrivate}, nil
}

// ApplyResourceChange returns the planned state with every unknown value filled as an apply
// would (a string "echo", 0, false, an empty collection, an object of nulls), or the planned
// null of a destroy.
func (e *echo) ApplyResourceChange(_ context.Context, req *tfprotov6.ApplyResourceChangeRequest) (*tfprotov6.ApplyResourceChangeResponse, error) {
	typ := e.types[req.TypeName]
	planned, err := req.PlannedState.Unmarshal(typ)
	if err != nil {
		return nil, err
	}
	known, err := tftypes.Transform(planned, func(_ *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		if v.IsKnown() {
			return v, nil
		}
		switch t := v.Type(); {
		case t.Is(tftypes.String):
			return tftypes.NewValue(t, "echo"), nil
		case t.Is(tftypes.Number):
			return tftypes.NewValue(t, 0), nil
		case t.Is(tftypes.Bool):
			return tftypes.NewValue(t, false), nil
		case t.Is(tftypes.List{}), t.Is(tftypes.Set{}), t.Is(tftypes.Map{}):
			return tftypes.NewValue(t, []tftypes.Value{}), nil
		default:
			return tftypes.NewValue(t, nil), nil
		}
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
		"min":   fmt.Sprintf("terraform {\n  required_providers {\n    gantry = { source = \"example/gantryecho\" }\n  }\n}\nresource \"gantry_min\" \"m\" {\n  count = %d\n  input = count.index\n}\n", n),
		"floor": fmt.Sprintf("resource \"terraform_data\" \"d\" {\n  count = %d\n  input = count.index\n}\n", n),
	}
	median, applied, destroyed := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, name := range []string{"echo", "min", "floor"} {
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
		// An earlier run's state would make this apply a no-op.
		_ = os.Remove(filepath.Join(dir, "terraform.tfstate"))
		start := time.Now()
		if err := sh(dir, env, tf, "apply", "-auto-approve", "-input=false", par); err != nil {
			return err
		}
		applied[name] = time.Since(start).Seconds()
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
		start = time.Now()
		if err := sh(dir, env, tf, "destroy", "-auto-approve", "-input=false", par); err != nil {
			return err
		}
		destroyed[name] = time.Since(start).Seconds()
		fmt.Printf("%s: apply of %d %.2f s, destroy %.2f s\n", name, n, applied[name], destroyed[name])
	}
	fmt.Printf("Terraform's cost of the schema: %d gantry_performer served by a provider that does no work take %.2f s, %.1f× %d one-attribute resources of the same plugin (%.2f s), %.1f× %d terraform_data (%.2f s)\n",
		n, median["echo"], median["echo"]/median["min"], n, median["min"], median["echo"]/median["floor"], n, median["floor"])
	table.Add(table.Row{Figure: fmt.Sprintf("%d gantry_performer, -parallelism %d: no-op plan, echo provider (Terraform's cost of the schema)", n, parallelism), Value: median["echo"], Unit: "s",
		Limit: median["min"], LimitIs: fmt.Sprintf("%d one-attribute resources of the same plugin (%d terraform_data: %.2f s)", n, n, median["floor"])})
	// Terraform's own cost of creating and destroying N resources of the schema: the local
	// backend writes the whole state file after every resource (statemgr.Filesystem.WriteState),
	// so it grows with N² × the state of one resource; a provider that does no work pays it too.
	fmt.Printf("Terraform's cost of apply and destroy: %d gantry_performer served by the echo provider %.2f s and %.2f s; %d terraform_data %.2f s and %.2f s\n",
		n, applied["echo"], destroyed["echo"], n, applied["floor"], destroyed["floor"])
	for _, op := range []struct {
		what string
		of   map[string]float64
	}{{"apply", applied}, {"destroy", destroyed}} {
		table.Add(table.Row{Figure: fmt.Sprintf("%d gantry_performer, -parallelism %d: %s, echo provider (Terraform's cost of the schema)", n, parallelism, op.what), Value: op.of["echo"], Unit: "s",
			Limit: op.of["floor"], LimitIs: fmt.Sprintf("%d terraform_data", n)})
	}
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
