package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Pod resources and placement shared by gantry_performer and gantry_executor: the models of
// the resources and tolerations attributes and their mapping to and from the API's
// corev1.ResourceRequirements and v1alpha1.Scheduling.

type resourcesModel struct {
	Requests map[string]string `tfsdk:"requests"`
	Limits   map[string]string `tfsdk:"limits"`
}

type tolerationModel struct {
	Key               types.String `tfsdk:"key"`
	Operator          types.String `tfsdk:"operator"`
	Value             types.String `tfsdk:"value"`
	Effect            types.String `tfsdk:"effect"`
	TolerationSeconds types.Int64  `tfsdk:"toleration_seconds"`
}

// expandResources maps the resources attribute (nil: none) to the container's requests and
// limits. Errors: an unparsable quantity, naming it, e.g. resources.limits["memory"] = "1x".
func expandResources(m *resourcesModel) (corev1.ResourceRequirements, error) {
	var out corev1.ResourceRequirements
	if m == nil {
		return out, nil
	}
	var err error
	if out.Requests, err = expandQuantities("resources.requests", m.Requests); err != nil {
		return out, err
	}
	if out.Limits, err = expandQuantities("resources.limits", m.Limits); err != nil {
		return out, err
	}
	return out, nil
}

// flattenResources maps the container's requests and limits to the resources attribute:
// null when the object has neither and prior (may be nil) had none.
func flattenResources(in corev1.ResourceRequirements, prior *resourcesModel) *resourcesModel {
	var priorRes resourcesModel
	if prior != nil {
		priorRes = *prior
	}
	req := flattenQuantities(in.Requests, priorRes.Requests)
	lim := flattenQuantities(in.Limits, priorRes.Limits)
	if req != nil || lim != nil || prior != nil {
		return &resourcesModel{Requests: req, Limits: lim}
	}
	return nil
}

// expandScheduling maps node_selector, tolerations, runtime_class_name and
// priority_class_name to the API's Scheduling (affinity, where a kind has it, is added by the
// caller). Null attributes are left unset.
func expandScheduling(nodeSelector map[string]string, tolerations []tolerationModel, runtimeClassName, priorityClassName types.String) v1alpha1.Scheduling {
	var out v1alpha1.Scheduling
	out.NodeSelector = cloneMap(nodeSelector)
	for _, t := range tolerations {
		tol := corev1.Toleration{
			Key:      t.Key.ValueString(),
			Operator: corev1.TolerationOperator(t.Operator.ValueString()),
			Value:    t.Value.ValueString(),
			Effect:   corev1.TaintEffect(t.Effect.ValueString()),
		}
		if !t.TolerationSeconds.IsNull() {
			s := t.TolerationSeconds.ValueInt64()
			tol.TolerationSeconds = &s
		}
		out.Tolerations = append(out.Tolerations, tol)
	}
	if !runtimeClassName.IsNull() {
		s := runtimeClassName.ValueString()
		out.RuntimeClassName = &s
	}
	if !priorityClassName.IsNull() {
		s := priorityClassName.ValueString()
		out.PriorityClassName = &s
	}
	return out
}

// flattenTolerations maps the API's tolerations to the tolerations attribute; prior (the
// state's tolerations, matched by index) only decides null versus empty.
func flattenTolerations(in []corev1.Toleration, prior []tolerationModel) []tolerationModel {
	var out []tolerationModel
	for i, t := range in {
		var pt tolerationModel
		if i < len(prior) {
			pt = prior[i]
		}
		out = append(out, tolerationModel{
			Key:               optString(t.Key, pt.Key),
			Operator:          optString(string(t.Operator), pt.Operator),
			Value:             optString(t.Value, pt.Value),
			Effect:            optString(string(t.Effect), pt.Effect),
			TolerationSeconds: types.Int64PointerValue(t.TolerationSeconds),
		})
	}
	if out == nil && prior != nil {
		out = []tolerationModel{}
	}
	return out
}

// expandQuantities parses quantities (resource name → quantity); nil when in is empty.
// field names the attribute in the error.
func expandQuantities(field string, in map[string]string) (corev1.ResourceList, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := corev1.ResourceList{}
	for k, v := range in {
		q, err := k8sresource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s[%q] = %q: %w", field, k, v, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// flattenQuantities renders quantities, keeping prior's spelling where it means the same
// ("0.5" stays "0.5" although the API writes "500m").
func flattenQuantities(in corev1.ResourceList, prior map[string]string) map[string]string {
	if len(in) == 0 {
		if prior != nil && len(prior) == 0 {
			return map[string]string{}
		}
		return nil
	}
	out := make(map[string]string, len(in))
	for k, q := range in {
		out[string(k)] = q.String()
		if pv, ok := prior[string(k)]; ok {
			if pq, err := k8sresource.ParseQuantity(pv); err == nil && pq.Cmp(q) == 0 {
				out[string(k)] = pv
			}
		}
	}
	return out
}
