package packageset

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// TestKstatusAgreement: for every summary value of a PackageSet, built as the machine writes
// it (Plan's decision for a pass of the sim in that state), kstatus (sigs.k8s.io/cli-utils,
// as kubectl wait, Flux and Argo CD compute it) and the provider's wait (wait.PackageSet)
// agree (wait.Agreement): complete is Current and ends the wait; erroring, blocked, unknown
// from an invalid spec and a quarantined version are Failed and fail it; in_progress and
// waiting (for an earlier set, or for a taint a controller removes) are InProgress and keep it
// waiting; paused, disabled and waiting on a paused set
// are held by the user: InProgress for kstatus (Ready=False, neither Reconciling nor
// Stalled: kstatus has no "held") while the wait returns at once.
func TestKstatusAgreement(t *testing.T) {
	type row struct {
		name    string
		setup   func(s *sim) // brings the sim into the state; run or passes inside
		summary Status
		want    status.Status
		state   wait.State
	}
	untilStatus := func(want Status) func(*sim) { return func(s *sim) { s.run(want) } }
	rows := []row{
		{"complete", untilStatus(v1alpha1.StatusComplete), v1alpha1.StatusComplete, status.CurrentStatus, wait.Succeeded},
		{"in_progress", func(s *sim) {}, v1alpha1.StatusInProgress, status.InProgressStatus, wait.InProgress},
		{"erroring", func(s *sim) {
			s.fail = func(j JobSpec, _ int) bool { return j.Node == "node-0" && j.Stage == conf }
			s.run(v1alpha1.StatusErroring)
		}, v1alpha1.StatusErroring, status.FailedStatus, wait.Failed},
		{"blocked", func(s *sim) {
			s.nodes["node-1"].blocked = "nvidia.com/gpu=present:NoSchedule"
			s.run(v1alpha1.StatusBlocked)
		}, v1alpha1.StatusBlocked, status.FailedStatus, wait.Failed},
		{"waiting", func(s *sim) {
			s.nodes["node-0"].gate, s.nodes["node-1"].gate = GateWaiting, GateWaiting
			s.run(v1alpha1.StatusWaiting)
		}, v1alpha1.StatusWaiting, status.InProgressStatus, wait.InProgress},
		{"waiting for a taint a controller removes", func(s *sim) {
			s.nodes["node-1"].waitFor = "example.com/driver=installing:NoSchedule"
			s.run(v1alpha1.StatusWaiting)
		}, v1alpha1.StatusWaiting, status.InProgressStatus, wait.InProgress},
		{"waiting for a paused set", func(s *sim) {
			s.nodes["node-0"].gate, s.nodes["node-1"].gate = GatePaused, GatePaused
			s.run(v1alpha1.StatusWaiting)
		}, v1alpha1.StatusWaiting, status.InProgressStatus, wait.ReturnedAtOnce},
		{"paused", func(s *sim) { s.facts.Paused = true; s.run(v1alpha1.StatusPaused) }, v1alpha1.StatusPaused, status.InProgressStatus, wait.ReturnedAtOnce},
		{"disabled", func(s *sim) { s.facts.Disabled = true; s.run(v1alpha1.StatusDisabled) }, v1alpha1.StatusDisabled, status.InProgressStatus, wait.ReturnedAtOnce},
		{"unknown (invalid spec)", func(s *sim) {
			s.facts.SpecError = "spec.nodeSelector: bad"
			s.run(v1alpha1.StatusUnknown)
		}, v1alpha1.StatusUnknown, status.FailedStatus, wait.Failed},
		{"quarantined version", func(s *sim) {
			s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
			s.run(v1alpha1.StatusComplete)
			s.facts.Wants = []Want{tool("1.1.0")}
			s.fail = func(j JobSpec, _ int) bool { return j.Version == "1.1.0" && j.Stage == upgr }
			s.run(v1alpha1.StatusErroring)
		}, v1alpha1.StatusErroring, status.FailedStatus, wait.Failed},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			s := newSim(t, 2, tool("1.0.0"))
			r.setup(s)
			d := s.pass()
			if d.Status != r.summary {
				if r.name == "in_progress" && d.Status == v1alpha1.StatusInProgress {
					// first pass: stages started
				} else {
					t.Fatalf("status %s, want %s", d.Status, r.summary)
				}
			}
			obj := packageSetObject(t, 1, d)
			v, ks, ok, err := wait.Agreement(wait.PackageSet, obj)
			if err != nil {
				t.Fatal(err)
			}
			if ks != r.want || v.State != r.state || !ok {
				t.Errorf("kstatus %s (want %s), wait %s (want %s: %s), agree %v; conditions %+v", ks, r.want, v.State, r.state, v.Why, ok, d.Conditions)
			}
			// A status about an older generation is InProgress for both.
			obj.SetGeneration(2)
			if v, ks, ok, _ := wait.Agreement(wait.PackageSet, obj); ks != status.InProgressStatus || v.State != wait.InProgress || !ok {
				t.Errorf("stale generation: kstatus %s, wait %s", ks, v.State)
			}
		})
	}
}

// TestKstatusDeleting: a deletion in progress is Terminating for kstatus and the delete wait
// keeps waiting; a failing uninstall is Stalled for the current generation, which the delete
// wait reports at once (wait.StalledWhileDeleting).
func TestKstatusDeleting(t *testing.T) {
	s := newSim(t, 2, driver("1.0.0"))
	s.run(v1alpha1.StatusComplete)
	s.facts.Deleting, s.facts.Generation = true, 2
	d := s.pass()
	obj := packageSetObject(t, 2, d)
	deleting(obj)
	if c := wait.StalledWhileDeleting(obj); c != nil {
		t.Errorf("uninstalling: stalled %+v", c)
	}
	if ks, _, _ := wait.KStatus(obj); ks != status.TerminatingStatus {
		t.Errorf("uninstalling: kstatus %s", ks)
	}
	s.fail = func(j JobSpec, _ int) bool { return j.Stage == unin }
	s.settle()
	s.pass()
	s.settle()
	d = s.pass()
	obj = packageSetObject(t, 2, d)
	deleting(obj)
	c := wait.StalledWhileDeleting(obj)
	if c == nil || c.Reason != ReasonUninstallFailed {
		t.Fatalf("failing uninstall: stalled %+v; conditions %+v", c, d.Conditions)
	}
	// Written before the deletion (an older generation): not the deletion's verdict.
	obj.SetGeneration(3)
	if c := wait.StalledWhileDeleting(obj); c != nil {
		t.Errorf("stale generation: stalled %+v", c)
	}
}

func deleting(obj *unstructured.Unstructured) {
	obj.Object["metadata"].(map[string]interface{})["deletionTimestamp"] = "2026-01-01T00:00:00Z"
	obj.SetFinalizers([]string{v1alpha1.Finalizer})
}

// packageSetObject is a PackageSet of generation gen whose status is what the controller
// writes for decision d (conditions, summary, observed generation).
func packageSetObject(t *testing.T, gen int64, d Decision) *unstructured.Unstructured {
	t.Helper()
	ps := &v1alpha1.PackageSet{}
	ps.APIVersion, ps.Kind = v1alpha1.GroupVersion.String(), "PackageSet"
	ps.Name, ps.Generation = "gpu-drivers", gen
	ps.Status = v1alpha1.PackageSetStatus{ObservedGeneration: gen, Status: d.Status, Conditions: d.Conditions, CompleteNodes: d.CompleteNodes}
	for i := range ps.Status.Conditions {
		ps.Status.Conditions[i].ObservedGeneration = gen
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ps)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: obj}
}
