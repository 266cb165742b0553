package reconciler

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// conflictRetry is the delay before retrying a pass whose write hit a stale object.
const conflictRetry = 200 * time.Millisecond

// RBAC the reconciler needs (config/rbac/role.yaml is generated from these by `make generate`):
// +kubebuilder:rbac:groups=gantry.dev,resources=performers,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=performers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=performers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;create;patch

// PerformerReconciler runs seed 002's Performer lifecycle (internal/performer) against the
// cluster: it owns the Pod and the Service performer-<name>.
type PerformerReconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// APIReader reads the API server directly (objects outside the label-filtered cache).
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder
	// Now is the clock (time.Now if nil).
	Now func() time.Time
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
// and our own status writes cost only a no-op pass), and the Pods and Services they control.
func (r *PerformerReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Performer{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.Service{}).
		Named("performer").
		WithOptions(opts).
		Complete(r)
}

// Reconcile is one pass: get the Performer, gather facts, call performer.Decide, write status
// (once, only when it changed, through the status subresource, before acting so a phase such
// as Upgrading is visible before its effects), emit the phase-change Event, then act.
func (r *PerformerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var p v1alpha1.Performer
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	key := types.NamespacedName{Namespace: p.Namespace, Name: performer.ObjectName(p.Name)}

	desiredPod, specErr := performer.DesiredPod(&p)
	desiredSvc := performer.DesiredService(&p)
	pod := &corev1.Pod{}
	if found, err := r.get(ctx, key, pod); err != nil {
		return ctrl.Result{}, err
	} else if !found {
		pod = nil
	}
	svc := &corev1.Service{}
	if found, err := r.get(ctx, key, svc); err != nil {
		return ctrl.Result{}, err
	} else if !found {
		svc = nil
	}

	facts := performer.Facts{
		Now:          now(),
		Generation:   p.Generation,
		Deleting:     !p.DeletionTimestamp.IsZero(),
		HasFinalizer: controllerutil.ContainsFinalizer(&p, v1alpha1.Finalizer),
		Conditions:   p.Status.Conditions,
		RunningImage: p.Status.Image,
		DesiredImage: p.Spec.Image,
		Pod:          performer.PodFacts(pod, p.UID),
		Service:      performer.ServiceFacts(svc, desiredSvc, p.UID),
	}
	if specErr != nil {
		facts.SpecError = specErr.Error()
	} else {
		facts.DesiredHash = desiredPod.Annotations[v1alpha1.AnnotationSpecHash]
	}
	d, err := performer.Decide(facts)
	if err != nil {
		var te *performer.TransitionError
		if errors.As(err, &te) {
			r.Recorder.Event(&p, corev1.EventTypeWarning, "IllegalTransition", err.Error())
		}
		return ctrl.Result{}, err
	}

	if !hasAction(d.Actions, performer.ActionRemoveFinalizer) {
		status := r.status(&p, d, facts, pod, now)
		if !equality.Semantic.DeepEqual(p.Status, status) {
			before := p.DeepCopy()
			p.Status = status
			if err := r.Client.Status().Patch(ctx, &p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
				if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
					// A stale cached Performer: the next pass sees the current one.
					logger.V(1).Info("status write conflict, retrying", "error", err.Error())
					return ctrl.Result{RequeueAfter: conflictRetry}, nil
				}
				return ctrl.Result{}, err
			}
		}
	}
	if d.Event != nil {
		r.Recorder.Event(&p, d.Event.Type, d.Event.Reason, d.Event.Message)
		logger.Info("phase", "phase", d.Phase, "reason", d.Event.Reason, "message", d.Event.Message)
	}

	for _, a := range d.Actions {
		if err := r.act(ctx, &p, a, desiredPod, desiredSvc, pod, svc); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				// The cache lags behind the API server: the next pass sees the current state.
				logger.V(1).Info("write conflict, retrying", "action", a, "error", err.Error())
				return ctrl.Result{RequeueAfter: conflictRetry}, nil
			}
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// get reads an owned object from the cache and, when the cache does not have it, from the API
// server (the cache only holds objects labelled as ours). found is false on NotFound.
func (r *PerformerReconciler) get(ctx context.Context, key types.NamespacedName, obj client.Object) (found bool, err error) {
	err = r.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// status computes the new status from the decision; conditions keep their
// lastTransitionTime unless their status changes (meta.SetStatusCondition).
func (r *PerformerReconciler) status(p *v1alpha1.Performer, d performer.Decision, f performer.Facts, pod *corev1.Pod, now func() time.Time) v1alpha1.PerformerStatus {
	st := *p.Status.DeepCopy()
	st.ObservedGeneration = p.Generation
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.Phase = d.Phase
	st.Image = d.Image
	st.PodName = performer.ObjectName(p.Name)
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
	return st
}

// act carries out one action of the machine.
func (r *PerformerReconciler) act(ctx context.Context, p *v1alpha1.Performer, a performer.Action, desiredPod *corev1.Pod, desiredSvc *corev1.Service, pod *corev1.Pod, svc *corev1.Service) error {
	switch a {
	case performer.ActionAddFinalizer, performer.ActionRemoveFinalizer:
		before := p.DeepCopy()
		if a == performer.ActionAddFinalizer {
			controllerutil.AddFinalizer(p, v1alpha1.Finalizer)
		} else {
			controllerutil.RemoveFinalizer(p, v1alpha1.Finalizer)
		}
		err := r.Client.Patch(ctx, p, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
		return client.IgnoreNotFound(err)

	case performer.ActionEnsureService:
		obj := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: desiredSvc.Name, Namespace: desiredSvc.Namespace}}
		_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
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
		return err

	case performer.ActionCreatePod:
		obj := desiredPod.DeepCopy()
		if err := controllerutil.SetControllerReference(p, obj, r.Scheme); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil

	case performer.ActionDeletePod:
		return deleteExact(ctx, r.Client, pod)

	case performer.ActionDeleteService:
		return deleteExact(ctx, r.Client, svc)
	}
	return nil
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

func hasAction(actions []performer.Action, a performer.Action) bool {
	for _, x := range actions {
		if x == a {
			return true
		}
	}
	return false
}
