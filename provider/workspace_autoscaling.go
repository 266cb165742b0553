package provider

import (
	"context"
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Autoscaling that Terraform never fights (issue 40 item 4; KAITO's asks kaito-project/kaito
// #1380 and #1659): gantry_workspace's autoscaling block becomes spec.autoscaling, whose
// replicas the reconciler leaves to a HorizontalPodAutoscaler or an external autoscaler
// (internal/workspace/autoscaling.go). Terraform never holds the count: resource.count
// conflicts with autoscaling at plan, and the replicas the autoscaler sets are only read, into
// the computed current_replicas and desired_replicas, which no plan modifier touches: a plan
// that changes nothing keeps their refreshed values (no diff), a plan that changes something
// shows them as known after apply (a value planned from the state could come out different
// after the apply, which Terraform refuses).

type wsAutoscalingModel struct {
	MinReplicas types.Int64    `tfsdk:"min_replicas"`
	MaxReplicas types.Int64    `tfsdk:"max_replicas"`
	External    types.Bool     `tfsdk:"external"`
	Metric      *wsMetricModel `tfsdk:"metric"`
}

type wsMetricModel struct {
	CPUAverageValue types.String         `tfsdk:"cpu_average_value"`
	Pods            *wsMetricSourceModel `tfsdk:"pods"`
	External        *wsMetricSourceModel `tfsdk:"external"`
}

type wsMetricSourceModel struct {
	Name         types.String      `tfsdk:"name"`
	AverageValue types.String      `tfsdk:"average_value"`
	Selector     map[string]string `tfsdk:"selector"`
}

// maxAutoscaledReplicas is the cap of autoscaling.max_replicas: the CRD's cap of
// spec.resource.count (maxWorkspaceCount), which the autoscaling bounds share.
const maxAutoscaledReplicas = maxWorkspaceCount

// averageValueRe is the CRD's pattern of a metric target: a plain decimal quantity with an
// optional suffix (no sign, no exponent).
var averageValueRe = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

// metricNameRe is the CRD's pattern of a metric name.
var metricNameRe = regexp.MustCompile(`^[A-Za-z0-9_:.][A-Za-z0-9_:.-]*$`)

func autoscalingAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "Autoscaling that Terraform never fights: an autoscaler owns the replicas between `min_replicas` and `max_replicas`.\n\nIt is what KAITO's users ask for in " +
			"[kaito-project/kaito#1380](https://github.com/kaito-project/kaito/issues/1380), a KEDA autoscaler for workspaces, and " +
			"[#1659](https://github.com/kaito-project/kaito/issues/1659), the InferenceSet that scales them. " +
			"With `metric`, the reconciler creates a HorizontalPodAutoscaler (`autoscaling/v2`) " +
			"`workspace-<name>` for the Deployment `workspace-<name>` (owned by the workspace, deleted with it); with `external = true`, an " +
			"autoscaler of yours does (a KEDA `ScaledObject` whose `scaleTargetRef` is that Deployment) and no HorizontalPodAutoscaler is made. " +
			"Either way the reconciler sets the Deployment's replicas only when it creates it (to `min_replicas`) and never writes them again, " +
			"so it never takes the autoscaler's count back, and Terraform never shows that count as a change: it is read into `current_replicas` " +
			"and `desired_replicas`. Conflicts with `resource.count`. The apply waits until `min_replicas` replicas are Ready, and the " +
			"workspace stays Ready while at least that many are. Inference only, and not for a model served across nodes " +
			"(`inference.model_gpus` above `resource.gpu_count`). Removing the block gives the replicas back to `resource.count`. " +
			"See the [Autoscaling workspaces](../guides/workspace-autoscaling.md) guide.",
		Attributes: autoscalingAttributes("workspace-<name>", "the workspace is Ready", "the cap of `resource.count`",
			"The model server's pods request no CPU, so a utilization percentage would have nothing to be a percentage of.",
			"A per-pod metric of the custom metrics API averaged over the pods (a `Pods` metric), e.g. vLLM's "+
				"`vllm:num_requests_waiting` through a Prometheus adapter, the metric KAITO's KEDA scaler scales on."),
	}
}

// autoscalingAttributes are the attributes of an autoscaling block (gantry_workspace's and
// gantry_performer's, one model): deployment names the Deployment scaled, ready what
// min_replicas keeps, capWhy why max_replicas stops at 64, cpuNote and podsDesc the kind's words
// on the CPU and Pods metrics.
func autoscalingAttributes(deployment, ready, capWhy, cpuNote, podsDesc string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"min_replicas": schema.Int64Attribute{Required: true, MarkdownDescription: fmt.Sprintf("Fewest replicas (1-%d): the Deployment starts with them, and %s while at least this many are.", maxAutoscaledReplicas, ready),
			Validators: []validator.Int64{int64validator.Between(1, maxAutoscaledReplicas)}},
		"max_replicas": schema.Int64Attribute{Required: true, MarkdownDescription: fmt.Sprintf("Most replicas (1-%d, %s; at least `min_replicas`).", maxAutoscaledReplicas, capWhy),
			Validators: []validator.Int64{int64validator.Between(1, maxAutoscaledReplicas)}},
		"external": schema.BoolAttribute{Optional: true, MarkdownDescription: "An autoscaler of yours owns the replicas (a KEDA `ScaledObject` targeting the Deployment " +
			"`" + deployment + "`, with the same bounds): no HorizontalPodAutoscaler is made and no `metric` is given. Default `false`."},
		"metric": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "What the HorizontalPodAutoscaler scales on: exactly one of `cpu_average_value`, `pods` and `external`, " +
			"each an average value per pod (HPA `autoscaling/v2` target type `AverageValue`). Required unless `external = true`.",
			Attributes: map[string]schema.Attribute{
				"cpu_average_value": schema.StringAttribute{Optional: true, MarkdownDescription: "CPU each pod should use on average, a quantity such as `\"2\"` or `\"1500m\"` " +
					"(a `Resource` metric). " + cpuNote,
					Validators: []validator.String{averageValue{}}},
				"pods":     metricSourceAttribute(podsDesc),
				"external": metricSourceAttribute("A metric of the external metrics API divided by the pods (an `External` metric), e.g. a queue's length."),
			},
		},
	}
}

func metricSourceAttribute(desc string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: desc,
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Metric name as the metrics API serves it (letters, digits, `_`, `:`, `.`, `-`; no `/` or `%`).",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 253), stringvalidator.RegexMatches(metricNameRe, "must be a metric name: letters, digits, '_', ':', '.' and '-'")}},
			"average_value": schema.StringAttribute{Required: true, MarkdownDescription: "Target value per pod, a quantity above 0 such as `\"5\"` or `\"500m\"`.",
				Validators: []validator.String{averageValue{}}},
			"selector": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels of the metric (its `matchLabels`), at most 16.",
				Validators: []validator.Map{mapvalidator.SizeAtMost(16), labelsValidator{}}},
		},
	}
}

// averageValue checks a metric target: a quantity above 0 in the CRD's plain form.
type averageValue struct{}

func (averageValue) Description(context.Context) string {
	return "a quantity above 0 such as 5, 0.5 or 500m"
}
func (v averageValue) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (averageValue) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	q, err := k8sresource.ParseQuantity(s)
	if err != nil || !averageValueRe.MatchString(s) || len(s) > 32 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Metric Target",
			fmt.Sprintf("%s = %q is not a quantity such as 5, 0.5 or 500m (digits, an optional fraction and suffix; no sign or exponent).", req.Path, s))
		return
	}
	if q.Sign() <= 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Metric Target",
			fmt.Sprintf("%s = %q: a HorizontalPodAutoscaler's average value must be above 0.", req.Path, s))
	}
}

// autoscalingValidator checks what the attribute validators cannot see of the autoscaling
// block, where the values are known: resource.count set beside it (the replicas are the
// autoscaler's: a count Terraform held would fight it), max_replicas below min_replicas, a
// metric missing (no external autoscaler) or given with external = true, not exactly one kind
// of metric, a tuning workspace, and a model served across nodes (inference.model_gpus above
// resource.gpu_count: a group's size is fixed).
type autoscalingValidator struct{}

func (autoscalingValidator) Description(context.Context) string {
	return "autoscaling owns the replicas: no resource.count beside it, max_replicas >= min_replicas, a metric unless external"
}
func (v autoscalingValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (autoscalingValidator) ValidateResource(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	as := root.Attr("autoscaling")
	if as.Null() || as.Unknown() {
		return
	}
	at := path.Root("autoscaling")
	if count := root.Attr("resource").Attr("count"); count.usable() {
		resp.Diagnostics.AddAttributeError(path.Root("resource").AtName("count"), "Conflicting Attributes: resource.count and autoscaling",
			"resource.count conflicts with autoscaling: with autoscaling the replicas belong to the autoscaler, between autoscaling.min_replicas and "+
				"autoscaling.max_replicas, and a count held by Terraform would fight it. Remove resource.count (or remove autoscaling to fix the count).")
	}
	if root.Attr("tuning").usable() {
		resp.Diagnostics.AddAttributeError(at, "Autoscaling Is for Inference", "autoscaling scales inference replicas; a tuning workspace runs one Job pod. Remove autoscaling.")
	}
	checkAutoscalingBlock(as, at, resp)
	inf := root.Attr("inference")
	mg, mok := inf.Attr("model_gpus").Int64()
	gpus, gok := root.Attr("resource").Attr("gpu_count").Int64()
	if mok && gok && mg > gpus {
		resp.Diagnostics.AddAttributeError(path.Root("inference").AtName("model_gpus"), "A Multi-Node Model Cannot Be Autoscaled",
			fmt.Sprintf("inference.model_gpus = %d is above resource.gpu_count = %d: the replicas would serve one model across nodes, a group whose size is the model's, "+
				"which autoscaling cannot change. Give each replica the model's GPUs (resource.gpu_count = %d), or remove autoscaling.", mg, gpus, mg))
	}
}

// checkAutoscalingBlock checks what an autoscaling block (gantry_workspace's, gantry_performer's)
// says of itself: max_replicas not below min_replicas, and its metric (checkAutoscalingMetric).
func checkAutoscalingBlock(as configValue, at path.Path, resp *resource.ValidateConfigResponse) {
	lo, lok := as.Attr("min_replicas").Int64()
	hi, hok := as.Attr("max_replicas").Int64()
	if lok && hok && hi < lo {
		resp.Diagnostics.AddAttributeError(at.AtName("max_replicas"), "Invalid Replica Bounds",
			fmt.Sprintf("autoscaling.max_replicas = %d is below autoscaling.min_replicas = %d.", hi, lo))
	}
	checkAutoscalingMetric(as, at, resp)
}

// checkAutoscalingMetric: a metric unless external = true, none with it, and exactly one kind.
func checkAutoscalingMetric(as configValue, at path.Path, resp *resource.ValidateConfigResponse) {
	ext := as.Attr("external")
	metric := as.Attr("metric")
	if ext.Unknown() || metric.Unknown() {
		return
	}
	external, _ := ext.Bool()
	switch {
	case external && !metric.Null():
		resp.Diagnostics.AddAttributeError(at.AtName("metric"), "Metric With an External Autoscaler",
			"autoscaling.metric is for the HorizontalPodAutoscaler the reconciler makes; with autoscaling.external = true your autoscaler (a KEDA ScaledObject) "+
				"has its own triggers and no HorizontalPodAutoscaler is made. Remove metric, or set external = false.")
	case !external && metric.Null():
		resp.Diagnostics.AddAttributeError(at.AtName("metric"), "Missing Autoscaling Metric",
			"autoscaling needs a metric for its HorizontalPodAutoscaler (cpu_average_value, pods or external), or external = true when an autoscaler of yours "+
				"(a KEDA ScaledObject) scales the Deployment.")
	case !metric.Null():
		set, known := 0, true
		for _, k := range []string{"cpu_average_value", "pods", "external"} {
			v := metric.Attr(k)
			known = known && !v.Unknown()
			if !v.Null() {
				set++
			}
		}
		if known && set != 1 {
			resp.Diagnostics.AddAttributeError(at.AtName("metric"), "Invalid Autoscaling Metric",
				fmt.Sprintf("autoscaling.metric needs exactly one of cpu_average_value, pods and external (%d set).", set))
		}
	}
}

func expandAutoscaling(a *wsAutoscalingModel) *v1alpha1.Autoscaling {
	if a == nil {
		return nil
	}
	out := &v1alpha1.Autoscaling{MinReplicas: int32(a.MinReplicas.ValueInt64()), MaxReplicas: int32(a.MaxReplicas.ValueInt64()), External: a.External.ValueBool()}
	if m := a.Metric; m != nil {
		out.Metric = &v1alpha1.AutoscalingMetric{CPUAverageValue: m.CPUAverageValue.ValueString(), Pods: expandMetricSource(m.Pods), External: expandMetricSource(m.External)}
	}
	return out
}

func expandMetricSource(s *wsMetricSourceModel) *v1alpha1.AutoscalingMetricSource {
	if s == nil {
		return nil
	}
	return &v1alpha1.AutoscalingMetricSource{Name: s.Name.ValueString(), AverageValue: s.AverageValue.ValueString(), Selector: cloneMap(s.Selector)}
}

// flattenAutoscaling maps spec.autoscaling back; prior (the state or plan) decides null versus
// false or empty.
func flattenAutoscaling(a *v1alpha1.Autoscaling, prior *wsAutoscalingModel) *wsAutoscalingModel {
	if a == nil {
		return nil
	}
	if prior == nil {
		prior = &wsAutoscalingModel{}
	}
	out := &wsAutoscalingModel{MinReplicas: types.Int64Value(int64(a.MinReplicas)), MaxReplicas: types.Int64Value(int64(a.MaxReplicas)),
		External: optBool(a.External, prior.External)}
	if m := a.Metric; m != nil {
		pm := prior.Metric
		if pm == nil {
			pm = &wsMetricModel{}
		}
		out.Metric = &wsMetricModel{CPUAverageValue: optString(m.CPUAverageValue, pm.CPUAverageValue),
			Pods: flattenMetricSource(m.Pods, pm.Pods), External: flattenMetricSource(m.External, pm.External)}
	}
	return out
}

func flattenMetricSource(s *v1alpha1.AutoscalingMetricSource, prior *wsMetricSourceModel) *wsMetricSourceModel {
	if s == nil {
		return nil
	}
	if prior == nil {
		prior = &wsMetricSourceModel{}
	}
	return &wsMetricSourceModel{Name: types.StringValue(s.Name), AverageValue: types.StringValue(s.AverageValue), Selector: optMap(s.Selector, prior.Selector)}
}

// statusInt64 is status.<field>, an integer, as a Terraform number (null when absent or 0: a
// tuning workspace, or one the reconciler has not reported on yet).
func statusInt64(u *unstructured.Unstructured, field string) types.Int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, "status", field)
	if v == 0 {
		return types.Int64Null()
	}
	return types.Int64Value(v)
}
