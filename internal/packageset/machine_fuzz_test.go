package packageset

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// FuzzPlan drives the machine with random sequences of facts (spec changes: versions, new and
// removed packages, config-only changes; Job outcomes: stages, soak checks, a bad config;
// taints, gates, pause, budget, small and large clock steps) and checks the invariants after
// every pass (sim.pass): never more nodes cordoned or in flight than the budget, no Job
// created twice, no interrupt without the cordon; here: no stage skipped (each stage Job
// follows its predecessor's success or retries it, soak checks included), one soak round at
// a time per node/package/flow attempt and rounds in increasing order, once every node is
// complete no cordon is left; with policy rollback (ops[0]&4) no flow of a quarantined version
// or config starts (flows under way finish, or roll back if they fail, and nodes soaking on it
// run their soak checks; the rollback's uninstall runs the bad version, and a rollback returns
// a node to the version it ran even when another node's failure quarantined that version
// meanwhile), and a quarantine once
// recorded is never forgotten. ops[0] also picks: &8 a 1m soak, &16 uninstall for tool (new
// tool packages then roll back by uninstalling), &32 a 10s soak check interval, &64 a config
// interrupt for tool's config key, &128 a serial set (then never two flows unfinished on a
// node at once).
func FuzzPlan(f *testing.F) {
	f.Add([]byte{128 + 16, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{128 + 4 + 8 + 2, 9, 9, 1, 1, 1, 3, 3, 200, 7, 7})
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{9, 9, 9, 1, 1, 1, 3, 3, 200, 7, 7})
	f.Add([]byte{5, 5, 5, 5, 2, 2, 2, 8, 8, 0, 0, 4, 6})
	f.Add([]byte{17, 33, 65, 129, 3, 11, 250, 6, 2, 4})
	// rollback, soak with 10s rounds: tool's config-only change fails on node-2 (cfgb)
	f.Add([]byte{44, 64, 0, 0, 0, 0, 0, 0, 0, 163, 0, 0, 0, 0, 0, 0, 58, 0, 58, 0, 8, 0, 0})
	// rollback, tool uninstall: tool removed then re-added (new package) with its config failing
	f.Add([]byte{20, 4, 0, 0, 0, 73, 0, 0, 33, 14, 0, 0, 0, 8, 0, 0})
	// rollback, soak with 10s rounds: node-0's soak checks fail mid-window (new packages roll
	// back), then a config change
	f.Add([]byte{44, 0, 0, 0, 0, 0, 0, 244, 58, 0, 58, 0, 58, 0, 163, 0, 0, 0, 0, 58, 0, 58, 0, 8, 0})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		if len(ops) > 64 {
			ops = ops[:64]
		}
		p := newPlanFuzz(t, ops[0])
		checker := newStageChecker(t)
		for _, op := range ops {
			e := planEvents[int(op)%len(planEvents)]
			e.do(p, op)
			p.pass(e.name)
			if os.Getenv("FUZZ_TRACE") != "" { // FUZZ_TRACE=1 go test -run FuzzPlan/<input> -v: the records after every op
				p.trace(op)
			}
			checker.check(p.s)
		}
		p.finish()
		checker.check(p.s)
		for name, n := range p.s.nodes {
			if n.cordoned {
				t.Fatalf("%s still cordoned with every node complete", name)
			}
		}
	})
}

// planFuzz is FuzzPlan's world: the sim, the Job failures the ops set, the spec flags of
// ops[0] and what the soak invariant remembers across passes.
type planFuzz struct {
	t       *testing.T
	s       *sim
	flags   byte            // ops[0]
	failing map[string]bool // node/stage (or node/soak, node/cfgb) → its Jobs fail
	// soakKey: soak Job name → node/package/flow/restarts; soakRound: node/package/flow/restarts
	// → last round created.
	soakKey   map[string]string
	soakRound map[string]int
}

var fuzzVersions = []string{"1.0.0", "1.1.0", "0.9.0", "2.0.0"}

func newPlanFuzz(t *testing.T, flags byte) *planFuzz {
	p := &planFuzz{t: t, flags: flags, failing: map[string]bool{}, soakKey: map[string]string{}, soakRound: map[string]int{}}
	s := newSim(t, 4, p.wants(0)...)
	p.s = s
	s.facts.Budget = &v1alpha1.InterruptionBudget{Count: ptr(int32(1 + int(flags)%3))}
	s.fail = func(j JobSpec, _ int) bool {
		return p.failing[j.Node+"/"+string(j.Stage)] || j.SoakCheck && p.failing[j.Node+"/soak"] || p.failing[j.Node+"/cfgb"] && string(j.Spec) == `{"mode":"b"}`
	}
	s.facts.Serial = flags&128 != 0
	if flags&4 != 0 {
		s.facts.OnHealthFailure = v1alpha1.HealthFailureRollback
	}
	if flags&8 != 0 {
		s.facts.Soak = time.Minute // round 0 at once, later rounds once op 8 (or the final run) moves the clock
	}
	if flags&32 != 0 {
		s.facts.SoakInterval = 10 * time.Second
	}
	if flags&8 != 0 && flags&2 != 0 {
		// A health check beside the packages' checks (its Jobs are soak checks: the "soak"
		// failure op fails them too).
		s.facts.HealthChecks = []HealthCheck{{Name: "probe", Timeout: time.Minute}}
	}
	return p
}

// wants is the spec b picks: driver and tool versions, tool's config, interrupt and dependency,
// or tool alone.
func (p *planFuzz) wants(b byte) []Want {
	d := driver(fuzzVersions[int(b)%4])
	tl := tool(fuzzVersions[int(b>>2)%4])
	mode := map[bool]string{true: "b", false: "a"}[b&128 != 0]
	tl.Config, tl.Spec = ConfigHashes(map[string]string{"mode": mode}), []byte(`{"mode":"`+mode+`"}`)
	tl.Uninstall = p.flags&16 != 0
	if p.flags&64 != 0 {
		tl.ConfigInterrupts = map[string]v1alpha1.Interrupt{"mode": {Type: v1alpha1.InterruptService, Services: []string{"cfg"}}}
	}
	if b&16 != 0 {
		tl.Interrupt = &v1alpha1.Interrupt{Type: v1alpha1.InterruptService, Services: []string{"svc"}}
	}
	if b&32 != 0 && b&64 == 0 {
		tl.DependsOn = []string{"driver"}
	}
	if b&64 != 0 {
		return []Want{tl}
	}
	return []Want{d, tl}
}

// planEvent is one thing an op byte does to the world before a pass.
type planEvent struct {
	name string
	do   func(p *planFuzz, op byte)
}

// planEvents are indexed by op modulo their number: keep the order, the seed corpus is
// written against it.
var planEvents = []planEvent{
	{"Jobs settle", func(p *planFuzz, _ byte) { p.s.settle() }},
	{"Jobs settle", func(p *planFuzz, _ byte) { p.s.settle() }},
	{"Jobs settle", func(p *planFuzz, _ byte) { p.s.settle() }},
	{"spec change", func(p *planFuzz, op byte) { p.s.facts.Wants = p.wants(op) }},
	{"a Job kind fails or recovers", func(p *planFuzz, op byte) {
		keys := []string{string(appl), string(conf), string(intr), string(post), string(upgr), string(unin), "soak", "cfgb"}
		p.failing[fmt.Sprintf("node-%d/%s", op/10%4, keys[(op/40+op/10)%8])] = op&1 == 0
	}},
	{"node gate", func(p *planFuzz, op byte) { p.s.nodes[fmt.Sprintf("node-%d", op/10%4)].gate = Gate(op / 10 % 3) }},
	{"pause, clear quarantine", func(p *planFuzz, op byte) {
		p.s.facts.Paused = op&16 != 0
		if op&64 != 0 { // gantry.dev/clear-quarantine: lift every quarantine
			p.s.facts.ClearQuarantine = append([]string(nil), p.s.facts.Quarantined...)
		}
	}},
	{"node taint", func(p *planFuzz, op byte) {
		p.s.nodes[fmt.Sprintf("node-%d", op/10%4)].blocked = map[bool]string{true: "taint", false: ""}[op&32 != 0]
	}},
	{"clock step", func(p *planFuzz, op byte) {
		if op&16 != 0 {
			p.s.now = p.s.now.Add(7 * time.Second) // within a soak window: the next round
		} else {
			p.s.now = p.s.now.Add(BackoffMax)
		}
	}},
	{"budget percent", func(p *planFuzz, op byte) {
		p.s.facts.Budget = &v1alpha1.InterruptionBudget{Percent: ptr(int32(1 + int(op)%100))}
	}},
}

// beforePass is what the pass invariants compare the decision with.
type beforePass struct {
	quarantined map[string]bool // keys quarantined: a lifted key may run again; a pending one may not
	active      map[string]bool // node/package@version of flows under way
	flows       map[string]int  // node → flows started
	pending     map[string]bool // soak Jobs created and not decided
}

func (p *planFuzz) before() beforePass {
	b := beforePass{quarantined: map[string]bool{}, active: map[string]bool{}, flows: map[string]int{}, pending: map[string]bool{}}
	for _, q := range p.s.facts.Quarantined {
		if !slices.Contains(p.s.facts.ClearQuarantine, q) || revertRunning(q, p.s.nodeFacts()) {
			b.quarantined[q] = true
		}
	}
	for name, n := range p.s.nodes {
		if n.rec != nil {
			for pkg, r := range n.rec.Packages {
				if !r.Done {
					b.active[name+"/"+Quarantine(pkg, r.Version)] = true
				}
			}
			b.flows[name] = n.rec.Flows
		}
		for jn, j := range n.pending {
			if j.SoakCheck {
				b.pending[jn] = true
			}
		}
	}
	return b
}

// pass runs one machine pass (after the event named event) and checks passInvariants in
// order; the first that fails stops the test and is named in the message. Then it threads the
// quarantine back as the controller does.
func (p *planFuzz) pass(event string) {
	b := p.before()
	d := p.s.pass()
	for _, inv := range passInvariants {
		if err := inv.check(p, b, d); err != nil {
			p.t.Fatalf("after %s: invariant %q: %v", event, inv.name, err)
		}
	}
	p.s.facts.Quarantined = d.Quarantined           // what the controller writes to status
	p.s.facts.ClearQuarantine = d.QuarantinePending // the controller keeps the pending keys asked
}

// passInvariant is one named property of a pass's decision; check returns why it fails.
type passInvariant struct {
	name  string
	check func(p *planFuzz, b beforePass, d Decision) error
}

var passInvariants = []passInvariant{
	{"serial set: one flow at a time", func(p *planFuzz, _ beforePass, _ Decision) error { return checkSerial(p.s) }},
	{"no stage of a quarantined version starts", invQuarantinedStages},
	{"soak rounds one at a time, in order", invSoakRounds},
	{"no flow starts on a quarantined version or config", invQuarantinedFlows},
	{"quarantine never forgotten", invQuarantineKept},
	{"pending lift is quarantined", invPendingLift},
}

// invQuarantinedStages: no Job of a quarantined version or config starts, except an uninstall,
// a soak check, a flow under way, or a rollback (which returns to what the node ran, even if
// quarantined since, elsewhere).
func invQuarantinedStages(_ *planFuzz, b beforePass, d Decision) error {
	for _, np := range d.Nodes {
		for _, j := range np.Jobs {
			q := Quarantine(j.Package, j.Version)
			if r := np.Record.recordPackages()[j.Package]; r != nil && r.Reverting {
				q = ""
			}
			if b.quarantined[q] && j.Stage != unin && !j.SoakCheck && !b.active[np.Name+"/"+q] {
				return fmt.Errorf("%s: stage %s of quarantined %s@%s started", np.Name, j.Stage, j.Package, j.Version)
			}
		}
	}
	return nil
}

// invSoakRounds: a soak check follows a done flow (a health check: every package done), one
// round at a time per node/package/flow attempt, rounds in increasing order. It remembers the
// rounds it saw in p.
func invSoakRounds(p *planFuzz, b beforePass, d Decision) error {
	for _, np := range d.Nodes {
		for _, j := range np.Jobs {
			if !j.SoakCheck {
				continue
			}
			key, err := soakCheckKey(np, j)
			if err != nil {
				return err
			}
			if last, ok := p.soakRound[key]; ok && j.SoakRound <= last {
				return fmt.Errorf("%s: soak round %d after round %d", key, j.SoakRound, last)
			}
			for jn := range b.pending {
				if p.soakKey[jn] == key {
					return fmt.Errorf("%s: soak round %d started while %s runs", key, j.SoakRound, jn)
				}
			}
			p.soakKey[j.Name], p.soakRound[key] = key, j.SoakRound
		}
	}
	return nil
}

// soakCheckKey is the node/package/flow/restarts/soaks (or node/probe-name/flows/soaks) a soak
// check Job belongs to, or why it should not run.
func soakCheckKey(np NodePlan, j JobSpec) (string, error) {
	if j.Probe != "" {
		// A health check runs only while every package of the node is done.
		for pkg, r := range np.Record.Packages {
			if !r.Done {
				return "", fmt.Errorf("%s: health check %s while %s is not done: %+v", np.Name, j.Name, pkg, *r)
			}
		}
		return fmt.Sprintf("%s/probe-%s/%d/%d", np.Name, j.Probe, np.Record.Flows, np.Record.Soaks), nil
	}
	r := np.Record.Packages[j.Package]
	if r == nil || !r.Done || r.Stage != j.Stage {
		return "", fmt.Errorf("%s: soak check %s of %s without a done flow: %+v", np.Name, j.Name, j.Package, r)
	}
	return fmt.Sprintf("%s/%s/%d/%d/%d", np.Name, j.Package, r.Flow, r.Restarts, np.Record.Soaks), nil
}

// invQuarantinedFlows: a flow started this pass (not a rollback, not a removal) is never of a
// quarantined version or config.
func invQuarantinedFlows(_ *planFuzz, b beforePass, d Decision) error {
	for _, np := range d.Nodes {
		for pkg, r := range np.Record.recordPackages() {
			if r.Flow <= b.flows[np.Name] || r.Reverting || r.Removing || r.Stage == unin {
				continue
			}
			if q := quarantinedKey(b.quarantined, &Want{Name: pkg, Version: r.Version, Config: r.Config}); q != "" {
				return fmt.Errorf("%s: flow %d of %s (%s) started on quarantined %s", np.Name, r.Flow, pkg, r.Stage, q)
			}
		}
	}
	return nil
}

func invQuarantineKept(_ *planFuzz, b beforePass, d Decision) error {
	for q := range b.quarantined {
		if !strings.Contains(fmt.Sprint(d.Quarantined), q) {
			return fmt.Errorf("quarantine %s forgotten: %v", q, d.Quarantined)
		}
	}
	return nil
}

func invPendingLift(_ *planFuzz, _ beforePass, d Decision) error {
	for _, q := range d.QuarantinePending {
		if !slices.Contains(d.Quarantined, q) {
			return fmt.Errorf("pending lift %s not quarantined: %v", q, d.Quarantined)
		}
	}
	return nil
}

// trace logs the records after op (FUZZ_TRACE).
func (p *planFuzz) trace(op byte) {
	s, t := p.s, p.t
	t.Logf("op %d (%d): jobs so far %v", op, op%10, s.ran)
	for _, n := range s.nodeNames() {
		r := s.nodes[n].rec
		if r == nil {
			continue
		}
		line := fmt.Sprintf("  %s %s cord=%v wd=%v q=%v:", n, r.Rollout, s.nodes[n].cordoned, r.Withdrawn, s.facts.Quarantined)
		for pkg, pr := range r.Packages {
			pv := ""
			if pr.Prev != nil {
				pv = pr.Prev.Version
			}
			line += fmt.Sprintf(" %s@%s %s/%s done=%v new=%v prev=%s rev=%v from=%s flow=%d;", pkg, pr.Version, pr.Stage, pr.State, pr.Done, pr.New, pv, pr.Reverting, pr.RevertedFrom, pr.Flow)
		}
		t.Log(line)
	}
}

// finish lets everything finish: no failures, no holds.
func (p *planFuzz) finish() {
	s := p.s
	clear(p.failing)
	s.facts.Paused = false
	for _, n := range s.nodes {
		n.gate, n.blocked = GateOpen, ""
	}
	if s.facts.OnHealthFailure == v1alpha1.HealthFailureRollback {
		// A record still erroring may roll back (and quarantine) in the final passes:
		// move every package to a version no failure touched.
		for i := range s.facts.Wants {
			s.facts.Wants[i].Version, s.facts.Wants[i].Image = "3.0.0", "img:3.0.0"
		}
	}
	s.run(v1alpha1.StatusComplete)
}

// checkSerial says when a serial set has two package flows unfinished on one node.
func checkSerial(s *sim) error {
	if !s.facts.Serial {
		return nil
	}
	for name, n := range s.nodes {
		var open []string
		for pkg, r := range n.recPackages() {
			if !r.Done {
				open = append(open, pkg)
			}
		}
		if len(open) > 1 {
			return fmt.Errorf("serial set: %s has flows of %v unfinished at once", name, open)
		}
	}
	return nil
}

// recordPackages is r's packages (none for a nil record).
func (r *NodeRecord) recordPackages() map[string]*PackageRecord {
	if r == nil {
		return nil
	}
	return r.Packages
}

// stageChecker checks, for every package on every node, that each new stage Job follows the
// success of the stage before it in Skyhook's flow (or retries a failed one).
type stageChecker struct {
	t    *testing.T
	seen map[string]int // node/pkg → stages already checked
}

func newStageChecker(t *testing.T) *stageChecker {
	return &stageChecker{t: t, seen: map[string]int{}}
}

func (c *stageChecker) check(s *sim) {
	for node, pkgs := range s.ran {
		for pkg, stages := range pkgs {
			key := node + "/" + pkg
			for i := c.seen[key]; i < len(stages); i++ {
				if i == 0 {
					continue
				}
				prev, cur := Stage(stages[i-1]), Stage(stages[i])
				switch cur {
				case appl:
					// a flow start, or after uninstall
				case conf:
					// after apply/upgrade, a retry, or a config-change flow start
				case post:
					if prev != conf && prev != intr && prev != post {
						c.t.Fatalf("%s: post-interrupt after %s (%v)", key, prev, stages)
					}
				case intr:
					if prev != conf && prev != intr {
						c.t.Fatalf("%s: interrupt after %s (%v)", key, prev, stages)
					}
				}
			}
			c.seen[key] = len(stages)
		}
	}
	// Stage order within a flow is also checked by the records: a package at stage X in state
	// complete must have had a successful Job for X.
	for node, n := range s.nodes {
		if n.rec == nil {
			continue
		}
		for pkg, r := range n.rec.Packages {
			if r.State != v1alpha1.StateComplete || r.Stage == intr {
				continue
			}
			jn := JobName(s.facts.Name, node, pkg, r.Flow, r.Stage, r.Restarts)
			if j, ok := n.jobs[jn]; !ok || !j.Succeeded {
				c.t.Fatalf("%s/%s complete at %s without a successful Job %s", node, pkg, r.Stage, jn)
			}
		}
	}
}
