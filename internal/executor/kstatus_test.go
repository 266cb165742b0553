package executor

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// TestKstatus checks the status contract against kstatus itself (sigs.k8s.io/cli-utils), as
// Flux and Argo CD compute it: Running is Current, Failed is Failed, a rolled-back Running
// (the spec's revision is not live) is Failed, every other phase is InProgress.
func TestKstatus(t *testing.T) {
	for _, c := range []struct {
		phase      Phase
		reason     string
		rolledBack bool
		want       status.Status
	}{
		{v1alpha1.ExecutorPending, ReasonPending, false, status.InProgressStatus},
		{v1alpha1.ExecutorCreating, ReasonCreating, false, status.InProgressStatus},
		{v1alpha1.ExecutorUpdating, ReasonUpdateInProgress, false, status.InProgressStatus},
		{v1alpha1.ExecutorScaling, ReasonScaling, false, status.InProgressStatus},
		{v1alpha1.ExecutorRollingBack, ReasonRollingBack, false, status.InProgressStatus},
		{v1alpha1.ExecutorTerminating, ReasonTerminating, false, status.InProgressStatus},
		{v1alpha1.ExecutorRunning, ReasonAvailable, false, status.CurrentStatus},
		{v1alpha1.ExecutorRunning, ReasonRolledBack, true, status.FailedStatus},
		{v1alpha1.ExecutorFailed, ReasonProgressDeadlineExceeded, false, status.FailedStatus},
	} {
		e := &v1alpha1.Executor{}
		e.APIVersion, e.Kind = v1alpha1.GroupVersion.String(), "Executor"
		e.Name, e.Namespace, e.Generation = "x", "ns", 1
		e.Status = v1alpha1.ExecutorStatus{ObservedGeneration: 1, Phase: c.phase, Conditions: was(c.phase, c.reason, c.rolledBack)}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e)
		if err != nil {
			t.Fatal(err)
		}
		res, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		// The provider's wait reads the same verdict (wait.Agreement).
		if v, ks, ok, err := wait.Agreement(wait.Executor, &unstructured.Unstructured{Object: obj}); err != nil || !ok {
			t.Errorf("%v: wait %s (%s) disagrees with kstatus %s (%v)", e.Status.Phase, v.State, v.Why, ks, err)
		}
		if res.Status != c.want {
			t.Errorf("%s/%s: kstatus %s, want %s (%s)", c.phase, c.reason, res.Status, c.want, res.Message)
		}
		e.Generation = 2
		obj, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(e)
		if res, _ := status.Compute(&unstructured.Unstructured{Object: obj}); res.Status != status.InProgressStatus {
			t.Errorf("%s, stale generation: kstatus %s", c.phase, res.Status)
		}
	}
}
