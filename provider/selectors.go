package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selectorExprModel is one node_selector_expressions element (a label selector requirement).
type selectorExprModel struct {
	Key      types.String `tfsdk:"key"`
	Operator types.String `tfsdk:"operator"`
	Values   []string     `tfsdk:"values"`
}

// selectorExprsAttribute is a node_selector_expressions attribute (label selector
// requirements: key, operator, values; checked by selectorExprsValidator) described by desc.
func selectorExprsAttribute(desc string) schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true, MarkdownDescription: desc,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"key":      schema.StringAttribute{Required: true, MarkdownDescription: "Node label key.", Validators: []validator.String{labelString{}}},
			"operator": schema.StringAttribute{Required: true, MarkdownDescription: "`In`, `NotIn`, `Exists` or `DoesNotExist`.", Validators: []validator.String{stringvalidator.OneOf("In", "NotIn", "Exists", "DoesNotExist")}},
			"values": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Label values (for `In` and `NotIn`).",
				Validators: []validator.List{listvalidator.ValueStringsAre(labelString{value: true})}},
		}},
		Validators: []validator.List{selectorExprsValidator{}},
	}
}

// selectorExprsValidator checks node_selector_expressions as metav1 does: In and NotIn need
// values, Exists and DoesNotExist take none (the CRD would accept the object and the set
// would stall with InvalidSpec at apply).
type selectorExprsValidator struct{}

func (selectorExprsValidator) Description(context.Context) string {
	return "In and NotIn need values; Exists and DoesNotExist take none"
}

func (v selectorExprsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (selectorExprsValidator) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for i, el := range req.ConfigValue.Elements() {
		o, ok := el.(types.Object)
		if !ok || o.IsNull() || o.IsUnknown() {
			continue
		}
		op, _ := o.Attributes()["operator"].(types.String)
		vals, _ := o.Attributes()["values"].(types.List)
		if op.IsUnknown() || vals.IsUnknown() {
			continue
		}
		n := len(vals.Elements())
		switch op.ValueString() {
		case "In", "NotIn":
			if n == 0 {
				resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i).AtName("values"), "Selector Needs Values",
					fmt.Sprintf("node_selector_expressions[%d]: operator %s needs at least one value.", i, op.ValueString()))
			}
		case "Exists", "DoesNotExist":
			if n > 0 {
				resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i).AtName("values"), "Selector Takes No Values",
					fmt.Sprintf("node_selector_expressions[%d]: operator %s takes no values.", i, op.ValueString()))
			}
		}
	}
}

// expandSelector is node_selector + node_selector_expressions as a label selector.
func expandSelector(labels map[string]string, exprs []selectorExprModel) metav1.LabelSelector {
	var s metav1.LabelSelector
	if len(labels) > 0 {
		s.MatchLabels = cloneMap(labels)
	}
	for _, e := range exprs {
		s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{
			Key: e.Key.ValueString(), Operator: metav1.LabelSelectorOperator(e.Operator.ValueString()), Values: append([]string(nil), e.Values...)})
	}
	return s
}

// flattenSelectorExprs is a selector's matchExpressions as node_selector_expressions (an empty
// values list, and an empty list of expressions, stay as the prior configuration wrote them).
func flattenSelectorExprs(exprs []metav1.LabelSelectorRequirement, prior []selectorExprModel) []selectorExprModel {
	out := emptyIfPrior[selectorExprModel](prior)
	for i, e := range exprs {
		var pe selectorExprModel
		if i < len(prior) {
			pe = prior[i]
		}
		out = append(out, selectorExprModel{Key: types.StringValue(e.Key), Operator: types.StringValue(string(e.Operator)), Values: optList(e.Values, pe.Values)})
	}
	return out
}
