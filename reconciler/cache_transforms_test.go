package reconciler

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// TestCacheTransforms: stage Pods (and an earlier reconciler's stage Jobs) keep what facts() and the handlers read and lose
// their specs, annotations and managedFields; other Jobs and Pods only lose managedFields.
func TestCacheTransforms(t *testing.T) {
	del := metav1.NewTime(time.Unix(100, 0))
	meta := func(stage bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: "x", Namespace: "ns", UID: "u", ResourceVersion: "7", Generation: 2,
			CreationTimestamp: metav1.NewTime(time.Unix(50, 0)), DeletionTimestamp: &del,
			Labels:          map[string]string{"job-name": "j", v1alpha1.LabelNode: "n1"},
			Annotations:     map[string]string{"gantry.dev/config": "{}"},
			OwnerReferences: []metav1.OwnerReference{{Kind: "PackageSet", Name: "s", UID: "su"}},
			Finalizers:      []string{"batch.kubernetes.io/job-tracking"},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "m"}}}
		if stage {
			m.Labels[v1alpha1.LabelPackageSet] = "s"
		}
		return m
	}
	spec := corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "check", Image: "i", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}}

	job := &batchv1.Job{ObjectMeta: meta(true), Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}},
		Status: batchv1.JobStatus{Succeeded: 1, StartTime: &del, Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "m", LastTransitionTime: del}}}}
	out, err := transformStageJob(job)
	if err != nil {
		t.Fatal(err)
	}
	j := out.(*batchv1.Job)
	want := meta(true)
	want.Annotations, want.ManagedFields = nil, nil
	if !equality.Semantic.DeepEqual(j.ObjectMeta, want) {
		t.Errorf("job meta %+v", j.ObjectMeta)
	}
	if len(j.Spec.Template.Spec.Containers) != 0 || j.Status.StartTime != nil || j.Status.Succeeded != 1 {
		t.Errorf("job spec/status not trimmed: %+v %+v", j.Spec, j.Status)
	}
	if c := j.Status.Conditions; len(c) != 1 || c[0].Type != batchv1.JobFailed || c[0].Status != corev1.ConditionTrue || c[0].Reason != "BackoffLimitExceeded" || c[0].Message != "m" {
		t.Errorf("job conditions %+v", c)
	}

	deadline := int64(600)
	podSpec := spec
	podSpec.ActiveDeadlineSeconds = &deadline
	pod := &corev1.Pod{ObjectMeta: meta(true), Spec: podSpec, Status: corev1.PodStatus{Phase: corev1.PodFailed, PodIP: "1.2.3.4",
		Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline",
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "stage", Image: "i", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no"}}}},
		ContainerStatuses:     []corev1.ContainerStatus{{Name: "check", ImageID: "x", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "bad", StartedAt: del}}}}}}
	out, err = transformStagePod(pod)
	if err != nil {
		t.Fatal(err)
	}
	p := out.(*corev1.Pod)
	if !equality.Semantic.DeepEqual(p.ObjectMeta, want) {
		t.Errorf("pod meta %+v", p.ObjectMeta)
	}
	if p.Spec.NodeName != "n1" || *p.Spec.ActiveDeadlineSeconds != 600 || len(p.Spec.Containers) != 0 || p.Status.Phase != corev1.PodFailed || p.Status.PodIP != "" ||
		p.Status.Reason != "DeadlineExceeded" || p.Status.Message != pod.Status.Message {
		t.Errorf("pod not trimmed right: %+v %+v", p.Spec, p.Status)
	}
	wantInit := []corev1.ContainerStatus{{Name: "stage", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "no"}}}}
	wantMain := []corev1.ContainerStatus{{Name: "check", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 3, Reason: "Error", Message: "bad"}}}}
	if !equality.Semantic.DeepEqual(p.Status.InitContainerStatuses, wantInit) || !equality.Semantic.DeepEqual(p.Status.ContainerStatuses, wantMain) {
		t.Errorf("pod container statuses %+v %+v", p.Status.InitContainerStatuses, p.Status.ContainerStatuses)
	}

	// Not a stage object (a workspace's Job, a performer's Pod): whole but for managedFields.
	other := &batchv1.Job{ObjectMeta: meta(false), Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: spec}}}
	out, _ = transformStageJob(other.DeepCopy())
	wantOther := other.DeepCopy()
	wantOther.ManagedFields = nil
	if !equality.Semantic.DeepEqual(out, wantOther) {
		t.Errorf("other job changed beyond managedFields: %+v", out)
	}
	otherPod := &corev1.Pod{ObjectMeta: meta(false), Spec: spec}
	out, _ = transformStagePod(otherPod.DeepCopy())
	wantPod := otherPod.DeepCopy()
	wantPod.ManagedFields = nil
	if !equality.Semantic.DeepEqual(out, wantPod) {
		t.Errorf("other pod changed beyond managedFields: %+v", out)
	}
}
