package packageset

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestParseTaint(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want corev1.Taint
		err  string
	}{
		{in: v1alpha1.DefaultRuntimeRequiredTaint, want: corev1.Taint{Key: "gantry.dev/runtime-required", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
		{in: "skyhook.nvidia.com=runtime-required:NoSchedule", want: corev1.Taint{Key: "skyhook.nvidia.com", Value: "runtime-required", Effect: corev1.TaintEffectNoSchedule}},
		{in: "example.com/gate:NoExecute", want: corev1.Taint{Key: "example.com/gate", Effect: corev1.TaintEffectNoExecute}},
		{in: "gate=true", err: "want key=value:Effect"},
		{in: "gate=true:Never", err: `effect "Never"`},
		{in: "=x:NoSchedule", err: "empty key"},
	} {
		got, err := ParseTaint(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %+v, %v; want %+v", tc.in, got, err, tc.want)
		}
	}
}

func rrSet(name string, selector map[string]string, mut ...func(*v1alpha1.PackageSet)) v1alpha1.PackageSet {
	s := v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.PackageSetSpec{NodeSelector: metav1.LabelSelector{MatchLabels: selector}, RuntimeRequired: true}}
	for _, m := range mut {
		m(&s)
	}
	return s
}

// RuntimeHolders: which runtime-required sets select a node and are not complete there.
// runtimeRequiredCordonAfter: RuntimeHolders names the first selecting runtime-required set
// that asks (disabled ones and sets that do not select the node do not count), and PlanRuntime
// cordons exactly the nodes it untaints whose holders ask.
func TestRuntimeCordonAfter(t *testing.T) {
	gpu := map[string]string{"pool": "gpu"}
	mk := func(name string, cordonAfter, disabled bool, pool string) v1alpha1.PackageSet {
		s := v1alpha1.PackageSet{}
		s.Name = name
		s.Spec.RuntimeRequired, s.Spec.RuntimeRequiredCordonAfter, s.Spec.Disabled = true, cordonAfter, disabled
		s.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}
		return s
	}
	sets := []v1alpha1.PackageSet{mk("z-asks", true, false, "gpu"), mk("b-asks", true, false, "gpu"), mk("a-disabled", true, true, "gpu"),
		mk("a-other-pool", true, false, "cpu"), mk("plain", false, false, "gpu")}
	self := sets[4]
	if _, _, got := RuntimeHolders(&self, sets, gpu, nil, v1alpha1.StatusComplete); got != "b-asks" {
		t.Errorf("cordonAfter = %q, want b-asks", got)
	}
	if _, _, got := RuntimeHolders(&self, []v1alpha1.PackageSet{self}, gpu, nil, v1alpha1.StatusComplete); got != "" {
		t.Errorf("no set asks: cordonAfter = %q", got)
	}
	d := PlanRuntime(RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{
		{Name: "done-asks", Selected: true, Tainted: true, Touched: true, Required: 2, CordonAfter: "b-asks"},
		{Name: "done-plain", Selected: true, Tainted: true, Touched: true, Required: 1},
		{Name: "busy-asks", Selected: true, Tainted: true, Touched: true, Required: 2, Holding: []string{"z-asks"}, CordonAfter: "b-asks"},
	}})
	if !reflect.DeepEqual(d.Untaint, []string{"done-asks", "done-plain"}) || !reflect.DeepEqual(d.CordonAfter, map[string]string{"done-asks": "b-asks"}) {
		t.Errorf("untaint %v cordonAfter %v", d.Untaint, d.CordonAfter)
	}
}

func TestRuntimeHolders(t *testing.T) {
	gpu := map[string]string{"pool": "gpu"}
	now := metav1.Now()
	sets := []v1alpha1.PackageSet{
		rrSet("a", gpu),
		rrSet("b", gpu),
		rrSet("cpu-only", map[string]string{"pool": "cpu"}),
		rrSet("plain", gpu, func(s *v1alpha1.PackageSet) { s.Spec.RuntimeRequired = false }),
		rrSet("off", gpu, func(s *v1alpha1.PackageSet) { s.Spec.Disabled = true }),
		rrSet("gone", gpu, func(s *v1alpha1.PackageSet) { s.DeletionTimestamp = &now }),
		rrSet("bad", nil, func(s *v1alpha1.PackageSet) {
			s.Spec.NodeSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: "In"}}
		}),
	}
	status := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[v1alpha1.AnnotationNodeStatusPrefix+kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		set      v1alpha1.PackageSet
		ann      map[string]string
		self     Status
		required int
		holding  []string
	}{
		{name: "both incomplete", set: sets[0], ann: status(), self: v1alpha1.StatusInProgress, required: 2, holding: []string{"a", "b"}},
		// The set's own status comes from the pass, not from its (older) annotation.
		{name: "self complete this pass, b not", set: sets[0], ann: status("a", "in_progress"), self: v1alpha1.StatusComplete, required: 2, holding: []string{"b"}},
		{name: "self complete, b complete", set: sets[0], ann: status("b", "complete"), self: v1alpha1.StatusComplete, required: 2},
		{name: "annotation complete but pass says erroring", set: sets[0], ann: status("a", "complete", "b", "complete"), self: v1alpha1.StatusErroring, required: 2, holding: []string{"a"}},
		// A non-runtime-required set's pass reads every set from the annotations.
		{name: "plain set sees a and b complete", set: sets[3], ann: status("a", "complete", "b", "complete"), self: v1alpha1.StatusInProgress, required: 2},
		{name: "plain set sees b waiting", set: sets[3], ann: status("a", "complete", "b", "waiting"), self: v1alpha1.StatusComplete, required: 2, holding: []string{"b"}},
		// The set's current spec wins over the listed one (the cache may be older).
		{name: "set no longer runtime-required", set: rrSet("a", gpu, func(s *v1alpha1.PackageSet) { s.Spec.RuntimeRequired = false }), ann: status("b", "complete"), self: v1alpha1.StatusInProgress, required: 1},
		{name: "set not listed yet", set: rrSet("new", gpu), ann: status("a", "complete", "b", "complete"), self: v1alpha1.StatusWaiting, required: 3, holding: []string{"new"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			required, holding, _ := RuntimeHolders(&tc.set, sets, gpu, tc.ann, tc.self)
			if required != tc.required || !reflect.DeepEqual(holding, tc.holding) {
				t.Errorf("required %d holding %v; want %d %v", required, holding, tc.required, tc.holding)
			}
		})
	}
}

// PlanRuntime: per node, which lose the taint, which gain it, which stay held.
func TestPlanRuntime(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       RuntimeFacts
		taint   []string
		untaint []string
		regated []string
		held    map[string][]string
	}{
		{name: "per node: a complete loses the taint, b still running keeps it",
			f: RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{
				{Name: "b", Selected: true, Tainted: true, Touched: true, Required: 1, Holding: []string{"s"}},
				{Name: "a", Selected: true, Tainted: true, Touched: true, Required: 1},
			}},
			untaint: []string{"a"}, held: map[string][]string{"b": {"s"}}},
		{name: "erroring node keeps the taint",
			f: RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{
				{Name: "a", Selected: true, Tainted: true, Touched: true, Required: 2, Holding: []string{"other"}},
			}},
			held: map[string][]string{"a": {"other"}}},
		{name: "no runtime-required set selects the node: the taint stays",
			f:    RuntimeFacts{Nodes: []RuntimeNode{{Name: "a", Selected: true, Tainted: true, Touched: true}}},
			held: map[string][]string{"a": nil}},
		{name: "untainted complete node: nothing to do",
			f: RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{{Name: "a", Selected: true, Touched: true, Required: 1}}}},
		{name: "a deleting set's pass releases a node the others finished",
			f:       RuntimeFacts{RuntimeRequired: true, Deleting: true, Nodes: []RuntimeNode{{Name: "a", Selected: true, Tainted: true, Touched: true, Required: 1}}},
			untaint: []string{"a"}},
		{name: "auto-taint: a new node is tainted, a touched one never",
			f: RuntimeFacts{RuntimeRequired: true, AutoTaint: true, Nodes: []RuntimeNode{
				{Name: "new", Selected: true, Required: 1, Holding: []string{"s"}},
				{Name: "old", Selected: true, Touched: true, Required: 1, Holding: []string{"s"}},
				{Name: "done", Selected: true, Touched: true, Required: 1},
				{Name: "unselected", Required: 0},
			}},
			taint: []string{"new"}, held: map[string][]string{"new": {"s"}}},
		{name: "auto-taint: already tainted is not tainted twice",
			f: RuntimeFacts{RuntimeRequired: true, AutoTaint: true, Nodes: []RuntimeNode{
				{Name: "new", Selected: true, Tainted: true, Required: 1, Holding: []string{"s"}},
			}},
			held: map[string][]string{"new": {"s"}}},
		{name: "auto-taint needs runtimeRequired",
			f: RuntimeFacts{AutoTaint: true, Nodes: []RuntimeNode{{Name: "new", Selected: true, Holding: []string{"x"}, Required: 1}}}},
		{name: "auto-taint: not while disabled or deleting",
			f: RuntimeFacts{RuntimeRequired: true, AutoTaint: true, Disabled: true, Nodes: []RuntimeNode{{Name: "new", Selected: true, Holding: []string{"x"}, Required: 1}}}},
		{name: "auto-taint: a new node already complete is not tainted",
			f: RuntimeFacts{RuntimeRequired: true, AutoTaint: true, Nodes: []RuntimeNode{{Name: "new", Selected: true, Required: 1}}}},
		{name: "re-gate: a touched node re-gating is tainted again, with or without auto-taint",
			f: RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{
				{Name: "regate", Selected: true, Touched: true, Regating: true, Required: 1, Holding: []string{"s"}},
				{Name: "old", Selected: true, Touched: true, Required: 1, Holding: []string{"s"}},
			}},
			taint: []string{"regate"}, regated: []string{"regate"}, held: map[string][]string{"regate": {"s"}}},
		{name: "re-gate: already tainted is not tainted twice",
			f: RuntimeFacts{RuntimeRequired: true, AutoTaint: true, Nodes: []RuntimeNode{
				{Name: "regate", Selected: true, Tainted: true, Touched: true, Regating: true, Required: 1, Holding: []string{"s"}},
			}},
			held: map[string][]string{"regate": {"s"}}},
		{name: "re-gate: a re-gated node complete everywhere loses the taint",
			f: RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{
				{Name: "regate", Selected: true, Tainted: true, Touched: true, Required: 2},
			}},
			untaint: []string{"regate"}},
		{name: "re-gate: not for a set that is not runtime-required",
			f: RuntimeFacts{Nodes: []RuntimeNode{{Name: "regate", Selected: true, Touched: true, Regating: true, Required: 1, Holding: []string{"other"}}}}},
		{name: "re-gate: not while disabled",
			f: RuntimeFacts{RuntimeRequired: true, Disabled: true, Nodes: []RuntimeNode{{Name: "regate", Selected: true, Touched: true, Regating: true, Required: 1, Holding: []string{"s"}}}}},
		{name: "re-gate: not while deleting",
			f: RuntimeFacts{RuntimeRequired: true, Deleting: true, Nodes: []RuntimeNode{{Name: "regate", Selected: true, Touched: true, Regating: true, Required: 1, Holding: []string{"s"}}}}},
		{name: "re-gate: not a node no longer selected",
			f: RuntimeFacts{RuntimeRequired: true, Nodes: []RuntimeNode{{Name: "regate", Touched: true, Regating: true, Required: 1, Holding: []string{"s"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := PlanRuntime(tc.f)
			if !reflect.DeepEqual(d.Taint, tc.taint) || !reflect.DeepEqual(d.Untaint, tc.untaint) || !reflect.DeepEqual(d.Held, tc.held) {
				t.Errorf("taint %v untaint %v held %v; want %v %v %v", d.Taint, d.Untaint, d.Held, tc.taint, tc.untaint, tc.held)
			}
			var regated []string
			for _, n := range d.Taint {
				if d.Regated[n] {
					regated = append(regated, n)
				}
			}
			if len(d.Regated) != len(regated) || !reflect.DeepEqual(regated, tc.regated) {
				t.Errorf("regated %v, want %v", d.Regated, tc.regated)
			}
		})
	}
}

func TestRuntimeCondition(t *testing.T) {
	c := RuntimeCondition(3, v1alpha1.DefaultRuntimeRequiredTaint, nil)
	if c.Status != metav1.ConditionFalse || c.Reason != ReasonNodesReleased || c.ObservedGeneration != 3 {
		t.Errorf("released: %+v", c)
	}
	c = RuntimeCondition(3, v1alpha1.DefaultRuntimeRequiredTaint, map[string][]string{"n2": {"a", "b"}, "n1": {"a"}})
	want := "2 node(s) keep the runtime-required taint gantry.dev/runtime-required=true:NoSchedule: n1 (waiting for a); n2 (waiting for a, b)"
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonNodesTainted || c.Message != want {
		t.Errorf("held: %+v\nwant message %q", c, want)
	}
	many := map[string][]string{}
	for i := 0; i < MaxHeldListed+3; i++ {
		many[string(rune('a'+i))] = []string{"s"}
	}
	if c := RuntimeCondition(1, "t", many); !strings.HasSuffix(c.Message, "and 3 more") {
		t.Errorf("many: %s", c.Message)
	}
}

func TestHasTaintAndTouched(t *testing.T) {
	rt, _ := ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	if !HasTaint([]corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}, {Key: rt.Key, Value: "other", Effect: rt.Effect}}, rt) {
		t.Error("same key and effect, other value: not found")
	}
	if HasTaint([]corev1.Taint{{Key: rt.Key, Value: rt.Value, Effect: corev1.TaintEffectNoExecute}}, rt) {
		t.Error("other effect counted")
	}
	if Touched(map[string]string{"kwok.x-k8s.io/node": "fake"}) || !Touched(map[string]string{v1alpha1.AnnotationAutoTaint: "x"}) ||
		!Touched(map[string]string{v1alpha1.AnnotationNodeStatePrefix + "s": "{}"}) {
		t.Error("Touched")
	}
	tol := RuntimeToleration(rt)
	if !tol.ToleratesTaint(&rt) || Untolerated([]corev1.Taint{rt}, []corev1.Toleration{tol}) != "" {
		t.Error("the runtime toleration does not tolerate the taint")
	}
}

// A runtime-required set whose node also carries another taint (a driver installer's, say):
// the node waits as Skyhook's does, the set is waiting (Reconciling, reason WaitingForTaint,
// the taint named), never Stalled, and no stage starts there; once the other controller
// removes its taint the node runs its stages and the set completes. The same taint on a set
// that is not runtime-required blocks it (Stalled).
func TestPlanRuntimeRequiredWaitsForAnotherTaint(t *testing.T) {
	s := newSim(t, 2, tool("1.0.0"))
	runtime, err := ParseTaint(v1alpha1.DefaultRuntimeRequiredTaint)
	if err != nil {
		t.Fatal(err)
	}
	tols := append(StageTolerations(&v1alpha1.PackageSet{}), RuntimeToleration(runtime))
	driver := corev1.Taint{Key: "example.com/driver", Value: "installing", Effect: corev1.TaintEffectNoSchedule}
	taints := []corev1.Taint{runtime, driver}
	s.nodes["node-1"].blocked, s.nodes["node-1"].waitFor = TaintHold(taints, nil, tols, true)
	d := s.run(v1alpha1.StatusWaiting)
	ready, stalled := cond(t, d, v1alpha1.ConditionReady), cond(t, d, v1alpha1.ConditionStalled)
	if stalled.Status != metav1.ConditionFalse || ready.Reason != ReasonWaitingForTaint || !strings.Contains(ready.Message, "node-1: example.com/driver=installing:NoSchedule") {
		t.Fatalf("waiting for the driver's taint: Ready %+v, Stalled %+v", ready, stalled)
	}
	if len(s.ran["node-1"]) > 0 {
		t.Fatalf("stages ran on the waiting node: %v", s.ran["node-1"])
	}
	s.nodes["node-1"].blocked, s.nodes["node-1"].waitFor = TaintHold([]corev1.Taint{runtime}, nil, tols, true)
	if c := cond(t, s.run(v1alpha1.StatusComplete), ConditionTaintNotTolerable); c.Status != metav1.ConditionFalse {
		t.Errorf("complete, TaintNotTolerable %+v", c)
	}

	other := newSim(t, 2, tool("1.0.0"))
	other.nodes["node-1"].blocked, other.nodes["node-1"].waitFor = TaintHold(taints, nil, tols, false)
	d = other.run(v1alpha1.StatusBlocked)
	if c := cond(t, d, v1alpha1.ConditionStalled); c.Status != metav1.ConditionTrue || c.Reason != ReasonBlocked {
		t.Errorf("not runtime-required: Stalled %+v", c)
	}
}
