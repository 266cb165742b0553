package reconciler

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/autoscale"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// conflictRetry is the delay before retrying a pass whose write hit a stale object. The watch
// event carrying the newer object normally triggers the retry sooner; this is a backstop.
const conflictRetry = 200 * time.Millisecond

// RBAC the reconciler needs (config/rbac/role.yaml is generated from these by `make generate`):
// +kubebuilder:rbac:groups=gantry.dev,resources=performers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=performers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=performers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;create;patch

// PerformerReconciler runs Hourglass's Performer lifecycle (internal/performer) against the
// cluster: it owns the Pod and the Service performer-<name> (with strategy RollingUpdate the
// Deployment performer-<name>, and with spec.autoscaling the HorizontalPodAutoscaler
// performer-<name>).
type PerformerReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads the API server directly (objects outside the label-filtered cache).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	// Now is the clock (time.Now if nil).
	Now func() time.Time

	// expected holds the reconciler's own writes its cache may not show yet.
	expected expectations
	// rejected holds the writes the API server rejected for good (errors.go).
	rejected rejections
}

// NewPerformerReconciler builds the reconciler from a manager's clients and event recorder.
func NewPerformerReconciler(mgr ctrl.Manager) *PerformerReconciler {
	return &PerformerReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Scheme:    mgr.GetScheme(),
		Recorder:  mgr.GetEventRecorderFor(FieldManager),
	}
}

// SetupWithManager registers the controller. Watches: Performers (every change: no
// GenerationChangedPredicate, because deletion, finalizer and status edits must be seen too
// and our own status writes cost only a no-op pass), the Pods, Services, Deployments and
// NetworkPolicies they control, and Executors (spec changes, creation and deletion), mapped to
// the isolated Performers whose NetworkPolicy admits or should admit them
// (performer.ExecutorPerformers).
func (r *PerformerReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Performer{}).
		// Its Pods by label, not ownership: a RollingUpdate performer's Pods belong to its
		// Deployment's ReplicaSets.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(performerOfPod)).
		Owns(&corev1.Service{}).
		Owns(&appsv1.Deployment{}).
		Owns(&networkingv1.NetworkPolicy{}).
		// spec.autoscaling: an edited or deleted HPA is put back; its desiredReplicas are
		// reported (its scaling changes the Deployment, which is watched too).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Watches(&v1alpha1.Executor{}, handler.EnqueueRequestsFromMapFunc(r.performersOfExecutor),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("performer").
		WithOptions(opts).
		Complete(r)
}

// Reconcile is one pass: get the Performer, gather facts, performer.Decide, write status (once,
// only when changed, before acting; see writeAndAct), emit the phase-change Event, then act. A
// pass whose cache does not yet show the reconciler's own writes is skipped (expectations), so
// an object missing from the cache is really gone and the finalizer can go on the cache's word.
// The API server is read directly only for what the cache cannot hold: a create that hit an
// existing object, or a Failed Performer's backoff re-check for foreign objects.
func (r *PerformerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	start := time.Now()
	pp, err := getOrForget(ctx, r.Client, req.NamespacedName, &v1alpha1.Performer{}, func() {
		r.expected.forget(req.NamespacedName)
		r.rejected.clear(req.NamespacedName, "")
	})
	if pp == nil {
		return ctrl.Result{}, err
	}
	p := *pp
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	desiredPod, specErr := performer.DesiredPod(&p)
	var desiredHPA *autoscalingv2.HorizontalPodAutoscaler
	if specErr == nil {
		desiredHPA, specErr = performer.DesiredAutoscaler(&p)
	}
	desiredSvc := performer.DesiredService(&p)
	direct := performer.Phases.Of(p.Status.Conditions) == v1alpha1.PerformerFailed

	// Whatever this pass writes, the next one must see in the cache before it decides.
	cachedRV := p.ResourceVersion
	writes := map[string]objectWrite{}
	released := false
	defer func() {
		switch {
		case released:
			r.expected.forget(req.NamespacedName)
		case p.ResourceVersion != cachedRV:
			r.expected.expect(req.NamespacedName, p.ResourceVersion, writes)
		default:
			r.expected.expect(req.NamespacedName, "", writes)
		}
	}()

	rolling := p.Spec.Strategy == v1alpha1.PerformerRollingUpdate
	var desiredDep *appsv1.Deployment
	if rolling && specErr == nil {
		desiredDep = performer.DesiredDeployment(&p, desiredPod)
	}
	for first := true; ; first = false {
		// gather
		o, err := r.observeAll(ctx, &p, direct, rolling, desiredPod)
		if err != nil {
			return ctrl.Result{}, err
		}
		pod, svc, dep := o.pod, o.svc, o.dep
		if first && !direct {
			if what := r.expected.stale(req.NamespacedName, &p, objectOrNil(pod), objectOrNil(svc), objectOrNil(dep)); what != "" {
				logger.V(1).Info("cache does not show our last write yet; skipping the pass", "object", what)
				return ctrl.Result{RequeueAfter: staleRetry}, nil
			}
		}
		facts, statusPod := performerFacts(&p, now(), specErr, desiredPod, desiredSvc, desiredDep, desiredHPA, o)
		if err := r.gatherFailures(ctx, &p, &facts, desiredPod); err != nil {
			return ctrl.Result{}, err
		}
		// decide
		d, err := performer.Decide(facts)
		if err != nil {
			return ctrl.Result{}, illegalTransition(r.Recorder, &p, err)
		}
		// isolation (spec.networkPolicy): the NetworkPolicy is written before the status and
		// the Pod, so a new performer's Pod never runs without it; it is left alone while the
		// Performer is deleted (garbage collection removes it with its owner)
		npd, err := r.isolate(ctx, &p, facts.Deleting)
		if err != nil {
			return ctrl.Result{}, err
		}
		// emit (once the status write succeeded)
		emit := func() {
			if d.Event != nil {
				r.Recorder.Event(&p, d.Event.Type, d.Event.Reason, d.Event.Message)
				logger.Info("phase", "phase", d.Phase, "reason", d.Event.Reason, "message", d.Event.Message)
			}
		}
		// writeStatus, emit, act (writeAndAct: in that order, or overlapping where acting
		// cannot be on stale facts)
		o2 := objs{desiredPod: desiredPod, desiredSvc: desiredSvc, desiredDep: desiredDep, desiredHPA: desiredHPA, pod: pod, svc: svc, dep: dep, hpa: o.hpa}
		want := r.status(&p, d, facts, statusPod, now)
		setNetworkPolicyStatus(&want, npd)
		stale, serr, err := r.writeAndAct(ctx, &p, d.Actions, want, o2, writes, emit)
		switch {
		case serr != nil:
			return ctrl.Result{}, serr
		case stale && err == nil:
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		released = err == nil && slices.Contains(d.Actions, performer.ActionRemoveFinalizer)
		actErr := err
		res, err, again := r.acted(ctx, req.NamespacedName, &p, d, facts, direct, actErr)
		if again {
			direct = true
			continue
		}
		if err == nil {
			res = withNetworkPolicyRetry(res, npd)
		}
		if l := logger.V(1); l.Enabled() && actErr == nil {
			l.Info("pass", "resourceVersion", p.ResourceVersion, "phase", d.Phase, "actions", d.Actions,
				"direct", direct, "requeueAfter", d.RequeueAfter, "took", time.Since(start).String())
		}
		return res, err
	}
}

// acted ends a pass by the outcome err of its actions: success (a rejected action that now
// succeeded drops its rejection) requeues after the decision's RequeueAfter; a permanent
// rejection is recorded for the next pass (errors.go); the Performer gone ends the pass; an
// object that exists but is not cached (AlreadyExists while reading the cache) asks for the
// pass again on what the API server says (again); a conflict requeues (the cache lags behind
// the API server: the watch triggers the next pass, the requeue is only a backstop); any
// other error is returned.
func (r *PerformerReconciler) acted(ctx context.Context, key types.NamespacedName, p *v1alpha1.Performer, d performer.Decision, facts performer.Facts, direct bool, err error) (res ctrl.Result, _ error, again bool) {
	logger := log.FromContext(ctx)
	switch {
	case err == nil:
		if rj := facts.Rejection; rj != nil && slices.Contains(d.Actions, performer.Action(rj.Action)) {
			r.rejected.accepted(key, rj.Action)
		}
		return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil, false
	case r.rejected.reject(ctx, key, p.Generation, err):
		return ctrl.Result{RequeueAfter: rejectedRequeue}, nil, false
	case errors.Is(err, errPerformerGone):
		return ctrl.Result{}, nil, false
	case apierrors.IsAlreadyExists(err) && !direct:
		logger.V(1).Info("object exists but is not cached; reading the API server", "error", err.Error())
		return ctrl.Result{}, nil, true
	case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err):
		logger.V(1).Info("write conflict, retrying", "error", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil, false
	default:
		return ctrl.Result{}, err, false
	}
}

// writeAndAct writes the pass's status want (unless the finalizer goes: the Performer is going
// away), then carries out actions; emit records the phase-change Event once the status is
// written. Status first makes a phase like Upgrading visible before its effects, and a stale
// write stops the pass before it acts on stale facts (stale=true: the caller retries). When
// acting cannot be on stale facts (deletion, with UID preconditions; or a first AddFinalizer,
// whose optimistic lock just confirmed the facts), write and actions overlap to save a round
// trip. serr is another status write error, err the actions'.
func (r *PerformerReconciler) writeAndAct(ctx context.Context, p *v1alpha1.Performer, actions []performer.Action, want v1alpha1.PerformerStatus, o objs, writes map[string]objectWrite, emit func()) (stale bool, serr, err error) {
	if slices.Contains(actions, performer.ActionRemoveFinalizer) {
		emit()
		return false, nil, r.actAll(ctx, p, actions, o, writes)
	}
	overlap := !p.DeletionTimestamp.IsZero()
	if len(actions) > 0 && actions[0] == performer.ActionAddFinalizer {
		if err := r.actAll(ctx, p, actions[:1], o, writes); err != nil {
			return false, nil, err
		}
		actions, overlap = actions[1:], true
	}
	if !overlap || len(actions) == 0 {
		if stale, serr = writeStatus(ctx, r.Client, p, &p.Status, want); serr != nil || stale {
			return stale, serr, nil
		}
		emit()
		return false, nil, r.actAll(ctx, p, actions, o, writes)
	}
	// The actions get their own copy: the status write updates p as it returns.
	acting := p.DeepCopy()
	done := make(chan struct{})
	go func() {
		defer close(done)
		stale, serr = writeStatus(ctx, r.Client, p, &p.Status, want)
	}()
	err = r.actAll(ctx, acting, actions, o, writes)
	<-done
	if serr == nil && !stale {
		emit()
	}
	return stale, serr, err
}

// observed are the owned objects a pass found (nil when absent): the Pod performer-<name>,
// the Service, the Deployment and, with RollingUpdate, the Deployment's newest Pod of the
// desired spec.
type observed struct {
	pod   *corev1.Pod
	svc   *corev1.Service
	dep   *appsv1.Deployment
	rsPod *corev1.Pod
	// ended: the Deployment's other Pods ended from outside (performer.EndedPods).
	ended []failure.Disruption
	// ready: the Deployment's Ready Pods of the desired spec (performer.ReadyPods).
	ready int32
	// hpa: the HorizontalPodAutoscaler performer-<name> (spec.autoscaling).
	hpa *autoscalingv2.HorizontalPodAutoscaler
}

// performerFacts reads a pass's facts for performer.Decide and returns the Pod the status
// describes (the Deployment's with RollingUpdate).
func performerFacts(p *v1alpha1.Performer, now time.Time, specErr error, desiredPod *corev1.Pod, desiredSvc *corev1.Service, desiredDep *appsv1.Deployment, desiredHPA *autoscalingv2.HorizontalPodAutoscaler, o observed) (performer.Facts, *corev1.Pod) {
	pod, svc, dep, rsPod := o.pod, o.svc, o.dep, o.rsPod
	rolling := p.Spec.Strategy == v1alpha1.PerformerRollingUpdate
	facts := performer.Facts{
		Now:          now,
		Generation:   p.Generation,
		Deleting:     !p.DeletionTimestamp.IsZero(),
		HasFinalizer: controllerutil.ContainsFinalizer(p, v1alpha1.Finalizer),
		Conditions:   p.Status.Conditions,
		RunningImage: p.Status.Image,
		DesiredImage: p.Spec.Image,
		Pod:          performer.PodFacts(pod, p.UID),
		Service:      performer.ServiceFacts(svc, desiredSvc, p.UID),
		Deployment:   performer.DeploymentFacts(dep, desiredDep, p.UID),
		// The count of Pods ended from outside the bound applies to (the machine's memory).
		PodDisruptions: p.Status.PodDisruptions,
	}
	statusPod := pod
	if rolling {
		facts.RollingUpdate = true
		facts.BarePod = pod != nil && facts.Pod != nil && !facts.Pod.Foreign
		facts.Pod, statusPod = nil, rsPod
		if rsPod != nil {
			facts.Pod = performer.PodFacts(rsPod, p.UID)
			facts.Pod.Foreign = false // the ReplicaSet's, not foreign
		}
		facts.EndedPods = o.ended
		facts.ReadyReplicas = o.ready
		facts.Autoscaling = performer.Autoscaling(p)
	}
	facts.Autoscaler, facts.AutoscalerDesired = autoscale.Facts(o.hpa, desiredHPA, p.UID)
	if specErr != nil {
		facts.SpecError = specErr.Error()
	} else {
		facts.DesiredHash = desiredPod.Annotations[v1alpha1.AnnotationSpecHash]
	}
	if fp := facts.Pod; !rolling && fp != nil && !fp.Foreign && !fp.Deleting && fp.Ready && fp.SpecHash == facts.DesiredHash {
		facts.ReadyReplicas = 1
	}
	return facts, statusPod
}

// performerOfPod maps a Pod labelled gantry.dev/performer=<name> to that Performer.
func performerOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	n := obj.GetLabels()[v1alpha1.LabelPerformer]
	if n == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: n}}}
}

// objectOrNil turns a nil *Pod or *Service into a nil client.Object.
func objectOrNil[T any, PT interface {
	*T
	client.Object
}](o PT) client.Object {
	if o == nil {
		return nil
	}
	return o
}

// observeAll returns what observe and observeDeployment find.
func (r *PerformerReconciler) observeAll(ctx context.Context, p *v1alpha1.Performer, direct, rolling bool, desiredPod *corev1.Pod) (observed, error) {
	pod, svc, err := r.observe(ctx, p, direct)
	if err != nil {
		return observed{}, err
	}
	o, err := r.observeDeployment(ctx, p, direct, rolling, desiredPod)
	if err != nil {
		return observed{}, err
	}
	o.pod, o.svc = pod, svc
	reader := client.Reader(r.Client)
	if direct {
		reader = r.APIReader
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: performer.ObjectName(p.Name)}, hpa); apierrors.IsNotFound(err) {
		hpa = nil
	} else if err != nil {
		return observed{}, err
	}
	o.hpa = hpa
	return o, nil
}

// observeDeployment returns the Deployment performer-<name> (nil when absent) and, with
// rolling, the newest of its Pods with the desired spec hash (performer.NewestPod), the
// others that ended from outside (performer.EndedPods) and the count of its Ready Pods of the
// desired spec (performer.ReadyPods), from the cache or, with direct, the API server. Without
// rolling only a Deployment left from a RollingUpdate strategy is looked for (to delete it).
func (r *PerformerReconciler) observeDeployment(ctx context.Context, p *v1alpha1.Performer, direct, rolling bool, desiredPod *corev1.Pod) (observed, error) {
	reader := client.Reader(r.Client)
	if direct {
		reader = r.APIReader
	}
	dep := &appsv1.Deployment{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: performer.ObjectName(p.Name)}, dep); apierrors.IsNotFound(err) {
		dep = nil
	} else if err != nil {
		return observed{}, err
	}
	if !rolling || desiredPod == nil {
		return observed{dep: dep}, nil
	}
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(p.Namespace), client.MatchingLabels{v1alpha1.LabelPerformer: p.Name}); err != nil {
		return observed{}, err
	}
	hash := desiredPod.Annotations[v1alpha1.AnnotationSpecHash]
	newest := performer.NewestPod(pods.Items, p.UID, hash)
	return observed{dep: dep, rsPod: newest, ended: performer.EndedPods(pods.Items, p.UID, newest, performer.Autoscaling(p) != nil),
		ready: performer.ReadyPods(pods.Items, p.UID, hash)}, nil
}

// observe returns the Pod and Service performer-<name> (nil when absent), from the cache or,
// with direct, from the API server.
func (r *PerformerReconciler) observe(ctx context.Context, p *v1alpha1.Performer, direct bool) (*corev1.Pod, *corev1.Service, error) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: performer.ObjectName(p.Name)}
	reader := client.Reader(r.Client)
	if direct {
		reader = r.APIReader
	}
	pod := &corev1.Pod{}
	if err := reader.Get(ctx, key, pod); apierrors.IsNotFound(err) {
		pod = nil
	} else if err != nil {
		return nil, nil, err
	}
	svc := &corev1.Service{}
	if err := reader.Get(ctx, key, svc); apierrors.IsNotFound(err) {
		svc = nil
	} else if err != nil {
		return nil, nil, err
	}
	return pod, svc, nil
}

// errPerformerGone ends a pass whose Performer disappeared under it.
var errPerformerGone = errors.New("the performer is gone")

// actAll carries out the actions in order, except that consecutive Service and Pod actions
// are independent of each other and run concurrently (one round trip instead of two). The
// finalizer actions never overlap anything: AddFinalizer completes before anything is
// created (and a failure stops the pass), RemoveFinalizer comes last. The owned objects
// written are recorded in writes (by kind), also when it fails part way.
// objs are a pass's desired and observed owned objects (nil when absent or not wanted).
type objs struct {
	desiredPod *corev1.Pod
	desiredSvc *corev1.Service
	desiredDep *appsv1.Deployment
	desiredHPA *autoscalingv2.HorizontalPodAutoscaler
	pod        *corev1.Pod
	svc        *corev1.Service
	dep        *appsv1.Deployment
	hpa        *autoscalingv2.HorizontalPodAutoscaler
}

func (r *PerformerReconciler) actAll(ctx context.Context, p *v1alpha1.Performer, actions []performer.Action, o objs, writes map[string]objectWrite) error {
	record := func(w written) {
		if w.kind != "" {
			writes[w.kind] = w.objectWrite
		}
	}
	isFinalizer := func(a performer.Action) bool {
		return a == performer.ActionAddFinalizer || a == performer.ActionRemoveFinalizer
	}
	for i := 0; i < len(actions); {
		j := i + 1
		for !isFinalizer(actions[i]) && j < len(actions) && !isFinalizer(actions[j]) {
			j++
		}
		if group := actions[i:j]; len(group) == 1 {
			w, err := r.act(ctx, p, group[0], o)
			record(w)
			if err != nil {
				return performerActError(group[0], performer.ObjectName(p.Name), err)
			}
		} else {
			ws := make([]written, len(group))
			errs := make([]error, len(group))
			var wg sync.WaitGroup
			for k, a := range group {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ws[k], errs[k] = r.act(ctx, p, a, o)
					errs[k] = performerActError(a, performer.ObjectName(p.Name), errs[k])
				}()
			}
			wg.Wait()
			for _, w := range ws {
				record(w)
			}
			if err := errors.Join(errs...); err != nil {
				return err
			}
		}
		i = j
	}
	return nil
}

// status computes the new status from the decision; conditions keep their
// lastTransitionTime unless their status changes (meta.SetStatusCondition).
func (r *PerformerReconciler) status(p *v1alpha1.Performer, d performer.Decision, f performer.Facts, pod *corev1.Pod, now func() time.Time) v1alpha1.PerformerStatus {
	st := *p.Status.DeepCopy()
	st.ObservedGeneration = p.Generation
	st.LastHandledReconcileAt = p.Annotations[v1alpha1.AnnotationReconcileRequestedAt]
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.Phase = d.Phase
	st.Image = d.Image
	st.PodName = performer.ObjectName(p.Name)
	if f.RollingUpdate {
		st.PodName = "" // the Deployment's Pod, none yet
		if pod != nil {
			st.PodName = pod.Name
		}
	}
	st.ServiceName = performer.ObjectName(p.Name)
	st.NodeName = ""
	if f.Pod != nil && !f.Pod.Foreign {
		st.NodeName = pod.Spec.NodeName
	}
	st.GRPCEndpoint = ""
	if f.Service.Exists && !f.Service.Foreign {
		st.GRPCEndpoint = performer.Endpoint(p)
	}
	if d.UpgradeFinished {
		t := metav1.NewTime(now())
		st.LastUpgradeTime = &t
	}
	st.PodDisruptions = d.PodDisruptions
	st.DesiredReplicas, st.CurrentReplicas, st.ReadyReplicas = d.DesiredReplicas, d.CurrentReplicas, d.ReadyReplicas
	return st
}

// gatherFailures adds the facts that explain a Performer that cannot progress: a write
// rejected earlier (errors.go), the envFrom Secrets/ConfigMaps and keys that are missing
// (read only when a Pod is about to be created or re-created), and, while the Pod is
// unschedulable, the node-selector labels no node carries.
func (r *PerformerReconciler) gatherFailures(ctx context.Context, p *v1alpha1.Performer, f *performer.Facts, desiredPod *corev1.Pod) error {
	f.Rejection = r.rejected.get(types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, p.Generation)
	if f.Deleting || f.SpecError != "" {
		return nil
	}
	if refs := performer.Refs(p); len(refs) > 0 && (f.Pod == nil || f.Pod.SpecHash != f.DesiredHash) {
		missing, err := checkRefs(ctx, r.APIReader, refs)
		if err != nil {
			return err
		}
		f.MissingRefs = missing
	}
	if pod := f.Pod; pod != nil && !pod.Foreign && pod.NodeName == "" && pod.Scheduled.Reason == corev1.PodReasonUnschedulable {
		missing, err := missingNodeLabels(ctx, r.Client, desiredPod.Spec.NodeSelector)
		if err != nil {
			return err
		}
		f.MissingNodeLabels = missing
	}
	return nil
}

// written is what an action wrote to an owned object (kind "" when it wrote none).
type written struct {
	kind string
	objectWrite
}

// act carries out one action of the machine. The finalizer actions update p in place.
func (r *PerformerReconciler) act(ctx context.Context, p *v1alpha1.Performer, a performer.Action, o objs) (written, error) {
	desiredPod, desiredSvc, pod, svc := o.desiredPod, o.desiredSvc, o.pod, o.svc
	switch a {
	case performer.ActionAddFinalizer, performer.ActionRemoveFinalizer:
		err := setFinalizer(ctx, r.Client, p, a == performer.ActionAddFinalizer)
		if apierrors.IsNotFound(err) {
			return written{}, errPerformerGone // nothing more to do, and nothing to create for it
		}
		return written{}, err

	case performer.ActionEnsureService:
		obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: desiredSvc.Name, Namespace: desiredSvc.Namespace}}
		res, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
			if obj.Labels == nil {
				obj.Labels = map[string]string{}
			}
			for k, v := range desiredSvc.Labels {
				obj.Labels[k] = v
			}
			obj.Spec.Type = desiredSvc.Spec.Type
			obj.Spec.Selector = desiredSvc.Spec.Selector
			obj.Spec.Ports = desiredSvc.Spec.Ports
			return controllerutil.SetControllerReference(p, obj, r.Scheme)
		})
		if err != nil || res == controllerutil.OperationResultNone {
			return written{}, err
		}
		return written{"Service", objectWrite{uid: obj.UID, rv: obj.ResourceVersion}}, nil

	case performer.ActionCreatePod:
		obj := desiredPod.DeepCopy()
		if err := controllerutil.SetControllerReference(p, obj, r.Scheme); err != nil {
			return written{}, err
		}
		// AlreadyExists is returned: the Pod is foreign, or ours and not cached yet; Reconcile
		// then decides again on what the API server says.
		if err := r.Client.Create(ctx, obj); err != nil {
			return written{}, err
		}
		return written{"Pod", objectWrite{uid: obj.UID, rv: obj.ResourceVersion}}, nil

	case performer.ActionDeletePod:
		return written{"Pod", objectWrite{uid: pod.UID, deleted: true}}, deleteExact(ctx, r.Client, pod)

	case performer.ActionDeleteService:
		return written{"Service", objectWrite{uid: svc.UID, deleted: true}}, deleteExact(ctx, r.Client, svc)

	case performer.ActionApplyDeployment:
		want := o.desiredDep
		obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
		res, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
			if obj.Labels == nil {
				obj.Labels = map[string]string{}
			}
			for k, v := range want.Labels {
				obj.Labels[k] = v
			}
			if obj.CreationTimestamp.IsZero() {
				obj.Spec.Selector = want.Spec.Selector
			}
			// Under spec.autoscaling the live count stays as it is (the autoscaler's: never
			// taken back; the update's resourceVersion makes sure it is the current one).
			obj.Spec.Replicas = performer.ReplicasToWrite(p, !obj.CreationTimestamp.IsZero(), obj.Spec.Replicas)
			obj.Spec.Template, obj.Spec.Strategy = want.Spec.Template, want.Spec.Strategy
			obj.Spec.RevisionHistoryLimit = want.Spec.RevisionHistoryLimit
			return controllerutil.SetControllerReference(p, obj, r.Scheme)
		})
		if err != nil || res == controllerutil.OperationResultNone {
			return written{}, err
		}
		return written{"Deployment", objectWrite{uid: obj.UID, rv: obj.ResourceVersion}}, nil

	case performer.ActionDeleteDeployment:
		return written{"Deployment", objectWrite{uid: o.dep.UID, deleted: true}}, deleteExact(ctx, r.Client, o.dep)

	case performer.ActionEnsureAutoscaler:
		return written{}, ensureAutoscaler(ctx, r.Client, r.Scheme, p, o.desiredHPA)

	case performer.ActionDeleteAutoscaler:
		return written{}, deleteExact(ctx, r.Client, o.hpa)
	}
	return written{}, nil
}

// deleteExact deletes obj only if it is still the same object (UID precondition), so a
// re-created namesake is never deleted by mistake; NotFound is success.
func deleteExact(ctx context.Context, c client.Client, obj client.Object) error {
	uid := obj.GetUID()
	err := c.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or already replaced: the next pass sees the current state
	}
	return err
}

// performerActError wraps err from action a in an *actError naming the object written.
func performerActError(a performer.Action, name string, err error) error {
	if err == nil || errors.Is(err, errPerformerGone) {
		return err
	}
	kind := ""
	switch a {
	case performer.ActionEnsureService, performer.ActionDeleteService:
		kind = "Service"
	case performer.ActionCreatePod, performer.ActionDeletePod:
		kind = "Pod"
	case performer.ActionApplyDeployment, performer.ActionDeleteDeployment:
		kind = "Deployment"
	case performer.ActionEnsureAutoscaler, performer.ActionDeleteAutoscaler:
		kind = "HorizontalPodAutoscaler"
	default:
		kind = "Performer"
	}
	return &actError{action: string(a), kind: kind, name: name, err: err}
}
