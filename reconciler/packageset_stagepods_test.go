package reconciler

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// TestJobFactsByNode: what the machine reads of each stage, from stage Pods (phase, the
// failing container's exit code and last termination message line, the kubelet's pull error,
// the deadline) and from an earlier reconciler's stage Job (its conditions, its pod's failing
// container).
func TestJobFactsByNode(t *testing.T) {
	now := time.Unix(10_000, 0)
	deadline := int64(600)
	pod := func(name string, phase corev1.PodPhase, age time.Duration, mod func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age)),
			Labels: map[string]string{v1alpha1.LabelNode: "n1", v1alpha1.LabelPackageSet: "s"}},
			Spec: corev1.PodSpec{ActiveDeadlineSeconds: &deadline}, Status: corev1.PodStatus{Phase: phase}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	exited := func(p *corev1.Pod) {
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "stage", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 2, Reason: "Error", Message: "first line\napply: config file missing\n"}}}}
	}
	pulling := func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "check", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: "not found"}}}}
	}
	jobPod := pod("legacy-x7k2p", corev1.PodFailed, time.Minute, exited)
	jobPod.OwnerReferences = []metav1.OwnerReference{{Kind: "Job", Name: "legacy", Controller: ptrTo(true)}}
	legacy := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Labels: map[string]string{v1alpha1.LabelNode: "n1"}},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue,
			Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}}}}
	pods := []*corev1.Pod{
		pod("ok", corev1.PodSucceeded, time.Minute, nil),
		pod("running", corev1.PodRunning, time.Minute, nil),
		pod("failed", corev1.PodFailed, time.Minute, exited),
		pod("pull", corev1.PodPending, time.Minute, pulling),
		pod("late", corev1.PodRunning, 11*time.Minute, nil),
		pod("kubelet-deadline", corev1.PodFailed, 11*time.Minute, func(p *corev1.Pod) {
			p.Status.Reason, p.Status.Message = "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"
		}),
		jobPod,
	}
	got := jobFactsByNode([]*batchv1.Job{legacy}, pods, now)["n1"]
	want := map[string]packageset.JobFact{
		"ok":               {Succeeded: true},
		"running":          {},
		"failed":           {Failed: true, Reason: "PodFailed", Message: "container stage exited 2 (Error) apply: config file missing"},
		"pull":             {ImagePullError: true, Reason: "ImagePullFailed", Message: "ErrImagePull: not found"},
		"late":             {Failed: true, Stop: true, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline (600s)"},
		"kubelet-deadline": {Failed: true, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"},
		"legacy":           {Failed: true, Reason: "BackoffLimitExceeded", Message: "container stage exited 2 (Error) apply: config file missing"},
	}
	if len(got) != len(want) {
		t.Errorf("facts %+v, want %d", got, len(want))
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: %+v, want %+v", name, got[name], w)
		}
	}
}
