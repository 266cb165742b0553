package reconciler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// DefaultJobNamespace holds the stage Jobs when the reconciler watches every namespace.
const DefaultJobNamespace = "gantry-system"

// +kubebuilder:rbac:groups=gantry.dev,resources=packagesets,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=packagesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=packagesets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;create
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete

// PackageSetReconciler runs Skyhook's package lifecycle and NixFleet's rollout
// (internal/packageset) on the nodes a PackageSet selects: per-node state on the Nodes'
// gantry.dev/state_<set> annotations, one Pod per stage attempt bound to its node (created by
// the reconciler itself, no Job), cordon and drain
// for interrupts. It is thin: it gathers facts, calls packageset.Plan, acts, writes status once.
type PackageSetReconciler struct {
	Client    client.Client
	APIReader client.Reader
	// Cache is the manager's cache (stagePods reads its Pod index); nil: Client lists.
	Cache    cache.Cache
	Scheme   *runtime.Scheme
	Recorder record.EventRecorder
	// JobNamespace holds the stage Pods (created if missing; the name predates stage Pods).
	JobNamespace string
	Now          func() time.Time
	// Self is the reconciler's own Pod (env POD_NAMESPACE and POD_NAME, which the Helm chart
	// sets; empty outside a Pod): a drain never evicts it. Evicted from the node it cordoned,
	// a single reconciler could only be scheduled back onto that cordoned node, stay Pending
	// and never uncordon it.
	Self types.NamespacedName
	// fleetLocks: fleet budget name → *sync.Mutex (lockFleet).
	fleetLocks sync.Map

	mu      sync.Mutex
	nsReady bool
	// cfgMu serialises ensureConfigMap; cfgCreated holds the config ConfigMaps (by name)
	// created or found to exist that the cache may not show yet.
	cfgMu      sync.Mutex
	cfgCreated map[string]bool
	// expected remembers, per set, the resourceVersion of our last status write: while the
	// cache shows an older one, a pass would only plan from stale status and have its status
	// write refused (conflict), so it waits for the cache (expectations.go).
	expected expectations
	// PassGap bounds the wait between the end of one pass over a set and the start of the
	// next one that a Pod, Job or Node event triggers: the wait is as long as the last pass
	// took, at most PassGap (DefaultPassGap when zero; negative: no wait). A pass reads every
	// node of the set, so at hundreds of nodes one event per pass would spend the reconciler's
	// CPU on passes that each find one change; the wait lets the events of that time be
	// handled by one pass (a set's passes take at most about half the reconciler's time),
	// while small sets, whose passes take milliseconds, see no delay. Spec changes and
	// requeues are not delayed.
	PassGap time.Duration
	// lastPass times the last pass over each set.
	lastPass map[string]passTiming
	// lastStatus is when each set's status was last written (statusWait).
	lastStatus map[string]time.Time
	// RuntimeRequiredTaint is the runtime-required taint (spec.runtimeRequired); zero:
	// v1alpha1.DefaultRuntimeRequiredTaint. Every stage pod tolerates it.
	RuntimeRequiredTaint corev1.Taint
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

// NewPackageSetReconciler builds the reconciler from a manager.
func NewPackageSetReconciler(mgr ctrl.Manager, jobNamespace string) *PackageSetReconciler {
	return &PackageSetReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorderFor(FieldManager), JobNamespace: jobNamespace, cfgCreated: map[string]bool{},
		lastPass: map[string]passTiming{}, lastStatus: map[string]time.Time{},
		Self: types.NamespacedName{Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME")}}
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

// lockFleet serializes, in this reconciler, the passes of the package sets that share set's
// fleet budget (spec.rollout.fleetBudget, by name), from their facts to their node writes; with
// fleetFacts' uncached node read, a set's admission sees every node another set of the budget
// admitted before it. (With cached nodes alone, two sets passing at once each admitted a node:
// 2 in flight under a limit of 1, seen by the acceptance test's node watch.) Returns the
// unlock, a no-op for a set without a fleet budget.
func (r *PackageSetReconciler) lockFleet(set *v1alpha1.PackageSet) func() {
	if set.Spec.Rollout == nil || set.Spec.Rollout.FleetBudget == nil {
		return func() {}
	}
	mu, _ := r.fleetLocks.LoadOrStore(set.Spec.Rollout.FleetBudget.Name, &sync.Mutex{})
	m, _ := mu.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// fleetFacts are the set's fleet budget facts (packageset.FleetFactsOf; nil without a budget),
// read from the API server's nodes and package sets, not the cache (cached: as listed this pass):
// under lockFleet, the other sets' admissions are written before this read. Error: the
// uncached list failed.
func (r *PackageSetReconciler) fleetFacts(ctx context.Context, set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, cached []corev1.Node) (*packageset.FleetFacts, error) {
	if set.Spec.Rollout == nil || set.Spec.Rollout.FleetBudget == nil || r.APIReader == nil {
		return packageset.FleetFactsOf(set, sets, cached), nil
	}
	// The sets too: a set created in the same apply as this one may not be in the cache yet,
	// and its nodes would not count (3 in flight under a limit of 1 with cached sets).
	var fresh corev1.NodeList
	if err := r.APIReader.List(ctx, &fresh); err != nil {
		return nil, err
	}
	var freshSets v1alpha1.PackageSetList
	if err := r.APIReader.List(ctx, &freshSets); err != nil {
		return nil, err
	}
	return packageset.FleetFactsOf(set, freshSets.Items, fresh.Items), nil
}

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

// SetupWithManager watches PackageSets (not their status-only updates), their stage Pods
// (phase changes, pull errors, container failures, deletions), the stage Jobs of earlier
// reconcilers (deletions and condition changes) and Nodes (label, annotation, taint, cordon and boot ID changes only: kubelet heartbeats do not
// trigger passes); a Node change enqueues the PackageSets that select the node or hold a
// record or cordon on it. Pod, Job and Node events start a pass no sooner than the previous
// pass took (at most PassGap) after it ended.
func (r *PackageSetReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	nodeChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, okOld := e.ObjectOld.(*corev1.Node)
			n, okNew := e.ObjectNew.(*corev1.Node)
			if !okOld || !okNew {
				return true
			}
			return !equality.Semantic.DeepEqual(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Annotations, n.Annotations) ||
				!equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) || o.Spec.Unschedulable != n.Spec.Unschedulable ||
				o.Status.NodeInfo.BootID != n.Status.NodeInfo.BootID // a reboot interrupt's proof
		},
	}
	// A Node event concerns the sets that select the node (before or after the change: a
	// label change can deselect it) or hold a record on it; no other set reads that node.
	setsOfNode := func(ctx context.Context, nodes ...*corev1.Node) []reconcile.Request {
		var list v1alpha1.PackageSetList
		if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var out []reconcile.Request
		if globalGateMoved(list.Items, nodes...) {
			// A sequencing-all set's status changed on the node: every later set may be held
			// or released by it, wherever its nodes are.
			for i := range list.Items {
				out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: list.Items[i].Name}})
			}
			return out
		}
		for i := range list.Items {
			s := &list.Items[i]
			sel, err := metav1.LabelSelectorAsSelector(&s.Spec.NodeSelector)
			for _, n := range nodes {
				if n == nil {
					continue
				}
				_, hasRecord := n.Annotations[v1alpha1.AnnotationNodeStatePrefix+s.Name]
				_, hasCordon := n.Annotations[v1alpha1.AnnotationCordonPrefix+s.Name]
				if err != nil || hasRecord || hasCordon || sel.Matches(labels.Set(n.Labels)) {
					out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: s.Name}})
					break
				}
			}
		}
		return out
	}
	enqueue := r.enqueue
	nodeHandler := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			n, _ := e.Object.(*corev1.Node)
			enqueue(q, setsOfNode(ctx, n))
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			o, _ := e.ObjectOld.(*corev1.Node)
			n, _ := e.ObjectNew.(*corev1.Node)
			enqueue(q, setsOfNode(ctx, o, n))
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			n, _ := e.Object.(*corev1.Node)
			enqueue(q, setsOfNode(ctx, n))
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			n, _ := e.Object.(*corev1.Node)
			enqueue(q, setsOfNode(ctx, n))
		},
	}
	// Stage Pods (and stage Jobs of an earlier reconciler) enqueue their set (label gantry.dev/package-set), after passDelay.
	toSet := func(o client.Object) []reconcile.Request {
		if o == nil {
			return nil
		}
		if s := o.GetLabels()[v1alpha1.LabelPackageSet]; s != "" {
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: s}}}
		}
		return nil
	}
	stageHandler := handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, toSet(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, toSet(e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, toSet(e.Object))
		},
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, toSet(e.Object))
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.PackageSet{}, builder.WithPredicates(setChanged)).
		Watches(&batchv1.Job{}, stageHandler, builder.WithPredicates(stageJobChanged)).
		Watches(&corev1.Pod{}, stageHandler, builder.WithPredicates(stagePodChanged)).
		Watches(&corev1.Node{}, nodeHandler, builder.WithPredicates(nodeChanged)).
		Named("packageset").
		WithOptions(opts).
		Complete(r)
}

func (r *PackageSetReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Reconcile is one pass over one PackageSet, on the controllers' shared skeleton (status.go):
// get; skip while the cache is behind our last status write (expectations, as the Performer
// controller); then reconcileDelete or reconcileNormal, each of which runs gather, decide,
// act, writeStatus, emit.
//
// Unlike the Executor, Workspace and Performer controllers, the package set acts before it
// writes its status: the status reports what acting found, the drains' refused evictions
// (Decision.AddDrainRefusals: the DrainBlocked condition names the PodDisruptionBudget the API
// server cited) and the runtime-required taint's changes (runtimeStatus). Neither is known
// before the evictions and taint writes are tried, and deciding the status first would report
// them one pass late. The node records (written first, per node, by act) stay the source of
// truth; the status only reports them.
func (r *PackageSetReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	set, err := getOrForget(ctx, r.Client, req.NamespacedName, &v1alpha1.PackageSet{}, func() { r.forget(req.NamespacedName) })
	if set == nil {
		return ctrl.Result{}, err
	}
	unlock := r.lockFleet(set)
	defer unlock()
	r.passing(req.Name, false)
	defer r.passing(req.Name, true)
	if what := r.expected.stale(req.NamespacedName, set, nil, nil); what != "" {
		// The status write's own event is filtered out (setChanged), so the requeue is what
		// brings the next pass.
		log.FromContext(ctx).V(1).Info("cache behind our status write, waiting", "object", what, "resourceVersion", set.ResourceVersion)
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	if !set.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, set)
	}
	return r.reconcileNormal(ctx, set)
}

// reconcileNormal is a pass over a set that is not being deleted: the finalizer first, then
// gather, decide, act (and prune the config ConfigMaps no node needs once the set is
// Complete), writeStatus, emit.
func (r *PackageSetReconciler) reconcileNormal(ctx context.Context, set *v1alpha1.PackageSet) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(set, v1alpha1.Finalizer) {
		if err := setFinalizer(ctx, r.Client, set, true); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, err // never RequeueAfter beside an error (it would be ignored)
		}
	}
	p, res, err := r.pass(ctx, set, false)
	if p == nil {
		return res, err
	}
	if p.d.Status == v1alpha1.StatusComplete {
		if err := r.pruneConfigMaps(ctx, set, p.facts.Wants, p.d.Nodes); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.report(ctx, set, p)
}

// reconcileDelete is a pass over a set being deleted (nothing to do once its finalizer is
// gone): gather, decide, act (the nodes are released, packages uninstalled unless kept), then
// either the finalizer goes (every node released: Decision.Finished) or writeStatus, emit.
func (r *PackageSetReconciler) reconcileDelete(ctx context.Context, set *v1alpha1.PackageSet) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(set, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	p, res, err := r.pass(ctx, set, true)
	if p == nil {
		return res, err
	}
	if p.d.Finished {
		err := setFinalizer(ctx, r.Client, set, false)
		if err == nil {
			forgetPackageSetMetrics(set.Name)
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			err = nil // the set changed or went: its next event starts the next pass
		}
		return ctrl.Result{}, err
	}
	return r.report(ctx, set, p)
}

// setPass is what a pass gathered, decided and found acting.
type setPass struct {
	facts packageset.SetFacts
	nodes map[string]*corev1.Node
	d     packageset.Decision
	rt    packageset.RuntimeDecision
}

// pass runs gather (facts), decide (packageset.Plan: an illegal transition stops the pass
// with a TerminalError and the IllegalTransition event, illegalTransition) and act. A nil
// *setPass ends the pass with res and err: an error, or a node write conflict (retried soon).
func (r *PackageSetReconciler) pass(ctx context.Context, set *v1alpha1.PackageSet, deleting bool) (p *setPass, res ctrl.Result, err error) {
	if err := r.ensureNamespace(ctx); err != nil {
		return nil, ctrl.Result{}, err
	}
	// gather
	p = &setPass{}
	if p.facts, p.nodes, err = r.facts(ctx, set, deleting); err != nil {
		return nil, ctrl.Result{}, err
	}
	// decide
	if p.d, err = packageset.Plan(p.facts); err != nil {
		return nil, ctrl.Result{}, illegalTransition(r.Recorder, set, err)
	}
	// act: per node, the record first (so a restart never repeats a stage), then its Pods.
	// Nodes are independent, so they are acted on concurrently by a bounded pool (the
	// client's QPS/burst still bounds the request rate); within a node the order stays
	// record → Pod deletes → Pod creates → drain. A conflict on one node skips only that
	// node's actions (its Pods are not created without its record) and retries the pass soon.
	// The runtime-required taint goes on new nodes before, and off complete ones after (actRuntime).
	conflicted, refusals, rt, err := r.actRuntime(ctx, set, p.nodes, p.d, deleting)
	if err != nil {
		return nil, ctrl.Result{}, err
	}
	if conflicted > 0 {
		log.FromContext(ctx).V(1).Info("node write conflicts, retrying", "nodes", conflicted)
		return nil, ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	p.d.AddDrainRefusals(refusals)
	p.rt = rt
	r.drainTimeoutEvents(set, p.d.DrainTimeouts)
	r.regateEvents(set, p.d.Regated)
	r.adoptEvents(set, p.d.Adopted, p.d.AdoptSkipped)
	return p, ctrl.Result{}, nil
}

// adoptEvents emits, per node whose packages this pass recorded complete from its Skyhook state
// (gantry.dev/adopt-from-skyhook), one Normal event AdoptedFromSkyhook naming them, and per node
// where packages Skyhook had are run again (another version or image, not complete, an
// unreadable state) one Warning event NotAdoptedFromSkyhook saying why.
func (r *PackageSetReconciler) adoptEvents(set *v1alpha1.PackageSet, adopted, skipped map[string]string) {
	for _, node := range slices.Sorted(maps.Keys(adopted)) {
		r.Recorder.Event(set, corev1.EventTypeNormal, "AdoptedFromSkyhook", adopted[node])
	}
	for _, node := range slices.Sorted(maps.Keys(skipped)) {
		r.Recorder.Event(set, corev1.EventTypeWarning, "NotAdoptedFromSkyhook", skipped[node])
	}
}

// regateEvents emits one Normal event RebootedOutsideGantry per node this pass found rebooted
// outside the set's reboot interrupts (its record, with the re-gate, is written: only that pass
// reports it), naming the boot IDs and the packages with reapplyOnReboot that run again.
func (r *PackageSetReconciler) regateEvents(set *v1alpha1.PackageSet, regated map[string]string) {
	for _, node := range slices.Sorted(maps.Keys(regated)) {
		r.Recorder.Event(set, corev1.EventTypeNormal, "RebootedOutsideGantry", regated[node]+" (reapplyOnReboot)")
	}
}

// drainTimeoutEvents emits one Warning event DrainTimeout per node whose drain reached
// spec.drain.timeout in this pass (its records are written: only that pass reports it),
// naming the pods left, why, and what onTimeout did.
func (r *PackageSetReconciler) drainTimeoutEvents(set *v1alpha1.PackageSet, timeouts map[string]string) {
	for _, node := range slices.Sorted(maps.Keys(timeouts)) {
		r.Recorder.Event(set, corev1.EventTypeWarning, "DrainTimeout", "node "+node+": "+timeouts[node])
	}
}

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

// forget drops what the reconciler keeps about a deleted package set (expectations, metrics,
// pass and status-write times).
func (r *PackageSetReconciler) forget(key types.NamespacedName) {
	r.expected.forget(key)
	forgetPackageSetMetrics(key.Name)
	r.mu.Lock()
	delete(r.lastPass, key.Name)
	delete(r.lastStatus, key.Name)
	r.mu.Unlock()
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

// statusWritePerNode and maxStatusWriteInterval bound how often a set's status is written
// when only per-node progress changed (nodeStatus, nodeState, nodeRollout, the counts and
// condition messages): at most once per listed nodes × statusWritePerNode, at most
// maxStatusWriteInterval apart. The status lists up to packageset.MaxListedNodes nodes, so
// each write costs the API server (decode, schema validation, managed fields, etcd, every
// watcher) in proportion to them (at most 1 s apart for 500); this keeps those bytes per
// second bounded as sets grow, while small sets (2 ms
// per node: 20 ms at 10 nodes) see no difference. A change of the aggregate status, the
// observed generation, a condition's status or reason, or the quarantined versions is
// written at once.
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

// actWorkers bounds the nodes a pass acts on concurrently.
const actWorkers = 32

// act carries out the node plans: per node its record write, then its stage Pod deletes and
// creates, then its drain; nodes concurrently (actWorkers). It returns how many nodes had a
// write conflict (their remaining actions skipped), the drains' refused evictions (node →
// message) and the first other error.
func (r *PackageSetReconciler) act(ctx context.Context, set *v1alpha1.PackageSet, nodes map[string]*corev1.Node, plans []packageset.NodePlan) (int, map[string]string, error) {
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		conflicted int
		firstErr   error
		refusals   = map[string]string{}
	)
	work := make(chan int)
	one := func(np packageset.NodePlan) error {
		node := nodes[np.Name]
		if node == nil {
			return nil
		}
		if err := r.writeNode(ctx, set, node, np); err != nil {
			return err
		}
		for _, j := range np.DeleteJobs {
			if err := r.deleteStage(ctx, j); err != nil {
				return err
			}
		}
		for _, js := range np.Jobs {
			if err := r.createPod(ctx, set, node, js); err != nil {
				return err
			}
		}
		if np.Drain {
			refused, err := r.drain(ctx, set, node, np.DrainNonInterrupt)
			if err != nil {
				return err
			}
			if refused != "" {
				mu.Lock()
				refusals[node.Name] = refused
				mu.Unlock()
			}
		}
		return nil
	}
	for w := 0; w < min(actWorkers, len(plans)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				err := one(plans[i])
				if err == nil {
					continue
				}
				mu.Lock()
				if apierrors.IsConflict(err) {
					conflicted++
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range plans {
		work <- i
	}
	close(work)
	wg.Wait()
	return conflicted, refusals, firstErr
}

func (r *PackageSetReconciler) ensureNamespace(ctx context.Context) error {
	r.mu.Lock()
	ready := r.nsReady
	r.mu.Unlock()
	if ready {
		return nil
	}
	err := r.APIReader.Get(ctx, types.NamespacedName{Name: r.JobNamespace}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		err = r.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.JobNamespace}})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err == nil {
		r.mu.Lock()
		r.nsReady = true
		r.mu.Unlock()
	}
	return err
}

// stagePodProblems reads the stage pods' container states, by stage name (the pod's; for a
// stage Job of an earlier reconciler, the Job's): the kubelet's image
// pull error (pullErr, "<reason>: <message>") and the last failing container (podFail,
// "container <name> exited <code> (<reason>) <message>").
func stagePodProblems(pods []*corev1.Pod) (pullErr map[string]stagePodWait, podFail map[string]string) {
	pullErr = map[string]stagePodWait{} // stage name → kubelet reason and message
	podFail = map[string]string{}       // stage name → failing container
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		jn := p.Name
		if j := legacyJob(p); j != "" {
			jn = j
		}
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if w := cs.State.Waiting; w != nil && failure.ImagePullReasons[w.Reason] {
				pullErr[jn] = stagePodWait{"ImagePullFailed", fmt.Sprintf("%s: %s", w.Reason, w.Message)}
			}
			// The kubelet cannot create or start the container (a mount it refuses, a bad
			// security setting): as for an image pull error, the stage is erroring now with the
			// kubelet's own words, not after the stage timeout.
			if w := cs.State.Waiting; w != nil && failure.ContainerStartReasons[w.Reason] {
				pullErr[jn] = stagePodWait{"ContainerStartFailed", fmt.Sprintf("container %s %s: %s", cs.Name, w.Reason, w.Message)}
			}
			if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
				podFail[jn] = fmt.Sprintf("container %s exited %d (%s) %s", cs.Name, t.ExitCode, t.Reason, failure.LastLine(t.Message))
			}
		}
	}
	return pullErr, podFail
}

// legacyJob is the name of the stage Job (an earlier reconciler's) that controls p, "" for a
// stage Pod the reconciler created itself.
func legacyJob(p *corev1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Job" {
		return ref.Name
	}
	return ""
}

// stagePodWait is why a stage pod's container waits and cannot go on without a change: an image
// that cannot be pulled (reason ImagePullFailed) or a container the kubelet cannot create or
// start (ContainerStartFailed), with the kubelet's message.
type stagePodWait struct{ reason, message string }

// jobFactsByNode is what the machine needs of each stage, by node and stage name, read from
// its Pod (failure.PodOutcome at now) or, for a stage an earlier reconciler ran as a Job, from
// the Job (failure.JobOutcome): succeeded, failed (with the failing container's exit code and
// message when the pod says it) or an image pull error.
func jobFactsByNode(jobs []*batchv1.Job, pods []*corev1.Pod, now time.Time) map[string]map[string]packageset.JobFact {
	pullErr, podFail := stagePodProblems(pods)
	byNode := map[string]map[string]packageset.JobFact{}
	add := func(node, name string, jf packageset.JobFact) {
		if m := podFail[name]; jf.Failed && m != "" {
			jf.Message = m
		}
		if w, ok := pullErr[name]; ok && !jf.Succeeded && !jf.Failed {
			jf.ImagePullError, jf.Reason, jf.Message = true, w.reason, w.message
		}
		if byNode[node] == nil {
			byNode[node] = map[string]packageset.JobFact{}
		}
		byNode[node][name] = jf
	}
	for _, j := range jobs {
		jf := packageset.JobFact{}
		jf.Succeeded, jf.Failed, jf.Reason, jf.Message = failure.JobOutcome(j)
		add(j.Labels[v1alpha1.LabelNode], j.Name, jf)
	}
	for _, p := range pods {
		if legacyJob(p) != "" {
			continue // an earlier reconciler's stage Job's pod: read through its Job
		}
		jf := packageset.JobFact{}
		jf.Succeeded, jf.Failed, jf.Stop, jf.Reason, jf.Message = failure.PodOutcome(p, now)
		add(p.Labels[v1alpha1.LabelNode], p.Name, jf)
	}
	return byNode
}

// facts gathers one pass's facts: selected nodes (and nodes still carrying this set's record),
// the priority gate from the other sets, taints, stage Pods, cordons and drains.
func (r *PackageSetReconciler) facts(ctx context.Context, set *v1alpha1.PackageSet, deleting bool) (packageset.SetFacts, map[string]*corev1.Node, error) {
	f := packageset.SetFacts{Now: r.now(), Name: set.Name, Generation: set.Generation, Deleting: deleting,
		Paused: set.IsPaused(), Disabled: set.Spec.Disabled, Budget: set.Spec.InterruptionBudget, Serial: set.Spec.Serial,
		KeepInstalled: set.Spec.UninstallOnDelete != nil && !*set.Spec.UninstallOnDelete}
	var nodeList corev1.NodeList
	// The lists are read-only here (writeNode copies a node before changing it), so they
	// share the cache's objects instead of deep-copying every node and stage pod per pass.
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return f, nil, err
	}
	var sets v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &sets, client.UnsafeDisableDeepCopy); err != nil {
		return f, nil, err
	}
	pods, err := r.stagePods(ctx, set.Name)
	if err != nil {
		return f, nil, err
	}
	jobs, err := r.legacyStageJobs(ctx, set.Name)
	if err != nil {
		return f, nil, err
	}
	jobsByNode := jobFactsByNode(jobs, pods, f.Now)
	reader := packageset.NewNodeReader(set, sets.Items, nodeList.Items, r.stageTolerations(set), &f)
	if f.Fleet, err = r.fleetFacts(ctx, set, sets.Items, nodeList.Items); err != nil {
		return f, nil, err
	}

	nodes := map[string]*corev1.Node{}
	for i := range nodeList.Items {
		node := &nodeList.Items[i]
		nf, ok, err := reader.Read(node)
		if err != nil {
			return f, nil, err
		}
		if !ok {
			continue
		}
		nodes[node.Name] = node
		nf.Jobs = jobsByNode[node.Name]
		// A cordoned node's pods are listed (uncached: the cache holds only our own pods) each
		// pass while its drain matters (DrainMatters: not while its interrupt runs or after,
		// when it stays cordoned but the drain facts are not read), so the drain's state is
		// never remembered in the process and a restart loses nothing.
		if nf.Cordoned && packageset.DrainMatters(nf.Record) {
			if err := r.drainFacts(ctx, set, node, &nf, f.Drain, f.Now); err != nil {
				return f, nil, err
			}
		}
		f.Nodes = append(f.Nodes, nf)
	}
	return f, nodes, nil
}

// drainPods is a cordoned node's pods as its drain sorts them (podsToDrain): evict, the pods to
// evict; hold, those matching podNonInterruptLabels, which must finish first; terminating, the
// pods to evict already being deleted; keep, the pods spec.drain forbids evicting ("ns/p:
// why"). Names are "namespace/name".
type drainPods struct {
	evict                   []corev1.Pod
	hold, terminating, keep []string
}

// podsToDrain reads the node's pods (one uncached List by spec.nodeName) and sorts them by the
// set's drain rules (packageset.DrainPods.Class: Skyhook's ShouldEvict, podNonInterruptLabels
// and spec.drain's skipPodLabels, deleteEmptyDirData and force; never the reconciler's own pod);
// with nonInterruptToo (packageset.NonInterruptExpired under Drain) podNonInterruptLabels no
// longer holds a pod.
func (r *PackageSetReconciler) podsToDrain(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, nonInterruptToo bool) (drainPods, error) {
	var out drainPods
	rules, err := packageset.DrainPodsOf(&set.Spec, r.Self)
	if err != nil {
		return out, err
	}
	if nonInterruptToo {
		rules.NonInterrupt = nil // past drain.nonInterruptTimeout under Drain: sorted like any pod
	}
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.MatchingFields{"spec.nodeName": node.Name}); err != nil {
		return out, err
	}
	for _, p := range pods.Items {
		name := p.Namespace + "/" + p.Name
		switch class, why := rules.Class(&p); class {
		case packageset.DrainHold:
			out.hold = append(out.hold, name)
		case packageset.DrainTerminating:
			out.terminating = append(out.terminating, name)
		case packageset.DrainKeep:
			out.keep = append(out.keep, name+": "+why)
		case packageset.DrainEvict:
			out.evict = append(out.evict, p)
		}
	}
	return out, nil
}

// drainFacts fills a cordoned node's drain facts (its drain matters): its pods sorted
// (podsToDrain) and, in the pass where its drain reaches spec.drain.timeout
// (packageset.DrainTimedOut), why the Eviction API refuses each pod left to evict: a dry-run
// eviction (nothing is evicted), so the timeout names the PodDisruptionBudget.
func (r *PackageSetReconciler) drainFacts(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, nf *packageset.NodeFacts, spec packageset.DrainSpec, now time.Time) error {
	pods, err := r.podsToDrain(ctx, set, node, packageset.NonInterruptExpired(nf.Record, spec, now))
	if err != nil {
		return err
	}
	nf.Drained = len(pods.evict) == 0 && len(pods.terminating) == 0 && len(pods.keep) == 0
	nf.NonInterrupt, nf.Terminating, nf.Unevictable = pods.hold, pods.terminating, pods.keep
	for _, p := range pods.evict {
		nf.Evicting = append(nf.Evicting, p.Namespace+"/"+p.Name)
	}
	if len(pods.evict) == 0 || !packageset.DrainTimedOut(nf.Record, spec, now) {
		return nil
	}
	nf.EvictRefusals = map[string]string{}
	for i := range pods.evict {
		p := &pods.evict[i]
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if err := r.Client.SubResource("eviction").Create(ctx, p, ev, client.DryRunAll); err != nil && !apierrors.IsNotFound(err) {
			nf.EvictRefusals[p.Namespace+"/"+p.Name] = evictionError(err)
		}
	}
	return nil
}

// drain evicts the node's pods to evict (podsToDrain) through the Eviction API (the
// PodDisruptionBudgets decide; a pod already gone is fine), each with spec.drain.gracePeriod
// when set (else the pod's own terminationGracePeriodSeconds). It returns what refused them,
// "pod <ns>/<name>: <message> (<causes>)" per pod joined by "; " (a 429 names the
// PodDisruptionBudget in its cause), or "" when every eviction was accepted; err only when the
// node's pods cannot be listed. A refusal is retried by the next pass that drains.
func (r *PackageSetReconciler) drain(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, nonInterruptToo bool) (string, error) {
	pods, err := r.podsToDrain(ctx, set, node, nonInterruptToo)
	if err != nil {
		return "", err
	}
	grace := packageset.DrainSpecOf(set.Spec.Drain).GracePeriod
	var refused []string
	for i := range pods.evict {
		p := &pods.evict[i]
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace}}
		if grace != nil {
			g := *grace
			ev.DeleteOptions = &metav1.DeleteOptions{GracePeriodSeconds: &g}
		}
		if err := r.Client.SubResource("eviction").Create(ctx, p, ev); err != nil && !apierrors.IsNotFound(err) {
			refused = append(refused, fmt.Sprintf("pod %s/%s: %s", p.Namespace, p.Name, evictionError(err)))
		}
	}
	return strings.Join(refused, "; "), nil
}

// evictionError is an eviction error's message followed by its status causes in parentheses
// (for a PodDisruptionBudget: "The disruption budget <name> needs 1 healthy pods and has 1
// currently"; err.Error() alone does not name it).
func evictionError(err error) string {
	msg := err.Error()
	var st apierrors.APIStatus
	if errors.As(err, &st) && st.Status().Details != nil {
		var causes []string
		for _, c := range st.Status().Details.Causes {
			if c.Message != "" {
				causes = append(causes, c.Message)
			}
		}
		if len(causes) > 0 {
			msg += " (" + strings.Join(causes, "; ") + ")"
		}
	}
	return msg
}

// writeNode writes the node's record, status and cordon annotations (and spec.unschedulable)
// in one update with the node's resourceVersion (optimistic concurrency), only if they change.
func (r *PackageSetReconciler) writeNode(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, np packageset.NodePlan) error {
	// The new annotations and cordon first: the node (status included) is only copied when
	// they change, which most nodes of most passes do not.
	ann := maps.Clone(node.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	unschedulable := node.Spec.Unschedulable
	stateKey, statusKey, cordonKey := v1alpha1.AnnotationNodeStatePrefix+set.Name, v1alpha1.AnnotationNodeStatusPrefix+set.Name, v1alpha1.AnnotationCordonPrefix+set.Name
	if np.Record == nil {
		delete(ann, stateKey)
		delete(ann, statusKey)
	} else {
		b, err := json.Marshal(np.Record)
		if err != nil {
			return err
		}
		ann[stateKey] = string(b)
		ann[statusKey] = string(np.Status)
	}
	// A node an operator cordoned stays cordoned (packageset.Cordon).
	unschedulable = packageset.Cordon(ann, unschedulable, cordonKey, np.Cordon, np.Uncordon)
	if maps.Equal(ann, node.Annotations) && unschedulable == node.Spec.Unschedulable {
		return nil
	}
	n := node.DeepCopy()
	n.Annotations, n.Spec.Unschedulable = ann, unschedulable
	// An Update with the cached resourceVersion, not a merge patch: a pass that planned from a
	// cache behind this set's own last write must not overwrite the newer record with an older
	// one (a node sent back to Activating counts against a fleet budget twice). The price is a
	// conflict per kubelet/kwok heartbeat in between, resolved below by a re-read.
	if err := r.Client.Update(ctx, n); err != nil {
		if !apierrors.IsConflict(err) {
			return err
		}
		// The node changed since the pass read it: someone else (e.g. kwok's or the kubelet's
		// status heartbeat) or our own previous write not yet in the cache. Re-read it: if
		// what this set owns already is what we want, the write is done; if nothing the plan
		// read changed (labels, taints, unschedulable, gantry.dev/ annotations), write the
		// same change onto the fresh node (still with its resourceVersion); else it is a real
		// conflict and the pass is retried.
		fresh := &corev1.Node{}
		if gerr := r.APIReader.Get(ctx, types.NamespacedName{Name: node.Name}, fresh); gerr != nil {
			return err
		}
		switch {
		case sameGantryState(fresh, n):
			n = fresh
		case samePlanInputs(fresh, node):
			retry := fresh.DeepCopy()
			if retry.Annotations == nil {
				retry.Annotations = map[string]string{}
			}
			for k := range gantryAnnotations(fresh) {
				delete(retry.Annotations, k)
			}
			for k, v := range gantryAnnotations(n) {
				retry.Annotations[k] = v
			}
			retry.Spec.Unschedulable = n.Spec.Unschedulable
			if rerr := r.Client.Update(ctx, retry); rerr != nil {
				return rerr
			}
			n = retry
		default:
			return err
		}
	}
	if np.Cordon {
		r.Recorder.Event(set, corev1.EventTypeNormal, "Cordoned", "cordoned node "+node.Name+" for its interrupt")
	}
	if np.Uncordon {
		r.Recorder.Event(set, corev1.EventTypeNormal, "Released", "released the cordon of node "+node.Name)
	}
	*node = *n
	return nil
}

// gantryAnnotations are a node's gantry.dev/ annotations (every set's record, status and
// cordon).
func gantryAnnotations(n *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range n.Annotations {
		if strings.HasPrefix(k, "gantry.dev/") {
			out[k] = v
		}
	}
	return out
}

// sameGantryState: a and b carry the same gantry.dev/ annotations and cordon.
func sameGantryState(a, b *corev1.Node) bool {
	return a.Spec.Unschedulable == b.Spec.Unschedulable && equality.Semantic.DeepEqual(gantryAnnotations(a), gantryAnnotations(b))
}

// samePlanInputs: nothing a pass reads from a node differs between a and b (labels, taints,
// unschedulable, gantry.dev/ annotations; the rest, e.g. status heartbeats, does not matter).
func samePlanInputs(a, b *corev1.Node) bool {
	return sameGantryState(a, b) && equality.Semantic.DeepEqual(a.Labels, b.Labels) && equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints)
}

// createPod creates one stage Pod (packageset.DesiredPod) owned by the set (the garbage
// collector deletes it with the set). AlreadyExists is success: the name is deterministic per
// stage and attempt, so a pass after a reconciler restart never starts an attempt twice. The
// package's config (of the version the stage runs) is its ConfigMap (ensureConfigMap),
// created first.
func (r *PackageSetReconciler) createPod(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, js packageset.JobSpec) error {
	pod, err := r.desiredPod(ctx, set, node, js)
	if err != nil || pod == nil {
		return err
	}
	pod.Spec.Tolerations = r.stageTolerations(set) // with the runtime-required taint's
	if err := controllerutil.SetOwnerReference(set, pod, r.Scheme); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, pod); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	}
	packageSetJobs.WithLabelValues(set.Name, packageset.StageLabel(js)).Inc()
	return nil
}

// deleteStage deletes the stage Pod named name (and a stage Job of that name an earlier
// reconciler created, with its pods); gone already is fine.
func (r *PackageSetReconciler) deleteStage(ctx context.Context, name string) error {
	meta := metav1.ObjectMeta{Name: name, Namespace: r.JobNamespace}
	if err := r.Client.Delete(ctx, &corev1.Pod{ObjectMeta: meta}); client.IgnoreNotFound(err) != nil {
		return err
	}
	err := r.Client.Delete(ctx, &batchv1.Job{ObjectMeta: meta}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	return client.IgnoreNotFound(err)
}

// desiredPod is the Pod js asks for: a health check's (DesiredProbePod; nil when the check
// left the spec: nothing to create) or a package stage's (DesiredPod, after its config
// ConfigMap is ensured).
func (r *PackageSetReconciler) desiredPod(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, js packageset.JobSpec) (*corev1.Pod, error) {
	if js.Probe != "" {
		if set.Spec.Rollout != nil {
			for _, hc := range set.Spec.Rollout.HealthChecks {
				if hc.Name == js.Probe {
					return packageset.DesiredProbePod(set, node.Name, r.JobNamespace, performer.ManagedBy, js, hc), nil
				}
			}
		}
		return nil, nil
	}
	pkg, err := packageset.JobPackage(set, js)
	if err != nil {
		return nil, err
	}
	var cfgName string // the package's config ConfigMap, "" without config
	if pkg != nil {
		if cfgName = packageset.ConfigMapName(set.Name, js.Package, pkg.Config); cfgName != "" {
			if err := r.ensureConfigMap(ctx, set, js.Package, cfgName, pkg.Config); err != nil {
				return nil, fmt.Errorf("node %s package %s: config ConfigMap %s: %w", node.Name, js.Package, cfgName, err)
			}
		}
	}
	return packageset.DesiredPod(set, node.Name, r.JobNamespace, performer.ManagedBy, js, pkg, cfgName), nil
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
		pk := map[string]v1alpha1.PackageStatus{}
		if np.Record != nil {
			for name, p := range np.Record.Packages {
				pk[name] = v1alpha1.PackageStatus{Version: p.Version, Stage: p.Stage, State: p.State, Restarts: p.Restarts, Message: p.Message}
			}
		}
		st.NodeState[np.Name] = pk
	}
	return st
}
