package provider

// The rollout preview of gantry_package_set: at plan, when the set's spec changes and the
// cluster answers, what the apply will do to the fleet (packageset.PreviewRollout, the
// reconciler's own pass run over the cluster's nodes with every stage succeeding), shown as a
// plan warning and as the computed attribute rollout_preview, which policies (Sentinel, OPA on
// the JSON plan), check blocks and postconditions read.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// previewListed is how many nodes the preview lists (first wave, blocked) in the attribute
// and the warning; the counts cover all.
const previewListed = 10

// previewReadTimeout bounds the cluster reads of one plan's previews.
const previewReadTimeout = 20 * time.Second

// previewAttrTypes are rollout_preview's attribute types.
var previewAttrTypes = map[string]attr.Type{
	"selected_nodes": types.Int64Type, "nodes": types.Int64Type, "waves": types.Int64Type, "max_wave_size": types.Int64Type,
	"cordoned": types.Int64Type, "drained": types.Int64Type, "rebooted": types.Int64Type,
	"interrupts":  types.MapType{ElemType: types.Int64Type},
	"first_wave":  types.ListType{ElemType: types.StringType},
	"constraints": types.ListType{ElemType: types.StringType},
	"completes":   types.BoolType,
}

// rolloutPreviewAttribute is the schema of rollout_preview.
func rolloutPreviewAttribute() schema.SingleNestedAttribute {
	count := func(d string) schema.Int64Attribute {
		return schema.Int64Attribute{Computed: true, MarkdownDescription: d}
	}
	return schema.SingleNestedAttribute{Computed: true,
		MarkdownDescription: "What the apply will do to the fleet, computed at plan when the set's spec changes and the cluster answers.\n\nIt comes from " +
			"the reconciler's own rollout rules (selection, interruption budget, deployment policy compartments and batches, waves, node edges, " +
			"this set's own fleet budget rule, priorities and `after`) run over the cluster's nodes with every stage assumed to succeed. Other package sets do not enter it: " +
			"one created or removed by the same apply may or may not be there when Terraform plans again at apply; the plan's warning gives a fleet budget as the sets sharing it make it now.\n\nIt is kept as it is while the spec " +
			"does not change; known after apply (the plan warns why) when a value of the set is unknown at plan, when the set's rollout of an earlier change is " +
			"still under way (its nodes' progress changes until the apply), or when the cluster did not answer; null after an apply that could not make one. " +
			"What blocks nodes now (a PodDisruptionBudget that allows 0 disruptions, a non-interruptible pod, a fleet budget the other sets fill, a taint, an earlier set) " +
			"is in the plan's warning, not here: Terraform plans again at apply and requires every value known at plan to come out the same, so this attribute holds " +
			"only what the spec and the nodes decide. A postcondition or check block can test it, e.g. `self.rollout_preview.rebooted <= 5`; see the guide \"Reviewing fleet changes in the plan\".",
		Attributes: map[string]schema.Attribute{
			"selected_nodes": count("Nodes the set selects."),
			"nodes":          count("Nodes the rollout starts (they run stages)."),
			"waves":          count("Waves: groups of nodes started together, each after the previous one's nodes finish or free a slot of the budget."),
			"max_wave_size":  count("The most nodes one wave starts."),
			"cordoned":       count("Nodes cordoned (an interrupt needs it)."),
			"drained":        count("Nodes drained (their pods evicted through the Eviction API, so PodDisruptionBudgets apply)."),
			"rebooted":       count("Nodes rebooted (a `reboot` interrupt)."),
			"interrupts": schema.MapAttribute{Computed: true, ElementType: types.Int64Type,
				MarkdownDescription: "Interrupt type (`reboot`, `restartAllServices`, `service`, `noop`) → nodes whose stages run it (merged per node as Skyhook merges them)."},
			"first_wave": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The first wave's nodes (at most 10 listed)."},
			"constraints": schema.ListAttribute{Computed: true, ElementType: types.StringType,
				MarkdownDescription: "The order constraints: node edges, `after`, the budget or deployment policy, waves, a fleet budget."},
			"completes": schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether every selected node would complete with every stage succeeding (false: the spec itself holds nodes, e.g. a wave no node can leave)."},
		}}
}

// previewNull is rollout_preview's null.
func previewNull() types.Object { return types.ObjectNull(previewAttrTypes) }

// previewObject maps a preview to rollout_preview's value.
func previewObject(p packageset.Preview) types.Object {
	interrupts := map[string]attr.Value{}
	for k, v := range p.Interrupts {
		interrupts[k] = types.Int64Value(int64(v))
	}
	var first, constraints []attr.Value
	for _, n := range p.Nodes {
		if n.Wave == 0 && len(first) < previewListed {
			first = append(first, types.StringValue(n.Name))
		}
	}
	for _, c := range p.Constraints {
		constraints = append(constraints, types.StringValue(c))
	}
	i64 := func(n int) attr.Value { return types.Int64Value(int64(n)) }
	return types.ObjectValueMust(previewAttrTypes, map[string]attr.Value{
		"selected_nodes": i64(p.Selected), "nodes": i64(len(p.Nodes)), "waves": i64(p.Waves), "max_wave_size": i64(p.MaxWave),
		"cordoned": i64(p.Cordoned), "drained": i64(p.Drained), "rebooted": i64(p.Rebooted),
		"interrupts":  types.MapValueMust(types.Int64Type, interrupts),
		"first_wave":  types.ListValueMust(types.StringType, attrList(first)),
		"constraints": types.ListValueMust(types.StringType, attrList(constraints)),
		"completes":   types.BoolValue(p.Complete),
	})
}

// attrList is v, or an empty list for nil.
func attrList(v []attr.Value) []attr.Value {
	if v == nil {
		return []attr.Value{}
	}
	return v
}

// ModifyPlan is planRetry (kindResource) and the rollout preview (planPreview).
func (r *packageSetResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	r.ops.planRetry(ctx, req, resp)
	if resp.Diagnostics.HasError() || req.Plan.Raw.IsNull() {
		return
	}
	r.planPreview(ctx, req, resp)
}

// planPreview sets rollout_preview in the plan: the state's value when the spec does not
// change (a no-op plan reads nothing from the cluster), else the preview of the planned spec,
// or unknown with one warning naming why it could not be computed (a value unknown at plan,
// the set's earlier rollout under way, the cluster). It never fails a plan.
func (r *packageSetResource) planPreview(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if !req.State.Raw.IsNull() && req.Plan.Raw.Equal(req.State.Raw) {
		return // a no-op plan: the state's preview stands, nothing is read or mapped
	}
	at := path.Root("rollout_preview")
	var plan packageSetModel
	if d := req.Plan.Get(ctx, &plan); d.HasError() || !req.Config.Raw.IsFullyKnown() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, types.ObjectUnknown(previewAttrTypes))...)
		resp.Diagnostics.AddAttributeWarning(at, "Rollout Preview Skipped", "The rollout preview needs the set's whole configuration at plan, "+
			"and a value is unknown until apply: rollout_preview is known after apply (Terraform plans again then, and the preview is made).")
		return
	}
	planned, err := expandPackageSet(&plan)
	if err != nil {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, previewNull())...)
		return // the apply reports the mapping error
	}
	if !req.State.Raw.IsNull() {
		var state packageSetModel
		if d := req.State.Get(ctx, &state); !d.HasError() {
			if prior, err := expandPackageSet(&state); err == nil && apiequality.Semantic.DeepEqual(prior.Object["spec"], planned.Object["spec"]) {
				keep := state.RolloutPreview
				if keep.IsNull() || keep.IsUnknown() {
					keep = previewNull()
				}
				resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, keep)...)
				return
			}
		}
	}
	p, name, summary, why := r.preview(ctx, planned)
	if why != "" {
		// Unknown, not null: the apply plans again, and a value known now (null included)
		// must come out the same then, which a cluster that answers by then would break.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, types.ObjectUnknown(previewAttrTypes))...)
		resp.Diagnostics.AddAttributeWarning(at, "Rollout Preview Skipped", fmt.Sprintf("The rollout preview of package set %s could not be computed: %s. The plan is otherwise complete; rollout_preview is known after apply.", name, why))
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, at, previewObject(p))...)
	resp.Diagnostics.AddAttributeWarning(at, "Rollout of package set "+name, summary)
}

// preview computes the rollout of the planned set over the cluster's nodes: its shape (the
// attribute's value, PreviewFacts.Shape) and the warning's text (the shape, what blocks now and,
// when something does, where today's rollout would stop); why is non-empty (and the preview
// zero) when it cannot: the provider has no cluster, the cluster did not answer, or the
// machine failed (a bug, reported as a warning, never an error).
func (r *packageSetResource) preview(ctx context.Context, planned *unstructured.Unstructured) (p packageset.Preview, name, summary, why string) {
	var set v1alpha1.PackageSet
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(planned.Object, &set); err != nil {
		return p, planned.GetName(), "", err.Error()
	}
	name = set.Name
	fleet, err := r.data.fleetView(ctx)
	if err != nil {
		return p, name, "", err.Error()
	}
	if why := fleet.underWay(name); why != "" {
		return p, name, "", why
	}
	start := time.Now()
	pf := fleet.factsFor(ctx, r.data, &set)
	// The shape (the attribute) reads no other package set: one created, changed or removed by
	// the same apply is listed or not when the apply plans again depending on timing, and a
	// value known at plan must come out the same then ("Provider produced inconsistent final
	// plan" otherwise). The other sets' effect (a fleet budget's lowest limit, its members,
	// what they hold now) is in the warning, from the rollout as it would go today.
	shape := pf
	shape.Sets, shape.Shape = nil, true
	p, err = packageset.PreviewRollout(shape)
	var now packageset.Preview
	if err == nil {
		now, err = packageset.PreviewRollout(pf)
	}
	if err == nil {
		p.Blocked = now.Blocked
		summary = fleetNow(p, now)
		if len(now.Blocked) > 0 && !now.Complete {
			summary += fmt.Sprintf("\nWith what blocks now, the rollout would stop after starting %d of the %d nodes (%s): the blocked nodes hold its slots.",
				len(now.Nodes), len(p.Nodes), strings.TrimSuffix(now.Stuck, "."))
		}
	}
	if err != nil {
		return p, name, "", "the preview failed (please report this issue to the provider developers): " + err.Error()
	}
	tflog.Debug(ctx, "rollout preview", map[string]interface{}{"package_set": name, "nodes": len(pf.Nodes), "passes": p.Passes, "ms": time.Since(start).Milliseconds()})
	return p, name, p.Summary(previewListed) + summary, ""
}

// fleetView is what every preview of one provider process reads from the cluster, listed once
// (the first preview's plan) and shared: nodes, package sets, and the PodDisruptionBudgets
// that allow no disruption now with the pods they cover.
type fleetView struct {
	nodes []corev1.Node
	sets  []v1alpha1.PackageSet
	// pdbPods: the pods covered by a PodDisruptionBudget that allows 0 disruptions, with
	// that budget's refusal as the Eviction API words it.
	pdbPods []pdbPod
}

type pdbPod struct {
	pod    corev1.Pod
	reason string
}

// underWay says why the set named name has a rollout under way ("" when it has none, or does
// not exist yet): its live status is not complete, paused or disabled, or is about an older
// generation. Its nodes' progress then changes until the apply plans again, and a preview
// known at plan would have to come out the same then (Terraform's "inconsistent final plan"
// otherwise), so there is none.
func (v *fleetView) underWay(name string) string {
	for i := range v.sets {
		s := &v.sets[i]
		if s.Name != name {
			continue
		}
		switch {
		case s.Status.ObservedGeneration != s.Generation:
			return fmt.Sprintf("its rollout of an earlier change is under way (the reconciler has not reported on generation %d yet), and the nodes' progress changes until the apply", s.Generation)
		case s.Status.Status != v1alpha1.StatusComplete && s.Status.Status != v1alpha1.StatusPaused && s.Status.Status != v1alpha1.StatusDisabled:
			return fmt.Sprintf("its rollout of an earlier change is under way (status %q, complete nodes %q), and the nodes' progress changes until the apply", s.Status.Status, s.Status.CompleteNodes)
		}
	}
	return ""
}

// fleetNow is the warning's line on a fleet budget shared with other sets ("" when the set has
// none, or no other set shares it): the budget as the sets listed now make it, beside the
// shape's, which counts only this set's own rule.
func fleetNow(shape, now packageset.Preview) string {
	theirs := fleetConstraint(now)
	if theirs == "" || theirs == fleetConstraint(shape) {
		return ""
	}
	return fmt.Sprintf("\nShared now: %s (rollout_preview counts this set's own rule: the other sets sharing the budget may change in the same apply).", theirs)
}

// fleetConstraint is p's fleet budget constraint ("" without one).
func fleetConstraint(p packageset.Preview) string {
	for _, c := range p.Constraints {
		if strings.HasPrefix(c, "fleet budget ") {
			return c
		}
	}
	return ""
}

// fleetCache holds the provider's fleetView (providerData.fleetView).
type fleetCache struct {
	once sync.Once
	view *fleetView
	err  error
}

// fleetView returns the cluster's fleet as listed once per provider process. Errors: no
// cluster configured, or a list failed (the message names the list and the API server's
// words).
func (d *providerData) fleetView(ctx context.Context) (*fleetView, error) {
	if d == nil {
		return nil, errors.New("the provider is not configured")
	}
	d.fleet.once.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, previewReadTimeout)
		defer cancel()
		d.fleet.view, d.fleet.err = d.listFleet(ctx)
	})
	return d.fleet.view, d.fleet.err
}

// listFleet reads the nodes (clusterReads, shared with the performers' counts) and lists the
// package sets and PodDisruptionBudgets (and, for each budget that allows no disruption, its
// pods).
func (d *providerData) listFleet(ctx context.Context) (*fleetView, error) {
	nodes, err := d.reads.listNodes(ctx, d) // shared with the performers' counts
	if err != nil {
		return nil, err
	}
	c, _, err := d.get()
	if err != nil {
		return nil, err
	}
	core := c.Core.CoreV1()
	v := &fleetView{nodes: nodes}
	sets, err := c.Dynamic.Resource(wait.PackageSet.GVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing package sets: %w", err)
	}
	for i := range sets.Items {
		var s v1alpha1.PackageSet
		if runtime.DefaultUnstructuredConverter.FromUnstructured(sets.Items[i].Object, &s) == nil {
			v.sets = append(v.sets, s)
		}
	}
	pdbs, err := c.Core.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing PodDisruptionBudgets: %w", err)
	}
	for i := range pdbs.Items {
		pods, err := blockingPDBPods(ctx, core, &pdbs.Items[i])
		if err != nil {
			return nil, err
		}
		v.pdbPods = append(v.pdbPods, pods...)
	}
	return v, nil
}

// podLister is the part of the core client blockingPDBPods uses.
type podLister interface {
	Pods(namespace string) corev1client.PodInterface
}

// blockingPDBPods are the pods of a PodDisruptionBudget that allows 0 disruptions now (none
// for one that allows some), each with the refusal the Eviction API would give.
func blockingPDBPods(ctx context.Context, core podLister, pdb *policyv1.PodDisruptionBudget) ([]pdbPod, error) {
	if pdb.Status.DisruptionsAllowed > 0 || pdb.Spec.Selector == nil {
		return nil, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil || sel.Empty() {
		return nil, nil //nolint:nilerr // a selector the API server accepted but cannot parse selects nothing
	}
	pods, err := core.Pods(pdb.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of PodDisruptionBudget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	reason := fmt.Sprintf("PodDisruptionBudget %s/%s allows 0 disruptions (needs %d healthy pods and has %d)", pdb.Namespace, pdb.Name,
		pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	var out []pdbPod
	for _, p := range pods.Items {
		out = append(out, pdbPod{pod: p, reason: reason})
	}
	return out, nil
}

// factsFor are the preview facts of set over the fleet: the live set's status and annotations
// (compartments' batch state, quarantines) under the planned spec, the other sets, the nodes,
// and per node the drain refusals (the pods the drain would evict that a PodDisruptionBudget
// protects, and, when spec.drain forbids evicting emptyDir or unmanaged pods, the pods it would
// keep: one list of every pod) and the non-interruptible pods (one list of pods by the set's
// podNonInterruptLabels); pods skipped by spec.drain.skipPodLabels are neither. A failed list
// leaves its pods out.
func (v *fleetView) factsFor(ctx context.Context, d *providerData, set *v1alpha1.PackageSet) packageset.PreviewFacts {
	pf := packageset.PreviewFacts{Set: set, Nodes: v.nodes, Now: time.Now(), Refusals: map[string]string{}, NonInterrupt: map[string][]string{}}
	for i := range v.sets {
		if v.sets[i].Name == set.Name {
			set.Status, set.Annotations, set.Generation = v.sets[i].Status, v.sets[i].Annotations, v.sets[i].Generation
			continue
		}
		pf.Sets = append(pf.Sets, v.sets[i])
	}
	taint, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint) // a valid constant
	pf.Tolerations = append(packageset.StageTolerations(set), packageset.RuntimeToleration(taint))
	rules, err := packageset.DrainPodsOf(&set.Spec, k8stypes.NamespacedName{})
	if err != nil {
		return pf // the preview reports the set Stalled (InvalidSpec), as the reconciler would
	}
	refuse := func(p *corev1.Pod, why string) {
		line := fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, why)
		if old := pf.Refusals[p.Spec.NodeName]; old != "" {
			line = old + "; " + line
		}
		pf.Refusals[p.Spec.NodeName] = line
	}
	for _, pp := range v.pdbPods {
		p := pp.pod
		if c, _ := rules.Class(&p); p.Spec.NodeName != "" && c == packageset.DrainEvict {
			refuse(&p, pp.reason)
		}
	}
	c, _, err := d.get()
	if err != nil {
		return pf
	}
	if !rules.DeleteEmptyDirData || !rules.Force {
		if pods, err := c.Core.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if class, why := rules.Class(p); p.Spec.NodeName != "" && class == packageset.DrainKeep {
					refuse(p, why)
				}
			}
		}
	}
	if rules.NonInterrupt != nil && !rules.NonInterrupt.Empty() {
		if pods, err := c.Core.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: rules.NonInterrupt.String()}); err == nil {
			for i := range pods.Items {
				p := &pods.Items[i]
				if class, _ := rules.Class(p); p.Spec.NodeName != "" && class == packageset.DrainHold {
					pf.NonInterrupt[p.Spec.NodeName] = append(pf.NonInterrupt[p.Spec.NodeName], p.Namespace+"/"+p.Name)
				}
			}
		}
	}
	for _, pods := range pf.NonInterrupt {
		sort.Strings(pods)
	}
	return pf
}
