package provider

// rollout.node_edges (NixFleet's edges between hosts), rollout.fleet_budget (NixFleet's
// fleet-wide disruption budgets shared by several rollouts, with their selector) and
// after_converged (NixFleet's channelEdges between channels) of gantry_package_set.

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

type nodeEdgeModel struct {
	Before types.String `tfsdk:"before"`
	After  types.String `tfsdk:"after"`
	Reason types.String `tfsdk:"reason"`
}

type fleetBudgetModel struct {
	Name              types.String        `tfsdk:"name"`
	MaxInFlight       types.Int64         `tfsdk:"max_in_flight"`
	MaxInFlightPct    types.Int64         `tfsdk:"max_in_flight_pct"`
	NodeSelector      map[string]string   `tfsdk:"node_selector"`
	NodeSelectorExprs []selectorExprModel `tfsdk:"node_selector_expressions"`
}

// convergedEdgeModel is one after_converged element (spec.afterConverged).
type convergedEdgeModel struct {
	Name   types.String `tfsdk:"name"`
	Reason types.String `tfsdk:"reason"`
}

// afterConvergedAttribute is after_converged.
func afterConvergedAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true,
		MarkdownDescription: "Package sets that must be converged before this set starts any node, as NixFleet's `channelEdges[] {before, after, reason}`.\n\n" +
			"Converged: complete on every node the named set selects, for its current generation. A set-wide gate, where `after` waits per node: while a named " +
			"set rolls out, is halted (erroring, blocked, or Stalled: a quarantined version, a refused release) or paused, this set starts no node (nodes already " +
			"under way finish), and `status.afterConvergedWaits` and the Ready condition's message name the set, its `reason` and why. As NixFleet's gate, a " +
			"named set that does not exist or has no history (never reconciled, no node carries its record) does not hold, nor does a disabled or deleting one. " +
			"Sets whose `after` and `after_converged` edges form a cycle are an invalid spec (the apply fails naming it); a set naming itself fails the plan. " +
			"A reference (`gantry_package_set.canary.name`) also makes Terraform create the named set first and wait until it is complete. At most 16 entries.",
		Validators: []validator.List{listvalidator.SizeAtMost(16), uniqueNames{what: "Package Set"}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the package set that must be converged first.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 40), stringvalidator.RegexMatches(setNameRe, "must be a package set name: a DNS-1123 label")}},
			"reason": schema.StringAttribute{Optional: true, MarkdownDescription: "Why this set waits, as NixFleet's `channelEdges[].reason`, e.g. `canary before production`.\n\n" +
				"Shown where the set waits: `status.afterConvergedWaits` and the Ready condition's message say `package set <name> (<reason>) is ...`, and the " +
				"rollout preview's constraints. At most 256 characters.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 256)}},
		}}}
}

// expandConvergedEdges is spec.afterConverged.
func expandConvergedEdges(in []convergedEdgeModel) []v1alpha1.ConvergedEdge {
	var out []v1alpha1.ConvergedEdge
	for _, e := range in {
		out = append(out, v1alpha1.ConvergedEdge{Name: e.Name.ValueString(), Reason: e.Reason.ValueString()})
	}
	return out
}

func flattenConvergedEdges(in []v1alpha1.ConvergedEdge, prior []convergedEdgeModel) []convergedEdgeModel {
	out := emptyIfPrior[convergedEdgeModel](prior)
	for i, e := range in {
		var pe convergedEdgeModel
		if i < len(prior) {
			pe = prior[i]
		}
		out = append(out, convergedEdgeModel{Name: types.StringValue(e.Name), Reason: optString(e.Reason, pe.Reason)})
	}
	return out
}

// validateAfterConverged refuses an after_converged entry naming the set itself (name: the
// set's known name), as the CRD does: the set would wait for itself for ever.
func validateAfterConverged(root configValue, name string, diags *diag.Diagnostics) {
	edges, _ := root.Attr("after_converged").List()
	for _, e := range edges {
		if v, ok := e.Attr("name").String(); ok && v == name {
			diags.AddAttributeError(e.Attr("name").Path(), "Package Set Waits for Itself",
				fmt.Sprintf("%s: %q is this set's own name; a set cannot wait until it has converged itself. Name other package sets in after_converged.",
					e.Attr("name").Path(), v))
		}
	}
}

// nodeEdgesAttribute is rollout.node_edges.
func nodeEdgesAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true,
		MarkdownDescription: "Order nodes within this set, as NixFleet's `edges[] {after, before}` between hosts.\n\nThe `after` node does not start this set's new version " +
			"until the `before` node is done for this set (complete, soak included); a node already under way finishes. Node names are Kubernetes Node names. " +
			"An edge naming a node the set does not select is ignored (the other node does not wait). A cycle (`a` before `b` before `a`) is an invalid spec: " +
			"the plan fails naming it (the set would report Stalled, `InvalidSpec`). While nodes wait, `status.nodeEdgeWaits` and the Ready condition's message say " +
			"`<after> waits for <before>, ...` (a `before` whose edge has a `reason` as `<before> (<reason>)`). At most 256 edges.",
		Validators: []validator.List{listvalidator.SizeAtMost(256)},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"before": schema.StringAttribute{Required: true, MarkdownDescription: "The node that goes first.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
			"after": schema.StringAttribute{Required: true, MarkdownDescription: "The node that waits until `before` is done for this set.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 253)}},
			"reason": schema.StringAttribute{Optional: true, MarkdownDescription: "Why `after` waits for `before`, as NixFleet's `edges[].reason`, e.g. `database primary before its replica`.\n\n" +
				"Shown where the node waits: `status.nodeEdgeWaits` and the Ready condition's message say `<after> waits for <before> (<reason>)`, and the rollout preview's " +
				"constraints `node <after> after node <before> (<reason>)`. At most 256 characters.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 256)}},
		}}}
}

// fleetBudgetAttribute is rollout.fleet_budget.
func fleetBudgetAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "A budget of nodes in flight shared by every package set naming the same `name`, as NixFleet's fleet-wide `disruptionBudgets` shared by " +
			"several rollouts.\n\nA node counts once while any of those sets has it in flight (its rollout Activating, Deferred, Soaking or Failed, read from the node's " +
			"`gantry.dev/state_<set>` annotation, or cordoned by the set: `gantry.dev/cordon_<set>`); a set starts no new node while the count is at the limit " +
			"(a node another of the sets has in flight already counts, so it may start). The limit is `max_in_flight` nodes or `max_in_flight_pct` percent of the nodes the sets select. " +
			"When the sets disagree on the limit, the lowest wins among the sets that exist: a set " +
			"that starts nodes before a set with a lower value is created (two sets in one apply) uses the values it sees, so give every set of a budget the same " +
			"limit. " +
			"The set's own `interruption_budget` still applies. While it holds nodes, `status.fleetBudget` and the Ready condition's message name the budget, " +
			"the nodes in flight and their sets. A deletion's uninstalls count but are not held.",
		Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the budget (a DNS-1123 label): the sets naming it share it.",
				Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.RegexMatches(setNameRe, "must be a DNS-1123 label")}},
			"max_in_flight": schema.Int64Attribute{Optional: true, MarkdownDescription: "Most nodes in flight at once across the sets sharing the budget (at least 1).\n\n" +
				"Exactly one of `max_in_flight` and `max_in_flight_pct`. The lowest limit among the existing sets of the budget is in force, so give them all the same value.",
				Validators: []validator.Int64{int64validator.AtLeast(1),
					int64validator.ExactlyOneOf(path.MatchRelative().AtParent().AtName("max_in_flight"), path.MatchRelative().AtParent().AtName("max_in_flight_pct"))}},
			"max_in_flight_pct": schema.Int64Attribute{Optional: true, MarkdownDescription: "The limit as a percentage (1-100) of the nodes the sets sharing the budget select, " +
				"as NixFleet's `maxInFlightPct`.\n\nThe nodes any of the sets selects count once; the percentage is rounded down, at least 1 node " +
				"(as `interruption_budget.percent`). Exactly one of `max_in_flight` and `max_in_flight_pct`; each set's value is resolved to a count and the lowest wins. " +
				"With `node_selector`, a percentage of the matching nodes the sets select.",
				Validators: []validator.Int64{int64validator.Between(1, 100)}},
			"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType,
				MarkdownDescription: "Node labels that limit the budget to the nodes they match (all must match), as NixFleet's `disruptionBudgets[].selector`.\n\n" +
					"Only matching nodes count and are held, e.g. `{ rack = \"a\" }` for at most `max_in_flight` nodes of rack a in flight across the sets; nodes " +
					"it does not match are not limited by this budget. Unset with `node_selector_expressions` unset: every node. When the sets of a budget disagree, " +
					"one rule is in force: the lowest limit with that set's selector (a tie: the set first by name); give every set of a budget the same selector.",
				Validators: []validator.Map{mapvalidator.KeysAre(labelString{}), mapvalidator.ValueStringsAre(labelString{value: true})}},
			"node_selector_expressions": selectorExprsAttribute("Label selector requirements the budget's nodes must also meet (Kubernetes `matchExpressions`): " +
				"`In` and `NotIn` need `values`, `Exists` and `DoesNotExist` take none."),
		}}
}

// expandNodeEdges is spec.rollout.nodeEdges.
func expandNodeEdges(in []nodeEdgeModel) []v1alpha1.NodeEdge {
	var out []v1alpha1.NodeEdge
	for _, e := range in {
		out = append(out, v1alpha1.NodeEdge{Before: e.Before.ValueString(), After: e.After.ValueString(), Reason: e.Reason.ValueString()})
	}
	return out
}

func flattenNodeEdges(in []v1alpha1.NodeEdge, prior []nodeEdgeModel) []nodeEdgeModel {
	out := emptyIfPrior[nodeEdgeModel](prior)
	for i, e := range in {
		var pe nodeEdgeModel
		if i < len(prior) {
			pe = prior[i]
		}
		out = append(out, nodeEdgeModel{Before: types.StringValue(e.Before), After: types.StringValue(e.After), Reason: optString(e.Reason, pe.Reason)})
	}
	return out
}

func expandFleetBudget(in *fleetBudgetModel) *v1alpha1.FleetBudget {
	if in == nil {
		return nil
	}
	out := &v1alpha1.FleetBudget{Name: in.Name.ValueString(), MaxInFlight: int32(in.MaxInFlight.ValueInt64())}
	if !in.MaxInFlightPct.IsNull() && !in.MaxInFlightPct.IsUnknown() {
		pct := int32(in.MaxInFlightPct.ValueInt64())
		out.MaxInFlightPct = &pct
	}
	if in.NodeSelector != nil || in.NodeSelectorExprs != nil {
		sel := expandSelector(in.NodeSelector, in.NodeSelectorExprs)
		out.NodeSelector = &sel
	}
	return out
}

// flattenFleetBudget is rollout.fleet_budget (prior: the prior state's or plan's, for the
// selector's empty-versus-null shape).
func flattenFleetBudget(in *v1alpha1.FleetBudget, prior *fleetBudgetModel) *fleetBudgetModel {
	if in == nil {
		return nil
	}
	if prior == nil {
		prior = &fleetBudgetModel{}
	}
	m := &fleetBudgetModel{Name: types.StringValue(in.Name), MaxInFlight: types.Int64Null(), MaxInFlightPct: types.Int64Null()}
	if in.NodeSelector != nil {
		m.NodeSelector = optMap(in.NodeSelector.MatchLabels, prior.NodeSelector)
		m.NodeSelectorExprs = flattenSelectorExprs(in.NodeSelector.MatchExpressions, prior.NodeSelectorExprs)
	} else {
		m.NodeSelector, m.NodeSelectorExprs = optMap(nil, prior.NodeSelector), emptyIfPrior[selectorExprModel](prior.NodeSelectorExprs)
	}
	if in.MaxInFlight != 0 {
		m.MaxInFlight = types.Int64Value(int64(in.MaxInFlight))
	}
	if in.MaxInFlightPct != nil {
		m.MaxInFlightPct = types.Int64Value(int64(*in.MaxInFlightPct))
	}
	return m
}

// validateNodeEdges checks rollout.node_edges at plan as the CRD and the reconciler do: an
// edge needs two different nodes, and the edges form no cycle (checked once every node name
// is known).
func validateNodeEdges(root configValue, diags *diag.Diagnostics) {
	edges, known := root.Attr("rollout").Attr("node_edges").List()
	if !known {
		return
	}
	var all []v1alpha1.NodeEdge
	complete := true
	for _, e := range edges {
		before, bok := e.Attr("before").String()
		after, aok := e.Attr("after").String()
		if !bok || !aok {
			complete = false
			continue
		}
		if before == after {
			diags.AddAttributeError(e.Path(), "Node Edge To Itself",
				fmt.Sprintf("%s: before and after are both %q; an edge needs two different nodes.", e.Path(), before))
			continue
		}
		all = append(all, v1alpha1.NodeEdge{Before: before, After: after})
	}
	if !complete {
		return
	}
	if c := packageset.NodeEdgeCycle(all); c != nil {
		diags.AddAttributeError(root.Attr("rollout").Attr("node_edges").Path(), "Node Edges Form a Cycle",
			fmt.Sprintf("rollout.node_edges form a cycle, %s: each of these nodes would wait for the next for ever (NixFleet's edges form a DAG); remove one of the edges.",
				strings.Join(c, " → ")))
	}
}
