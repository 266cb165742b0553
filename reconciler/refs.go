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

// checkRefs reads each referenced Secret or ConfigMap from the API server (the caches hold only
// our own objects) and returns one failure.Problems message per missing object or key, recording
// a PersistentVolumeClaim's status.phase in its Ref. Only keys are looked at; values are never
// copied, logged or written. Errors other than NotFound are returned. There is no Secret watch
// (it would need RBAC to read every Secret): a referrer stalled on a missing reference is
// re-checked on its Stalled backoff (5s doubling, at most 5 minutes), so creating it heals it.
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
