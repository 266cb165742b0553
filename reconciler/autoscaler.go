package reconciler

import (
	"context"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ensureAutoscaler creates or updates the HorizontalPodAutoscaler want (autoscale.Desired of a
// Workspace's or Performer's spec.autoscaling; nil: nothing to do) controlled by owner: its
// spec is the desired one whole, its labels and annotations are merged in.
func ensureAutoscaler(ctx context.Context, c client.Client, scheme *runtime.Scheme, owner client.Object, want *autoscalingv2.HorizontalPodAutoscaler) error {
	if want == nil {
		return nil
	}
	obj := &autoscalingv2.HorizontalPodAutoscaler{}
	obj.Name, obj.Namespace = want.Name, want.Namespace
	_, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error {
		obj.Labels = mergeMap(obj.Labels, want.Labels)
		obj.Annotations = mergeMap(obj.Annotations, want.Annotations)
		obj.Spec = *want.Spec.DeepCopy()
		return controllerutil.SetControllerReference(owner, obj, scheme)
	})
	return err
}
