package packageset

// Rule: channel edges (NixFleet's channelEdges[] {before, after, reason}, RFC-0005 §6): a set
// naming another in spec.afterConverged starts no node until that set is converged (complete on
// every node it selects, for its current generation). As upstream's gate: a predecessor with no
// history is open, a halted one holds; nodes already in flight finish.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// ConvergedWaits are the lines of set's spec.afterConverged entries that hold it now, in the
// spec's order (nil: none holds): "package set <name> [(<reason>)] <why>" (notConverged). sets
// are the cluster's package sets, nodes its nodes (their gantry.dev/state_<set> and
// gantry.dev/status_<set> annotations). A name no set has does not hold (NixFleet: a
// predecessor channel with no rollout is open).
func ConvergedWaits(set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, nodes []corev1.Node) []string {
	if len(set.Spec.AfterConverged) == 0 {
		return nil
	}
	var out []string
	for _, e := range set.Spec.AfterConverged {
		for i := range sets {
			if sets[i].Name != e.Name || e.Name == set.Name {
				continue
			}
			if why := notConverged(&sets[i], nodes); why != "" {
				out = append(out, "package set "+edgeWait(e.Name, e.Reason)+" "+why)
			}
			break
		}
	}
	return out
}

// notConverged says why set o holds the sets that name it in spec.afterConverged ("" when it
// does not): "is halted: <Stalled reason>: <message>" or "is halted: erroring (2/5 nodes
// complete)" (NixFleet: a Failed or Reverted predecessor rollout holds), "is paused", "has not
// rolled out generation N yet", "is <status> (<complete>/<selected> nodes complete)", or "is
// not complete on every node it selects" (a node's gantry.dev/status_<set> annotation says so
// while the status has not caught up). A disabled or deleting set does not hold (as spec.after),
// nor one with no history: never reconciled (no status.observedGeneration) and no node carries
// its record (NixFleet: "if gates has never had a rollout, the gate is open").
func notConverged(o *v1alpha1.PackageSet, nodes []corev1.Node) string {
	st := o.Status
	switch {
	case o.Spec.Disabled || !o.DeletionTimestamp.IsZero():
		return ""
	case st.ObservedGeneration == 0 && !hasRecords(o.Name, nodes):
		return ""
	}
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return "is halted: " + c.Reason + ": " + c.Message
	}
	incomplete := incompleteOn(o, nodes)
	switch {
	case st.Status == v1alpha1.StatusErroring || st.Status == v1alpha1.StatusBlocked:
		return fmt.Sprintf("is halted: %s (%s nodes complete)", st.Status, st.CompleteNodes)
	case o.IsPaused() && (incomplete || st.ObservedGeneration != o.Generation):
		return "is paused"
	case o.IsPaused():
		return "" // paused after it converged: nothing is left to wait for
	case st.ObservedGeneration != o.Generation:
		return fmt.Sprintf("has not rolled out generation %d yet", o.Generation)
	case st.Status != v1alpha1.StatusComplete:
		return fmt.Sprintf("is %s (%s nodes complete)", st.Status, st.CompleteNodes)
	case incomplete:
		return "is not complete on every node it selects"
	}
	return ""
}

// hasRecords says whether any node carries set's record (gantry.dev/state_<set>): the set has
// started a node at some point.
func hasRecords(set string, nodes []corev1.Node) bool {
	for i := range nodes {
		if _, ok := nodes[i].Annotations[v1alpha1.AnnotationNodeStatePrefix+set]; ok {
			return true
		}
	}
	return false
}

// holdForConverged holds the node (status waiting) while spec.afterConverged sets are not
// converged (waits: the facts' ConvergedWaits), unless it is in flight already (it finishes),
// something else holds it, it has nothing to do, or the set is being deleted (an uninstall
// waits for no edge). Says whether it held the node.
func holdForConverged(p *nodePass, waits []string, wasInFlight bool) bool {
	if len(waits) == 0 || p.f.Deleting || p.hold != "" || !p.n.Selected || wasInFlight || !p.needsWork() {
		return false
	}
	p.hold = v1alpha1.StatusWaiting
	return true
}
