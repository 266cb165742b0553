package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var _ action.ActionWithConfigure = (*packageSetResumeAction)(nil)

// packageSetResumeTimeout is the default wait of gantry_package_set_resume.
const packageSetResumeTimeout = 30 * time.Minute

// NewPackageSetResumeAction returns the gantry_package_set_resume action.
func NewPackageSetResumeAction() action.Action { return &packageSetResumeAction{} }

type packageSetResumeAction struct{ actionBase }

type packageSetActionModel struct {
	Name    types.String `tfsdk:"name"`
	Timeout types.String `tfsdk:"timeout"`
}

func (a *packageSetResumeAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_package_set_resume"
}

func (a *packageSetResumeAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Resumes a package set paused with the annotation `gantry.dev/pause=true` (how an operator stops a " +
			"rollout without editing the spec a configuration owns, as Skyhook's CLI pauses a Skyhook): removes the annotation " +
			"and waits until the set is `complete` on its nodes, failing with the reconciler's reason when it turns " +
			"`erroring` or `blocked`. A set paused by its configuration (`paused = true`) is not resumed: the action fails " +
			"saying so (set `paused = false` and apply).",
		Attributes: map[string]schema.Attribute{
			"name":    schema.StringAttribute{Required: true, MarkdownDescription: "Name of the PackageSet (cluster-scoped)."},
			"timeout": actionTimeoutAttribute(packageSetResumeTimeout),
		},
	}
}

// Invoke removes the pause annotation and waits for the set to complete.
func (a *packageSetResumeAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m packageSetActionModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := m.Name.ValueString()
	waited, err := a.annotateAndWait(ctx, resp, name, actionTimeout(m.Timeout, packageSetResumeTimeout), packageSetRequest{
		annotate: func(ctx context.Context, c *kube.Clients, u *unstructured.Unstructured, diags *diag.Diagnostics) bool {
			if paused, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); paused {
				diags.AddError("PackageSet Paused by Its Configuration",
					fmt.Sprintf("PackageSet %s has spec.paused = true: its configuration pauses it. Set paused = false on the gantry_package_set and apply.", name))
				return false
			}
			if u.GetAnnotations()[v1alpha1.AnnotationPause] == "" {
				progress(resp, "PackageSet "+name+": not paused by annotation; waiting for it to complete")
				return true
			}
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, v1alpha1.AnnotationPause)
			if _, err := c.Dynamic.Resource(wait.PackageSet.GVR).Patch(ctx, name, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: fieldManager + "-actions"}); err != nil {
				diags.Append(apiDiagnostic("PackageSet", "Resuming", err))
				return false
			}
			progress(resp, "PackageSet "+name+": resumed (annotation "+v1alpha1.AnnotationPause+" removed)")
			return true
		},
		check: func(_ context.Context, u *unstructured.Unstructured) (bool, string, error) { return setComplete(u) },
	})
	if !waited {
		return
	}
	if err != nil {
		resp.Diagnostics.AddError("PackageSet Resume Failed", fmt.Sprintf("PackageSet %s did not complete after resuming: %s.", name, err))
		return
	}
	progress(resp, "PackageSet "+name+": complete")
}

// setComplete reports whether the set is complete on its nodes (status complete, not paused),
// an error naming the reconciler's reason when it is erroring or blocked; msg is its status and
// complete-nodes count.
func setComplete(u *unstructured.Unstructured) (bool, string, error) {
	status, _, _ := unstructured.NestedString(u.Object, "status", "status")
	nodes, _, _ := unstructured.NestedString(u.Object, "status", "completeNodes")
	msg := fmt.Sprintf("status %s, %s nodes complete", orDash(status), orDash(nodes))
	v := wait.Evaluate(wait.PackageSet, u)
	switch {
	case v.State == wait.Failed:
		return false, msg, fmt.Errorf("status %s: %s", status, failingReason(wait.PackageSet, u))
	case u.GetAnnotations()[v1alpha1.AnnotationPause] == "true":
		return false, msg, fmt.Errorf("paused again (annotation %s=true)", v1alpha1.AnnotationPause)
	}
	return v.State == wait.Succeeded, msg, nil
}
