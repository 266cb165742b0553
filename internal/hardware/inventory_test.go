package hardware

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func invNode(name, product string, gpus int64, ready bool, labels map[string]string) corev1.Node {
	l := map[string]string{}
	for k, v := range labels {
		l[k] = v
	}
	if product != "" {
		l[LabelGPUProduct] = product
	}
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	if gpus > 0 {
		q := *resource.NewQuantity(gpus, resource.DecimalSI)
		n.Status.Capacity = corev1.ResourceList{ResourceGPU: q}
		n.Status.Allocatable = corev1.ResourceList{ResourceGPU: q}
	}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	return n
}

func gpuPod(node string, gpus int64, phase corev1.PodPhase) corev1.Pod {
	q := *resource.NewQuantity(gpus, resource.DecimalSI)
	return corev1.Pod{Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{ResourceGPU: q}}}}}, Status: corev1.PodStatus{Phase: phase}}
}

func TestInventoryAndFilter(t *testing.T) {
	nodes := []corev1.Node{
		invNode("h100-b", "NVIDIA-H100", 8, true, nil),
		invNode("h100-a", "NVIDIA-H100", 8, false, nil),
		invNode("a100", "NVIDIA-A100", 8, true, map[string]string{LabelInstanceType: "p4d.24xlarge"}),
		invNode("tdx", "", 0, true, map[string]string{LabelTDX: "true"}),
		invNode("cpu", "", 0, true, nil),
	}
	pods := []corev1.Pod{
		gpuPod("h100-b", 6, corev1.PodRunning), gpuPod("h100-b", 4, corev1.PodSucceeded), // terminated: not counted
		gpuPod("a100", 3, corev1.PodPending), gpuPod("", 8, corev1.PodPending), // unbound: not counted
	}
	rcs := []nodev1.RuntimeClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "kata-qemu-tdx"}, Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{LabelTDX: "true"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "runc"}},
	}
	inv := Inventory(nodes, pods, rcs)
	byName := map[string]NodeInventory{}
	var names []string
	for _, n := range inv {
		byName[n.Name] = n
		names = append(names, n.Name)
	}
	if got := strings.Join(names, ","); got != "a100,cpu,h100-a,h100-b,tdx" {
		t.Fatalf("order: %s", got)
	}
	if n := byName["h100-b"]; n.GPUInUse != 6 || n.GPUFree() != 2 || !n.Ready {
		t.Errorf("h100-b: %+v", n)
	}
	if n := byName["a100"]; n.GPUInUse != 3 || n.GPUFree() != 5 || n.InstanceType != "p4d.24xlarge" {
		t.Errorf("a100: %+v", n)
	}
	if n := byName["tdx"]; strings.Join(n.TEETypes, ",") != "tdx" || strings.Join(n.RuntimeClasses, ",") != "kata-qemu-tdx,runc" {
		t.Errorf("tdx: %+v", n)
	}
	if n := byName["cpu"]; len(n.TEETypes) != 0 || strings.Join(n.RuntimeClasses, ",") != "runc" {
		t.Errorf("cpu: %+v", n)
	}
	for _, tc := range []struct {
		f    NodeFilter
		want string
	}{
		{NodeFilter{}, "a100,cpu,h100-a,h100-b,tdx"},
		{NodeFilter{GPUProduct: "NVIDIA-H100"}, "h100-a,h100-b"},
		{NodeFilter{GPUProduct: "NVIDIA-H100", ReadyOnly: true}, "h100-b"},
		{NodeFilter{MinFreeGPUs: 3}, "a100,h100-a"},
		{NodeFilter{TEEType: "tdx"}, "tdx"},
		{NodeFilter{RuntimeClass: "kata-qemu-tdx"}, "tdx"},
		{NodeFilter{InstanceType: "p4d.24xlarge"}, "a100"},
		{NodeFilter{Labels: map[string]string{LabelTDX: "true"}}, "tdx"},
	} {
		var got []string
		for _, n := range inv {
			if tc.f.Match(n) {
				got = append(got, n.Name)
			}
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: %v, want %s", tc.f, got, tc.want)
		}
	}
	f := NodeFilter{GPUProduct: "NVIDIA-H100", MinFreeGPUs: 4, ReadyOnly: true}
	why := f.Shortfall(inv, 1)
	for _, want := range []string{`0 node(s) match gpu_product = "NVIDIA-H100", min_free_gpus = 4, ready_only = true, 1 needed`,
		"h100-a (NVIDIA-H100, 8 of 8 GPUs free, not Ready)", "h100-b (NVIDIA-H100, 2 of 8 GPUs free)"} {
		if !strings.Contains(why, want) {
			t.Errorf("Shortfall = %q, lacks %q", why, want)
		}
	}
	if why := (NodeFilter{GPUProduct: "NVIDIA-B200"}).Shortfall(inv, 1); !strings.Contains(why, "no node has GPU product NVIDIA-B200") {
		t.Errorf("Shortfall = %q", why)
	}
	if why := (NodeFilter{GPUProduct: "NVIDIA-H100"}).Shortfall(inv, 2); why != "" {
		t.Errorf("two H100 nodes exist; Shortfall = %q", why)
	}
}
