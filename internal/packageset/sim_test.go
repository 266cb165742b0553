package packageset

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// sim is a fake cluster the machine drives: nodes with records and cordons, and Jobs whose
// outcome the test decides. It checks the invariants after every pass.
type sim struct {
	t       testing.TB
	now     time.Time
	facts   SetFacts
	nodes   map[string]*simNode
	fail    func(j JobSpec, attempt int) bool // true: this Job fails
	maxCord int                               // most nodes cordoned at once
	// prevCord and prevInflight are the counts after the previous pass.
	prevCord, prevInflight int
	// ran is every stage Job created, per node and package, in order ("apply", "config", ...).
	ran map[string]map[string][]string
	// policy is the set's deployment policy (nil: none); comps the last pass's
	// status.compartments, read back as the next pass's batch state.
	policy *v1alpha1.DeploymentPolicy
	comps  []v1alpha1.CompartmentStatus
}

type simNode struct {
	rec      *NodeRecord
	jobs     map[string]JobFact
	pending  map[string]JobSpec // created, outcome not yet decided
	cordoned bool
	// nonInterrupt, terminating and undrained (pods left to evict) are the drain's facts
	// while cordoned; drains counts the passes that planned a drain. evicting (pods left to
	// evict, by name), unevictable ("ns/p: why") and refusals (pod → the Eviction API's
	// refusal, read only at the drain's timeout, as the controller does) hold the drain too.
	nonInterrupt, terminating []string
	undrained                 bool
	drains                    int
	evicting, unevictable     []string
	refusals                  map[string]string
	blocked                   string
	waitFor                   string
	gate                      Gate
	gateSet                   string
	selected                  bool
	compartment               string
	wave                      int
	// alloc is the node's device plugin resources (NodeFacts.Allocatable).
	alloc map[string]int64
	// boot is the node's boot ID (NodeFacts.BootID, "" for none); boots > 0 (a test sets it)
	// counts its boots: a reboot interrupt Job that succeeds reboots the node (boot-<boots+1>).
	boot  string
	boots int
}

func newSim(t testing.TB, nodes int, wants ...Want) *sim {
	s := &sim{t: t, now: time.Unix(1_700_000_000, 0), nodes: map[string]*simNode{}, ran: map[string]map[string][]string{}}
	// One node at a time unless a test sets a budget (the spec's default is every node).
	s.facts = SetFacts{Name: "gpu-drivers", Generation: 1, Wants: wants, Budget: &v1alpha1.InterruptionBudget{Count: ptr(int32(1))}}
	for i := 0; i < nodes; i++ {
		s.nodes[fmt.Sprintf("node-%d", i)] = &simNode{jobs: map[string]JobFact{}, pending: map[string]JobSpec{}, selected: true}
	}
	return s
}

// pass runs Plan once, applies the plan, then settles every pending Job (success unless fail
// says otherwise). It returns the decision.
func (s *sim) pass() Decision {
	s.t.Helper()
	f := s.facts
	f.Now = s.now
	f.Nodes = nil
	for name, n := range s.nodes {
		nf := NodeFacts{Name: name, Selected: n.selected, Record: n.rec.Clone(), Blocked: n.blocked, WaitFor: n.waitFor, Gate: n.gate, GateSet: n.gateSet,
			Jobs: copyJobs(n.jobs), Cordoned: n.cordoned, Compartment: n.compartment, Wave: n.wave, Allocatable: n.alloc, BootID: n.boot}
		// As the controller: a cordoned node's pods are only looked at while DrainMatters.
		if n.cordoned && DrainMatters(n.rec) {
			nf.Drained = !n.undrained && len(n.terminating) == 0 && len(n.evicting) == 0 && len(n.unevictable) == 0
			nf.NonInterrupt, nf.Terminating, nf.Evicting, nf.Unevictable = n.nonInterrupt, n.terminating, n.evicting, n.unevictable
			if NonInterruptExpired(n.rec, f.Drain, f.Now) { // as the controller: they are pods to evict now
				nf.NonInterrupt, nf.Evicting = nil, append(append([]string(nil), n.evicting...), n.nonInterrupt...)
				nf.Drained = nf.Drained && len(n.nonInterrupt) == 0
			}
			if DrainTimedOut(n.rec, f.Drain, f.Now) {
				nf.EvictRefusals = n.refusals
			}
		}
		f.Nodes = append(f.Nodes, nf)
	}
	f.Policy = PolicyOf(s.policy, s.comps)
	d, err := Plan(f)
	if err != nil {
		s.t.Fatalf("Plan: %v", err)
	}
	s.comps = d.Compartments
	for _, np := range d.Nodes {
		n := s.nodes[np.Name]
		n.rec = np.Record.Clone()
		for _, j := range np.Jobs {
			if _, dup := n.jobs[j.Name]; dup {
				s.t.Fatalf("job %s created twice", j.Name)
			}
			n.jobs[j.Name] = JobFact{}
			n.pending[j.Name] = j
			if s.ran[np.Name] == nil {
				s.ran[np.Name] = map[string][]string{}
			}
			s.ran[np.Name][j.Package] = append(s.ran[np.Name][j.Package], string(j.Stage))
			if IsInterruptStage(j.Stage) && !n.cordoned {
				s.t.Fatalf("interrupt job on %s without cordon", np.Name)
			}
			if r := np.Record; r != nil && r.Packages[j.Package] != nil && r.Packages[j.Package].Removing && r.Packages[j.Package].Interrupt != nil && !n.cordoned {
				s.t.Fatalf("uninstall of %s (with interrupt) on %s without cordon", j.Package, np.Name)
			}
		}
		for _, j := range np.DeleteJobs {
			delete(n.jobs, j)
		}
		if np.Drain {
			n.drains++
			if np.DrainNonInterrupt {
				n.nonInterrupt = nil // evicted: they go by the next pass
			}
		}
		if np.Cordon {
			n.cordoned = true
		}
		if np.Uncordon {
			n.cordoned = false
		}
	}
	cord := 0
	for _, n := range s.nodes {
		if n.cordoned {
			cord++
		}
	}
	s.maxCord = max(s.maxCord, cord)
	// Above the budget only if it shrank under nodes already in flight, and then never more.
	b := Budget(s.facts.Budget, len(s.nodes))
	if cord > b && cord > s.prevCord {
		s.t.Fatalf("%d nodes cordoned (was %d), budget %d", cord, s.prevCord, b)
	}
	if inflight := s.inFlight(); inflight > b && inflight > s.prevInflight {
		s.t.Fatalf("%d nodes in flight (was %d), budget %d", inflight, s.prevInflight, b)
	}
	s.prevCord, s.prevInflight = cord, s.inFlight()
	return d
}

// nodeFacts is the nodes' records as a pass would read them (records only).
func (s *sim) nodeFacts() []NodeFacts {
	var out []NodeFacts
	for name, n := range s.nodes {
		out = append(out, NodeFacts{Name: name, Record: n.rec})
	}
	return out
}

// recPackages is the node's package records (none without a record).
func (n *simNode) recPackages() map[string]*PackageRecord {
	if n.rec == nil {
		return nil
	}
	return n.rec.Packages
}

func (s *sim) inFlight() int {
	c := 0
	for _, n := range s.nodes {
		if n.rec != nil && InFlight(n.rec.Rollout) {
			c++
		}
	}
	return c
}

// settle decides every pending Job.
func (s *sim) settle() {
	for _, n := range s.nodes {
		for name, j := range n.pending {
			if s.fail != nil && s.fail(j, len(s.ran)) {
				n.jobs[name] = JobFact{Failed: true, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit"}
			} else {
				n.jobs[name] = JobFact{Succeeded: true}
				if n.boots > 0 && IsInterruptStage(j.Stage) && j.Interrupt != nil && j.Interrupt.Type == v1alpha1.InterruptReboot {
					n.reboot()
				}
			}
			delete(n.pending, name)
		}
	}
}

// run alternates passes and settles until the status is want (or fails after many passes).
func (s *sim) run(want Status) Decision {
	s.t.Helper()
	var d Decision
	for i := 0; i < 400; i++ {
		d = s.pass()
		if d.Status == want && len(s.pendingJobs()) == 0 {
			return d
		}
		s.settle()
		s.now = s.now.Add(BackoffMax)
	}
	var recs []string
	for _, name := range s.nodeNames() {
		n := s.nodes[name]
		if n.rec == nil {
			recs = append(recs, name+": none")
			continue
		}
		line := fmt.Sprintf("%s: %s cordoned=%v", name, n.rec.Rollout, n.cordoned)
		for pkg, r := range n.rec.Packages {
			line += fmt.Sprintf(" %s@%s %s/%s done=%v", pkg, r.Version, r.Stage, r.State, r.Done)
		}
		recs = append(recs, line)
	}
	s.t.Fatalf("status %s after 400 passes, want %s; failures %v; nodes %v", d.Status, want, d.Failures, recs)
	return d
}

// reboot gives the node its next boot ID (boot-<boots>).
func (n *simNode) reboot() {
	n.boots++
	n.boot = fmt.Sprintf("boot-%d", n.boots)
}

func (s *sim) pendingJobs() []string {
	var out []string
	for _, n := range s.nodes {
		for j := range n.pending {
			out = append(out, j)
		}
	}
	return out
}

func (s *sim) stages(node, pkg string) string {
	return strings.Join(s.ran[node][pkg], ",")
}

func (s *sim) reset() { s.ran = map[string]map[string][]string{} }

func copyJobs(m map[string]JobFact) map[string]JobFact {
	out := make(map[string]JobFact, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (s *sim) nodeNames() []string {
	var out []string
	for n := range s.nodes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
