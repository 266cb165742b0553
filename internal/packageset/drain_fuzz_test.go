package packageset

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// FuzzDrain drives drains with random facts (pods the Eviction API refuses, pods spec.drain
// keeps, pods terminating, pods gone, clock steps from 1s to 1h, version changes that start new
// interrupts or removals) under a random spec.drain (ops[0]: &1 a 10m timeout, &2 onTimeout
// Continue, &4 a budget of 2) and checks after every pass: an interrupt starts on a node only
// when its facts said drained, or its drain timed out under Continue in that pass; a timeout
// is reported only with a timeout set, on a drain under way at least that long; no eviction is
// planned while a failed drain waits out its backoff; a node keeps a drain record only while
// cordoned, and a failed one only under onTimeout Fail while the node is erroring; and once the
// pods are gone every node completes, uncordoned, with no drain record left.
func FuzzDrain(f *testing.F) {
	f.Add([]byte{1, 4, 4, 4, 6, 6, 6, 1, 0, 0})
	f.Add([]byte{3, 4, 4, 6, 6, 2, 0, 0, 7})
	f.Add([]byte{5, 3, 4, 5, 6, 6, 6, 6, 6, 8, 0, 0, 1, 1})
	f.Add([]byte{0, 4, 6, 6, 6, 6, 2, 0, 0})
	f.Add([]byte{1, 4, 7, 4, 6, 6, 6, 6, 6, 6, 6, 0, 3, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		if len(ops) > 64 {
			ops = ops[:64]
		}
		s := newSim(t, 3, driver("1.0.0"), tool("1.0.0"))
		d := &v1alpha1.Drain{}
		if ops[0]&1 != 0 {
			d.Timeout = &metav1.Duration{Duration: 10 * time.Minute}
			if ops[0]&2 != 0 {
				d.OnTimeout = v1alpha1.DrainTimeoutContinue
			}
		}
		if ops[0]&4 != 0 {
			s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(2))}
		}
		s.facts.Drain = DrainSpecOf(d)
		for i, op := range ops[1:] {
			node := s.nodes[fmt.Sprintf("node-%d", int(op>>4)%3)]
			drainEvents[int(op)%len(drainEvents)](s, node, op, i)
			checkDrainPass(t, s)
		}
		for _, n := range s.nodes {
			n.evicting, n.unevictable, n.terminating, n.undrained = nil, nil, nil, false
		}
		s.run(v1alpha1.StatusComplete)
		for name, n := range s.nodes {
			if n.cordoned || n.rec.Drain != nil {
				t.Fatalf("%s complete but cordoned %v, drain %+v", name, n.cordoned, n.rec.Drain)
			}
		}
	})
}

// drainEvents are indexed by op modulo their number (keep the order: the seeds use it).
var drainEvents = []func(s *sim, n *simNode, op byte, i int){
	func(s *sim, _ *simNode, _ byte, _ int) { s.settle() },
	func(s *sim, _ *simNode, _ byte, _ int) { s.settle() },
	func(s *sim, _ *simNode, op byte, _ int) { // a version change: new interrupts, or tool's removal
		s.facts.Wants = []Want{driver(fuzzVersions[int(op>>2)%4])}
		if op&2 != 0 {
			s.facts.Wants = append(s.facts.Wants, tool("1.0.0"))
		}
	},
	func(_ *sim, n *simNode, _ byte, _ int) { n.evicting, n.unevictable, n.terminating = nil, nil, nil }, // pods gone
	func(_ *sim, n *simNode, _ byte, i int) { // a pod a PodDisruptionBudget protects
		pod := fmt.Sprintf("app/web-%d", i)
		n.evicting = append(n.evicting, pod)
		n.refusals = map[string]string{pod: "Cannot evict pod"}
	},
	func(_ *sim, n *simNode, op byte, i int) { // a pod spec.drain keeps, or one terminating
		if op&8 != 0 {
			n.unevictable = append(n.unevictable, fmt.Sprintf("app/bare-%d: declares no controller (drain.force is false)", i))
		} else {
			n.terminating = append(n.terminating, fmt.Sprintf("app/going-%d", i))
		}
	},
	func(s *sim, _ *simNode, op byte, _ int) { // clock step
		s.now = s.now.Add([]time.Duration{time.Second, 5 * time.Second, time.Minute, 10 * time.Minute, time.Hour}[int(op>>4)%5])
	},
	func(s *sim, _ *simNode, _ byte, _ int) { s.settle(); s.now = s.now.Add(BackoffMax) },
	func(s *sim, _ *simNode, _ byte, _ int) {}, // a pass with nothing new
}

// checkDrainPass runs one pass and checks FuzzDrain's invariants against the nodes before it.
func checkDrainPass(t *testing.T, s *sim) {
	t.Helper()
	type before struct {
		drained, cordoned bool
		drain             *DrainRecord
	}
	was := map[string]before{}
	for name, n := range s.nodes {
		b := before{drained: !n.undrained && len(n.terminating)+len(n.evicting)+len(n.unevictable) == 0, cordoned: n.cordoned}
		if n.rec != nil && n.rec.Drain != nil {
			dr := *n.rec.Drain
			b.drain = &dr
		}
		was[name] = b
	}
	now := s.now
	d := s.pass()
	spec := s.facts.Drain
	for _, np := range d.Nodes {
		b, n := was[np.Name], s.nodes[np.Name]
		timeout := d.DrainTimeouts[np.Name]
		for _, j := range np.Jobs {
			if j.Stage == intr && !b.drained && !strings.Contains(timeout, "onTimeout Continue") {
				t.Fatalf("%s: interrupt started undrained without a Continue timeout (%q)", np.Name, timeout)
			}
		}
		if timeout != "" && (spec.Timeout == 0 || b.drain == nil || b.drain.Message != "" || now.Sub(b.drain.Since) < spec.Timeout) {
			t.Fatalf("%s: timeout %q reported, drain before %+v, spec %+v", np.Name, timeout, b.drain, spec)
		}
		if np.Drain && b.drain != nil && b.drain.Message != "" && now.Sub(b.drain.Since) < backoff(b.drain.Failures) {
			t.Fatalf("%s: evictions during the backoff of a failed drain %+v", np.Name, b.drain)
		}
		if n.rec != nil && n.rec.Drain != nil {
			if !n.cordoned {
				t.Fatalf("%s: drain record %+v on an uncordoned node", np.Name, n.rec.Drain)
			}
			if n.rec.Drain.Message != "" && (spec.Timeout == 0 || spec.OnTimeout == v1alpha1.DrainTimeoutContinue || np.Status != v1alpha1.StatusErroring) {
				t.Fatalf("%s: failed drain %+v with spec %+v, status %s", np.Name, n.rec.Drain, spec, np.Status)
			}
		}
	}
}
