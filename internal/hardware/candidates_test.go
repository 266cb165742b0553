package hardware

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// candNode is a node of the local cluster's shapes: labels, taints, allocatable (resource name →
// quantity), cordoned or not.
func candNode(name string, labels map[string]string, taints []corev1.Taint, alloc map[corev1.ResourceName]string, cordoned bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints, Unschedulable: cordoned}}
	if len(alloc) > 0 {
		n.Status.Allocatable = corev1.ResourceList{}
		for k, v := range alloc {
			n.Status.Allocatable[k] = resource.MustParse(v)
		}
	}
	return n
}

var (
	gpuTaint      = corev1.Taint{Key: TaintGPU, Value: "present", Effect: corev1.TaintEffectNoSchedule}
	notReadyTaint = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	cordonTaint   = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	dedicated     = corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule}
	preferTaint   = corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
)

func gpuLabels(product string) map[string]string {
	return map[string]string{LabelGPUPresent: "true", LabelGPUProduct: product, "kubernetes.io/hostname": "x"}
}

// candidateFleet: the local cluster's GPU and CPU nodes plus the shapes a plan meets: a
// cordoned GPU node, a NotReady one, one with a foreign taint, one with a soft taint only.
func candidateFleet() []corev1.Node {
	gpu8 := map[corev1.ResourceName]string{ResourceGPU: "8", corev1.ResourceCPU: "64", corev1.ResourceMemory: "512Gi"}
	return []corev1.Node{
		candNode("gpu-0", gpuLabels("NVIDIA-A100-SXM4-80GB"), []corev1.Taint{gpuTaint}, gpu8, false),
		candNode("gpu-1", gpuLabels("NVIDIA-A100-SXM4-80GB"), []corev1.Taint{gpuTaint}, gpu8, false),
		candNode("gpu-2", gpuLabels("NVIDIA-H100-80GB-HBM3"), []corev1.Taint{gpuTaint}, gpu8, false),
		candNode("gpu-cordoned", gpuLabels("NVIDIA-A100-SXM4-80GB"), []corev1.Taint{gpuTaint, cordonTaint}, gpu8, true),
		candNode("gpu-notready", gpuLabels("NVIDIA-A100-SXM4-80GB"), []corev1.Taint{gpuTaint, notReadyTaint}, gpu8, false),
		candNode("gpu-dedicated", gpuLabels("NVIDIA-A100-SXM4-80GB"), []corev1.Taint{gpuTaint, dedicated}, gpu8, false),
		candNode("cpu-0", map[string]string{"kubernetes.io/hostname": "cpu-0"}, nil, map[corev1.ResourceName]string{corev1.ResourceCPU: "16", corev1.ResourceMemory: "64Gi"}, false),
		candNode("cpu-soft", map[string]string{"kubernetes.io/hostname": "cpu-soft"}, []corev1.Taint{preferTaint}, map[corev1.ResourceName]string{corev1.ResourceCPU: "16"}, false),
	}
}

func mustPlace(t *testing.T, hw v1alpha1.HardwareRequirements, s v1alpha1.Scheduling) Placement {
	t.Helper()
	p, err := Place(hw, s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hostAffinity(op corev1.NodeSelectorOperator, values ...string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: op, Values: values}}}}}}}
}

func gpuUse(n string) corev1.ResourceList {
	return corev1.ResourceList{ResourceGPU: resource.MustParse(n)}
}

func TestCandidates(t *testing.T) {
	nodes := candidateFleet()
	tolerateDedicated := []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "ml", Effect: corev1.TaintEffectNoSchedule}}
	tolerateAll := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	for _, tc := range []struct {
		name      string
		hw        v1alpha1.HardwareRequirements
		s         v1alpha1.Scheduling
		user      corev1.ResourceRequirements
		inUse     map[string]corev1.ResourceList
		fit, free []string
	}{
		{name: "one GPU: every untainted-or-tolerated GPU node fits; cordoned and NotReady fit but are not free",
			hw:  v1alpha1.HardwareRequirements{GPUCount: 1},
			fit: []string{"gpu-0", "gpu-1", "gpu-2", "gpu-cordoned", "gpu-notready"}, free: []string{"gpu-0", "gpu-1", "gpu-2"}},
		{name: "GPU product selects its nodes",
			hw:  v1alpha1.HardwareRequirements{GPUCount: 2, GPUType: "NVIDIA-H100-80GB-HBM3"},
			fit: []string{"gpu-2"}, free: []string{"gpu-2"}},
		{name: "GPUs in use leave a node fitting but not free",
			hw:    v1alpha1.HardwareRequirements{GPUCount: 4},
			inUse: map[string]corev1.ResourceList{"gpu-0": gpuUse("8"), "gpu-1": gpuUse("5"), "gpu-2": gpuUse("4")},
			fit:   []string{"gpu-0", "gpu-1", "gpu-2", "gpu-cordoned", "gpu-notready"}, free: []string{"gpu-2"}},
		{name: "more GPUs than any node has: none fits",
			hw: v1alpha1.HardwareRequirements{GPUCount: 16}},
		{name: "a toleration of the foreign taint adds its node",
			hw: v1alpha1.HardwareRequirements{GPUCount: 1, GPUType: "NVIDIA-A100-SXM4-80GB"}, s: v1alpha1.Scheduling{Tolerations: tolerateDedicated},
			fit: []string{"gpu-0", "gpu-1", "gpu-cordoned", "gpu-dedicated", "gpu-notready"}, free: []string{"gpu-0", "gpu-1", "gpu-dedicated"}},
		{name: "no requirements: untainted nodes and soft taints only",
			fit: []string{"cpu-0", "cpu-soft"}, free: []string{"cpu-0", "cpu-soft"}},
		{name: "a toleration of everything: the cordon and not-ready taints are tolerated too",
			s:    v1alpha1.Scheduling{Tolerations: tolerateAll},
			fit:  []string{"cpu-0", "cpu-soft", "gpu-0", "gpu-1", "gpu-2", "gpu-cordoned", "gpu-dedicated", "gpu-notready"},
			free: []string{"cpu-0", "cpu-soft", "gpu-0", "gpu-1", "gpu-2", "gpu-cordoned", "gpu-dedicated", "gpu-notready"}},
		{name: "required node affinity In",
			s:   v1alpha1.Scheduling{Affinity: hostAffinity(corev1.NodeSelectorOpIn, "cpu-0")},
			fit: []string{"cpu-0"}, free: []string{"cpu-0"}},
		{name: "required node affinity NotIn",
			s:   v1alpha1.Scheduling{Affinity: hostAffinity(corev1.NodeSelectorOpNotIn, "cpu-0")},
			fit: []string{"cpu-soft"}, free: []string{"cpu-soft"}},
		{name: "cpu above every node's allocatable",
			user: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32")}}},
		{name: "a memory limit without request asks for the limit (API defaulting)",
			user: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Gi")}},
			fit:  []string{"cpu-0"}, free: []string{"cpu-0"}},
		{name: "a node selector of the user",
			hw: v1alpha1.HardwareRequirements{GPUCount: 1}, s: v1alpha1.Scheduling{NodeSelector: map[string]string{LabelGPUProduct: "NVIDIA-A100-SXM4-80GB"}},
			fit: []string{"gpu-0", "gpu-1", "gpu-cordoned", "gpu-notready"}, free: []string{"gpu-0", "gpu-1"}},
		{name: "a TEE no node has",
			hw: v1alpha1.HardwareRequirements{TEERequired: true, TEEType: v1alpha1.TEETDX}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPlace(t, tc.hw, tc.s)
			res, err := p.ContainerResources(tc.user)
			if err != nil {
				t.Fatal(err)
			}
			fit, free := Candidates(p, EffectiveRequests(res), nodes, tc.inUse)
			if !reflect.DeepEqual(fit, tc.fit) || !reflect.DeepEqual(free, tc.free) {
				t.Errorf("fit %v free %v, want fit %v free %v", fit, free, tc.fit, tc.free)
			}
		})
	}
}

// Misfit and NotNow name what a node lacks in the words the plan's warning uses.
func TestCandidates_reasons(t *testing.T) {
	nodes := candidateFleet()
	byName := map[string]*corev1.Node{}
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
	}
	h100 := mustPlace(t, v1alpha1.HardwareRequirements{GPUCount: 16, GPUType: "NVIDIA-H100-80GB-HBM3"}, v1alpha1.Scheduling{})
	req := EffectiveRequests(corev1.ResourceRequirements{Requests: h100.Requests})
	one := mustPlace(t, v1alpha1.HardwareRequirements{GPUCount: 1}, v1alpha1.Scheduling{})
	oneReq := EffectiveRequests(corev1.ResourceRequirements{Requests: one.Requests})
	for _, tc := range []struct {
		name string
		got  []string
		want []string
	}{
		{"wrong product, too few GPUs", h100.Misfit(byName["gpu-0"], req), []string{
			"label nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB, not NVIDIA-H100-80GB-HBM3 (GPU type NVIDIA-H100-80GB-HBM3)",
			"nvidia.com/gpu: 8 allocatable, 16 asked"}},
		{"CPU node: labels, no GPUs", h100.Misfit(byName["cpu-0"], req), []string{
			"no label nvidia.com/gpu.present=true",
			"no label nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 (GPU type NVIDIA-H100-80GB-HBM3)",
			"nvidia.com/gpu: 0 allocatable, 16 asked"}},
		{"foreign taint; transient taints are not misfits", one.Misfit(byName["gpu-dedicated"], oneReq), []string{"taint dedicated=ml:NoSchedule not tolerated"}},
		{"cordoned once, though both the flag and its taint say so", one.NotNow(byName["gpu-cordoned"], oneReq, nil), []string{"cordoned"}},
		{"not ready", one.NotNow(byName["gpu-notready"], oneReq, gpuUse("8")), []string{
			"not Ready (taint node.kubernetes.io/not-ready:NoExecute)", "nvidia.com/gpu: 0 of 8 free, 1 asked"}},
		{"over-committed node counts 0 free", one.NotNow(byName["gpu-0"], oneReq, gpuUse("9")), []string{"nvidia.com/gpu: 0 of 8 free, 1 asked"}},
		{"fits and free", one.NotNow(byName["gpu-0"], oneReq, gpuUse("7")), nil},
		{"nearest: fewest reasons first, then by name", Nearest(h100, req, nodes, 2), []string{
			"gpu-2 (nvidia.com/gpu: 8 allocatable, 16 asked)",
			"gpu-0 (label nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB, not NVIDIA-H100-80GB-HBM3 (GPU type NVIDIA-H100-80GB-HBM3); nvidia.com/gpu: 8 allocatable, 16 asked)"}},
		{"busy: fitting nodes not free now, in order", Busy(one, oneReq, nodes, map[string]corev1.ResourceList{"gpu-0": gpuUse("8")}, 2), []string{
			"gpu-0 (nvidia.com/gpu: 0 of 8 free, 1 asked)", "gpu-cordoned (cordoned)"}},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestPlacementAsks(t *testing.T) {
	p := mustPlace(t, v1alpha1.HardwareRequirements{GPUCount: 2, GPUType: "NVIDIA-H100-80GB-HBM3"},
		v1alpha1.Scheduling{Affinity: hostAffinity(corev1.NodeSelectorOpIn, "gpu-2")})
	want := "node selector nvidia.com/gpu.present=true, nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3; " +
		"tolerations nvidia.com/gpu:NoSchedule (Exists); required node affinity; requests nvidia.com/gpu: 2"
	if got := p.Asks(p.Requests); got != want {
		t.Errorf("Asks:\n got %s\nwant %s", got, want)
	}
	if got := (Placement{}).Asks(nil); got != "nothing in particular" {
		t.Errorf("empty Asks = %q", got)
	}
	for tol, want := range map[corev1.Toleration]string{
		{Operator: corev1.TolerationOpExists}:                                           "every taint (Exists)",
		{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}:                     "k=v:NoExecute (Equal)",
		{Key: "k", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffect("")}: "k (Exists)",
	} {
		if got := TolerationString(tol); got != want {
			t.Errorf("TolerationString(%+v) = %q, want %q", tol, got, want)
		}
	}
}

func TestRequestsInUse(t *testing.T) {
	pod := func(name, node string, phase corev1.PodPhase, req ...string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
		for i := 0; i+1 < len(req); i += 2 {
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceName(req[i]): resource.MustParse(req[i+1])}}})
		}
		return p
	}
	pods := []corev1.Pod{
		pod("a", "gpu-0", corev1.PodRunning, "nvidia.com/gpu", "2", "cpu", "500m"),
		pod("b", "gpu-0", corev1.PodPending, "nvidia.com/gpu", "1", "cpu", "1"),
		pod("done", "gpu-0", corev1.PodSucceeded, "nvidia.com/gpu", "4"),
		pod("failed", "gpu-0", corev1.PodFailed, "nvidia.com/gpu", "4"),
		pod("unbound", "", corev1.PodPending, "nvidia.com/gpu", "4"),
		pod("mine", "gpu-1", corev1.PodRunning, "nvidia.com/gpu", "8"),
		pod("memory", "gpu-1", corev1.PodRunning, "memory", "1Gi"),
	}
	want := corev1.ResourceList{ResourceGPU: resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1")}
	got := RequestsInUse(pods, want, func(p *corev1.Pod) bool { return p.Name == "mine" })
	if len(got) != 1 {
		t.Fatalf("nodes in use %v, want gpu-0 only (gpu-1's pod is skipped, memory not asked)", got)
	}
	gpu, cpu := got["gpu-0"][ResourceGPU], got["gpu-0"][corev1.ResourceCPU]
	if gpu.Cmp(resource.MustParse("3")) != 0 || cpu.Cmp(resource.MustParse("1500m")) != 0 {
		t.Errorf("gpu-0 in use: %s GPUs, %s CPU; want 3 and 1500m", gpu.String(), cpu.String())
	}
}

func TestEffectiveRequests(t *testing.T) {
	got := EffectiveRequests(corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), ResourceGPU: resource.MustParse("1")},
	})
	if s := RequestsString(got); s != "cpu: 1, nvidia.com/gpu: 1" {
		t.Errorf("EffectiveRequests = %s", s)
	}
	if EffectiveRequests(corev1.ResourceRequirements{}) != nil {
		t.Error("no requests or limits: want nil")
	}
}

// Affinity terms: OR of terms, AND within one; matchFields on metadata.name; an empty term
// or a bad requirement matches nothing.
func TestRequiredAffinityMatches(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gpu-0", Labels: map[string]string{"zone": "a", "cores": "64"}}}
	term := func(exprs, fields []corev1.NodeSelectorRequirement) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: exprs, MatchFields: fields}
	}
	req := func(k string, op corev1.NodeSelectorOperator, v ...string) []corev1.NodeSelectorRequirement {
		return []corev1.NodeSelectorRequirement{{Key: k, Operator: op, Values: v}}
	}
	aff := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	for _, tc := range []struct {
		name string
		a    *corev1.Affinity
		want bool
	}{
		{"none", nil, true},
		{"preferred only", &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}, true},
		{"In", aff(term(req("zone", corev1.NodeSelectorOpIn, "a", "b"), nil)), true},
		{"NotIn", aff(term(req("zone", corev1.NodeSelectorOpNotIn, "a"), nil)), false},
		{"Exists", aff(term(req("zone", corev1.NodeSelectorOpExists), nil)), true},
		{"DoesNotExist", aff(term(req("gpu", corev1.NodeSelectorOpDoesNotExist), nil)), true},
		{"Gt", aff(term(req("cores", corev1.NodeSelectorOpGt, "32"), nil)), true},
		{"Lt", aff(term(req("cores", corev1.NodeSelectorOpLt, "32"), nil)), false},
		{"matchFields name", aff(term(nil, req("metadata.name", corev1.NodeSelectorOpIn, "gpu-0"))), true},
		{"OR of terms", aff(term(req("zone", corev1.NodeSelectorOpIn, "b"), nil), term(req("zone", corev1.NodeSelectorOpIn, "a"), nil)), true},
		{"AND within a term", aff(term(req("zone", corev1.NodeSelectorOpIn, "a"), req("metadata.name", corev1.NodeSelectorOpIn, "gpu-1"))), false},
		{"empty term", aff(term(nil, nil)), false},
		{"no terms", aff(), false},
		{"Gt with a word", aff(term(req("cores", corev1.NodeSelectorOpGt, "many"), nil)), false},
		{"unknown operator", aff(term(req("zone", "Near", "a"), nil)), false},
	} {
		if got := requiredAffinityMatches(tc.a, n); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// The taints Kubernetes puts on and takes off by itself (the ones a package set waits for)
// are all transient here: a node carrying one fits, and the count stays what it was.
func TestTransientTaintsCoverNodeConditionTaints(t *testing.T) {
	for k := range packageset.NodeConditionTaints {
		if transientTaints[k] == "" {
			t.Errorf("taint %s is in packageset.NodeConditionTaints but not transient here", k)
		}
	}
	rt, err := packageset.ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	if err != nil || !strings.Contains(transientTaints[rt.Key], "runtime-required") {
		t.Errorf("the runtime-required taint %s is not transient (%v)", v1alpha1.DefaultRuntimeRequiredTaint, err)
	}
}
