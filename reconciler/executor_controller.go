package reconciler

import (
	"context"
	"fmt"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/executor"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
)

// +kubebuilder:rbac:groups=gantry.dev,resources=executors,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=executors/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=executors/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get;list
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update;patch;delete;deletecollection
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// spec.managePerformers: the executor's ServiceAccount, Role and RoleBinding, and deleting the
// Performers it created; a Role can grant only what its writer holds (RBAC escalation check),
// so the reconciler holds what AccessRules grant.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=gantry.dev,resources=performers,verbs=create;delete
// The Role of an executor in Hourglass compatibility mode grants these on Hourglass's
// Performers; Kubernetes lets the reconciler grant only what it holds itself.
// +kubebuilder:rbac:groups=hourglass.eigenlayer.io,resources=performers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=hourglass.eigenlayer.io,resources=performers/status,verbs=get

// ExecutorReconciler runs the Executor lifecycle (internal/executor) against the cluster: it
// owns the Deployment executor-<name> and its immutable, content-named ConfigMaps. It reads
// the referenced Performers (watching them, so an endpoint change re-renders the config and
// rolls the pods) and the operator key Secret's data keys straight from the API server (to
// say "Secret ns/name has no key K" before a rollout; values are never copied out, logged or
// written: checkRefs). A missing Secret or key is re-checked with the Stalled backoff (5s,
// doubling, at most 5 minutes), so creating it heals the Executor without user action.
type ExecutorReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder

	// rejected holds the writes the API server rejected for good (errors.go).
	rejected rejections
}

// NewExecutorReconciler builds the reconciler from a manager's clients and event recorder.
func NewExecutorReconciler(mgr ctrl.Manager) *ExecutorReconciler {
	return &ExecutorReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorderFor(FieldManager)}
}

// SetupWithManager registers the controller: Executors, the Deployments and ConfigMaps they
// control, and Performers (mapped to the Executors in their namespace that reference them by
// name or selector).
func (r *ExecutorReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Executor{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&v1alpha1.Performer{}, handler.EnqueueRequestsFromMapFunc(r.executorsFor)).
		// Its pods (through their ReplicaSets, so not owned directly): why a rollout stalls.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(executorOfPod)).
		Named("executor").
		WithOptions(opts).
		Complete(r)
}

// executorsFor maps a Performer to the Executors in its namespace that reference it or
// created it (label gantry.dev/created-by-executor).
func (r *ExecutorReconciler) executorsFor(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1alpha1.ExecutorList
	if err := r.Client.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	creator := obj.GetLabels()[v1alpha1.LabelCreatedByExecutor]
	for _, e := range list.Items {
		if references(&e, obj.GetName(), obj.GetLabels()) || e.Name == creator {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: e.Namespace, Name: e.Name}})
		}
	}
	return out
}

// executorOfPod maps an executor pod (label gantry.dev/executor) to its Executor.
func executorOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	n := obj.GetLabels()[v1alpha1.LabelExecutor]
	if n == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: n}}}
}

func references(e *v1alpha1.Executor, name string, lbls map[string]string) bool {
	return executor.References(e, name, lbls)
}

// Reconcile is one pass on the controllers' shared skeleton (status.go): get, gather facts,
// decide (executor.Decide), writeStatus once (only when it changed), emit the phase-change
// Event, act.
func (r *ExecutorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	e, err := getOrForget(ctx, r.Client, req.NamespacedName, &v1alpha1.Executor{}, func() { r.rejected.clear(req.NamespacedName, "") })
	if e == nil {
		return ctrl.Result{}, err
	}
	// gather
	g, err := r.gather(ctx, e)
	if err != nil {
		return ctrl.Result{}, err
	}
	// decide
	d, err := executor.Decide(g.facts)
	if err != nil {
		return ctrl.Result{}, illegalTransition(r.Recorder, e, err)
	}
	// writeStatus (not when the finalizer goes: the Executor is then going away)
	if !slices.Contains(d.Actions, executor.ActionRemoveFinalizer) {
		if stale, err := writeStatus(ctx, r.Client, e, &e.Status, r.status(e, d, g)); err != nil {
			return ctrl.Result{}, err
		} else if stale {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
	}
	// emit
	if d.Event != nil {
		r.Recorder.Event(e, d.Event.Type, d.Event.Reason, d.Event.Message)
		log.FromContext(ctx).Info("phase", "phase", d.Phase, "reason", d.Event.Reason, "message", d.Event.Message)
	}
	// act
	return r.actAll(ctx, req.NamespacedName, e, d, g)
}

// actAll carries out the decision's actions in order (actInOrder: a conflict requeues, a
// permanent rejection is recorded for the next pass, errors.go) and, when all succeeded,
// requeues after the decision's RequeueAfter.
func (r *ExecutorReconciler) actAll(ctx context.Context, key types.NamespacedName, e *v1alpha1.Executor, d executor.Decision, g *gathered) (ctrl.Result, error) {
	act := func(a executor.Action) error { return r.act(ctx, e, a, g) }
	describe := func(a executor.Action, err error) *actError {
		return &actError{action: string(a), kind: executorActionKind(a), name: executorActionObject(e, a, g), err: err}
	}
	if res, done, err := actInOrder(ctx, &r.rejected, key, e, g.facts.Rejection, d.Actions, act, describe); done {
		return res, err
	}
	return ctrl.Result{RequeueAfter: d.RequeueAfter}, nil
}

// gathered is one pass's observations plus the desired objects.
type gathered struct {
	facts      executor.Facts
	endpoints  []v1alpha1.PerformerEndpoint
	cm         *corev1.ConfigMap // desired ConfigMap (nil when inputs are not ready)
	deployment *appsv1.Deployment
	live       *appsv1.Deployment // observed Deployment, nil if none
	lastGood   *corev1.PodTemplateSpec
	// managed are the Performers the executor created (label gantry.dev/created-by-executor).
	managed []v1alpha1.Performer
}

func (r *ExecutorReconciler) gather(ctx context.Context, e *v1alpha1.Executor) (*gathered, error) {
	g := &gathered{}
	f := executor.Facts{
		Generation:       e.Generation,
		Deleting:         !e.DeletionTimestamp.IsZero(),
		HasFinalizer:     controllerutil.ContainsFinalizer(e, v1alpha1.Finalizer),
		Conditions:       e.Status.Conditions,
		LastGoodRevision: e.Status.LastGoodRevision,
		FailedRevision:   e.Status.FailedRevision,
		PodDisruptions:   e.Status.PodDisruptions,
		RollbackEnabled:  executor.RollbackEnabled(e),
		DesiredReplicas:  executor.Replicas(e),
		BySelector:       e.Spec.Performers.Selector != nil,
	}
	f.Now = metav1.Now().Time
	if err := r.gatherAccess(ctx, e, g, &f); err != nil {
		return nil, err
	}

	// Performers: by name (reference order) or by selector (name order).
	if err := r.gatherPerformers(ctx, e, &f); err != nil {
		return nil, err
	}
	// The operator key Secret and its keys, straight from the API server (never cached; only
	// the data keys are looked at, values are never handed on: checkRefs).
	missing, err := checkRefs(ctx, r.APIReader, executor.Refs(e))
	if err != nil {
		return nil, err
	}
	f.MissingRefs = missing
	f.Rejection = r.rejected.get(types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, e.Generation)

	if err := r.gatherDesired(ctx, e, g, &f); err != nil {
		return nil, err
	}
	if f.Deleting {
		cms, err := r.ownedConfigMaps(ctx, e)
		if err != nil {
			return nil, err
		}
		f.ConfigMap = executor.ConfigMap{Exists: len(cms) > 0}
	}

	if err := r.gatherDeployment(ctx, e, g, &f); err != nil {
		return nil, err
	}
	g.facts = f
	return g, nil
}

// gatherDesired builds the desired config and Deployment into g, once every performer has
// its endpoint (at once for an executor that declares no performers: its config lists none),
// and fills the ConfigMap and DesiredRevision facts (SpecError when the Deployment cannot be
// built).
func (r *ExecutorReconciler) gatherDesired(ctx context.Context, e *v1alpha1.Executor, g *gathered, f *executor.Facts) error {
	declared := len(e.Spec.Performers.Names) > 0 || e.Spec.Performers.Selector != nil
	ready := len(f.Performers) > 0 || !declared
	for _, p := range f.Performers {
		ready = ready && p.Found && p.Current && p.Phase == v1alpha1.PerformerRunning && p.Endpoint != ""
	}
	if ready && f.SpecError == "" {
		g.endpoints = executor.Endpoints(f.Performers)
		data, hash, err := executor.RenderConfig(e, g.endpoints)
		if err != nil {
			return err
		}
		g.cm = executor.DesiredConfigMap(e, data, hash)
		dep, err := executor.DesiredDeployment(e, g.cm.Name, hash)
		if err != nil {
			f.SpecError = err.Error()
		} else {
			g.deployment = dep
			f.DesiredRevision = executor.Revision(&dep.Spec.Template)
		}
		var cm corev1.ConfigMap
		if found, err := r.get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: g.cm.Name}, &cm); err != nil {
			return err
		} else if found {
			f.ConfigMap = executor.ConfigMap{Exists: true, Foreign: !controlledByUID(&cm, e.UID)}
		}
	}
	return nil
}

// gatherDeployment reads the Deployment executor-<name> (g.live, f.Deployment), why its pods
// do not run, and whether the last good revision is available to roll back to: the
// Deployment's own template, or one of its ReplicaSets' (g.lastGood).
func (r *ExecutorReconciler) gatherDeployment(ctx context.Context, e *v1alpha1.Executor, g *gathered, f *executor.Facts) error {
	var dep appsv1.Deployment
	if found, err := r.get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: executor.DeploymentName(e.Name)}, &dep); err != nil {
		return err
	} else if found {
		g.live = &dep
		f.Deployment = executor.DeploymentFacts(&dep, e.UID)
		if f.PodProblems, f.Disrupted, err = r.podProblems(ctx, e, &dep, f.Deployment.Foreign); err != nil {
			return err
		}
	}
	// The rollback target: the Deployment's own template, or one of its ReplicaSets'.
	if lg := f.LastGoodRevision; lg != "" && g.live != nil && !f.Deployment.Foreign {
		if executor.Revision(&g.live.Spec.Template) == lg {
			f.LastGoodAvailable = true
		} else {
			rss, err := r.replicaSets(ctx, e, g.live)
			if err != nil {
				return err
			}
			for i := range rss {
				if executor.Revision(&rss[i].Spec.Template) == lg {
					g.lastGood = rss[i].Spec.Template.DeepCopy()
					f.LastGoodAvailable = true
				}
			}
		}
	}
	return nil
}

// gatherAccess fills the spec.managePerformers facts: the ServiceAccount, Role and
// RoleBinding executor-<name> (from the cache, which holds the ones labelled as ours, then
// the API server: a foreign namesake is an ownership conflict) and the Performers labelled
// gantry.dev/created-by-executor=<name>.
func (r *ExecutorReconciler) gatherAccess(ctx context.Context, e *v1alpha1.Executor, g *gathered, f *executor.Facts) error {
	f.ManagePerformers = executor.ManagesPerformers(e)
	var list v1alpha1.PerformerList
	if err := r.Client.List(ctx, &list, client.InNamespace(e.Namespace), client.MatchingLabels{v1alpha1.LabelCreatedByExecutor: e.Name}); err != nil {
		return err
	}
	g.managed, f.ManagedPerformers = list.Items, len(list.Items)
	key := types.NamespacedName{Namespace: e.Namespace, Name: executor.AccessName(e.Name)}
	sa, role, rb := &corev1.ServiceAccount{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}
	read := func(obj client.Object) (bool, error) {
		if !f.ManagePerformers {
			// Off: only our own (cached) objects matter, to delete them.
			err := r.Client.Get(ctx, key, obj)
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		}
		return r.get(ctx, key, obj)
	}
	foundSA, err := read(sa)
	if err != nil {
		return err
	}
	foundRole, err := read(role)
	if err != nil {
		return err
	}
	foundRB, err := read(rb)
	if err != nil {
		return err
	}
	if !foundSA {
		sa = nil
	}
	if !foundRole {
		role = nil
	}
	if !foundRB {
		rb = nil
	}
	_, wantRole, wantRB := executor.DesiredAccess(e)
	f.Access = executor.AccessFacts(sa, role, rb, wantRole, wantRB, e.UID)
	return nil
}

// gatherPerformers fills f.Performers: by name (reference order) or by selector (name order);
// an invalid selector is f.SpecError.
func (r *ExecutorReconciler) gatherPerformers(ctx context.Context, e *v1alpha1.Executor, f *executor.Facts) error {
	if sel := e.Spec.Performers.Selector; sel != nil {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			f.SpecError = "performers.selector: " + err.Error()
		} else {
			var list v1alpha1.PerformerList
			if err := r.Client.List(ctx, &list, client.InNamespace(e.Namespace), client.MatchingLabelsSelector{Selector: s}); err != nil {
				return err
			}
			sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
			for i := range list.Items {
				f.Performers = append(f.Performers, executor.PerformerRefFacts(list.Items[i].Name, &list.Items[i]))
			}
		}
	} else {
		for _, n := range e.Spec.Performers.Names {
			var p v1alpha1.Performer
			err := r.Client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: n}, &p)
			switch {
			case apierrors.IsNotFound(err):
				f.Performers = append(f.Performers, executor.PerformerRefFacts(n, nil))
			case err != nil:
				return err
			default:
				f.Performers = append(f.Performers, executor.PerformerRefFacts(n, &p))
			}
		}
	}
	return nil
}

// podProblems says why the Deployment's pods do not run (image pull, crash) while some are
// unavailable (nil otherwise), and which of them ended from outside (executor.Disruptions),
// read from the Pod cache (they carry our label).
func (r *ExecutorReconciler) podProblems(ctx context.Context, e *v1alpha1.Executor, dep *appsv1.Deployment, foreign bool) ([]string, []failure.Disruption, error) {
	if foreign {
		return nil, nil, nil
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(e.Namespace), client.MatchingLabels(executor.SelectorLabels(e))); err != nil {
		return nil, nil, err
	}
	disrupted := executor.Disruptions(pods.Items)
	if dep.Status.UnavailableReplicas == 0 && dep.Status.ReadyReplicas >= dep.Status.Replicas {
		return nil, disrupted, nil
	}
	return executor.PodProblems(pods.Items), disrupted, nil
}

// get reads from the cache, then from the API server when the cache does not have it (the
// cache holds only objects labelled as ours). found is false on NotFound.
func (r *ExecutorReconciler) get(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	return getCachedOrLive(ctx, r.Client, r.APIReader, key, obj)
}

// replicaSets lists the ReplicaSets the Deployment controls (uncached: only needed to find a
// rollback target or to prune ConfigMaps).
func (r *ExecutorReconciler) replicaSets(ctx context.Context, e *v1alpha1.Executor, dep *appsv1.Deployment) ([]appsv1.ReplicaSet, error) {
	var list appsv1.ReplicaSetList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(e.Namespace), client.MatchingLabels(executor.SelectorLabels(e))); err != nil {
		return nil, err
	}
	var out []appsv1.ReplicaSet
	for _, rs := range list.Items {
		if controlledByUID(&rs, dep.UID) {
			out = append(out, rs)
		}
	}
	return out, nil
}

func (r *ExecutorReconciler) ownedConfigMaps(ctx context.Context, e *v1alpha1.Executor) ([]corev1.ConfigMap, error) {
	var list corev1.ConfigMapList
	if err := r.Client.List(ctx, &list, client.InNamespace(e.Namespace), client.MatchingLabels(executor.Labels(e))); err != nil {
		return nil, err
	}
	var out []corev1.ConfigMap
	for _, cm := range list.Items {
		if controlledByUID(&cm, e.UID) {
			out = append(out, cm)
		}
	}
	return out, nil
}

func (r *ExecutorReconciler) status(e *v1alpha1.Executor, d executor.Decision, g *gathered) v1alpha1.ExecutorStatus {
	st := *e.Status.DeepCopy()
	st.ObservedGeneration = e.Generation
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	st.Phase = d.Phase
	st.LastGoodRevision = d.LastGoodRevision
	st.FailedRevision = d.FailedRevision
	st.PodDisruptions = d.PodDisruptions
	st.CurrentRevision = d.CurrentRevision
	st.Selector = executor.Selector(e)
	st.Replicas, st.ReadyReplicas, st.Image = 0, 0, ""
	if dep := g.facts.Deployment; dep != nil && !dep.Foreign {
		st.Replicas, st.ReadyReplicas, st.Image = dep.StatusReplicas, dep.ReadyReplicas, dep.Image
	}
	st.ReadyText = fmt.Sprintf("%d/%d", st.ReadyReplicas, executor.Replicas(e))
	if g.cm != nil {
		st.ConfigMapName = g.cm.Name
		st.PerformerEndpoints = g.endpoints
	}
	st.ManagedPerformers = nil
	if len(g.managed) > 0 {
		st.ManagedPerformers = executor.ManagedPerformers(g.managed)
	}
	return st
}

func (r *ExecutorReconciler) act(ctx context.Context, e *v1alpha1.Executor, a executor.Action, g *gathered) error {
	switch a {
	case executor.ActionAddFinalizer, executor.ActionRemoveFinalizer:
		return client.IgnoreNotFound(setFinalizer(ctx, r.Client, e, a == executor.ActionAddFinalizer))

	case executor.ActionEnsureConfigMap:
		cm := g.cm.DeepCopy()
		if err := controllerutil.SetControllerReference(e, cm, r.Scheme); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil

	case executor.ActionApplyDeployment:
		return r.writeDeployment(ctx, e, g.deployment.Spec.Template, g.deployment)

	case executor.ActionRollback:
		if g.lastGood == nil {
			return fmt.Errorf("revision %s is not held by any ReplicaSet", g.facts.LastGoodRevision)
		}
		// As `kubectl rollout undo`: the ReplicaSet's template without its pod-template-hash.
		t := *g.lastGood.DeepCopy()
		delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		return r.writeDeployment(ctx, e, t, g.deployment)

	case executor.ActionScaleDeployment:
		before := g.live.DeepCopy()
		n := executor.Replicas(e)
		g.live.Spec.Replicas = &n
		return r.Client.Patch(ctx, g.live, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))

	case executor.ActionPruneConfigMaps:
		return r.pruneConfigMaps(ctx, e, g)

	case executor.ActionDeleteDeployment:
		return deleteExact(ctx, r.Client, g.live)

	case executor.ActionEnsureAccess:
		return r.ensureAccess(ctx, e)

	case executor.ActionDeleteAccess:
		sa, role, rb := executor.DesiredAccess(e)
		for _, obj := range []client.Object{rb, role, sa} {
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, obj)); err != nil {
				return err
			}
		}

	case executor.ActionDeleteManagedPerformers:
		for i := range g.managed {
			if err := deleteExact(ctx, r.Client, &g.managed[i]); err != nil {
				return err
			}
		}

	case executor.ActionDeleteConfigMaps:
		cms, err := r.ownedConfigMaps(ctx, e)
		if err != nil {
			return err
		}
		for i := range cms {
			if err := deleteExact(ctx, r.Client, &cms[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensureAccess creates or updates the ServiceAccount, Role and RoleBinding executor-<name>
// (DesiredAccess), each controlled by the Executor so they go with it.
func (r *ExecutorReconciler) ensureAccess(ctx context.Context, e *v1alpha1.Executor) error {
	wantSA, wantRole, wantRB := executor.DesiredAccess(e)
	labelled := func(obj client.Object) {
		l := obj.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		for k, v := range executor.Labels(e) {
			l[k] = v
		}
		obj.SetLabels(l)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: wantSA.Name, Namespace: wantSA.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, sa, func() error {
		labelled(sa)
		return controllerutil.SetControllerReference(e, sa, r.Scheme)
	}); err != nil {
		return err
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: wantRole.Name, Namespace: wantRole.Namespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, role, func() error {
		labelled(role)
		role.Rules = wantRole.Rules
		return controllerutil.SetControllerReference(e, role, r.Scheme)
	}); err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: wantRB.Name, Namespace: wantRB.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, rb, func() error {
		labelled(rb)
		if rb.CreationTimestamp.IsZero() {
			rb.RoleRef = wantRB.RoleRef // immutable once created
		}
		rb.Subjects = wantRB.Subjects
		return controllerutil.SetControllerReference(e, rb, r.Scheme)
	})
	return err
}

// writeDeployment creates or updates the Deployment with the given pod template and the
// desired replicas, strategy, deadline and history limit.
func (r *ExecutorReconciler) writeDeployment(ctx context.Context, e *v1alpha1.Executor, tmpl corev1.PodTemplateSpec, desired *appsv1.Deployment) error {
	obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: desired.Name, Namespace: desired.Namespace}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		if obj.Labels == nil {
			obj.Labels = map[string]string{}
		}
		for k, v := range desired.Labels {
			obj.Labels[k] = v
		}
		if obj.CreationTimestamp.IsZero() {
			obj.Spec.Selector = desired.Spec.Selector
		}
		obj.Spec.Replicas = desired.Spec.Replicas
		obj.Spec.Template = tmpl
		obj.Spec.ProgressDeadlineSeconds = desired.Spec.ProgressDeadlineSeconds
		obj.Spec.RevisionHistoryLimit = desired.Spec.RevisionHistoryLimit
		obj.Spec.Strategy = desired.Spec.Strategy
		return controllerutil.SetControllerReference(e, obj, r.Scheme)
	})
	return err
}

// pruneConfigMaps deletes the Executor's ConfigMaps that neither the desired revision, the
// Deployment nor any of its kept ReplicaSets mount.
func (r *ExecutorReconciler) pruneConfigMaps(ctx context.Context, e *v1alpha1.Executor, g *gathered) error {
	if g.live == nil {
		return nil
	}
	keep := map[string]bool{}
	if g.cm != nil {
		keep[g.cm.Name] = true
	}
	for _, n := range executor.ConfigMapsReferenced(&g.live.Spec.Template) {
		keep[n] = true
	}
	rss, err := r.replicaSets(ctx, e, g.live)
	if err != nil {
		return err
	}
	for i := range rss {
		for _, n := range executor.ConfigMapsReferenced(&rss[i].Spec.Template) {
			keep[n] = true
		}
	}
	cms, err := r.ownedConfigMaps(ctx, e)
	if err != nil {
		return err
	}
	for i := range cms {
		if !keep[cms[i].Name] {
			if err := deleteExact(ctx, r.Client, &cms[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

func controlledByUID(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == uid
}

// executorActionKind is the kind of object action a writes.
func executorActionKind(a executor.Action) string {
	switch a {
	case executor.ActionEnsureConfigMap, executor.ActionPruneConfigMaps, executor.ActionDeleteConfigMaps:
		return "ConfigMap"
	case executor.ActionAddFinalizer, executor.ActionRemoveFinalizer:
		return "Executor"
	case executor.ActionEnsureAccess, executor.ActionDeleteAccess:
		return "Role"
	case executor.ActionDeleteManagedPerformers:
		return "Performer"
	}
	return "Deployment"
}

// executorActionObject is the name of the object action a writes.
func executorActionObject(e *v1alpha1.Executor, a executor.Action, g *gathered) string {
	switch executorActionKind(a) {
	case "ConfigMap":
		if g.cm != nil {
			return g.cm.Name
		}
		return "executor-" + e.Name
	case "Executor":
		return e.Name
	case "Role":
		return executor.AccessName(e.Name)
	case "Performer":
		return v1alpha1.LabelCreatedByExecutor + "=" + e.Name
	}
	return executor.DeploymentName(e.Name)
}
