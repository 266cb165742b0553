package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Actions (Terraform >= 1.14): day-2 fleet operations that would otherwise be kubectl edits,
// run with `terraform apply -invoke=action.<type>.<name>` or from a resource's
// lifecycle.action_trigger. Each asks the reconciler for one thing through the object's
// metadata (never its spec, which a configuration owns), then waits for the outcome like a
// resource does — sending progress messages — and fails with the reconciler's reason.

// actionPollInterval is how often an action re-reads the objects it waits on.
const actionPollInterval = time.Second

// actionBase holds what every Gantry action shares: the provider's clients.
type actionBase struct{ data *providerData }

func (a *actionBase) Configure(_ context.Context, req action.ConfigureRequest, resp *action.ConfigureResponse) {
	d, err := providerDataFrom(req.ProviderData)
	if err != nil {
		resp.Diagnostics.AddError("Unexpected Action Configure Type", err.Error())
		return
	}
	a.data = d
}

// actionTimeoutAttribute is the `timeout` attribute of every action: how long it waits for
// the outcome, a Go duration (default def).
func actionTimeoutAttribute(def time.Duration) schema.StringAttribute {
	return schema.StringAttribute{
		Optional: true,
		MarkdownDescription: fmt.Sprintf("How long to wait for the outcome, as a duration (`\"90s\"`, `\"10m\"`; default `\"%s\"`).",
			def),
		Validators: []validator.String{checkString{"a duration greater than zero", func(s string) error {
			d, err := time.ParseDuration(s)
			if err == nil && d <= 0 {
				err = fmt.Errorf("must be greater than zero")
			}
			return err
		}, "Invalid Action Configuration"}},
	}
}

// actionTimeout returns the timeout attribute's value, def when null.
func actionTimeout(v types.String, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(v.ValueString()); err == nil && d > 0 {
		return d
	}
	return def
}

// progress sends msg to Terraform when the framework gave a progress callback.
func progress(resp *action.InvokeResponse, msg string) {
	if resp.SendProgress != nil {
		resp.SendProgress(action.InvokeProgressEvent{Message: msg})
	}
}

// pollUntil calls check every actionPollInterval until it reports done or fails, or timeout
// passes; report is called with each new progress message check returns. The error says
// how long it waited and the last progress when the timeout passes.
func pollUntil(ctx context.Context, timeout time.Duration, report func(string), check func(context.Context) (done bool, msg string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	err := kwait.PollUntilContextCancel(ctx, actionPollInterval, true, func(ctx context.Context) (bool, error) {
		done, msg, err := check(ctx)
		if msg != "" && msg != last {
			last = msg
			report(msg)
		}
		return done, err
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("not done after %s (last seen: %s)", timeout, orDash(last))
	}
	return err
}

func orDash(s string) string {
	if s == "" {
		return "nothing yet"
	}
	return s
}

// failingReason is the reason and message of the condition that explains a failed verdict of
// spec's kind on u ("" when none does).
func failingReason(spec wait.Spec, u *unstructured.Unstructured) string {
	if c := wait.Evaluate(spec, u).Failing; c != nil {
		return c.Reason + ": " + c.Message
	}
	return ""
}
