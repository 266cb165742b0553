package provider

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// A destroy must never be blocked by the configuration: whatever it says now, the user can
// remove what an earlier apply left. Terraform does not make that so by itself: before a
// destroy it plans the configuration once more to refresh the state (its "pre-destroy
// refresh"), calling the provider's ValidateResourceConfig and PlanResourceChange with every
// value known, and an error there stops the destroy. So a value that was unknown at plan and
// turned out invalid at apply (the apply failed on it) blocked the destroy of everything the
// apply had created until the configuration was fixed. Terraform softens its own
// preconditions to warnings in that refresh; the provider cannot see that it is one.
//
// DestroyTolerant does the same for Gantry's errors: while the CLI that started this provider
// process runs a destroy (`terraform destroy`, `plan -destroy`, `apply -destroy`; OpenTofu's
// the same), the errors of resource and data-source validation and of planning a create or
// update come back as warnings that say so. Planning the deletion itself, reading and every
// API call keep their errors, and so do every other command's validation and plans.

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
	return destroyTolerant{fullServer: full, destroying: destroying}
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
