package packageset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Every pod a drain meets, under today's drain (spec.drain unset) and under each knob of
// spec.drain: what the drain does with it and, for a pod spec.drain keeps, why (kubectl
// drain's filters in kubectl's order: emptyDir before unmanaged).
func TestDrainPodsClass(t *testing.T) {
	running := func(name string, mod ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Labels: map[string]string{"app": name}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		for _, m := range mod {
			m(p)
		}
		return p
	}
	owned := func(kind string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "owner", Controller: ptr(true)}}
		}
	}
	emptyDir := func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	configMap := func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}})
	}
	label := func(k, v string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Labels[k] = v } }
	deleting := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
	phase := func(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }

	today := DrainPods{DeleteEmptyDirData: true, Force: true}
	strict := DrainPods{}
	skip := DrainPods{DeleteEmptyDirData: true, Force: true, Skip: labels.SelectorFromSet(labels.Set{"drain": "skip"}),
		NonInterrupt: labels.SelectorFromSet(labels.Set{"job": "train"})}
	self := DrainPods{DeleteEmptyDirData: true, Force: true, Self: types.NamespacedName{Namespace: "gantry-system", Name: "reconciler-0"}}

	for _, tc := range []struct {
		name string
		o    DrainPods
		pod  *corev1.Pod
		want DrainClass
		why  string
	}{
		{"today: bare pod evicted", today, running("bare"), DrainEvict, ""},
		{"today: emptyDir pod evicted", today, running("scratch", owned("ReplicaSet"), emptyDir), DrainEvict, ""},
		{"today: bare emptyDir pod evicted", today, running("both", emptyDir), DrainEvict, ""},
		{"today: pending pod evicted", today, running("pending", owned("ReplicaSet"), phase(corev1.PodPending)), DrainEvict, ""},
		{"succeeded pod left", strict, running("done", phase(corev1.PodSucceeded), emptyDir), DrainSkip, ""},
		{"DaemonSet pod left, even with emptyDir and strict", strict, running("ds", owned("DaemonSet"), emptyDir), DrainSkip, ""},
		{"kube-system left", strict, func() *corev1.Pod { p := running("dns"); p.Namespace = "kube-system"; return p }(), DrainSkip, ""},
		{"stage pod left", strict, running("stage", label(v1alpha1.LabelPackageSet, "gpu")), DrainSkip, ""},
		{"tolerating unschedulable left", strict, running("tol", func(p *corev1.Pod) {
			p.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}
		}), DrainSkip, ""},
		{"the reconciler left", self, func() *corev1.Pod { p := running("reconciler-0"); p.Namespace = "gantry-system"; return p }(), DrainSkip, ""},
		{"strict: emptyDir kept", strict, running("scratch", owned("ReplicaSet"), emptyDir), DrainKeep, "uses emptyDir data (drain.deleteEmptyDirData is false)"},
		{"strict: other volumes evicted", strict, running("cfg", owned("ReplicaSet"), configMap), DrainEvict, ""},
		{"strict: bare pod kept", strict, running("bare"), DrainKeep, "declares no controller (drain.force is false)"},
		{"strict: bare emptyDir pod, emptyDir named first", strict, running("both", emptyDir), DrainKeep, "uses emptyDir data (drain.deleteEmptyDirData is false)"},
		{"strict: StatefulSet pod evicted", strict, running("sts", owned("StatefulSet")), DrainEvict, ""},
		{"force only: emptyDir pod evicted, bare kept", DrainPods{DeleteEmptyDirData: true}, running("bare", emptyDir), DrainKeep, "declares no controller (drain.force is false)"},
		{"strict: terminating bare pod waited for", strict, running("going", deleting, emptyDir), DrainTerminating, ""},
		{"skipPodLabels: never drained", skip, running("agent", label("drain", "skip")), DrainSkip, ""},
		{"skipPodLabels: others evicted", skip, running("web", owned("ReplicaSet")), DrainEvict, ""},
		{"skipPodLabels and podNonInterruptLabels: waited for", skip, running("train", label("drain", "skip"), label("job", "train")), DrainHold, ""},
		{"podNonInterruptLabels: held even while terminating", skip, running("train", label("job", "train"), deleting), DrainHold, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := tc.o.Class(tc.pod)
			if got != tc.want || why != tc.why {
				t.Errorf("Class = %d %q, want %d %q", got, why, tc.want, tc.why)
			}
			if tc.o.DeleteEmptyDirData && tc.o.Force && tc.o.Skip == nil {
				if old := DrainClassOf(tc.pod, tc.o.NonInterrupt, tc.o.Self); old != got {
					t.Errorf("DrainClassOf (today's drain) = %d, Class %d", old, got)
				}
			}
		})
	}
}

// spec.drain as the machine reads it: unset (the set's or a field) is today's drain; a grace
// period in whole seconds, rounded up.
func TestDrainSpecOf(t *testing.T) {
	dur := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	today := DrainSpec{DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail}
	for _, tc := range []struct {
		name string
		in   *v1alpha1.Drain
		want DrainSpec
	}{
		{"unset", nil, today},
		{"empty", &v1alpha1.Drain{}, today},
		{"grace 30s", &v1alpha1.Drain{GracePeriod: dur(30 * time.Second)}, DrainSpec{GracePeriod: ptr(int64(30)), DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail}},
		{"grace 0s", &v1alpha1.Drain{GracePeriod: dur(0)}, DrainSpec{GracePeriod: ptr(int64(0)), DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail}},
		{"grace 1.5s rounds up", &v1alpha1.Drain{GracePeriod: dur(1500 * time.Millisecond)}, DrainSpec{GracePeriod: ptr(int64(2)), DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail}},
		{"negative grace (refused by the CRD) is the pod's own", &v1alpha1.Drain{GracePeriod: dur(-time.Second)}, today},
		{"timeout 0s is none", &v1alpha1.Drain{Timeout: dur(0)}, today},
		{"timeout, Continue", &v1alpha1.Drain{Timeout: dur(10 * time.Minute), OnTimeout: v1alpha1.DrainTimeoutContinue},
			DrainSpec{Timeout: 10 * time.Minute, DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutContinue}},
		{"strict", &v1alpha1.Drain{DeleteEmptyDirData: ptr(false), Force: ptr(false), Timeout: dur(time.Hour), OnTimeout: v1alpha1.DrainTimeoutFail},
			DrainSpec{Timeout: time.Hour, OnTimeout: v1alpha1.DrainTimeoutFail}},
		{"non-interrupt timeout, Drain", &v1alpha1.Drain{NonInterruptTimeout: dur(2 * time.Hour), OnNonInterruptTimeout: v1alpha1.NonInterruptTimeoutDrain},
			DrainSpec{DeleteEmptyDirData: true, Force: true, OnTimeout: v1alpha1.DrainTimeoutFail, NonInterruptTimeout: 2 * time.Hour, OnNonInterruptTimeout: v1alpha1.NonInterruptTimeoutDrain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DrainSpecOf(tc.in)
			if (got.GracePeriod == nil) != (tc.want.GracePeriod == nil) || got.GracePeriod != nil && *got.GracePeriod != *tc.want.GracePeriod {
				t.Errorf("GracePeriod %v, want %v", got.GracePeriod, tc.want.GracePeriod)
			}
			got.GracePeriod, tc.want.GracePeriod = nil, nil
			if tc.want.OnNonInterruptTimeout == "" {
				tc.want.OnNonInterruptTimeout = v1alpha1.NonInterruptTimeoutFail // the default
			}
			if got != tc.want {
				t.Errorf("DrainSpecOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A skipPodLabels selector that does not parse (the CRD checks lengths, not characters) makes
// the set Stalled with InvalidSpec naming the field; so does podNonInterruptLabels.
func TestDrainPodsOfInvalid(t *testing.T) {
	spec := &v1alpha1.PackageSetSpec{Drain: &v1alpha1.Drain{SkipPodLabels: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a b"}}}}
	if _, err := DrainPodsOf(spec, types.NamespacedName{}); err == nil || err.Error()[:24] != "spec.drain.skipPodLabels" {
		t.Fatalf("DrainPodsOf: %v", err)
	}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Spec: *spec}
	set.Spec.Packages = []v1alpha1.Package{{Name: "driver", Version: "1.0.0", Image: "x"}}
	var f SetFacts
	SpecFacts(set, &f)
	if f.SpecError == "" {
		t.Fatal("no SpecError")
	}
	d, err := Plan(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Conditions {
		if c.Type == v1alpha1.ConditionStalled && (c.Status != metav1.ConditionTrue || c.Reason != ReasonInvalidSpec) {
			t.Errorf("Stalled %+v", c)
		}
	}
}
