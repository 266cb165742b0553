package reconciler

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/aggregator"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// +kubebuilder:rbac:groups=gantry.dev,resources=aggregators,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=aggregators/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=aggregators/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// The config Secret aggregator-<name>-config (by name only: no list or watch of Secrets) and
// the claim of spec.persistence, deleted with the Aggregator.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;delete

// AggregatorReconciler runs the Aggregator lifecycle (internal/aggregator) against the
// cluster, as Hourglass's Helm chart runs its aggregator: it owns the StatefulSet and the
// headless Service aggregator-<name> and the config Secret aggregator-<name>-config. It reads
// the operator key Secrets' data keys straight from the API server (checkRefs; values are
// never copied out, logged or written) and re-checks a missing one with the Stalled backoff.
// The config Secret is read by name from the API server too: Secrets are not watched (a
// Secret informer needs list and watch on every Secret), so an edit of it by hand is undone
// on the Aggregator's next pass, not at once.
type AggregatorReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder

	// rejected holds the writes the API server rejected for good (errors.go).
	rejected rejections
}

// NewAggregatorReconciler builds the reconciler from a manager's clients and event recorder.
func NewAggregatorReconciler(mgr ctrl.Manager) *AggregatorReconciler {
	return &AggregatorReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorderFor(FieldManager)}
}

// SetupWithManager registers the controller: Aggregators, the StatefulSets and Services they
// control, and their pods (owned by the StatefulSet, mapped by label): why the pod does not run.
func (r *AggregatorReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Aggregator{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(aggregatorOfPod)).
		Named("aggregator").
		WithOptions(opts).
		Complete(r)
}

// aggregatorOfPod maps an aggregator pod (label gantry.dev/aggregator) to its Aggregator.
func aggregatorOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	n := obj.GetLabels()[v1alpha1.LabelAggregator]
	if n == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: n}}}
}

// Reconcile is one pass on the controllers' shared skeleton (status.go): get, gather facts,
// decide (aggregator.Decide), writeStatus once (only when it changed), emit the phase-change
// Event, act.
func (r *AggregatorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	a, err := getOrForget(ctx, r.Client, req.NamespacedName, &v1alpha1.Aggregator{}, func() { r.rejected.clear(req.NamespacedName, "") })
	if a == nil {
		return ctrl.Result{}, err
	}
	g, err := r.gather(ctx, a)
	if err != nil {
		return ctrl.Result{}, err
	}
	d, err := aggregator.Decide(g.facts)
	if err != nil {
		return ctrl.Result{}, illegalTransition(r.Recorder, a, err)
	}
	if !slices.Contains(d.Actions, aggregator.ActionRemoveFinalizer) {
		if stale, err := writeStatus(ctx, r.Client, a, &a.Status, r.status(a, d, g)); err != nil {
			return ctrl.Result{}, err
		} else if stale {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
	}
	if d.Event != nil {
		r.Recorder.Event(a, d.Event.Type, d.Event.Reason, d.Event.Message)
		log.FromContext(ctx).Info("phase", "phase", d.Phase, "reason", d.Event.Reason, "message", d.Event.Message)
	}
	return r.actAll(ctx, req.NamespacedName, a, d, g)
}

// actAll carries out the decision's actions in order (actInOrder, as the Executor's).
func (r *AggregatorReconciler) actAll(ctx context.Context, key types.NamespacedName, a *v1alpha1.Aggregator, d aggregator.Decision, g *aggGathered) (ctrl.Result, error) {
	act := func(act aggregator.Action) error { return r.act(ctx, a, act, g) }
	describe := func(act aggregator.Action, err error) *actError {
		kind, name := aggregatorActionObject(a, act)
		return &actError{action: string(act), kind: kind, name: name, err: err}
	}
	if res, done, err := actInOrder(ctx, &r.rejected, key, a, g.facts.Rejection, d.Actions, act, describe); done {
		return res, err
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// aggGathered is one pass's observations plus the desired objects.
type aggGathered struct {
	facts   aggregator.Facts
	secret  *corev1.Secret      // desired config Secret (nil with a spec error)
	service *corev1.Service     // desired Service
	sts     *appsv1.StatefulSet // desired StatefulSet (nil with a spec error)
	// live objects, nil when absent
	liveSecret  *corev1.Secret
	liveService *corev1.Service
	liveSts     *appsv1.StatefulSet
	claim       *corev1.PersistentVolumeClaim
}

func (r *AggregatorReconciler) gather(ctx context.Context, a *v1alpha1.Aggregator) (*aggGathered, error) {
	g := &aggGathered{service: aggregator.DesiredService(a)}
	f := aggregator.Facts{
		Now: metav1.Now().Time, Generation: a.Generation, Deleting: !a.DeletionTimestamp.IsZero(),
		HasFinalizer: controllerutil.ContainsFinalizer(a, v1alpha1.Finalizer), Conditions: a.Status.Conditions,
	}
	missing, err := checkRefs(ctx, r.APIReader, aggregator.Refs(a))
	if err != nil {
		return nil, err
	}
	f.MissingRefs = missing
	f.Rejection = r.rejected.get(types.NamespacedName{Namespace: a.Namespace, Name: a.Name}, a.Generation)
	data, hash, err := aggregator.RenderConfig(a)
	if err != nil {
		return nil, err
	}
	g.secret = aggregator.DesiredSecret(a, data, hash)
	if sts, err := aggregator.DesiredStatefulSet(a, hash); err != nil {
		f.SpecError = err.Error()
	} else {
		g.sts, f.DesiredRevision = sts, aggregator.Revision(sts)
	}
	if err := r.gatherOwned(ctx, a, g, &f); err != nil {
		return nil, err
	}
	g.facts = f
	return g, nil
}

// gatherOwned reads the config Secret (API server), the Service and StatefulSet (cache, then
// API server: a foreign namesake is an ownership conflict), the StatefulSet's pod and, while
// Terminating, the claim of spec.persistence.
func (r *AggregatorReconciler) gatherOwned(ctx context.Context, a *v1alpha1.Aggregator, g *aggGathered, f *aggregator.Facts) error {
	ns := a.Namespace
	var sec corev1.Secret
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: aggregator.SecretName(a.Name)}, &sec); err == nil {
		g.liveSecret = &sec
		f.Secret = aggregator.Owned{Exists: true, Foreign: !controlledByUID(&sec, a.UID)}
		f.Secret.UpToDate = !f.Secret.Foreign && sec.DeletionTimestamp == nil && aggregator.SecretUpToDate(&sec, g.secret)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	var svc corev1.Service
	if found, err := getCachedOrLive(ctx, r.Client, r.APIReader, types.NamespacedName{Namespace: ns, Name: aggregator.ServiceName(a.Name)}, &svc); err != nil {
		return err
	} else if found {
		g.liveService = &svc
		f.Service = aggregator.Owned{Exists: true, Foreign: !controlledByUID(&svc, a.UID)}
		f.Service.UpToDate = !f.Service.Foreign && svc.DeletionTimestamp == nil && aggregator.ServiceUpToDate(&svc, g.service)
	}
	var sts appsv1.StatefulSet
	if found, err := getCachedOrLive(ctx, r.Client, r.APIReader, types.NamespacedName{Namespace: ns, Name: aggregator.StatefulSetName(a.Name)}, &sts); err != nil {
		return err
	} else if found {
		g.liveSts = &sts
		f.StatefulSet = aggregator.StatefulSetFacts(&sts, a.UID)
	}
	var pod corev1.Pod
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: aggregator.PodName(a.Name)}, &pod); err == nil {
		f.Pod = aggregator.PodFacts(&pod)
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	if f.Deleting {
		var pvc corev1.PersistentVolumeClaim
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ns, Name: aggregator.ClaimName(a.Name)}, &pvc); err == nil {
			// Only the aggregator's own claim (its label) holds the deletion: a claim of that
			// name someone else made is never deleted, so waiting for it would never end.
			if pvc.Labels[v1alpha1.LabelAggregator] == a.Name {
				if pvc.DeletionTimestamp == nil {
					g.claim = &pvc
				}
				f.Claims = 1
			}
		} else if !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (r *AggregatorReconciler) status(a *v1alpha1.Aggregator, d aggregator.Decision, g *aggGathered) v1alpha1.AggregatorStatus {
	st := *a.Status.DeepCopy()
	st.ObservedGeneration = a.Generation
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.Phase = d.Phase
	st.Revision = g.facts.DesiredRevision
	st.ReadyReplicas, st.Image = 0, ""
	if s := g.facts.StatefulSet; s != nil && !s.Foreign {
		st.ReadyReplicas, st.Image = s.ReadyReplicas, s.Image
	}
	st.ReadyText = fmt.Sprintf("%d/1", st.ReadyReplicas)
	st.ConfigSecretName = aggregator.SecretName(a.Name)
	st.ManagementEndpoint = aggregator.Endpoint(a)
	return st
}

func (r *AggregatorReconciler) act(ctx context.Context, a *v1alpha1.Aggregator, act aggregator.Action, g *aggGathered) error {
	switch act {
	case aggregator.ActionAddFinalizer, aggregator.ActionRemoveFinalizer:
		return client.IgnoreNotFound(setFinalizer(ctx, r.Client, a, act == aggregator.ActionAddFinalizer))
	case aggregator.ActionApplySecret:
		return r.applySecret(ctx, a, g)
	case aggregator.ActionApplyService:
		return r.applyService(ctx, a, g)
	case aggregator.ActionApplyStatefulSet:
		return r.applyStatefulSet(ctx, a, g.sts)
	case aggregator.ActionDeleteStatefulSet:
		return deleteExact(ctx, r.Client, g.liveSts)
	case aggregator.ActionDeleteService:
		return deleteExact(ctx, r.Client, g.liveService)
	case aggregator.ActionDeleteSecret:
		return deleteExact(ctx, r.Client, g.liveSecret)
	case aggregator.ActionDeleteClaims:
		if g.claim != nil {
			return deleteExact(ctx, r.Client, g.claim)
		}
	}
	return nil
}

// applySecret creates the config Secret or updates its config.yaml and annotations, controlled
// by the Aggregator.
func (r *AggregatorReconciler) applySecret(ctx context.Context, a *v1alpha1.Aggregator, g *aggGathered) error {
	want := g.secret
	if g.liveSecret == nil {
		obj := want.DeepCopy()
		if err := controllerutil.SetControllerReference(a, obj, r.Scheme); err != nil {
			return err
		}
		return r.Client.Create(ctx, obj)
	}
	obj := g.liveSecret.DeepCopy()
	obj.Labels, obj.Annotations = mergeStrings(obj.Labels, want.Labels), mergeStrings(obj.Annotations, want.Annotations)
	obj.Type = want.Type
	obj.Data = map[string][]byte{v1alpha1.AggregatorConfigKey: []byte(want.StringData[v1alpha1.AggregatorConfigKey])}
	if err := controllerutil.SetControllerReference(a, obj, r.Scheme); err != nil {
		return err
	}
	return r.Client.Update(ctx, obj)
}

// applyService creates or updates the headless Service (its selector and ports; clusterIP is
// set at creation only, as the API server keeps it).
func (r *AggregatorReconciler) applyService(ctx context.Context, a *v1alpha1.Aggregator, g *aggGathered) error {
	want := g.service
	obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		obj.Labels = mergeStrings(obj.Labels, want.Labels)
		if obj.CreationTimestamp.IsZero() {
			obj.Spec.ClusterIP = want.Spec.ClusterIP
		}
		obj.Spec.Selector = want.Spec.Selector
		obj.Spec.Ports = want.Spec.Ports
		return controllerutil.SetControllerReference(a, obj, r.Scheme)
	})
	return err
}

// applyStatefulSet creates or updates the StatefulSet: its template, replicas and update
// strategy; the selector, serviceName, podManagementPolicy and volumeClaimTemplates are set at
// creation only (Kubernetes does not let them change).
func (r *AggregatorReconciler) applyStatefulSet(ctx context.Context, a *v1alpha1.Aggregator, want *appsv1.StatefulSet) error {
	obj := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: want.Name, Namespace: want.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		obj.Labels = mergeStrings(obj.Labels, want.Labels)
		if obj.CreationTimestamp.IsZero() {
			obj.Spec.Selector = want.Spec.Selector
			obj.Spec.ServiceName = want.Spec.ServiceName
			obj.Spec.PodManagementPolicy = want.Spec.PodManagementPolicy
			obj.Spec.VolumeClaimTemplates = want.Spec.VolumeClaimTemplates
		}
		obj.Spec.Replicas = want.Spec.Replicas
		obj.Spec.Template = want.Spec.Template
		obj.Spec.UpdateStrategy = want.Spec.UpdateStrategy
		obj.Spec.PersistentVolumeClaimRetentionPolicy = want.Spec.PersistentVolumeClaimRetentionPolicy
		return controllerutil.SetControllerReference(a, obj, r.Scheme)
	})
	return err
}

// mergeStrings returns cur with want's entries set (a new map when cur is nil).
func mergeStrings(cur, want map[string]string) map[string]string {
	if cur == nil {
		cur = map[string]string{}
	}
	for k, v := range want {
		cur[k] = v
	}
	return cur
}

// aggregatorActionObject is the kind and name of the object action act writes.
func aggregatorActionObject(a *v1alpha1.Aggregator, act aggregator.Action) (kind, name string) {
	switch act {
	case aggregator.ActionApplySecret, aggregator.ActionDeleteSecret:
		return "Secret", aggregator.SecretName(a.Name)
	case aggregator.ActionApplyService, aggregator.ActionDeleteService:
		return "Service", aggregator.ServiceName(a.Name)
	case aggregator.ActionDeleteClaims:
		return "PersistentVolumeClaim", aggregator.ClaimName(a.Name)
	case aggregator.ActionAddFinalizer, aggregator.ActionRemoveFinalizer:
		return "Aggregator", a.Name
	}
	return "StatefulSet", aggregator.StatefulSetName(a.Name)
}
