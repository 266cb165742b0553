package packageset

// Rule: which of a node's pods a drain evicts, waits for or leaves (Skyhook's ShouldEvict and
// podNonInterruptLabels), shared by the reconciler's drain and the provider's rollout preview.

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// DrainClass is what a drain does with one pod of the node.
type DrainClass int

const (
	// DrainSkip: the drain leaves the pod (not running or pending, kube-system, a stage pod,
	// the reconciler itself, DaemonSet-owned, or tolerating the unschedulable taint).
	DrainSkip DrainClass = iota
	// DrainHold: a running or pending pod matching podNonInterruptLabels, which must finish
	// before the node is drained or interrupted (even while terminating: it still runs).
	DrainHold
	// DrainTerminating: a pod to evict that is already being deleted (its grace period runs).
	DrainTerminating
	// DrainEvict: a pod the drain evicts through the Eviction API.
	DrainEvict
)

// DrainClassOf sorts pod p as a drain of its node sees it (Skyhook's ShouldEvict):
// nonInterrupt is the set's podNonInterruptLabels selector (nil or empty: none); self the
// reconciler's own pod (zero: unknown).
func DrainClassOf(p *corev1.Pod, nonInterrupt labels.Selector, self types.NamespacedName) DrainClass {
	if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
		return DrainSkip
	}
	if nonInterrupt != nil && !nonInterrupt.Empty() && nonInterrupt.Matches(labels.Set(p.Labels)) {
		return DrainHold
	}
	if p.Namespace == "kube-system" || p.Labels[v1alpha1.LabelPackageSet] != "" {
		return DrainSkip
	}
	if self.Name != "" && p.Namespace == self.Namespace && p.Name == self.Name {
		return DrainSkip // the reconciler itself
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
		return DrainSkip
	}
	for _, t := range p.Spec.Tolerations {
		if t.Key == corev1.TaintNodeUnschedulable && t.Operator == corev1.TolerationOpExists {
			return DrainSkip
		}
	}
	if p.DeletionTimestamp != nil {
		return DrainTerminating
	}
	return DrainEvict
}
