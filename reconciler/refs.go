package reconciler

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// +kubebuilder:rbac:groups="",resources=secrets;configmaps;persistentvolumeclaims,verbs=get

// checkRefs reads each referenced Secret or ConfigMap straight from the API server (the
// caches hold only our own objects) and returns failure.Problems for them: one message per
// missing object or key. Only the data keys are looked at; values are never copied out,
// logged or written anywhere (the reader does hold the Secret in memory for the call: the
// keys are not in a Secret's metadata). A PersistentVolumeClaim's status.phase is recorded in
// its Ref (Phase). Errors other than NotFound are returned.
//
// No watch on Secrets or ConfigMaps maps them to their referrers: a Secret informer (even
// metadata-only) needs list/watch on every Secret, which is RBAC that can read every Secret's
// value, and the ConfigMap informer is filtered to our own label. A referrer stalled on a
// missing reference is re-checked with its Stalled backoff instead (5s, doubling with the time
// it has been stalled, at most 5 minutes), so creating the Secret heals it without user action.
func checkRefs(ctx context.Context, reader client.Reader, refs []failure.Ref) ([]string, error) {
	for i := range refs {
		r := &refs[i]
		key := types.NamespacedName{Namespace: r.Namespace, Name: r.Name}
		r.HasKey = map[string]bool{}
		var err error
		switch r.Kind {
		case "Secret":
			var s corev1.Secret
			if err = reader.Get(ctx, key, &s); err == nil {
				for k := range s.Data {
					r.HasKey[k] = true
				}
				for k := range s.StringData {
					r.HasKey[k] = true
				}
			}
		case "PersistentVolumeClaim":
			var pvc corev1.PersistentVolumeClaim
			if err = reader.Get(ctx, key, &pvc); err == nil {
				r.Phase = string(pvc.Status.Phase)
			}
		default:
			var cm corev1.ConfigMap
			if err = reader.Get(ctx, key, &cm); err == nil {
				for k := range cm.Data {
					r.HasKey[k] = true
				}
				for k := range cm.BinaryData {
					r.HasKey[k] = true
				}
			}
		}
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return nil, err
		default:
			r.Exists = true
		}
	}
	return failure.Problems(refs), nil
}

// missingNodeLabels lists the entries of selector no node carries (hardware.MissingLabels),
// from the manager's Node cache.
func missingNodeLabels(ctx context.Context, c client.Reader, selector map[string]string) ([]string, error) {
	if len(selector) == 0 {
		return nil, nil
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return nil, err
	}
	ls := make([]map[string]string, len(nodes.Items))
	for i := range nodes.Items {
		ls[i] = nodes.Items[i].Labels
	}
	return hardware.MissingLabels(ls, selector), nil
}

// getCachedOrLive reads key from the cache, then from the API server when the cache does not
// have it (the caches hold only objects labelled as ours). found is false on NotFound.
func getCachedOrLive(ctx context.Context, c client.Client, live client.Reader, key types.NamespacedName, obj client.Object) (bool, error) {
	err := c.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		err = live.Get(ctx, key, obj)
	}
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
