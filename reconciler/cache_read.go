package reconciler

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// indexedInformer is what controller-runtime's single-scope informers are underneath
// (client-go's shared index informer).
type indexedInformer interface {
	GetIndexer() toolscache.Indexer
}

// stageJobs returns the set's stage Jobs in the Job namespace, read-only: when the cache
// exposes its informer's index they are the cache's own objects, read without the copy into
// a list a client List makes (a set over 1000 nodes has thousands of Jobs, read every pass);
// otherwise (e.g. a multi-namespace cache) from a List without deep copies. Callers must not
// modify them.
func (r *PackageSetReconciler) stageJobs(ctx context.Context, set string) ([]*batchv1.Job, error) {
	if r.Cache != nil {
		if inf, err := r.Cache.GetInformer(ctx, &batchv1.Job{}); err == nil {
			if ii, ok := inf.(indexedInformer); ok {
				if objs, err := ii.GetIndexer().ByIndex(toolscache.NamespaceIndex, r.JobNamespace); err == nil {
					out := make([]*batchv1.Job, 0, len(objs))
					for _, o := range objs {
						if j, ok := o.(*batchv1.Job); ok && j.Labels[v1alpha1.LabelPackageSet] == set {
							out = append(out, j)
						}
					}
					return out, nil
				}
			}
		}
	}
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
