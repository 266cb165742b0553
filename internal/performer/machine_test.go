package performer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/failure"
	"github.com/gantry-dev/terraform-provider-gantry/internal/invariant"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

const (
	imgA  = "ghcr.io/acme/performer:1.0"
	imgB  = "ghcr.io/acme/performer:2.0"
	hashA = "hash-a"
	hashB = "hash-b"

	insufficient = "0/7 nodes are available: 3 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector. preemption: 0/7 nodes are available: 3 No preemption victims found for incoming pod, 4 Preemption is not helpful for scheduling."
	noMatch      = "0/7 nodes are available: 7 node(s) didn't match Pod's node affinity/selector. preemption: 0/7 nodes are available: 7 Preemption is not helpful for scheduling."
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// was returns the conditions the machine writes for a phase with the given active reason, as
// the previous pass's memory.
func was(phase Phase, reason string) []metav1.Condition {
	return wasMsg(phase, reason, "previous")
}

func wasMsg(phase Phase, reason, msg string) []metav1.Condition {
	c := conditions(Facts{Generation: 1}, state{phase, reason, msg})
	for i := range c {
		c[i].LastTransitionTime = metav1.NewTime(t0)
	}
	return c
}

var (
	wasPending     = was(v1alpha1.PerformerPending, ReasonPending)
	wasCreating    = was(v1alpha1.PerformerCreating, ReasonCreating)
	wasScheduling  = was(v1alpha1.PerformerScheduling, ReasonScheduling)
	wasRunning     = was(v1alpha1.PerformerRunning, ReasonPodReady)
	wasUpgrading   = was(v1alpha1.PerformerUpgrading, ReasonUpgradeInProgress)
	wasFailed      = was(v1alpha1.PerformerFailed, ReasonHardwareUnavailable)
	wasTerminating = was(v1alpha1.PerformerTerminating, ReasonTerminating)
)

// Pod builders: a Pod of spec hash h in various states.
func podNew(h string) *Pod { return &Pod{SpecHash: h, Phase: corev1.PodPending} }

func podUnschedulable(h, msg string) *Pod {
	p := podNew(h)
	p.Scheduled = PodCondition{Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg}
	return p
}

func podBound(h string, waiting ...string) *Pod {
	p := podNew(h)
	p.NodeName = "gantry-gpu-2"
	p.Scheduled = PodCondition{Status: corev1.ConditionTrue}
	c := Container{Name: ContainerName}
	if len(waiting) == 2 {
		c.Waiting = &ContainerState{Reason: waiting[0], Message: waiting[1]}
	}
	p.Containers = []Container{c}
	return p
}

func podReady(h string) *Pod {
	p := podBound(h)
	p.Phase = corev1.PodRunning
	p.Ready = true
	return p
}

func podDeleting(p *Pod) *Pod { p.Deleting = true; return p }

var (
	svcOK      = Service{Exists: true, UpToDate: true}
	svcMissing = Service{}
)

func acts(a ...Action) []Action { return a }

func rejection(a Action, retryAt time.Time) *failure.Rejection {
	kind := "Pod"
	msg := `pods "performer-x" is forbidden: error looking up service account ns/sa: serviceaccount "sa" not found`
	if a == ActionEnsureService {
		kind, msg = "Service", `Service "performer-x" is invalid: metadata.name: Invalid value: "performer-x.y": a DNS-1035 label must consist of lower case alphanumeric characters or '-'`
	}
	return &failure.Rejection{Action: string(a), Kind: kind, Name: "ns/performer-x", Reason: "Forbidden", Message: msg, Generation: 2, RetryAt: retryAt}
}

func TestDecide(t *testing.T) {
	type want struct {
		phase   Phase
		reason  string // the active condition's reason
		msg     string // substring of the active condition's message
		actions []Action
		image   string
		requeue time.Duration
		upgrade bool
		event   string // "", Normal or Warning
	}
	base := func(conds []metav1.Condition, pod *Pod, svc Service) Facts {
		return Facts{
			Now: t0.Add(10 * time.Second), Generation: 2, HasFinalizer: true, Conditions: conds,
			DesiredImage: imgA, DesiredHash: hashA, Pod: pod, Service: svc,
		}
	}
	with := func(f Facts, mod func(*Facts)) Facts { mod(&f); return f }
	crash := podBound(hashA, "CrashLoopBackOff", "back-off 10s restarting failed container=performer pod=performer-x_ns(uid)")
	crash.Containers[0].LastTerminated = &ContainerState{Reason: "Error", ExitCode: 1}
	exited := podBound(hashA)
	exited.Containers[0].Terminated = &ContainerState{Reason: "Error", ExitCode: 2, Message: "panic: no config"}
	// A Pod that failed on its own: the kubelet refused it at admission (a Pod ended from
	// outside, e.g. evicted, is waited for instead: disruption_test.go).
	rejectedPod := podReady(hashA)
	rejectedPod.Phase, rejectedPod.Ready, rejectedPod.Reason, rejectedPod.Message = corev1.PodFailed, false, "UnexpectedAdmissionError", "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu, which is unexpected"

	tests := []struct {
		name string
		f    Facts
		want want
	}{
		// Hourglass: [*] → Pending → Creating, in one pass: the finalizer first, then service and pod.
		{"[*] → Creating: finalizer first, then service and pod, in one pass",
			with(base(nil, nil, svcMissing), func(f *Facts) { f.HasFinalizer = false }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, msg: "creating the pod", actions: acts(ActionAddFinalizer, ActionEnsureService, ActionCreatePod), event: "Normal"}},
		{"Pending (written by an earlier reconciler) → Creating: finalizer, service and pod",
			with(base(wasPending, nil, svcMissing), func(f *Facts) { f.HasFinalizer = false }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, actions: acts(ActionAddFinalizer, ActionEnsureService, ActionCreatePod), event: "Normal"}},
		{"[*] → Failed: pod name taken by a foreign pod; the finalizer still goes on first",
			with(base(nil, &Pod{Foreign: true}, svcMissing), func(f *Facts) { f.HasFinalizer = false }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonOwnershipConflict, msg: "Pod", actions: acts(ActionAddFinalizer, ActionEnsureService), requeue: BackoffMin, event: "Warning"}},
		{"[*] → Failed: invalid spec; the finalizer goes on, nothing is created",
			with(base(nil, nil, svcMissing), func(f *Facts) { f.HasFinalizer = false; f.SpecError = "spec.scheduling.nodeSelector conflict" }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonInvalidSpec, actions: acts(ActionAddFinalizer), requeue: BackoffMin, event: "Warning"}},
		{"Pending → Creating: service, then pod",
			base(wasPending, nil, svcMissing),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, actions: acts(ActionEnsureService, ActionCreatePod), event: "Normal"}},
		// Hourglass: Creating → PodCreation → Scheduling → NodeSelection → ... → Running.
		{"Creating → Scheduling: pod submitted to the scheduler",
			base(wasCreating, podNew(hashA), svcOK),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "waiting for the scheduler", event: "Normal"}},
		{"Scheduling → Scheduling: bound, image pulling (ImagePull/ContainerStart sub-states)",
			base(wasScheduling, podBound(hashA, "ContainerCreating", ""), svcOK),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "bound to node gantry-gpu-2"}},
		{"Scheduling → Scheduling: pod Ready, service being created (ServiceCreation)",
			base(wasScheduling, podReady(hashA), svcMissing),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "creating the service", actions: acts(ActionEnsureService)}},
		{"Scheduling → Running: pod Ready and service ready",
			base(wasScheduling, podReady(hashA), svcOK),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, msg: "gantry-gpu-2", image: imgA, event: "Normal"}},
		{"Creating → Running: intermediate states not observed",
			base(wasCreating, podReady(hashA), svcOK),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA, event: "Normal"}},
		{"Pending → Running: an existing pod adopted",
			base(wasPending, podReady(hashA), svcOK),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA, event: "Normal"}},
		// Hourglass: NodeSelection | HardwareValidation | ImagePull | ContainerStart → Failed.
		{"Scheduling → Failed: HardwareValidation (Insufficient nvidia.com/gpu), scheduler message verbatim",
			base(wasScheduling, podUnschedulable(hashA, insufficient), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonHardwareUnavailable, msg: insufficient, requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: NodeSelection (no node matches)",
			base(wasScheduling, podUnschedulable(hashA, noMatch), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonSchedulingFailed, msg: noMatch, requeue: BackoffMin, event: "Warning"}},
		{"Creating → Failed: unschedulable seen on the first look",
			base(wasCreating, podUnschedulable(hashA, insufficient), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonHardwareUnavailable, requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ImagePull (ErrImagePull)",
			base(wasScheduling, podBound(hashA, "ErrImagePull", `failed to pull and unpack image "ghcr.io/acme/performer:1.0": not found`), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonImagePullFailed, msg: `container performer: ErrImagePull: failed to pull and unpack image "ghcr.io/acme/performer:1.0": not found`, requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ImagePull (ImagePullBackOff)",
			base(wasScheduling, podBound(hashA, "ImagePullBackOff", `Back-off pulling image "ghcr.io/acme/performer:1.0"`), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonImagePullFailed, msg: `Back-off pulling image "ghcr.io/acme/performer:1.0"`, requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ImagePull (InvalidImageName)",
			base(wasScheduling, podBound(hashA, "InvalidImageName", `Failed to apply default image tag "Bad//Name": couldn't parse image name`), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonImagePullFailed, msg: "couldn't parse image name", requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ContainerStart (CrashLoopBackOff, last exit shown)",
			base(wasScheduling, crash, svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonContainerStartFailed, msg: "CrashLoopBackOff: back-off 10s restarting failed container=performer pod=performer-x_ns(uid); last terminated: Error (exit code 1)", requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ContainerStart (CreateContainerConfigError)",
			base(wasScheduling, podBound(hashA, "CreateContainerConfigError", `secret "avs-keys" not found`), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonContainerStartFailed, msg: `CreateContainerConfigError: secret "avs-keys" not found`, requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ContainerStart (RunContainerError)",
			base(wasScheduling, podBound(hashA, "RunContainerError", "exec: \"/performer\": no such file"), svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonContainerStartFailed, msg: "RunContainerError", requeue: BackoffMin, event: "Warning"}},
		{"Scheduling → Failed: ContainerStart (terminated with error)",
			base(wasScheduling, exited, svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonContainerStartFailed, msg: "container performer terminated: Error (exit code 2): panic: no config", requeue: BackoffMin, event: "Warning"}},
		{"Failed → Failed: still unschedulable, backoff grows with time failed, no new event",
			with(base(wasFailed, podUnschedulable(hashA, insufficient), svcOK), func(f *Facts) {
				f.Now = t0.Add(40 * time.Second)
				f.Conditions = wasMsg(v1alpha1.PerformerFailed, ReasonHardwareUnavailable, insufficient)
			}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonHardwareUnavailable, requeue: 40 * time.Second}},
		{"Failed → Failed: a different failure is a new Warning event",
			with(base(wasFailed, podUnschedulable(hashA, noMatch), svcOK), func(f *Facts) {
				f.Conditions = wasMsg(v1alpha1.PerformerFailed, ReasonHardwareUnavailable, insufficient)
			}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonSchedulingFailed, requeue: 10 * time.Second, event: "Warning"}},
		{"Failed → Failed: backoff capped",
			with(base(wasFailed, podUnschedulable(hashA, insufficient), svcOK), func(f *Facts) { f.Now = t0.Add(time.Hour) }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonHardwareUnavailable, requeue: BackoffMax, event: "Warning"}},
		// Hourglass: Failed → Creating (retry with backoff).
		{"Failed → Creating: spec fixed (gpuCount lowered): delete the unschedulable pod",
			with(base(wasFailed, podUnschedulable(hashA, insufficient), svcOK), func(f *Facts) { f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, actions: acts(ActionDeletePod), event: "Normal"}},
		{"Failed → Creating: terminal pod deleted, re-create",
			base(wasFailed, nil, svcOK),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, actions: acts(ActionCreatePod), event: "Normal"}},
		{"Failed → Scheduling: the scheduler's own retry placed the pod",
			base(wasFailed, podBound(hashA, "ContainerCreating", ""), svcOK),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, event: "Normal"}},
		{"Failed → Running: the kubelet's own retry pulled the image",
			base(wasFailed, podReady(hashA), svcOK),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA, event: "Normal"}},
		{"Failed → Failed: terminal pod (PodFailed) is deleted to be re-created",
			base(wasFailed, rejectedPod, svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodFailed, msg: "pod Failed: UnexpectedAdmissionError: Allocate failed due to no healthy devices present", actions: acts(ActionDeletePod), requeue: 10 * time.Second, event: "Warning"}},
		// Running steady state and losses.
		{"Running → Running: nothing to do",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA}},
		{"Running → Running: finalizer removed by someone is put back",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) { f.RunningImage = imgA; f.HasFinalizer = false }),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA, actions: acts(ActionAddFinalizer)}},
		{"Running → Creating: pod lost, re-create",
			with(base(wasRunning, nil, svcOK), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, image: imgA, actions: acts(ActionCreatePod), event: "Normal"}},
		{"Running → Scheduling: service lost, re-create it",
			with(base(wasRunning, podReady(hashA), svcMissing), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, image: imgA, actions: acts(ActionEnsureService), event: "Normal"}},
		{"Running → Scheduling: service out of date (grpcPort changed)",
			with(base(wasRunning, podReady(hashA), Service{Exists: true}), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, image: imgA, msg: "updating the service", actions: acts(ActionEnsureService), event: "Normal"}},
		{"Running → Failed: the container crashes",
			with(base(wasRunning, crash, svcOK), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonContainerStartFailed, image: imgA, requeue: BackoffMin, event: "Warning"}},
		{"Running → Failed: pod refused at admission (UnexpectedAdmissionError), delete it to re-create",
			with(base(wasRunning, rejectedPod, svcOK), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonPodFailed, image: imgA, actions: acts(ActionDeletePod), requeue: BackoffMin, event: "Warning"}},
		// Hourglass: Running → Upgrading → PodRecreation → Running.
		{"Running → Upgrading: image changed, delete the old pod",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, msg: "upgrading from " + imgA + " to " + imgB, image: imgA, actions: acts(ActionDeletePod), event: "Normal"}},
		{"Running → Upgrading: env-only change (same image, new spec hash)",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA, actions: acts(ActionDeletePod), event: "Normal"}},
		{"Upgrading → Upgrading: old pod terminating",
			with(base(wasUpgrading, podDeleting(podReady(hashA)), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA, requeue: WaitPoll}},
		{"Upgrading → Upgrading: PodRecreation (no pod: create, not Creating)",
			with(base(wasUpgrading, nil, svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA, actions: acts(ActionCreatePod)}},
		// spec.strategy RollingUpdate: a one-replica Deployment carries the spec.
		{"RollingUpdate: Pending → Creating creates the deployment, not a pod",
			with(base(nil, nil, svcMissing), func(f *Facts) { f.HasFinalizer = true; f.RollingUpdate = true }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, msg: "creating the deployment", actions: acts(ActionEnsureService, ActionApplyDeployment), event: "Normal"}},
		{"RollingUpdate: Running → Upgrading updates the deployment and deletes no pod",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) {
				f.RollingUpdate, f.RunningImage, f.DesiredImage, f.DesiredHash = true, imgA, imgB, hashB
				f.Pod, f.Deployment = nil, &Deployment{SpecHash: hashA}
			}),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, msg: "the running one serves until it is Ready", image: imgA, actions: acts(ActionApplyDeployment), event: "Normal"}},
		{"RollingUpdate: Upgrading while the new pod is not Ready (the old one serves)",
			with(base(wasUpgrading, podBound(hashB, "ContainerCreating", ""), svcOK), func(f *Facts) {
				f.RollingUpdate, f.RunningImage, f.DesiredImage, f.DesiredHash = true, imgA, imgB, hashB
				f.Deployment = &Deployment{SpecHash: hashB}
			}),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA}},
		{"RollingUpdate: Upgrading → Running once the new pod is Ready",
			with(base(wasUpgrading, podReady(hashB), svcOK), func(f *Facts) {
				f.RollingUpdate, f.RunningImage, f.DesiredImage, f.DesiredHash = true, imgA, imgB, hashB
				f.Deployment = &Deployment{SpecHash: hashB}
			}),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgB, upgrade: true, event: "Normal"}},
		{"RollingUpdate: the new pod cannot pull its image → Failed with the kubelet's words (old pod still serves)",
			with(base(wasUpgrading, podBound(hashB, "ErrImagePull", "pull access denied"), svcOK), func(f *Facts) {
				f.RollingUpdate, f.RunningImage, f.DesiredImage, f.DesiredHash = true, imgA, imgB, hashB
				f.Deployment = &Deployment{SpecHash: hashB}
			}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonImagePullFailed, msg: "pull access denied", image: imgA, requeue: BackoffMin, event: "Warning"}},
		{"RollingUpdate: from Recreate, the bare pod goes once the deployment's pod is Ready",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) {
				f.RollingUpdate, f.RunningImage, f.BarePod = true, imgA, true
				f.Deployment = &Deployment{SpecHash: hashA}
			}),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA, actions: acts(ActionDeletePod)}},
		{"RollingUpdate: a foreign deployment of that name fails the performer",
			with(base(wasCreating, nil, svcOK), func(f *Facts) { f.RollingUpdate, f.Deployment = true, &Deployment{Foreign: true} }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonOwnershipConflict, msg: "Deployment", requeue: BackoffMin, event: "Warning"}},
		{"back to Recreate: the deployment is deleted, a bare pod created",
			with(base(wasRunning, nil, svcOK), func(f *Facts) { f.RunningImage = imgA; f.Deployment = &Deployment{SpecHash: hashA} }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, image: imgA, actions: acts(ActionDeleteDeployment, ActionCreatePod), event: "Normal"}},
		{"RollingUpdate: Terminating deletes the service and the deployment",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) {
				f.Deleting, f.RollingUpdate, f.Deployment = true, true, &Deployment{SpecHash: hashA}
			}),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, msg: "deleting the service and deployment", image: "", actions: acts(ActionDeleteService, ActionDeleteDeployment), requeue: WaitPoll, event: "Normal"}},
		{"Upgrading → Upgrading: env-only upgrade stays Upgrading while no pod exists",
			with(base(wasUpgrading, nil, svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA, actions: acts(ActionCreatePod)}},
		{"Upgrading → Upgrading: new pod scheduling",
			with(base(wasUpgrading, podBound(hashB, "ContainerCreating", ""), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA}},
		{"Upgrading → Running: new pod Ready, status.image is the new image",
			with(base(wasUpgrading, podReady(hashB), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgB, upgrade: true, event: "Normal"}},
		{"Upgrading → Failed: the new image cannot be pulled",
			with(base(wasUpgrading, podBound(hashB, "ImagePullBackOff", `Back-off pulling image "`+imgB+`"`), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonImagePullFailed, image: imgA, requeue: BackoffMin, event: "Warning"}},
		{"Failed → Upgrading: a failed upgrade retried with a fixed image",
			with(base(wasFailed, podBound(hashB, "ImagePullBackOff", "x"), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = "hash-c" }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA, actions: acts(ActionDeletePod), event: "Normal"}},
		{"Failed → Upgrading: a failed upgrade reverted to the running image",
			with(base(wasFailed, podBound(hashB, "ImagePullBackOff", "x"), svcOK), func(f *Facts) { f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerUpgrading, reason: ReasonUpgradeInProgress, image: imgA, actions: acts(ActionDeletePod), event: "Normal"}},
		{"Failed → Running: a failed upgrade whose image became pullable finishes the upgrade",
			with(base(wasFailed, podReady(hashB), svcOK), func(f *Facts) { f.RunningImage = imgA; f.DesiredImage = imgB; f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgB, upgrade: true, event: "Normal"}},
		{"Scheduling → Creating: spec changed before the first pod ran",
			with(base(wasScheduling, podNew(hashA), svcOK), func(f *Facts) { f.DesiredHash = hashB }),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, actions: acts(ActionDeletePod), event: "Normal"}},
		{"Creating → Creating: waiting for a deleted pod to go",
			base(wasCreating, podDeleting(podNew(hashB)), svcOK),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, requeue: WaitPoll}},
		// Hourglass: Running → Terminating → ServiceCleanup → PodCleanup → [*].
		{"Running → Terminating: delete service, then pod",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) { f.Deleting = true; f.RunningImage = imgA }),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, image: imgA, actions: acts(ActionDeleteService, ActionDeletePod), requeue: WaitPoll, event: "Normal"}},
		{"Terminating → Terminating: waiting for the pod to go",
			with(base(wasTerminating, podDeleting(podReady(hashA)), svcMissing), func(f *Facts) { f.Deleting = true }),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, msg: "deleting the pod", requeue: WaitPoll}},
		{"Terminating → [*]: all gone, remove the finalizer",
			with(base(wasTerminating, nil, svcMissing), func(f *Facts) { f.Deleting = true }),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, actions: acts(ActionRemoveFinalizer)}},
		{"Pending → Terminating: deleted before anything was created",
			with(base(wasPending, nil, svcMissing), func(f *Facts) { f.Deleting = true }),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, actions: acts(ActionRemoveFinalizer), event: "Normal"}},
		{"Failed → Terminating: foreign objects are left alone",
			with(base(wasFailed, &Pod{Foreign: true}, Service{Exists: true, Foreign: true}), func(f *Facts) { f.Deleting = true }),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, actions: acts(ActionRemoveFinalizer), event: "Normal"}},
		{"Terminating without finalizer: nothing to do",
			with(base(wasTerminating, nil, svcMissing), func(f *Facts) { f.Deleting = true; f.HasFinalizer = false }),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating}},
		// Failures of our own making.
		{"Creating → Failed: spec cannot be honoured (InvalidSpec), nothing created",
			with(base(wasCreating, nil, svcMissing), func(f *Facts) {
				f.SpecError = `spec.scheduling.nodeSelector["nvidia.com/gpu.product"] is "A" but spec.hardwareRequirements.gpuType requires "B"`
			}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonInvalidSpec, msg: "gpuType requires", requeue: BackoffMin, event: "Warning"}},
		{"Pending → Failed: pod name taken by a foreign pod",
			base(wasPending, &Pod{Foreign: true}, svcOK),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonOwnershipConflict, msg: "Pod", requeue: BackoffMin, event: "Warning"}},
		{"Creating → Failed: service name taken by a foreign service",
			base(wasCreating, nil, Service{Exists: true, Foreign: true}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonOwnershipConflict, msg: "Service", requeue: BackoffMin, event: "Warning"}},

		// Writes the API server rejected (failure.Rejection): Stalled with its message; the
		// rejected action waits for RetryAt, then is tried again.
		{"Creating → Failed: the pod create was rejected; create withheld until RetryAt",
			with(base(wasCreating, nil, svcOK), func(f *Facts) { f.Rejection = rejection(ActionCreatePod, f.Now.Add(20*time.Second)) }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonRejected, msg: `creating Pod ns/performer-x was rejected (Forbidden): pods "performer-x" is forbidden: error looking up service account`, requeue: 20 * time.Second, event: "Warning"}},
		{"Failed (rejected) → Failed: RetryAt passed: the pod create is tried again, still Stalled until it succeeds",
			with(base(wasMsg(v1alpha1.PerformerFailed, ReasonRejected, "x"), nil, svcOK), func(f *Facts) { f.Rejection = rejection(ActionCreatePod, f.Now.Add(-time.Second)) }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonRejected, msg: "was rejected", actions: acts(ActionCreatePod), requeue: 10 * time.Second, event: "Warning"}},
		{"Creating → Failed: the service write was rejected; the pod is still created",
			with(base(wasCreating, nil, svcMissing), func(f *Facts) { f.Rejection = rejection(ActionEnsureService, f.Now.Add(5*time.Second)) }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonRejected, msg: "writing Service", actions: acts(ActionCreatePod), requeue: BackoffMin, event: "Warning"}},
		{"a rejection of an action no longer wanted is ignored (the pod exists now)",
			with(base(wasScheduling, podBound(hashA), svcOK), func(f *Facts) { f.Rejection = rejection(ActionCreatePod, f.Now.Add(time.Minute)) }),
			want{phase: v1alpha1.PerformerScheduling, reason: ReasonScheduling, msg: "waiting for it to become Ready"}},
		{"Terminating ignores a rejection",
			with(base(wasCreating, nil, svcMissing), func(f *Facts) {
				f.Deleting = true
				f.Rejection = rejection(ActionCreatePod, f.Now.Add(time.Minute))
			}),
			want{phase: v1alpha1.PerformerTerminating, reason: ReasonTerminating, actions: acts(ActionRemoveFinalizer), event: "Normal"}},
		// Referenced Secrets/ConfigMaps checked before use.
		{"Creating → Failed: an envFrom Secret key is missing; no pod is created",
			with(base(wasCreating, nil, svcOK), func(f *Facts) { f.MissingRefs = []string{"Secret ns/keys has no key token"} }),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonReferenceNotFound, msg: "spec.envFrom: Secret ns/keys has no key token", requeue: BackoffMin, event: "Warning"}},
		{"Running with a missing ref and a new spec: Failed, the running pod is not deleted",
			with(base(wasRunning, podReady(hashB), svcOK), func(f *Facts) {
				f.RunningImage = imgA
				f.MissingRefs = []string{"ConfigMap ns/cfg not found"}
			}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonReferenceNotFound, msg: "ConfigMap ns/cfg not found", image: imgA, requeue: BackoffMin, event: "Warning"}},
		{"Running with a missing ref and an unchanged pod: stays Running",
			with(base(wasRunning, podReady(hashA), svcOK), func(f *Facts) {
				f.RunningImage = imgA
				f.MissingRefs = []string{"ConfigMap ns/cfg not found"}
			}),
			want{phase: v1alpha1.PerformerRunning, reason: ReasonPodReady, image: imgA}},
		{"Failed (ReferenceNotFound) → Creating once the refs exist",
			base(wasMsg(v1alpha1.PerformerFailed, ReasonReferenceNotFound, "x"), nil, svcOK),
			want{phase: v1alpha1.PerformerCreating, reason: ReasonCreating, actions: acts(ActionCreatePod), event: "Normal"}},
		// A TEE type no node offers: the scheduler's message plus the label no node has.
		{"Scheduling → Failed: unschedulable, and no node has the TEE label",
			with(base(wasScheduling, podUnschedulable(hashA, noMatch), svcOK), func(f *Facts) {
				f.MissingNodeLabels = []string{"feature.node.kubernetes.io/cpu-security.sgx.enabled=true (TEE type sgx)"}
			}),
			want{phase: v1alpha1.PerformerFailed, reason: ReasonSchedulingFailed, msg: "; no node has the label feature.node.kubernetes.io/cpu-security.sgx.enabled=true (TEE type sgx)", requeue: BackoffMin, event: "Warning"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.f)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			w := tt.want
			if d.Phase != w.phase {
				t.Errorf("phase = %s, want %s", d.Phase, w.phase)
			}
			active := activeCondition(d.Conditions)
			if active.Reason != w.reason {
				t.Errorf("reason = %s, want %s (message %q)", active.Reason, w.reason, active.Message)
			}
			if !strings.Contains(active.Message, w.msg) {
				t.Errorf("message = %q, want it to contain %q", active.Message, w.msg)
			}
			if !reflect.DeepEqual(d.Actions, w.actions) {
				t.Errorf("actions = %v, want %v", d.Actions, w.actions)
			}
			if d.Image != w.image {
				t.Errorf("image = %q, want %q", d.Image, w.image)
			}
			if d.RequeueAfter != w.requeue {
				t.Errorf("requeueAfter = %v, want %v", d.RequeueAfter, w.requeue)
			}
			if d.Backoff != (w.phase == v1alpha1.PerformerFailed) {
				t.Errorf("backoff = %v", d.Backoff)
			}
			if d.UpgradeFinished != w.upgrade {
				t.Errorf("upgradeFinished = %v, want %v", d.UpgradeFinished, w.upgrade)
			}
			switch {
			case w.event == "" && d.Event != nil:
				t.Errorf("unexpected event %+v", *d.Event)
			case w.event != "" && (d.Event == nil || d.Event.Type != w.event):
				t.Errorf("event = %+v, want type %s", d.Event, w.event)
			case d.Event != nil && (d.Event.Reason != active.Reason || d.Event.Message != active.Message):
				t.Errorf("event %+v does not carry the active condition %s/%q", *d.Event, active.Reason, active.Message)
			}
			invariant.Check(t, invariants, tt.f, d)
		})
	}
}

func activeCondition(conds []metav1.Condition) metav1.Condition {
	for _, c := range conds[:3] {
		if c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return metav1.Condition{}
}

func TestDecideScheduledAndServiceConditions(t *testing.T) {
	f := Facts{Generation: 3, HasFinalizer: true, Conditions: wasScheduling, DesiredImage: imgA, DesiredHash: hashA,
		Pod: podUnschedulable(hashA, insufficient), Service: Service{Exists: true}}
	d, err := Decide(f)
	if err != nil {
		t.Fatal(err)
	}
	byType := map[string]metav1.Condition{}
	for _, c := range d.Conditions {
		byType[c.Type] = c
	}
	if c := byType[ConditionScheduled]; c.Status != metav1.ConditionFalse || c.Reason != ReasonHardwareUnavailable || c.Message != insufficient {
		t.Errorf("Scheduled = %+v", c)
	}
	if c := byType[ConditionServiceReady]; c.Status != metav1.ConditionFalse || c.Reason != ReasonServiceOutOfDate {
		t.Errorf("ServiceReady = %+v", c)
	}
	f.Pod, f.Service = podReady(hashA), svcOK
	d, _ = Decide(f)
	byType = map[string]metav1.Condition{}
	for _, c := range d.Conditions {
		byType[c.Type] = c
	}
	if c := byType[ConditionScheduled]; c.Status != metav1.ConditionTrue || c.Reason != ReasonScheduled || !strings.Contains(c.Message, "gantry-gpu-2") {
		t.Errorf("Scheduled = %+v", c)
	}
	if c := byType[ConditionServiceReady]; c.Status != metav1.ConditionTrue || c.Reason != ReasonServiceReady {
		t.Errorf("ServiceReady = %+v", c)
	}
}

// TestIllegalTransitions: transitions outside the lifecycle are typed errors, both from
// CheckTransition and from Decide fed conditions the machine could not have written.
func TestIllegalTransitions(t *testing.T) {
	illegal := []struct{ from, to Phase }{
		{v1alpha1.PerformerTerminating, v1alpha1.PerformerRunning},
		{v1alpha1.PerformerTerminating, v1alpha1.PerformerCreating},
		{v1alpha1.PerformerRunning, v1alpha1.PerformerPending},
		{v1alpha1.PerformerFailed, v1alpha1.PerformerPending},
		{v1alpha1.PerformerUpgrading, v1alpha1.PerformerCreating},
		{v1alpha1.PerformerUpgrading, v1alpha1.PerformerScheduling},
		{v1alpha1.PerformerUpgrading, v1alpha1.PerformerPending},
		{v1alpha1.PerformerPending, v1alpha1.PerformerUpgrading},
	}
	for _, tt := range illegal {
		err := Transitions.Check(tt.from, tt.to)
		var te *lifecycle.TransitionError
		if !errors.As(err, &te) || te.From != string(tt.from) || te.To != string(tt.to) {
			t.Errorf("Transitions.Check(%s, %s) = %v, want a *lifecycle.TransitionError", tt.from, tt.to, err)
		}
	}
	for _, from := range append([]Phase{""}, allPhases...) {
		if err := Transitions.Check(from, from); from != "" && err != nil {
			t.Errorf("self transition %s rejected: %v", from, err)
		}
	}
	// A Performer cannot leave Terminating: conditions saying Terminating on an object without
	// a deletionTimestamp (written by someone else) are rejected, not acted upon.
	_, err := Decide(Facts{Generation: 1, HasFinalizer: true, Conditions: wasTerminating, DesiredImage: imgA, DesiredHash: hashA, Pod: podReady(hashA), Service: svcOK})
	var te *lifecycle.TransitionError
	if !errors.As(err, &te) || te.From != string(v1alpha1.PerformerTerminating) || te.To != string(v1alpha1.PerformerRunning) {
		t.Fatalf("Decide from Terminating = %v, want a *lifecycle.TransitionError Terminating → Running", err)
	}
}

func TestPhaseOf(t *testing.T) {
	for _, p := range allPhases {
		reason := map[Phase]string{
			v1alpha1.PerformerPending: ReasonPending, v1alpha1.PerformerCreating: ReasonCreating,
			v1alpha1.PerformerScheduling: ReasonScheduling, v1alpha1.PerformerRunning: ReasonPodReady,
			v1alpha1.PerformerUpgrading: ReasonUpgradeInProgress, v1alpha1.PerformerFailed: ReasonImagePullFailed,
			v1alpha1.PerformerTerminating: ReasonTerminating,
		}[p]
		if got := Phases.Of(was(p, reason)); got != p {
			t.Errorf("Phases.Of(%s conditions) = %s", p, got)
		}
	}
	if got := Phases.Of(nil); got != "" {
		t.Errorf("Phases.Of(nil) = %s", got)
	}
}

// invariants are the machine's invariants, in the order they are checked (later ones may rely
// on earlier ones, e.g. on there being exactly five conditions):
//
//  1. Conditions are exactly Ready, Reconciling, Stalled, Scheduled, ServiceReady, in order,
//     each with ObservedGeneration = Generation and a valid reason (metav1.Condition's pattern).
//  2. Exactly one of Ready, Reconciling, Stalled is True; Ready=True iff Running; Stalled=True
//     iff Failed; the phase is Phases.Of(conditions); the active condition has a message.
//  3. Terminating iff the Performer is being deleted. Pending is never decided: the first pass
//     goes straight on to Creating (or further). Whenever the finalizer is missing and the
//     Performer is not being deleted, AddFinalizer is the first action, so nothing is created
//     or changed before the finalizer is on.
//  4. Actions make sense: no duplicates; CreatePod only when no Pod exists; DeletePod only on
//     our Pod that is not already going; CreatePod and DeletePod never together; DeleteService
//     and RemoveFinalizer only when deleting, RemoveFinalizer last and only when our Pod and
//     Service are gone; AddFinalizer, EnsureService and CreatePod never when deleting.
//  5. Running means our Pod of the current spec hash is Ready and the Service is up to date,
//     and status.image is spec.image. status.image changes only then. Upgrading needs a
//     previously running image. UpgradeFinished only with Running.
//  6. Failed always backs off within [BackoffMin, BackoffMax]; nothing else is a backoff.
//  7. A phase change always carries an Event; Warning iff Failed.
//  8. A Pod ended from outside is never a PodFailed failure; PodDisruptedRepeatedly only
//     beyond the bound (failure.DisruptedRepeatedly of the new status.podDisruptions).
var invariants = []invariant.Of[Facts, Decision]{
	{Name: "conditions in order", Fatal: true, Check: invConditionsInOrder},
	{Name: "one of Ready/Reconciling/Stalled", Fatal: true, Check: invOneActive},
	{Name: "Ready iff Running, Stalled iff Failed", Fatal: true, Check: invReadyStalled},
	{Name: "phase of conditions", Fatal: true, Check: invPhaseOfConditions},
	{Name: "Terminating iff deleting", Fatal: true, Check: invTerminatingIffDeleting},
	{Name: "Pending never decided", Fatal: true, Check: invNoPending},
	{Name: "finalizer first", Fatal: true, Check: invFinalizerFirst},
	{Name: "actions make sense", Fatal: true, Check: invActions},
	{Name: "Running means ready", Fatal: true, Check: invRunning},
	{Name: "Upgrading needs a running image", Fatal: true, Check: invUpgrading},
	{Name: "UpgradeFinished only Running", Fatal: true, Check: invUpgradeFinished},
	{Name: "Failed iff backoff", Fatal: true, Check: invBackoff},
	{Name: "phase change has an event", Fatal: true, Check: invEvent},
	{Name: "ended from outside is no failure", Fatal: true, Check: invDisruption},
}

func invDisruption(f Facts, d Decision) error {
	reason := activeCondition(d.Conditions).Reason
	if reason == ReasonPodFailed && disrupted(f) != nil {
		return fmt.Errorf("PodFailed for a pod ended from outside: %+v", *f.Pod.Disrupted)
	}
	if reason == ReasonPodDisruptedRepeatedly && !failure.DisruptedRepeatedly(d.PodDisruptions, 1, f.Now) {
		return fmt.Errorf("PodDisruptedRepeatedly within the bound: %+v", d.PodDisruptions)
	}
	return nil
}

var conditionTypes = []string{v1alpha1.ConditionReady, v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled, ConditionScheduled, ConditionServiceReady}

func invConditionsInOrder(f Facts, d Decision) error {
	if len(d.Conditions) != len(conditionTypes) {
		return fmt.Errorf("conditions = %+v", d.Conditions)
	}
	for i, c := range d.Conditions {
		if c.Type != conditionTypes[i] || c.ObservedGeneration != f.Generation || !validReason(c.Reason) {
			return fmt.Errorf("condition %d = %+v", i, c)
		}
	}
	return nil
}

func invOneActive(_ Facts, d Decision) error {
	trues := 0
	for _, c := range d.Conditions[:3] {
		if c.Status == metav1.ConditionTrue {
			trues++
			if c.Message == "" {
				return fmt.Errorf("active condition %s has no message", c.Type)
			}
		}
	}
	if trues != 1 {
		return fmt.Errorf("%d of Ready/Reconciling/Stalled are True: %+v", trues, d.Conditions)
	}
	return nil
}

func invReadyStalled(_ Facts, d Decision) error {
	isTrue := func(i int) bool { return d.Conditions[i].Status == metav1.ConditionTrue }
	if isTrue(0) != (d.Phase == v1alpha1.PerformerRunning) || isTrue(2) != (d.Phase == v1alpha1.PerformerFailed) {
		return fmt.Errorf("phase %s with Ready=%v Stalled=%v", d.Phase, isTrue(0), isTrue(2))
	}
	return nil
}

func invPhaseOfConditions(_ Facts, d Decision) error {
	if d.Phase != Phases.Of(d.Conditions) || d.Phase == "" {
		return fmt.Errorf("phase %s, PhaseOf %s", d.Phase, Phases.Of(d.Conditions))
	}
	return nil
}

func invTerminatingIffDeleting(f Facts, d Decision) error {
	if f.Deleting != (d.Phase == v1alpha1.PerformerTerminating) {
		return fmt.Errorf("deleting=%v phase=%s", f.Deleting, d.Phase)
	}
	return nil
}

func invNoPending(f Facts, d Decision) error {
	if d.Phase == v1alpha1.PerformerPending {
		return fmt.Errorf("pending decided (finalizer=%v, actions %v)", f.HasFinalizer, d.Actions)
	}
	return nil
}

func invFinalizerFirst(f Facts, d Decision) error {
	if !f.Deleting && !f.HasFinalizer && (len(d.Actions) == 0 || d.Actions[0] != ActionAddFinalizer) {
		return fmt.Errorf("finalizer missing but actions %v do not start with AddFinalizer", d.Actions)
	}
	return nil
}

// invActions: no duplicate actions, each action allowed by its actionRules entry, and CreatePod
// and DeletePod never together.
func invActions(f Facts, d Decision) error {
	seen := map[Action]bool{}
	for i, a := range d.Actions {
		if seen[a] {
			return fmt.Errorf("duplicate action %s in %v", a, d.Actions)
		}
		seen[a] = true
		rule, ok := actionRules[a]
		if !ok {
			return fmt.Errorf("unknown action %q", a)
		}
		if err := rule(f, d, i); err != nil {
			return fmt.Errorf("%s: %w", a, err)
		}
	}
	if seen[ActionCreatePod] && seen[ActionDeletePod] {
		return fmt.Errorf("create and delete pod together: %v", d.Actions)
	}
	return nil
}

func ownPod(f Facts) bool     { return f.Pod != nil && !f.Pod.Foreign }
func ownService(f Facts) bool { return f.Service.Exists && !f.Service.Foreign }

// actionRules say when each action is allowed: d.Actions[i] is the action.
var actionRules = map[Action]func(f Facts, d Decision, i int) error{
	ActionCreatePod: func(f Facts, _ Decision, _ int) error {
		if f.Pod != nil || f.Deleting || f.RollingUpdate {
			return fmt.Errorf("CreatePod with pod %+v deleting=%v rolling=%v", f.Pod, f.Deleting, f.RollingUpdate)
		}
		return nil
	},
	ActionDeletePod: func(f Facts, _ Decision, _ int) error {
		// With RollingUpdate only the Recreate strategy's bare Pod is ever deleted (the
		// Deployment's Pods are its ReplicaSet's business).
		if f.RollingUpdate && !f.BarePod || !f.RollingUpdate && (!ownPod(f) || f.Pod.Deleting) {
			return fmt.Errorf("DeletePod on %+v (rolling=%v, bare=%v)", f.Pod, f.RollingUpdate, f.BarePod)
		}
		return nil
	},
	ActionApplyDeployment: func(f Facts, _ Decision, _ int) error {
		if f.Deleting || !f.RollingUpdate || (f.Deployment != nil && f.Deployment.Foreign) {
			return fmt.Errorf("ApplyDeployment deleting=%v rolling=%v deployment=%+v", f.Deleting, f.RollingUpdate, f.Deployment)
		}
		return nil
	},
	ActionDeleteDeployment: func(f Facts, _ Decision, _ int) error {
		if f.Deployment == nil || f.Deployment.Foreign || (f.RollingUpdate && !f.Deleting) {
			return fmt.Errorf("DeleteDeployment deployment=%+v rolling=%v deleting=%v", f.Deployment, f.RollingUpdate, f.Deleting)
		}
		return nil
	},
	ActionDeleteService: func(f Facts, _ Decision, _ int) error {
		if !f.Deleting || !ownService(f) {
			return fmt.Errorf("DeleteService deleting=%v svc=%+v", f.Deleting, f.Service)
		}
		return nil
	},
	ActionRemoveFinalizer: func(f Facts, d Decision, i int) error {
		if !f.Deleting || !f.HasFinalizer || (ownPod(f) && !f.RollingUpdate) || f.BarePod || ownService(f) || (f.Deployment != nil && !f.Deployment.Foreign) || i != len(d.Actions)-1 {
			return fmt.Errorf("RemoveFinalizer in %v with facts %+v", d.Actions, f)
		}
		return nil
	},
	ActionAddFinalizer: func(f Facts, _ Decision, _ int) error {
		if f.Deleting || f.HasFinalizer {
			return fmt.Errorf("AddFinalizer deleting=%v has=%v", f.Deleting, f.HasFinalizer)
		}
		return nil
	},
	ActionEnsureService: func(f Facts, _ Decision, _ int) error {
		if f.Deleting || f.Service.Foreign {
			return fmt.Errorf("EnsureService with %+v deleting=%v", f.Service, f.Deleting)
		}
		return nil
	},
	ActionEnsureAutoscaler: func(f Facts, _ Decision, _ int) error {
		if f.Deleting || f.Autoscaling == nil || f.Autoscaling.External || f.Autoscaler.Foreign || f.Autoscaler.UpToDate || f.SpecError != "" {
			return fmt.Errorf("EnsureAutoscaler autoscaling=%+v autoscaler=%+v deleting=%v", f.Autoscaling, f.Autoscaler, f.Deleting)
		}
		return nil
	},
	ActionDeleteAutoscaler: func(f Facts, _ Decision, _ int) error {
		if f.Deleting || (f.Autoscaling != nil && !f.Autoscaling.External) || !f.Autoscaler.Exists || f.Autoscaler.Foreign {
			return fmt.Errorf("DeleteAutoscaler autoscaling=%+v autoscaler=%+v deleting=%v", f.Autoscaling, f.Autoscaler, f.Deleting)
		}
		return nil
	},
}

func invRunning(f Facts, d Decision) error {
	if d.Phase == v1alpha1.PerformerRunning {
		if !ownPod(f) || !f.Pod.Ready || f.Pod.SpecHash != f.DesiredHash || !f.Service.UpToDate || d.Image != f.DesiredImage {
			return fmt.Errorf("running with facts %+v pod %+v → image %q", f, f.Pod, d.Image)
		}
		if a := f.Autoscaling; a != nil && (f.ReadyReplicas < max(a.MinReplicas, 1) || !a.External && !f.Autoscaler.UpToDate) {
			return fmt.Errorf("running with %d Ready replicas under autoscaling %+v, autoscaler %+v", f.ReadyReplicas, a, f.Autoscaler)
		}
	} else if d.Image != f.RunningImage {
		return fmt.Errorf("image changed to %q in phase %s", d.Image, d.Phase)
	}
	return nil
}

func invUpgrading(f Facts, d Decision) error {
	if d.Phase == v1alpha1.PerformerUpgrading && f.RunningImage == "" {
		return errors.New("upgrading without a running image")
	}
	return nil
}

func invUpgradeFinished(_ Facts, d Decision) error {
	if d.UpgradeFinished && d.Phase != v1alpha1.PerformerRunning {
		return fmt.Errorf("UpgradeFinished in %s", d.Phase)
	}
	return nil
}

func invBackoff(_ Facts, d Decision) error {
	if (d.Phase == v1alpha1.PerformerFailed) != d.Backoff {
		return fmt.Errorf("backoff=%v in %s", d.Backoff, d.Phase)
	}
	if d.Backoff && (d.RequeueAfter < BackoffMin || d.RequeueAfter > BackoffMax) {
		return fmt.Errorf("backoff %v out of bounds", d.RequeueAfter)
	}
	return nil
}

func invEvent(f Facts, d Decision) error {
	prev := Phases.Of(f.Conditions)
	if prev != d.Phase && d.Event == nil {
		return fmt.Errorf("phase %s → %s without event", prev, d.Phase)
	}
	if d.Event != nil && (d.Event.Type == corev1.EventTypeWarning) != (d.Phase == v1alpha1.PerformerFailed) {
		return fmt.Errorf("event %+v in phase %s", *d.Event, d.Phase)
	}
	return nil
}

// validReason follows metav1.Condition's reason pattern ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$.
func validReason(r string) bool {
	if r == "" || len(r) > 1024 {
		return false
	}
	for i, c := range r {
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		digit := c >= '0' && c <= '9'
		switch {
		case i == 0 && !letter:
			return false
		case !letter && !digit && c != '_' && c != ',' && c != ':':
			return false
		case i == len(r)-1 && (c == ',' || c == ':'):
			return false
		}
	}
	return true
}
