package reconciler

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// memoryPressure is the kubelet's eviction message (pkg/kubelet/eviction).
const memoryPressure = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container performer was using 900Mi, request is 0, has larger consumption of memory."

// endPodFromOutside writes pod's status as the kubelet writes it when it ends a Pod from
// outside (through the status subresource, as kwok does): phase Failed, the containers killed
// (exit code 137), status.reason and message when reason is set, and DisruptionTarget=True with
// dtReason when set.
func (e *testEnv) endPodFromOutside(t *testing.T, key types.NamespacedName, reason, message, dtReason string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var pod corev1.Pod
		if err := e.c.Get(ctx, key, &pod); err != nil {
			return false, err
		}
		now := metav1.Now()
		pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodFailed, reason, message
		for i, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady || c.Type == corev1.ContainersReady {
				pod.Status.Conditions[i].Status, pod.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, now
			}
		}
		if dtReason != "" {
			pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: dtReason, Message: message, LastTransitionTime: now})
		}
		// Killed by the kubelet (exit 137); with neither a pod reason nor DisruptionTarget (the
		// incident: the node went away), what the kubelet writes for a container it can no
		// longer find: ContainerStatusUnknown.
		terminated := corev1.ContainerStateTerminated{ExitCode: 137, Reason: "Error", FinishedAt: now, StartedAt: now}
		if reason == "" && dtReason == "" {
			terminated.Reason, terminated.Message = "ContainerStatusUnknown", "The container could not be located when the pod was terminated"
		}
		for i := range pod.Status.ContainerStatuses {
			cs := &pod.Status.ContainerStatuses[i]
			cs.Ready, cs.State = false, corev1.ContainerState{Terminated: terminated.DeepCopy()}
		}
		err := e.c.Status().Update(ctx, &pod)
		if err != nil && !apierrors.IsConflict(err) {
			return false, err
		}
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("end pod %s from outside: %v", key.Name, err)
	}
}

// TestPerformerPodEndedFromOutside (issue 38 item 6): a performer whose Pod ends from outside
// (the kubelet's eviction under node pressure, a drain through the Eviction API, the
// Deployment's Pod ended with no reason, as in the incident of 300 performers while nodes were
// removed) waits for the replacement and says so: it is never Failed (so never Stalled: the
// provider's apply goes on) and comes back Running on a new Pod.
func TestPerformerPodEndedFromOutside(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()

	t.Run("kubelet eviction (status Failed, DisruptionTarget TerminationByKubelet)", func(t *testing.T) {
		t.Parallel()
		p := e.newPerformer("evicted", v1alpha1.PerformerSpec{Image: imageV1})
		e.create(t, p)
		oldPod := e.checkRunning(t, e.waitFor(t, p.Name, "Running", running), imageV1)
		rec := e.recordPhases(t, p.Name)

		e.endPodFromOutside(t, client.ObjectKeyFromObject(oldPod), "Evicted", memoryPressure, "TerminationByKubelet")
		got := e.waitFor(t, p.Name, "Running on a new pod", func(p *v1alpha1.Performer) bool {
			return running(p) && p.Status.PodDisruptions != nil
		})
		if newPod := e.checkRunning(t, got, imageV1); newPod.UID == oldPod.UID {
			t.Error("pod not re-created")
		}
		if slices.Contains(rec.seen(), v1alpha1.PerformerFailed) {
			t.Errorf("phases %v: a pod ended from outside failed the performer", rec.seen())
		}
		if d := got.Status.PodDisruptions; d.Count != 1 || d.LastPod != oldPod.Name || d.LastPodUID != string(oldPod.UID) || d.LastReason != "TerminationByKubelet" {
			t.Errorf("status.podDisruptions = %+v", d)
		}
		e.waitEvent(t, "Performer", p.Name, "Normal "+failure.ReasonPodDisrupted+": pod "+oldPod.Name+" ended from outside (TerminationByKubelet: "+memoryPressure)
	})

	t.Run("drain through the Eviction API", func(t *testing.T) {
		t.Parallel()
		p := e.newPerformer("drained", v1alpha1.PerformerSpec{Image: imageV1})
		e.create(t, p)
		oldPod := e.checkRunning(t, e.waitFor(t, p.Name, "Running", running), imageV1)
		rec := e.recordPhases(t, p.Name)

		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: oldPod.Name, Namespace: oldPod.Namespace}}
		if err := e.c.SubResource("eviction").Create(ctx, oldPod, ev); err != nil {
			t.Fatalf("evict %s: %v", oldPod.Name, err)
		}
		got := e.waitFor(t, p.Name, "Running on a new pod", func(p *v1alpha1.Performer) bool {
			if !running(p) {
				return false
			}
			var pod corev1.Pod
			return e.c.Get(ctx, client.ObjectKeyFromObject(oldPod), &pod) == nil && pod.UID != oldPod.UID
		})
		e.checkRunning(t, got, imageV1)
		if slices.Contains(rec.seen(), v1alpha1.PerformerFailed) {
			t.Errorf("phases %v: an evicted pod failed the performer", rec.seen())
		}
	})

	t.Run("RollingUpdate: the Deployment's pod ends Failed with no reason (the incident)", func(t *testing.T) {
		t.Parallel()
		p := e.newPerformer("rs-pod-ends", v1alpha1.PerformerSpec{Image: imageV1, Strategy: v1alpha1.PerformerRollingUpdate})
		e.create(t, p)
		got := e.waitFor(t, p.Name, "Running", running)
		oldName := got.Status.PodName
		if oldName == "" || oldName == performer.ObjectName(p.Name) {
			t.Fatalf("status.podName = %q, want the Deployment's pod", oldName)
		}
		rec := e.recordPhases(t, p.Name)

		e.endPodFromOutside(t, types.NamespacedName{Namespace: e.ns, Name: oldName}, "", "", "")
		got = e.waitFor(t, p.Name, "Running on the ReplicaSet's replacement", func(p *v1alpha1.Performer) bool {
			return running(p) && p.Status.PodName != "" && p.Status.PodName != oldName
		})
		if slices.Contains(rec.seen(), v1alpha1.PerformerFailed) {
			t.Errorf("phases %v: the Deployment's pod ended from outside failed the performer", rec.seen())
		}
		if c := condition(got, v1alpha1.ConditionStalled); c.Status != metav1.ConditionFalse {
			t.Errorf("Stalled = %+v", c)
		}
	})
}
