package workspace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// TestKstatusAgreement: every state of both modes, as Decide writes it, computes under
// kstatus (sigs.k8s.io/cli-utils) what the provider's wait (wait.Workspace) decides
// (wait.Agreement): Ready and Succeeded are Current and end the wait; the Pending trap
// (Stalled), a crash-looping NotReady and Failed are Failed and fail it; Pending, NotReady
// and Running while work goes on are InProgress.
func TestKstatusAgreement(t *testing.T) {
	for _, c := range []struct {
		name  string
		facts Facts
		state State
		want  status.Status
	}{
		{"inference Pending", infFacts(sPending, func(f *Facts) { f.Workload = nil; f.Service = Object{}; f.Pods = nil }), sPending, status.InProgressStatus},
		{"inference Pending, trap", infFacts(sPending, func(f *Facts) {
			f.Capacity = Capacity{Selector: "nvidia.com/gpu.product=B200", GPUsPerReplica: 1, AllNodes: 7}
			f.Pods = []Pod{{Name: "p-a", Phase: corev1.PodPending, Unschedulable: "0/7 nodes are available: 7 node(s) didn't match Pod's node affinity/selector."}}
		}), sPending, status.FailedStatus},
		{"inference Pending, invalid spec", infFacts(sPending, func(f *Facts) { f.SpecError = "bad" }), sPending, status.FailedStatus},
		{"inference Ready", infFacts(sPending, nil), sReady, status.CurrentStatus},
		{"inference NotReady, node lost", infFacts(sReady, func(f *Facts) { f.Pods[1].NodeReady = false }), sNotReady, status.InProgressStatus},
		{"inference NotReady, crash", infFacts(sReady, func(f *Facts) {
			f.Pods[0] = Pod{Name: "p-a", Phase: corev1.PodRunning, NodeName: "gpu-0", NodeReady: true, WaitingReason: "CrashLoopBackOff", Terminated: "Error (exit code 137): OOMKilled"}
		}), sNotReady, status.FailedStatus},
		{"tuning Pending", tunFacts(sPending, func(f *Facts) { f.Job = nil; f.Pods = nil }), sPending, status.InProgressStatus},
		{"tuning Running", tunFacts(sRunning, nil), sRunning, status.InProgressStatus},
		{"tuning Succeeded", tunFacts(sRunning, func(f *Facts) { f.Job = &Job{Complete: true, Succeeded: 1} }), sSucceeded, status.CurrentStatus},
		{"tuning Failed", tunFacts(sRunning, func(f *Facts) {
			f.Job = &Job{Failed: true, FailedReason: "BackoffLimitExceeded", FailedMessage: "Job has reached the specified backoff limit", FailedPods: 1}
		}), sFailed, status.FailedStatus},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Decide(c.facts)
			if err != nil {
				t.Fatal(err)
			}
			if d.State != c.state {
				t.Fatalf("state %s, want %s", d.State, c.state)
			}
			w := &v1alpha1.Workspace{}
			w.APIVersion, w.Kind = v1alpha1.GroupVersion.String(), "Workspace"
			w.Name, w.Namespace, w.Generation = "x", "ns", c.facts.Generation
			w.Status = v1alpha1.WorkspaceStatus{ObservedGeneration: c.facts.Generation, State: d.State, Mode: c.facts.Mode, Conditions: d.Conditions}
			obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(w)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: obj}
			v, ks, ok, err := wait.Agreement(wait.Workspace, u)
			if err != nil || ks != c.want || !ok {
				t.Errorf("kstatus %s (want %s), wait %s (%s), agree %v, err %v; conditions %+v", ks, c.want, v.State, v.Why, ok, err, d.Conditions)
			}
			u.SetGeneration(c.facts.Generation + 1)
			if v, ks, ok, _ := wait.Agreement(wait.Workspace, u); ks != status.InProgressStatus || v.State != wait.InProgress || !ok {
				t.Errorf("stale generation: kstatus %s, wait %s", ks, v.State)
			}
		})
	}
}
