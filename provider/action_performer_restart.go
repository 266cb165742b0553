package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/action"
	"github.com/hashicorp/terraform-plugin-framework/action/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var _ action.ActionWithConfigure = (*performerRestartAction)(nil)

// performerRestartTimeout is the default wait of gantry_performer_restart.
const performerRestartTimeout = 10 * time.Minute

// NewPerformerRestartAction returns the gantry_performer_restart action.
func NewPerformerRestartAction() action.Action { return &performerRestartAction{} }

type performerRestartAction struct{ actionBase }

type performerRestartModel struct {
	Name      types.String `tfsdk:"name"`
	Namespace types.String `tfsdk:"namespace"`
	Timeout   types.String `tfsdk:"timeout"`
}

func (a *performerRestartAction) Metadata(_ context.Context, req action.MetadataRequest, resp *action.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_performer_restart"
}

func (a *performerRestartAction) Schema(_ context.Context, _ action.SchemaRequest, resp *action.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "Restarts a performer, as `kubectl rollout restart` does for a Deployment: the Performer gets the " +
			"annotation `gantry.dev/restartedAt` (now), which is part of its Pod's spec hash, so the reconciler replaces the Pod " +
			"(phase Upgrading). Waits until the new Pod runs and is Ready and the performer is Running; fails with the " +
			"reconciler's reason (image pull, crash, scheduling) otherwise. The Performer's spec is not touched.",
		Attributes: map[string]schema.Attribute{
			"name":      schema.StringAttribute{Required: true, MarkdownDescription: "Name of the Performer."},
			"namespace": schema.StringAttribute{Optional: true, MarkdownDescription: "Namespace of the Performer; `default` when omitted."},
			"timeout":   actionTimeoutAttribute(performerRestartTimeout),
		},
	}
}

// Invoke stamps the restart annotation and waits for a Ready Pod carrying it.
func (a *performerRestartAction) Invoke(ctx context.Context, req action.InvokeRequest, resp *action.InvokeResponse) {
	var m performerRestartModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	ns := m.Namespace.ValueString()
	if ns == "" {
		ns = "default"
	}
	name, id := m.Name.ValueString(), ns+"/"+m.Name.ValueString()
	c, _, err := a.data.get()
	if err != nil {
		resp.Diagnostics.Append(clientDiagnostic(err))
		return
	}
	token := time.Now().UTC().Format(time.RFC3339Nano)
	patch, _ := json.Marshal(map[string]interface{}{"metadata": map[string]interface{}{"annotations": map[string]string{v1alpha1.AnnotationRestartedAt: token}}})
	ri := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns)
	if _, err := ri.Patch(ctx, name, k8stypes.MergePatchType, patch, metav1.PatchOptions{FieldManager: fieldManager + "-actions"}); err != nil {
		if apierrors.IsNotFound(err) {
			resp.Diagnostics.Append(actionReadDiagnostic("Performer", id, err))
		} else {
			resp.Diagnostics.Append(apiDiagnostic("Performer", "Restarting", err))
		}
		return
	}
	progress(resp, fmt.Sprintf("Performer %s: restart requested (%s=%s)", id, v1alpha1.AnnotationRestartedAt, token))
	err = pollUntil(ctx, actionTimeout(m.Timeout, performerRestartTimeout), func(msg string) { progress(resp, "Performer "+id+": "+msg) },
		func(ctx context.Context) (bool, string, error) {
			u, err := ri.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, "", err
			}
			return restartDone(ctx, c.Core.CoreV1().Pods(ns).Get, u, token)
		})
	if err != nil {
		resp.Diagnostics.AddError("Performer Restart Failed", fmt.Sprintf("Performer %s did not restart: %s.", id, err))
		return
	}
	progress(resp, "Performer "+id+": restarted; its new Pod is Running and Ready")
}

// restartDone reports whether the restart asked with token is over: the performer is Running
// and its Pod carries token and is Ready. A Failed verdict is an error with the reconciler's
// reason; msg says where it stands.
func restartDone(ctx context.Context, getPod func(context.Context, string, metav1.GetOptions) (*corev1.Pod, error), u *unstructured.Unstructured, token string) (bool, string, error) {
	v := wait.Evaluate(wait.Performer, u)
	if v.State == wait.Failed {
		return false, "", fmt.Errorf("phase %s: %s", v.Summary, failingReason(wait.Performer, u))
	}
	podName, _, _ := unstructured.NestedString(u.Object, "status", "podName")
	if podName == "" {
		return false, "phase " + orDash(v.Summary), nil
	}
	pod, err := getPod(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return false, "phase " + orDash(v.Summary) + ", waiting for its Pod", nil //nolint:nilerr // the Pod is being replaced
	}
	if pod.Annotations[v1alpha1.AnnotationRestartedAt] != token || pod.DeletionTimestamp != nil {
		return false, "phase " + orDash(v.Summary) + ", old Pod " + pod.Name + " still there", nil
	}
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && v.State == wait.Succeeded {
			return true, "", nil
		}
	}
	return false, "phase " + orDash(v.Summary) + ", new Pod " + pod.Name + " not Ready yet", nil
}
