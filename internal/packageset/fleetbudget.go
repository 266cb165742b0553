package packageset

// Rule: a fleet budget (NixFleet's fleet-wide disruptionBudgets shared by several rollouts):
// the package sets naming the same budget share one limit of nodes in flight.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// FleetFacts are a shared budget's facts (spec.rollout.fleetBudget) for one pass.
type FleetFacts struct {
	Name string
	// Max is the limit in force: the lowest limit of the sets sharing the budget (fleetLimit).
	Max int
	// Sets are the sets sharing the budget, this one included, sorted.
	Sets []string
	// Others maps each node the other sets of the budget have in flight (from the node's
	// gantry.dev/state_<set> and gantry.dev/cordon_<set> annotations: InFlightFor) to those
	// sets.
	Others map[string][]string
	// Own are the nodes this set has in flight by the same read (its own annotations, sorted).
	// They count beside what the pass's node facts say: those may come from a cache that has
	// not yet seen this set's last admission, and counting the node twice is harmless.
	Own []string
	// Members are the nodes the rule's nodeSelector matches (NixFleet's
	// disruptionBudgets[].selector): only they count and only they are held. Nil: every node
	// (no nodeSelector). Others and Own hold members only.
	Members map[string]bool
	// Selector is the rule's nodeSelector as a string ("rack=a"; "" without one).
	Selector string
}

// counts says whether the budget counts and limits node (Members; every node without a
// selector).
func (ff *FleetFacts) counts(node string) bool {
	return ff.Members == nil || ff.Members[node]
}

// InFlightFor says whether a node is in flight for a set from what the set wrote on it: its
// record's rollout (InFlight) or the set's cordon while the node is unschedulable.
func InFlightFor(rec *NodeRecord, cordoned bool) bool {
	return cordoned || rec != nil && InFlight(rec.Rollout)
}

// fleetPass counts the budget's nodes in flight while a pass grants nodes.
type fleetPass struct {
	facts *FleetFacts
	set   string
	// inflight maps each node in flight to the sets that have it in flight.
	inflight map[string][]string
	waiting  int
}

// newFleetPass is the budget's count before the pass: the other sets' nodes in flight plus
// this set's (nil without a fleet budget).
func newFleetPass(f SetFacts, nodes []NodeFacts) *fleetPass {
	if f.Fleet == nil {
		return nil
	}
	fp := &fleetPass{facts: f.Fleet, set: f.Name, inflight: map[string][]string{}}
	for n, sets := range f.Fleet.Others {
		fp.inflight[n] = append([]string(nil), sets...)
	}
	for _, n := range f.Fleet.Own {
		fp.take(n)
	}
	for _, n := range nodes {
		if InFlightFor(n.Record, n.Cordoned) {
			fp.take(n.Name)
		}
	}
	return fp
}

// take counts the node in flight for this set.
func (fp *fleetPass) take(node string) {
	if fp != nil && fp.facts.counts(node) && !slices.Contains(fp.inflight[node], fp.set) {
		fp.inflight[node] = append(fp.inflight[node], fp.set)
	}
}

// hold holds a node that would start (not in flight, nothing else holds it, work to do) while
// the budget is full; a node another set of the budget has in flight counts already and is
// not held, nor is a node the budget's nodeSelector does not match. Deleting holds nothing.
// Says whether it held the node.
func (fp *fleetPass) hold(p *nodePass, wasInFlight bool) bool {
	if fp == nil || p.f.Deleting || wasInFlight || p.hold != "" || !p.n.Selected || !fp.facts.counts(p.n.Name) || !p.needsWork() {
		return false
	}
	if len(fp.inflight) < fp.facts.Max || len(fp.inflight[p.n.Name]) > 0 {
		return false
	}
	p.hold = v1alpha1.StatusWaiting
	return true
}

// status is status.fleetBudget after the pass.
func (fp *fleetPass) status() *v1alpha1.FleetBudgetStatus {
	if fp == nil {
		return nil
	}
	st := &v1alpha1.FleetBudgetStatus{Name: fp.facts.Name, MaxInFlight: int32(fp.facts.Max), InFlight: int32(len(fp.inflight)),
		Sets: fp.facts.Sets, Waiting: int32(fp.waiting), NodeSelector: fp.facts.Selector}
	for node, sets := range fp.inflight {
		s := append([]string(nil), sets...)
		sort.Strings(s)
		st.Nodes = append(st.Nodes, node+" ("+strings.Join(s, ", ")+")")
	}
	sort.Strings(st.Nodes)
	return st
}

// FleetMessage is the status line of a fleet budget that holds nodes ("" when it holds none):
// "fleet budget <name> holds N nodes: M/max nodes in flight across sets a, b: node-1 (a); ...",
// the name followed by " (nodes <selector>)" for a budget with a nodeSelector.
func FleetMessage(st *v1alpha1.FleetBudgetStatus) string {
	if st == nil || st.Waiting == 0 {
		return ""
	}
	return fmt.Sprintf("fleet budget %s holds %d nodes: %d/%d nodes in flight across sets %s: %s", fleetName(st.Name, st.NodeSelector), st.Waiting,
		st.InFlight, st.MaxInFlight, strings.Join(st.Sets, ", "), listMessage(st.Nodes))
}

// fleetName is a budget's name in messages: "<name>", or "<name> (nodes <selector>)".
func fleetName(name, selector string) string {
	if selector == "" {
		return name
	}
	return name + " (nodes " + selector + ")"
}

// FleetFactsOf reads set's fleet budget (nil when it names none): the sets naming it (deleting
// ones too, as their uninstalls still disrupt nodes), the rule in force (fleetRule: the lowest
// limit) and what the members have in flight per their node annotations; a record that does not
// parse counts as in flight (the safe side). NixFleet holds a host while any matching
// disruptionBudget is at maxInFlight; here a budget is named and the lowest rule wins.
func FleetFactsOf(set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, nodes []corev1.Node) *FleetFacts {
	fb := fleetBudgetOf(set)
	if fb == nil {
		return nil
	}
	ff := &FleetFacts{Name: fb.Name, Sets: []string{set.Name}, Others: map[string][]string{}}
	var others []string
	sharing := []*v1alpha1.PackageSet{set}
	for i := range sets {
		o := fleetBudgetOf(&sets[i])
		if sets[i].Name == set.Name || o == nil || o.Name != fb.Name {
			continue
		}
		others = append(others, sets[i].Name)
		sharing = append(sharing, &sets[i])
	}
	var sel labels.Selector
	ff.Max, sel = fleetRule(sharing, nodes)
	if !sel.Empty() {
		ff.Selector, ff.Members = sel.String(), map[string]bool{}
		for i := range nodes {
			if sel.Matches(labels.Set(nodes[i].Labels)) {
				ff.Members[nodes[i].Name] = true
			}
		}
	}
	ff.Sets = append(ff.Sets, others...)
	sort.Strings(ff.Sets)
	for i := range nodes {
		n := &nodes[i]
		if !ff.counts(n.Name) {
			continue
		}
		if annotatedInFlight(n, set.Name) {
			ff.Own = append(ff.Own, n.Name)
		}
		for _, o := range others {
			if annotatedInFlight(n, o) {
				ff.Others[n.Name] = append(ff.Others[n.Name], o)
			}
		}
	}
	sort.Strings(ff.Own)
	return ff
}

// fleetRule is the rule in force among the sets sharing a budget: the lowest limit (fleetLimit;
// a maxInFlightPct resolved against the nodes the sets select that the rule's own nodeSelector
// matches) and that rule's selector (labels.Everything() without one). Ties go to the set first
// by name, so every set of the budget finds the same rule. A rule whose nodeSelector does not
// parse is left out (its set is Stalled, InvalidSpec); none left: 1 node, every node.
func fleetRule(sharing []*v1alpha1.PackageSet, nodes []corev1.Node) (int, labels.Selector) {
	byName := slices.Clone(sharing)
	sort.Slice(byName, func(i, j int) bool { return byName[i].Name < byName[j].Name })
	best, bestSel := 0, labels.Everything()
	for _, s := range byName {
		b := fleetBudgetOf(s)
		sel, err := FleetSelector(b)
		if err != nil {
			continue
		}
		base := 0
		if b.MaxInFlightPct != nil {
			base = fleetSelected(sharing, nodes, sel)
		}
		if limit := fleetLimit(b, base); best == 0 || limit < best {
			best, bestSel = limit, sel
		}
	}
	return max(best, 1), bestSel
}

// FleetSelector is a fleet budget's nodeSelector as a selector (labels.Everything() when
// unset). Error: it does not parse (metav1.LabelSelectorAsSelector's).
func FleetSelector(fb *v1alpha1.FleetBudget) (labels.Selector, error) {
	if fb == nil || fb.NodeSelector == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(fb.NodeSelector)
}

// fleetSelectorError is the invalid-spec message of a fleet budget nodeSelector that does not
// parse ("" when there is none or it parses).
func fleetSelectorError(set *v1alpha1.PackageSet) string {
	if _, err := FleetSelector(fleetBudgetOf(set)); err != nil {
		return "spec.rollout.fleetBudget.nodeSelector: " + err.Error()
	}
	return ""
}

// annotatedInFlight says whether node n is in flight for set by the set's annotations on it
// (InFlightFor); a record that does not parse counts as in flight (the safe side).
func annotatedInFlight(n *corev1.Node, set string) bool {
	_, cordon := n.Annotations[v1alpha1.AnnotationCordonPrefix+set]
	raw, has := n.Annotations[v1alpha1.AnnotationNodeStatePrefix+set]
	var rec *NodeRecord
	if has {
		rec = &NodeRecord{}
		if json.Unmarshal([]byte(raw), rec) != nil {
			rec.Rollout = v1alpha1.RolloutActivating
		}
	}
	return InFlightFor(rec, cordon && n.Spec.Unschedulable)
}

func fleetBudgetOf(s *v1alpha1.PackageSet) *v1alpha1.FleetBudget {
	if s.Spec.Rollout == nil || s.Spec.Rollout.FleetBudget == nil {
		return nil
	}
	if fb := s.Spec.Rollout.FleetBudget; fb.MaxInFlight >= 1 || fb.MaxInFlightPct != nil && *fb.MaxInFlightPct >= 1 {
		return fb
	}
	return nil
}

// fleetLimit is a set's fleet budget as a count: maxInFlight when set, else maxInFlightPct
// percent of selected (the nodes the sets sharing the budget select), floor, at least 1 (as
// the set's own interruption budget rounds a percentage). maxInFlight wins if both are set
// (the CRD allows one).
func fleetLimit(fb *v1alpha1.FleetBudget, selected int) int {
	if fb.MaxInFlight >= 1 || fb.MaxInFlightPct == nil {
		return max(int(fb.MaxInFlight), 1)
	}
	return max(int(*fb.MaxInFlightPct)*max(selected, 0)/100, 1)
}

// fleetSelected counts the nodes budget matches that any of sets selects (each node once): the
// base of a maxInFlightPct. A set whose selector is invalid selects none (its pass says why).
func fleetSelected(sets []*v1alpha1.PackageSet, nodes []corev1.Node, budget labels.Selector) int {
	var sels []labels.Selector
	for _, s := range sets {
		if sel, err := metav1.LabelSelectorAsSelector(&s.Spec.NodeSelector); err == nil {
			sels = append(sels, sel)
		}
	}
	c := 0
	for i := range nodes {
		if !budget.Matches(labels.Set(nodes[i].Labels)) {
			continue
		}
		for _, sel := range sels {
			if sel.Matches(labels.Set(nodes[i].Labels)) {
				c++
				break
			}
		}
	}
	return c
}
