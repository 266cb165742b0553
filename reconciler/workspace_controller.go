package reconciler

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
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
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// +kubebuilder:rbac:groups=gantry.dev,resources=workspaces,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=workspaces/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=gantry.dev,resources=workspaces/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=karpenter.sh,resources=nodeclaims,verbs=get;list;watch;create;delete

// WorkspaceReconciler runs KAITO's Workspace machine (internal/workspace): it owns the
// Deployment and Service workspace-<name> (inference; with spec.autoscaling the
// HorizontalPodAutoscaler workspace-<name> too) or the Job workspace-<name> (tuning), and reads
// the Nodes for the Pending-trap check.
type WorkspaceReconciler struct {
	Client    client.Client
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  record.EventRecorder

	// NodeClass is the Karpenter node class of the NodeClaims it creates for workspaces that
	// provision nodes (spec.resource.provisionNodes); zero: none configured, nothing created.
	NodeClass workspace.NodeClass

	// rejected holds the writes the API server rejected for good (errors.go).
	rejected rejections
}

// NewWorkspaceReconciler builds the reconciler from a manager's clients and event recorder.
func NewWorkspaceReconciler(mgr ctrl.Manager) *WorkspaceReconciler {
	return &WorkspaceReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorderFor(FieldManager)}
}

// SetupWithManager registers the controller. Watches: Workspaces; the Deployments, Services,
// Jobs and HorizontalPodAutoscalers they control (an autoscaler's scale changes the
// Deployment, whose pass reports the replicas); their Pods (by the gantry.dev/workspace label: Deployment pods are
// owned by a ReplicaSet, not the Workspace); and Nodes: any node event re-queues every
// Workspace that is not Ready/Succeeded, so an added node heals a stalled one without user
// action.
func (r *WorkspaceReconciler) SetupWithManager(mgr ctrl.Manager, opts controller.Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Workspace{}).
		Owns(&appsv1.Deployment{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&corev1.Service{}).
		Owns(&batchv1.Job{}).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			if n := o.GetLabels()[workspace.LabelWorkspace]; n != "" {
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: n}}}
			}
			return nil
		})).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.workspacesForNode)).
		Named("workspace").
		WithOptions(opts).
		Complete(r)
}

// workspacesForNode re-queues the Workspaces a node change may matter to: all not Ready or
// Succeeded, plus those with a pod on that node.
func (r *WorkspaceReconciler) workspacesForNode(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.WorkspaceList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, w := range list.Items {
		on := false
		for _, n := range w.Status.WorkerNodes {
			on = on || n == o.GetName()
		}
		if on || (w.Status.State != v1alpha1.WorkspaceStateReady && w.Status.State != v1alpha1.WorkspaceStateSucceeded) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: w.Namespace, Name: w.Name}})
		}
	}
	return out
}

// Reconcile is one pass on the controllers' shared skeleton (status.go): get, gather facts
// (owned objects, pods, nodes), decide (workspace.Decide), writeStatus once if it changed,
// emit the event, act.
func (r *WorkspaceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w, err := getOrForget(ctx, r.Client, req.NamespacedName, &v1alpha1.Workspace{}, func() { r.rejected.clear(req.NamespacedName, "") })
	if w == nil {
		return ctrl.Result{}, err
	}
	// gather
	g, err := r.gather(ctx, w)
	if err != nil {
		return ctrl.Result{}, err
	}
	// decide
	d, err := workspace.Decide(g.facts)
	if err != nil {
		return ctrl.Result{}, illegalTransition(r.Recorder, w, err)
	}
	// writeStatus (not when the finalizer goes: the Workspace is then going away)
	if !slices.Contains(d.Actions, workspace.ActionRemoveFinalizer) {
		if stale, err := writeStatus(ctx, r.Client, w, &w.Status, r.fullStatus(w, d, g)); err != nil {
			return ctrl.Result{}, err
		} else if stale {
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
	}
	// emit
	for _, ev := range []*workspace.Event{d.Event, d.ReleaseEvent} {
		if ev != nil {
			r.Recorder.Event(w, ev.Type, ev.Reason, ev.Message)
			log.FromContext(ctx).Info("workspace", "state", d.State, "reason", ev.Reason, "message", ev.Message)
		}
	}
	// act
	o := g.o
	o.createClaims, o.deleteClaims = d.CreateClaims, d.DeleteClaims
	if g.valid {
		o.resolved, o.selector = g.rw, g.pl.NodeSelector
	}
	if res, done, err := r.actAll(ctx, req.NamespacedName, w, d, g.facts.Rejection, o); done {
		return res, err
	}
	// Requeue (no RequeueAfter) asks for the controller's rate-limited requeue, which
	// RequeueAfter cannot express; dropping it would change the retry timing.
	after := d.RequeueAfter
	if !g.valid && w.Spec.Inference != nil && w.Spec.Inference.ModelConfig != nil && (after == 0 || after > modelConfigPoll) {
		after = modelConfigPoll // a fixed ConfigMap is seen without a watch (modelConfig)
	}
	return ctrl.Result{Requeue: d.Requeue, RequeueAfter: after}, nil //nolint:staticcheck // SA1019: Requeue keeps the rate-limited requeue (see above)
}

// wsGathered is one pass's facts plus what acting needs: the desired and observed owned
// objects, the workspace with its model preset applied (rw) and its placement; valid is
// false when the spec is invalid (facts.SpecError).
type wsGathered struct {
	facts workspace.Facts
	o     wsObjects
	rw    *v1alpha1.Workspace
	pl    hardware.Placement
	valid bool
}

// gather reads a pass's facts: the referenced ConfigMaps, Secrets and claims, the nodes, the
// owned objects of both modes, the pods and capacity, and the node provisioning facts.
func (r *WorkspaceReconciler) gather(ctx context.Context, w *v1alpha1.Workspace) (*wsGathered, error) {
	mode := workspace.ModeOf(w)
	key := types.NamespacedName{Namespace: w.Namespace, Name: workspace.ObjectName(w.Name)}
	facts := workspace.Facts{
		Now: time.Now(), Generation: w.Generation, Mode: mode, Replicas: workspace.Replicas(w), Autoscaling: autoscalingOf(w),
		Deleting: !w.DeletionTimestamp.IsZero(), HasFinalizer: controllerutil.ContainsFinalizer(w, v1alpha1.Finalizer),
		Conditions:     w.Status.Conditions,
		Rejection:      r.rejected.get(types.NamespacedName{Namespace: w.Namespace, Name: w.Name}, w.Generation),
		PodDisruptions: w.Status.PodDisruptions,
	}
	if !facts.Deleting {
		// The ConfigMap, Secret and claims the pods mount, checked before use (checkRefs); the
		// claims not bound yet are named while the scheduler waits for them.
		refs := workspace.Refs(w)
		missing, err := checkRefs(ctx, r.APIReader, refs)
		if err != nil {
			return nil, err
		}
		facts.MissingRefs, facts.UnboundClaims = missing, workspace.UnboundClaims(refs)
	}

	// Nodes: the Pending-trap check, and whether each pod's node is alive.
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	nodeReady := map[string]bool{}
	var nfacts []workspace.Node
	for i := range nodes.Items {
		nf := workspace.NodeFacts(&nodes.Items[i])
		nodeReady[nf.Name] = nf.Ready
		nfacts = append(nfacts, nf)
	}
	// rw is w with its model preset applied (workspace.Resolve): what the owned objects and
	// the capacity check are built from; status is written on w.
	// A Hugging Face model sized from a ConfigMap's config.json: read here, so the machine
	// stays pure (workspace.ResolveModel); a missing ConfigMap or key is an invalid spec too.
	cfg, specErr := r.modelConfig(ctx, w)
	if apierr := (*apiReadError)(nil); errors.As(specErr, &apierr) {
		return nil, apierr.err
	}
	rw := w.DeepCopy()
	if specErr == nil {
		rw, specErr = workspace.ResolveModel(w, cfg)
	}
	var pl hardware.Placement
	if specErr == nil {
		pl, specErr = workspace.Placement(rw)
	}
	o, specErr := desiredObjects(rw, mode, specErr)
	if specErr != nil {
		facts.SpecError = specErr.Error()
	}
	if err := r.observe(ctx, key, &o); err != nil {
		return nil, err
	}
	if mode == v1alpha1.WorkspaceModeInference || facts.Deleting {
		facts.Workload, facts.OtherWorkload = o.workloadFacts(w.UID)
		facts.Service = workspace.ServiceFacts(o.svc, o.wantSvc, w.UID)
		facts.Autoscaler, facts.AutoscalerDesired = workspace.AutoscalerFacts(o.hpa, o.wantHPA, w.UID)
	}
	if mode == v1alpha1.WorkspaceModeTuning || facts.Deleting {
		facts.Job = workspace.JobFacts(o.job, w.UID)
	}
	if err := r.podsAndCapacity(ctx, w, rw, &facts, nodeReady, nfacts, pl, specErr == nil); err != nil {
		return nil, err
	}
	facts.Namespace, facts.Name = w.Namespace, w.Name
	facts.ReleaseNodesOnSuccess = w.Spec.Tuning != nil && w.Spec.Tuning.ReleaseNodesOnSuccess
	facts.Output = workspace.TuningOutput(w)
	pv, err := r.provisioning(ctx, w, rw, specErr == nil)
	if err != nil {
		return nil, err
	}
	facts.Provisioning = pv
	return &wsGathered{facts: facts, o: o, rw: rw, pl: pl, valid: specErr == nil}, nil
}

// modelConfigPoll is how often a workspace stalled on spec.inference.modelConfig (its
// ConfigMap missing, or its config.json unreadable) reads it again: the reconciler caches
// only its own ConfigMaps, so no watch sees the user's fix.
const modelConfigPoll = 10 * time.Second

// apiReadError is a failed read of the model config ConfigMap other than NotFound: the pass
// is retried, the spec is not blamed.
type apiReadError struct{ err error }

func (e *apiReadError) Error() string { return e.err.Error() }

// modelConfig returns the bytes of spec.inference.modelConfig's ConfigMap key, nil when w has
// no modelConfig or is not a Hugging Face model without a preset (workspace.AnyModel). Errors
// name spec.inference.modelConfig (the ConfigMap or key is missing) or are *apiReadError.
func (r *WorkspaceReconciler) modelConfig(ctx context.Context, w *v1alpha1.Workspace) ([]byte, error) {
	name, key, ok := workspace.ModelConfigRef(w)
	if !ok || !workspace.AnyModel(w) || !w.DeletionTimestamp.IsZero() {
		return nil, nil
	}
	var cm corev1.ConfigMap
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: w.Namespace, Name: name}, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("spec.inference.modelConfig: ConfigMap %q not found in namespace %q; the workspace reads it again every %s", name, w.Namespace, modelConfigPoll)
		}
		return nil, &apiReadError{err}
	}
	if v, ok := cm.Data[key]; ok {
		return []byte(v), nil
	}
	if v, ok := cm.BinaryData[key]; ok {
		return v, nil
	}
	return nil, fmt.Errorf("spec.inference.modelConfig: ConfigMap %q has no key %q; the workspace reads it again every %s", name, key, modelConfigPoll)
}

// desiredObjects are the owned objects rw (w resolved) wants in mode: the Service, and the
// Job (tuning), the multi-node group's StatefulSet and headless Service, or the Deployment;
// only the Service when specErr (the spec is invalid) is not nil. err is specErr or the
// error building them.
func desiredObjects(rw *v1alpha1.Workspace, mode v1alpha1.WorkspaceMode, specErr error) (o wsObjects, err error) {
	o = wsObjects{wantSvc: workspace.DesiredService(rw)}
	if specErr != nil {
		return o, specErr
	}
	switch {
	case mode == v1alpha1.WorkspaceModeTuning:
		o.wantJob, err = workspace.DesiredJob(rw)
	case workspace.MultiNode(rw):
		o.wantSts, err = workspace.DesiredStatefulSet(rw)
		o.wantGroupSvc = workspace.DesiredGroupService(rw)
	default:
		if o.wantDeploy, err = workspace.DesiredDeployment(rw); err == nil {
			o.wantHPA, err = workspace.DesiredAutoscaler(rw)
		}
	}
	return o, err
}

// autoscalingOf is spec.autoscaling of an inference workspace (nil otherwise).
func autoscalingOf(w *v1alpha1.Workspace) *v1alpha1.Autoscaling {
	if workspace.Autoscaled(w) {
		return w.Spec.Autoscaling
	}
	return nil
}

// fullStatus is status plus the multi-node group's size and leader address and the
// decision's NodeClaims.
func (r *WorkspaceReconciler) fullStatus(w *v1alpha1.Workspace, d workspace.Decision, g *wsGathered) v1alpha1.WorkspaceStatus {
	st := r.status(w, g.facts.Mode, d, g.facts)
	st.GroupSize, st.LeaderAddress = 0, ""
	st.NodeClaims = d.NodeClaims
	if g.o.wantSts != nil {
		st.GroupSize, st.LeaderAddress = workspace.Replicas(g.rw), workspace.LeaderAddress(g.rw)
	}
	return st
}

// status computes the new status from the decision (conditions keep their lastTransitionTime
// unless their status changes; the other mode's conditions are dropped).
func (r *WorkspaceReconciler) status(w *v1alpha1.Workspace, mode v1alpha1.WorkspaceMode, d workspace.Decision, facts workspace.Facts) v1alpha1.WorkspaceStatus {
	st := *w.Status.DeepCopy()
	st.ObservedGeneration = w.Generation
	st.LastHandledReconcileAt = w.Annotations[v1alpha1.AnnotationReconcileRequestedAt]
	for _, c := range d.Conditions {
		meta.SetStatusCondition(&st.Conditions, c)
	}
	// Conditions of the other mode never linger.
	other := workspace.ConditionJobStarted
	if mode == v1alpha1.WorkspaceModeTuning {
		other = workspace.ConditionInferenceReady
	}
	meta.RemoveStatusCondition(&st.Conditions, other)
	st.State, st.Mode = d.State, mode
	st.ReadyReplicas = d.ReadyReplicas
	st.CurrentReplicas, st.DesiredReplicas = d.CurrentReplicas, d.DesiredReplicas
	st.WorkloadName = workspace.ObjectName(w.Name)
	st.Endpoint = ""
	if facts.Service.Exists && !facts.Service.Foreign {
		st.Endpoint = workspace.Endpoint(w)
	}
	var nodesUsed []string
	for _, p := range facts.Pods {
		if p.NodeName != "" && !p.Deleting && p.Disrupted == nil { // not a pod ended from outside, left behind Failed
			nodesUsed = append(nodesUsed, p.NodeName)
		}
	}
	st.WorkerNodes = workspace.UniqueSorted(nodesUsed)
	st.PodDisruptions = d.PodDisruptions
	return st
}

// actAll carries out the actions in order (actInOrder). done is true when the pass ends early:
// a conflict (requeue), a permanent rejection (recorded for the next pass: errors.go) or
// another error.
func (r *WorkspaceReconciler) actAll(ctx context.Context, key types.NamespacedName, w *v1alpha1.Workspace, d workspace.Decision, rejection *failure.Rejection, o wsObjects) (res ctrl.Result, done bool, err error) {
	act := func(a workspace.Action) error { return r.act(ctx, w, a, o) }
	describe := func(a workspace.Action, err error) *actError {
		return &actError{action: string(a), kind: workspaceActionKind(a, o.wantSts != nil), name: workspace.ObjectName(w.Name), err: err}
	}
	return actInOrder(ctx, &r.rejected, key, w, rejection, d.Actions, act, describe)
}

func (r *WorkspaceReconciler) act(ctx context.Context, w *v1alpha1.Workspace, a workspace.Action, o wsObjects) error {
	wantDeploy, wantSvc, wantJob, deploy, svc, job := o.wantDeploy, o.wantSvc, o.wantJob, o.deploy, o.svc, o.job
	switch a {
	case workspace.ActionAddFinalizer, workspace.ActionRemoveFinalizer:
		return client.IgnoreNotFound(setFinalizer(ctx, r.Client, w, a == workspace.ActionAddFinalizer))
	case workspace.ActionEnsureWorkload:
		if o.wantSts != nil {
			return r.ensureGroup(ctx, w, o)
		}
		obj := &appsv1.Deployment{}
		obj.Name, obj.Namespace = wantDeploy.Name, wantDeploy.Namespace
		_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
			obj.Labels = mergeMap(obj.Labels, wantDeploy.Labels)
			obj.Annotations = mergeMap(obj.Annotations, wantDeploy.Annotations)
			if obj.CreationTimestamp.IsZero() {
				obj.Spec.Selector = wantDeploy.Spec.Selector
			}
			// Under spec.autoscaling the live count stays as it is (the autoscaler's: never
			// taken back; the update's resourceVersion makes sure it is the current one).
			if o.resolved != nil {
				obj.Spec.Replicas = workspace.ReplicasToWrite(o.resolved, !obj.CreationTimestamp.IsZero(), obj.Spec.Replicas)
			} else {
				obj.Spec.Replicas = wantDeploy.Spec.Replicas
			}
			obj.Spec.Template = wantDeploy.Spec.Template
			return controllerutil.SetControllerReference(w, obj, r.Scheme)
		})
		return err
	case workspace.ActionEnsureService:
		obj := &corev1.Service{}
		obj.Name, obj.Namespace = wantSvc.Name, wantSvc.Namespace
		_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
			obj.Labels = mergeMap(obj.Labels, wantSvc.Labels)
			obj.Spec.Type = wantSvc.Spec.Type
			obj.Spec.Selector = wantSvc.Spec.Selector
			obj.Spec.Ports = wantSvc.Spec.Ports
			return controllerutil.SetControllerReference(w, obj, r.Scheme)
		})
		return err
	case workspace.ActionCreateJob:
		obj := wantJob.DeepCopy()
		if err := controllerutil.SetControllerReference(w, obj, r.Scheme); err != nil {
			return err
		}
		if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		return nil
	case workspace.ActionDeleteWorkload:
		if o.wantSts != nil {
			return o.deleteGroup(ctx, r.Client, w.UID)
		}
		return deleteExact(ctx, r.Client, deploy)
	case workspace.ActionDeleteOtherWorkload:
		if o.wantSts != nil {
			return deleteExact(ctx, r.Client, deploy)
		}
		return o.deleteGroup(ctx, r.Client, w.UID)
	case workspace.ActionDeleteService:
		return deleteExact(ctx, r.Client, svc)
	case workspace.ActionEnsureAutoscaler:
		return ensureAutoscaler(ctx, r.Client, r.Scheme, w, o.wantHPA)
	case workspace.ActionDeleteAutoscaler:
		return deleteExact(ctx, r.Client, o.hpa)
	case workspace.ActionDeleteJob:
		return deleteExact(ctx, r.Client, job)
	case workspace.ActionCreateNodeClaims:
		return r.createClaims(ctx, w, o)
	case workspace.ActionDeleteNodeClaims:
		for _, n := range o.deleteClaims {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(workspace.NodeClaimGVK)
			u.SetName(n)
			if err := client.IgnoreNotFound(r.Client.Delete(ctx, u)); err != nil {
				return err
			}
		}
	}
	return nil
}

// createClaims creates o.createClaims (workspace.DesiredNodeClaim of the resolved workspace)
// and emits a NodeClaimCreated event for each; one that exists already (a stale cache) is
// left as it is.
func (r *WorkspaceReconciler) createClaims(ctx context.Context, w *v1alpha1.Workspace, o wsObjects) error {
	if o.resolved == nil {
		return nil
	}
	for _, n := range o.createClaims {
		u := workspace.DesiredNodeClaim(o.resolved, n, r.NodeClass, o.selector)
		if err := r.Client.Create(ctx, u); err != nil {
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			return err
		}
		r.Recorder.Eventf(w, corev1.EventTypeNormal, "NodeClaimCreated", "created Karpenter NodeClaim %s for a %s node (node class %s)", n, o.resolved.Spec.Resource.InstanceType, r.NodeClass)
	}
	return nil
}

// provisioning gathers the node provisioning facts of w (rw: w resolved, valid when ok):
// whether it wants nodes provisioned, whether the API server serves Karpenter's NodeClaims
// (the RESTMapper's answer; a NoMatch error means Karpenter is not installed), and the claims
// labelled for it (read from the API server: NodeClaims are not cached). A workspace that does
// not want provisioning and has no claims in status costs no request.
func (r *WorkspaceReconciler) provisioning(ctx context.Context, w, rw *v1alpha1.Workspace, ok bool) (workspace.Provisioning, error) {
	var pv workspace.Provisioning
	if ok {
		pv = workspace.Provisioning{Wanted: workspace.WantsProvisioning(rw), NodeClass: r.NodeClass,
			InstanceType: rw.Spec.Resource.InstanceType, ReplicasPerNode: workspace.ReplicasPerNode(rw)}
	}
	if !pv.Wanted && len(w.Status.NodeClaims) == 0 {
		return pv, nil
	}
	if _, err := r.Client.RESTMapper().RESTMapping(workspace.NodeClaimGVK.GroupKind(), workspace.NodeClaimGVK.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return pv, nil
		}
		return pv, err
	}
	pv.Available = true
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(workspace.NodeClaimListGVK)
	if err := r.APIReader.List(ctx, list, client.MatchingLabels{workspace.LabelWorkspace: w.Name, workspace.LabelWorkspaceNamespace: w.Namespace}); err != nil {
		return pv, err
	}
	for i := range list.Items {
		pv.Claims = append(pv.Claims, workspace.ClaimFacts(&list.Items[i]))
	}
	return pv, nil
}

// wsObjects are a pass's desired and observed owned objects (nil: not wanted / absent). A
// multi-node group has wantSts and wantGroupSvc instead of wantDeploy.
type wsObjects struct {
	wantDeploy   *appsv1.Deployment
	wantSts      *appsv1.StatefulSet
	wantGroupSvc *corev1.Service
	wantSvc      *corev1.Service
	wantJob      *batchv1.Job
	wantHPA      *autoscalingv2.HorizontalPodAutoscaler
	deploy       *appsv1.Deployment
	sts          *appsv1.StatefulSet
	groupSvc     *corev1.Service
	svc          *corev1.Service
	job          *batchv1.Job
	hpa          *autoscalingv2.HorizontalPodAutoscaler
	// resolved is the workspace with its preset applied (nil when its spec is invalid);
	// createClaims and deleteClaims are the decision's NodeClaims to create and delete.
	resolved                   *v1alpha1.Workspace
	selector                   map[string]string
	createClaims, deleteClaims []string
}

// observe reads the owned objects of both modes and shapes (deletion cleans up whatever exists).
func (r *WorkspaceReconciler) observe(ctx context.Context, key types.NamespacedName, o *wsObjects) error {
	var err error
	if o.deploy, err = getOpt(ctx, r.Client, r.APIReader, key, &appsv1.Deployment{}); err != nil {
		return err
	}
	if o.sts, err = getOpt(ctx, r.Client, r.APIReader, key, &appsv1.StatefulSet{}); err != nil {
		return err
	}
	// key names the owned objects (workspace-<name>); the group's headless Service is <that>-group.
	groupKey := types.NamespacedName{Namespace: key.Namespace, Name: key.Name + "-group"}
	if o.groupSvc, err = getOpt(ctx, r.Client, r.APIReader, groupKey, &corev1.Service{}); err != nil {
		return err
	}
	if o.svc, err = getOpt(ctx, r.Client, r.APIReader, key, &corev1.Service{}); err != nil {
		return err
	}
	if o.hpa, err = getOpt(ctx, r.Client, r.APIReader, key, &autoscalingv2.HorizontalPodAutoscaler{}); err != nil {
		return err
	}
	o.job, err = getOpt(ctx, r.Client, r.APIReader, key, &batchv1.Job{})
	return err
}

// workloadFacts reads the workload of the wanted shape (the group's StatefulSet, else the
// Deployment) and whether the workspace's own workload of the other shape exists.
func (o *wsObjects) workloadFacts(uid types.UID) (*workspace.Workload, bool) {
	if o.wantSts != nil {
		return workspace.GroupFacts(o.sts, o.wantSts, o.groupSvc, uid), o.deploy != nil && controlledByUID(o.deploy, uid)
	}
	other := (o.sts != nil && controlledByUID(o.sts, uid)) || (o.groupSvc != nil && controlledByUID(o.groupSvc, uid))
	return workspace.WorkloadFacts(o.deploy, o.wantDeploy, uid), other
}

// deleteGroup deletes a multi-node group's StatefulSet and headless Service: those present
// and controlled by the workspace uid (a foreign object of the same name is left alone).
func (o *wsObjects) deleteGroup(ctx context.Context, c client.Client, uid types.UID) error {
	if o.sts != nil && controlledByUID(o.sts, uid) {
		if err := deleteExact(ctx, c, o.sts); err != nil {
			return err
		}
	}
	if o.groupSvc != nil && controlledByUID(o.groupSvc, uid) {
		return deleteExact(ctx, c, o.groupSvc)
	}
	return nil
}

// ensureGroup creates or updates a multi-node group: the headless Service first (the pods'
// stable names), then the StatefulSet (its selector, service name and pod management policy
// are immutable and set only at creation).
func (r *WorkspaceReconciler) ensureGroup(ctx context.Context, w *v1alpha1.Workspace, o wsObjects) error {
	want := o.wantGroupSvc
	gs := &corev1.Service{}
	gs.Name, gs.Namespace = want.Name, want.Namespace
	if _, err := controllerutil.CreateOrUpdate(ctx, r.Client, gs, func() error {
		gs.Labels = mergeMap(gs.Labels, want.Labels)
		if gs.CreationTimestamp.IsZero() {
			gs.Spec.ClusterIP = corev1.ClusterIPNone
		}
		gs.Spec.PublishNotReadyAddresses = true
		gs.Spec.Selector, gs.Spec.Ports = want.Spec.Selector, want.Spec.Ports
		return controllerutil.SetControllerReference(w, gs, r.Scheme)
	}); err != nil {
		return err
	}
	ws := o.wantSts
	obj := &appsv1.StatefulSet{}
	obj.Name, obj.Namespace = ws.Name, ws.Namespace
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, obj, func() error {
		obj.Labels = mergeMap(obj.Labels, ws.Labels)
		obj.Annotations = mergeMap(obj.Annotations, ws.Annotations)
		if obj.CreationTimestamp.IsZero() {
			obj.Spec.Selector, obj.Spec.ServiceName, obj.Spec.PodManagementPolicy = ws.Spec.Selector, ws.Spec.ServiceName, ws.Spec.PodManagementPolicy
		}
		obj.Spec.Replicas = ws.Spec.Replicas
		obj.Spec.Template = ws.Spec.Template
		return controllerutil.SetControllerReference(w, obj, r.Scheme)
	})
	return err
}

// getOpt reads an object from the cache, then the API server; nil when it does not exist.
func getOpt[T client.Object](ctx context.Context, c client.Client, direct client.Reader, key types.NamespacedName, obj T) (T, error) {
	var zero T
	err := c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = direct.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return zero, nil
	}
	if err != nil {
		return zero, err
	}
	return obj, nil
}

func mergeMap(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}

// workspaceActionKind is the kind of object action a writes (group: a multi-node group's
// workload is a StatefulSet).
func workspaceActionKind(a workspace.Action, group bool) string {
	switch a {
	case workspace.ActionEnsureWorkload, workspace.ActionDeleteWorkload:
		if group {
			return "StatefulSet"
		}
		return "Deployment"
	case workspace.ActionDeleteOtherWorkload:
		if group {
			return "Deployment"
		}
		return "StatefulSet"
	case workspace.ActionEnsureService, workspace.ActionDeleteService:
		return "Service"
	case workspace.ActionCreateJob, workspace.ActionDeleteJob:
		return "Job"
	case workspace.ActionCreateNodeClaims, workspace.ActionDeleteNodeClaims:
		return "NodeClaim"
	case workspace.ActionEnsureAutoscaler, workspace.ActionDeleteAutoscaler:
		return "HorizontalPodAutoscaler"
	}
	return "Workspace"
}

// podsAndCapacity adds the workspace's pods to facts and, when the spec is valid (placed),
// the capacity of the nodes for rw (w resolved): free GPUs are counted (countUsedGPUs) while
// not all replicas are bound to a node.
func (r *WorkspaceReconciler) podsAndCapacity(ctx context.Context, w, rw *v1alpha1.Workspace, facts *workspace.Facts, nodeReady map[string]bool,
	nodes []workspace.Node, pl hardware.Placement, placed bool) error {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(w.Namespace), client.MatchingLabels{workspace.LabelWorkspace: w.Name}); err != nil {
		return err
	}
	bound := int32(0)
	for i := range pods.Items {
		p := &pods.Items[i]
		facts.Pods = append(facts.Pods, workspace.PodFacts(p, nodeReady[p.Spec.NodeName]))
		if p.Spec.NodeName != "" && p.DeletionTimestamp == nil {
			bound++
		}
	}
	if !placed {
		return nil
	}
	// A MIG partition counts the profile's slices (nvidia.com/mig-<profile>), one per replica.
	res, perReplica := workspace.Accelerator(rw)
	nodes = workspace.ForAccelerator(nodes, res)
	if bound < facts.Replicas && perReplica > 0 && !facts.Deleting {
		if err := r.countUsedGPUs(ctx, w, nodes, res); err != nil {
			return err
		}
	}
	facts.Capacity = workspace.CapacityOf(nodes, pl.NodeSelector, v1alpha1.Requirements(rw.Spec.Resource.LabelSelectorExpressions), pl.Tolerations, perReplica)
	facts.Capacity.Resource = string(res)
	return nil
}

// countUsedGPUs sets each node's UsedGPU: the res (nvidia.com/gpu or a MIG profile's
// resource) requested by the non-terminated pods bound to it, the workspace's own pods left
// out (hardware.ResourceInUse). Pods other than
// the reconciler's are not cached, so it lists them from the API server (only while a
// workspace has replicas to place, at the Stalled re-check backoff).
func (r *WorkspaceReconciler) countUsedGPUs(ctx context.Context, w *v1alpha1.Workspace, nodes []workspace.Node, res corev1.ResourceName) error {
	var all corev1.PodList
	if err := r.APIReader.List(ctx, &all, client.MatchingFieldsSelector{Selector: fields.AndSelectors(
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
		fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)))}); err != nil {
		return err
	}
	used := hardware.ResourceInUse(all.Items, res, func(p *corev1.Pod) bool {
		return p.Namespace == w.Namespace && p.Labels[workspace.LabelWorkspace] == w.Name
	})
	for i := range nodes {
		nodes[i].UsedGPU = used[nodes[i].Name]
	}
	return nil
}
