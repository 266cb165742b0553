package provider

// gantry_package_set's drain attribute: spec.drain, NodeWright's drain configuration (nodewright
// #259, kubectl drain's --grace-period, --timeout, --delete-emptydir-data and --force), the pods
// never drained, and what happens at the timeout. Checked at plan where the values are known.

import (
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// drainModel is drain (v1alpha1.Drain).
type drainModel struct {
	GracePeriod           types.String      `tfsdk:"grace_period"`
	Timeout               types.String      `tfsdk:"timeout"`
	DeleteEmptyDirData    types.Bool        `tfsdk:"delete_empty_dir_data"`
	Force                 types.Bool        `tfsdk:"force"`
	SkipPodLabels         map[string]string `tfsdk:"skip_pod_labels"`
	OnTimeout             types.String      `tfsdk:"on_timeout"`
	NonInterruptTimeout   types.String      `tfsdk:"non_interrupt_timeout"`
	OnNonInterruptTimeout types.String      `tfsdk:"on_non_interrupt_timeout"`
}

// drainAttribute is the schema of drain.
func drainAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "How a node is drained before its interrupt (and before the uninstall of a package with an interrupt).\n\nThe settings mirror `kubectl drain`, as NodeWright's do: " +
			"`grace_period`, `timeout`, `delete_empty_dir_data`, `force`, the pods never drained (`skip_pod_labels`) and what happens at the timeout (`on_timeout`). " +
			"Pods are evicted through the Eviction API, so PodDisruptionBudgets apply. Left alone whatever the settings: pods not running or pending, `kube-system`, " +
			"DaemonSet pods (`kubectl drain --ignore-daemonsets`, always on), pods tolerating the unschedulable taint, the stage pods and the reconciler's pod. " +
			"Unset, like every attribute in it: the drain as it always was (each pod's own grace period, no timeout, emptyDir and unmanaged pods evicted). " +
			"As NodeWright, `delete_empty_dir_data` and `force` default to `true`, the opposite of `kubectl drain`'s defaults: package sets run at bring-up and in maintenance windows. " +
			"While the drain waits, the set's `DrainBlocked` condition names what holds it; the rollout preview at plan counts a drain held by a PodDisruptionBudget or by " +
			"these settings as blocked, and with `timeout` shows what `on_timeout` does then.",
		Attributes: map[string]schema.Attribute{
			"grace_period": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Grace period given to each evicted pod, e.g. `30s` (`kubectl drain --grace-period`; the eviction's `gracePeriodSeconds`, whole seconds, rounded up).\n\n" +
					"Unset: each pod's own `terminationGracePeriodSeconds`. `0s` deletes the pods at once, without waiting for their containers to stop (a plan warning says so).",
				Validators: []validator.String{durationValidator{}}},
			"timeout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Bound of the drain, e.g. `15m` (`kubectl drain --timeout`).\n\nIt counts from the drain's first eviction until no pod to evict is left and none is still terminating; " +
					"`on_timeout` says what happens then. Unset or `0s`: no timeout, the drain waits as long as it takes (a PodDisruptionBudget that never allows the eviction keeps the node cordoned).",
				Validators: []validator.String{durationValidator{}}},
			"delete_empty_dir_data": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Evict pods with `emptyDir` volumes, whose data is lost (`kubectl drain --delete-emptydir-data`). `false`: such pods are not evicted and hold the drain " +
					"(`DrainBlocked` names them) until they go or the `timeout`. Unset: `true`."},
			"force": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "Evict pods that declare no controller, which nothing recreates (`kubectl drain --force`). `false`: such pods are not evicted and hold the drain " +
					"(`DrainBlocked` names them) until they go or the `timeout`. Unset: `true`."},
			"skip_pod_labels": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Pod labels (all must match) of pods the drain never evicts and never waits for.\n\nThey keep running through the drain and the interrupt, e.g. a node agent that " +
					"survives a service restart. Unlike `pod_non_interrupt_labels`, whose pods must finish before the node is drained or interrupted (the node waits for them), skipped pods " +
					"do not hold the node; a pod matching both is waited for. Not `kubectl drain --pod-selector`, which picks the pods to drain.",
				Validators: []validator.Map{labelsValidator{}}},
			"on_timeout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "What happens when the drain runs past `timeout` (needs `timeout`): `Fail` (default) or `Continue`.\n\n`Fail` makes the node erroring, naming the pods left and why " +
					"(the PodDisruptionBudget that refuses, still terminating, an emptyDir or unmanaged pod kept by these settings), so the apply fails; the node stays cordoned and its drain " +
					"is tried again after the backoff of a failed stage (5s doubling to 5m). `Continue` runs the interrupt with those pods on the node and says so in a Warning event `DrainTimeout`.",
				Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.DrainTimeoutFail), string(v1alpha1.DrainTimeoutContinue))}},
			"non_interrupt_timeout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "Longest wait for the pods of `pod_non_interrupt_labels` (long-running work that must not be interrupted), e.g. `4h`.\n\nThe wait (NVIDIA/nodewright #543) is " +
					"counted from the first pass that finds the node cordoned with them running; `on_non_interrupt_timeout` says what happens then. " +
					"Unset or `0s`: the node waits as long as they run (as Skyhook does).",
				Validators: []validator.String{durationValidator{}}},
			"on_non_interrupt_timeout": schema.StringAttribute{Optional: true,
				MarkdownDescription: "What happens at `non_interrupt_timeout` (needs it): `Fail` (default) or `Drain`.\n\n`Fail` makes the node erroring, naming the pods, so the apply fails; " +
					"the node stays cordoned and goes on waiting for them (the interrupt starts once they finish). `Drain` evicts them like any other pod " +
					"(the Eviction API and PodDisruptionBudgets, this drain's settings and `timeout`), then the interrupt runs.",
				Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.NonInterruptTimeoutFail), string(v1alpha1.NonInterruptTimeoutDrain))}},
		}}
}

// expandDrain maps drain to spec.drain (nil: unset). Errors: an unparsable duration (normally
// caught at plan by the validators), naming the attribute.
func expandDrain(m *drainModel) (*v1alpha1.Drain, error) {
	if m == nil {
		return nil, nil
	}
	out := &v1alpha1.Drain{DeleteEmptyDirData: m.DeleteEmptyDirData.ValueBoolPointer(), Force: m.Force.ValueBoolPointer(),
		OnTimeout: v1alpha1.DrainTimeoutAction(m.OnTimeout.ValueString()), OnNonInterruptTimeout: v1alpha1.NonInterruptTimeoutAction(m.OnNonInterruptTimeout.ValueString())}
	var err error
	if out.GracePeriod, err = metaDuration(m.GracePeriod, "drain.grace_period"); err != nil {
		return nil, err
	}
	if out.Timeout, err = metaDuration(m.Timeout, "drain.timeout"); err != nil {
		return nil, err
	}
	if out.NonInterruptTimeout, err = metaDuration(m.NonInterruptTimeout, "drain.non_interrupt_timeout"); err != nil {
		return nil, err
	}
	if len(m.SkipPodLabels) > 0 {
		out.SkipPodLabels = &metav1.LabelSelector{MatchLabels: cloneMap(m.SkipPodLabels)}
	}
	return out, nil
}

// flattenDrain maps spec.drain to drain; prior (the state's or plan's drain) keeps the user's
// spelling of durations and null versus empty for skip_pod_labels. The CRD defaults nothing,
// so an attribute unset in the configuration reads back null.
func flattenDrain(d *v1alpha1.Drain, prior *drainModel) *drainModel {
	if d == nil {
		return nil
	}
	var pd drainModel
	if prior != nil {
		pd = *prior
	}
	m := &drainModel{GracePeriod: types.StringNull(), Timeout: types.StringNull(), DeleteEmptyDirData: types.BoolPointerValue(d.DeleteEmptyDirData),
		Force: types.BoolPointerValue(d.Force), OnTimeout: optString(string(d.OnTimeout), pd.OnTimeout),
		NonInterruptTimeout: types.StringNull(), OnNonInterruptTimeout: optString(string(d.OnNonInterruptTimeout), pd.OnNonInterruptTimeout)}
	if d.GracePeriod != nil {
		m.GracePeriod = durationString(d.GracePeriod.Duration, pd.GracePeriod)
	}
	if d.Timeout != nil {
		m.Timeout = durationString(d.Timeout.Duration, pd.Timeout)
	}
	if d.NonInterruptTimeout != nil {
		m.NonInterruptTimeout = durationString(d.NonInterruptTimeout.Duration, pd.NonInterruptTimeout)
	}
	if d.SkipPodLabels != nil {
		m.SkipPodLabels = optMap(d.SkipPodLabels.MatchLabels, pd.SkipPodLabels)
	} else {
		m.SkipPodLabels = optMap(nil, pd.SkipPodLabels)
	}
	return m
}

// validateDrainConfig checks drain with the values known: on_timeout needs a timeout above 0s
// (the CRD's rule: without one the drain never times out), on_non_interrupt_timeout a
// non_interrupt_timeout above 0s; a warning for non_interrupt_timeout without
// pod_non_interrupt_labels (nothing is waited for); a warning for grace_period 0s (the
// API server deletes the pods at once) and for a grace_period at least as long as the timeout
// (evicted pods would still be terminating when it passes).
func validateDrainConfig(root configValue, diags *diag.Diagnostics) {
	d := root.Attr("drain")
	if !d.usable() {
		return
	}
	timeout, tok := durationOf(d.Attr("timeout"))
	if on, ok := d.Attr("on_timeout").String(); ok && (d.Attr("timeout").Null() || tok && timeout == 0) {
		diags.AddAttributeError(d.Attr("on_timeout").Path(), "on_timeout Needs timeout",
			fmt.Sprintf("%s = %q takes effect when the drain runs past drain.timeout, and without a timeout (unset or 0s) the drain never times out. "+
				"Set drain.timeout (e.g. \"15m\"), or leave on_timeout out.", d.Attr("on_timeout").Path(), on))
	}
	niTimeout, niok := durationOf(d.Attr("non_interrupt_timeout"))
	if on, ok := d.Attr("on_non_interrupt_timeout").String(); ok && (d.Attr("non_interrupt_timeout").Null() || niok && niTimeout == 0) {
		diags.AddAttributeError(d.Attr("on_non_interrupt_timeout").Path(), "on_non_interrupt_timeout Needs non_interrupt_timeout",
			fmt.Sprintf("%s = %q takes effect when the node has waited drain.non_interrupt_timeout for its non-interrupt pods, and without it (unset or 0s) the node waits "+
				"as long as they run. Set drain.non_interrupt_timeout (e.g. \"4h\"), or leave on_non_interrupt_timeout out.", d.Attr("on_non_interrupt_timeout").Path(), on))
	}
	if pl := root.Attr("pod_non_interrupt_labels"); niok && niTimeout > 0 && pl.Null() {
		diags.AddAttributeWarning(d.Attr("non_interrupt_timeout").Path(), "Non-Interrupt Timeout Without Non-Interrupt Pods",
			fmt.Sprintf("%s bounds the wait for the pods of pod_non_interrupt_labels, which is not set: no pod is waited for, so the timeout never applies.", d.Attr("non_interrupt_timeout").Path()))
	}
	grace, gok := durationOf(d.Attr("grace_period"))
	switch {
	case gok && grace == 0:
		diags.AddAttributeWarning(d.Attr("grace_period").Path(), "Evicted Pods Deleted at Once",
			fmt.Sprintf("%s = \"0s\" deletes each evicted pod at once: the API server removes it without waiting for its containers to stop (as kubectl drain --grace-period=0). "+
				"Use \"1s\" for the shortest graceful stop, or leave grace_period out for each pod's own terminationGracePeriodSeconds.", d.Attr("grace_period").Path()))
	case gok && tok && timeout > 0 && grace >= timeout:
		diags.AddAttributeWarning(d.Attr("grace_period").Path(), "Grace Period Outlasts the Drain Timeout",
			fmt.Sprintf("%s (%s) is not shorter than drain.timeout (%s): pods evicted with it may still be terminating when the drain times out, so on_timeout decides "+
				"before they could stop. Make the timeout longer than the grace period.", d.Attr("grace_period").Path(), grace, timeout))
	}
}

// durationOf is a known, valid duration attribute's value (ok false: null, unknown or not a
// duration, which its validator reports).
func durationOf(v configValue) (time.Duration, bool) {
	s, ok := v.String()
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil && d >= 0
}
