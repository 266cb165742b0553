package performer

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
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
			w.pod = &Pod{SpecHash: w.hash(), Phase: corev1.PodPending}
			w.podImage = w.image
		case ActionDeletePod:
			w.pod.Deleting = true
		}
	}
}

// step lets the world change according to op; b parameterises the change.
func (w *world) step(op, b byte, last Decision) {
	w.now = w.now.Add(time.Duration(b) * time.Second)
	switch op % 18 {
	case 0, 1, 2:
		w.apply(last)
	case 3: // scheduler binds
		if w.pod != nil {
			w.pod.NodeName = fmt.Sprintf("node-%d", b%3)
			w.pod.Scheduled = PodCondition{Status: corev1.ConditionTrue}
			w.pod.Containers = []Container{{Name: ContainerName, Waiting: &ContainerState{Reason: "ContainerCreating"}}}
		}
	case 4: // scheduler gives up for now
		if w.pod != nil && w.pod.NodeName == "" {
			msg := []string{insufficient, noMatch}[b%2]
			w.pod.Scheduled = PodCondition{Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}
		}
	case 5: // kubelet: Ready
		if w.pod != nil && w.pod.NodeName != "" {
			w.pod.Phase, w.pod.Ready = corev1.PodRunning, true
			w.pod.Containers = []Container{{Name: ContainerName}}
		}
	case 6: // kubelet: container waiting (maybe an error)
		if w.pod != nil && w.pod.NodeName != "" {
			ws := fuzzWaiting[int(b)%len(fuzzWaiting)]
			w.pod.Ready = false
			w.pod.Containers = []Container{{Name: ContainerName, Waiting: &ws, LastTerminated: &ContainerState{Reason: "Error", ExitCode: 1}}}
		}
	case 7: // kubelet: container terminated
		if w.pod != nil && w.pod.NodeName != "" {
			w.pod.Ready = false
			w.pod.Containers = []Container{{Name: ContainerName, Terminated: &ContainerState{Reason: "Error", ExitCode: int32(b % 3)}}}
		}
	case 8: // pod terminal (evicted, node lost)
		if w.pod != nil {
			w.pod.Phase, w.pod.Ready, w.pod.Reason = corev1.PodFailed, false, "Evicted"
		}
	case 9: // pod goes away (deletion finished, or deleted by someone)
		w.pod = nil
	case 10: // user: image change
		w.image = fuzzImages[int(b)%len(fuzzImages)]
		w.generation++
	case 11: // user: other spec change (env, gpuCount, ...), sometimes invalid, sometimes fixed
		w.variant = int(b % 4)
		w.specError = ""
		if b%7 == 0 {
			w.specError = "spec.scheduling.nodeSelector[\"x\"] is \"a\" but spec.hardwareRequirements.customLabels[\"x\"] requires \"b\""
		}
		w.generation++
	case 12: // user: delete the Performer (sticky)
		w.deleting = true
	case 13: // someone deletes or edits the Service
		if b%2 == 0 {
			w.svc = Service{}
		} else if w.svc.Exists && !w.svc.Foreign {
			w.svc.UpToDate = false
		}
	case 14: // someone removes the finalizer (only possible while not deleting here)
		if !w.deleting {
			w.hasFinalizer = false
		}
	case 15: // foreign objects with our names appear or disappear
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
	case 16: // the API server starts or stops rejecting our writes
		w.rejecting = !w.rejecting
	case 17: // a referenced Secret key goes missing or appears
		w.missingRefs = !w.missingRefs
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
	f.Fuzz(func(t *testing.T, data []byte) {
		w := &world{now: t0, generation: 1, image: imgA}
		var last Decision
		prevPhase := Phase("")
		for i := 0; i+1 < len(data) && !w.gone; i += 2 {
			w.step(data[i], data[i+1], last)
			if w.gone {
				break
			}
			facts := w.facts()
			d, err := Decide(facts)
			if err != nil {
				t.Fatalf("step %d: %v (facts %+v)", i/2, err, facts)
			}
			checkInvariants(t, facts, d)
			if prevPhase == "Terminating" && d.Phase != "Terminating" {
				t.Fatalf("left Terminating for %s", d.Phase)
			}
			// Thread the outputs back as the controller does.
			for _, c := range d.Conditions {
				c.LastTransitionTime = metav1.NewTime(w.now)
				meta.SetStatusCondition(&w.conds, c)
			}
			w.runningImage = d.Image
			prevPhase = d.Phase
			last = d
		}
	})
}
