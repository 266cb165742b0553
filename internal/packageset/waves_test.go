package packageset

import (
	"math"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

func TestWaveMatcher(t *testing.T) {
	of, err := WaveMatcher([]v1alpha1.Wave{
		{Name: "canary", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}},
		{Name: "zone-a", Selector: metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   int
	}{
		{map[string]string{"canary": "true", "zone": "a"}, 0},
		{map[string]string{"zone": "a"}, 1},
		{map[string]string{"zone": "b"}, 2},
		{nil, 2},
	} {
		if got := of(tc.labels); got != tc.want {
			t.Errorf("%v: wave %d, want %d", tc.labels, got, tc.want)
		}
	}
	if _, err := WaveMatcher([]v1alpha1.Wave{{Name: "x", Selector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}}}); err == nil {
		t.Error("a bad selector is accepted")
	}
	for _, tc := range []struct {
		i    int
		want string
	}{{0, "canary"}, {1, "zone-a"}, {2, RestWave}, {math.MaxInt, ""}} {
		if got := WaveName([]string{"canary", "zone-a"}, tc.i); got != tc.want {
			t.Errorf("WaveName(%d) = %q, want %q", tc.i, got, tc.want)
		}
	}
}

// Three waves (canary: 1 node, a: 2 nodes, rest: 2 nodes), budget every node, a soak: no node
// of a wave starts a stage before every node of the earlier waves is Converged (soak done),
// and status names the wave under way.
func TestWavesOrderTheRollout(t *testing.T) {
	s := newSim(t, 0, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Soak = 10 * BackoffMin
	s.facts.Waves = []string{"canary", "a"}
	waveOf := map[string]int{"n0": 1, "n1": 0, "n2": 2, "n3": 1, "n4": 2}
	for name, w := range waveOf {
		s.nodes[name] = &simNode{jobs: map[string]JobFact{}, pending: map[string]JobSpec{}, selected: true, wave: w}
	}
	// started: the pass at which each node's first Job was created; converged: the first
	// pass at which it was Converged.
	started, converged := map[string]int{}, map[string]int{}
	var seen []string
	for i := 0; i < 200; i++ {
		d := s.pass()
		if len(seen) == 0 || seen[len(seen)-1] != d.Wave {
			seen = append(seen, d.Wave)
		}
		for name, n := range s.nodes {
			if _, ok := started[name]; !ok && len(s.ran[name]) > 0 {
				started[name] = i
			}
			if _, ok := converged[name]; !ok && n.rec != nil && n.rec.Rollout == v1alpha1.RolloutConverged {
				converged[name] = i
			}
		}
		if d.Status == v1alpha1.StatusComplete {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	if len(converged) != 5 {
		t.Fatalf("converged %v", converged)
	}
	for a, wa := range waveOf {
		for b, wb := range waveOf {
			if wa < wb && started[b] <= converged[a] {
				t.Errorf("%s (wave %d) started at pass %d, before %s (wave %d) converged at %d", b, wb, started[b], a, wa, converged[a])
			}
		}
	}
	// The pass that completes the last node already reports no wave (nothing requeues a
	// complete set, so a stale wave would stay in status).
	if want := []string{"canary", "a", RestWave, ""}; !equalStrings(seen, want) {
		t.Errorf("waves in status %v, want %v", seen, want)
	}
}

// Per-wave soak (NixFleet's waves[].soakMinutes): the canary wave soaks 20 backoffs, the
// rollout's default is none, and nodes no wave picks take the default. The canary node is
// Soaking for its whole window; the others converge as soon as their stages are done.
func TestWaveSoakDurations(t *testing.T) {
	s := newSim(t, 0, tool("1.0.0"))
	s.facts.Budget = nil
	s.facts.Soak = 0
	s.facts.Waves = []string{"canary"}
	s.facts.WaveSoaks = []time.Duration{20 * BackoffMin}
	for name, w := range map[string]int{"n0": 0, "n1": 1} {
		s.nodes[name] = &simNode{jobs: map[string]JobFact{}, pending: map[string]JobSpec{}, selected: true, wave: w}
	}
	soaking := map[string]int{}
	for i := 0; i < 200; i++ {
		d := s.pass()
		for name, n := range s.nodes {
			if n.rec != nil && n.rec.Rollout == v1alpha1.RolloutSoaking {
				soaking[name]++
			}
		}
		if d.Status == v1alpha1.StatusComplete {
			break
		}
		s.settle()
		s.now = s.now.Add(BackoffMin)
	}
	for name, n := range s.nodes {
		if n.rec == nil || n.rec.Rollout != v1alpha1.RolloutConverged {
			t.Fatalf("%s not Converged: %+v", name, n.rec)
		}
	}
	if soaking["n0"] < 19 || soaking["n1"] != 0 {
		t.Errorf("passes Soaking: canary n0 %d (window 20 passes), rest n1 %d (no soak)", soaking["n0"], soaking["n1"])
	}
	if got := SoakOf(SetFacts{Soak: time.Minute, WaveSoaks: []time.Duration{-1, 0}}, 0); got != time.Minute {
		t.Errorf("a wave without its own soak takes the rollout's: %v", got)
	}
	if got := SoakOf(SetFacts{Soak: time.Minute, WaveSoaks: []time.Duration{-1, 0}}, 1); got != 0 {
		t.Errorf("a wave's 0s soak is no soak: %v", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// spec.after (NixFleet's edges) orders sets against their priority; two sets naming each
// other are a cycle.
func TestGateOfAfter(t *testing.T) {
	set := func(name string, prio int32, after ...string) v1alpha1.PackageSet {
		return v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.PackageSetSpec{Priority: prio, After: after}}
	}
	complete := map[string]string{v1alpha1.AnnotationNodeStatusPrefix + "runtime": string(v1alpha1.StatusComplete)}
	for _, tc := range []struct {
		name        string
		sets        []v1alpha1.PackageSet
		annotations map[string]string
		wantGate    Gate
		wantBy      string
	}{
		{"after an incomplete set of a higher priority number", []v1alpha1.PackageSet{set("drivers", 10, "runtime"), set("runtime", 50)}, nil, GateWaiting, "runtime"},
		{"after a complete set", []v1alpha1.PackageSet{set("drivers", 10, "runtime"), set("runtime", 50)}, complete, GateOpen, ""},
		{"an edge overrides the priority order", []v1alpha1.PackageSet{set("drivers", 100), set("runtime", 50, "drivers")}, nil, GateOpen, ""},
		{"priority alone", []v1alpha1.PackageSet{set("drivers", 100), set("runtime", 50)}, nil, GateWaiting, "runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, by := GateOf(&tc.sets[0], tc.sets, nil, tc.annotations, nil)
			if g != tc.wantGate || by != tc.wantBy {
				t.Errorf("GateOf = %v by %q, want %v by %q", g, by, tc.wantGate, tc.wantBy)
			}
		})
	}
	a, b := set("a", 10, "b"), set("b", 20, "a")
	if got := AfterCycle(&a, []v1alpha1.PackageSet{a, b}); !slices.Equal(got, []string{"a", "b", "a"}) {
		t.Errorf("AfterCycle = %q, want a b a", got)
	}
	c := set("c", 10, "a")
	if got := AfterCycle(&c, []v1alpha1.PackageSet{a, b, c}); got != nil {
		t.Errorf("AfterCycle = %q, want none (c waits for a cycle it is not on)", got)
	}
	// Three sets in a ring, one beside it, and a set that names itself.
	x, y, z, w := set("x", 10, "w", "y"), set("y", 10, "z"), set("z", 10, "x"), set("w", 10)
	if got := AfterCycle(&y, []v1alpha1.PackageSet{x, y, z, w}); !slices.Equal(got, []string{"y", "z", "x", "y"}) {
		t.Errorf("AfterCycle of a three-set ring = %q, want y z x y", got)
	}
	self := set("self", 10, "self")
	if got := AfterCycle(&self, []v1alpha1.PackageSet{self}); !slices.Equal(got, []string{"self", "self"}) {
		t.Errorf("AfterCycle of a set naming itself = %q", got)
	}
}
