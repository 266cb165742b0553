package reconciler

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

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
