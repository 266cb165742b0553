package reconciler

import (
	"context"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// networkPolicyRetry is the requeue delay after a failed NetworkPolicy write (for example a
// reconciler whose RBAC predates networkpolicies: the Warning event says so at this pace).
const networkPolicyRetry = 30 * time.Second

// isolate is reconcileNetworkPolicy, skipped (nil) while the Performer is being deleted: its
// NetworkPolicy then stays until garbage collection removes it with its owner, so the Pod is
// isolated until it is gone.
func (r *PerformerReconciler) isolate(ctx context.Context, p *v1alpha1.Performer, deleting bool) (*performer.NetworkPolicyDecision, error) {
	if deleting {
		return nil, nil
	}
	d, err := r.reconcileNetworkPolicy(ctx, p)
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// withNetworkPolicyRetry shortens res's requeue to networkPolicyRetry after a failed
// NetworkPolicy write (create, update or delete), so the write is tried again.
func withNetworkPolicyRetry(res ctrl.Result, d *performer.NetworkPolicyDecision) ctrl.Result {
	if d != nil && d.Failed && (res.RequeueAfter == 0 || res.RequeueAfter > networkPolicyRetry) {
		res.RequeueAfter = networkPolicyRetry
	}
	return res
}

// reconcileNetworkPolicy is a pass's isolation step (spec.networkPolicy, internal/performer
// networkpolicy.go): gather the namespace's Executors and the NetworkPolicy performer-<name>
// from the cache, decide, act, emit the decision's event. A create or update that finds the
// cache behind (AlreadyExists, Conflict) decides once more on what the API server says. A
// write that fails otherwise is not an error of the pass: the decision returned says so
// (NetworkPolicyReady=False, a Warning event) and the pass goes on; the performer serves.
func (r *PerformerReconciler) reconcileNetworkPolicy(ctx context.Context, p *v1alpha1.Performer) (performer.NetworkPolicyDecision, error) {
	var allowed []string
	if performer.NetworkPolicyEnabled(p) {
		var execs v1alpha1.ExecutorList
		if err := r.Client.List(ctx, &execs, client.InNamespace(p.Namespace)); err != nil {
			return performer.NetworkPolicyDecision{}, err
		}
		allowed = performer.AllowedExecutors(p, execs.Items)
	}
	want := performer.DesiredNetworkPolicy(p, allowed)
	key := types.NamespacedName{Namespace: p.Namespace, Name: want.Name}
	for try := 0; ; try++ {
		reader := client.Reader(r.Client)
		if try > 0 {
			reader = r.APIReader
		}
		have := &networkingv1.NetworkPolicy{}
		if err := reader.Get(ctx, key, have); apierrors.IsNotFound(err) {
			have = nil
		} else if err != nil {
			return performer.NetworkPolicyDecision{}, err
		}
		f := performer.NetworkPolicyFactsOf(p, allowed, have, want)
		d := performer.DecideNetworkPolicy(f)
		err := r.actNetworkPolicy(ctx, p, d.Action, have, want)
		if try == 0 && (apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err)) {
			continue
		}
		if err != nil {
			log.FromContext(ctx).Info("network policy write failed", "action", d.Action, "error", err.Error())
			d = performer.NetworkPolicyWriteFailed(d, f, p.Status.AllowedExecutors, err.Error())
		}
		if d.Event != nil {
			r.Recorder.Event(p, d.Event.Type, d.Event.Reason, d.Event.Message)
		}
		return d, nil
	}
}

// actNetworkPolicy carries out one isolation action: create the desired policy (controlled by
// the Performer, so it is garbage-collected with it), update ours to it (optimistic lock on
// the read resourceVersion), or delete ours (UID precondition).
func (r *PerformerReconciler) actNetworkPolicy(ctx context.Context, p *v1alpha1.Performer, a performer.NetworkPolicyAction, have, want *networkingv1.NetworkPolicy) error {
	switch a {
	case performer.NetworkPolicyCreate:
		obj := want.DeepCopy()
		if err := controllerutil.SetControllerReference(p, obj, r.Scheme); err != nil {
			return err
		}
		return r.Client.Create(ctx, obj)
	case performer.NetworkPolicyUpdate:
		obj := have.DeepCopy()
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		for k, v := range want.Labels {
			obj.Labels[k] = v
		}
		obj.Spec = want.Spec
		return r.Client.Update(ctx, obj)
	case performer.NetworkPolicyDelete:
		return deleteExact(ctx, r.Client, have)
	}
	return nil
}

// setNetworkPolicyStatus merges the isolation decision (nil: none this pass, the Performer is
// being deleted) into the status the pass writes: the NetworkPolicyReady condition (removed
// when isolation is off) and status.allowedExecutors.
func setNetworkPolicyStatus(st *v1alpha1.PerformerStatus, d *performer.NetworkPolicyDecision) {
	if d == nil {
		return
	}
	if d.Condition == nil {
		meta.RemoveStatusCondition(&st.Conditions, performer.ConditionNetworkPolicyReady)
	} else {
		meta.SetStatusCondition(&st.Conditions, *d.Condition)
	}
	st.AllowedExecutors = d.AllowedExecutors
}

// performersOfExecutor maps an Executor (its creation, spec change or deletion; an update maps
// the old and the new object) to the isolated Performers of its namespace whose NetworkPolicy
// admits it or should (performer.ExecutorPerformers).
func (r *PerformerReconciler) performersOfExecutor(ctx context.Context, obj client.Object) []reconcile.Request {
	e, ok := obj.(*v1alpha1.Executor)
	if !ok {
		return nil
	}
	var list v1alpha1.PerformerList
	if err := r.Client.List(ctx, &list, client.InNamespace(e.Namespace)); err != nil {
		log.FromContext(ctx).Error(err, "listing performers for an executor change", "executor", e.Name)
		return nil
	}
	var out []reconcile.Request
	for _, k := range performer.ExecutorPerformers(e, list.Items) {
		out = append(out, reconcile.Request{NamespacedName: k})
	}
	return out
}
