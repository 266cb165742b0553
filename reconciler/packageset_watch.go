package reconciler

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
)

// What starts a pass: the watch predicates SetupWithManager filters events with (only the
// changes a pass reads) and the pass gap (PassGap) that spaces the passes Pod, Job and Node
// events trigger, so that at hundreds of nodes one pass handles many events.

// setChanged: a PackageSet event other than a status-only update (the reconciler's own status
// writes change no fact a pass reads: they only report what the last pass decided).
var setChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, n := e.ObjectOld, e.ObjectNew
		return o.GetGeneration() != n.GetGeneration() || (o.GetDeletionTimestamp() == nil) != (n.GetDeletionTimestamp() == nil) ||
			!equality.Semantic.DeepEqual(o.GetFinalizers(), n.GetFinalizers()) || !equality.Semantic.DeepEqual(o.GetLabels(), n.GetLabels()) ||
			!equality.Semantic.DeepEqual(o.GetAnnotations(), n.GetAnnotations())
	},
}

// stageJobChanged: an event of a stage Job (an earlier reconciler's) a pass must see: its deletion (the stage's Job is gone)
// or a change of its conditions (complete, failed) or labels. Creations are the reconciler's
// own (a pass that does not find a Job it created in the cache yet gets AlreadyExists) and
// status updates that do not change a condition (active, ready counts) change no fact.
var stageJobChanged = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*batchv1.Job)
		n, ok2 := e.ObjectNew.(*batchv1.Job)
		if !ok1 || !ok2 {
			return true
		}
		return jobConditions(o) != jobConditions(n) || !equality.Semantic.DeepEqual(o.Labels, n.Labels) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
	},
}

func jobConditions(j *batchv1.Job) string {
	var b strings.Builder
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			b.WriteString(string(c.Type) + ":" + c.Reason + ":" + c.Message + ";")
		}
	}
	return b.String()
}

// stagePodChanged: a stage Pod event a pass must see: its phase changing (Succeeded, Failed),
// a pull error or failed container appearing or changing, its labels changing, its deletion
// starting or the pod being gone. Creations are the reconciler's own (a pass that does not find
// a Pod it created in the cache yet gets AlreadyExists) and other status updates (conditions,
// a running container) change no fact.
var stagePodChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		p, ok := e.Object.(*corev1.Pod)
		return !ok || stagePodProblem(p) != "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	},
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*corev1.Pod)
		n, ok2 := e.ObjectNew.(*corev1.Pod)
		if !ok1 || !ok2 {
			return true
		}
		if o.Status.Phase != n.Status.Phase || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) || !equality.Semantic.DeepEqual(o.Labels, n.Labels) {
			return true
		}
		pn := stagePodProblem(n)
		return pn != "" && pn != stagePodProblem(o)
	},
}

// stagePodProblem is the part of a stage Pod facts() reads: its image pull errors and failed
// containers ("" for a pod without either, the normal case).
func stagePodProblem(p *corev1.Pod) string {
	var b strings.Builder
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			if w := cs.State.Waiting; w != nil && (failure.ImagePullReasons[w.Reason] || failure.ContainerStartReasons[w.Reason]) {
				b.WriteString(cs.Name + ":" + w.Reason + ":" + w.Message + ";")
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				fmt.Fprintf(&b, "%s:%d:%s:%s;", cs.Name, t.ExitCode, t.Reason, t.Message)
			}
		}
	}
	return b.String()
}

// globalGateMoved reports whether, between the old and new node of an update, the
// gantry.dev/status_<set> annotation of a set with sequencing all changed (nodes: old, new).
func globalGateMoved(sets []v1alpha1.PackageSet, nodes ...*corev1.Node) bool {
	if len(nodes) != 2 || nodes[0] == nil || nodes[1] == nil {
		return false
	}
	for i := range sets {
		if sets[i].Spec.Sequencing != v1alpha1.SequencingAll {
			continue
		}
		k := v1alpha1.AnnotationNodeStatusPrefix + sets[i].Name
		if nodes[0].Annotations[k] != nodes[1].Annotations[k] {
			return true
		}
	}
	return false
}

// DefaultPassGap is PackageSetReconciler.PassGap's default.
const DefaultPassGap = 500 * time.Millisecond

// passTiming is when a set's last pass started and ended (running: it has not ended yet) and
// how long the last finished pass took.
type passTiming struct {
	running        bool
	started, ended time.Time
	took           time.Duration
}

// passDelay is how long an event for set waits before its pass: the gap (the last pass's
// duration, at most PassGap) after the last pass ended, or the gap from now while a pass runs;
// 0 when the set has not been passed over yet.
func (r *PackageSetReconciler) passDelay(set string) time.Duration {
	maxGap := r.PassGap
	if maxGap == 0 {
		maxGap = DefaultPassGap
	}
	if maxGap < 0 {
		return 0
	}
	r.mu.Lock()
	t, ok := r.lastPass[set]
	r.mu.Unlock()
	if !ok {
		return 0
	}
	gap := min(maxGap, t.took)
	if t.running {
		return gap
	}
	return max(0, time.Until(t.ended.Add(gap)))
}

// passing marks a pass over set as started (end false) or ended.
func (r *PackageSetReconciler) passing(set string, end bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastPass == nil {
		r.lastPass = map[string]passTiming{}
	}
	t := r.lastPass[set]
	now := time.Now()
	if end {
		t.running, t.ended, t.took = false, now, now.Sub(t.started)
	} else {
		t.running, t.started = true, now
	}
	r.lastPass[set] = t
}

// enqueue adds the sets' passes to q, each after its passDelay.
func (r *PackageSetReconciler) enqueue(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
	for _, req := range reqs {
		if d := r.passDelay(req.Name); d > 0 {
			q.AddAfter(req, d)
		} else {
			q.Add(req)
		}
	}
}
