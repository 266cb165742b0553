package failure

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var disruptedAt = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// runningPod is a Ready Pod with one running container (restartPolicy Always, as a
// performer's, an executor's or an inference workspace's); mods change it in order.
func runningPod(mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "performer-x", Namespace: "ns", UID: types.UID("uid-1"), CreationTimestamp: metav1.NewTime(disruptedAt.Add(-time.Hour))},
		Spec:       corev1.PodSpec{NodeName: "gpu-0", RestartPolicy: corev1.RestartPolicyAlways},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(disruptedAt.Add(-time.Hour))}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "performer", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// failedPod: phase Failed, not Ready, the container ended with exit code (reason) at disruptedAt.
func failedPod(exit int32, reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(disruptedAt)}
		p.Status.ContainerStatuses[0].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: reason, FinishedAt: metav1.NewTime(disruptedAt)}}
	}
}

func target(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(disruptedAt.Add(-time.Second))})
	}
}

func statusReason(reason, msg string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Reason, p.Status.Message = reason, msg }
}

func deleting(p *corev1.Pod) {
	grace := int64(30)
	ts := metav1.NewTime(disruptedAt.Add(30 * time.Second))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &grace
}

// TestEndedFromOutside: every way a Pod ends from outside is told from the Pod's own
// failure, with the cluster's reason and words.
func TestEndedFromOutside(t *testing.T) {
	type want struct {
		outside bool
		reason  string
		message string
		at      time.Time
	}
	dt := disruptedAt.Add(-time.Second) // the DisruptionTarget condition's lastTransitionTime
	tests := []struct {
		name string
		pod  *corev1.Pod
		want want
	}{
		// The DisruptionTarget condition's reasons (Kubernetes ≥ 1.26), on an ended or a deleted Pod.
		{"Eviction API (a drain), being deleted", runningPod(deleting, target("EvictionByEvictionAPI", "Eviction API: evicting")),
			want{true, "EvictionByEvictionAPI", "Eviction API: evicting", dt}},
		{"scheduler preemption, being deleted", runningPod(deleting, target("PreemptionByScheduler", "Scheduler: preempting to accommodate a higher priority pod")),
			want{true, "PreemptionByScheduler", "Scheduler: preempting to accommodate a higher priority pod", dt}},
		{"taint manager (NoExecute taint), being deleted", runningPod(deleting, target("DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")),
			want{true, "DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint", dt}},
		{"Pod GC (node gone), Failed", runningPod(failedPod(137, "ContainerStatusUnknown"), target("EvictionByPodGC", "PodGC: node no longer exists")),
			want{true, "EvictionByPodGC", "PodGC: node no longer exists", dt}},
		{"kubelet eviction under node pressure: exit 137 with DisruptionTarget is outside", runningPod(failedPod(137, "Error"),
			statusReason("Evicted", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi."),
			target("TerminationByKubelet", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi.")),
			want{true, "TerminationByKubelet", "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi.", dt}},
		{"kubelet: condition and status messages differ, both kept", runningPod(failedPod(137, "Error"), statusReason("Terminated", "Pod was terminated in response to imminent node shutdown."),
			target("TerminationByKubelet", "Kubelet: node shutdown")),
			want{true, "TerminationByKubelet", "Kubelet: node shutdown; Pod was terminated in response to imminent node shutdown.", dt}},
		// status.reason without the condition (older clusters, kwok).
		{"Evicted", runningPod(failedPod(137, "Error"), statusReason("Evicted", "The node had condition: [DiskPressure].")),
			want{true, "Evicted", "The node had condition: [DiskPressure].", disruptedAt}},
		{"Shutdown", runningPod(failedPod(143, "Error"), statusReason("Shutdown", "Pod was terminated in response to imminent node shutdown.")),
			want{true, "Shutdown", "Pod was terminated in response to imminent node shutdown.", disruptedAt}},
		{"NodeShutdown", runningPod(failedPod(143, "Error"), statusReason("NodeShutdown", "Pod was rejected as the node is shutting down.")),
			want{true, "NodeShutdown", "Pod was rejected as the node is shutting down.", disruptedAt}},
		{"Terminated (graceful node shutdown)", runningPod(failedPod(137, "Error"), statusReason("Terminated", "Pod was terminated in response to imminent node shutdown.")),
			want{true, "Terminated", "Pod was terminated in response to imminent node shutdown.", disruptedAt}},
		{"NodeLost", runningPod(failedPod(0, "Completed"), statusReason("NodeLost", "Node gpu-0 which was running pod performer-x is unresponsive")),
			want{true, "NodeLost", "Node gpu-0 which was running pod performer-x is unresponsive", disruptedAt}},
		{"Preempting (kubelet, for a critical pod)", runningPod(failedPod(137, "Error"), statusReason("Preempting", "Preempted in order to admit critical pod")),
			want{true, "Preempting", "Preempted in order to admit critical pod", disruptedAt}},
		// Ended with nothing said: not the container's doing.
		{"Failed, no reason, the container lost with the node (the incident)", runningPod(failedPod(137, "ContainerStatusUnknown")),
			want{true, DisruptionNoContainerFailure, "the pod ended with no reason given and none of its containers failed", disruptedAt}},
		{"Succeeded though its containers are always restarted", runningPod(failedPod(0, "Completed"), func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			want{true, DisruptionNoContainerFailure, "the pod ended with no reason given and none of its containers failed", disruptedAt}},
		{"deleted by someone (kubectl delete pod)", runningPod(deleting),
			want{true, DisruptionDeleted, "the pod is being deleted", disruptedAt}},
		{"deleted and its container killed by the deletion (exit 143)", runningPod(failedPod(143, "Error"), deleting),
			want{true, DisruptionDeleted, "the pod is being deleted", disruptedAt}},
		// The Pod's own failures.
		{"UnexpectedAdmissionError is the Pod's own (the device manager refused it)", runningPod(failedPod(0, ""),
			statusReason("UnexpectedAdmissionError", "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected")),
			want{}},
		{"UnexpectedAdmissionError while being deleted is still its own", runningPod(failedPod(0, ""), deleting, statusReason("UnexpectedAdmissionError", "x")),
			want{}},
		{"OutOfnvidia.com/gpu at admission", runningPod(failedPod(0, ""), statusReason("OutOfnvidia.com/gpu", "Node didn't have enough resource: nvidia.com/gpu")), want{}},
		{"DeadlineExceeded", runningPod(failedPod(137, "Error"), statusReason("DeadlineExceeded", "Pod was active on the node longer than the specified deadline")), want{}},
		{"the container exited 1 (Error)", runningPod(failedPod(1, "Error")), want{}},
		{"the container was OOMKilled (exit 137 without DisruptionTarget)", runningPod(failedPod(137, "OOMKilled")), want{}},
		{"an init container failed", runningPod(failedPod(0, "Completed"), func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}
		}), want{}},
		{"crash looping (running) is not ended", runningPod(func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		}), want{}},
		// Not ended.
		{"running", runningPod(), want{}},
		{"running with DisruptionTarget but neither deleted nor ended", runningPod(target("EvictionByEvictionAPI", "Eviction API: evicting")), want{}},
		{"a run-to-completion Pod that Succeeded", runningPod(failedPod(0, "Completed"), func(p *corev1.Pod) {
			p.Spec.RestartPolicy, p.Status.Phase = corev1.RestartPolicyNever, corev1.PodSucceeded
		}), want{}},
		{"nil", nil, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := EndedFromOutside(tt.pod)
			w := tt.want
			if ok != w.outside {
				t.Fatalf("outside = %v (%+v), want %v", ok, d, w.outside)
			}
			if !ok {
				if d != (Disruption{}) {
					t.Errorf("not outside, yet %+v", d)
				}
				return
			}
			if d.Reason != w.reason || d.Message != w.message || !d.At.Equal(w.at) || d.Pod != "performer-x" || d.UID != "uid-1" {
				t.Errorf("got %+v, want reason %q message %q at %v", d, w.reason, w.message, w.at)
			}
		})
	}
}

// TestEndedAt: the time a disruption is counted at, best source first.
func TestEndedAt(t *testing.T) {
	created := disruptedAt.Add(-time.Hour)
	pending := runningPod(func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Conditions, p.Status.ContainerStatuses = nil, nil
	})
	if got := endedAt(pending); !got.Equal(created) {
		t.Errorf("nothing else known: %v, want the creation %v", got, created)
	}
	notReady := runningPod(func(p *corev1.Pod) {
		p.Status.ContainerStatuses = nil
		p.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(disruptedAt)}
	})
	if got := endedAt(notReady); !got.Equal(disruptedAt) {
		t.Errorf("not Ready since: %v", got)
	}
	if got := endedAt(runningPod(deleting)); !got.Equal(disruptedAt) {
		t.Errorf("deletion asked at: %v, want the deletionTimestamp less the grace period", got)
	}
}

func disruption(pod, uid string, at time.Time) Disruption {
	return Disruption{Pod: pod, UID: uid, Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", At: at}
}

// TestCountDisruptions: each Pod counts once, within the window; a late one starts a new count;
// the record passed in is never changed.
func TestCountDisruptions(t *testing.T) {
	now := disruptedAt
	a := disruption("p-a", "uid-a", now.Add(-3*time.Minute))
	b := disruption("p-b", "uid-b", now.Add(-2*time.Minute))
	c := disruption("p-c", "uid-c", now.Add(-time.Minute))

	rec := CountDisruptions(nil, []Disruption{c, a, b}, now) // counted in the order they ended
	if rec == nil || rec.Count != 3 || !rec.Since.Time.Equal(a.At) || !rec.LastAt.Time.Equal(c.At) || rec.LastPod != "p-c" || rec.LastPodUID != "uid-c" ||
		rec.LastReason != "EvictionByEvictionAPI" || rec.LastMessage != "Eviction API: evicting" {
		t.Fatalf("first count = %+v", rec)
	}
	if again := CountDisruptions(rec, []Disruption{a, b, c}, now.Add(time.Minute)); again != rec {
		t.Errorf("the same pods seen again changed the record: %+v", again)
	}
	if none := CountDisruptions(nil, nil, now); none != nil {
		t.Errorf("nothing seen: %+v", none)
	}
	if old := CountDisruptions(nil, []Disruption{disruption("p-old", "uid-old", now.Add(-11*time.Minute))}, now); old != nil {
		t.Errorf("a pod that ended before the window counted: %+v", old)
	}
	// The same Pod seen again with a later time (deleted after it ended) is not counted twice.
	moved := c
	moved.At = now
	if again := CountDisruptions(rec, []Disruption{moved}, now); again != rec {
		t.Errorf("the last pod counted twice: %+v", again)
	}
	d := disruption("p-d", "uid-d", now)
	four := CountDisruptions(rec, []Disruption{a, b, c, d}, now)
	if four.Count != 4 || four.LastPod != "p-d" || rec.Count != 3 {
		t.Errorf("fourth: %+v (input now %+v)", four, rec)
	}
	if !DisruptedRepeatedly(four, 1, now) || DisruptedRepeatedly(rec, 1, now) || DisruptedRepeatedly(four, 2, now) {
		t.Errorf("bound: 4 > 3 for one replica, 3 is not, 4 is not for two replicas (bound 6)")
	}
	if DisruptedRepeatedly(four, 1, now.Add(DisruptionWindow+time.Second)) || DisruptedRepeatedly(nil, 1, now) {
		t.Errorf("the stall lasts %s after the last pod", DisruptionWindow)
	}
	// More than the window after Since: a new count.
	e := disruption("p-e", "uid-e", a.At.Add(DisruptionWindow+time.Minute))
	fresh := CountDisruptions(four, []Disruption{e}, e.At)
	if fresh.Count != 1 || !fresh.Since.Time.Equal(e.At) || fresh.LastPod != "p-e" {
		t.Errorf("new window: %+v", fresh)
	}
}

func TestDisruptionMessages(t *testing.T) {
	d := disruption("performer-x", "uid-1", disruptedAt)
	rec := CountDisruptions(nil, []Disruption{d}, disruptedAt)
	if got, want := WaitingMessage(d, rec, 1), "pod performer-x ended from outside (EvictionByEvictionAPI: Eviction API: evicting); waiting for its replacement (1 of at most 3 pods ended from outside within 10m0s)"; got != want {
		t.Errorf("WaitingMessage = %q, want %q", got, want)
	}
	other := disruption("performer-y", "uid-2", disruptedAt)
	if got := WaitingMessage(other, rec, 1); strings.Contains(got, "of at most") {
		t.Errorf("a pod the record did not count is given a count: %q", got)
	}
	rec.Count = 4
	if got, want := RepeatedMessage(rec, 2), "4 pods ended from outside within 10m0s, more than the 6 (3 per replica) waited through; the last: pod performer-x ended from outside (EvictionByEvictionAPI: Eviction API: evicting)"; !strings.HasPrefix(got, want) {
		t.Errorf("RepeatedMessage = %q, want it to start with %q", got, want)
	}
	if got := (Disruption{Pod: "p", Reason: DisruptionDeleted}).Describe(); got != "pod p ended from outside (Deleted)" {
		t.Errorf("Describe without a message = %q", got)
	}
	if DisruptionBound(0) != 3 || DisruptionBound(4) != 12 {
		t.Errorf("DisruptionBound: %d, %d", DisruptionBound(0), DisruptionBound(4))
	}
}
