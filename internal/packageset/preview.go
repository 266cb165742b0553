package packageset

// Rule: the rollout preview (what an apply of a package set's spec will do to the fleet, shown
// at plan). It reads the nodes as a pass does (NewNodeReader) and runs Plan, the reconciler's
// own pass, over simulated nodes on which every stage succeeds, until the set is complete or
// nothing moves; what would block a node now (a taint, an earlier set, a drain the
// PodDisruptionBudgets refuse or spec.drain keeps from finishing, a non-interruptible pod, a
// fleet budget held by other sets, a release not verified) is read from the cluster's facts
// and held in the simulation as the reconciler would hold it (spec.drain.timeout included).

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// PreviewFacts are what a rollout preview reads.
type PreviewFacts struct {
	// Set is the package set as the plan would write it (spec), with the live object's status
	// and annotations when it exists (compartments' batch state, quarantines).
	Set *v1alpha1.PackageSet
	// Sets are the cluster's package sets (Set's live object among them or not): priorities,
	// after, fleet budgets.
	Sets []v1alpha1.PackageSet
	// Nodes are the cluster's nodes, with this and the other sets' annotations.
	Nodes []corev1.Node
	// Tolerations are the stage pods' (StageTolerations and the runtime-required taint's).
	Tolerations []corev1.Toleration
	// NonInterrupt: node → the running pods matching the set's podNonInterruptLabels
	// ("namespace/name"); the node is neither drained nor interrupted while they run.
	NonInterrupt map[string][]string
	// Refusals: node → why its drain would not finish now, "; "-joined per pod: the Eviction
	// API refuses ("pod ns/p: PodDisruptionBudget ns/b allows 0 disruptions") or spec.drain
	// keeps the pod ("pod ns/q: declares no controller (drain.force is false)"); the node stays
	// cordoned, undrained, until spec.drain.timeout (if set) decides.
	Refusals map[string]string
	// Now is the time of the plan (release freshness).
	Now time.Time
	// Shape: simulate the rollout the spec and the nodes make, without what changes while
	// neither does (taints, earlier sets' progress, a fleet budget's other sets, the release's
	// freshness, drain refusals, non-interruptible pods): the same spec over the same nodes gives
	// the same preview minutes later, as Terraform's final plan at apply requires of a value
	// known at plan. Preview.Blocked still lists what blocks now.
	Shape bool
}

// PreviewNode is one node the rollout starts.
type PreviewNode struct {
	Name string
	// Wave is the index (0-based) of the pass that starts the node: the nodes of one wave start
	// together, each wave after the previous one's nodes are done or free a slot.
	Wave int
	// Cordon, Drain: the node is cordoned, drained; Interrupt is the merged interrupt type its
	// stages run ("reboot", "service", "restartAllServices", "noop"; "" for none).
	Cordon, Drain bool
	Interrupt     string
}

// NodeBlock is a node that would not progress now, and why.
type NodeBlock struct {
	Node, Reason string
}

// Preview is the rollout an apply would run.
type Preview struct {
	// Selected is the number of nodes the set selects.
	Selected int
	// Nodes are the nodes the rollout starts (they run stages), in start order (by wave, then
	// name).
	Nodes []PreviewNode
	// Waves is the number of waves; MaxWave the most nodes one wave starts.
	Waves, MaxWave int
	// Cordoned, Drained, Rebooted count the nodes cordoned, drained and rebooted.
	Cordoned, Drained, Rebooted int
	// Interrupts: interrupt type → nodes whose stages run it.
	Interrupts map[string]int
	// Blocked are the nodes that would block now, with the reason (sorted by node).
	Blocked []NodeBlock
	// Constraints are the order constraints: node edges, after, deployment policy, waves.
	Constraints []string
	// Complete: with every stage succeeding, every selected node completes; Stuck, when not,
	// is the set's last status message (what holds the rest).
	Complete bool
	Stuck    string
	// Passes is the number of reconciler passes simulated.
	Passes int
}

// MaxPreviewPasses bounds a preview's simulated passes.
const MaxPreviewPasses = 20000

// previewIdle is how many passes in a row may change nothing before the preview ends.
const previewIdle = 3

// PreviewRollout computes the rollout an apply of pf.Set would run (see the file comment).
// Errors: Plan's (an illegal transition: a bug or a hand-edited record) and a node record that
// does not parse.
func PreviewRollout(pf PreviewFacts) (Preview, error) {
	set := pf.Set
	f := SetFacts{Now: pf.Now, Name: set.Name, Generation: set.Generation + 1, Paused: set.IsPaused(), Disabled: set.Spec.Disabled,
		Budget: set.Spec.InterruptionBudget, Serial: set.Spec.Serial}
	reader := NewNodeReader(set, pf.Sets, pf.Nodes, pf.Tolerations, &f)
	if f.Fleet != nil {
		f.Fleet.Own = nil // the simulation's own records count (newFleetPass)
	}
	sim := &previewSim{pf: pf, f: f, started: map[string]*PreviewNode{}, drained: map[string]bool{}, drainFailed: map[string]bool{}}
	for i := range pf.Nodes {
		nf, ok, err := reader.Read(&pf.Nodes[i])
		if err != nil {
			return Preview{}, err
		}
		if ok {
			nf.Jobs = map[string]JobFact{}
			sim.nodes = append(sim.nodes, nf)
		}
	}
	// In name order, as Plan sorts them (a sorted list costs its sort nothing).
	sort.Slice(sim.nodes, func(i, j int) bool { return sim.nodes[i].Name < sim.nodes[j].Name })
	sim.out.Blocked = sim.blockedNow()
	if pf.Shape {
		sim.shape()
	}
	if err := sim.run(); err != nil {
		return Preview{}, err
	}
	sim.finish()
	return sim.out, nil
}

// previewSim is the simulated fleet of one preview.
type previewSim struct {
	pf      PreviewFacts
	f       SetFacts
	nodes   []NodeFacts
	started map[string]*PreviewNode
	// drained are the nodes a pass has drained (NodePlan.Drain): the next pass finds them
	// drained unless a refusal or a non-interruptible pod holds them.
	drained map[string]bool
	// drainFailed are the nodes whose drain failed at its timeout (onTimeout Fail): the
	// refusal that failed it stays, so their retries fail too and no longer count as moves.
	drainFailed map[string]bool
	wave        int
	out         Preview
}

// shape drops the facts that change while neither the spec nor the nodes do (PreviewFacts.Shape).
func (s *previewSim) shape() {
	s.pf.Refusals, s.pf.NonInterrupt = nil, nil
	s.f.Release = nil
	if s.f.Fleet != nil {
		s.f.Fleet.Others = map[string][]string{}
	}
	s.f.ConvergedWaits = nil // the other sets' progress
	for i := range s.nodes {
		n := &s.nodes[i]
		n.Blocked, n.WaitFor, n.Gate, n.GateSet = "", "", GateOpen, ""
	}
}

// run alternates Plan and the simulated outcome of its plans until the set is complete or
// nothing changes for previewIdle passes.
func (s *previewSim) run() error {
	idle := 0
	// failedMsg is the last erroring pass's message once a drain failed at its timeout: the
	// failed drain's retries (in progress) come between, and it is what stops the rollout.
	failedMsg := ""
	for s.out.Passes < MaxPreviewPasses {
		s.out.Passes++
		s.f.Nodes = s.drainFacts()
		d, err := Plan(s.f)
		if err != nil {
			return err
		}
		moved := s.apply(d)
		if d.Status == v1alpha1.StatusComplete {
			s.out.Complete = true
			return nil
		}
		if d.Status == v1alpha1.StatusErroring && len(s.drainFailed) > 0 {
			failedMsg = stuckMessage(d)
		}
		if at, ok := s.drainTimeoutAhead(); !moved && ok {
			// A refused drain with spec.drain.timeout: the next pass is the one at its
			// timeout (onTimeout decides there), not one counted idle.
			s.f.Policy = PolicyOf(s.pf.Set.Spec.DeploymentPolicy, d.Compartments)
			s.f.Now = at
			continue
		}
		if moved {
			idle = 0
		} else if idle++; idle >= previewIdle {
			s.out.Stuck = stuckMessage(d)
			if failedMsg != "" && d.Status != v1alpha1.StatusErroring {
				s.out.Stuck = failedMsg
			}
			return nil
		}
		s.f.Policy = PolicyOf(s.pf.Set.Spec.DeploymentPolicy, d.Compartments)
		step := BackoffMax
		if d.RequeueAfter > 0 && d.RequeueAfter < step {
			step = max(d.RequeueAfter, MinSoakCheckInterval)
		}
		s.f.Now = s.f.Now.Add(step)
	}
	s.out.Stuck = fmt.Sprintf("the preview stopped after %d passes", MaxPreviewPasses)
	return nil
}

// drainFacts are the nodes as the next pass reads them: a cordoned node whose drain matters
// has pods to evict until a pass drained it (the workloads a real node runs), then is drained
// unless a refusal or a non-interruptible pod holds it (a refusal is what its drain timeout
// names as left).
func (s *previewSim) drainFacts() []NodeFacts {
	for i := range s.nodes {
		n := &s.nodes[i]
		n.Drained, n.NonInterrupt, n.Unevictable = false, nil, nil
		if n.Cordoned && DrainMatters(n.Record) {
			n.NonInterrupt = s.pf.NonInterrupt[n.Name]
			n.Drained = s.drained[n.Name] && s.pf.Refusals[n.Name] == "" && len(n.NonInterrupt) == 0
			if r := s.pf.Refusals[n.Name]; r != "" {
				n.Unevictable = strings.Split(strings.TrimPrefix(r, "pod "), "; pod ")
			}
		}
	}
	return s.nodes
}

// drainTimeoutAhead is the earliest time, after now, at which a simulated node's drain reaches
// spec.drain.timeout (ok false: no drain under way with a timeout, other than a failed one's
// retry).
func (s *previewSim) drainTimeoutAhead() (at time.Time, ok bool) {
	t := s.f.Drain.Timeout
	if t <= 0 {
		return at, false
	}
	for _, n := range s.nodes {
		if d := n.Record; d != nil && d.Drain != nil && d.Drain.Message == "" && !s.drainFailed[n.Name] {
			due := d.Drain.Since.Add(t)
			if due.After(s.f.Now) && (!ok || due.Before(at)) {
				at, ok = due, true
			}
		}
	}
	return at, ok
}

// apply applies a pass's node plans to the simulated nodes (records, cordons; every stage Pod
// created succeeds before the next pass) and records the nodes it starts. It says whether
// anything changed.
func (s *previewSim) apply(d Decision) bool {
	byName := map[string]int{}
	for i, n := range s.nodes {
		byName[n.Name] = i
	}
	moved, startedNow := false, false
	for _, np := range d.Nodes {
		i, ok := byName[np.Name]
		if !ok {
			continue
		}
		n := &s.nodes[i]
		if np.Record != nil && np.Record.Drain != nil && np.Record.Drain.Message != "" {
			s.drainFailed[np.Name] = true
		}
		if !s.drainFailed[np.Name] && (recordChanged(n.Record, np.Record) || np.Cordon || np.Uncordon || len(np.Jobs) > 0) {
			moved = true
		}
		n.Record = np.Record // the decision's own copy
		n.Cordoned = (n.Cordoned || np.Cordon) && !np.Uncordon
		s.drained[np.Name] = (s.drained[np.Name] || np.Drain) && n.Cordoned
		for _, j := range np.DeleteJobs {
			delete(n.Jobs, j)
		}
		for _, j := range np.Jobs {
			n.Jobs[j.Name] = JobFact{Succeeded: true}
		}
		if s.note(np) {
			startedNow = true
		}
	}
	if startedNow {
		s.wave++
	}
	return moved
}

// note records what node plan np starts on its node: the node's start (its first stage Pod or
// cordon, in wave s.wave), its cordon, drain and interrupt. It says whether the node started
// in this pass.
func (s *previewSim) note(np NodePlan) bool {
	p := s.started[np.Name]
	first := p == nil && (len(np.Jobs) > 0 || np.Cordon)
	if first {
		p = &PreviewNode{Name: np.Name, Wave: s.wave}
		s.started[np.Name] = p
	}
	if p == nil {
		return false
	}
	p.Cordon = p.Cordon || np.Cordon
	p.Drain = p.Drain || np.Drain
	for _, j := range np.Jobs {
		if IsInterruptStage(j.Stage) && j.Interrupt != nil && (p.Interrupt == "" || interruptRank[j.Interrupt.Type] < interruptRank[v1alpha1.InterruptType(p.Interrupt)]) {
			p.Interrupt = string(j.Interrupt.Type)
		}
	}
	return first
}

// recordChanged says whether a pass changed a node's record (rollout state, soak round,
// flows, a package's stage or state).
func recordChanged(a, b *NodeRecord) bool {
	if (a == nil) != (b == nil) {
		return true
	}
	if a == nil {
		return false
	}
	if a.Rollout != b.Rollout || a.SoakRound != b.SoakRound || a.Flows != b.Flows || a.Soaks != b.Soaks || len(a.Packages) != len(b.Packages) {
		return true
	}
	for k, p := range a.Packages {
		q := b.Packages[k]
		if q == nil || p.Stage != q.Stage || p.State != q.State || p.Done != q.Done || p.Version != q.Version {
			return true
		}
	}
	return false
}

// stuckMessage is what holds a set that stopped moving: its Ready condition's message.
func stuckMessage(d Decision) string {
	for _, c := range d.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c.Message
		}
	}
	return string(d.Status)
}

// finish fills the preview's counts and constraints from the started nodes.
func (s *previewSim) finish() {
	s.out.Selected = countSelected(s.nodes)
	s.out.Interrupts = map[string]int{}
	perWave := map[int]int{}
	for _, p := range s.started {
		s.out.Nodes = append(s.out.Nodes, *p)
		perWave[p.Wave]++
		if p.Cordon {
			s.out.Cordoned++
		}
		if p.Drain {
			s.out.Drained++
		}
		if p.Interrupt != "" {
			s.out.Interrupts[p.Interrupt]++
		}
	}
	s.out.Rebooted = s.out.Interrupts[string(v1alpha1.InterruptReboot)]
	sort.Slice(s.out.Nodes, func(i, j int) bool {
		a, b := s.out.Nodes[i], s.out.Nodes[j]
		return a.Wave < b.Wave || a.Wave == b.Wave && a.Name < b.Name
	})
	// Renumber the waves 0..n-1 in start order (passes that started nothing are not waves).
	renum := map[int]int{}
	for i := range s.out.Nodes {
		w := s.out.Nodes[i].Wave
		if _, ok := renum[w]; !ok {
			renum[w] = len(renum)
		}
		s.out.Nodes[i].Wave = renum[w]
	}
	s.out.Waves = len(renum)
	for _, c := range perWave {
		s.out.MaxWave = max(s.out.MaxWave, c)
	}
	s.out.Constraints = constraintsOf(s.pf.Set, s.f)
}

// blockedNow lists the selected nodes with work to do that would not progress now: a taint
// the stage pods do not tolerate, an earlier set not complete or paused, a release that does
// not verify, a drain refused or held (only for a set whose packages interrupt), a fleet budget
// the other sets fill.
func (s *previewSim) blockedNow() []NodeBlock {
	interrupts := wantsInterrupt(s.f.Wants)
	fleetFull := ""
	if fl := s.f.Fleet; fl != nil && len(fl.Others) >= fl.Max {
		fleetFull = fmt.Sprintf("fleet budget %s is full: %d/%d nodes in flight for the other sets (%s)", fleetName(fl.Name, fl.Selector), len(fl.Others), fl.Max,
			strings.Join(otherSets(fl), ", "))
	}
	var out []NodeBlock
	for _, n := range s.nodes {
		if !n.Selected {
			continue
		}
		if why := s.nodeBlock(n, interrupts, fleetFull); why != "" {
			out = append(out, NodeBlock{Node: n.Name, Reason: why})
		}
	}
	return out
}

// nodeBlock is why node n would not progress now ("" when nothing holds it).
func (s *previewSim) nodeBlock(n NodeFacts, interrupts bool, fleetFull string) string {
	switch {
	case n.Blocked != "":
		return "taint " + n.Blocked + " is not tolerated by the stage pods"
	case n.WaitFor != "":
		return "waits for taint " + n.WaitFor + " to be removed"
	case len(s.f.ConvergedWaits) > 0:
		return "after converged: " + strings.Join(s.f.ConvergedWaits, "; ")
	case n.Gate == GatePaused:
		return "package set " + n.GateSet + " (earlier priority) is paused on the node"
	case n.Gate == GateWaiting:
		return "package set " + n.GateSet + " (earlier priority or after) is not complete on the node"
	case s.f.Release != nil:
		return "release: " + s.f.Release.Message
	case interrupts && s.pf.Refusals[n.Name] != "":
		return "drain refused: " + s.pf.Refusals[n.Name] + drainTimeoutNote(s.f.Drain)
	case interrupts && len(s.pf.NonInterrupt[n.Name]) > 0:
		return "non-interruptible pods running: " + strings.Join(s.pf.NonInterrupt[n.Name], ", ")
	case fleetFull != "" && len(s.f.Fleet.Others[n.Name]) == 0 && s.f.Fleet.counts(n.Name):
		return fleetFull
	}
	return ""
}

// drainTimeoutNote says what ends a refused drain: "" without spec.drain.timeout (it waits),
// else the timeout and what onTimeout does then.
func drainTimeoutNote(d DrainSpec) string {
	switch {
	case d.Timeout <= 0:
		return ""
	case d.OnTimeout == v1alpha1.DrainTimeoutContinue:
		return fmt.Sprintf(" (for up to drain.timeout %s, then the interrupt runs with them: onTimeout Continue)", d.Timeout)
	}
	return fmt.Sprintf(" (for up to drain.timeout %s, then the node fails: onTimeout Fail)", d.Timeout)
}

// wantsInterrupt says whether any wanted package interrupts (its own interrupt or one per
// config key).
func wantsInterrupt(wants []Want) bool {
	for _, w := range wants {
		if w.Interrupt != nil || len(w.ConfigInterrupts) > 0 {
			return true
		}
	}
	return false
}

// otherSets are the sets other than this one that share the fleet budget.
func otherSets(fl *FleetFacts) []string {
	seen := map[string]bool{}
	for _, sets := range fl.Others {
		for _, s := range sets {
			seen[s] = true
		}
	}
	return sortedKeys(seen)
}

// constraintsOf are the set's order constraints, one line each: node edges, after, the
// deployment policy's compartments, waves, serial and the interruption budget.
func constraintsOf(set *v1alpha1.PackageSet, f SetFacts) []string {
	var out []string
	for _, e := range f.NodeEdges {
		out = append(out, fmt.Sprintf("node %s after node %s", e.After, edgeWait(e.Before, e.Reason)))
	}
	if len(set.Spec.After) > 0 {
		out = append(out, "after package sets "+strings.Join(set.Spec.After, ", ")+" (on each node)")
	}
	if len(set.Spec.AfterConverged) > 0 {
		var names []string
		for _, e := range set.Spec.AfterConverged {
			names = append(names, edgeWait(e.Name, e.Reason))
		}
		out = append(out, "after package sets "+strings.Join(names, ", ")+" converged (on every node they select)")
	}
	if p := set.Spec.DeploymentPolicy; p != nil {
		var names []string
		for _, c := range p.Compartments {
			names = append(names, c.Name)
		}
		out = append(out, fmt.Sprintf("deployment policy: %d compartments (%s), each with its own budget", len(names), strings.Join(names, ", ")))
	} else if b := set.Spec.InterruptionBudget; b != nil {
		out = append(out, "interruption budget "+budgetString(b))
	}
	if len(f.Waves) > 0 {
		out = append(out, "waves in order: "+strings.Join(f.Waves, ", "))
	}
	if f.Fleet != nil {
		out = append(out, fmt.Sprintf("fleet budget %s: at most %d nodes in flight across %s", fleetName(f.Fleet.Name, f.Fleet.Selector), f.Fleet.Max,
			strings.Join(f.Fleet.Sets, ", ")))
	}
	return out
}

// budgetString is "count N" or "percent P%".
func budgetString(b *v1alpha1.InterruptionBudget) string {
	switch {
	case b.Count != nil:
		return fmt.Sprintf("%d nodes at a time", *b.Count)
	case b.Percent != nil:
		return fmt.Sprintf("%d%% of the nodes at a time", *b.Percent)
	}
	return "every node at once"
}

// Summary is the preview in a few lines for a plan warning: the nodes that run stages, the
// cordoned, drained and interrupted ones, the waves, the constraints and the blocked nodes
// (at most maxListed listed).
func (p Preview) Summary(maxListed int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d selected nodes run stages", len(p.Nodes), p.Selected)
	if p.Waves > 0 {
		fmt.Fprintf(&b, ", in %d waves of at most %d nodes", p.Waves, p.MaxWave)
	}
	fmt.Fprintf(&b, "; %d cordoned, %d drained", p.Cordoned, p.Drained)
	for _, t := range sortedKeys(keysOf(p.Interrupts)) {
		fmt.Fprintf(&b, ", %d %s", p.Interrupts[t], interruptVerb(t))
	}
	b.WriteString(".")
	if len(p.Nodes) > 0 {
		fmt.Fprintf(&b, "\nFirst wave: %s.", strings.Join(firstWave(p.Nodes, maxListed), ", "))
	}
	for _, c := range p.Constraints {
		b.WriteString("\nOrder: " + c + ".")
	}
	for i, bl := range p.Blocked {
		if i == maxListed {
			fmt.Fprintf(&b, "\n... and %d more blocked nodes.", len(p.Blocked)-maxListed)
			break
		}
		fmt.Fprintf(&b, "\nBlocked now: %s: %s.", bl.Node, bl.Reason)
	}
	if !p.Complete && p.Stuck != "" {
		b.WriteString("\nThe rollout would not finish: " + strings.TrimSuffix(p.Stuck, ".") + ".")
	}
	return b.String()
}

// interruptVerb names what an interrupt type does to a node ("rebooted", ...).
func interruptVerb(t string) string {
	switch v1alpha1.InterruptType(t) {
	case v1alpha1.InterruptReboot:
		return "rebooted"
	case v1alpha1.InterruptRestartAllServices:
		return "with all services restarted"
	case v1alpha1.InterruptService:
		return "with services restarted"
	}
	return "with a " + t + " interrupt"
}

// firstWave is the names of wave 0's nodes (at most n, then "... (k more)").
func firstWave(nodes []PreviewNode, n int) []string {
	var out []string
	for _, p := range nodes {
		if p.Wave != 0 {
			break
		}
		out = append(out, p.Name)
	}
	if len(out) > n {
		out = append(out[:n], fmt.Sprintf("... (%d more)", len(out)-n))
	}
	return out
}

// keysOf is m's keys as a set.
func keysOf(m map[string]int) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}
