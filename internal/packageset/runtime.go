package packageset

// Rule: the runtime-required taint (Skyhook's runtimeRequired and autoTaintNewNodes): which
// nodes lose it (every runtime-required set selecting the node is complete there), which gain
// it (new nodes of a set with autoTaintNewNodes), and what holds the others.

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Condition of a runtimeRequired set: True while some selected node keeps the taint.
const (
	ConditionRuntimeRequiredTaint = "RuntimeRequiredTaint"
	ReasonNodesTainted            = "NodesTainted"
	ReasonNodesReleased           = "NodesReleased"
)

// ParseTaint parses "key=value:Effect" or "key:Effect" (kubectl taint's form); the effect is
// NoSchedule, PreferNoSchedule or NoExecute.
func ParseTaint(s string) (corev1.Taint, error) {
	var t corev1.Taint
	i := strings.LastIndex(s, ":")
	if i <= 0 {
		return t, fmt.Errorf("taint %q: want key=value:Effect or key:Effect", s)
	}
	kv, effect := s[:i], corev1.TaintEffect(s[i+1:])
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return t, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
	}
	t.Effect = effect
	t.Key, t.Value, _ = strings.Cut(kv, "=")
	if t.Key == "" {
		return t, fmt.Errorf("taint %q: empty key", s)
	}
	return t, nil
}

// RuntimeToleration tolerates exactly the runtime-required taint t: every stage pod carries it
// (as Skyhook's package pods do), so the stages run on the nodes the taint holds.
func RuntimeToleration(t corev1.Taint) corev1.Toleration {
	return corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect}
}

// HasTaint reports whether taints holds t (same key and effect; the value is not compared, as
// kubectl taint and Skyhook's TaintExists do).
func HasTaint(taints []corev1.Taint, t corev1.Taint) bool {
	for i := range taints {
		if taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

// Touched reports whether a node with annotations was ever handled by a set: it has a
// gantry.dev/ annotation (a set's record, status or cordon, or the auto-taint marker). An
// untouched node is "new" for autoTaintNewNodes (Skyhook: no skyhook.nvidia.com/* annotation).
func Touched(annotations map[string]string) bool {
	for k := range annotations {
		if strings.HasPrefix(k, "gantry.dev/") {
			return true
		}
	}
	return false
}

// RuntimeHolders reads which runtime-required sets bear on a node with nodeLabels and
// nodeAnnotations: required, how many runtimeRequired sets (not disabled, not being deleted)
// select it; holding, those of them not complete on it, sorted. Among sets (every PackageSet),
// the one named like set is replaced by set, and its status on the node is self (the status
// this pass writes; the node's gantry.dev/status_<set> annotation may still be the last
// pass's); the other sets' statuses are their annotations. A set whose selector does not
// parse selects no node. cordonAfter names the first (by name) of those sets with
// runtimeRequiredCordonAfter, "" if none.
func RuntimeHolders(set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, nodeLabels, nodeAnnotations map[string]string, self Status) (required int, holding []string, cordonAfter string) {
	seen := false
	one := func(s *v1alpha1.PackageSet, status Status) {
		if !s.Spec.RuntimeRequired || s.Spec.Disabled || !s.DeletionTimestamp.IsZero() {
			return
		}
		sel, err := metav1.LabelSelectorAsSelector(&s.Spec.NodeSelector)
		if err != nil || !sel.Matches(labels.Set(nodeLabels)) {
			return
		}
		required++
		if s.Spec.RuntimeRequiredCordonAfter && (cordonAfter == "" || s.Name < cordonAfter) {
			cordonAfter = s.Name
		}
		if status != v1alpha1.StatusComplete {
			holding = append(holding, s.Name)
		}
	}
	for i := range sets {
		if sets[i].Name == set.Name {
			seen = true
			one(set, self)
			continue
		}
		one(&sets[i], Status(nodeAnnotations[v1alpha1.AnnotationNodeStatusPrefix+sets[i].Name]))
	}
	if !seen {
		one(set, self)
	}
	sort.Strings(holding)
	return required, holding, cordonAfter
}

// RuntimeNode is what a pass observed of one node of the set for the runtime-required taint.
type RuntimeNode struct {
	Name string
	// Selected: the set selects the node.
	Selected bool
	// Tainted: the node carries the runtime-required taint.
	Tainted bool
	// Touched: the node has a gantry.dev/ annotation (Touched): not new.
	Touched bool
	// Regating: the set's record on the node has a re-gate under way after this pass (a
	// reboot outside Gantry; NodeRecord.Regate): the node is tainted again though touched.
	Regating bool
	// Required, Holding and CordonAfter are RuntimeHolders' (this pass's status of the set on
	// the node).
	Required    int
	Holding     []string
	CordonAfter string
}

// RuntimeFacts are a pass's facts for the runtime-required taint.
type RuntimeFacts struct {
	// RuntimeRequired and AutoTaint are the set's spec.runtimeRequired and
	// spec.autoTaintNewNodes; Disabled and Deleting, its state (neither auto-taints).
	RuntimeRequired, AutoTaint, Disabled, Deleting bool
	// Nodes the set sees, any order.
	Nodes []RuntimeNode
}

// RuntimeDecision is what to do with the runtime-required taint.
type RuntimeDecision struct {
	// Taint: nodes to give the taint (and the auto-taint marker): new ones, and re-gating ones
	// (Regated); Untaint: nodes to remove it from. Sorted.
	Taint, Untaint []string
	// Regated: the nodes of Taint tainted again because they re-gate after a reboot outside
	// Gantry (RuntimeNode.Regating), not because they are new.
	Regated map[string]bool
	// CordonAfter: nodes of Untaint to cordon in the same update (runtimeRequiredCordonAfter)
	// → the set that asks.
	CordonAfter map[string]string
	// Held: the selected nodes that keep the taint after the pass → the runtime-required sets
	// not complete there (empty when no runtime-required set selects the node: nothing will
	// remove it).
	Held map[string][]string
}

// PlanRuntime decides the runtime-required taint of the set's nodes as Skyhook does: a node
// loses it once every runtime-required set selecting it is complete there (per node, so one node
// is released while another still runs), cordoned in the same update when a set asks
// (runtimeRequiredCordonAfter); a node no such set selects keeps it. autoTaint taints only
// untouched nodes (no gantry.dev/ annotation); a touched node is tainted again only while it
// re-gates after a reboot outside Gantry (RuntimeNode.Regating, as NodeWright #180 asks).
func PlanRuntime(f RuntimeFacts) RuntimeDecision {
	nodes := append([]RuntimeNode(nil), f.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	var d RuntimeDecision
	for _, n := range nodes {
		tainted := n.Tainted
		switch {
		case n.Tainted && n.Required > 0 && len(n.Holding) == 0:
			d.Untaint = append(d.Untaint, n.Name)
			tainted = false
			if n.CordonAfter != "" {
				if d.CordonAfter == nil {
					d.CordonAfter = map[string]string{}
				}
				d.CordonAfter[n.Name] = n.CordonAfter
			}
		case !n.Tainted:
			tainted = d.taint(f, n)
		}
		if tainted && n.Selected {
			if d.Held == nil {
				d.Held = map[string][]string{}
			}
			d.Held[n.Name] = n.Holding
		}
	}
	return d
}

// taint adds the untainted node n to Taint when PlanRuntime's rules give it the taint: new
// (autoTaint), or re-gating (Regated); it says whether they do.
func (d *RuntimeDecision) taint(f RuntimeFacts, n RuntimeNode) bool {
	if !f.RuntimeRequired || f.Disabled || f.Deleting || !n.Selected || len(n.Holding) == 0 {
		return false
	}
	switch {
	case f.AutoTaint && !n.Touched:
	case n.Regating:
		if d.Regated == nil {
			d.Regated = map[string]bool{}
		}
		d.Regated[n.Name] = true
	default:
		return false
	}
	d.Taint = append(d.Taint, n.Name)
	return true
}

// MaxHeldListed is how many held nodes the RuntimeRequiredTaint condition names.
const MaxHeldListed = 12

// RuntimeCondition is the RuntimeRequiredTaint condition of a runtimeRequired set: True
// (NodesTainted) naming the selected nodes that keep taint and the sets they wait for, False
// (NodesReleased) when none does.
func RuntimeCondition(generation int64, taint string, held map[string][]string) metav1.Condition {
	c := metav1.Condition{Type: ConditionRuntimeRequiredTaint, ObservedGeneration: generation}
	if len(held) == 0 {
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, ReasonNodesReleased, "no selected node carries the runtime-required taint "+taint
		return c
	}
	names := make([]string, 0, len(held))
	for n := range held {
		names = append(names, n)
	}
	sort.Strings(names)
	var items []string
	for i, n := range names {
		if i == MaxHeldListed {
			items = append(items, fmt.Sprintf("and %d more", len(names)-i))
			break
		}
		if len(held[n]) == 0 {
			items = append(items, n+" (no runtime-required set selects it)")
		} else {
			items = append(items, n+" (waiting for "+strings.Join(held[n], ", ")+")")
		}
	}
	c.Status, c.Reason = metav1.ConditionTrue, ReasonNodesTainted
	c.Message = fmt.Sprintf("%d node(s) keep the runtime-required taint %s: %s", len(names), taint, strings.Join(items, "; "))
	return c
}
