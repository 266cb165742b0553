package performer

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// TestKstatus checks the status contract against kstatus itself (sigs.k8s.io/cli-utils), as
// Flux and Argo CD compute it: Running is Current, Failed is Failed, every other phase is
// InProgress (Terminating is kstatus' own Terminating, from the deletionTimestamp).
func TestKstatus(t *testing.T) {
	want := map[Phase]status.Status{
		v1alpha1.PerformerPending: status.InProgressStatus, v1alpha1.PerformerCreating: status.InProgressStatus,
		v1alpha1.PerformerScheduling: status.InProgressStatus, v1alpha1.PerformerUpgrading: status.InProgressStatus,
		v1alpha1.PerformerRunning: status.CurrentStatus, v1alpha1.PerformerFailed: status.FailedStatus,
		v1alpha1.PerformerTerminating: status.InProgressStatus,
	}
	for phase, reason := range map[Phase]string{
		v1alpha1.PerformerPending: ReasonPending, v1alpha1.PerformerCreating: ReasonCreating,
		v1alpha1.PerformerScheduling: ReasonScheduling, v1alpha1.PerformerUpgrading: ReasonUpgradeInProgress,
		v1alpha1.PerformerRunning: ReasonPodReady, v1alpha1.PerformerFailed: ReasonHardwareUnavailable,
		v1alpha1.PerformerTerminating: ReasonTerminating,
	} {
		p := &v1alpha1.Performer{Spec: v1alpha1.PerformerSpec{Image: imgA}}
		p.APIVersion, p.Kind = v1alpha1.GroupVersion.String(), "Performer"
		p.Name, p.Namespace, p.Generation = "x", "ns", 1
		p.Status = v1alpha1.PerformerStatus{ObservedGeneration: 1, Phase: phase, Conditions: was(phase, reason)}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			t.Fatal(err)
		}
		res, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		// The provider's wait reads the same verdict (wait.Agreement).
		if v, ks, ok, err := wait.Agreement(wait.Performer, &unstructured.Unstructured{Object: obj}); err != nil || !ok {
			t.Errorf("%v: wait %s (%s) disagrees with kstatus %s (%v)", p.Status.Phase, v.State, v.Why, ks, err)
		}
		if res.Status != want[phase] {
			t.Errorf("%s: kstatus %s, want %s (%s)", phase, res.Status, want[phase], res.Message)
		}
		// A status for an older generation is InProgress whatever it says.
		p.Generation = 2
		obj, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if res, _ := status.Compute(&unstructured.Unstructured{Object: obj}); res.Status != status.InProgressStatus {
			t.Errorf("%s, stale generation: kstatus %s", phase, res.Status)
		}
	}
}
