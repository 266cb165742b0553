package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// setBootID sets a node's status.nodeInfo.bootID, as a kubelet reports it after a boot (kwok
// does not reboot nodes; its node-initialize stage keeps a boot ID once set).
func (e *testEnv) setBootID(t *testing.T, node, id string) {
	t.Helper()
	ctx := context.Background()
	// After kwok's node-initialize stage (Ready=True): it writes the node's whole status, and
	// one computed before our patch would put the old boot ID back.
	n := e.waitNodeReady(t, node)
	before := n.DeepCopy()
	n.Status.NodeInfo.BootID = id
	if err := e.c.Status().Patch(ctx, n, client.MergeFrom(before)); err != nil {
		t.Fatalf("set boot ID of %s: %v", node, err)
	}
}

// waitNodeReady waits until kwok manages node (it holds the node's Lease and its
// node-initialize stage set Ready=True) and the node lifecycle controller has lifted the
// node.kubernetes.io/not-ready taint it puts on a new node, and returns the node.
func (e *testEnv) waitNodeReady(t *testing.T, node string) *corev1.Node {
	t.Helper()
	var n corev1.Node
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		if err := e.c.Get(ctx, types.NamespacedName{Name: node}, &n); err != nil {
			return false, nil
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeNotReady {
				return false, nil
			}
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s not Ready: %v", node, err)
	}
	return &n
}

// Skyhook #633 on the cluster: the reboot interrupt's pod is killed by the reboot it starts
// (kwok stage interrupt-killed.stage.gantry.dev: exit 143) and seen failed while the node is
// down — the package is erroring, naming the exit code; the node then reports a new boot ID,
// which proves the reboot done: the interrupt completes without a second interrupt Job (a
// second reboot), post-interrupt runs, the set is complete and the node uncordoned.
func TestPackageSetRebootKillsInterruptPod(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-boot-%d", seq.Add(1))
	node := e.gpuNodes(t, pool, 1)[0]
	e.setBootID(t, node, "boot-1")
	drv := pkgDriver("1.0.0")
	drv.PodLabels = map[string]string{"interrupt-killed.stage.gantry.dev": "true"}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:           []v1alpha1.Package{drv},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Count: ptrTo(int32(1))}, AdditionalTolerations: gpuToleration}}
	e.createSet(t, set)

	s := e.waitSet(t, pool, "the interrupt pod killed (erroring)", func(p *v1alpha1.PackageSet) bool {
		st := p.Status.NodeState[node][drv.Name]
		return st.Stage == v1alpha1.StageInterrupt && st.State == v1alpha1.StateErroring
	})
	if m := s.Status.NodeState[node][drv.Name].Message; !strings.Contains(m, "exited 143") {
		t.Errorf("erroring message %q does not name the exit code", m)
	}
	e.setBootID(t, node, "boot-2") // the node is back from its reboot
	e.waitSet(t, pool, "complete after the reboot", statusIs(v1alpha1.StatusComplete))

	var stages []string
	interrupts := 0
	for _, j := range e.setPods(t, pool) {
		stages = append(stages, j.Labels[v1alpha1.LabelStage])
		if j.Labels[v1alpha1.LabelStage] == string(v1alpha1.StageInterrupt) {
			interrupts++
		}
	}
	if interrupts != 1 {
		t.Errorf("%d interrupt Jobs (stages %v): want exactly one, a second one is a second reboot", interrupts, stages)
	}
	var got corev1.Node
	if err := e.c.Get(context.Background(), types.NamespacedName{Name: node}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Unschedulable || got.Annotations[v1alpha1.AnnotationCordonPrefix+pool] != "" {
		t.Errorf("node left cordoned: unschedulable=%v annotations %v", got.Spec.Unschedulable, got.Annotations)
	}
}

// Skyhook #306 and stage timeouts: a stage whose image cannot be pulled (kwok stage
// image-pull-failed.stage.gantry.dev) and a stage running past its stageTimeout (kwok holds
// the pod for pod-complete.stage.kwok.x-k8s.io/delay) are erroring, naming node, package,
// stage and the kubelet's or the Job controller's reason — never in_progress forever; the
// unpullable stage's Job is deleted (a new attempt is a new Job after the backoff).
func TestPackageSetImagePullAndStageTimeout(t *testing.T) {
	e := setup(t)
	pool := fmt.Sprintf("ps-fail-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 2)
	one := func(node string, pkg v1alpha1.Package) *v1alpha1.PackageSet {
		set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: v1alpha1.PackageSetSpec{
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/hostname": node}},
			Packages:     []v1alpha1.Package{pkg}, AdditionalTolerations: gpuToleration}}
		e.createSet(t, set)
		return set
	}
	pull := pkgTool("1.0.0")
	pull.PodLabels = map[string]string{"image-pull-failed.stage.gantry.dev": "true"}
	slow := pkgTool("1.0.0")
	slow.StageTimeout = &metav1.Duration{Duration: 3 * time.Second}
	slow.PodAnnotations = map[string]string{"pod-complete.stage.kwok.x-k8s.io/delay": "10m"}
	a, b := one(nodes[0], pull), one(nodes[1], slow)

	got := e.waitSet(t, a.Name, "erroring on the image pull", statusIs(v1alpha1.StatusErroring))
	msg := setCondition(got, v1alpha1.ConditionReady).Message
	if !strings.Contains(msg, "node "+nodes[0]+" package dcgm-tool stage apply: ImagePullFailed: ") || !strings.Contains(msg, "ErrImagePull") && !strings.Contains(msg, "ImagePullBackOff") {
		t.Errorf("image pull: Ready message %q", msg)
	}
	first := packageset.JobName(a.Name, nodes[0], "dcgm-tool", 1, v1alpha1.StageApply, 0)
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: first}, &corev1.Pod{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Errorf("the unpullable attempt's Pod %s was not deleted: %v", first, err)
	}

	got = e.waitSet(t, b.Name, "erroring past the stage timeout", statusIs(v1alpha1.StatusErroring))
	msg = setCondition(got, v1alpha1.ConditionReady).Message
	if !strings.Contains(msg, "node "+nodes[1]+" package dcgm-tool stage apply: DeadlineExceeded") {
		t.Errorf("stage timeout: Ready message %q", msg)
	}
}

// terminalErrors is the reconciler's count of passes of controller that ended with a terminal
// error (controller-runtime's controller_runtime_terminal_reconcile_errors_total).
func terminalErrors(t *testing.T, controller string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != "controller_runtime_terminal_reconcile_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// A hand-edited node record the machine cannot move on from (a package recorded at a stage
// that is not Skyhook's) stops the pass as it does for the other kinds: a Warning event
// names the illegal transition and the pass ends with a terminal error (no retry loop); the
// next change (here the record put back) starts a new pass.
func TestPackageSetIllegalTransitionIsTerminal(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	pool := fmt.Sprintf("ps-illegal-%d", seq.Add(1))
	nodes := e.gpuNodes(t, pool, 1)
	e.createSet(t, &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:          metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:              []v1alpha1.Package{pkgTool("1.0.0")},
		AdditionalTolerations: gpuToleration,
	}})
	e.waitSet(t, pool, "complete", statusIs(v1alpha1.StatusComplete))
	before := terminalErrors(t, "packageset")

	key := v1alpha1.AnnotationNodeStatePrefix + pool
	var orig string
	updateLatest(t, e, types.NamespacedName{Name: nodes[0]}, "node record", func(n *corev1.Node) {
		orig = n.Annotations[key]
		rec := &packageset.NodeRecord{}
		if err := json.Unmarshal([]byte(orig), rec); err != nil {
			t.Fatalf("node record %s: %v", orig, err)
		}
		pr := rec.Packages["dcgm-tool"]
		if pr == nil {
			t.Fatalf("node record without dcgm-tool: %s", orig)
		}
		pr.Stage, pr.Done = "bogus", false
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		n.Annotations[key] = string(b)
	})
	var evs []corev1.Event
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		evs = e.setEventsNow(t, pool, "IllegalTransition")
		return len(evs) > 0 && terminalErrors(t, "packageset") > before, nil
	})
	if err != nil {
		t.Fatalf("no IllegalTransition event and terminal error (events %+v, terminal errors %v, were %v)", evs, terminalErrors(t, "packageset"), before)
	}
	if evs[0].Type != corev1.EventTypeWarning || !strings.Contains(evs[0].Message, "bogus") {
		t.Errorf("IllegalTransition event %s: %s", evs[0].Type, evs[0].Message)
	}
	// Put the record back: the node event starts a new pass, which finds the set complete (and
	// lets the cleanup's deletion release the node).
	updateLatest(t, e, types.NamespacedName{Name: nodes[0]}, "node record", func(n *corev1.Node) { n.Annotations[key] = orig })
	e.waitSet(t, pool, "complete again", statusIs(v1alpha1.StatusComplete))
}

// A negative request in a package's resources (the CRD cannot refuse it within the API
// server's CEL budget: 32 packages × two maps) is Stalled InvalidSpec naming the field, and no
// stage Pod is created (the API server would refuse each one).
func TestPackageSetNegativeResourcesInvalidSpec(t *testing.T) {
	e := setup(t)
	t.Parallel()
	pool := fmt.Sprintf("ps-negres-%d", seq.Add(1))
	e.gpuNodes(t, pool, 1)
	pkg := pkgTool("1.0.0")
	pkg.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}
	e.createSet(t, &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/test-pool": pool}},
		Packages:     []v1alpha1.Package{pkg}, AdditionalTolerations: gpuToleration}})
	bad := e.waitSet(t, pool, "invalid spec", func(s *v1alpha1.PackageSet) bool {
		return setCondition(s, v1alpha1.ConditionStalled).Reason == packageset.ReasonInvalidSpec
	})
	if msg := setCondition(bad, v1alpha1.ConditionStalled).Message; !strings.Contains(msg, "spec.packages[0].resources.requests[cpu] = -1 is negative") {
		t.Errorf("Stalled message %q does not name the field", msg)
	}
	if n := len(e.setPods(t, pool)); n != 0 {
		t.Errorf("%d stage Pods created for an invalid spec", n)
	}
}
