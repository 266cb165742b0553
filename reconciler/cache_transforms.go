package reconciler

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Cache transforms: what the informer caches keep of each object. A PackageSet leaves nodes ×
// stages Pods behind, and caching them whole (spec, managedFields) was most of the reconciler's
// heap at 1000 nodes. Every object loses managedFields; package set stage Jobs and Pods keep only
// what PackageSetReconciler.facts and its handlers read; other Jobs and Pods stay whole. This is
// safe because nothing updates or patches these cached objects (stage Pods are only created and
// deleted by name; drains read through the uncached API reader), so no trimmed field is written back.

// stripManagedFields is the default transform of every cached kind.
var stripManagedFields = cache.TransformStripManagedFields()

// transformStageJob trims PackageSet stage Jobs; other Jobs only lose managedFields.
func transformStageJob(in any) (any, error) {
	j, ok := in.(*batchv1.Job)
	if !ok || j.Labels[v1alpha1.LabelPackageSet] == "" {
		return stripManagedFields(in)
	}
	out := &batchv1.Job{TypeMeta: j.TypeMeta, ObjectMeta: trimMeta(&j.ObjectMeta)}
	out.Status = batchv1.JobStatus{Active: j.Status.Active, Succeeded: j.Status.Succeeded, Failed: j.Status.Failed}
	for _, c := range j.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, batchv1.JobCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return out, nil
}

// transformStagePod trims PackageSet stage Pods; other Pods only lose managedFields.
func transformStagePod(in any) (any, error) {
	p, ok := in.(*corev1.Pod)
	if !ok || p.Labels[v1alpha1.LabelPackageSet] == "" {
		return stripManagedFields(in)
	}
	out := &corev1.Pod{TypeMeta: p.TypeMeta, ObjectMeta: trimMeta(&p.ObjectMeta)}
	out.Spec.NodeName, out.Spec.ActiveDeadlineSeconds = p.Spec.NodeName, p.Spec.ActiveDeadlineSeconds
	out.Status.Phase, out.Status.Reason, out.Status.Message = p.Status.Phase, p.Status.Reason, p.Status.Message
	out.Status.InitContainerStatuses = trimContainerStatuses(p.Status.InitContainerStatuses)
	out.Status.ContainerStatuses = trimContainerStatuses(p.Status.ContainerStatuses)
	return out, nil
}

func trimMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Generation: m.Generation, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
		Labels: m.Labels, OwnerReferences: m.OwnerReferences, Finalizers: m.Finalizers}
}

// trimContainerStatuses keeps each container's name and current state (waiting reason and
// message; terminated exit code, reason and message).
func trimContainerStatuses(in []corev1.ContainerStatus) []corev1.ContainerStatus {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, len(in))
	for i, cs := range in {
		out[i].Name = cs.Name
		if w := cs.State.Waiting; w != nil {
			out[i].State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
		}
		if t := cs.State.Terminated; t != nil {
			out[i].State.Terminated = &corev1.ContainerStateTerminated{ExitCode: t.ExitCode, Reason: t.Reason, Message: t.Message}
		}
		if r := cs.State.Running; r != nil {
			out[i].State.Running = &corev1.ContainerStateRunning{}
		}
	}
	return out
}

var (
	_ toolscache.TransformFunc = transformStageJob
	_ toolscache.TransformFunc = transformStagePod
)
