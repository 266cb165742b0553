package reconciler

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// The runtime-required taint (spec.runtimeRequired, spec.autoTaintNewNodes; Skyhook's
// runtime_required.md): every stage pod tolerates it; a pass decides (packageset.PlanRuntime)
// which of the set's nodes gain it (before the nodes' records are written, so a node is never
// recorded without its taint) and which lose it (after the records are written), and the
// RuntimeRequiredTaint condition and status.runtimeRequiredNodes say which still carry it.

// runtimeTaint is the runtime-required taint (RuntimeRequiredTaint, or
// v1alpha1.DefaultRuntimeRequiredTaint when unset).
func (r *PackageSetReconciler) runtimeTaint() corev1.Taint {
	if r.RuntimeRequiredTaint.Key != "" {
		return r.RuntimeRequiredTaint
	}
	t, _ := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint) // a valid constant
	return t
}

// runtimeTaintString is runtimeTaint as "key=value:Effect".
func (r *PackageSetReconciler) runtimeTaintString() string {
	t := r.runtimeTaint()
	return t.ToString()
}

// stageTolerations are the tolerations of the set's stage pods: packageset.StageTolerations
// and the runtime-required taint's.
func (r *PackageSetReconciler) stageTolerations(set *v1alpha1.PackageSet) []corev1.Toleration {
	return append(packageset.StageTolerations(set), packageset.RuntimeToleration(r.runtimeTaint()))
}

// actRuntime is act (the node plans of d) between the runtime-required taint's changes
// (packageset.PlanRuntime): new nodes gain the taint before their records are written (a node
// is never recorded without it), nodes whose runtime-required sets are all complete lose it
// after (only when no node write conflicted: the pass is retried then). It returns act's
// results and the runtime decision (for the status).
func (r *PackageSetReconciler) actRuntime(ctx context.Context, set *v1alpha1.PackageSet, nodes map[string]*corev1.Node, d packageset.Decision, deleting bool) (conflicted int, refusals map[string]string, rt packageset.RuntimeDecision, err error) {
	f, err := r.runtimeFacts(ctx, set, nodes, d, deleting)
	if err != nil {
		return 0, nil, rt, err
	}
	rt = packageset.PlanRuntime(f)
	if err := r.autoTaint(ctx, set, nodes, rt); err != nil {
		return 0, nil, rt, err
	}
	conflicted, refusals, err = r.act(ctx, set, nodes, d.Nodes)
	if err != nil || conflicted > 0 {
		return conflicted, refusals, rt, err
	}
	return conflicted, refusals, rt, r.releaseNodes(ctx, set, nodes, rt)
}

// runtimeFacts gathers the facts of PlanRuntime: per node the set sees, its taint, whether
// any set touched it, whether it re-gates after a reboot outside Gantry (its record in d), and
// the runtime-required sets that select it and are not complete on it (this set's status on
// it from d, the pass's decision). Only nodes that carry the taint, or could get it
// (autoTaintNewNodes, or a re-gate of a runtime-required set), need the sets read.
func (r *PackageSetReconciler) runtimeFacts(ctx context.Context, set *v1alpha1.PackageSet, nodes map[string]*corev1.Node, d packageset.Decision, deleting bool) (packageset.RuntimeFacts, error) {
	f := packageset.RuntimeFacts{RuntimeRequired: set.Spec.RuntimeRequired, AutoTaint: set.Spec.AutoTaintNewNodes, Disabled: set.Spec.Disabled, Deleting: deleting}
	taint := r.runtimeTaint()
	autoTaint := f.RuntimeRequired && f.AutoTaint && !f.Disabled && !deleting
	reTaint := f.RuntimeRequired && !f.Disabled && !deleting
	var sets *v1alpha1.PackageSetList
	sel, err := metav1.LabelSelectorAsSelector(&set.Spec.NodeSelector)
	if err != nil {
		sel = labels.Nothing()
	}
	for _, np := range d.Nodes {
		node := nodes[np.Name]
		if node == nil {
			continue
		}
		n := packageset.RuntimeNode{Name: node.Name, Selected: sel.Matches(labels.Set(node.Labels)), Tainted: packageset.HasTaint(node.Spec.Taints, taint),
			Touched: packageset.Touched(node.Annotations), Regating: np.Record != nil && np.Record.Regate != nil}
		if candidate := n.Selected && (autoTaint && !n.Touched || reTaint && n.Regating); !n.Tainted && !candidate {
			f.Nodes = append(f.Nodes, n)
			continue
		}
		if sets == nil {
			sets = &v1alpha1.PackageSetList{}
			if err := r.Client.List(ctx, sets, client.UnsafeDisableDeepCopy); err != nil {
				return f, err
			}
		}
		self := np.Status
		if np.Record == nil {
			self = ""
		}
		n.Required, n.Holding, n.CordonAfter = packageset.RuntimeHolders(set, sets.Items, node.Labels, node.Annotations, self)
		f.Nodes = append(f.Nodes, n)
	}
	return f, nil
}

// applyRuntimeTaint adds (add) or removes the runtime-required taint on the node (and, when
// adding, the gantry.dev/auto-taint marker; when removing with cordonFor, the set asking for
// runtimeRequiredCordonAfter, the cordon and its gantry.dev/runtime-required-cordon annotation
// in the same update): one update of a fresh read, retried on conflict.
// changed is false when there was nothing to do (another set's pass did it). The node in
// nodes is replaced by the updated one, so the pass's record write starts from it.
func (r *PackageSetReconciler) applyRuntimeTaint(ctx context.Context, node *corev1.Node, add bool, cordonFor string) (changed bool, err error) {
	taint := r.runtimeTaint()
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		changed = false
		fresh := &corev1.Node{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Name: node.Name}, fresh); err != nil {
			return err
		}
		has := packageset.HasTaint(fresh.Spec.Taints, taint)
		if has == add {
			*node = *fresh
			return nil
		}
		n := fresh.DeepCopy()
		if add {
			n.Spec.Taints = append(n.Spec.Taints, taint)
			n.Annotations = maps.Clone(n.Annotations)
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[v1alpha1.AnnotationAutoTaint] = taint.ToString()
		} else {
			var kept []corev1.Taint
			for i := range n.Spec.Taints {
				if !n.Spec.Taints[i].MatchTaint(&taint) {
					kept = append(kept, n.Spec.Taints[i])
				}
			}
			n.Spec.Taints = kept
			if cordonFor != "" {
				n.Spec.Unschedulable = true
				n.Annotations = maps.Clone(n.Annotations)
				if n.Annotations == nil {
					n.Annotations = map[string]string{}
				}
				n.Annotations[v1alpha1.AnnotationRuntimeRequiredCordon] = cordonFor
			}
		}
		if err := r.Client.Update(ctx, n); err != nil {
			return err
		}
		changed = true
		*node = *n
		return nil
	})
	return changed, client.IgnoreNotFound(err)
}

// autoTaint adds the taint to the nodes rd.Taint names (before their records are written),
// with a Normal RuntimeTaintAdded event per node saying why: a new node (autoTaintNewNodes), or
// a node re-gated after a reboot outside Gantry (rd.Regated: reapplyOnReboot).
func (r *PackageSetReconciler) autoTaint(ctx context.Context, set *v1alpha1.PackageSet, nodes map[string]*corev1.Node, rd packageset.RuntimeDecision) error {
	for _, name := range rd.Taint {
		node := nodes[name]
		if node == nil {
			continue
		}
		changed, err := r.applyRuntimeTaint(ctx, node, true, "")
		if err != nil {
			return fmt.Errorf("node %s: add the runtime-required taint: %w", name, err)
		}
		switch {
		case changed && rd.Regated[name]:
			r.Recorder.Eventf(set, corev1.EventTypeNormal, "RuntimeTaintAdded", "added the runtime-required taint %s to node %s again: re-gated after a reboot outside Gantry "+
				"(reapplyOnReboot); it goes once every runtime-required set selecting the node is complete there", r.runtimeTaintString(), name)
		case changed:
			r.Recorder.Eventf(set, corev1.EventTypeNormal, "RuntimeTaintAdded", "added the runtime-required taint %s to new node %s (autoTaintNewNodes)", r.runtimeTaintString(), name)
		}
	}
	return nil
}

// releaseNodes removes the taint from the nodes rd.Untaint names (after their records are
// written), with a Normal RuntimeTaintRemoved event per node.
func (r *PackageSetReconciler) releaseNodes(ctx context.Context, set *v1alpha1.PackageSet, nodes map[string]*corev1.Node, rd packageset.RuntimeDecision) error {
	for _, name := range rd.Untaint {
		node := nodes[name]
		if node == nil {
			continue
		}
		cordonFor := rd.CordonAfter[name]
		changed, err := r.applyRuntimeTaint(ctx, node, false, cordonFor)
		if err != nil {
			return fmt.Errorf("node %s: remove the runtime-required taint: %w", name, err)
		}
		switch {
		case changed && cordonFor != "":
			r.Recorder.Eventf(set, corev1.EventTypeNormal, "RuntimeRequiredCordon", "removed the runtime-required taint %s from node %s and cordoned it (runtimeRequiredCordonAfter of %s): "+
				"release it with kubectl uncordon %s and kubectl annotate node %s %s-", r.runtimeTaintString(), name, cordonFor, name, name, v1alpha1.AnnotationRuntimeRequiredCordon)
		case changed:
			r.Recorder.Eventf(set, corev1.EventTypeNormal, "RuntimeTaintRemoved", "removed the runtime-required taint %s from node %s: every runtime-required set selecting it is complete there", r.runtimeTaintString(), name)
		}
	}
	return nil
}

// runtimeStatus sets the runtime-required part of st: for a runtimeRequired set, the count of
// selected nodes keeping the taint and the RuntimeRequiredTaint condition; for another set,
// neither.
func (r *PackageSetReconciler) runtimeStatus(st *v1alpha1.PackageSetStatus, set *v1alpha1.PackageSet, rd packageset.RuntimeDecision) {
	if !set.Spec.RuntimeRequired {
		st.RuntimeRequiredNodes = 0
		meta.RemoveStatusCondition(&st.Conditions, packageset.ConditionRuntimeRequiredTaint)
		return
	}
	st.RuntimeRequiredNodes = int32(len(rd.Held))
	meta.SetStatusCondition(&st.Conditions, packageset.RuntimeCondition(set.Generation, r.runtimeTaintString(), rd.Held))
}
