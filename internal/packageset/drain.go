package packageset

// Rule: which of a node's pods a drain evicts, waits for, keeps or leaves (Skyhook's ShouldEvict,
// podNonInterruptLabels and spec.drain, as kubectl drain's filters), shared by the reconciler's
// drain and the provider's rollout preview; and spec.drain as the machine reads it.

import (
	"fmt"
	"time"

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
	// the reconciler itself, DaemonSet-owned, tolerating the unschedulable taint, or matching
	// spec.drain.skipPodLabels).
	DrainSkip DrainClass = iota
	// DrainHold: a running or pending pod matching podNonInterruptLabels, which must finish
	// before the node is drained or interrupted (even while terminating: it still runs).
	DrainHold
	// DrainTerminating: a pod to evict that is already being deleted (its grace period runs).
	DrainTerminating
	// DrainEvict: a pod the drain evicts through the Eviction API.
	DrainEvict
	// DrainKeep: a pod the drain would evict but spec.drain forbids (emptyDir data without
	// deleteEmptyDirData, no controller without force): it is not evicted and holds the
	// drain, as kubectl drain refuses such pods, until it goes or the drain times out.
	DrainKeep
)

// DrainPods is how a set's drain sorts a node's pods (DrainPodsOf): the selectors and
// settings of spec.podNonInterruptLabels and spec.drain, and the reconciler's own pod.
type DrainPods struct {
	// NonInterrupt is podNonInterruptLabels (nil or empty: none); Skip is
	// spec.drain.skipPodLabels (nil or empty: none).
	NonInterrupt, Skip labels.Selector
	// DeleteEmptyDirData and Force are spec.drain's (true when unset: today's drain).
	DeleteEmptyDirData, Force bool
	// Self is the reconciler's own pod (zero: unknown).
	Self types.NamespacedName
}

// DrainPodsOf is the drain's pod rules of spec for the reconciler whose pod is self. Errors: a
// selector the API server accepted that does not parse (named by its field).
func DrainPodsOf(spec *v1alpha1.PackageSetSpec, self types.NamespacedName) (DrainPods, error) {
	ds := DrainSpecOf(spec.Drain)
	o := DrainPods{DeleteEmptyDirData: ds.DeleteEmptyDirData, Force: ds.Force, Self: self}
	var err error
	if spec.PodNonInterruptLabels != nil {
		if o.NonInterrupt, err = metav1.LabelSelectorAsSelector(spec.PodNonInterruptLabels); err != nil {
			return o, fmt.Errorf("spec.podNonInterruptLabels: %w", err)
		}
	}
	if spec.Drain != nil && spec.Drain.SkipPodLabels != nil {
		if o.Skip, err = metav1.LabelSelectorAsSelector(spec.Drain.SkipPodLabels); err != nil {
			return o, fmt.Errorf("spec.drain.skipPodLabels: %w", err)
		}
	}
	return o, nil
}

// DrainClassOf sorts pod p as today's drain (spec.drain unset) sees it: nonInterrupt is the
// set's podNonInterruptLabels selector (nil or empty: none); self the reconciler's own pod
// (zero: unknown).
func DrainClassOf(p *corev1.Pod, nonInterrupt labels.Selector, self types.NamespacedName) DrainClass {
	c, _ := DrainPods{NonInterrupt: nonInterrupt, DeleteEmptyDirData: true, Force: true, Self: self}.Class(p)
	return c
}

// Class sorts pod p as a drain of its node sees it (Skyhook's ShouldEvict, with kubectl
// drain's filters for what spec.drain forbids), and for DrainKeep says why ("uses emptyDir
// data (drain.deleteEmptyDirData is false)"). Order: not running or pending → skip; matching
// podNonInterruptLabels → hold (even when skipPodLabels matches too); matching skipPodLabels,
// kube-system, a stage pod, the reconciler, DaemonSet-owned, tolerating unschedulable → skip;
// being deleted → terminating; emptyDir without deleteEmptyDirData, then no controller without
// force (kubectl's order) → keep; else evict.
func (o DrainPods) Class(p *corev1.Pod) (DrainClass, string) {
	if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
		return DrainSkip, ""
	}
	if matches(o.NonInterrupt, p) {
		return DrainHold, ""
	}
	if matches(o.Skip, p) || p.Namespace == "kube-system" || p.Labels[v1alpha1.LabelPackageSet] != "" {
		return DrainSkip, ""
	}
	if o.Self.Name != "" && p.Namespace == o.Self.Namespace && p.Name == o.Self.Name {
		return DrainSkip, "" // the reconciler itself
	}
	ref := metav1.GetControllerOf(p)
	if ref != nil && ref.Kind == "DaemonSet" {
		return DrainSkip, ""
	}
	for _, t := range p.Spec.Tolerations {
		if t.Key == corev1.TaintNodeUnschedulable && t.Operator == corev1.TolerationOpExists {
			return DrainSkip, ""
		}
	}
	if p.DeletionTimestamp != nil {
		return DrainTerminating, ""
	}
	if !o.DeleteEmptyDirData && hasEmptyDir(p) {
		return DrainKeep, "uses emptyDir data (drain.deleteEmptyDirData is false)"
	}
	if !o.Force && ref == nil {
		return DrainKeep, "declares no controller (drain.force is false)"
	}
	return DrainEvict, ""
}

// matches: sel is set, not empty, and matches p's labels.
func matches(sel labels.Selector, p *corev1.Pod) bool {
	return sel != nil && !sel.Empty() && sel.Matches(labels.Set(p.Labels))
}

// hasEmptyDir: p mounts an emptyDir volume (kubectl drain's "local storage").
func hasEmptyDir(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.EmptyDir != nil {
			return true
		}
	}
	return false
}

// DrainSpec is spec.drain as the machine and the reconciler's evictions read it (DrainSpecOf),
// each unset field at today's drain.
type DrainSpec struct {
	// GracePeriod is the evictions' gracePeriodSeconds (whole seconds, rounded up); nil: each
	// pod's own terminationGracePeriodSeconds.
	GracePeriod *int64
	// Timeout bounds a drain (0: none).
	Timeout time.Duration
	// DeleteEmptyDirData and Force: evict pods with emptyDir volumes, and pods that declare no
	// controller (true when unset).
	DeleteEmptyDirData, Force bool
	// OnTimeout is Fail or Continue (Fail when unset).
	OnTimeout v1alpha1.DrainTimeoutAction
	// NonInterruptTimeout bounds the wait for podNonInterruptLabels pods (0: none);
	// OnNonInterruptTimeout is Fail or Drain (Fail when unset).
	NonInterruptTimeout   time.Duration
	OnNonInterruptTimeout v1alpha1.NonInterruptTimeoutAction
}

// DrainSpecOf is d (spec.drain, nil: unset) with today's drain for every unset field: each
// pod's own grace period, no timeout, emptyDir and unmanaged pods evicted, Fail at a timeout.
func DrainSpecOf(d *v1alpha1.Drain) DrainSpec {
	s := DrainSpec{DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail, OnNonInterruptTimeout: v1alpha1.NonInterruptTimeoutFail}
	if d == nil {
		return s
	}
	if d.GracePeriod != nil && d.GracePeriod.Duration >= 0 {
		secs := int64((d.GracePeriod.Duration + time.Second - 1) / time.Second)
		s.GracePeriod = &secs
	}
	if d.Timeout != nil && d.Timeout.Duration > 0 {
		s.Timeout = d.Timeout.Duration
	}
	if d.DeleteEmptyDirData != nil {
		s.DeleteEmptyDirData = *d.DeleteEmptyDirData
	}
	if d.Force != nil {
		s.Force = *d.Force
	}
	if d.OnTimeout == v1alpha1.DrainTimeoutContinue {
		s.OnTimeout = d.OnTimeout
	}
	if d.NonInterruptTimeout != nil && d.NonInterruptTimeout.Duration > 0 {
		s.NonInterruptTimeout = d.NonInterruptTimeout.Duration
	}
	if d.OnNonInterruptTimeout == v1alpha1.NonInterruptTimeoutDrain {
		s.OnNonInterruptTimeout = d.OnNonInterruptTimeout
	}
	return s
}
