package provider

// gantry_package_set's rollout controls: the deployment_policy block (Skyhook's
// DeploymentPolicy, inline) and its computed compartments, and rollout.waves (NixFleet's
// waves): schema, plan-time checks, expand and flatten.

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/objectvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

type deploymentPolicyModel struct {
	Default                     *policyDefaultModel `tfsdk:"default"`
	Compartments                []compartmentModel  `tfsdk:"compartments"`
	ResetBatchStateOnCompletion types.Bool          `tfsdk:"reset_batch_state_on_completion"`
}

type policyDefaultModel struct {
	Budget   *budgetModel   `tfsdk:"budget"`
	Strategy *strategyModel `tfsdk:"strategy"`
}

type compartmentModel struct {
	Name              types.String        `tfsdk:"name"`
	NodeSelector      map[string]string   `tfsdk:"node_selector"`
	NodeSelectorExprs []selectorExprModel `tfsdk:"node_selector_expressions"`
	Budget            *budgetModel        `tfsdk:"budget"`
	Strategy          *strategyModel      `tfsdk:"strategy"`
}

type strategyModel struct {
	Type             types.String `tfsdk:"type"`
	InitialBatch     types.Int64  `tfsdk:"initial_batch"`
	Delta            types.Int64  `tfsdk:"delta"`
	GrowthFactor     types.Int64  `tfsdk:"growth_factor"`
	BatchThreshold   types.Int64  `tfsdk:"batch_threshold"`
	FailureThreshold types.Int64  `tfsdk:"failure_threshold"`
	SafetyLimit      types.Int64  `tfsdk:"safety_limit"`
}

// budgetAttributes are the percent/count pair of interruption_budget and of the policy's
// budgets (exactly one of them); whose names the budget's nodes ("the selected nodes", "the
// compartment's nodes").
func budgetAttributes(whose string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"percent": schema.Int64Attribute{Optional: true, MarkdownDescription: fmt.Sprintf("Percent of %s (1-100; floor, at least 1 node).", whose),
			Validators: []validator.Int64{int64validator.Between(1, 100), exactlyOne(path.MatchRelative().AtParent().AtName("count"))}},
		"count": schema.Int64Attribute{Optional: true, MarkdownDescription: "Number of nodes (at least 1).",
			Validators: []validator.Int64{int64validator.AtLeast(1)}},
	}
}

// strategyValidator checks at plan what the CRD's CEL rules check: delta only for linear,
// growth_factor only for exponential.
type strategyValidator struct{}

func (strategyValidator) Description(context.Context) string {
	return "delta is only for type linear, growth_factor only for type exponential"
}
func (v strategyValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (strategyValidator) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	a := req.ConfigValue.Attributes()
	typ, ok := a["type"].(types.String)
	if !ok || typ.IsNull() || typ.IsUnknown() {
		return
	}
	for attrName, only := range map[string]string{"delta": string(v1alpha1.StrategyLinear), "growth_factor": string(v1alpha1.StrategyExponential)} {
		if v, ok := a[attrName].(types.Int64); ok && !v.IsNull() && typ.ValueString() != only {
			resp.Diagnostics.AddAttributeError(req.Path.AtName(attrName), "Invalid Strategy",
				fmt.Sprintf("%s: %s is only for type %q; this strategy is %q.", req.Path.AtName(attrName), attrName, only, typ.ValueString()))
		}
	}
}

func strategyAttribute(what string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: what,
		Validators: []validator.Object{strategyValidator{}},
		Attributes: map[string]schema.Attribute{
			"type": schema.StringAttribute{Required: true,
				MarkdownDescription: "How the batch size changes: `fixed`, `linear` or `exponential`.\n\n`fixed`: every batch has `initial_batch` nodes; `linear`: it grows by `delta` after a successful batch, shrinks by it after a failed one; " +
					"`exponential`: it is multiplied by `growth_factor`, divided after a failed one.",
				Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.StrategyFixed), string(v1alpha1.StrategyLinear), string(v1alpha1.StrategyExponential))}},
			"initial_batch": schema.Int64Attribute{Optional: true, MarkdownDescription: "Nodes in the first batch (default 1).",
				Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"delta": schema.Int64Attribute{Optional: true, MarkdownDescription: "What a `linear` batch grows or shrinks by, in nodes (default 1).",
				Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"growth_factor": schema.Int64Attribute{Optional: true, MarkdownDescription: "What an `exponential` batch is multiplied or divided by (default 2).",
				Validators: []validator.Int64{int64validator.AtLeast(2)}},
			"batch_threshold": schema.Int64Attribute{Optional: true, MarkdownDescription: "Percent of a batch's nodes that must complete for the batch to succeed (1-100, default 100).",
				Validators: []validator.Int64{int64validator.Between(1, 100)}},
			"failure_threshold": schema.Int64Attribute{Optional: true, MarkdownDescription: "Failed batches in a row that stop the compartment (default 3).",
				Validators: []validator.Int64{int64validator.AtLeast(1)}},
			"safety_limit": schema.Int64Attribute{Optional: true,
				MarkdownDescription: "Percent of the compartment's nodes done (complete or failed) past which failed batches no longer stop it nor shrink the next batch (1-100, default 50).",
				Validators:          []validator.Int64{int64validator.Between(1, 100)}},
		}}
}

// deploymentPolicyAttribute is the deployment_policy schema.
func deploymentPolicyAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "Roll the set out by **compartments** (groups of nodes picked by labels, each with its own budget) in **batches**, as Skyhook's DeploymentPolicy " +
			"(here part of the set).\n\nA batch starts once the previous one has finished (each of its nodes complete or failed); it succeeds when at least `batch_threshold` " +
			"percent of its nodes complete. After `failure_threshold` failed batches in a row, while less than `safety_limit` percent of the compartment is done, the compartment " +
			"stops: the apply fails naming it, and it starts over when the package versions change. Progress is in `compartments`. Excludes `interruption_budget`.",
		Validators: []validator.Object{objectvalidator.ConflictsWith(path.MatchRoot("interruption_budget"))},
		Attributes: map[string]schema.Attribute{
			"default": schema.SingleNestedAttribute{Optional: true,
				MarkdownDescription: "Budget and strategy of the nodes no compartment picks (Skyhook's default compartment; `default` in `compartments`). Unset: all of them at once, no batches.",
				Attributes: map[string]schema.Attribute{
					"budget": schema.SingleNestedAttribute{Optional: true, Attributes: budgetAttributes("those nodes"),
						MarkdownDescription: "Most of those nodes in flight at once: exactly one of `percent` or `count`. Unset: all."},
					"strategy": strategyAttribute("How those nodes are batched, and the strategy of compartments without one. Unset: no batches, the budget alone."),
				}},
			"compartments": schema.ListNestedAttribute{Optional: true,
				MarkdownDescription: "Compartments, in order: a node belongs to the first whose selector matches its labels.",
				Validators:          []validator.List{listvalidator.SizeAtMost(16)},
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name": schema.StringAttribute{Required: true, MarkdownDescription: "Unique in the policy: a DNS-1123 label, not `default`.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 63), stringvalidator.NoneOf(packageset.DefaultCompartment),
							stringvalidator.RegexMatches(setNameRe, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")}},
					"node_selector": schema.MapAttribute{Optional: true, ElementType: types.StringType,
						MarkdownDescription: "Node labels that pick the compartment's nodes (all must match)."},
					"node_selector_expressions": selectorExprsAttribute("Label selector requirements the compartment's nodes must also meet (`matchExpressions`)."),
					"budget": schema.SingleNestedAttribute{Required: true, Attributes: budgetAttributes("the compartment's nodes"),
						MarkdownDescription: "Most of the compartment's nodes in flight at once: exactly one of `percent` or `count`."},
					"strategy": strategyAttribute("How the compartment's nodes are batched. Unset: the default's strategy; none there: the budget alone."),
				}},
			},
			"reset_batch_state_on_completion": schema.BoolAttribute{Optional: true,
				MarkdownDescription: "When every node of a compartment is complete, its batches start over at `initial_batch` for the next rollout (default `true`, as Skyhook)."},
		},
	}
}

// compartmentStatusType is one element of the computed compartments.
var compartmentStatusType = types.ObjectType{AttrTypes: map[string]attr.Type{
	"name": types.StringType, "matched": types.Int64Type, "ceiling": types.Int64Type, "in_progress": types.Int64Type,
	"completed": types.Int64Type, "progress_percent": types.Int64Type, "current_batch": types.Int64Type, "stopped": types.BoolType,
}}

func compartmentsAttribute() schema.ListAttribute {
	return schema.ListAttribute{Computed: true, ElementType: compartmentStatusType,
		MarkdownDescription: "The deployment policy's progress per compartment (`status.compartments`; `default` is the nodes no compartment picks).\n\nEach has nodes `matched`, " +
			"`ceiling` (budget), `in_progress`, `completed`, `progress_percent`, the `current_batch` number and whether failed batches `stopped` it. Empty without a policy."}
}

// compartmentsValue is status.compartments as the computed attribute's value.
func compartmentsValue(cs []v1alpha1.CompartmentStatus) types.List {
	elems := make([]attr.Value, 0, len(cs))
	for _, c := range cs {
		var batch int64
		stopped := false
		if c.Batch != nil {
			batch, stopped = int64(c.Batch.CurrentBatch), c.Batch.ShouldStop
		}
		v, _ := types.ObjectValue(compartmentStatusType.AttrTypes, map[string]attr.Value{
			"name": types.StringValue(c.Name), "matched": types.Int64Value(int64(c.Matched)), "ceiling": types.Int64Value(int64(c.Ceiling)),
			"in_progress": types.Int64Value(int64(c.InProgress)), "completed": types.Int64Value(int64(c.Completed)),
			"progress_percent": types.Int64Value(int64(c.ProgressPercent)), "current_batch": types.Int64Value(batch), "stopped": types.BoolValue(stopped),
		})
		elems = append(elems, v)
	}
	l, _ := types.ListValue(compartmentStatusType, elems)
	return l
}

func expandBudget(b *budgetModel) *v1alpha1.InterruptionBudget {
	if b == nil {
		return nil
	}
	out := &v1alpha1.InterruptionBudget{}
	if !b.Percent.IsNull() {
		v := int32(b.Percent.ValueInt64())
		out.Percent = &v
	}
	if !b.Count.IsNull() {
		v := int32(b.Count.ValueInt64())
		out.Count = &v
	}
	return out
}

func flattenBudget(b *v1alpha1.InterruptionBudget) *budgetModel {
	if b == nil {
		return nil
	}
	return &budgetModel{Percent: int64Ptr(b.Percent), Count: int64Ptr(b.Count)}
}

func int32Ptr(v types.Int64) *int32 {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	x := int32(v.ValueInt64())
	return &x
}

func int64Ptr(v *int32) types.Int64 {
	if v == nil {
		return types.Int64Null()
	}
	return types.Int64Value(int64(*v))
}

func expandStrategy(s *strategyModel) *v1alpha1.DeploymentStrategy {
	if s == nil {
		return nil
	}
	return &v1alpha1.DeploymentStrategy{Type: v1alpha1.StrategyType(s.Type.ValueString()), InitialBatch: int32Ptr(s.InitialBatch),
		Delta: int32Ptr(s.Delta), GrowthFactor: int32Ptr(s.GrowthFactor), BatchThreshold: int32Ptr(s.BatchThreshold),
		FailureThreshold: int32Ptr(s.FailureThreshold), SafetyLimit: int32Ptr(s.SafetyLimit)}
}

func flattenStrategy(s *v1alpha1.DeploymentStrategy) *strategyModel {
	if s == nil {
		return nil
	}
	return &strategyModel{Type: types.StringValue(string(s.Type)), InitialBatch: int64Ptr(s.InitialBatch), Delta: int64Ptr(s.Delta),
		GrowthFactor: int64Ptr(s.GrowthFactor), BatchThreshold: int64Ptr(s.BatchThreshold), FailureThreshold: int64Ptr(s.FailureThreshold),
		SafetyLimit: int64Ptr(s.SafetyLimit)}
}

func expandDeploymentPolicy(m *deploymentPolicyModel) *v1alpha1.DeploymentPolicy {
	if m == nil {
		return nil
	}
	p := &v1alpha1.DeploymentPolicy{ResetBatchStateOnCompletion: m.ResetBatchStateOnCompletion.ValueBoolPointer()}
	if m.ResetBatchStateOnCompletion.IsUnknown() {
		p.ResetBatchStateOnCompletion = nil
	}
	if d := m.Default; d != nil {
		p.Default = &v1alpha1.PolicyDefault{Budget: expandBudget(d.Budget), Strategy: expandStrategy(d.Strategy)}
	}
	for _, c := range m.Compartments {
		ac := v1alpha1.Compartment{Name: c.Name.ValueString(), Selector: expandSelector(c.NodeSelector, c.NodeSelectorExprs), Strategy: expandStrategy(c.Strategy)}
		if b := expandBudget(c.Budget); b != nil {
			ac.Budget = *b
		}
		p.Compartments = append(p.Compartments, ac)
	}
	return p
}

func flattenDeploymentPolicy(p *v1alpha1.DeploymentPolicy, prior *deploymentPolicyModel) *deploymentPolicyModel {
	if p == nil {
		return nil
	}
	if prior == nil {
		prior = &deploymentPolicyModel{}
	}
	m := &deploymentPolicyModel{ResetBatchStateOnCompletion: types.BoolPointerValue(p.ResetBatchStateOnCompletion)}
	if d := p.Default; d != nil {
		m.Default = &policyDefaultModel{Budget: flattenBudget(d.Budget), Strategy: flattenStrategy(d.Strategy)}
	}
	m.Compartments = emptyIfPrior[compartmentModel](prior.Compartments)
	for i, c := range p.Compartments {
		var pc compartmentModel
		if i < len(prior.Compartments) {
			pc = prior.Compartments[i]
		}
		b := c.Budget
		m.Compartments = append(m.Compartments, compartmentModel{Name: types.StringValue(c.Name), NodeSelector: optMap(c.Selector.MatchLabels, pc.NodeSelector),
			NodeSelectorExprs: flattenSelectorExprs(c.Selector.MatchExpressions, pc.NodeSelectorExprs), Budget: flattenBudget(&b), Strategy: flattenStrategy(c.Strategy)})
	}
	return m
}

// validateRolloutConfig checks at plan what the CRD's rules check: compartment names unique
// (naming the duplicate).
func validateRolloutConfig(root configValue, diags *diag.Diagnostics) {
	validateSoak(root, diags)
	if waves, ok := root.Attr("rollout").Attr("waves").List(); ok {
		validateShadowedSelectors(waves, "wave", "NixFleet's waves", diags)
	}
	comps, known := root.Attr("deployment_policy").Attr("compartments").List()
	if !known {
		return
	}
	validateShadowedSelectors(comps, "compartment", "Skyhook's DeploymentPolicy", diags)
	seen := map[string]bool{}
	for _, c := range comps {
		name, ok := c.Attr("name").String()
		if !ok {
			continue
		}
		if seen[name] {
			diags.AddAttributeError(c.Attr("name").Path(), "Duplicate Compartment",
				fmt.Sprintf("%s: compartment %q appears twice in deployment_policy.compartments.", c.Attr("name").Path(), name))
		}
		seen[name] = true
	}
}

// flattenWaves is rollout.waves as the configuration writes them (prior: the configuration's,
// for empty selector parts it wrote).
func flattenWaves(waves []v1alpha1.Wave, prior []waveModel) []waveModel {
	out := emptyIfPrior[waveModel](prior)
	for i, w := range waves {
		var pw waveModel
		if i < len(prior) {
			pw = prior[i]
		}
		m := waveModel{Name: types.StringValue(w.Name), NodeSelector: optMap(w.Selector.MatchLabels, pw.NodeSelector),
			NodeSelectorExprs: flattenSelectorExprs(w.Selector.MatchExpressions, pw.NodeSelectorExprs), SoakDuration: types.StringNull()}
		if w.SoakDuration != nil {
			m.SoakDuration = durationString(w.SoakDuration.Duration, pw.SoakDuration)
		}
		out = append(out, m)
	}
	return out
}

type healthCheckModel struct {
	Name       types.String       `tfsdk:"name"`
	Image      types.String       `tfsdk:"image"`
	Command    []string           `tfsdk:"command"`
	Args       []string           `tfsdk:"args"`
	HTTPGet    *httpGetModel      `tfsdk:"http_get"`
	Systemd    *systemdUnitsModel `tfsdk:"systemd_failed_units"`
	Compliance *complianceModel   `tfsdk:"compliance"`
	Mode       types.String       `tfsdk:"mode"`
	Timeout    types.String       `tfsdk:"timeout"`
	PodLabels  map[string]string  `tfsdk:"pod_labels"`
}

type systemdUnitsModel struct {
	Max types.Int64 `tfsdk:"max"`
}

// complianceModel is a health check's compliance block: NixFleet's evidence probe for one
// framework (v1alpha1.ComplianceCheck).
type complianceModel struct {
	Framework    types.String `tfsdk:"framework"`
	EvidencePath types.String `tfsdk:"evidence_path"`
}

type httpGetModel struct {
	URL types.String `tfsdk:"url"`
}

// healthCheckValidator checks one health check at plan as the CRD's rule does: exactly one of
// command (exec, with image), http_get, systemd_failed_units or compliance.
type healthCheckValidator struct{}

func (healthCheckValidator) Description(context.Context) string {
	return "exactly one of command (with image), http_get, systemd_failed_units or compliance"
}
func (v healthCheckValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (healthCheckValidator) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	a := req.ConfigValue.Attributes()
	if a["command"].IsUnknown() || a["http_get"].IsUnknown() || a["image"].IsUnknown() || a["systemd_failed_units"].IsUnknown() || a["compliance"].IsUnknown() {
		return
	}
	if l, ok := a["command"].(types.List); ok && !l.IsNull() && len(l.Elements()) == 0 {
		resp.Diagnostics.AddAttributeError(req.Path.AtName("command"), "Invalid Health Check",
			fmt.Sprintf("%s: command = [] runs nothing, and the PackageSet API has no empty command (the API server would refuse the check "+
				"as having no kind): list the command of an exec check, or remove command for an http_get, systemd_failed_units or compliance check.", req.Path.AtName("command")))
		return
	}
	cmd, get, units, compliance := !a["command"].IsNull(), !a["http_get"].IsNull(), !a["systemd_failed_units"].IsNull(), !a["compliance"].IsNull()
	n := 0
	for _, set := range []bool{cmd, get, units, compliance} {
		if set {
			n++
		}
	}
	switch {
	case n != 1:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Health Check",
			fmt.Sprintf("%s: set exactly one of command (an exec check), http_get, systemd_failed_units or compliance.", req.Path))
	case cmd && a["image"].IsNull():
		resp.Diagnostics.AddAttributeError(req.Path.AtName("image"), "Invalid Health Check",
			fmt.Sprintf("%s: an exec check (command) needs image.", req.Path.AtName("image")))
	}
}

func healthChecksAttribute() schema.ListNestedAttribute {
	return schema.ListNestedAttribute{Optional: true,
		MarkdownDescription: "Health gates beside the packages' own checks, as NixFleet's health checks.\n\nEach runs as a Pod on the node in every soak round, " +
			"or, with no soak (`soak_duration` unset or `0s`, for the rollout or the node's wave), once after the node's last stage: the node is Soaking until it passed. " +
			"A failing one fails the node like a failing check (`on_health_failure` applies: `halt` retries, `rollback` returns the " +
			"packages changed in this rollout to what they were and quarantines them). The check's pod has `NODE_NAME` and `NODE_IP` (the node's address) " +
			"in its environment; `command`, `args` and `url` may use `$(NODE_IP)`.",
		Validators: []validator.List{listvalidator.SizeAtMost(8), uniqueNames{what: "Health Check"}},
		NestedObject: schema.NestedAttributeObject{
			Validators: []validator.Object{healthCheckValidator{}},
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{Required: true, MarkdownDescription: "Name of the check: a DNS-1123 label of at most 20 characters, in its Pod's name and the failure message.",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 20), stringvalidator.RegexMatches(setNameRe, "must be a DNS-1123 label")}},
				"image": schema.StringAttribute{Optional: true, MarkdownDescription: "Image that runs the check; default for `http_get`: `busybox:1.36` (its wget).",
					Validators: []validator.String{stringvalidator.LengthBetween(1, 512)}},
				"command": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "An exec check: the container's command (at most 32 items); exit 0 passes. Needs `image`.",
					Validators: []validator.List{listvalidator.SizeAtMost(32)}},
				"args": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Arguments of `command` (at most 32).",
					Validators: []validator.List{listvalidator.SizeAtMost(32)}},
				"http_get": schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "An HTTP check: a GET of `url` must answer 2xx within the timeout.",
					Attributes: map[string]schema.Attribute{"url": schema.StringAttribute{Required: true, MarkdownDescription: "An `http://` or `https://` URL, e.g. `http://$(NODE_IP):9400/health`.",
						Validators: []validator.String{stringvalidator.LengthBetween(1, 1024), checkString{"an http:// or https:// URL", healthCheckURLProblem, "Invalid Health Check URL"}}}}},
				"systemd_failed_units": schema.SingleNestedAttribute{Optional: true,
					MarkdownDescription: "Passes while the node's host has at most `max` failed systemd units, as NixFleet's `healthGate.systemdFailedUnits`.\n\n" +
						"It runs `systemctl list-units --state=failed` in the host's namespaces through `nsenter`, from a privileged pod in the host PID namespace: " +
						"the stage Pods' namespace must allow privileged pods. A failed run names the failed units. `image` defaults to `busybox:1.36` (its `nsenter`).",
					Attributes: map[string]schema.Attribute{"max": schema.Int64Attribute{Optional: true, MarkdownDescription: "Most failed units allowed (default 0).",
						Validators: []validator.Int64{int64validator.Between(0, 1000)}}}},
				"compliance": complianceCheckAttribute(),
				"mode": schema.StringAttribute{Optional: true, MarkdownDescription: "Whether a failing run fails the node, as NixFleet's gate mode: `enforce` (default) or `observe`.\n\n`enforce` fails the node when a run fails; " +
					"`observe` records the failure (the `HealthChecksObserved` condition names the node, the check and its output, with a Warning event) and lets the rollout go on, " +
					"as NixFleet's observe mode for health gates and compliance probes.",
					Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.HealthCheckEnforce), string(v1alpha1.HealthCheckObserve))}},
				"timeout":    schema.StringAttribute{Optional: true, MarkdownDescription: "Bound of one run, e.g. `30s` (default `1m`): an `http_get` check's request, and the check's Pod (its `activeDeadlineSeconds` is this plus 30s for it to start).", Validators: []validator.String{durationValidator{min: time.Second}}},
				"pod_labels": schema.MapAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Labels added to the check's pod."},
			}},
	}
}

func expandHealthChecks(hcs []healthCheckModel) ([]v1alpha1.HealthCheck, error) {
	var out []v1alpha1.HealthCheck
	for _, h := range hcs {
		hc := v1alpha1.HealthCheck{Name: h.Name.ValueString(), Image: h.Image.ValueString(), Command: append([]string(nil), h.Command...),
			Args: append([]string(nil), h.Args...), PodLabels: cloneMap(h.PodLabels)}
		if h.HTTPGet != nil {
			hc.HTTPGet = &v1alpha1.HTTPGetCheck{URL: h.HTTPGet.URL.ValueString()}
		}
		if h.Systemd != nil {
			hc.SystemdFailedUnits = &v1alpha1.SystemdFailedUnitsCheck{Max: int32(h.Systemd.Max.ValueInt64())}
		}
		hc.Compliance = expandComplianceCheck(h.Compliance)
		hc.Mode = v1alpha1.HealthCheckMode(h.Mode.ValueString())
		if !h.Timeout.IsNull() && !h.Timeout.IsUnknown() {
			d, err := time.ParseDuration(h.Timeout.ValueString())
			if err != nil {
				return nil, fmt.Errorf("rollout.health_checks[%q].timeout: %w", hc.Name, err)
			}
			hc.Timeout = &metav1.Duration{Duration: d}
		}
		out = append(out, hc)
	}
	return out, nil
}

func flattenHealthChecks(hcs []v1alpha1.HealthCheck, prior []healthCheckModel) []healthCheckModel {
	out := emptyIfPrior[healthCheckModel](prior)
	for i, h := range hcs {
		var ph healthCheckModel
		if i < len(prior) {
			ph = prior[i]
		}
		m := healthCheckModel{Name: types.StringValue(h.Name), Image: optString(h.Image, ph.Image), Command: optList(h.Command, ph.Command),
			Args: optList(h.Args, ph.Args), PodLabels: optMap(h.PodLabels, ph.PodLabels), Timeout: types.StringNull()}
		if h.HTTPGet != nil {
			m.HTTPGet = &httpGetModel{URL: types.StringValue(h.HTTPGet.URL)}
		}
		if h.SystemdFailedUnits != nil {
			prior := types.Int64Null()
			if ph.Systemd != nil {
				prior = ph.Systemd.Max
			}
			m.Systemd = &systemdUnitsModel{Max: optInt64(int64(h.SystemdFailedUnits.Max), prior)}
		}
		m.Compliance = flattenComplianceCheck(h.Compliance, ph.Compliance)
		m.Mode = optString(string(h.Mode), ph.Mode)
		if h.Timeout != nil {
			m.Timeout = durationString(h.Timeout.Duration, ph.Timeout)
		}
		out = append(out, m)
	}
	return out
}

// complianceEvidencePathRe is an evidence_path the CRD accepts (its pattern): an absolute path
// of segments of letters, digits, '.', '_' and '-', none starting with '.' (no ".."), which the
// check's script quotes as it is.
var complianceEvidencePathRe = regexp.MustCompile(`^(/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$`)

// complianceCheckAttribute is a health check's compliance block: NixFleet's compliance probe
// (RFC-0007's evidence probe) for one framework, validated at plan as the CRD validates it
// (framework one of v1alpha1.ComplianceFrameworks, evidence_path the CRD's pattern).
func complianceCheckAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true,
		MarkdownDescription: "Passes while every control NixFleet's compliance evidence on the node maps to `framework` passed, as NixFleet's compliance probe (RFC-0007's `evidence` probe).\n\n" +
			"It reads the evidence file NixFleet's `compliance-evidence-collector` writes (schemaVersion 1), keeps the controls whose `frameworkArticles` name the framework " +
			"and fails naming those with `passed` not `true`; a missing or unreadable file, a file that is not JSON or of another schemaVersion, or no control of the framework fails too " +
			"(NixFleet: a probe that cannot run fails). It reads the file through `/proc/1/root` from a privileged pod in the host PID namespace: the stage Pods' namespace must allow " +
			"privileged pods. `image` defaults to `busybox:1.36` (its `sh` and `awk`). NixFleet's `healthGate.complianceProbes.required = true` and `compliance.mode = \"enforce\"` " +
			"are `mode = \"enforce\"`; `compliance.mode = \"permissive\"` is `mode = \"observe\"`; `\"disabled\"` is no compliance check.",
		Attributes: map[string]schema.Attribute{
			"framework": schema.StringAttribute{Required: true,
				MarkdownDescription: "The NixFleet compliance framework: `anssi-bp028`, `nis2`, `dora` or `iso27001` (the names NixFleet's `mkFleet` accepts), matched against each control's `frameworkArticles` keys.",
				Validators:          []validator.String{stringvalidator.OneOf(v1alpha1.ComplianceFrameworks...)}},
			"evidence_path": schema.StringAttribute{Optional: true,
				MarkdownDescription: "The evidence file on the node's host, an absolute path of letters, digits, `.`, `_`, `-` and `/` (default `/var/lib/nixfleet-compliance/evidence.json`, where NixFleet's collector writes it).",
				Validators: []validator.String{stringvalidator.LengthAtMost(1024),
					stringvalidator.RegexMatches(complianceEvidencePathRe, "must be an absolute path of letters, digits, '.', '_', '-' and '/', no segment starting with '.'")}},
		}}
}

// expandComplianceCheck is the API's compliance check of a health check's compliance block
// (nil: none); an unset evidence_path is left for the reconciler's default.
func expandComplianceCheck(m *complianceModel) *v1alpha1.ComplianceCheck {
	if m == nil {
		return nil
	}
	return &v1alpha1.ComplianceCheck{Framework: m.Framework.ValueString(), EvidencePath: m.EvidencePath.ValueString()}
}

// flattenComplianceCheck is the compliance block of the API's compliance check c (nil: none);
// prior is the configuration's, for an evidence_path it did not write.
func flattenComplianceCheck(c *v1alpha1.ComplianceCheck, prior *complianceModel) *complianceModel {
	if c == nil {
		return nil
	}
	path := types.StringNull()
	if prior != nil {
		path = prior.EvidencePath
	}
	return &complianceModel{Framework: types.StringValue(c.Framework), EvidencePath: optString(c.EvidencePath, path)}
}
