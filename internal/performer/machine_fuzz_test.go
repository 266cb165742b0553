package performer

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
)

// world is a tiny simulation of a Performer, its Pod and Service, driven by fuzz bytes: each
// step either carries out the machine's last actions (as the controller would) or lets the
// cluster or the user do something (the scheduler, the kubelet, a spec change, a deletion, ...).
// The machine's outputs are threaded back as its memory (conditions with transition times as
// meta.SetStatusCondition keeps them, and status.image), exactly as the controller does.
type world struct {
	now          time.Time
	generation   int64
	deleting     bool
	hasFinalizer bool
	image        string
	variant      int
	specError    string
	pod          *Pod
	podImage     string
	svc          Service
	conds        []metav1.Condition
	runningImage string
	gone         bool
	// rejecting: the API server rejects Pod creates and Service writes (a missing
	// ServiceAccount, an invalid name); rejection is the controller's record of the last one.
	rejecting bool
	rejection *failure.Rejection
	// missingRefs: an envFrom Secret is missing.
	missingRefs bool
	// pods counts the Pods created (their UIDs); disruptions is status.podDisruptions.
	pods        int
	disruptions *v1alpha1.PodDisruptions
}

func (w *world) hash() string { return fmt.Sprintf("%s/%d", w.image, w.variant) }

func (w *world) facts() Facts {
	var pod *Pod
	if w.pod != nil {
		p := *w.pod
		p.Containers = append([]Container(nil), w.pod.Containers...)
		pod = &p
	}
	f := Facts{
		Now: w.now, Generation: w.generation, Deleting: w.deleting, HasFinalizer: w.hasFinalizer,
		Conditions: append([]metav1.Condition(nil), w.conds...), RunningImage: w.runningImage,
		DesiredImage: w.image, DesiredHash: w.hash(), SpecError: w.specError, Pod: pod, Service: w.svc,
	}
	if r := w.rejection; r != nil && r.Generation == w.generation {
		x := *r
		f.Rejection = &x
	}
	if w.missingRefs {
		f.MissingRefs = []string{"Secret ns/keys has no key token"}
	}
	f.PodDisruptions = w.disruptions
	return f
}

var fuzzImages = []string{imgA, imgB, "ghcr.io/acme/performer:3.0"}

var fuzzWaiting = []ContainerState{
	{Reason: "ContainerCreating"}, {Reason: "ErrImagePull", Message: "not found"},
	{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}, {Reason: "InvalidImageName"},
	{Reason: "CrashLoopBackOff", Message: "back-off 10s"}, {Reason: "CreateContainerConfigError", Message: `secret "k" not found`},
	{Reason: "RunContainerError"}, {Reason: "PodInitializing"},
}

// apply carries out a decision's actions on the world.
func (w *world) apply(d Decision) {
	for _, a := range d.Actions {
		if w.rejecting && (a == ActionCreatePod || a == ActionEnsureService) {
			w.rejection = &failure.Rejection{Action: string(a), Kind: "Pod", Name: "ns/performer-x", Reason: "Forbidden",
				Message: "rejected", Generation: w.generation, RetryAt: w.now.Add(5 * time.Second)}
			continue
		}
		if r := w.rejection; r != nil && r.Action == string(a) {
			w.rejection = nil // retried and accepted
		}
		switch a {
		case ActionAddFinalizer:
			w.hasFinalizer = true
		case ActionRemoveFinalizer:
			w.hasFinalizer = false
			w.gone = true
		case ActionEnsureService:
			w.svc = Service{Exists: true, UpToDate: true}
		case ActionDeleteService:
			w.svc = Service{}
		case ActionCreatePod:
			w.pods++
			w.pod = &Pod{Name: "performer-x", UID: fmt.Sprintf("uid-%d", w.pods), SpecHash: w.hash(), Phase: corev1.PodPending}
			w.podImage = w.image
		case ActionDeletePod:
			w.pod.Deleting = true
		}
	}
}

// step lets the world change by the event op picks (op modulo the number of events); b
// parameterises the change. It returns the event's name for failure messages.
func (w *world) step(op, b byte, last Decision) string {
	w.now = w.now.Add(time.Duration(b) * time.Second)
	e := worldEvents[int(op)%len(worldEvents)]
	e.do(w, b, last)
	return e.name
}

// worldEvent is one thing that can happen to the world in a fuzz step.
type worldEvent struct {
	name string
	do   func(w *world, b byte, last Decision)
}

// worldEvents are indexed by the fuzz op byte (modulo their number): keep the order, the seed
// corpus is written against it.
var worldEvents = []worldEvent{
	{"controller acts", evApply},
	{"controller acts", evApply},
	{"controller acts", evApply},
	{"scheduler binds", evBind},
	{"scheduler gives up for now", evUnschedulable},
	{"kubelet: Ready", evReady},
	{"kubelet: container waiting", evWaiting},
	{"kubelet: container terminated", evTerminated},
	{"pod terminal", evPodTerminal},
	{"pod goes away", func(w *world, _ byte, _ Decision) { w.pod = nil }},
	{"user changes the image", evImage},
	{"user changes other spec", evSpec},
	{"user deletes the Performer", func(w *world, _ byte, _ Decision) { w.deleting = true }},
	{"someone deletes or edits the Service", evService},
	{"someone removes the finalizer", evRemoveFinalizer},
	{"foreign objects come or go", evForeign},
	{"API server starts or stops rejecting", func(w *world, _ byte, _ Decision) { w.rejecting = !w.rejecting }},
	{"a referenced Secret key goes or comes", func(w *world, _ byte, _ Decision) { w.missingRefs = !w.missingRefs }},
}

func evApply(w *world, _ byte, last Decision) { w.apply(last) }

func evBind(w *world, b byte, _ Decision) {
	if w.pod != nil {
		w.pod.NodeName = fmt.Sprintf("node-%d", b%3)
		w.pod.Scheduled = PodCondition{Status: corev1.ConditionTrue}
		w.pod.Containers = []Container{{Name: ContainerName, Waiting: &ContainerState{Reason: "ContainerCreating"}}}
	}
}

func evUnschedulable(w *world, b byte, _ Decision) {
	if w.pod != nil && w.pod.NodeName == "" {
		msg := []string{insufficient, noMatch}[b%2]
		w.pod.Scheduled = PodCondition{Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}
	}
}

func evReady(w *world, _ byte, _ Decision) {
	if w.pod != nil && w.pod.NodeName != "" {
		w.pod.Phase, w.pod.Ready = corev1.PodRunning, true
		w.pod.Containers = []Container{{Name: ContainerName}}
	}
}

// evWaiting: the container waits, maybe on an error.
func evWaiting(w *world, b byte, _ Decision) {
	if w.pod != nil && w.pod.NodeName != "" {
		ws := fuzzWaiting[int(b)%len(fuzzWaiting)]
		w.pod.Ready = false
		w.pod.Containers = []Container{{Name: ContainerName, Waiting: &ws, LastTerminated: &ContainerState{Reason: "Error", ExitCode: 1}}}
	}
}

func evTerminated(w *world, b byte, _ Decision) {
	if w.pod != nil && w.pod.NodeName != "" {
		w.pod.Ready = false
		w.pod.Containers = []Container{{Name: ContainerName, Terminated: &ContainerState{Reason: "Error", ExitCode: int32(b % 3)}}}
	}
}

// evPodTerminal: evicted, preempted, node lost (ended from outside), or refused at admission
// (its own failure).
func evPodTerminal(w *world, b byte, _ Decision) {
	if w.pod == nil {
		return
	}
	w.pod.Phase, w.pod.Ready = corev1.PodFailed, false
	switch b % 3 {
	case 0:
		w.pod.Reason = "UnexpectedAdmissionError"
	default:
		w.pod.Reason = "Evicted"
		if !w.pod.Foreign {
			w.pod.Disrupted = &failure.Disruption{Pod: w.pod.Name, UID: w.pod.UID, Reason: "TerminationByKubelet", Message: "The node was low on resource: memory.", At: w.now}
		}
	}
}

func evImage(w *world, b byte, _ Decision) {
	w.image = fuzzImages[int(b)%len(fuzzImages)]
	w.generation++
}

// evSpec: another spec change (env, gpuCount, ...), sometimes invalid, sometimes fixed.
func evSpec(w *world, b byte, _ Decision) {
	w.variant = int(b % 4)
	w.specError = ""
	if b%7 == 0 {
		w.specError = "spec.scheduling.nodeSelector[\"x\"] is \"a\" but spec.hardwareRequirements.customLabels[\"x\"] requires \"b\""
	}
	w.generation++
}

func evService(w *world, b byte, _ Decision) {
	if b%2 == 0 {
		w.svc = Service{}
	} else if w.svc.Exists && !w.svc.Foreign {
		w.svc.UpToDate = false
	}
}

// evRemoveFinalizer: only possible while not deleting here.
func evRemoveFinalizer(w *world, _ byte, _ Decision) {
	if !w.deleting {
		w.hasFinalizer = false
	}
}

// evForeign: foreign objects with our names appear or disappear.
func evForeign(w *world, b byte, _ Decision) {
	switch b % 4 {
	case 0:
		if w.pod == nil {
			w.pod = &Pod{Foreign: true, Phase: corev1.PodRunning}
		}
	case 1:
		if w.pod != nil && w.pod.Foreign {
			w.pod = nil
		}
	case 2:
		if !w.svc.Exists {
			w.svc = Service{Exists: true, Foreign: true}
		}
	case 3:
		if w.svc.Foreign {
			w.svc = Service{}
		}
	}
}

// FuzzMachine feeds random fact sequences to Decide, threading its outputs back in as the
// controller does, and checks after every pass that Decide returns no error (no sequence of
// world events leads to an illegal transition) and that checkInvariants holds. It also checks
// across passes that a Performer never leaves Terminating and that Upgrading is only entered
// with an image that ran before.
func FuzzMachine(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 3, 0, 5, 0, 0, 0})                                // create → running
	f.Add([]byte{0, 0, 0, 0, 4, 0, 11, 1, 0, 0, 0, 0, 9, 0, 0, 0, 3, 0, 5, 0}) // unschedulable → fixed
	f.Add([]byte{0, 0, 0, 0, 3, 0, 5, 0, 0, 0, 10, 1, 0, 0, 9, 0, 0, 0, 3, 0, 6, 2, 5, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 0, 3, 0, 5, 0, 12, 0, 0, 0, 9, 0, 0, 0, 0, 0})
	f.Add([]byte{15, 0, 0, 0, 0, 0, 15, 1, 0, 0, 3, 0, 8, 0, 0, 0, 9, 0, 0, 0, 14, 0, 13, 0, 0, 0})
	f.Add([]byte{16, 0, 0, 0, 0, 0, 0, 3, 0, 9, 16, 0, 0, 0, 0, 0, 3, 0, 5, 0, 0, 0})   // rejected → retried → running
	f.Add([]byte{17, 0, 0, 0, 0, 0, 17, 9, 0, 0, 3, 0, 5, 0, 17, 0, 10, 1, 0, 0, 0, 0}) // missing ref → fixed; missing on upgrade
	// running → evicted five times in a row → PodDisruptedRepeatedly → running again
	f.Add([]byte{0, 0, 0, 0, 3, 0, 5, 0, 8, 1, 0, 0, 0, 0, 3, 0, 5, 0, 8, 1, 0, 0, 0, 0, 3, 0, 5, 0, 8, 1, 0, 0, 0, 0, 3, 0, 5, 0, 8, 1, 0, 0, 0, 0, 3, 0, 5, 0, 8, 1, 0, 0, 0, 0, 3, 0, 5, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		w := &world{now: t0, generation: 1, image: imgA}
		var last Decision
		prevPhase := Phase("")
		for i := 0; i+1 < len(data) && !w.gone; i += 2 {
			event := w.step(data[i], data[i+1], last)
			if w.gone {
				break
			}
			facts := w.facts()
			d, err := Decide(facts)
			if err != nil {
				t.Fatalf("step %d (%s): %v (facts %+v)", i/2, event, err, facts)
			}
			invariant.Check(t, invariants, facts, d)
			if prevPhase == "Terminating" && d.Phase != "Terminating" {
				t.Fatalf("left Terminating for %s", d.Phase)
			}
			// Thread the outputs back as the controller does.
			for _, c := range d.Conditions {
				c.LastTransitionTime = metav1.NewTime(w.now)
				meta.SetStatusCondition(&w.conds, c)
			}
			w.runningImage = d.Image
			w.disruptions = d.PodDisruptions
			prevPhase = d.Phase
			last = d
		}
	})
}
