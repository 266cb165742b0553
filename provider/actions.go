package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
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

// packageSetRequest is what a package-set action asks of the reconciler and waits for
// (annotateAndWait).
type packageSetRequest struct {
	// annotate checks the PackageSet u, as read, and writes the request (annotations on the
	// set or on its nodes), sending its own progress messages; it adds diagnostics to diags and
	// returns false to stop before the wait.
	annotate func(ctx context.Context, c *kube.Clients, u *unstructured.Unstructured, diags *diag.Diagnostics) bool
	// recheck, when > 0, also runs check this often on the set's newest copy, for a check that
	// reads other objects (nodes' annotations) whose changes do not touch the set.
	recheck time.Duration
	// check tells, from a copy of the set, whether the request is done, with a progress
	// message; an error fails the action.
	check wait.Check
}

// annotateAndWait is the body of every package-set action: it reads the PackageSet name with a
// GET (actionReadDiagnostic when it cannot), runs req.annotate, then waits through the
// provider's wait engine (wait.Registry.WaitFor: the shared informer's events for the set, a
// GET per second only while its watch fails) for at most timeout until req.check reports done,
// sending each new progress message as "PackageSet <name>: <message>". waited is false when it
// stopped before the wait (its diagnostics are in resp); err is the wait's error for the
// caller to word: check's, the API's, wait.DeletedError when the set is deleted, or "not done
// after <timeout> (last seen: <last progress>)".
func (a *actionBase) annotateAndWait(ctx context.Context, resp *action.InvokeResponse, name string, timeout time.Duration, req packageSetRequest) (waited bool, err error) {
	c, reg, err := a.data.get()
	if err != nil {
		resp.Diagnostics.Append(clientDiagnostic(err))
		return false, nil
	}
	u, err := c.Dynamic.Resource(wait.PackageSet.GVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		resp.Diagnostics.Append(actionReadDiagnostic("PackageSet", name, err))
		return false, nil
	}
	if !req.annotate(ctx, c, u, &resp.Diagnostics) {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	_, err = reg.WaitFor(ctx, wait.PackageSet, wait.Target{Name: name}, req.recheck, func(msg string) {
		last = msg
		progress(resp, "PackageSet "+name+": "+msg)
	}, req.check)
	if err != nil && ctx.Err() != nil {
		return true, fmt.Errorf("not done after %s (last seen: %s)", timeout, orDash(last))
	}
	return true, err
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
