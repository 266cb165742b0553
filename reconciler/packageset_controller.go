package reconciler

import (
	"context"
	"os"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
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
// This file holds the pass's skeleton; its phases have their own files: packageset_gather.go
// (with packageset_stagepods.go and packageset_drain.go), packageset_act.go (and the
// runtime-required taint, packageset_runtime.go), packageset_status.go, packageset_events.go;
// packageset_watch.go filters the events that start a pass.
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

// NewPackageSetReconciler builds the reconciler from a manager.
func NewPackageSetReconciler(mgr ctrl.Manager, jobNamespace string) *PackageSetReconciler {
	return &PackageSetReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Cache: mgr.GetCache(), Scheme: mgr.GetScheme(),
		Recorder: mgr.GetEventRecorderFor(FieldManager), JobNamespace: jobNamespace, cfgCreated: map[string]bool{},
		lastPass: map[string]passTiming{}, lastStatus: map[string]time.Time{},
		Self: types.NamespacedName{Namespace: os.Getenv("POD_NAMESPACE"), Name: os.Getenv("POD_NAME")}}
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

// Reconcile is one pass over one PackageSet on the shared skeleton (status.go): get, skip while
// the cache is behind our last status write (expectations), then reconcileDelete or
// reconcileNormal (gather, decide, act, writeStatus, emit). Unlike the other controllers it acts
// before writing status, because the status reports what acting found (refused evictions:
// Decision.AddDrainRefusals; runtime taint changes) and would otherwise be a pass late. The
// node records, written first by act, stay the source of truth.
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
