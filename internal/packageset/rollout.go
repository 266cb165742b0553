package packageset

// Rule: the per-node rollout (NixFleet's Pending → Activating → Soaking → Converged): activation, soak and its check rounds.

import (
	"fmt"
	"strings"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// SoakInterval is the time between the starts of two soak check rounds (NixFleet: "probes
// have started; soak window has not yet elapsed"): interval (spec.rollout.soakCheckInterval)
// when set, at least MinSoakCheckInterval; unset (0): soak/3, at least
// MinDefaultSoakCheckInterval (5s).
func SoakInterval(soak, interval time.Duration) time.Duration {
	if interval > 0 {
		return max(interval, MinSoakCheckInterval)
	}
	return max(soak/3, MinDefaultSoakCheckInterval)
}

// SoakRounds is the index of the last soak check round of a window soak long with rounds
// interval apart: ceil(soak/interval) (0 when soak <= 0). Round k starts SoakRoundStart after
// the node began Soaking; the last one starts when the window ends.
func SoakRounds(soak, interval time.Duration) int {
	if soak <= 0 || interval <= 0 {
		return 0
	}
	return int((soak + interval - 1) / interval)
}

// SoakRoundStart is when round k is due, after the node began Soaking: min(k·interval, soak).
// Round 0 starts at once, the last (SoakRounds) at the end of the window.
func SoakRoundStart(k int, soak, interval time.Duration) time.Duration {
	if k <= 0 {
		return 0
	}
	if interval <= 0 || time.Duration(k) > soak/interval {
		return soak
	}
	return min(time.Duration(k)*interval, soak)
}

// rollout derives the node's NixFleet rollout state from its packages and records the transition
// (validated by RolloutTransition; Pending/Failed pass through Activating where NixFleet
// requires it).
func (p *nodePass) rollout() error {
	var target v1alpha1.RolloutState
	flows := p.flowStates()
	prev := p.rec.Rollout
	switch {
	case flows.erroring || flows.reverting:
		target = v1alpha1.RolloutFailed
	case p.reverted && !flows.active && !flows.deferred:
		target = v1alpha1.RolloutReverted
	case flows.active:
		target = v1alpha1.RolloutActivating
	case flows.deferred:
		target = v1alpha1.RolloutDeferred
	case p.needsWork():
		target = v1alpha1.RolloutPending
		if prev == v1alpha1.RolloutFailed {
			target = v1alpha1.RolloutActivating // a retried flow whose next stage has not started
		}
		if InFlight(prev) && prev != v1alpha1.RolloutFailed {
			target = prev // between stages in the same pass (e.g. waiting on a dependency)
		}
	default:
		target = p.settledRollout(prev)
	}
	if target == v1alpha1.RolloutConverged {
		p.rec.SettledFlows = p.rec.Flows
	}
	return p.walk(prev, target)
}

// flowStates says which kinds of flow the node's package records hold.
type flowStates struct {
	erroring  bool // a flow's stage is erroring, or the node's drain failed (onTimeout Fail)
	deferred  bool // a flow waits for its interrupt (or its post-interrupt)
	active    bool // another flow is not done
	reverting bool // a rollback is not done
}

func (p *nodePass) flowStates() flowStates {
	fs := flowStates{erroring: p.drainFailed()} // a drain failed at its timeout fails the node
	for _, r := range p.rec.Packages {
		switch {
		case r.Reverting && !r.Done:
			fs.reverting = true
		case r.State == v1alpha1.StateErroring:
			fs.erroring = true
		case r.Interrupt != nil && !r.Done && (r.Stage == v1alpha1.StageInterrupt || r.Stage == v1alpha1.StagePostInterrupt ||
			r.Stage == v1alpha1.StageConfig && r.State == v1alpha1.StateComplete):
			fs.deferred = true
		case !r.Done:
			fs.active = true
		}
	}
	return fs
}

// settledRollout is the rollout state of a node with every flow done and nothing left to do,
// coming from prev: Converged, or Soaking (entered now, or going on) while a soak window runs
// or, with no window, while the health checks' single round runs.
func (p *nodePass) settledRollout(prev v1alpha1.RolloutState) v1alpha1.RolloutState {
	switch prev {
	case "", v1alpha1.RolloutPending, v1alpha1.RolloutConverged, v1alpha1.RolloutReverted:
		// Nothing ran in this rollout: a Reverted node the spec now asks to stay where the
		// rollback left it converges (Reverted → Pending → Converged) without soaking
		// again, and without taking a budget slot it was not granted.
		return v1alpha1.RolloutConverged
	case v1alpha1.RolloutSoaking:
		return p.soak()
	}
	if p.soakWindow() > 0 || len(p.f.HealthChecks) > 0 {
		// Entering Soaking: the window and its round 0 start now. With health checks and no
		// window (soak 0), round 0 is the only one: the health gate runs once, and the node
		// converges only once it passed (NixFleet RFC-0005 §1.4: a soak of 0 must not converge
		// before any probe ran).
		p.rec.Since, p.rec.SoakRound = p.f.Now, 0
		p.rec.Soaks++
		p.rec.Observed = nil
		return p.soak()
	}
	return v1alpha1.RolloutConverged
}

type soakResult int

const (
	soakRunning soakResult = iota
	soakPassed
	soakFailed
)

// soak runs the soak window of a node whose stages are done (NixFleet's Soaking, then
// Converged): every package's last check re-runs as Jobs in rounds from SoakRoundStart, one round
// at a time, skipping rounds missed while the reconciler was away. The round under way is the
// record's SoakRound, so Job names come from the record and Now alone and a restarted reconciler
// never creates a round's Pod twice. Converged once the last round (at the window's end) passed,
// Failed when any check fails, else Soaking. With no window but health checks, round 0 runs the
// health checks only: NixFleet's health gate without a soak.
func (p *nodePass) soak() v1alpha1.RolloutState {
	window := p.soakWindow()
	iv := SoakInterval(window, p.f.SoakInterval)
	last := SoakRounds(window, iv)
	elapsed := p.f.Now.Sub(p.rec.Since)
	k := min(p.rec.SoakRound, last) // a shortened window ends at its new last round
	for {
		p.rec.SoakRound = k
		if due := SoakRoundStart(k, window, iv); elapsed < due {
			p.requeueIn(due - elapsed)
			return v1alpha1.RolloutSoaking
		}
		round := p.soakRound
		if window <= 0 {
			round = p.probeRound
		}
		switch round(k, last) {
		case soakFailed:
			return v1alpha1.RolloutFailed
		case soakRunning:
			p.requeueIn(Poll)
			return v1alpha1.RolloutSoaking
		}
		if k >= last {
			return v1alpha1.RolloutConverged
		}
		for k++; k < last && SoakRoundStart(k+1, window, iv) <= elapsed; k++ {
		}
	}
}

// soakRound creates or reads round k's check Jobs (one per package whose flow is done): all
// passed → soakPassed; one failed → that package's last stage is erroring again with the
// check's message, naming the round (soakFailed: the node is Failed and the policy applies:
// halt retries the stage with backoff, rollback reverts); otherwise soakRunning.
func (p *nodePass) soakRound(k, last int) soakResult {
	res := soakPassed
	for _, name := range p.sortedRecords() {
		r := p.rec.Packages[name]
		if !r.Done || r.Removing {
			continue
		}
		jn := SoakJobName(p.f.Name, p.n.Name, name, r.Flow, r.Restarts, p.rec.Soaks, k)
		j, ok := p.n.Jobs[jn]
		switch {
		case !ok:
			timeout := DefaultStageTimeout
			if w := p.want(name); w != nil {
				timeout = w.StageTimeout
			}
			p.plan.Jobs = append(p.plan.Jobs, JobSpec{Name: jn, Node: p.n.Name, Package: name, Version: r.Version, Image: r.Image,
				Stage: r.Stage, Timeout: timeout, SoakCheck: true, SoakRound: k, Spec: r.Spec})
			res = min(res, soakRunning)
		case j.Failed || j.ImagePullError:
			r.Done, r.State, r.Since = false, v1alpha1.StateErroring, p.f.Now
			r.Restarts++
			r.Message = strings.TrimSpace(fmt.Sprintf("soak check %s failed in round %d/%d: %s: %s", CheckOf(r.Stage), k, last, j.Reason, j.Message))
			if j.mustDelete() {
				p.plan.DeleteJobs = append(p.plan.DeleteJobs, jn)
			}
			p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
			p.requeueIn(backoff(r.Restarts))
			return soakFailed
		case !j.Succeeded:
			res = min(res, soakRunning)
		}
	}
	return min(res, p.probeRound(k, last))
}

// probeRound creates or reads round k's health check Jobs (SetFacts.HealthChecks, NixFleet's
// health gates): all passed → soakPassed; one failed → every package whose flow changed in
// this rollout (Flow above SettledFlows; all of them if none did) is erroring with the
// check's message, naming the check and the round (soakFailed: the node is Failed and the
// policy applies: halt retries those packages' last stage with backoff, rollback reverts
// them); otherwise soakRunning.
func (p *nodePass) probeRound(k, last int) soakResult {
	res := soakPassed
	for _, hc := range p.f.HealthChecks {
		jn := SoakJobName(p.f.Name, p.n.Name, "probe-"+hc.Name, p.rec.Flows, 0, p.rec.Soaks, k)
		j, ok := p.n.Jobs[jn]
		switch {
		case !ok:
			p.plan.Jobs = append(p.plan.Jobs, JobSpec{Name: jn, Node: p.n.Name, Probe: hc.Name, Timeout: hc.Timeout, SoakCheck: true, SoakRound: k})
			res = min(res, soakRunning)
		case (j.Failed || j.ImagePullError) && hc.Observe:
			// Observe mode (NixFleet's): recorded for the HealthChecksObserved condition; the
			// round goes on as if it passed.
			if msg := strings.TrimSpace(fmt.Sprintf("health check %s failed %s: %s: %s", hc.Name, roundOf(k, last), j.Reason, j.Message)); p.rec.Observed[hc.Name] != msg {
				if p.rec.Observed == nil {
					p.rec.Observed = map[string]string{}
				}
				p.rec.Observed[hc.Name] = msg
			}
		case j.Failed || j.ImagePullError:
			msg := strings.TrimSpace(fmt.Sprintf("health check %s failed %s: %s: %s", hc.Name, roundOf(k, last), j.Reason, j.Message))
			if j.mustDelete() {
				p.plan.DeleteJobs = append(p.plan.DeleteJobs, jn)
			}
			p.blame(msg)
			return soakFailed
		case !j.Succeeded:
			res = min(res, soakRunning)
		}
	}
	return res
}

// roundOf names round k of last in a failure message: "in round k/last", or "after the last
// stage" for the single round of a health gate with no soak window (last 0).
func roundOf(k, last int) string {
	if last == 0 {
		return "after the last stage"
	}
	return fmt.Sprintf("in round %d/%d", k, last)
}

// blame makes the packages changed in this rollout (all done ones if none changed) erroring
// with msg, as a failed check of their last stage.
func (p *nodePass) blame(msg string) {
	var names []string
	for _, name := range p.sortedRecords() {
		if r := p.rec.Packages[name]; r.Done && !r.Removing && r.Flow > p.rec.SettledFlows {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		for _, name := range p.sortedRecords() {
			if r := p.rec.Packages[name]; r.Done && !r.Removing {
				names = append(names, name)
			}
		}
	}
	for _, name := range names {
		r := p.rec.Packages[name]
		r.Done, r.State, r.Since = false, v1alpha1.StateErroring, p.f.Now
		r.Restarts++
		r.Message = msg
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, msg})
		p.requeueIn(backoff(r.Restarts))
	}
}

// walk moves the rollout state from prev to target through NixFleet's table, inserting the
// intermediate states the table requires (""→Pending, Pending/Failed→Activating,
// Activating/Deferred→Soaking→Converged with no soak).
func (p *nodePass) walk(prev, target v1alpha1.RolloutState) error {
	cur := prev
	for i := 0; cur != target && i < 5; i++ {
		next := target
		if RolloutTransition(cur, target) != nil {
			switch {
			case target == v1alpha1.RolloutReverted && (cur == v1alpha1.RolloutActivating || cur == v1alpha1.RolloutDeferred || cur == v1alpha1.RolloutSoaking):
				next = v1alpha1.RolloutFailed // rolled back within the pass that saw the failure
			case cur == "" || cur == v1alpha1.RolloutConverged || cur == v1alpha1.RolloutReverted || cur == v1alpha1.RolloutSoaking:
				next = v1alpha1.RolloutPending // a spec change opens a new rollout
			case cur == v1alpha1.RolloutPending || cur == v1alpha1.RolloutFailed:
				next = v1alpha1.RolloutActivating
			case cur == v1alpha1.RolloutActivating || cur == v1alpha1.RolloutDeferred:
				next = v1alpha1.RolloutSoaking
			default:
				return RolloutTransition(cur, target)
			}
		}
		if err := RolloutTransition(cur, next); err != nil {
			return err
		}
		cur = next
		p.rec.Since = p.f.Now
	}
	if cur != target {
		return RolloutTransition(cur, target)
	}
	p.rec.Rollout = cur
	if cur != v1alpha1.RolloutSoaking {
		p.rec.SoakRound = 0
	}
	return nil
}

// soakWindow is the node's soak window: its wave's (SetFacts.WaveSoaks) when set, else the
// rollout's (SetFacts.Soak).
func (p *nodePass) soakWindow() time.Duration { return SoakOf(*p.f, p.n.Wave) }

// SoakOf is the soak window of a node in wave (an index of f.Waves; past them: no wave picks
// the node): the wave's own soakDuration when set (NixFleet's per-wave soakMinutes), else
// spec.rollout.soakDuration.
func SoakOf(f SetFacts, wave int) time.Duration {
	if wave >= 0 && wave < len(f.WaveSoaks) && f.WaveSoaks[wave] >= 0 {
		return f.WaveSoaks[wave]
	}
	return f.Soak
}
