package provider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// The diagnostics of the resources' CRUD, one constructor per situation (modelled on
// terraform-provider-random). Summaries are Title Case and name the kind; details say what
// happened, what Terraform does next and what the user can do, then quote the error. "What
// Terraform does next" follows Terraform core: a failed create with a state is saved tainted
// (replaced next plan), a failed update keeps its state untainted, a create with no state
// leaves nothing.

// Operations, as the diagnostics name them.
const (
	opCreate = "create"
	opUpdate = "update"
	opDelete = "delete"
)

// objectID is how messages name an object: "<namespace>/<name>", or "<name>" when cluster-scoped.
func objectID(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

// nextStep says what the next plan does after op failed on a kind whose object was saved in
// state (tainted on create) and what the user can do about it.
func nextStep(kind, op string) string {
	switch op {
	case opCreate:
		return fmt.Sprintf("Terraform saves the %s in state as tainted (it does so for every create that returns an error): "+
			"the next plan replaces it (deletes and creates it again), which retries. If the %s recovers by itself before then "+
			"(the reconciler keeps retrying with backoff) and you want to keep it, run `terraform untaint <address>`: "+
			"the next plan then shows no change.", kind, kind)
	case opUpdate:
		return fmt.Sprintf("Terraform keeps the %s in state with the configuration you applied and the status last seen; "+
			"the next plan shows an update that re-applies the %s and waits again (no change if it has recovered by then).", kind, kind)
	default:
		return fmt.Sprintf("The %s stays in state; the next destroy (or apply) deletes it again and waits until it is gone.", kind)
	}
}

// waitDiagnostic turns a wait error of op (opCreate, opUpdate, opDelete) on kind's object id
// into an error diagnostic: failed (summary a failure value or Stalled=True), timed out,
// deleted by someone else while waiting, or any other error (e.g. Forbidden).
func waitDiagnostic(kind, op, id string, err error) diag.Diagnostic {
	var (
		fe *wait.FailedError
		te *wait.TimeoutError
		de *wait.DeletedError
	)
	switch {
	case errors.As(err, &fe) && op == opDelete && fe.Verdict.Failing != nil && fe.Verdict.Failing.Reason == packageset.ReasonUninstallFailed:
		return diag.NewErrorDiagnostic(kind+" Uninstall Failed",
			fmt.Sprintf("The %s %s is being deleted, but an uninstall stage fails, so its deletion cannot finish:\n\n%s\n\n"+
				"The reconciler keeps retrying the uninstall with backoff and the %s stays in state. Fix the package and destroy again, "+
				"or, to delete the set without uninstalling, set uninstall_on_delete = false on it, run terraform apply, then terraform destroy again.",
				kind, id, fe.Error(), kind))
	case errors.As(err, &fe):
		return diag.NewErrorDiagnostic(kind+" Failed",
			fmt.Sprintf("The %s %s was written, but the reconciler reports that it failed:\n\n%s\n\n"+
				"%s Change the configuration if it asks for something the cluster cannot provide.", kind, id, fe.Error(), nextStep(kind, op)))
	case errors.As(err, &te):
		return diag.NewErrorDiagnostic("Timed Out Waiting for "+kind,
			fmt.Sprintf("%s\n\n%s Raise timeouts.%s if the %s needs longer, or look at the reconciler's log.", te.Error(), nextStep(kind, op), op, kind))
	case errors.As(err, &de):
		return diag.NewErrorDiagnostic(kind+" Deleted While Waiting",
			fmt.Sprintf("%s. Something else deleted the %s %s; it is not saved in state, and the next plan creates it again.", de.Error(), kind, id))
	}
	return diag.NewErrorDiagnostic("Error Waiting for "+kind,
		fmt.Sprintf("The %s %s was written, but waiting for it failed. %s\n\nOriginal Error: %s", kind, id, nextStep(kind, op), err))
}

// rolledBackDiagnostic reports an update the reconciler rolled back onto the previous revision
// (Executor) or version (PackageSet): err is the wait's error, which names what runs now.
func rolledBackDiagnostic(kind, id string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic(kind+" Update Rolled Back",
		fmt.Sprintf("The update of %s %s failed and the reconciler rolled it back.\n\n%s\n\n"+
			"The previous revision keeps running. Terraform keeps the configuration you applied in state, and every plan "+
			"shows an update that re-applies it and waits again until an apply succeeds: fix the cause (for example the "+
			"image) or revert the change, and apply again.", kind, id, err.Error()))
}

// interruptedDiagnostic is the warning of a create or update whose wait was cancelled
// (terraform was interrupted, e.g. Ctrl-C / SIGINT): the object was written, and its state is
// saved, untainted, with the summary last seen.
func interruptedDiagnostic(kind, id, summaryAttr, summary string) diag.Diagnostic {
	if summary == "" {
		summary = "not reported yet"
	}
	return diag.NewWarningDiagnostic(kind+" Apply Interrupted",
		fmt.Sprintf("Terraform was interrupted while waiting for %s %s. The %s was written to the cluster and is saved in state "+
			"(not tainted) with %s = %q as last seen. The reconciler carries on; the next plan shows an update that re-applies "+
			"the %s and waits again (no change if it is ready by then). Nothing is replaced.", kind, id, kind, summaryAttr, summary, kind))
}

// alreadyExistsDiagnostic refuses to create kind's object id over an object of that name that
// this provider did not write (it lacks the gantry.dev/managed-by annotation or the
// terraform-provider-gantry field manager). importID is what `terraform import` takes.
func alreadyExistsDiagnostic(kind, id, importID, why string) diag.Diagnostic {
	return diag.NewErrorDiagnostic(kind+" Already Exists",
		fmt.Sprintf("A %s %s already exists in the cluster and was not created by Terraform (%s), so the provider does not "+
			"take it over. Nothing was changed. Import it with `terraform import <address> %s` to manage it from this "+
			"configuration, or choose another name.", kind, id, why, importID))
}

// invalidConfigDiagnostic reports a configuration the provider cannot map to the API object
// (normally caught at plan time by the validators). Nothing was written.
func invalidConfigDiagnostic(kind string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Invalid "+kind+" Configuration",
		fmt.Sprintf("The configuration could not be mapped to a %s; nothing was written. Fix the configuration and apply again.\n\nOriginal Error: %s", kind, err))
}

// apiDiagnostic reports a failed API call; action is a gerund such as "Reading", "Applying".
// The detail says which row of failure.Classes the error is: refused by the API server (not
// retried: only a change helps), unreachable or failing (retried until the timeout), or a
// connection that cannot be made (TLS, credential plugin); and a hint for the refusals a user
// can act on.
func apiDiagnostic(kind, action string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic(fmt.Sprintf("Error %s %s", action, kind),
		fmt.Sprintf("%s Terraform changes nothing in state for this %s; apply again once the cause is fixed.\n\nOriginal Error: %s",
			apiErrorCause(err), kind, err))
}

// apiErrorCause is the first sentences of apiDiagnostic: what kind of failure err is
// (failure.Classify) and, for a refusal, what can fix it.
func apiErrorCause(err error) string {
	c, ok := failure.Classify(err)
	var status apierrors.APIStatus
	switch {
	case !ok:
		return "The request to the Kubernetes API failed."
	case c.Transient:
		return fmt.Sprintf("The Kubernetes API could not be reached or kept failing (%s); the provider retried it with backoff until the timeout.", c.Name)
	case !errors.As(err, &status):
		return fmt.Sprintf("The provider could not connect to the Kubernetes API: %s. Retrying cannot help until the provider configuration or the machine Terraform runs on changes.", c.Name)
	}
	hint := ""
	switch {
	case failure.TooLarge(err):
		hint = " The object is too large to store: move large values into a Secret or ConfigMap and reference it (env_from)."
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		hint = " The credentials the provider uses lack the permission (RBAC) or an admission policy refused the object."
	case failure.SchemaSkew(err):
		hint = " The cluster's Gantry CRDs are older than this provider: upgrade the gantry-reconciler chart (its reconciler applies the CRDs of its version) to the provider's version, or remove the attributes the message names."
	case apierrors.IsNotFound(err):
		hint = " The object or its kind does not exist in the cluster (for a kind: are Gantry's CRDs installed? helm install gantry-reconciler)."
	}
	return fmt.Sprintf("The Kubernetes API server refused the request (%s); it is not retried, since the same request fails again until something changes.%s", c.Name, hint)
}

// actionReadDiagnostic reports an action's failed read of the object it acts on: "<kind> Not
// Found" naming it when the cluster has no such object, else apiDiagnostic.
func actionReadDiagnostic(kind, id string, err error) diag.Diagnostic {
	if apierrors.IsNotFound(err) {
		return diag.NewAttributeErrorDiagnostic(path.Root("name"), kind+" Not Found",
			fmt.Sprintf("The cluster has no %s %s, so the action has nothing to act on. Check name (and namespace): the action takes an "+
				"object that exists, e.g. one a gantry resource of this configuration created.", kind, id))
	}
	return apiDiagnostic(kind, "Reading", err)
}

// errConfigNotKnown is the clients' error while the provider configuration has values that are
// not known yet (gantryProvider.Configure). It names no remedy itself: a plan that skips the
// candidate count or the rollout preview quotes it in a warning that says the apply makes
// them, which a remedy of its own would contradict; clientDiagnostic, for what cannot wait,
// says to apply those resources first.
var errConfigNotKnown = errors.New("the provider configuration contains values that are not known yet (they depend on resources not created yet)")

// clientDiagnostic reports that the provider could not build its Kubernetes client, or could
// not reach the API server (*kube.UnreachableError).
func clientDiagnostic(err error) diag.Diagnostic {
	var ue *kube.UnreachableError
	if errors.As(err, &ue) && ue.Permanent && strings.Contains(ue.Err.Error(), "getting credentials: exec: ") {
		return diag.NewErrorDiagnostic("Kubernetes Credential Plugin Failed",
			fmt.Sprintf("The provider could not get credentials for the Kubernetes API server from its credential plugin.\n\nOriginal Error: %s", err))
	}
	if errors.As(err, &ue) {
		return diag.NewErrorDiagnostic("Kubernetes API Server Unreachable",
			fmt.Sprintf("The provider could not connect to the Kubernetes API server.\n\nOriginal Error: %s", err))
	}
	detail := fmt.Sprintf("The provider could not build a Kubernetes client from its configuration and environment.\n\nOriginal Error: %s", err)
	if errors.Is(err, errConfigNotKnown) {
		detail += "; apply those first, e.g. with -target"
	}
	return diag.NewErrorDiagnostic("Kubernetes Client Configuration Error", detail)
}

// readMappingDiagnostic reports an object read from the cluster that cannot be mapped to the
// resource's attributes (e.g. written by a newer reconciler or edited into an invalid shape).
func readMappingDiagnostic(kind, id string, err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Error Reading "+kind,
		fmt.Sprintf("The %s %s could not be mapped to Terraform: %v", kind, id, err))
}

// unexpectedAttributeDiagnostic reports a computed attribute planned from a naming contract
// that the reconciler reports differently.
func unexpectedAttributeDiagnostic(attr, got, planned string) diag.Diagnostic {
	return diag.NewAttributeErrorDiagnostic(path.Root(attr), "Unexpected "+attr,
		fmt.Sprintf("The reconciler reports %s %q, but the provider planned %q from the naming contract. "+
			"The reconciler and the provider versions probably do not match.", attr, got, planned))
}

// importIDDiagnostic reports an import ID that is not of the kind's form.
func importIDDiagnostic(err error) diag.Diagnostic {
	return diag.NewErrorDiagnostic("Invalid Import ID", strings.TrimSpace(err.Error()))
}

// beingDeletedDiagnostic is the warning of an apply onto an object whose deletion has begun
// (a destroy that stopped, e.g. on a failing package-set uninstall): the configuration was
// written to it and nothing is waited for.
func beingDeletedDiagnostic(kind, id string) diag.Diagnostic {
	return diag.NewWarningDiagnostic(kind+" Is Being Deleted",
		fmt.Sprintf("%s %s is being deleted; the configuration was written to it and the apply does not wait for it. "+
			"Run terraform destroy to finish the deletion (for a package set, uninstall_on_delete = false lets it finish without uninstall stages).", kind, id))
}

// waitingForPausedSetDiagnostic is the warning of a package set applied while a paused set
// holds it (Ready reason WaitingForPausedSet, message naming that set): the apply returns
// instead of waiting its whole timeout, since nothing moves until the user resumes the set.
func waitingForPausedSetDiagnostic(id, message string) diag.Diagnostic {
	return diag.NewWarningDiagnostic("PackageSet Waits for a Paused Package Set",
		fmt.Sprintf("PackageSet %s was written but waits: %s. It continues when that set is resumed (paused = false); the apply does not wait for it.", id, message))
}
