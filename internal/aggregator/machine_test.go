package aggregator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// was spells out the conditions the machine writes for a phase (with reason), as the memory
// of the next pass.
func was(phase Phase, reason string) []metav1.Condition {
	if phase == "" {
		return nil
	}
	return conditions(Facts{Generation: 1, Secret: Owned{Exists: true, UpToDate: true}}, state{phase: phase, reason: reason, message: "m"}, false)
}

// ready is a StatefulSet of revision rev whose one pod is Ready and current.
func ready(rev string) *StatefulSet {
	return &StatefulSet{Revision: rev, Image: "img:" + rev, Generation: 2, ObservedGeneration: 2, ReadyReplicas: 1, AvailableReplicas: 1,
		UpdatedReplicas: 1, CurrentRevision: "sts-" + rev, UpdateRevision: "sts-" + rev}
}

// base is a healthy Aggregator with its finalizer, config Secret and Service up to date, and
// its StatefulSet of the desired revision r2 Ready.
func base() Facts {
	return Facts{Now: t0, Generation: 1, HasFinalizer: true, DesiredRevision: "r2",
		Secret: Owned{Exists: true, UpToDate: true}, Service: Owned{Exists: true, UpToDate: true},
		StatefulSet: ready("r2"), Pod: Pod{Exists: true, Name: "aggregator-a-0", Revision: "r2"}}
}

// invariants are what every decision must satisfy.
var invariants = []invariant.Of[Facts, Decision]{
	{Name: "four conditions in order", Fatal: true, Check: func(_ Facts, d Decision) error {
		var types []string
		for _, c := range d.Conditions {
			types = append(types, c.Type)
		}
		if want := []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled, ConditionConfigReady}; !slices.Equal(types, want) {
			return fmt.Errorf("conditions %v, want %v", types, want)
		}
		return nil
	}},
	{Name: "exactly one of Ready, Reconciling, Stalled", Check: func(_ Facts, d Decision) error {
		n := 0
		for _, c := range d.Conditions[:3] {
			if c.Status == metav1.ConditionTrue {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%d of them True", n)
		}
		return nil
	}},
	{Name: "phase derived from conditions", Check: func(_ Facts, d Decision) error {
		if p := Phases.Of(d.Conditions); p != d.Phase || p == "" {
			return fmt.Errorf("phase %q, conditions say %q", d.Phase, p)
		}
		return nil
	}},
	{Name: "no writes without finalizer, none while deleting but deletes", Check: func(f Facts, d Decision) error {
		for _, a := range d.Actions {
			write := a == ActionApplySecret || a == ActionApplyService || a == ActionApplyStatefulSet
			if write && (f.Deleting || (!f.HasFinalizer && !slices.Contains(d.Actions, ActionAddFinalizer))) {
				return fmt.Errorf("action %s with deleting=%v finalizer=%v", a, f.Deleting, f.HasFinalizer)
			}
		}
		return nil
	}},
	{Name: "finalizer removed only when nothing is left", Check: func(f Facts, d Decision) error {
		if !slices.Contains(d.Actions, ActionRemoveFinalizer) {
			return nil
		}
		if f.StatefulSet != nil && !f.StatefulSet.Foreign || f.Service.Exists && !f.Service.Foreign || f.Secret.Exists && !f.Secret.Foreign || f.Claims > 0 {
			return errors.New("removing the finalizer while owned objects exist")
		}
		return nil
	}},
	{Name: "Running only when the pod of the desired revision is ready", Check: func(f Facts, d Decision) error {
		if d.Phase != v1alpha1.AggregatorRunning {
			return nil
		}
		s := f.StatefulSet
		if s == nil || s.Revision != f.DesiredRevision || s.ReadyReplicas < 1 || f.Pod.Revision != f.DesiredRevision || len(f.Pod.Problems) > 0 {
			return fmt.Errorf("Running with statefulset %+v pod %+v", s, f.Pod)
		}
		return nil
	}},
	{Name: "a failure says why and requeues", Check: func(_ Facts, d Decision) error {
		if d.Phase == v1alpha1.AggregatorFailed && (d.Conditions[2].Message == "" || d.RequeueAfter <= 0) {
			return fmt.Errorf("Failed with message %q requeue %v", d.Conditions[2].Message, d.RequeueAfter)
		}
		return nil
	}},
}

type row struct {
	name       string
	prev       Phase
	prevReason string
	facts      func(f *Facts)
	want       Phase
	reason     string
	actions    []Action
	msg        string // a part of the Ready condition's message
}

// TestDecide: every drawn transition (package doc) and each failure, one row each.
func TestDecide(t *testing.T) {
	rows := []row{
		{"new: add the finalizer", "", "", func(f *Facts) { f.HasFinalizer = false; f.StatefulSet = nil; f.Secret, f.Service = Owned{}, Owned{} },
			v1alpha1.AggregatorPending, ReasonPending, []Action{ActionAddFinalizer}, "adding finalizer"},
		{"Pending → Creating: write the three objects", v1alpha1.AggregatorPending, ReasonPending, func(f *Facts) {
			f.StatefulSet, f.Pod = nil, Pod{}
			f.Secret, f.Service = Owned{}, Owned{}
		}, v1alpha1.AggregatorCreating, ReasonCreating, []Action{ActionApplySecret, ActionApplyService, ActionApplyStatefulSet}, "creating the statefulset"},
		{"Pending → Running: an adopted ready StatefulSet", v1alpha1.AggregatorPending, ReasonPending, nil,
			v1alpha1.AggregatorRunning, ReasonAvailable, nil, "revision r2 (image img:r2): 1/1 ready"},
		{"Creating: pod not created yet", v1alpha1.AggregatorCreating, ReasonCreating, func(f *Facts) {
			f.StatefulSet.ReadyReplicas, f.Pod = 0, Pod{}
		}, v1alpha1.AggregatorCreating, ReasonCreating, nil, "waiting for the pod to be created"},
		{"Creating: claim binding is progress", v1alpha1.AggregatorCreating, ReasonCreating, func(f *Facts) {
			f.StatefulSet.ReadyReplicas, f.Pod.Binding = 0, "0/7 nodes are available: pod has unbound immediate PersistentVolumeClaims."
		}, v1alpha1.AggregatorCreating, ReasonCreating, nil, "waiting for the volume claim to bind"},
		{"Creating → Running", v1alpha1.AggregatorCreating, ReasonCreating, nil, v1alpha1.AggregatorRunning, ReasonAvailable, nil, "1/1 ready"},
		{"Running → Updating: a new revision", v1alpha1.AggregatorRunning, ReasonAvailable, func(f *Facts) { f.DesiredRevision = "r3" },
			v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, []Action{ActionApplyStatefulSet}, "rolling out revision r3"},
		{"Running → Updating: the config Secret changed", v1alpha1.AggregatorRunning, ReasonAvailable, func(f *Facts) { f.Secret.UpToDate = false },
			v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, []Action{ActionApplySecret}, "revision r2"},
		{"Updating: old pod being replaced", v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, func(f *Facts) {
			f.Pod.Revision, f.Pod.Problems = "r1", []string{"pod aggregator-a-0: container aggregator: CrashLoopBackOff: back-off"}
			f.StatefulSet.UpdateRevision = "sts-next"
		}, v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, nil, "replacing pod of revision r1; pod aggregator-a-0: container aggregator: CrashLoopBackOff"},
		{"Updating: statefulset not observed", v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, func(f *Facts) { f.StatefulSet.ObservedGeneration = 1 },
			v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, nil, "waiting for the statefulset controller"},
		{"Updating → Running", v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, nil, v1alpha1.AggregatorRunning, ReasonAvailable, nil, "1/1 ready"},
		{"Creating → Failed: image pull, the kubelet's words", v1alpha1.AggregatorCreating, ReasonCreating, func(f *Facts) {
			f.StatefulSet.ReadyReplicas = 0
			f.Pod.Problems = []string{`pod aggregator-a-0: container aggregator: ErrImagePull: failed to pull image "nope:1"`}
		}, v1alpha1.AggregatorFailed, ReasonPodFailing, nil, `ErrImagePull: failed to pull image "nope:1"`},
		{"Updating → Failed: unschedulable, the scheduler's words", v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, func(f *Facts) {
			f.StatefulSet.ReadyReplicas, f.Pod.Unschedulable = 0, "0/7 nodes are available: 7 Insufficient cpu."
		}, v1alpha1.AggregatorFailed, ReasonUnschedulable, nil, "pod aggregator-a-0 cannot be scheduled: 0/7 nodes are available: 7 Insufficient cpu."},
		{"Running → Failed: key Secret gone", v1alpha1.AggregatorRunning, ReasonAvailable, func(f *Facts) {
			f.MissingRefs = []string{"Secret ns/keys not found"}
		}, v1alpha1.AggregatorFailed, ReasonSecretNotFound, nil, "spec.operatorKeys: Secret ns/keys not found"},
		{"Failed → Running: the kubelet's retry succeeded", v1alpha1.AggregatorFailed, ReasonPodFailing, nil, v1alpha1.AggregatorRunning, ReasonAvailable, nil, "1/1 ready"},
		{"Failed → Creating: a spec change", v1alpha1.AggregatorFailed, ReasonPodFailing, func(f *Facts) { f.DesiredRevision = "r3" },
			v1alpha1.AggregatorCreating, ReasonCreating, []Action{ActionApplyStatefulSet}, "rolling out revision r3"},
		{"Failed: foreign StatefulSet", v1alpha1.AggregatorCreating, ReasonCreating, func(f *Facts) { f.StatefulSet.Foreign = true },
			v1alpha1.AggregatorFailed, ReasonOwnershipConflict, nil, "a StatefulSet with the aggregator's name"},
		{"Failed: foreign Secret", "", "", func(f *Facts) { f.Secret = Owned{Exists: true, Foreign: true} },
			v1alpha1.AggregatorFailed, ReasonOwnershipConflict, nil, "a Secret with the aggregator's config name"},
		{"Failed: spec error", v1alpha1.AggregatorCreating, ReasonCreating, func(f *Facts) { f.SpecError, f.DesiredRevision = "resources: bad", "" },
			v1alpha1.AggregatorFailed, ReasonInvalidSpec, nil, "resources: bad"},
		{"Running → Terminating: delete everything", v1alpha1.AggregatorRunning, ReasonAvailable, func(f *Facts) { f.Deleting, f.Claims = true, 1 },
			v1alpha1.AggregatorTerminating, ReasonTerminating, []Action{ActionDeleteStatefulSet, ActionDeleteService, ActionDeleteSecret}, "deleting"},
		{"Terminating: claims after the StatefulSet", v1alpha1.AggregatorTerminating, ReasonTerminating, func(f *Facts) {
			f.Deleting, f.StatefulSet, f.Secret, f.Service, f.Claims = true, nil, Owned{}, Owned{}, 1
		}, v1alpha1.AggregatorTerminating, ReasonTerminating, []Action{ActionDeleteClaims}, "deleting"},
		{"Terminating: all gone, remove the finalizer", v1alpha1.AggregatorTerminating, ReasonTerminating, func(f *Facts) {
			f.Deleting, f.StatefulSet, f.Secret, f.Service = true, nil, Owned{}, Owned{}
		}, v1alpha1.AggregatorTerminating, ReasonTerminating, []Action{ActionRemoveFinalizer}, "removing finalizer"},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			f := base()
			f.Conditions = was(r.prev, r.prevReason)
			if r.facts != nil {
				r.facts(&f)
			}
			d, err := Decide(f)
			if err != nil {
				t.Fatal(err)
			}
			invariant.Check(t, invariants, f, d)
			if d.Phase != r.want || d.Conditions[0].Reason != r.reason || !slices.Equal(d.Actions, r.actions) {
				t.Errorf("phase %s reason %s actions %v, want %s %s %v", d.Phase, d.Conditions[0].Reason, d.Actions, r.want, r.reason, r.actions)
			}
			if !strings.Contains(d.Conditions[0].Message, r.msg) {
				t.Errorf("message %q does not say %q", d.Conditions[0].Message, r.msg)
			}
			if (r.prev != d.Phase) != (d.Event != nil) && d.Phase != v1alpha1.AggregatorFailed {
				t.Errorf("event %+v on %s → %s", d.Event, r.prev, d.Phase)
			}
		})
	}
}

// TestIllegalTransitions: anything → Pending and Terminating → anything else are refused.
func TestIllegalTransitions(t *testing.T) {
	f := base()
	f.HasFinalizer = false
	f.Conditions = was(v1alpha1.AggregatorTerminating, ReasonTerminating)
	_, err := Decide(f)
	var te *lifecycle.TransitionError
	if !errors.As(err, &te) || te.From != string(v1alpha1.AggregatorTerminating) {
		t.Fatalf("Terminating → live: err %v", err)
	}
	for _, from := range AllPhases {
		if from != v1alpha1.AggregatorPending && Transitions.Check(from, v1alpha1.AggregatorPending) == nil {
			t.Errorf("%s → Pending allowed", from)
		}
	}
}

// TestKstatus: Running is Current, Failed is Failed, every other phase InProgress, as kstatus
// and the provider's wait read them.
func TestKstatus(t *testing.T) {
	for _, c := range []struct {
		phase  Phase
		reason string
		want   status.Status
	}{
		{v1alpha1.AggregatorPending, ReasonPending, status.InProgressStatus},
		{v1alpha1.AggregatorCreating, ReasonCreating, status.InProgressStatus},
		{v1alpha1.AggregatorUpdating, ReasonUpdateInProgress, status.InProgressStatus},
		{v1alpha1.AggregatorTerminating, ReasonTerminating, status.InProgressStatus},
		{v1alpha1.AggregatorRunning, ReasonAvailable, status.CurrentStatus},
		{v1alpha1.AggregatorFailed, ReasonPodFailing, status.FailedStatus},
	} {
		a := &v1alpha1.Aggregator{}
		a.APIVersion, a.Kind = v1alpha1.GroupVersion.String(), "Aggregator"
		a.Name, a.Namespace, a.Generation = "x", "ns", 1
		a.Status = v1alpha1.AggregatorStatus{ObservedGeneration: 1, Phase: c.phase, Conditions: was(c.phase, c.reason)}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
		if err != nil {
			t.Fatal(err)
		}
		res, err := status.Compute(&unstructured.Unstructured{Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		if v, ks, ok, err := wait.Agreement(wait.Aggregator, &unstructured.Unstructured{Object: obj}); err != nil || !ok {
			t.Errorf("%v: wait %s (%s) disagrees with kstatus %s (%v)", c.phase, v.State, v.Why, ks, err)
		}
		if res.Status != c.want {
			t.Errorf("%s: kstatus %s, want %s (%s)", c.phase, res.Status, c.want, res.Message)
		}
	}
}

// world simulates an Aggregator and its objects, driven by fuzz bytes: each step carries out
// the machine's last actions, or lets the cluster or the user act.
type world struct {
	f        Facts
	actions  []Action
	gone     bool
	revision int
}

func (w *world) step(op byte) {
	f := &w.f
	switch op % 9 {
	case 0: // the controller acts
		for _, a := range w.actions {
			switch a {
			case ActionAddFinalizer:
				f.HasFinalizer = true
			case ActionApplySecret:
				f.Secret = Owned{Exists: true, UpToDate: true}
			case ActionApplyService:
				f.Service = Owned{Exists: true, UpToDate: true}
			case ActionApplyStatefulSet:
				if f.StatefulSet == nil {
					f.StatefulSet = &StatefulSet{Generation: 1}
				}
				f.StatefulSet.Revision = f.DesiredRevision
				f.StatefulSet.Generation++
			case ActionDeleteStatefulSet:
				f.StatefulSet, f.Pod = nil, Pod{}
			case ActionDeleteService:
				f.Service = Owned{}
			case ActionDeleteSecret:
				f.Secret = Owned{}
			case ActionDeleteClaims:
				f.Claims = 0
			case ActionRemoveFinalizer:
				w.gone = true
			}
		}
	case 1: // the StatefulSet controller and kubelet bring the pod up
		if s := f.StatefulSet; s != nil {
			s.ObservedGeneration, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas = s.Generation, 1, 1, 1
			s.CurrentRevision, s.UpdateRevision = s.Revision, s.Revision
			f.Pod = Pod{Exists: true, Name: "aggregator-a-0", Revision: s.Revision}
		}
	case 2: // the pod fails to start
		if f.Pod.Exists {
			f.Pod.Problems = []string{"pod aggregator-a-0: container aggregator: CrashLoopBackOff"}
			f.StatefulSet.ReadyReplicas = 0
		}
	case 3: // a spec change
		w.revision++
		f.Generation++
		f.DesiredRevision = fmt.Sprintf("r%d", w.revision)
		f.Secret.UpToDate = false
	case 4:
		f.MissingRefs = []string{"Secret ns/keys not found"}
	case 5:
		f.MissingRefs = nil
	case 6:
		f.Deleting = true
		f.Claims = 1
	case 7:
		f.Pod.Unschedulable = "0/7 nodes are available"
	case 8:
		f.Pod.Unschedulable, f.Pod.Problems = "", nil
	}
}

// FuzzDecide: no sequence of facts breaks an invariant or draws an illegal transition.
func FuzzDecide(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 3, 0, 1, 6, 0, 0, 0})
	f.Add([]byte{0, 0, 1, 2, 3, 0, 8, 1, 4, 5, 7, 8, 6, 0, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		w := &world{f: Facts{Now: t0, Generation: 1, DesiredRevision: "r0"}}
		for i, op := range ops {
			if w.gone || i > 200 {
				return
			}
			w.step(op)
			d, err := Decide(w.f)
			if err != nil {
				t.Fatalf("after ops %v: %v", ops[:i+1], err)
			}
			invariant.Check(t, invariants, w.f, d)
			for _, c := range d.Conditions {
				meta.SetStatusCondition(&w.f.Conditions, c)
			}
			w.actions = d.Actions
		}
	})
}
