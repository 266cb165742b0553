package packageset

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func drainCond(t *testing.T, d Decision) metav1.Condition {
	t.Helper()
	for _, c := range d.Conditions {
		if c.Type == ConditionDrainBlocked {
			return c
		}
	}
	t.Fatal("no DrainBlocked condition")
	return metav1.Condition{}
}

// A cordoned node's drain, in Skyhook's order: the non-interrupt pods finish first (no drain,
// no interrupt Job, DrainBlocked names them, the node in progress), then the drain runs until
// no pod is left to evict or terminating (a refused eviction added to the condition), and
// only then the interrupt Job; the node ends uncordoned with DrainBlocked False.
func TestDrainWaits(t *testing.T) {
	s := newSim(t, 1, driver("1.0.0"))
	n := s.nodes["node-0"]
	n.nonInterrupt, n.undrained = []string{"ml/train-0", "ml/train-1"}, true
	for i := 0; i < 20 && !n.cordoned; i++ {
		s.pass()
		s.settle()
	}
	if !n.cordoned {
		t.Fatal("never cordoned")
	}
	for i := 0; i < 3; i++ {
		d := s.pass()
		if c := drainCond(t, d); c.Status != metav1.ConditionTrue || c.Message != "node-0: waiting for non-interrupt pods: ml/train-0, ml/train-1" {
			t.Errorf("DrainBlocked while non-interrupt pods run: %+v", c)
		}
		if d.Status != v1alpha1.StatusInProgress || n.drains != 0 || strings.Contains(s.stages("node-0", "driver"), "interrupt") {
			t.Fatalf("status %s, %d drains, stages %s: the drain or interrupt did not wait", d.Status, n.drains, s.stages("node-0", "driver"))
		}
		s.settle()
	}

	n.nonInterrupt = nil
	d := s.pass()
	if n.drains != 1 || drainCond(t, d).Status != metav1.ConditionFalse {
		t.Fatalf("drains %d, DrainBlocked %+v", n.drains, drainCond(t, d))
	}
	d.AddDrainRefusals(map[string]string{"node-0": "pod app/x: Cannot evict pod (The disruption budget pdb-x needs 1 healthy pods and has 1 currently)"})
	if c := drainCond(t, d); c.Status != metav1.ConditionTrue || c.Reason != ReasonDrainBlocked || c.ObservedGeneration != 1 ||
		c.Message != "node-0: pod app/x: Cannot evict pod (The disruption budget pdb-x needs 1 healthy pods and has 1 currently)" {
		t.Errorf("DrainBlocked after a refusal: %+v", c)
	}

	n.terminating = []string{"app/x"}
	d = s.pass()
	if c := drainCond(t, d); c.Message != "node-0: waiting for evicted pods to terminate: app/x" || n.drains != 2 {
		t.Errorf("drains %d, DrainBlocked %+v", n.drains, c)
	}
	if strings.Contains(s.stages("node-0", "driver"), "interrupt") {
		t.Fatal("interrupt before the drain finished")
	}

	n.terminating, n.undrained = nil, false
	d = s.run(v1alpha1.StatusComplete)
	if got := s.stages("node-0", "driver"); got != "apply,config,interrupt,post-interrupt" || n.cordoned {
		t.Errorf("stages %s, cordoned %v", got, n.cordoned)
	}
	if c := drainCond(t, d); c.Status != metav1.ConditionFalse {
		t.Errorf("DrainBlocked at the end %+v", c)
	}
}

// Refusals merge with what the facts report, per node, listed by node name.
func TestAddDrainRefusals(t *testing.T) {
	d := Decision{DrainBlockers: map[string]string{"b": "waiting for non-interrupt pods: ns/p"},
		Conditions: []metav1.Condition{drainCondition(7, map[string]string{"b": "waiting for non-interrupt pods: ns/p"})}}
	d.AddDrainRefusals(nil)
	if d.Conditions[0].Message != "b: waiting for non-interrupt pods: ns/p" {
		t.Errorf("%+v", d.Conditions[0])
	}
	d.AddDrainRefusals(map[string]string{"b": "pod ns/q: refused", "a": "pod ns/r: refused"})
	if c := d.Conditions[0]; c.Message != "a: pod ns/r: refused; b: waiting for non-interrupt pods: ns/p; pod ns/q: refused" || c.ObservedGeneration != 7 {
		t.Errorf("%+v", c)
	}
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ConfigMapName: deterministic, a DNS-1123 label of at most 50 characters, one per (set,
// package, content), "" without config.
func TestConfigMapName(t *testing.T) {
	cfg := map[string]string{"a": "1", "b": "2"}
	a := ConfigMapName("gpu-drivers", "nvidia-driver", cfg)
	if a != ConfigMapName("gpu-drivers", "nvidia-driver", map[string]string{"b": "2", "a": "1"}) || !dnsLabel.MatchString(a) ||
		!strings.HasPrefix(a, "gpu-drivers-nvidia-driver-cfg-") {
		t.Fatalf("ConfigMapName %q", a)
	}
	long := ConfigMapName(strings.Repeat("s", 40), strings.Repeat("p-", 21)+"p", cfg)
	if len(long) > 50 || !dnsLabel.MatchString(long) {
		t.Errorf("long names: %q (%d)", long, len(long))
	}
	for _, other := range []string{
		ConfigMapName("gpu-drivers", "nvidia-driver", map[string]string{"a": "1", "b": "3"}),
		ConfigMapName("gpu-drivers", "nvidia-driver", map[string]string{"a": "1"}),
		ConfigMapName("gpu-drivers", "nvidia-driver", map[string]string{"a": "1\x00b", "": "2"}),
		ConfigMapName("gpu-drivers", "dcgm", cfg),
		ConfigMapName("gpu-drivers-2", "nvidia-driver", cfg),
	} {
		if other == a {
			t.Errorf("collision %s", a)
		}
	}
	if ConfigMapName("s", "p", nil) != "" {
		t.Error("a ConfigMap for no config")
	}
}

// ConfigMapsInUse: the wanted configs, the records' specs and, until Converged, their previous
// versions' specs.
func TestConfigMapsInUse(t *testing.T) {
	spec := func(cfg map[string]string) []byte {
		b, _ := json.Marshal(v1alpha1.Package{Name: "p", Config: cfg})
		return b
	}
	cur, old, prev, gone := map[string]string{"k": "3"}, map[string]string{"k": "2"}, map[string]string{"k": "1"}, map[string]string{"k": "0"}
	wants := []Want{{Name: "p", Spec: spec(cur)}, {Name: "q"}}
	recs := []*NodeRecord{nil, {Packages: map[string]*PackageRecord{"p": {Spec: spec(old), Prev: &Applied{Spec: spec(prev)}}, "r": {Spec: []byte("not json")}}}}
	got := ConfigMapsInUse("s", wants, recs)
	for _, c := range []map[string]string{cur, old, prev} {
		if !got[ConfigMapName("s", "p", c)] {
			t.Errorf("%v not in use: %v", c, got)
		}
	}
	if got[ConfigMapName("s", "p", gone)] || len(got) != 3 {
		t.Errorf("in use %v", got)
	}
	// Once the node is Converged its previous spec is no rollback target any more.
	recs[1].Rollout = v1alpha1.RolloutConverged
	got = ConfigMapsInUse("s", wants, recs)
	if got[ConfigMapName("s", "p", prev)] || len(got) != 2 {
		t.Errorf("converged node: in use %v", got)
	}
}
