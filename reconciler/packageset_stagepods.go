package reconciler

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// Stage Pods: one Pod per stage attempt, bound to its node, in JobNamespace. Gather reads them
// (and the stage Jobs of a reconciler from before stage Pods) into per-node JobFacts; act
// creates and deletes them.

// indexedInformer is what controller-runtime's single-scope informers are underneath
// (client-go's shared index informer).
type indexedInformer interface {
	GetIndexer() toolscache.Indexer
}

// stagePods returns the set's stage Pods in the stage namespace, read-only: when the cache
// exposes its informer's index they are the cache's own objects, read without the copy into
// a list a client List makes (a set over 1000 nodes has thousands of stage Pods, read every
// pass); otherwise (e.g. a multi-namespace cache) from a List without deep copies. Callers must
// not modify them.
func (r *PackageSetReconciler) stagePods(ctx context.Context, set string) ([]*corev1.Pod, error) {
	if r.Cache != nil {
		if inf, err := r.Cache.GetInformer(ctx, &corev1.Pod{}); err == nil {
			if ii, ok := inf.(indexedInformer); ok {
				if objs, err := ii.GetIndexer().ByIndex(toolscache.NamespaceIndex, r.JobNamespace); err == nil {
					out := make([]*corev1.Pod, 0, len(objs))
					for _, o := range objs {
						if p, ok := o.(*corev1.Pod); ok && p.Labels[v1alpha1.LabelPackageSet] == set {
							out = append(out, p)
						}
					}
					return out, nil
				}
			}
		}
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(r.JobNamespace), client.MatchingLabels{v1alpha1.LabelPackageSet: set}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		out[i] = &pods.Items[i]
	}
	return out, nil
}

// legacyStageJobs returns the set's stage Jobs in the stage namespace: stages started by a
// reconciler from before stage Pods, read (read-only, from the cache) so that a stage still
// running in one after an upgrade is observed rather than started again.
func (r *PackageSetReconciler) legacyStageJobs(ctx context.Context, set string) ([]*batchv1.Job, error) {
	var jobs batchv1.JobList
	if err := r.Client.List(ctx, &jobs, client.InNamespace(r.JobNamespace), client.MatchingLabels{v1alpha1.LabelPackageSet: set}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*batchv1.Job, len(jobs.Items))
	for i := range jobs.Items {
		out[i] = &jobs.Items[i]
	}
	return out, nil
}

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

// desiredPod is the Pod js asks for (packageset.StagePod: nil when a health check left the
// spec, nothing to create), after the config ConfigMap it mounts (of the version the stage
// runs) is ensured.
func (r *PackageSetReconciler) desiredPod(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, js packageset.JobSpec) (*corev1.Pod, error) {
	pod, cfg, err := packageset.StagePod(set, node.Name, r.JobNamespace, performer.ManagedBy, js)
	if err != nil || pod == nil {
		return nil, err
	}
	if cfg != nil {
		if err := r.ensureConfigMap(ctx, set, js.Package, cfg.Name, cfg.Data); err != nil {
			return nil, fmt.Errorf("node %s package %s: config ConfigMap %s: %w", node.Name, js.Package, cfg.Name, err)
		}
	}
	return pod, nil
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
