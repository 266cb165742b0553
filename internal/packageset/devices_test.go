package packageset

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestExtendedAllocatable(t *testing.T) {
	n := &corev1.Node{Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("1Gi"), "hugepages-2Mi": resource.MustParse("0"),
		"nvidia.com/gpu": resource.MustParse("8"), "nvidia.com/mig-1g.18gb": resource.MustParse("7"), "kubernetes.io/batch-cpu": resource.MustParse("1"),
	}}}
	got := ExtendedAllocatable(n)
	if len(got) != 2 || got["nvidia.com/gpu"] != 8 || got["nvidia.com/mig-1g.18gb"] != 7 {
		t.Errorf("ExtendedAllocatable = %v", got)
	}
	if ExtendedAllocatable(&corev1.Node{}) != nil {
		t.Error("a node without device resources: want nil")
	}
}

// A driver package's service interrupt restarts the device plugin: the node's GPUs drop from
// its allocatable. The flow completes, but the node stays cordoned (in progress, the set's
// message naming what it waits for, polled within DevicePoll) until the GPUs the node had at the
// cordon are allocatable again; then it is released and the record forgets them.
func TestDevicesReturnBeforeUncordon(t *testing.T) {
	w := Want{Name: "driver", Version: "1", Image: "ghcr.io/x/driver:1", StageTimeout: DefaultStageTimeout,
		Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"nvidia-device-plugin"}}}
	s := newSim(t, 1, w)
	n := s.nodes["node-0"]
	n.alloc = map[string]int64{"nvidia.com/gpu": 8, "nvidia.com/mig-1g.18gb": 7}
	for i := 0; i < 50 && !strings.Contains(s.stages("node-0", "driver"), string(intr)); i++ {
		s.pass()
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	if !n.cordoned || n.rec.DevicesBefore["nvidia.com/gpu"] != 8 {
		t.Fatalf("at the interrupt: cordoned %v, devicesBefore %v", n.cordoned, n.rec.DevicesBefore)
	}
	n.alloc = map[string]int64{"nvidia.com/gpu": 0, "nvidia.com/mig-1g.18gb": 7}
	var d Decision
	for range 20 {
		d = s.pass()
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	if r := n.rec.Packages["driver"]; r == nil || r.State != v1alpha1.StateComplete || !r.Done {
		t.Fatalf("the driver's flow did not finish: %+v", r)
	}
	if !n.cordoned || d.Status != v1alpha1.StatusInProgress {
		t.Fatalf("GPUs missing: cordoned %v, status %s; want cordoned, InProgress", n.cordoned, d.Status)
	}
	if got := d.DeviceWaits["node-0"]; got != "nvidia.com/gpu 0 of 8 allocatable" {
		t.Errorf("DeviceWaits = %q", got)
	}
	if d.RequeueAfter == 0 || d.RequeueAfter > DevicePoll {
		t.Errorf("RequeueAfter = %s, want within %s", d.RequeueAfter, DevicePoll)
	}
	ready := d.Conditions[0]
	if ready.Type != v1alpha1.ConditionReady || ready.Status != "False" || !strings.Contains(ready.Message, "kept cordoned until the devices they had return after the interrupt: node-0: nvidia.com/gpu 0 of 8 allocatable") {
		t.Errorf("Ready = %+v", ready)
	}
	n.alloc = map[string]int64{"nvidia.com/gpu": 8, "nvidia.com/mig-1g.18gb": 7}
	d = s.run(v1alpha1.StatusComplete)
	if n.cordoned || n.rec.DevicesBefore != nil || len(d.DeviceWaits) != 0 {
		t.Errorf("GPUs back: cordoned %v, devicesBefore %v, waits %v", n.cordoned, n.rec.DevicesBefore, d.DeviceWaits)
	}
}

// Right after the node's work is done its status may still show the GPUs an interrupt took (the
// kubelet reports the loss at its next status update): the cordon is held DeviceSettle before
// the allocatable is trusted, then released when it is whole.
func TestDevicesSettleBeforeTrustingStatus(t *testing.T) {
	w := Want{Name: "driver", Version: "1", Image: "ghcr.io/x/driver:1", StageTimeout: DefaultStageTimeout,
		Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"nvidia-device-plugin"}}}
	s := newSim(t, 1, w)
	n := s.nodes["node-0"]
	n.alloc = map[string]int64{"nvidia.com/gpu": 2} // the status never shows the drop: it lags
	var held []string
	var d Decision
	for i := 0; i < 200 && (i < 5 || n.cordoned); i++ {
		d = s.pass()
		s.settle()
		if r := n.rec.Packages["driver"]; r != nil && r.Done && n.cordoned {
			held = append(held, d.DeviceWaits["node-0"])
		}
		s.now = s.now.Add(time.Second)
	}
	if n.cordoned || d.Status != v1alpha1.StatusComplete {
		t.Fatalf("cordoned %v, status %s", n.cordoned, d.Status)
	}
	// Held until DeviceSettle passed (one pass per second; the first hold is counted from the
	// pass that finished the work, before the package record reads done).
	if len(held) < int(DeviceSettle/time.Second)-1 || !strings.HasSuffix(held[0], "s for the kubelet to report the node's devices") || held[len(held)-1] != "waiting 1s for the kubelet to report the node's devices" {
		t.Errorf("held %d passes: %q", len(held), held)
	}
	if n.rec.DevicesBefore != nil || n.rec.DevicesCheckAt != nil {
		t.Errorf("record keeps %v %v", n.rec.DevicesBefore, n.rec.DevicesCheckAt)
	}
}

// A node without device resources, and a deleted set, never wait.
func TestDevicesNoWait(t *testing.T) {
	s := newSim(t, 2, driver("1"))
	s.run(v1alpha1.StatusComplete)
	for name, n := range s.nodes {
		if n.cordoned || n.rec.DevicesBefore != nil {
			t.Errorf("%s: cordoned %v devicesBefore %v", name, n.cordoned, n.rec.DevicesBefore)
		}
	}
	p := &nodePass{n: NodeFacts{Cordoned: true}, rec: &NodeRecord{DevicesBefore: map[string]int64{"nvidia.com/gpu": 2}}}
	p.releaseCordon() // Record nil: the node's record goes (deleted set, node left the selector)
	if !p.plan.Uncordon || p.plan.DevicesWait != "" {
		t.Errorf("record gone: uncordon %v wait %q", p.plan.Uncordon, p.plan.DevicesWait)
	}
}
