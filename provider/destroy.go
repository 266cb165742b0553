package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// A destroy must never be blocked by the configuration. Terraform's pre-destroy refresh plans
// the configuration once more, and an error there (a value invalid at apply, a data source's
// object gone, an unreachable `host`) stops the destroy. No request says it is that refresh, so
// the provider reads the CLI's command line (CLIDestroying). During a destroy, DestroyTolerant
// turns validation and create/update plan errors into warnings, answers an unreadable data source
// with its arguments only (destroyFallback, logged at WARN), and defers provider configuration
// errors to the requests that need the cluster. Planning the deletion, refreshing and deleting
// keep their errors, as does every other command.

// destroyReadNote ends every data source's description (DestroyTolerant.ReadDataSource);
// fails is how its reads fail.
func destroyReadNote(fails string) string {
	return "While Terraform destroys (`terraform destroy`, `plan -destroy`, `apply -destroy`, and OpenTofu's), a read that " +
		"fails (" + fails + ") does not block it: the read answers its arguments with every other attribute empty (`\"\"`, " +
		"`0`, `false`, empty lists and maps) and no diagnostic (see the provider's page, *A destroy is never blocked by the " +
		"configuration*). Every other command fails on the error."
}

// destroyingNote opens the detail of an error softened to a warning during a destroy.
const destroyingNote = "Terraform is destroying, so this error in the configuration does not block the destroy; " +
	"a plan or apply that creates or updates the resource still stops on it.\n\n"

// DestroyTolerant wraps the provider's protocol 6 server (main.go serves it): see above.
// destroying reports whether the CLI runs a destroy; nil means CLIDestroying. The wrapper
// serves list resources and actions as the framework's server does (tf6server finds them by
// type assertion, so the wrapper must implement them too); a server without them is returned
// unwrapped.
func DestroyTolerant(s tfprotov6.ProviderServer, destroying func() bool) tfprotov6.ProviderServer {
	if destroying == nil {
		destroying = CLIDestroying
	}
	full, ok := s.(fullServer)
	if !ok {
		return s
	}
	return destroyTolerant{fullServer: full, destroying: destroying, config: &invalidConfig{}}
}

// fullServer is what the framework's protocol 6 server implements: the provider, its list
// resources (Terraform 1.14's terraform query) and its actions.
type fullServer interface {
	tfprotov6.ProviderServer
	tfprotov6.ListResourceServer
	tfprotov6.ActionServer
}

type destroyTolerant struct {
	fullServer
	destroying func() bool
	// config holds the errors of the last ValidateProviderConfig while destroying: Terraform
	// validates the provider configuration on the same provider process right before it
	// configures it (ConfigureProvider hands them to gantryProvider.Configure).
	config *invalidConfig
}

// invalidConfig is the provider configuration's errors as "summary: detail" texts.
type invalidConfig struct {
	mu   sync.Mutex
	errs []string
}

func (c *invalidConfig) set(errs []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = errs
}

func (c *invalidConfig) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.errs...)
}

// ValidateProviderConfig keeps, while destroying, the configuration's errors out of the
// response and for the clients (see above); warnings stay.
func (s destroyTolerant) ValidateProviderConfig(ctx context.Context, req *tfprotov6.ValidateProviderConfigRequest) (*tfprotov6.ValidateProviderConfigResponse, error) {
	resp, err := s.fullServer.ValidateProviderConfig(ctx, req)
	if resp == nil || !s.destroying() {
		return resp, err
	}
	var errs []string
	resp.Diagnostics, errs = splitErrors(resp.Diagnostics)
	s.config.set(errs)
	if len(errs) > 0 {
		tflog.Warn(ctx, "provider configuration invalid while destroying: reported only by requests that need the cluster", map[string]interface{}{"errors": errs})
	}
	return resp, err
}

// ConfigureProvider hands gantryProvider.Configure, while destroying, the configuration's
// errors ValidateProviderConfig kept, through the request's context (configErrorWhileDestroying).
func (s destroyTolerant) ConfigureProvider(ctx context.Context, req *tfprotov6.ConfigureProviderRequest) (*tfprotov6.ConfigureProviderResponse, error) {
	if s.destroying() {
		ctx = context.WithValue(ctx, destroyConfigKey{}, &invalidConfig{errs: s.config.get()})
	}
	return s.fullServer.ConfigureProvider(ctx, req)
}

// ReadDataSource answers, while destroying, a read that failed with the data source's
// arguments as configured and every other attribute empty (destroyFallback), without the
// errors. A configuration that is not wholly known (Terraform does not read those) keeps the
// error.
func (s destroyTolerant) ReadDataSource(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.ReadDataSourceResponse, error) {
	resp, err := s.fullServer.ReadDataSource(ctx, req)
	if err != nil || resp == nil || resp.Deferred != nil || !hasErrors(resp.Diagnostics) || !s.destroying() {
		return resp, err
	}
	state, ok := s.destroyFallback(ctx, req)
	if !ok {
		return resp, err
	}
	var errs []string
	resp.Diagnostics, errs = splitErrors(resp.Diagnostics)
	tflog.Warn(ctx, "data source not read while destroying: its computed attributes are empty", map[string]interface{}{"data_source": req.TypeName, "errors": errs})
	resp.State = state
	return resp, nil
}

// destroyFallback is the value a data source that could not be read answers while destroying:
// its configuration, with every computed attribute the configuration leaves null set to its
// type's empty value ("", 0, false, an empty list, set or map, an object of empty attributes).
// Empty rather than null: Terraform evaluates the whole configuration with it in the refresh
// before the destroy, and a null fails string templates ("${...}"), length(), upper() and
// attribute access (x.status.phase) there, stopping the destroy as the read's error did; an
// index into a list (x.names[0]) still fails. false when the configuration cannot be decoded
// or is not wholly known.
func (s destroyTolerant) destroyFallback(ctx context.Context, req *tfprotov6.ReadDataSourceRequest) (*tfprotov6.DynamicValue, bool) {
	if req.Config == nil {
		return nil, false
	}
	schemas, err := s.GetProviderSchema(ctx, &tfprotov6.GetProviderSchemaRequest{})
	if err != nil || schemas == nil || schemas.DataSourceSchemas[req.TypeName] == nil || schemas.DataSourceSchemas[req.TypeName].Block == nil {
		return nil, false
	}
	block := schemas.DataSourceSchemas[req.TypeName].Block
	ty := block.ValueType()
	cfg, err := req.Config.Unmarshal(ty)
	if err != nil || cfg.IsNull() || !cfg.IsFullyKnown() {
		return nil, false
	}
	var attrs map[string]tftypes.Value
	if err := cfg.As(&attrs); err != nil {
		return nil, false
	}
	for _, a := range block.Attributes {
		if v, ok := attrs[a.Name]; a.Computed && (!ok || v.IsNull()) {
			attrs[a.Name] = emptyValue(a.ValueType())
		}
	}
	out, err := tfprotov6.NewDynamicValue(ty, tftypes.NewValue(ty, attrs))
	if err != nil {
		return nil, false
	}
	return &out, true
}

// emptyValue is t's empty value: "", 0, false, an empty list, set, map or tuple, an object
// whose attributes are empty; null for a dynamic type.
func emptyValue(t tftypes.Type) tftypes.Value {
	switch {
	case t.Is(tftypes.String):
		return tftypes.NewValue(t, "")
	case t.Is(tftypes.Number):
		return tftypes.NewValue(t, 0)
	case t.Is(tftypes.Bool):
		return tftypes.NewValue(t, false)
	case t.Is(tftypes.List{}), t.Is(tftypes.Set{}), t.Is(tftypes.Tuple{}):
		return tftypes.NewValue(t, []tftypes.Value{})
	case t.Is(tftypes.Map{}):
		return tftypes.NewValue(t, map[string]tftypes.Value{})
	case t.Is(tftypes.Object{}):
		ot := t.(tftypes.Object) //nolint:forcetypeassert // t.Is(tftypes.Object{}) above
		attrs := make(map[string]tftypes.Value, len(ot.AttributeTypes))
		for name, at := range ot.AttributeTypes {
			attrs[name] = emptyValue(at)
		}
		return tftypes.NewValue(t, attrs)
	}
	return tftypes.NewValue(t, nil)
}

// hasErrors reports whether ds holds an error.
func hasErrors(ds []*tfprotov6.Diagnostic) bool {
	for _, d := range ds {
		if d != nil && d.Severity == tfprotov6.DiagnosticSeverityError {
			return true
		}
	}
	return false
}

// splitErrors returns ds without its errors, and the errors as "summary: detail" texts.
func splitErrors(ds []*tfprotov6.Diagnostic) (kept []*tfprotov6.Diagnostic, errs []string) {
	for _, d := range ds {
		if d != nil && d.Severity == tfprotov6.DiagnosticSeverityError {
			errs = append(errs, diagnosticText(d.Summary, d.Detail))
			continue
		}
		kept = append(kept, d)
	}
	return kept, errs
}

// diagnosticText is a diagnostic's summary and detail on one line.
func diagnosticText(summary, detail string) string {
	detail = strings.Join(strings.Fields(detail), " ")
	if detail == "" {
		return summary
	}
	return summary + ": " + detail
}

// destroyConfigKey is the context key of the *invalidConfig ConfigureProvider hands
// gantryProvider.Configure while destroying.
type destroyConfigKey struct{}

// deferConfigError records, while destroying (ctx is the ConfigureProvider request's), an
// error gantryProvider.Configure found in the provider configuration, for the requests that
// need the cluster (configErrorWhileDestroying), and returns true; in every other command it
// records nothing and returns false: Configure reports the error itself.
func deferConfigError(ctx context.Context, summary, detail string) bool {
	c, ok := ctx.Value(destroyConfigKey{}).(*invalidConfig)
	if !ok {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.errs = append(c.errs, diagnosticText(summary, detail))
	return true
}

// configErrorWhileDestroying is the error the provider's clients give, while destroying,
// instead of using a configuration that has errors (ValidateProviderConfig's and those
// deferConfigError recorded); nil when it has none or Terraform is not destroying.
func configErrorWhileDestroying(ctx context.Context) error {
	c, ok := ctx.Value(destroyConfigKey{}).(*invalidConfig)
	if !ok {
		return nil
	}
	errs := c.get()
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("the provider configuration is invalid (%s). While Terraform destroys, that stops only what needs the "+
		"cluster, as this does: fix the configuration, or, if the cluster is gone, remove the resource from the state (terraform state rm)",
		strings.Join(errs, "; "))
}

func (s destroyTolerant) ValidateResourceConfig(ctx context.Context, req *tfprotov6.ValidateResourceConfigRequest) (*tfprotov6.ValidateResourceConfigResponse, error) {
	resp, err := s.fullServer.ValidateResourceConfig(ctx, req)
	if resp != nil && s.destroying() {
		resp.Diagnostics = softened(resp.Diagnostics)
	}
	return resp, err
}

func (s destroyTolerant) ValidateDataResourceConfig(ctx context.Context, req *tfprotov6.ValidateDataResourceConfigRequest) (*tfprotov6.ValidateDataResourceConfigResponse, error) {
	resp, err := s.fullServer.ValidateDataResourceConfig(ctx, req)
	if resp != nil && s.destroying() {
		resp.Diagnostics = softened(resp.Diagnostics)
	}
	return resp, err
}

// PlanResourceChange softens the errors of planning a create or an update (the pre-destroy
// refresh's plan, which Terraform throws away); a planned deletion (no proposed new state)
// keeps them.
func (s destroyTolerant) PlanResourceChange(ctx context.Context, req *tfprotov6.PlanResourceChangeRequest) (*tfprotov6.PlanResourceChangeResponse, error) {
	resp, err := s.fullServer.PlanResourceChange(ctx, req)
	if resp != nil && !deletion(req.ProposedNewState) && s.destroying() {
		resp.Diagnostics = softened(resp.Diagnostics)
	}
	return resp, err
}

// deletion reports whether a proposed new state is null: Terraform plans a deletion.
func deletion(v *tfprotov6.DynamicValue) bool {
	if v == nil {
		return true
	}
	if len(v.MsgPack) > 0 {
		return len(v.MsgPack) == 1 && v.MsgPack[0] == 0xc0 // msgpack nil
	}
	return len(v.JSON) == 0 || string(v.JSON) == "null"
}

// softened returns ds with every error turned into a warning that says why.
func softened(ds []*tfprotov6.Diagnostic) []*tfprotov6.Diagnostic {
	for _, d := range ds {
		if d == nil || d.Severity != tfprotov6.DiagnosticSeverityError {
			continue
		}
		d.Severity = tfprotov6.DiagnosticSeverityWarning
		d.Summary += " (not enforced while destroying)"
		d.Detail = destroyingNote + d.Detail
	}
	return ds
}

var (
	cliDestroyingOnce sync.Once
	cliDestroying     bool
)

// CLIDestroying reports whether the process that started this provider (its parent: the
// terraform or tofu CLI, which starts providers as go-plugin servers) runs a destroy, from
// its command line (/proc/<ppid>/cmdline on Linux, `ps` elsewhere). It is read once per
// process: a provider process serves one CLI command. false when the command line cannot be
// read.
func CLIDestroying() bool {
	cliDestroyingOnce.Do(func() { cliDestroying = IsDestroyCommand(parentArgs()) })
	return cliDestroying
}

// parentArgs is the parent process's argv, or nil.
func parentArgs() []string {
	ppid := os.Getppid()
	if ppid <= 1 {
		return nil
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(ppid) + "/cmdline"); err == nil {
		return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	}
	out, err := exec.Command("ps", "-o", "args=", "-p", strconv.Itoa(ppid)).Output()
	if err != nil {
		return nil
	}
	return strings.Fields(string(out))
}

// IsDestroyCommand reports whether argv (program first) is a Terraform or OpenTofu destroy:
// the subcommand `destroy`, or a -destroy flag (`plan -destroy`, `apply -destroy`).
func IsDestroyCommand(argv []string) bool {
	if len(argv) < 2 {
		return false
	}
	sub := ""
	for _, a := range argv[1:] {
		switch strings.TrimLeft(a, "-") {
		case "destroy", "destroy=true":
			if strings.HasPrefix(a, "-") {
				return true
			}
		}
		if sub == "" && !strings.HasPrefix(a, "-") {
			sub = a
			if sub == "destroy" {
				return true
			}
		}
	}
	return false
}
