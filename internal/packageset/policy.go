package packageset

// Rule: the deployment policy (Skyhook's DeploymentPolicy): compartments of nodes, each with its
// own budget, rolled out in fixed, linear or exponential batches with a batch success threshold,
// a consecutive-failure threshold and a safety limit.

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// DefaultCompartment names the nodes no compartment of the policy picks (Skyhook's
// __default__ compartment).
const DefaultCompartment = "default"

// Strategy defaults (Skyhook's DeploymentStrategy.Default).
const (
	DefaultInitialBatch     = 1
	DefaultDelta            = 1
	DefaultGrowthFactor     = 2
	DefaultBatchThreshold   = 100
	DefaultFailureThreshold = 3
	DefaultSafetyLimit      = 50
)

// Policy is a set's deployment policy as the machine reads it.
type Policy struct {
	// Compartments: the spec's, in order, then DefaultCompartment.
	Compartments []PolicyCompartment
	// ResetOnCompletion: a compartment whose nodes are all complete starts its batches over.
	ResetOnCompletion bool
}

// PolicyCompartment is one compartment: its budget, its strategy (nil: no batches, the
// budget alone) and the batch state the set's status holds.
type PolicyCompartment struct {
	Name     string
	Budget   *v1alpha1.InterruptionBudget
	Strategy *v1alpha1.DeploymentStrategy
	Batch    v1alpha1.BatchState
}

// PolicyOf is the machine's view of spec (nil: no policy) with the batch state of status
// (status.compartments, by name). A compartment without a strategy takes the default's.
func PolicyOf(spec *v1alpha1.DeploymentPolicy, status []v1alpha1.CompartmentStatus) *Policy {
	if spec == nil {
		return nil
	}
	batch := map[string]v1alpha1.BatchState{}
	for _, c := range status {
		if c.Batch != nil {
			b := *c.Batch
			b.Nodes = append([]string(nil), c.Batch.Nodes...)
			batch[c.Name] = b
		}
	}
	var def v1alpha1.PolicyDefault
	if spec.Default != nil {
		def = *spec.Default
	}
	p := &Policy{ResetOnCompletion: spec.ResetBatchStateOnCompletion == nil || *spec.ResetBatchStateOnCompletion}
	for _, c := range spec.Compartments {
		b := c.Budget
		s := c.Strategy
		if s == nil {
			s = def.Strategy
		}
		p.Compartments = append(p.Compartments, PolicyCompartment{Name: c.Name, Budget: &b, Strategy: s, Batch: batch[c.Name]})
	}
	p.Compartments = append(p.Compartments, PolicyCompartment{Name: DefaultCompartment, Budget: def.Budget, Strategy: def.Strategy,
		Batch: batch[DefaultCompartment]})
	return p
}

// CompartmentMatcher returns the function that names a node's compartment from its labels:
// the first compartment of spec whose selector matches, else DefaultCompartment. Errors: a
// selector the API machinery rejects, naming the compartment.
func CompartmentMatcher(spec *v1alpha1.DeploymentPolicy) (func(map[string]string) string, error) {
	if spec == nil {
		return func(map[string]string) string { return DefaultCompartment }, nil
	}
	sels := make([]metav1.LabelSelector, len(spec.Compartments))
	for i := range spec.Compartments {
		sels[i] = spec.Compartments[i].Selector
	}
	first, err := firstMatching(sels, func(i int) string {
		return fmt.Sprintf("deploymentPolicy.compartments[%d] (%s).selector", i, spec.Compartments[i].Name)
	})
	if err != nil {
		return nil, err
	}
	return func(l map[string]string) string {
		if i := first(l); i < len(spec.Compartments) {
			return spec.Compartments[i].Name
		}
		return DefaultCompartment
	}, nil
}

// strategyParams are s's parameters with Skyhook's defaults filled in.
type strategyParams struct {
	initial, delta, growth, threshold, failures, safety int
}

func paramsOf(s *v1alpha1.DeploymentStrategy) strategyParams {
	get := func(v *int32, def int) int {
		if v == nil {
			return def
		}
		return int(*v)
	}
	return strategyParams{
		initial: get(s.InitialBatch, DefaultInitialBatch), delta: get(s.Delta, DefaultDelta), growth: get(s.GrowthFactor, DefaultGrowthFactor),
		threshold: get(s.BatchThreshold, DefaultBatchThreshold), failures: get(s.FailureThreshold, DefaultFailureThreshold),
		safety: get(s.SafetyLimit, DefaultSafetyLimit),
	}
}

// BatchSize is the size of the next batch of a compartment of total nodes (Skyhook's
// CalculateBatchSize): the first batch is initialBatch; then fixed keeps it, linear adds delta
// (subtracts it after a failed batch below the safety limit), exponential multiplies by
// growthFactor (divides); at least 1, at most the nodes not yet done (complete or failed in
// earlier batches); 0 for an empty compartment.
func BatchSize(s *v1alpha1.DeploymentStrategy, total int, st v1alpha1.BatchState) int {
	if total <= 0 {
		return 0
	}
	p := paramsOf(s)
	done := int(st.CompletedNodes + st.FailedNodes)
	slow := st.LastBatchFailed && done*100/total < p.safety
	size := p.initial
	if st.LastBatchSize > 0 {
		last := int(st.LastBatchSize)
		switch s.Type {
		case v1alpha1.StrategyLinear:
			size = last + p.delta
			if slow {
				size = max(1, last-p.delta)
			}
		case v1alpha1.StrategyExponential:
			size = min(last*p.growth, total)
			if slow {
				size = max(1, last/p.growth)
			}
		}
	}
	return max(1, min(size, total-done))
}

// EvaluateBatch records a finished batch of size nodes, success of them complete and failure
// failed, in a compartment of total nodes (Skyhook's EvaluateBatchResult): the batch failed
// when fewer than batchThreshold percent completed; failureThreshold failed batches in a row
// while less than safetyLimit percent of the nodes are done set ShouldStop; a successful batch
// resets the count.
func EvaluateBatch(s *v1alpha1.DeploymentStrategy, st *v1alpha1.BatchState, size, success, failure, total int) {
	if size <= 0 {
		return
	}
	p := paramsOf(s)
	st.CompletedNodes += int32(success)
	st.FailedNodes += int32(failure)
	failed := success*100/size < p.threshold
	st.LastBatchSize, st.LastBatchFailed = int32(size), failed
	if !failed {
		st.ConsecutiveFailures = 0
		return
	}
	st.ConsecutiveFailures++
	progress := 100
	if total > 0 {
		progress = int(st.CompletedNodes+st.FailedNodes) * 100 / total
	}
	if progress < p.safety && int(st.ConsecutiveFailures) >= p.failures {
		st.ShouldStop = true
	}
}

// compPass is one compartment during a pass.
type compPass struct {
	PolicyCompartment
	matched, ceiling, inflight int
	failed                     bool // a node's rollout is Failed (halts a compartment without a strategy)
	opened                     bool // this pass started a batch
	target                     int  // the size of the batch this pass started
	inBatch                    map[string]bool
}

// policyPass is the policy during one pass.
type policyPass struct {
	comps    map[string]*compPass
	order    []string
	of       map[string]string // node → compartment
	versions string
	reset    bool
}

// versionsKey identifies the wanted package versions (BatchState.Versions).
func versionsKey(wants []Want) string {
	items := make([]string, len(wants))
	for i, w := range wants {
		items[i] = w.Name + "@" + w.Version
	}
	sort.Strings(items)
	return shortHash(strings.Join(items, ","))[:12]
}

func newPolicyPass(pol *Policy, nodes []NodeFacts, wants []Want) *policyPass {
	pp := &policyPass{comps: map[string]*compPass{}, of: map[string]string{}, versions: versionsKey(wants), reset: pol.ResetOnCompletion}
	for _, c := range pol.Compartments {
		cp := &compPass{PolicyCompartment: c, inBatch: map[string]bool{}}
		if cp.Batch.Versions != pp.versions {
			cp.Batch = v1alpha1.BatchState{Versions: pp.versions} // new versions: start over (Skyhook)
		}
		for _, n := range cp.Batch.Nodes {
			cp.inBatch[n] = true
		}
		pp.comps[c.Name] = cp
		pp.order = append(pp.order, c.Name)
	}
	for _, n := range nodes {
		c := pp.comp(n.Compartment)
		pp.of[n.Name] = c.Name
		if n.Selected {
			c.matched++
		}
		if n.Record != nil && (InFlight(n.Record.Rollout) || n.Cordoned) {
			c.inflight++
		}
		if n.Record != nil && n.Record.Rollout == v1alpha1.RolloutFailed {
			c.failed = true
		}
	}
	for _, c := range pp.comps {
		c.ceiling = Budget(c.Budget, c.matched)
	}
	pp.adopt(nodes)
	return pp
}

// retrying: a package of the record failed before in its flow, or its drain timed out (a
// failed node of an earlier batch, retried under halt: already counted as failed).
func retrying(r *NodeRecord) bool {
	if r.Drain != nil && r.Drain.Failures > 0 {
		return true // its drain timed out before (onTimeout Fail)
	}
	for _, p := range r.Packages {
		if p.Restarts > 0 {
			return true
		}
	}
	return false
}

// adopt puts into its compartment's batch a node in flight (not Failed, not retrying) that no
// batch holds:
// the batch state is in status, written after the node records, so a status write lost (a
// conflict) leaves started nodes outside the state it reads back. They join the batch under
// way, or make up the next one, so batches keep their order and are evaluated.
func (pp *policyPass) adopt(nodes []NodeFacts) {
	for _, n := range nodes {
		c := pp.comp(n.Compartment)
		if c.Strategy == nil || !n.Selected || n.Record == nil || c.inBatch[n.Name] ||
			!InFlight(n.Record.Rollout) || n.Record.Rollout == v1alpha1.RolloutFailed || retrying(n.Record) {
			continue
		}
		if len(c.Batch.Nodes) == 0 {
			c.Batch.CurrentBatch++
		}
		c.Batch.Nodes = append(c.Batch.Nodes, n.Name)
		c.inBatch[n.Name] = true
	}
}

// comp is the named compartment (DefaultCompartment for "" or a name the policy lacks).
func (pp *policyPass) comp(name string) *compPass {
	if c, ok := pp.comps[name]; ok {
		return c
	}
	return pp.comps[DefaultCompartment]
}

// grant is nodePass.grant under a policy: a node in flight keeps its grant; another needs a
// free slot of its compartment's ceiling and, with a strategy, a place in the current batch
// (openBatch). Without a strategy a Failed node halts its compartment only; halted (a
// quarantined version) halts every compartment. A deletion and a node that left the selector
// use the ceiling alone.
func (pp *policyPass) grant(p *nodePass, n NodeFacts, wasInFlight, halted, deleting bool) {
	c := pp.comp(pp.of[n.Name])
	p.granted = wasInFlight
	if p.granted || p.hold != "" || !p.needsWork() || halted {
		return
	}
	batched := c.Strategy != nil && !deleting && n.Selected
	switch {
	case !batched && c.failed && !deleting:
		return
	case batched && !c.inBatch[n.Name] && !c.openBatch(n.Name):
		return
	case c.inflight >= c.ceiling:
		return
	}
	p.granted = true
	c.inflight++
}

// openBatch adds node to a batch this pass starts: none may be under way (the current batch's
// nodes all done) and the compartment not stopped; the batch is BatchSize nodes, at most the
// ceiling's free slots, taken in node name order. False: the node waits.
func (c *compPass) openBatch(node string) bool {
	if c.Batch.ShouldStop || (len(c.Batch.Nodes) > 0 && !c.opened) {
		return false
	}
	if !c.opened {
		size := min(BatchSize(c.Strategy, c.matched, c.Batch), c.ceiling-c.inflight)
		if size <= 0 {
			return false
		}
		c.opened, c.target = true, size
		c.Batch.CurrentBatch++
	}
	if len(c.Batch.Nodes) >= c.target {
		return false
	}
	c.Batch.Nodes = append(c.Batch.Nodes, node)
	c.inBatch[node] = true
	return true
}

// finish evaluates each compartment's batch from this pass's node plans: a batch node is
// complete (its status complete), failed (erroring, or its rollout Failed or Reverted) or
// still running; once none runs, the batch is recorded (EvaluateBatch) and cleared. A node
// that left the compartment leaves the batch. It returns the compartments' status, a line per
// stopped compartment, and whether a batch finished (the next may start at once).
func (pp *policyPass) finish(plans []NodePlan, selected map[string]bool) (out []v1alpha1.CompartmentStatus, stopped []string, finished bool) {
	// One walk over the plans counts every compartment's nodes in progress and complete.
	inProgress, completed := map[string]int32{}, map[string]int32{}
	var byName map[string]*NodePlan // only when a batch is to evaluate
	for i := range plans {
		np := &plans[i]
		comp := pp.of[np.Name]
		if np.Record != nil && (InFlight(np.Record.Rollout) || np.Cordon) {
			inProgress[comp]++
		}
		if selected[np.Name] && np.Status == v1alpha1.StatusComplete {
			completed[comp]++
		}
	}
	for _, name := range pp.order {
		c := pp.comps[name]
		if c.Strategy != nil && len(c.Batch.Nodes) > 0 {
			if byName == nil {
				byName = make(map[string]*NodePlan, len(plans))
				for i := range plans {
					byName[plans[i].Name] = &plans[i]
				}
			}
			if c.evaluate(byName, selected, pp.of) {
				finished = true
			}
		}
		cs := v1alpha1.CompartmentStatus{Name: name, Matched: int32(c.matched), Ceiling: int32(c.ceiling),
			InProgress: inProgress[name], Completed: completed[name]}
		if c.matched > 0 {
			cs.ProgressPercent = cs.Completed * 100 / int32(c.matched)
		}
		if pp.reset && c.matched > 0 && int(cs.Completed) == c.matched && c.Batch.CurrentBatch > 0 {
			c.Batch = v1alpha1.BatchState{Versions: pp.versions}
		}
		if c.Strategy != nil {
			b := c.Batch
			cs.Batch = &b
		}
		if c.Batch.ShouldStop {
			p := paramsOf(c.Strategy)
			done := int(c.Batch.CompletedNodes + c.Batch.FailedNodes)
			stopped = append(stopped, fmt.Sprintf("compartment %s stopped after %d failed batches in a row with %d/%d nodes done (below its safety limit of %d%%); change the package versions to start over",
				name, c.Batch.ConsecutiveFailures, done, c.matched, p.safety))
		}
		if c.matched > 0 || len(pp.order) == 1 || name != DefaultCompartment {
			out = append(out, cs)
		}
	}
	return out, stopped, finished
}

// evaluate counts the current batch's nodes; when none is still running it records the batch
// and clears it (true).
func (c *compPass) evaluate(plans map[string]*NodePlan, selected map[string]bool, of map[string]string) bool {
	success, failure, running := 0, 0, 0
	var kept []string
	for _, n := range c.Batch.Nodes {
		np, ok := plans[n]
		if !ok || !selected[n] || of[n] != c.Name {
			continue // gone from the set or the compartment
		}
		kept = append(kept, n)
		switch {
		case np.Status == v1alpha1.StatusComplete:
			success++
		case np.Status == v1alpha1.StatusErroring || np.Record != nil &&
			(np.Record.Rollout == v1alpha1.RolloutFailed || np.Record.Rollout == v1alpha1.RolloutReverted):
			failure++
		default:
			running++
		}
	}
	c.Batch.Nodes = kept
	if running > 0 {
		return false
	}
	EvaluateBatch(c.Strategy, &c.Batch, success+failure, success, failure, c.matched)
	c.Batch.Nodes = nil
	return true
}

// BatchPause is the requeue delay after a batch finished, so the next starts at once rather
// than at the next Poll.
const BatchPause = time.Second
