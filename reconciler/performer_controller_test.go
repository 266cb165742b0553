package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

const (
	imageV1 = "ghcr.io/gantry-dev/hello-performer:1.0.0"
	imageV2 = "ghcr.io/gantry-dev/hello-performer:2.0.0"
	h100    = "NVIDIA-H100-80GB-HBM3"
)

func (e *testEnv) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: performer.ObjectName(name)}, &pod); err != nil {
		t.Fatalf("get pod of %s: %v", name, err)
	}
	return &pod
}

// checkRunning asserts the status contract of a Running Performer and its owned objects.
func (e *testEnv) checkRunning(t *testing.T, p *v1alpha1.Performer, image string) *corev1.Pod {
	t.Helper()
	st := p.Status
	wantEndpoint := "performer-" + p.Name + "." + e.ns + ".svc.cluster.local:9090"
	if st.GRPCEndpoint != wantEndpoint || st.PodName != "performer-"+p.Name || st.ServiceName != "performer-"+p.Name || st.Image != image || st.ObservedGeneration != p.Generation {
		t.Errorf("status = %s", describeStatus(&st))
	}
	for typ, want := range map[string]metav1.ConditionStatus{
		v1alpha1.ConditionReady: metav1.ConditionTrue, v1alpha1.ConditionReconciling: metav1.ConditionFalse, v1alpha1.ConditionStalled: metav1.ConditionFalse,
		performer.ConditionScheduled: metav1.ConditionTrue, performer.ConditionServiceReady: metav1.ConditionTrue,
	} {
		if c := condition(p, typ); c.Status != want || c.ObservedGeneration != p.Generation {
			t.Errorf("condition %s = %+v, want %s", typ, c, want)
		}
	}
	pod := e.pod(t, p.Name)
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != p.UID || ref.Kind != "Performer" {
		t.Errorf("pod controller = %+v", ref)
	}
	if pod.Labels[v1alpha1.LabelPerformer] != p.Name || pod.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedBy || pod.Annotations[v1alpha1.AnnotationSpecHash] == "" {
		t.Errorf("pod metadata labels=%v annotations=%v", pod.Labels, pod.Annotations)
	}
	c := pod.Spec.Containers[0]
	if c.Name != "performer" || c.Image != image || len(c.Ports) != 1 || c.Ports[0].Name != "grpc" || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("pod container = %+v", c)
	}
	if pod.Spec.NodeName != st.NodeName || st.NodeName == "" {
		t.Errorf("status.nodeName %q, pod on %q", st.NodeName, pod.Spec.NodeName)
	}
	var svc corev1.Service
	if err := e.c.Get(context.Background(), types.NamespacedName{Namespace: e.ns, Name: "performer-" + p.Name}, &svc); err != nil {
		t.Fatalf("service: %v", err)
	}
	if ref := metav1.GetControllerOf(&svc); ref == nil || ref.UID != p.UID {
		t.Errorf("service controller = %+v", ref)
	}
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || svc.Spec.Selector[v1alpha1.LabelPerformer] != p.Name || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "grpc" || svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("service spec = %+v", svc.Spec)
	}
	return pod
}

// A GPU performer asking for an H100 lands on gantry-gpu-2 (the only H100 node), tolerating
// the GPU taint, and goes Running with its gRPC endpoint.
func TestPerformerGPUPlacement(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("gpu-h100", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{GPUCount: 1, GPUType: h100}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	pod := e.checkRunning(t, got, imageV1)
	if got.Status.NodeName != "gantry-gpu-2" {
		t.Errorf("nodeName = %s, want gantry-gpu-2", got.Status.NodeName)
	}
	if pod.Spec.NodeSelector[hardware.LabelGPUProduct] != h100 || pod.Spec.NodeSelector[hardware.LabelGPUPresent] != "true" {
		t.Errorf("nodeSelector = %v", pod.Spec.NodeSelector)
	}
	if q := pod.Spec.Containers[0].Resources.Limits[hardware.ResourceGPU]; q.Value() != 1 {
		t.Errorf("GPU limit = %v", pod.Spec.Containers[0].Resources.Limits)
	}
	if !slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == hardware.TaintGPU }) {
		t.Errorf("tolerations = %v", pod.Spec.Tolerations)
	}
	if c := condition(got, performer.ConditionScheduled); !strings.Contains(c.Message, "gantry-gpu-2") {
		t.Errorf("Scheduled = %+v", c)
	}
}

// A performer asking for GPUs as Hourglass does, by a per-type extended resource
// (hardwareRequirements.gpuResource nvidia.com/<type>): the Pod requests that resource, not
// nvidia.com/gpu, and lands on the only node advertising it.
func TestPerformerGPUResource(t *testing.T) {
	e := setup(t)
	t.Parallel()
	res := corev1.ResourceName(fmt.Sprintf("nvidia.com/test-a100-%d", seq.Add(1)))
	node := testGPUNode(fmt.Sprintf("gantry-test-typed-%d", seq.Add(1)), "NVIDIA-A100-SXM4-80GB", 0)
	node.Status.Capacity[res], node.Status.Allocatable[res] = resource.MustParse("4"), resource.MustParse("4")
	e.addNode(t, node)
	t.Cleanup(func() {
		_ = e.c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name}})
	})
	p := e.newPerformer("gpu-typed", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{GPUCount: 2, GPUResource: string(res)}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	pod := e.checkRunning(t, got, imageV1)
	if got.Status.NodeName != node.Name {
		t.Errorf("nodeName = %s, want %s (the only node with %s)", got.Status.NodeName, node.Name, res)
	}
	limits := pod.Spec.Containers[0].Resources.Limits
	if q := limits[res]; q.Value() != 2 {
		t.Errorf("limits %v, want %s: 2", limits, res)
	}
	if _, ok := limits[hardware.ResourceGPU]; ok {
		t.Errorf("limits %v also ask for %s", limits, hardware.ResourceGPU)
	}
}

// A TDX performer lands on gantry-tee-tdx-0 with runtime class kata-qemu-tdx.
func TestPerformerTDXPlacement(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("tee-tdx", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEETDX}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	pod := e.checkRunning(t, got, imageV1)
	if got.Status.NodeName != "gantry-tee-tdx-0" {
		t.Errorf("nodeName = %s, want gantry-tee-tdx-0", got.Status.NodeName)
	}
	if pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "kata-qemu-tdx" {
		t.Errorf("runtimeClassName = %v", pod.Spec.RuntimeClassName)
	}
	if pod.Spec.NodeSelector[hardware.LabelTDX] != "true" {
		t.Errorf("nodeSelector = %v", pod.Spec.NodeSelector)
	}
}

// A performer asking for 64 GPUs (no node has more than 8) is Failed and Stalled with the
// scheduler's own message and a Warning event; lowering gpuCount to 1 heals it: the spec hash
// changes, the Pod is re-created and the Performer goes Running.
func TestPerformerUnschedulableRecovers(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("gpu-64", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{GPUCount: 64}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Failed", func(p *v1alpha1.Performer) bool { return p.Status.Phase == v1alpha1.PerformerFailed })
	stalled := condition(got, v1alpha1.ConditionStalled)
	if stalled.Status != metav1.ConditionTrue || stalled.Reason != performer.ReasonHardwareUnavailable || !strings.Contains(stalled.Message, "Insufficient nvidia.com/gpu") {
		t.Errorf("Stalled = %+v", stalled)
	}
	if ready := condition(got, v1alpha1.ConditionReady); ready.Status != metav1.ConditionFalse || ready.Message != stalled.Message {
		t.Errorf("Ready = %+v", ready)
	}
	if rec := condition(got, v1alpha1.ConditionReconciling); rec.Status != metav1.ConditionFalse {
		t.Errorf("Reconciling = %+v", rec)
	}
	if sched := condition(got, performer.ConditionScheduled); sched.Status != metav1.ConditionFalse || sched.Message != stalled.Message {
		t.Errorf("Scheduled = %+v", sched)
	}
	// Events are recorded asynchronously: poll for the Warning.
	e.waitEvent(t, "Performer", p.Name, "Warning HardwareUnavailable: 0/")
	if ev := e.events(p.Name); !strings.Contains(ev, "Insufficient nvidia.com/gpu") {
		t.Errorf("events:\n%s", ev)
	}
	oldPod := e.pod(t, p.Name)

	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.HardwareRequirements.GPUCount = 1 })
	got = e.waitFor(t, p.Name, "Running after lowering gpuCount", running)
	newPod := e.checkRunning(t, got, imageV1)
	if newPod.UID == oldPod.UID {
		t.Error("the unschedulable pod was not re-created")
	}
	if !strings.HasPrefix(got.Status.NodeName, "gantry-gpu-") {
		t.Errorf("nodeName = %s", got.Status.NodeName)
	}
}

// Asking for SGX (enclave-cc), which no node has, is Failed with SchedulingFailed (no node
// matches, as opposed to nodes lacking resources).
func TestPerformerNoMatchingNode(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("tee-sgx", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEESGX}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Failed", func(p *v1alpha1.Performer) bool { return p.Status.Phase == v1alpha1.PerformerFailed })
	if c := condition(got, v1alpha1.ConditionStalled); c.Reason != performer.ReasonSchedulingFailed || !strings.Contains(c.Message, "didn't match Pod's node affinity/selector") {
		t.Errorf("Stalled = %+v", c)
	}
	if pod := e.pod(t, p.Name); pod.Spec.RuntimeClassName == nil || *pod.Spec.RuntimeClassName != "enclave-cc" {
		t.Errorf("runtimeClassName = %v", pod.Spec.RuntimeClassName)
	}
}

// A spec the reconciler cannot honour (a node selector contradicting gpuType) is Failed with
// InvalidSpec naming the field, without creating a Pod.
func TestPerformerInvalidSpec(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("conflict", v1alpha1.PerformerSpec{Image: imageV1,
		HardwareRequirements: v1alpha1.HardwareRequirements{GPUCount: 1, GPUType: h100},
		Scheduling:           v1alpha1.Scheduling{NodeSelector: map[string]string{hardware.LabelGPUProduct: "NVIDIA-A100-SXM4-80GB"}}})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Failed", func(p *v1alpha1.Performer) bool { return p.Status.Phase == v1alpha1.PerformerFailed })
	if c := condition(got, v1alpha1.ConditionStalled); c.Reason != performer.ReasonInvalidSpec || !strings.Contains(c.Message, `spec.scheduling.nodeSelector["nvidia.com/gpu.product"]`) {
		t.Errorf("Stalled = %+v", c)
	}
	var pods corev1.PodList
	if err := e.c.List(context.Background(), &pods, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelPerformer: p.Name}); err != nil || len(pods.Items) != 0 {
		t.Errorf("pods = %d, err %v", len(pods.Items), err)
	}
}

// A kubelet that cannot pull the image (kwok stage image-pull-failed.stage.gantry.dev, which
// the Performer's labels carry to its Pod) makes the Performer Failed with ImagePullFailed
// and the kubelet's reason; a new image (and dropping the label) heals it.
func TestPerformerImagePullFailure(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("pull-fail", v1alpha1.PerformerSpec{Image: imageV1})
	p.Labels = map[string]string{"image-pull-failed.stage.gantry.dev": "true"}
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Failed", func(p *v1alpha1.Performer) bool { return p.Status.Phase == v1alpha1.PerformerFailed })
	if c := condition(got, v1alpha1.ConditionStalled); c.Reason != performer.ReasonImagePullFailed || !strings.Contains(c.Message, "container performer: ErrImagePull") && !strings.Contains(c.Message, "container performer: ImagePullBackOff") {
		t.Errorf("Stalled = %+v", c)
	}
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Labels = nil; p.Spec.Image = imageV2 })
	got = e.waitFor(t, p.Name, "Running after fixing the image", running)
	e.checkRunning(t, got, imageV2)
}

// An image change passes through Upgrading (never Creating: status.image remembers what ran)
// and ends Running with status.image the new image and lastUpgradeTime set.
func TestPerformerUpgrade(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("upgrade", v1alpha1.PerformerSpec{Image: imageV1})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	oldPod := e.checkRunning(t, got, imageV1)
	if got.Status.LastUpgradeTime != nil {
		t.Errorf("lastUpgradeTime set before any upgrade")
	}

	rec := e.recordPhases(t, p.Name)
	e.update(t, p.Name, func(p *v1alpha1.Performer) { p.Spec.Image = imageV2 })
	got = e.waitFor(t, p.Name, "Running with the new image", func(p *v1alpha1.Performer) bool {
		return running(p) && p.Status.Image == imageV2
	})
	newPod := e.checkRunning(t, got, imageV2)
	if newPod.UID == oldPod.UID {
		t.Error("pod not re-created")
	}
	if got.Status.LastUpgradeTime == nil {
		t.Error("lastUpgradeTime not set")
	}
	// The watch may still deliver the last events; the final Running is already in the API.
	e.waitForPhases(t, rec, v1alpha1.PerformerRunning)
	seen := rec.seen()
	if !slices.Contains(seen, v1alpha1.PerformerUpgrading) {
		t.Errorf("phases seen during the upgrade: %v, want Upgrading among them", seen)
	}
	for _, ph := range seen {
		if ph != v1alpha1.PerformerRunning && ph != v1alpha1.PerformerUpgrading {
			t.Errorf("phases seen during the upgrade: %v, want only Running and Upgrading", seen)
			break
		}
	}
	e.waitEvent(t, "Performer", p.Name, "Normal UpgradeInProgress")
}

// waitForPhases waits until the recorder's last phase is want.
func (e *testEnv) waitForPhases(t *testing.T, rec *phaseRecorder, want v1alpha1.PerformerPhase) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		s := rec.seen()
		return len(s) > 0 && s[len(s)-1] == want, nil
	})
	if err != nil {
		t.Fatalf("phases seen %v, want the last one %s", rec.seen(), want)
	}
}

// A Pod that fails for good (kwok chaos: container failed, Pod phase Failed) makes the
// Performer Failed with the kubelet's message; the reconciler re-creates the Pod and the
// Performer is Running again.
func TestPerformerPodFailureRecreated(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("pod-fails", v1alpha1.PerformerSpec{Image: imageV1})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	oldPod := e.checkRunning(t, got, imageV1)
	rec := e.recordPhases(t, p.Name)

	patch := client.MergeFrom(oldPod.DeepCopy())
	oldPod.Labels["pod-container-running-failed.stage.kwok.x-k8s.io"] = "true"
	if err := e.c.Patch(context.Background(), oldPod, patch); err != nil {
		t.Fatal(err)
	}
	got = e.waitFor(t, p.Name, "Running on a new pod", func(p *v1alpha1.Performer) bool {
		return running(p) && slices.Contains(rec.seen(), v1alpha1.PerformerFailed)
	})
	if newPod := e.checkRunning(t, got, imageV1); newPod.UID == oldPod.UID {
		t.Error("pod not re-created")
	}
	e.waitEvent(t, "Performer", p.Name, "Warning PodFailed: pod Failed")
}

// Deleting a Performer deletes its Service and Pod, then the finalizer goes and so does the
// Performer.
func TestPerformerDelete(t *testing.T) {
	e := setup(t)
	t.Parallel()
	p := e.newPerformer("delete-me", v1alpha1.PerformerSpec{Image: imageV1})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	if !slices.Contains(got.Finalizers, v1alpha1.Finalizer) {
		t.Fatalf("finalizers = %v", got.Finalizers)
	}
	e.checkRunning(t, got, imageV1)
	if err := e.c.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	e.waitGone(t, &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: p.Name}})
	e.waitGone(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: performer.ObjectName(p.Name)}})
	e.waitGone(t, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: performer.ObjectName(p.Name)}})
	e.waitEvent(t, "Performer", p.Name, "Normal Terminating")
}

// TestPerformerRollingUpdate (Hourglass item 5): with strategy RollingUpdate the performer
// is a one-replica Deployment; an image change starts the new Pod before the old one goes, so
// sampled every 20 ms the performer never has zero Ready Pods; the Performer's labels reach
// the Pod; deleting the Performer deletes the Deployment.
func TestPerformerRollingUpdate(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	p := e.newPerformer("rolling", v1alpha1.PerformerSpec{Image: imageV1, Strategy: v1alpha1.PerformerRollingUpdate})
	e.create(t, p)
	got := e.waitFor(t, p.Name, "Running", running)
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: performer.ObjectName(p.Name)}, &dep); err != nil {
		t.Fatalf("no Deployment for a RollingUpdate performer: %v", err)
	}
	if s := dep.Spec.Strategy; s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate.MaxUnavailable.IntValue() != 0 || *dep.Spec.Replicas != 1 {
		t.Errorf("deployment strategy %+v replicas %d", s, *dep.Spec.Replicas)
	}
	if got.Status.PodName == performer.ObjectName(p.Name) {
		t.Errorf("status.podName = %q: the bare pod's name, want the Deployment's pod", got.Status.PodName)
	}
	firstPod := got.Status.PodName

	readyPods := func() (int, error) {
		var pods corev1.PodList
		if err := e.c.List(ctx, &pods, client.InNamespace(e.ns), client.MatchingLabels{v1alpha1.LabelPerformer: p.Name}); err != nil {
			return 0, err
		}
		n := 0
		for i := range pods.Items {
			if pods.Items[i].DeletionTimestamp == nil && podReady(&pods.Items[i]) {
				n++
			}
		}
		return n, nil
	}
	stop := make(chan struct{})
	var minReady, samples int
	var sampleErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		minReady = 1 << 30
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := readyPods()
			if err != nil {
				sampleErr = err
				return
			}
			samples++
			minReady = min(minReady, n)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	e.update(t, p.Name, func(p *v1alpha1.Performer) {
		p.Spec.Image = imageV2
		p.Labels = map[string]string{"team.gantry.dev/owner": "avs"}
	})
	got = e.waitFor(t, p.Name, "Running on the new image", func(p *v1alpha1.Performer) bool {
		return running(p) && p.Status.Image == imageV2
	})
	close(stop)
	<-done
	if sampleErr != nil {
		t.Fatal(sampleErr)
	}
	t.Logf("rolling update: %d samples, fewest Ready pods %d, pod %s → %s", samples, minReady, firstPod, got.Status.PodName)
	if minReady < 1 {
		t.Errorf("the performer had no Ready pod during the rolling update (%d samples)", samples)
	}
	if got.Status.PodName == firstPod {
		t.Errorf("status.podName still %s after the update", firstPod)
	}
	var pod corev1.Pod
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: got.Status.PodName}, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Labels["team.gantry.dev/owner"] != "avs" || pod.Spec.Containers[0].Image != imageV2 {
		t.Errorf("new pod labels %v image %s", pod.Labels, pod.Spec.Containers[0].Image)
	}

	if err := e.c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var d appsv1.Deployment
		return apierrors.IsNotFound(e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: performer.ObjectName(p.Name)}, &d)), nil
	})
	if err != nil {
		t.Errorf("the Deployment outlived its Performer")
	}
}
