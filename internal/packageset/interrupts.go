package packageset

// Rule: interrupts (reboot, service restart) merged across a node's packages, with cordon and drain before they run.

import (
	"sort"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// interruptPending: some package's current flow still has its interrupt ahead or running.
func (p *nodePass) interruptPending() bool {
	for _, r := range p.rec.Packages {
		if r.Interrupt != nil && !r.Done && r.Stage != v1alpha1.StagePostInterrupt {
			return true
		}
	}
	return false
}

// configInterrupt merges the configInterrupts of the keys that differ between two configs
// (changed, added or removed); nil when none of them needs one.
func configInterrupt(a, b map[string]string, cis map[string]v1alpha1.Interrupt) (*v1alpha1.Interrupt, error) {
	var its []v1alpha1.Interrupt
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if a[k] == b[k] {
			continue
		}
		if it, ok := cis[k]; ok {
			its = append(its, it)
		}
	}
	if len(its) == 0 {
		return nil, nil
	}
	m, _, err := MergeInterrupts(its)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// DrainMatters says whether a pass over a cordoned node with record rec may read
// NodeFacts.Drained (interrupts below): only while some package's interrupt is still ahead
// (at stage config) and none runs yet. Once the interrupt Pod runs or has run, the
// controller need not list the node's pods to fill Drained in. Drained false is always
// safe to report: the pass drains (again) and the next pass looks.
func DrainMatters(rec *NodeRecord) bool {
	if rec == nil {
		return false
	}
	ahead := false
	for _, r := range rec.Packages {
		if r.Interrupt == nil || r.Done {
			continue
		}
		if removalGated(r) {
			ahead = true
			continue
		}
		switch r.Stage {
		case v1alpha1.StageInterrupt:
			return false
		case v1alpha1.StageConfig:
			ahead = true
		}
	}
	return ahead
}

// interrupts runs the node's merged interrupt once every package whose flow has one is at
// config complete (Deferred) and no other stage of the set runs on the node: cordon (budget:
// the node is in flight), wait for its non-interrupt pods, drain, then one interrupt Pod for the highest-ranked interrupt, the
// others skipped; on its success all of them complete and go on to post-interrupt.
func (p *nodePass) interrupts() error {
	ready, running, reached := p.interruptCandidates()
	if !reached {
		return nil // some package has not reached its interrupt yet
	}
	if len(running) > 0 {
		return p.runningInterrupt(running)
	}
	if len(ready) == 0 || !p.readyToInterrupt() {
		return nil
	}
	return p.startInterrupt(ready)
}

// interruptCandidates sorts the packages with an interrupt and an unfinished flow: ready (config
// complete, waiting for the interrupt) and running (in the interrupt stage). reached is false
// when one of them has not reached its interrupt yet.
func (p *nodePass) interruptCandidates() (ready, running []string, reached bool) {
	for _, name := range p.sortedRecords() {
		r := p.rec.Packages[name]
		if r.Interrupt == nil || r.Done || r.Removing {
			continue // a removal runs its own interrupt (uninstall.go)
		}
		switch {
		case r.Stage == v1alpha1.StageConfig && r.State == v1alpha1.StateComplete:
			ready = append(ready, name)
		case r.Stage == v1alpha1.StageInterrupt:
			running = append(running, name)
		case r.Stage == v1alpha1.StagePostInterrupt:
		default:
			return nil, nil, false
		}
	}
	return ready, running, true
}

// runningInterrupt follows the merged interrupt in flight (running: the packages in the
// interrupt stage, the winner runs the Pod, the others are skipped): when the winner completes
// every one of them moves on to post-interrupt; when the winner's flow was rolled back, the
// skipped ones go back to config complete.
func (p *nodePass) runningInterrupt(running []string) error {
	var winner *PackageRecord
	var winnerName string
	for _, name := range running {
		if r := p.rec.Packages[name]; r.State != v1alpha1.StateSkipped {
			winner, winnerName = r, name
		}
	}
	if winner == nil {
		// The winner's flow was rolled back: the skipped ones wait at config complete
		// again and merge into the next interrupt.
		for _, name := range running {
			r := p.rec.Packages[name]
			r.Stage, r.State, r.Since = v1alpha1.StageConfig, v1alpha1.StateComplete, p.f.Now
		}
		return nil
	}
	if winner.State == v1alpha1.StateInProgress {
		if p.rebooted(winner) {
			p.rebootDone(winner) // whatever its pod says: the node came back
		} else if err := p.observe(winnerName, winner); err != nil {
			return err
		}
	}
	if winner.State == v1alpha1.StateErroring {
		return nil // retried with backoff by step()
	}
	if winner.State != v1alpha1.StateComplete {
		return nil
	}
	for _, name := range running {
		r := p.rec.Packages[name]
		if r.State == v1alpha1.StateSkipped {
			if err := p.transition(r, EventPromoted); err != nil {
				return err
			}
		}
		p.begin(r, v1alpha1.StagePostInterrupt)
		p.createJob(name, r)
	}
	return nil
}

// readyToInterrupt says whether the node may be interrupted now: no other stage of the set runs
// or errors on it, a start is allowed, and it is cordoned (else it plans a cordon within the
// cordon slots) and drained (else, once the non-interrupt pods are gone, drainStep plans the
// drain or decides its timeout). When it says yes, the caller starts the interrupt (or the
// removal's uninstall) in this pass.
func (p *nodePass) readyToInterrupt() bool {
	for name, r := range p.rec.Packages {
		if r.Done && p.want(name) == nil {
			// An abandoned flow of a package no longer wanted runs nothing; its removal flow
			// starts in step, before this check, unless a serial set holds it behind the flow
			// waiting here (then waiting for it would wait forever).
			continue
		}
		if r.State == v1alpha1.StateInProgress || r.State == v1alpha1.StateErroring {
			return false // wait for the set's other stages on the node (Skyhook HasRunningPackages)
		}
	}
	if !p.canStart() {
		return false
	}
	if p.plan.Cordon {
		return false // asked for this pass already (a removal's gate, then the interrupts)
	}
	if !p.n.Cordoned {
		if *p.cordonSlots > 0 {
			*p.cordonSlots--
			p.plan.Cordon = true
		}
		return false
	}
	if p.nonInterruptHold() {
		return false // the non-interrupt pods finish before the drain starts
	}
	return p.drained()
}

// startInterrupt merges the ready packages' interrupts into one (reboot > restart-all-services >
// service > noop) and starts it: the winner runs the merged interrupt's Pod, the others are
// skipped. Errors: an illegal transition or an interrupt MergeInterrupts rejects.
func (p *nodePass) startInterrupt(ready []string) error {
	its := make([]v1alpha1.Interrupt, len(ready))
	for i, name := range ready {
		its[i] = *p.rec.Packages[name].Interrupt
	}
	merged, win, err := MergeInterrupts(its)
	if err != nil {
		return err
	}
	for i, name := range ready {
		r := p.rec.Packages[name]
		r.Stage, r.State, r.Restarts, r.Message = v1alpha1.StageInterrupt, "", 0, ""
		if i == win {
			if err := p.transition(r, EventStarted); err != nil {
				return err
			}
			m := merged
			r.Interrupt = &m
			if m.Type == v1alpha1.InterruptReboot {
				r.BootID = p.n.BootID
			}
			p.createJob(name, r)
		} else if err := p.transition(r, EventSkipped); err != nil {
			return err
		}
	}
	return nil
}
