package reconciler

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// A pass's status phase: the status derived from the decision, written once and throttled while
// only per-node progress changes, the events that follow a write, and the end of a
// clear-quarantine request once the status without those quarantines is written.

// report is a pass's writeStatus and emit: the metrics, the status written once (through the
// shared writeStatusThrottled: a change of per-node progress alone waits for statusWait), the
// events that follow a write (statusWritten), and the end of an operator's request to lift
// quarantines (quarantineLifted, after the status without them is written).
func (r *PackageSetReconciler) report(ctx context.Context, set *v1alpha1.PackageSet, p *setPass) (ctrl.Result, error) {
	recordPackageSetMetrics(set.Name, p.d, p.nodes)
	status := r.status(set, p.d)
	r.runtimeStatus(&status, set, p.rt)
	requeue := p.d.RequeueAfter
	old := set.Status // replaced, not changed, by the write: the events compare with it
	throttle := func(cur, want *v1alpha1.PackageSetStatus) time.Duration {
		return r.statusWait(set.Name, cur, want, min(len(p.d.Nodes), packageset.MaxListedNodes))
	}
	w, err := writeStatusThrottled(ctx, r.Client, set, &set.Status, status, throttle)
	switch {
	case err != nil:
		return ctrl.Result{}, err
	case w.stale:
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	case w.wait > 0:
		// Only per-node progress changed and the last write is recent: write it later (the
		// node records stay the source of truth).
		if requeue == 0 || w.wait < requeue {
			requeue = w.wait
		}
		return ctrl.Result{RequeueAfter: requeue}, nil
	case w.written:
		r.expected.expect(types.NamespacedName{Name: set.Name}, set.ResourceVersion, nil)
		r.statusWritten(set, &old, &status)
	}
	if retry, err := r.quarantineLifted(ctx, set, p.d); err != nil {
		return ctrl.Result{}, err
	} else if retry {
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// status derives the set's status from the decision and the node records.
func (r *PackageSetReconciler) status(set *v1alpha1.PackageSet, d packageset.Decision) v1alpha1.PackageSetStatus {
	// Every field is set below but the conditions, which are updated in place: copy only
	// those (the node maps of the old status are not copied, they are rebuilt).
	st := v1alpha1.PackageSetStatus{Conditions: append([]metav1.Condition(nil), set.Status.Conditions...)}
	st.ObservedGeneration = set.Generation
	st.Status = d.Status
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.CompleteNodes, st.NodesInProgress = d.CompleteNodes, d.NodesInProgress
	st.QuarantinedVersions = d.Quarantined
	st.Compartments = d.Compartments
	st.CurrentWave = d.Wave
	st.NodeEdgeWaits, st.FleetBudget, st.AfterConvergedWaits = d.NodeEdgeWaits, d.Fleet, d.ConvergedWaits
	// The nodes one by one, bounded (packageset.List); the counts cover every node.
	l := packageset.List(d.Nodes, packageset.MaxListedNodes)
	st.NodeStatus, st.NodeState, st.NodeRollout, st.NodeCounts, st.RolloutCounts = nil, nil, nil, nil, nil
	st.NodesOmitted = int32(l.Omitted)
	if len(l.Nodes) > 0 {
		st.NodeStatus, st.NodeState, st.NodeRollout = map[string]v1alpha1.PackageSetStatusValue{}, map[string]map[string]v1alpha1.PackageStatus{}, map[string]v1alpha1.RolloutState{}
		st.NodeCounts, st.RolloutCounts = l.Status, l.Rollout
	}
	for _, np := range l.Nodes {
		st.NodeStatus[np.Name] = np.Status
		st.NodeRollout[np.Name] = packageset.RolloutOf(np)
		st.NodeState[np.Name] = packageset.PackagesOf(np)
	}
	return st
}

// statusWritten follows the write of status to set (old: the status it replaced): the
// DrainBlocked, HealthCheckObserved and Status events, and the time of the write.
func (r *PackageSetReconciler) statusWritten(set *v1alpha1.PackageSet, old, status *v1alpha1.PackageSetStatus) {
	prev := old.Status
	// DrainBlocked is announced when it turns True or names something new, not on every
	// pass it stays so: the event recorder's spam filter allows 25 events per object and
	// type, then one per 5 minutes, so a Warning per pass would mute the set's other
	// Warnings. The condition lives in the status, so a restart does not repeat it.
	// HealthChecksObserved (observe-mode health checks) likewise.
	for typ, reason := range map[string]string{packageset.ConditionDrainBlocked: packageset.ReasonDrainBlocked, packageset.ConditionHealthChecksObserved: "HealthCheckObserved"} {
		if now := meta.FindStatusCondition(status.Conditions, typ); now != nil && now.Status == metav1.ConditionTrue {
			if was := meta.FindStatusCondition(old.Conditions, typ); was == nil || was.Status != metav1.ConditionTrue || was.Message != now.Message {
				r.Recorder.Event(set, corev1.EventTypeWarning, reason, now.Message)
			}
		}
	}
	r.mu.Lock()
	if r.lastStatus == nil {
		r.lastStatus = map[string]time.Time{}
	}
	r.lastStatus[set.Name] = time.Now()
	r.mu.Unlock()
	if prev != status.Status {
		typ := corev1.EventTypeNormal
		if status.Status == v1alpha1.StatusErroring || status.Status == v1alpha1.StatusBlocked {
			typ = corev1.EventTypeWarning
		}
		c := meta.FindStatusCondition(status.Conditions, v1alpha1.ConditionReady)
		r.Recorder.Event(set, typ, "Status", fmt.Sprintf("status %s: %s", status.Status, c.Message))
	}
}

// statusWritePerNode and maxStatusWriteInterval throttle status writes when only per-node
// progress changed: at most once per listed nodes × statusWritePerNode, at most
// maxStatusWriteInterval apart. Each write costs the API server in proportion to the listed
// nodes (up to packageset.MaxListedNodes), so this bounds the bytes per second as sets grow;
// small sets see no difference. Aggregate status, generation, condition status or reason and
// quarantine changes are written at once.
const (
	statusWritePerNode     = 2 * time.Millisecond
	maxStatusWriteInterval = 5 * time.Second
)

// statusWait is how long the write of status (replacing old) of a set over nodes should
// wait: 0 to write now.
func (r *PackageSetReconciler) statusWait(set string, old, status *v1alpha1.PackageSetStatus, nodes int) time.Duration {
	if statusUrgent(old, status) {
		return 0
	}
	r.mu.Lock()
	last, ok := r.lastStatus[set]
	r.mu.Unlock()
	if !ok {
		return 0
	}
	interval := min(time.Duration(nodes)*statusWritePerNode, maxStatusWriteInterval)
	return max(0, time.Until(last.Add(interval)))
}

// statusUrgent: status differs from old in what a reader waits on (the aggregate status, the
// observed generation, a condition's status or reason, the quarantined versions) or in a
// deployment policy's batch state (the next pass reads it back), not only in per-node progress.
func statusUrgent(old, status *v1alpha1.PackageSetStatus) bool {
	if old.Status != status.Status || old.ObservedGeneration != status.ObservedGeneration ||
		!equality.Semantic.DeepEqual(old.QuarantinedVersions, status.QuarantinedVersions) || len(old.Conditions) != len(status.Conditions) ||
		!sameBatches(old.Compartments, status.Compartments) {
		return true
	}
	for _, c := range status.Conditions {
		o := meta.FindStatusCondition(old.Conditions, c.Type)
		if o == nil || o.Status != c.Status || o.Reason != c.Reason || o.ObservedGeneration != c.ObservedGeneration {
			return true
		}
	}
	return false
}

// sameBatches: a and b hold the same compartments with the same batch states.
func sameBatches(a, b []v1alpha1.CompartmentStatus) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !equality.Semantic.DeepEqual(a[i].Batch, b[i].Batch) {
			return false
		}
	}
	return true
}

// quarantineLifted ends an operator's request to lift quarantines (the
// gantry.dev/clear-quarantine annotation), after the status without them is written: a Normal
// event names the keys lifted, and the annotation keeps only the keys still held by a rollback
// in progress (removed when none). retry: a conflict (the annotation changed meanwhile) or
// the set is gone, so the pass is retried soon; err: any other API error of the write.
func (r *PackageSetReconciler) quarantineLifted(ctx context.Context, set *v1alpha1.PackageSet, d packageset.Decision) (retry bool, err error) {
	value, asked := set.Annotations[v1alpha1.AnnotationClearQuarantine]
	if !asked || len(d.QuarantinePending) > 0 && value == strings.Join(d.QuarantinePending, ",") {
		return false, nil
	}
	before := set.DeepCopy()
	if len(d.QuarantinePending) > 0 {
		set.Annotations[v1alpha1.AnnotationClearQuarantine] = strings.Join(d.QuarantinePending, ",")
	} else {
		delete(set.Annotations, v1alpha1.AnnotationClearQuarantine)
	}
	if err := r.Client.Patch(ctx, set, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	}
	if len(d.QuarantineLifted) > 0 {
		r.Recorder.Eventf(set, corev1.EventTypeNormal, "QuarantineLifted", "quarantine lifted (%s): %s; the next flow tries it again",
			v1alpha1.AnnotationClearQuarantine, strings.Join(d.QuarantineLifted, ", "))
	}
	return false, nil
}
