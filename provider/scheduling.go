package provider

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-jsontypes/jsontypes"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Pod resources and placement shared by gantry_performer, gantry_executor and gantry_workspace:
// the schema and models of the resources, tolerations and affinity attributes and their mapping
// to and from the API's corev1.ResourceRequirements and v1alpha1.Scheduling.

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

// tolerationsAttribute is the schema of the tolerations attribute; description is the
// kind-specific top-level description.
func tolerationsAttribute(description string) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{
		Optional:            true,
		MarkdownDescription: description,
		NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{
				"key": schema.StringAttribute{
					Optional:            true,
					MarkdownDescription: "Taint key to tolerate; empty with operator `Exists` tolerates every taint.",
				},
				"operator": schema.StringAttribute{
					Optional:            true,
					MarkdownDescription: "`Equal` (the Kubernetes default) or `Exists`.",
					Validators:          []validator.String{stringvalidator.OneOf(string(corev1.TolerationOpEqual), string(corev1.TolerationOpExists))},
				},
				"value": schema.StringAttribute{
					Optional:            true,
					MarkdownDescription: "Taint value to match with operator `Equal`.",
				},
				"effect": schema.StringAttribute{
					Optional:            true,
					MarkdownDescription: "Taint effect to tolerate: `NoSchedule`, `PreferNoSchedule` or `NoExecute`; empty means all.",
					Validators: []validator.String{stringvalidator.OneOf(string(corev1.TaintEffectNoSchedule),
						string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute))},
				},
				"toleration_seconds": schema.Int64Attribute{
					Optional:            true,
					MarkdownDescription: "Seconds a `NoExecute` taint is tolerated before eviction; unset means forever.",
					Validators:          []validator.Int64{int64validator.AtLeast(0)},
				},
			},
		},
	}
}

// affinityAttribute is the schema of the affinity attribute (a JSON string of a
// corev1.Affinity); kind names the pods, e.g. "performer Pod".
func affinityAttribute(kind string) schema.StringAttribute {
	return schema.StringAttribute{
		CustomType: jsontypes.NormalizedType{},
		Optional:   true,
		MarkdownDescription: "Affinity of the " + kind + " as JSON, written with `jsonencode({ nodeAffinity = {...} })` using the Kubernetes " +
			"API's field names (`nodeAffinity`, `podAffinity`, `podAntiAffinity`). Unknown fields are rejected at plan time. " +
			"Whitespace and key order do not cause a diff.",
		Validators: []validator.String{jsonDecodesInto{typeName: "Affinity", new: func() any { return &corev1.Affinity{} }, check: affinityProblems}},
	}
}

// expandAffinity sets specMap's scheduling.affinity to the JSON the user wrote (null or
// unknown: left unset). Errors: JSON that does not parse (normally caught at plan time).
func expandAffinity(specMap map[string]interface{}, affinity jsontypes.Normalized) error {
	if affinity.IsNull() || affinity.IsUnknown() {
		return nil
	}
	var aff map[string]interface{}
	if err := json.Unmarshal([]byte(affinity.ValueString()), &aff); err != nil {
		return fmt.Errorf("affinity: %w", err)
	}
	if aff == nil {
		aff = map[string]interface{}{}
	}
	sched, _ := specMap["scheduling"].(map[string]interface{})
	if sched == nil {
		sched = map[string]interface{}{}
		specMap["scheduling"] = sched
	}
	sched["affinity"] = aff
	return nil
}

// flattenAffinity reads spec.scheduling.affinity of u as JSON: null when absent, prior when
// equal in meaning (so key order and whitespace of the configuration survive a refresh).
func flattenAffinity(u *unstructured.Unstructured, prior jsontypes.Normalized) (jsontypes.Normalized, error) {
	raw, found, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "scheduling", "affinity")
	if !found || raw == nil {
		return jsontypes.NewNormalizedNull(), nil
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return jsontypes.NewNormalizedNull(), fmt.Errorf("affinity: %w", err)
	}
	if !prior.IsNull() && !prior.IsUnknown() && jsonEqual(prior.ValueString(), string(b)) {
		return prior, nil
	}
	return jsontypes.NewNormalizedValue(string(b)), nil
}

// maxResourcesPerMap is how many resources a requests or limits map may name: the CRDs' bound
// (v1alpha1.ResourceRequirements), which keeps their CEL rules within the API server's budget.
const maxResourcesPerMap = 8

// quantityMapAttribute is a resources.requests or resources.limits attribute: resource name →
// quantity, each a Kubernetes quantity of zero or more; when bounded, at most
// maxResourcesPerMap entries (the performer's and executor's CRD bound; package sets have none).
func quantityMapAttribute(description string, bounded bool) schema.MapAttribute {
	v := []validator.Map{mapvalidator.ValueStringsAre(quantityValidator{})}
	if bounded {
		v = append(v, mapvalidator.SizeAtMost(maxResourcesPerMap))
		description += fmt.Sprintf(" At most %d resources, none negative.", maxResourcesPerMap)
	} else {
		description += " None negative."
	}
	return schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: description, Validators: v}
}

// expandResources maps the resources attribute (nil: none) to the container's requests and
// limits. Errors: an unparsable quantity, naming it, e.g. resources.limits["memory"] = "1x".
func expandResources(m *resourcesModel) (v1alpha1.ResourceRequirements, error) {
	var out v1alpha1.ResourceRequirements
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
func flattenResources(in v1alpha1.ResourceRequirements, prior *resourcesModel) *resourcesModel {
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
// priority_class_name to the API's Scheduling (affinity is added to the converted spec by
// expandAffinity). Null attributes are left unset.
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
