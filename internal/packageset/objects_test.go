package packageset

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestUntolerated(t *testing.T) {
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	soft := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	evict := corev1.Taint{Key: "maint", Value: "x", Effect: corev1.TaintEffectNoExecute}
	cordon := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	base := StageTolerations(&v1alpha1.PackageSet{})
	withGPU := StageTolerations(&v1alpha1.PackageSet{Spec: v1alpha1.PackageSetSpec{AdditionalTolerations: []corev1.Toleration{
		{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}})
	for _, c := range []struct {
		name   string
		taints []corev1.Taint
		tols   []corev1.Toleration
		want   string
	}{
		{"no taints", nil, base, ""},
		{"the cordon's own taint", []corev1.Taint{cordon}, base, ""},
		{"PreferNoSchedule ignored", []corev1.Taint{soft}, base, ""},
		{"GPU taint without toleration", []corev1.Taint{soft, gpu}, base, "nvidia.com/gpu=present:NoSchedule"},
		{"GPU taint tolerated", []corev1.Taint{gpu, cordon}, withGPU, ""},
		{"NoExecute not tolerated", []corev1.Taint{gpu, evict}, withGPU, "maint=x:NoExecute"},
	} {
		if got := Untolerated(c.taints, c.tols); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TaintHold: which untolerated taints block a node (Stalled: the user must act) and which it
// waits for (a controller removes them): Kubernetes' node condition taints on any set, quoting
// the node condition in the kubelet's words; every taint on a runtime-required set (Skyhook
// waits); a blocking taint wins and is the first one; tolerated and PreferNoSchedule taints
// count for neither.
func TestTaintHold(t *testing.T) {
	gpu := corev1.Taint{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}
	driver := corev1.Taint{Key: "example.com/driver", Value: "installing", Effect: corev1.TaintEffectNoSchedule}
	maint := corev1.Taint{Key: "maint", Value: "x", Effect: corev1.TaintEffectNoExecute}
	soft := corev1.Taint{Key: "soft", Effect: corev1.TaintEffectPreferNoSchedule}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
	uninit := corev1.Taint{Key: "node.cloudprovider.kubernetes.io/uninitialized", Value: "true", Effect: corev1.TaintEffectNoSchedule}
	disk := corev1.Taint{Key: corev1.TaintNodeDiskPressure, Effect: corev1.TaintEffectNoSchedule}
	runtime, err := ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	if err != nil {
		t.Fatal(err)
	}
	base := append(StageTolerations(&v1alpha1.PackageSet{}), RuntimeToleration(runtime))
	withGPU := append(append([]corev1.Toleration(nil), base...), corev1.Toleration{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
	kubeletDown := []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "container runtime network not ready: NetworkReady=false"},
	}
	for _, c := range []struct {
		name             string
		taints           []corev1.Taint
		conds            []corev1.NodeCondition
		tols             []corev1.Toleration
		runtimeRequired  bool
		blocked, waitFor string
	}{
		{"no taints", nil, nil, base, false, "", ""},
		{"the runtime-required taint itself: tolerated", []corev1.Taint{runtime}, nil, base, true, "", ""},
		{"PreferNoSchedule: neither", []corev1.Taint{soft}, nil, base, true, "", ""},
		{"another taint on a set that is not runtime-required: blocked", []corev1.Taint{gpu}, nil, base, false, "nvidia.com/gpu=present:NoSchedule", ""},
		{"another taint on a runtime-required set: waits (Skyhook)", []corev1.Taint{runtime, driver}, nil, base, true, "", "example.com/driver=installing:NoSchedule"},
		{"two other taints on a runtime-required set: waits for both", []corev1.Taint{driver, runtime, maint}, nil, base, true, "", "example.com/driver=installing:NoSchedule; maint=x:NoExecute"},
		{"tolerated taint on a runtime-required set: neither", []corev1.Taint{runtime, gpu}, nil, withGPU, true, "", ""},
		{"not-ready on any set: waits, in the kubelet's words", []corev1.Taint{notReady}, kubeletDown, base, false, "",
			"node.kubernetes.io/not-ready:NoSchedule (node condition Ready=False KubeletNotReady: container runtime network not ready: NetworkReady=false)"},
		{"not-ready without its condition: waits, the taint alone", []corev1.Taint{notReady}, nil, base, false, "", "node.kubernetes.io/not-ready:NoSchedule"},
		{"cloud uninitialized: waits (no condition)", []corev1.Taint{uninit}, kubeletDown, base, false, "", "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule"},
		{"disk pressure, condition absent: waits", []corev1.Taint{disk}, kubeletDown, base, false, "", "node.kubernetes.io/disk-pressure:NoSchedule"},
		{"blocked beside a condition taint: both said", []corev1.Taint{notReady, gpu, driver}, nil, base, false, "nvidia.com/gpu=present:NoSchedule", "node.kubernetes.io/not-ready:NoSchedule"},
	} {
		blocked, waitFor := TaintHold(c.taints, c.conds, c.tols, c.runtimeRequired)
		if blocked != c.blocked || waitFor != c.waitFor {
			t.Errorf("%s: TaintHold = %q, %q; want %q, %q", c.name, blocked, waitFor, c.blocked, c.waitFor)
		}
	}
}

func TestGateOf(t *testing.T) {
	set := func(name string, prio int32, mod func(*v1alpha1.PackageSet)) v1alpha1.PackageSet {
		s := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PackageSetSpec{Priority: prio,
			NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}}}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	me := set("me", 100, nil)
	gpuNode := map[string]string{"pool": "gpu"}
	done := func(names ...string) map[string]string {
		m := map[string]string{}
		for _, n := range names {
			m[v1alpha1.AnnotationNodeStatusPrefix+n] = "complete"
		}
		return m
	}
	now := metav1.Now()
	for _, c := range []struct {
		name       string
		others     []v1alpha1.PackageSet
		ann        map[string]string
		want       Gate
		by         string
		incomplete map[string]bool
	}{
		{"alone", nil, nil, GateOpen, "", nil},
		{"earlier complete", []v1alpha1.PackageSet{set("a", 10, nil)}, done("a"), GateOpen, "", nil},
		{"earlier not complete", []v1alpha1.PackageSet{set("a", 10, nil)}, nil, GateWaiting, "a", nil},
		{"later not complete", []v1alpha1.PackageSet{set("z", 300, nil)}, nil, GateOpen, "", nil},
		{"default priority 200 is later", []v1alpha1.PackageSet{set("a", 0, nil)}, nil, GateOpen, "", nil},
		{"same priority, earlier name", []v1alpha1.PackageSet{set("a", 100, nil)}, nil, GateWaiting, "a", nil},
		{"same priority, later name", []v1alpha1.PackageSet{set("z", 100, nil)}, nil, GateOpen, "", nil},
		{"earlier paused", []v1alpha1.PackageSet{set("a", 10, nil), set("b", 20, func(s *v1alpha1.PackageSet) { s.Spec.Paused = true })}, done("a", "b"), GatePaused, "b", nil},
		{"paused wins over waiting", []v1alpha1.PackageSet{set("a", 10, nil), set("b", 20, func(s *v1alpha1.PackageSet) { s.Spec.Paused = true })}, nil, GatePaused, "b", nil},
		{"earlier disabled skipped", []v1alpha1.PackageSet{set("a", 10, func(s *v1alpha1.PackageSet) { s.Spec.Disabled = true })}, nil, GateOpen, "", nil},
		{"earlier deleting skipped", []v1alpha1.PackageSet{set("a", 10, func(s *v1alpha1.PackageSet) { s.DeletionTimestamp = &now })}, nil, GateOpen, "", nil},
		{"earlier on other nodes", []v1alpha1.PackageSet{set("a", 10, func(s *v1alpha1.PackageSet) { s.Spec.NodeSelector.MatchLabels = map[string]string{"pool": "cpu"} })}, nil, GateOpen, "", nil},
		{"earlier with an invalid selector selects nothing", []v1alpha1.PackageSet{set("a", 10, func(s *v1alpha1.PackageSet) {
			s.Spec.NodeSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "pool", Operator: metav1.LabelSelectorOpIn}}}
		})}, nil, GateOpen, "", nil},
		{"itself skipped", []v1alpha1.PackageSet{me}, nil, GateOpen, "", nil},
		{"sequencing all: an earlier set incomplete elsewhere holds a node it does not select", []v1alpha1.PackageSet{set("a", 10, func(s *v1alpha1.PackageSet) {
			s.Spec.NodeSelector.MatchLabels = map[string]string{"pool": "cpu"}
		})}, nil, GateWaiting, "a", map[string]bool{"a": true}},
		{"sequencing all: a later set never holds", []v1alpha1.PackageSet{set("z", 300, nil)}, nil, GateOpen, "", map[string]bool{"z": true}},
	} {
		g, by := GateOf(&me, append(c.others, me), gpuNode, c.ann, c.incomplete)
		if g != c.want || by != c.by {
			t.Errorf("%s: %v by %q, want %v by %q", c.name, g, by, c.want, c.by)
		}
	}
}

// IncompleteEverywhere: a sequencing-all set is incomplete while any node it selects lacks
// its complete status; sets with sequencing node are never listed.
func TestIncompleteEverywhere(t *testing.T) {
	node := func(name, pool string, complete ...string) corev1.Node {
		ann := map[string]string{}
		for _, c := range complete {
			ann[v1alpha1.AnnotationNodeStatusPrefix+c] = "complete"
		}
		return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}, Annotations: ann}}
	}
	sets := []v1alpha1.PackageSet{
		{ObjectMeta: metav1.ObjectMeta{Name: "all-gpu"}, Spec: v1alpha1.PackageSetSpec{Sequencing: v1alpha1.SequencingAll, NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "all-cpu"}, Spec: v1alpha1.PackageSetSpec{Sequencing: v1alpha1.SequencingAll, NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "cpu"}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "per-node"}, Spec: v1alpha1.PackageSetSpec{NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"pool": "gpu"}}}},
	}
	got := IncompleteEverywhere(sets, []corev1.Node{node("g0", "gpu", "all-gpu"), node("g1", "gpu"), node("c0", "cpu", "all-cpu")})
	if !got["all-gpu"] || got["all-cpu"] || got["per-node"] {
		t.Errorf("incomplete %v, want only all-gpu", got)
	}
}

func TestDesiredPod(t *testing.T) {
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "drivers"}, Spec: v1alpha1.PackageSetSpec{
		AdditionalTolerations: []corev1.Toleration{{Key: "nvidia.com/gpu", Operator: corev1.TolerationOpExists}}}}
	pkg := &v1alpha1.Package{Name: "driver", Version: "1.0.0", Image: "img:1", Env: map[string]string{"B": "2", "A": "1"},
		EnvFrom:          []v1alpha1.EnvFromRef{{Name: "TOKEN", SecretKeyRef: &v1alpha1.KeyRef{Name: "s", Key: "k"}}},
		PodLabels:        map[string]string{"team": "gpu", v1alpha1.LabelPackageSet: "spoofed"},
		GracefulShutdown: &metav1.Duration{Duration: 90 * time.Second}}
	js := JobSpec{Name: "drivers-driver-ap-0123456789", Node: "gpu-0", Package: "driver", Version: "1.0.0", Image: "img:1", Stage: v1alpha1.StageApply, Timeout: 10 * time.Minute}

	j := DesiredPod(set, "gpu-0", "gantry-system", "gantry-reconciler", js, pkg, "cfg-abc")
	ps := j.Spec
	if j.Name != js.Name || j.Namespace != "gantry-system" || *ps.ActiveDeadlineSeconds != 600 || ps.NodeName != "gpu-0" ||
		ps.RestartPolicy != corev1.RestartPolicyNever || *ps.TerminationGracePeriodSeconds != 90 || len(j.OwnerReferences) != 0 {
		t.Errorf("pod %+v", j.Spec)
	}
	if a := ps.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v, want false: a stage gets no credential of the cluster's", a)
	}
	if j.Labels[v1alpha1.LabelStage] != "apply" || j.Labels[v1alpha1.LabelNode] != "gpu-0" || j.Labels[v1alpha1.LabelManagedBy] != "gantry-reconciler" {
		t.Errorf("labels %v", j.Labels)
	}
	if l := j.Labels; l["team"] != "gpu" || l[v1alpha1.LabelPackageSet] != "drivers" {
		t.Errorf("pod labels %v (ours must win)", l)
	}
	if len(ps.InitContainers) != 1 || ps.InitContainers[0].Args[0] != "apply" || len(ps.Containers) != 1 || ps.Containers[0].Args[0] != "apply-check" {
		t.Errorf("containers %+v %+v", ps.InitContainers, ps.Containers)
	}
	var names []string
	for _, e := range ps.Containers[0].Env {
		names = append(names, e.Name)
	}
	if got, _ := json.Marshal(names); string(got) != `["A","B","TOKEN","GANTRY_CONFIG_DIR","GANTRY_PACKAGE","GANTRY_VERSION","GANTRY_STAGE","GANTRY_NODE"]` {
		t.Errorf("env order %s", got)
	}
	if len(ps.Volumes) != 1 || ps.Volumes[0].ConfigMap.Name != "cfg-abc" || ps.Containers[0].VolumeMounts[0].MountPath != ConfigMountPath {
		t.Errorf("config volume %+v", ps.Volumes)
	}
	if len(ps.Tolerations) != 2 || ps.Tolerations[0].Key != corev1.TaintNodeUnschedulable {
		t.Errorf("tolerations %+v", ps.Tolerations)
	}

	// Interrupt: one container with the merged interrupt.
	ji := js
	ji.Stage, ji.Interrupt = v1alpha1.StageInterrupt, &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"a", "b"}}
	j = DesiredPod(set, "gpu-0", "ns", "m", ji, nil, "")
	if c := j.Spec.Containers; len(c) != 1 || len(j.Spec.InitContainers) != 0 || c[0].Name != "interrupt" ||
		string(mustJSON(c[0].Args)) != `["interrupt","service","a","b"]` || len(j.Spec.Volumes) != 0 {
		t.Errorf("interrupt job %+v", j.Spec)
	}
	// Soak check: the check only, its round annotated, stage label <check>-soak.
	js2 := js
	js2.SoakCheck, js2.SoakRound, js2.Stage = true, 2, v1alpha1.StageConfig
	j = DesiredPod(set, "gpu-0", "ns", "m", js2, pkg, "")
	if c := j.Spec.Containers; len(c) != 1 || c[0].Args[0] != "config-check" || j.Annotations["gantry.dev/soak-round"] != "2" ||
		j.Labels[v1alpha1.LabelStage] != "config-check-soak" {
		t.Errorf("soak pod %+v labels %v", j.Spec, j.Labels)
	}
}

func TestJobPackage(t *testing.T) {
	cur := v1alpha1.Package{Name: "driver", Version: "2.0.0", Image: "img:2"}
	set := &v1alpha1.PackageSet{Spec: v1alpha1.PackageSetSpec{Packages: []v1alpha1.Package{cur}}}
	old, _ := json.Marshal(v1alpha1.Package{Name: "driver", Version: "1.0.0", Image: "img:1"})
	if p, err := JobPackage(set, JobSpec{Package: "driver", Spec: old}); err != nil || p.Version != "1.0.0" {
		t.Errorf("recorded spec: %+v %v", p, err)
	}
	if p, err := JobPackage(set, JobSpec{Package: "driver"}); err != nil || p.Version != "2.0.0" {
		t.Errorf("current spec: %+v %v", p, err)
	}
	if p, err := JobPackage(set, JobSpec{Package: "gone"}); err != nil || p != nil {
		t.Errorf("unknown package: %+v %v", p, err)
	}
	if _, err := JobPackage(set, JobSpec{Package: "driver", Node: "n", Spec: []byte("{")}); err == nil {
		t.Error("a broken recorded spec is not an error")
	}
}

// StagePod: a package stage runs its recorded version's spec and mounts that version's config
// (the current one without a record), a stage without config mounts none, and a health check
// that left the spec asks for no Pod.
func TestStagePod(t *testing.T) {
	cur := v1alpha1.Package{Name: "driver", Version: "2.0.0", Image: "img", Config: map[string]string{"a": "2"}}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "drivers"}, Spec: v1alpha1.PackageSetSpec{Packages: []v1alpha1.Package{cur, {Name: "tool", Version: "1", Image: "t"}},
		Rollout: &v1alpha1.Rollout{HealthChecks: []v1alpha1.HealthCheck{{Name: "http", HTTPGet: &v1alpha1.HTTPGetCheck{URL: "http://x"}}}}}}
	old := mustJSON(v1alpha1.Package{Name: "driver", Version: "1.0.0", Image: "img", Config: map[string]string{"a": "1"}})
	for _, c := range []struct {
		name    string
		js      JobSpec
		version string // of the Pod's GANTRY_VERSION annotation; "" no Pod
		cfg     map[string]string
	}{
		{"current", JobSpec{Name: "p1", Package: "driver", Version: "2.0.0", Stage: v1alpha1.StageApply}, "2.0.0", cur.Config},
		{"recorded", JobSpec{Name: "p2", Package: "driver", Version: "1.0.0", Stage: v1alpha1.StageApply, Spec: old}, "1.0.0", map[string]string{"a": "1"}},
		{"no config", JobSpec{Name: "p3", Package: "tool", Version: "1", Stage: v1alpha1.StageApply}, "1", nil},
		{"health check", JobSpec{Name: "p4", Probe: "http", Timeout: time.Second}, "probe", nil},
		{"health check gone", JobSpec{Name: "p5", Probe: "gone"}, "", nil},
	} {
		pod, cfg, err := StagePod(set, "gpu-0", "ns", "m", c.js)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		switch {
		case c.version == "":
			if pod != nil || cfg != nil {
				t.Errorf("%s: pod %v, config %v; want none", c.name, pod, cfg)
			}
			continue
		case pod == nil:
			t.Fatalf("%s: no pod", c.name)
		case c.version != "probe" && pod.Annotations["gantry.dev/version"] != c.version:
			t.Errorf("%s: version %q, want %q", c.name, pod.Annotations["gantry.dev/version"], c.version)
		}
		if c.cfg == nil {
			if cfg != nil {
				t.Errorf("%s: config %+v, want none", c.name, cfg)
			}
			continue
		}
		if cfg == nil || cfg.Name != ConfigMapName("drivers", "driver", c.cfg) || cfg.Data["a"] != c.cfg["a"] {
			t.Errorf("%s: config %+v, want the one of %v", c.name, cfg, c.cfg)
		}
		mounted := false
		for _, v := range pod.Spec.Volumes {
			mounted = mounted || v.ConfigMap != nil && v.ConfigMap.Name == cfg.Name
		}
		if !mounted {
			t.Errorf("%s: pod does not mount %s", c.name, cfg.Name)
		}
	}
	if _, _, err := StagePod(set, "gpu-0", "ns", "m", JobSpec{Package: "driver", Node: "gpu-0", Spec: []byte("{")}); err == nil {
		t.Error("a broken recorded spec is not an error")
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Host access: explicit per package, on every container of the stage pod.
func TestDesiredPodHostAccess(t *testing.T) {
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu-drivers", UID: "u-1", Generation: 4}}
	pkg := &v1alpha1.Package{Name: "tuned", Version: "1.2", Image: "ghcr.io/acme/tuned",
		Host: &v1alpha1.HostAccess{Privileged: true, HostPID: true, RootMountPath: "/host"}}
	js := JobSpec{Name: "j", Package: "tuned", Version: "1.2", Image: "ghcr.io/acme/tuned:1.2", Stage: v1alpha1.StageApply, Timeout: time.Minute}
	spec := DesiredPod(set, "gpu-0", "ns", "m", js, pkg, "").Spec
	if !spec.HostPID || spec.HostNetwork {
		t.Errorf("hostPID %v hostNetwork %v", spec.HostPID, spec.HostNetwork)
	}
	if len(spec.Volumes) != 1 || spec.Volumes[0].HostPath == nil || spec.Volumes[0].HostPath.Path != "/" {
		t.Fatalf("volumes %+v", spec.Volumes)
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		if c.SecurityContext == nil || !*c.SecurityContext.Privileged || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/host" {
			t.Errorf("container %s: security %+v mounts %+v", c.Name, c.SecurityContext, c.VolumeMounts)
		}
	}
	// Without host access: nothing of the node.
	pkg.Host = nil
	spec = DesiredPod(set, "gpu-0", "ns", "m", js, pkg, "").Spec
	if spec.HostPID || len(spec.Volumes) != 0 || spec.Containers[0].SecurityContext != nil {
		t.Errorf("no host access asked, got %+v", spec)
	}
}

// Skyhook execution: the package image's content is copied to the host and the
// agent runs the stage and its check with Skyhook's arguments and environment; the interrupt
// gets Skyhook's encoded argument.
func TestDesiredPodSkyhook(t *testing.T) {
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "gpu-drivers", UID: "u-1", Generation: 4}}
	pkg := &v1alpha1.Package{Name: "tuned", Version: "1.2", Image: "ghcr.io/acme/tuned", Env: map[string]string{"PROFILE": "hpc"},
		Skyhook: &v1alpha1.SkyhookExecution{AgentImage: "ghcr.io/nvidia/skyhook/agent:6.3.0"}}
	js := JobSpec{Name: "j", Package: "tuned", Version: "1.2", Image: "ghcr.io/acme/tuned:1.2", Stage: v1alpha1.StageConfig, Timeout: time.Minute}
	spec := DesiredPod(set, "gpu-0", "ns", "m", js, pkg, "cfg").Spec
	copyDir := "/var/lib/skyhook/gpu-drivers/tuned-1.2-u-1-4"
	if len(spec.InitContainers) != 2 || len(spec.Containers) != 1 {
		t.Fatalf("containers: init %d main %d", len(spec.InitContainers), len(spec.Containers))
	}
	cp, stage, check := spec.InitContainers[0], spec.InitContainers[1], spec.Containers[0]
	if cp.Image != "ghcr.io/acme/tuned:1.2" || !strings.Contains(strings.Join(cp.Args, " "), "cp -r /skyhook-package/* /root/${SKYHOOK_DIR}") || cp.Env[0].Value != copyDir {
		t.Errorf("copy container %+v", cp)
	}
	if stage.Image != pkg.Skyhook.AgentImage || strings.Join(stage.Args, " ") != "config /root "+copyDir {
		t.Errorf("stage container image %s args %v", stage.Image, stage.Args)
	}
	if check.Image != pkg.Skyhook.AgentImage || strings.Join(check.Args, " ") != "config-check /root "+copyDir {
		t.Errorf("check container image %s args %v", check.Image, check.Args)
	}
	env := map[string]string{}
	for _, e := range stage.Env {
		env[e.Name] = e.Value
	}
	if env["PROFILE"] != "hpc" || env["SKYHOOK_ROOT_DIR"] != "/var/lib/skyhook/gpu-drivers" || env["SKYHOOK_LOG_DIR"] != "/var/log/skyhook/gpu-drivers" ||
		env["COPY_RESOLV"] != "false" || env["SKYHOOK_RESOURCE_ID"] != "gpu-drivers-u-1-4_tuned_1.2" {
		t.Errorf("agent env %v", env)
	}
	mounts := map[string]bool{}
	for _, m := range stage.VolumeMounts {
		mounts[m.MountPath] = true
	}
	if !mounts["/root"] || !mounts["/skyhook-package/configmaps"] || !spec.HostPID || !spec.HostNetwork || !*stage.SecurityContext.Privileged {
		t.Errorf("host access: mounts %v hostPID %v hostNetwork %v", mounts, spec.HostPID, spec.HostNetwork)
	}
	js.Stage, js.Interrupt = v1alpha1.StageInterrupt, &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"tuned"}}
	spec = DesiredPod(set, "gpu-0", "ns", "m", js, pkg, "").Spec
	// base64 of {"type":"service_restart","services":["tuned"]}
	if a := spec.Containers[0].Args; len(a) != 4 || a[0] != "interrupt" || a[3] != "eyJ0eXBlIjoic2VydmljZV9yZXN0YXJ0Iiwic2VydmljZXMiOlsidHVuZWQiXX0=" {
		t.Errorf("interrupt args %v", a)
	}
}

// A health check's Job: wget bounded by the check's timeout, the Job by the timeout plus the
// Pod's start allowance (a bare timeout failed healthy checks on a real kubelet).
func TestDesiredProbePod(t *testing.T) {
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "drivers"}}
	js := JobSpec{Name: "drivers-health-http-0", Node: "gpu-0", Probe: "http", Timeout: 5 * time.Second, SoakCheck: true, SoakRound: 2}
	hc := v1alpha1.HealthCheck{Name: "http", HTTPGet: &v1alpha1.HTTPGetCheck{URL: "http://$(NODE_IP):9400/healthz"}}
	j := DesiredProbePod(set, "gpu-0", "gantry-system", "gantry-reconciler", js, hc)
	c := j.Spec.Containers[0]
	if a := j.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v, want false", a)
	}
	if got := *j.Spec.ActiveDeadlineSeconds; got != 35 {
		t.Errorf("activeDeadlineSeconds %d, want 35 (5s check + 30s to start)", got)
	}
	if c.Image != DefaultHealthCheckImage || strings.Join(append(c.Command, c.Args...), " ") != "wget -q -T 5 -O /dev/null http://$(NODE_IP):9400/healthz" {
		t.Errorf("check container %s %q %q", c.Image, c.Command, c.Args)
	}
	if j.Annotations["gantry.dev/soak-round"] != "2" || j.Spec.NodeName != "gpu-0" {
		t.Errorf("pod %+v", j.ObjectMeta)
	}
}

// SystemdFailedUnitsScript, run by sh with a stand-in nsenter that prints what systemctl
// would (or fails as it would): at most max failed units passes; more fails naming them;
// systemctl failing is its own failure with its words.
func TestSystemdFailedUnitsScript(t *testing.T) {
	for _, tc := range []struct {
		name, systemctl string
		fails           bool
		max             int32
		wantCode        int
		wantOut         string
	}{
		{name: "none failed", systemctl: "", wantCode: 0, wantOut: "0 failed systemd units on the node (at most 0 allowed)"},
		{name: "two failed, max 0", systemctl: "nvidia-persistenced.service loaded failed failed NVIDIA Persistence Daemon\nfabricmanager.service loaded failed failed Fabric Manager\n",
			wantCode: 1, wantOut: "2 failed systemd units on the node (at most 0 allowed): nvidia-persistenced.service fabricmanager.service"},
		{name: "one failed, max 1", systemctl: "fabricmanager.service loaded failed failed Fabric Manager\n", max: 1, wantCode: 0,
			wantOut: "1 failed systemd units on the node (at most 1 allowed): fabricmanager.service"},
		{name: "systemctl fails", systemctl: "System has not been booted with systemd as init system (PID 1). Can't operate.", fails: true, wantCode: 2,
			wantOut: "systemctl on the node failed: System has not been booted with systemd as init system (PID 1). Can't operate."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			code := 0
			if tc.fails {
				code = 1
			}
			if err := os.WriteFile(filepath.Join(dir, "out"), []byte(tc.systemctl), 0o644); err != nil {
				t.Fatal(err)
			}
			fake := fmt.Sprintf("#!/bin/sh\ncat %s\nexit %d\n", filepath.Join(dir, "out"), code)
			if err := os.WriteFile(filepath.Join(dir, "nsenter"), []byte(fake), 0o755); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", SystemdFailedUnitsScript(tc.max))
			cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			got := 0
			if ee, ok := err.(*exec.ExitError); ok {
				got = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if got != tc.wantCode || strings.TrimSpace(string(out)) != tc.wantOut {
				t.Errorf("exit %d, output %q; want %d, %q", got, out, tc.wantCode, tc.wantOut)
			}
		})
	}
}

func TestNegativeResources(t *testing.T) {
	q := resource.MustParse
	ok := []v1alpha1.Package{{Name: "a", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": q("0"), "memory": q("1Gi")}}}}
	if err := NegativeResources(ok); err != nil {
		t.Errorf("zero and positive: %v", err)
	}
	bad := append(ok, v1alpha1.Package{Name: "b", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"memory": q("-1Mi"), "cpu": q("-2")}}})
	err := NegativeResources(bad)
	if err == nil || !strings.HasPrefix(err.Error(), "spec.packages[1].resources.limits[cpu] = -2 is negative") {
		t.Errorf("negative limit: %v", err)
	}
}

// complianceEvidence is an evidence file in NixFleet Compliance's format (schemaVersion 1,
// docs/evidence-format.md): one control per framework mix, pretty-printed as the collector
// writes it, with an escaped quote in a details string and a control of no framework.
const complianceEvidence = `{
  "schemaVersion": 1,
  "hostname": "gpu-0",
  "collectedAt": "2026-11-29T10:00:00Z",
  "controls": [
    {
      "controlId": "access-control",
      "passed": true,
      "frameworkArticles": {"nis2": ["21(i)"], "iso27001": ["A.8.2", "A.8.3"], "dora": ["Art. 9"]},
      "details": {"password_auth_disabled": true, "idle_timeout_seconds": 900, "note": "sshd -T says \"no\""},
      "schema": "anssi-bp028/v1"
    },
    {
      "controlId": "secure-boot",
      "passed": false,
      "frameworkArticles": {"nis2": ["21(e)"], "anssi-bp028": ["R3"]},
      "details": {"secureboot_enabled": false, "error": "EFI variable SecureBoot reads 0"}
    },
    {
      "controlId": "audit-logging",
      "passed": true,
      "frameworkArticles": {"anssi-bp028": []}
    },
    {
      "controlId": "synthetic",
      "passed": false,
      "frameworkArticles": {}
    }
  ]
}
`

// ComplianceEvidenceScript, run by sh against an evidence file under a stand-in host root, as
// NixFleet's evidence runner judges it: the controls mapped to the framework (a key of their
// frameworkArticles, even with no article) all passed: pass; one failed: fail naming it; none
// mapped: fail; a missing file, broken JSON or another schemaVersion: fail (exit 2, "probe
// failure to execute = Fail"). Run by the host's sh and awk, and by busybox's (the check's
// image) when bin/busybox is there.
func TestComplianceEvidenceScript(t *testing.T) {
	type tc struct {
		name, framework, path, evidence string // evidence "": no file
		wantCode                        int
		wantOut                         string
	}
	const at = "(evidence /var/lib/nixfleet-compliance/evidence.json, collected 2026-11-29T10:00:00Z)"
	cases := []tc{
		{name: "dora: all passed", framework: "dora", evidence: complianceEvidence, wantOut: "framework dora: all 1 controls passed " + at},
		{name: "iso27001: all passed", framework: "iso27001", evidence: complianceEvidence, wantOut: "framework iso27001: all 1 controls passed " + at},
		{name: "nis2: secure-boot failed", framework: "nis2", evidence: complianceEvidence, wantCode: 1,
			wantOut: "framework nis2: 1 of 2 controls failed: secure-boot " + at},
		{name: "anssi: a key with no article counts", framework: "anssi-bp028", evidence: complianceEvidence, wantCode: 1,
			wantOut: "framework anssi-bp028: 1 of 2 controls failed: secure-boot " + at},
		{name: "no control maps to the framework", framework: "dora", wantCode: 1,
			evidence: `{"schemaVersion":1,"hostname":"h","collectedAt":"2026-11-29T10:00:00Z","controls":[{"controlId":"x","passed":true,"frameworkArticles":{"nis2":["21(a)"]}},{}]}`,
			wantOut:  "no control in NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json maps to framework dora (collected 2026-11-29T10:00:00Z): framework dora fails"},
		{name: "an empty control before a mapped one", framework: "nis2",
			evidence: `{"schemaVersion":1,"collectedAt":"t","controls":[{},{"controlId":"x","passed":true,"frameworkArticles":{"nis2":["21(a)"]}}]}`,
			wantOut:  "framework nis2: all 1 controls passed (evidence /var/lib/nixfleet-compliance/evidence.json, collected t)"},
		{name: "missing file", framework: "nis2", wantCode: 2,
			wantOut: "NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json is missing on the node (compliance-evidence-collector has not written it): framework nis2 fails"},
		{name: "not JSON", framework: "nis2", evidence: `{"schemaVersion": 1, "controls": [`, wantCode: 2,
			wantOut: "NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json is not JSON (unexpected end of input at byte 36): framework nis2 fails"},
		{name: "legacy format (no schemaVersion)", framework: "nis2", wantCode: 2,
			evidence: `{"host":"h","timestamp":"2026-04-05T10:00:00Z","controls":[{"control":"access-control","status":"compliant","framework_articles":{"nis2":["21(i)"]}}],"overall":"1/1 controls compliant"}`,
			wantOut:  "NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json has schemaVersion none, not 1 (upgrade nixfleet-compliance): framework nis2 fails"},
		// A file that is not evidence (a service account token): its words never reach the
		// message, which conditions and events show to every reader of the set.
		{name: "a token, not JSON", framework: "nis2", evidence: "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0LXRva2Vu.sig-_x", wantCode: 2,
			wantOut: "NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json is not JSON (unexpected value at byte 45): framework nis2 fails"},
		{name: "schemaVersion a string", framework: "nis2", evidence: `{"schemaVersion": "hunter2", "controls": []}`, wantCode: 2,
			wantOut: "NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json has schemaVersion not a number, not 1 (upgrade nixfleet-compliance): framework nis2 fails"},
		{name: "schemaVersion 2", framework: "nis2", evidence: `{"schemaVersion": 2, "controls": []}`, wantCode: 2,
			wantOut: "NixFleet compliance evidence /var/lib/nixfleet-compliance/evidence.json has schemaVersion 2, not 1 (upgrade nixfleet-compliance): framework nis2 fails"},
		{name: "passed not true", framework: "nis2", wantCode: 1,
			evidence: `{"schemaVersion":1,"collectedAt":"t","controls":[{"controlId":"a","passed":"true","frameworkArticles":{"nis2":[]}},{"controlId":"b","passed":null,"frameworkArticles":{"nis2":[]}}]}`,
			wantOut:  "framework nis2: 2 of 2 controls failed: a b (evidence /var/lib/nixfleet-compliance/evidence.json, collected t)"},
		{name: "own path", framework: "nis2", path: "/srv/compliance/evidence.json", wantCode: 1, evidence: complianceEvidence,
			wantOut: "framework nis2: 1 of 2 controls failed: secure-boot (evidence /srv/compliance/evidence.json, collected 2026-11-29T10:00:00Z)"},
	}
	shells := map[string]string{"host sh and awk": ""}
	if bb, err := filepath.Abs("../../bin/busybox"); err == nil {
		if _, err := os.Stat(bb); err == nil {
			dir := t.TempDir()
			for _, a := range []string{"sh", "awk", "cat"} {
				if err := os.Symlink(bb, filepath.Join(dir, a)); err != nil {
					t.Fatal(err)
				}
			}
			shells["busybox"] = dir
		}
	}
	for shell, bin := range shells {
		for _, c := range cases {
			t.Run(shell+"/"+c.name, func(t *testing.T) {
				root := t.TempDir()
				path := c.path
				if path == "" {
					path = v1alpha1.DefaultComplianceEvidencePath
				}
				if c.evidence != "" {
					if err := os.MkdirAll(filepath.Join(root, filepath.Dir(path)), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(root, path), []byte(c.evidence), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				sh := "sh"
				if bin != "" {
					sh = filepath.Join(bin, "sh")
				}
				cmd := exec.Command(sh, "-c", ComplianceEvidenceScript(root, v1alpha1.ComplianceCheck{Framework: c.framework, EvidencePath: c.path}))
				if bin != "" {
					cmd.Env = append(os.Environ(), "PATH="+bin)
				}
				out, err := cmd.CombinedOutput()
				got := 0
				if ee, ok := err.(*exec.ExitError); ok {
					got = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if got != c.wantCode || strings.TrimSpace(string(out)) != c.wantOut {
					t.Errorf("exit %d, output %q; want %d, %q", got, out, c.wantCode, c.wantOut)
				}
			})
		}
	}
}

// A compliance check's Pod: busybox in a privileged pod in the host PID namespace (it reads
// the evidence through /proc/1/root), running ComplianceEvidenceScript for the framework, with
// the default evidence path when none is given; an image of the check's own replaces busybox.
func TestDesiredProbePodCompliance(t *testing.T) {
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "drivers"}}
	js := JobSpec{Name: "drivers-health-nis2-0", Node: "gpu-0", Probe: "nis2", Timeout: time.Minute, SoakCheck: true}
	hc := v1alpha1.HealthCheck{Name: "nis2", Compliance: &v1alpha1.ComplianceCheck{Framework: "nis2"}, Mode: v1alpha1.HealthCheckObserve}
	p := DesiredProbePod(set, "gpu-0", "gantry-system", "gantry-reconciler", js, hc)
	c := p.Spec.Containers[0]
	if !p.Spec.HostPID || c.SecurityContext == nil || c.SecurityContext.Privileged == nil || !*c.SecurityContext.Privileged {
		t.Errorf("hostPID %v securityContext %+v: want a privileged pod in the host PID namespace", p.Spec.HostPID, c.SecurityContext)
	}
	want := ComplianceEvidenceScript(HostRoot, v1alpha1.ComplianceCheck{Framework: "nis2"})
	if c.Image != DefaultHealthCheckImage || len(c.Command) != 3 || c.Command[0] != "sh" || c.Command[2] != want || len(c.Args) != 0 {
		t.Errorf("check container %s %q %q", c.Image, c.Command, c.Args)
	}
	if !strings.Contains(want, "f='/proc/1/root/var/lib/nixfleet-compliance/evidence.json'") || !strings.Contains(want, "-v fw='nis2'") {
		t.Errorf("script does not read the default evidence under /proc/1/root for nis2:\n%s", want)
	}
	hc.Image, hc.Compliance.EvidencePath = "registry.local/tools:1", "/srv/evidence.json"
	c = DesiredProbePod(set, "gpu-0", "gantry-system", "gantry-reconciler", js, hc).Spec.Containers[0]
	if c.Image != "registry.local/tools:1" || !strings.Contains(c.Command[2], "f='/proc/1/root/srv/evidence.json'") {
		t.Errorf("own image and path: %s %q", c.Image, c.Command)
	}
}
