package packageset

// The per-node pass: each package's stage flow on one node (Skyhook's state machine), stepping until nothing more can happen this pass.

import (
	"bytes"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/blang/semver/v4"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// backoff is the delay before retry number restarts (>= 1).
func backoff(restarts int32) time.Duration {
	d := BackoffMin
	for i := int32(1); i < restarts && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// newNodePass is the pass over node n with a copy of its record (an empty one if it has none).
func newNodePass(f *SetFacts, n NodeFacts, wants []Want, cordonSlots *int, quarantine map[string]bool) nodePass {
	p := nodePass{f: f, n: n, wants: wants, rec: n.Record.Clone(), cordonSlots: cordonSlots, quarantine: quarantine}
	if p.rec == nil {
		p.rec = &NodeRecord{}
	}
	if p.rec.Packages == nil {
		p.rec.Packages = map[string]*PackageRecord{}
	}
	if n.Selected && !f.Deleting && n.Skyhook != nil {
		p.adopted, p.adoptSkipped = AdoptSkyhook(p.rec, wants, n.Skyhook, f.Now)
	}
	p.noteBoot()
	return p
}

// nodePass runs one node's packages for one pass.
type nodePass struct {
	// f is the pass's facts, shared by the set's nodes (read only: a copy per node cost a
	// third of a 1,000-node pass).
	f       *SetFacts
	n       NodeFacts
	wants   []Want
	rec     *NodeRecord
	hold    Status // non-empty: no new stage starts; the node reports this status
	granted bool
	// cordonSlots is how many more nodes may be cordoned this pass (shared by the set's nodes).
	cordonSlots *int
	plan        NodePlan
	failures    []Failure
	requeue     time.Duration
	// quarantine is the set's quarantined versions ("<package>@<version>"), shared by the
	// set's nodes: a rollback on one node adds to it for the nodes after it.
	quarantine map[string]bool
	// reverted: a package of the node was rolled back and the spec still asks for the
	// quarantined version (the node is Reverted and reports erroring).
	reverted bool
	// drainDecision is drainStep's answer in this pass (nil: not asked yet), so that every
	// caller of readyToInterrupt in one pass gets the first answer; drainTimeout is what the
	// pass did at the drain's timeout (Decision.DrainTimeouts), "" if it did not pass.
	drainDecision *bool
	drainTimeout  string
	// nonInterruptFailed: the node's non-interrupt pods ran past drain.nonInterruptTimeout
	// under onNonInterruptTimeout Fail (nonInterruptHold): the node is erroring.
	nonInterruptFailed bool
	// regated: this pass found the node rebooted outside the set's reboot interrupts and
	// started its re-gate (regate; Decision.Regated).
	regated bool
	// adopted, adoptSkipped: what AdoptSkyhook recorded and passed over on this node in this
	// pass (Decision.Adopted, AdoptSkipped).
	adopted, adoptSkipped []string
}

func (p *nodePass) want(name string) *Want {
	for i := range p.wants {
		if p.wants[i].Name == name {
			return &p.wants[i]
		}
	}
	return nil
}

// settled: the package's record matches what is wanted and its flow is done and complete (a
// flow abandoned while erroring, when the package stopped being wanted, is not; nor one marked
// to run again after a reboot outside Gantry, Reapply).
func settled(r *PackageRecord, w *Want) bool {
	if w == nil {
		return r == nil
	}
	return r != nil && r.Done && r.State == v1alpha1.StateComplete && !r.Removing && !r.Reapply && r.Version == w.Version && maps.Equal(r.Config, w.Config)
}

func (p *nodePass) needsWork() bool {
	for i := range p.wants {
		if !settled(p.rec.Packages[p.wants[i].Name], &p.wants[i]) {
			return true
		}
	}
	for name := range p.rec.Packages {
		if p.want(name) == nil {
			return true
		}
	}
	return false
}

func (p *nodePass) run() (NodePlan, error) {
	p.plan = NodePlan{Name: p.n.Name}
	// Packages in dependency order, then records of packages no longer wanted (by name).
	names := make([]string, 0, len(p.wants)+len(p.rec.Packages))
	for _, w := range p.wants {
		names = append(names, w.Name)
	}
	var gone []string
	for name := range p.rec.Packages {
		if p.want(name) == nil {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	names = append(names, gone...)
	for name := range p.rec.Withdrawn {
		if p.want(name) == nil {
			p.unwithdraw(name) // left the spec (or the node, or the set is deleted)
		}
	}
	for _, name := range names {
		if err := p.step(name); err != nil {
			return p.plan, err
		}
	}
	if err := p.interrupts(); err != nil {
		return p.plan, err
	}
	if !p.n.Cordoned || !p.interruptPending() {
		p.rec.Drain = nil // a drain belongs to one cordon and interrupt: the next starts its own clock
		p.rec.NonInterruptSince = nil
	}
	if err := p.rollout(); err != nil {
		return p.plan, err
	}
	p.noteRollingBack()
	p.recordDevices()
	p.noteBootAfter()
	switch {
	case len(p.rec.Packages) == 0 && !p.n.Cordoned && !p.n.Selected:
		p.plan.Record = nil
	case len(p.rec.Packages) == 0 && p.f.Deleting:
		p.plan.Record = nil
	case p.queued():
		p.plan.Record, p.plan.Queued = nil, true
	default:
		p.plan.Record = p.rec
	}
	if p.n.Cordoned && (p.plan.Record == nil || !p.interruptPending()) {
		p.releaseCordon()
	}
	p.plan.Status = p.status()
	return p.plan, nil
}

// queued says the node is selected and nothing has started on it yet: it had no record, and
// this pass leaves it Pending with no package, cordon or Pod. Such a node keeps no record (a
// node without one is Pending), so a set's first pass over a large fleet writes only the
// nodes it starts instead of a Pending record to every node.
func (p *nodePass) queued() bool {
	return p.n.Record == nil && p.n.Selected && !p.n.Cordoned && !p.f.Deleting && len(p.rec.Packages) == 0 &&
		p.rec.Rollout == v1alpha1.RolloutPending && len(p.plan.Jobs) == 0 && !p.plan.Cordon && !p.plan.Drain
}

// step advances one package as far as it can go this pass.
func (p *nodePass) step(name string) error {
	for guard := 0; guard < 16; guard++ {
		r := p.rec.Packages[name]
		w := p.want(name)
		if r != nil && w == nil && !r.Removing && !r.Done && r.State != v1alpha1.StateInProgress {
			r.Done = true // no longer wanted: abandon the flow (no retry), uninstall below
		}
		var again bool
		var err error
		switch {
		case r == nil || r.Done:
			again, err = p.stepIdle(name, r, w)
		case r.State == v1alpha1.StateInProgress:
			again, err = p.stepInProgress(name, r)
		case r.State == v1alpha1.StateErroring && p.rebooted(r):
			if err := p.stepRebootedErroring(r); err != nil || r.Stage != v1alpha1.StageUninstallInterrupt {
				return err
			}
			again = true // a removal's reboot: the removal is done (stepComplete)
		case r.State == v1alpha1.StateErroring:
			return p.stepErroring(name, r)
		case r.State == v1alpha1.StateSkipped:
			return nil // waits for the merged interrupt (interrupts())
		case r.State == v1alpha1.StateComplete:
			again, err = p.stepComplete(name, r, w)
		case r.State == "" && r.Removing:
			again = p.stepRemovalGate(name, r)
		default:
			return &lifecycle.TransitionError{Kind: "state", From: string(r.State), Why: "unexpected state in a node record"}
		}
		if err != nil || !again {
			return err
		}
	}
	return nil
}

// stepIdle is step for a package with no record or a finished flow (r nil or Done): nothing
// when settled on the wanted version, its re-apply when marked to run again after a reboot
// outside Gantry, stalled when that version is quarantined, else the start of its flow (again:
// step once more on the new record).
func (p *nodePass) stepIdle(name string, r *PackageRecord, w *Want) (again bool, err error) {
	if settled(r, w) {
		if !bytes.Equal(r.Spec, w.Spec) {
			r.Spec = w.Spec // the version's latest spec (soak checks, a later uninstall)
		}
		return false, nil
	}
	if reapplyDue(r, w) {
		if !p.canStart() || !p.depsComplete(w) || p.serialBusy(name) {
			return false, nil
		}
		p.startReapply(name, w)
		return true, nil
	}
	if q := p.quarantinedKeyOf(w); q != "" {
		switch {
		case r != nil && r.Reverting:
			p.reverted = true
			p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, revertedMessage(r, q)})
		case r == nil && p.rec.Withdrawn[name] != "":
			p.reverted = true
			p.failures = append(p.failures, Failure{p.n.Name, name, "",
				fmt.Sprintf("rolled back: new version %s failed and was removed; %s is quarantined", p.rec.Withdrawn[name], q)})
		}
		return false, nil // Stalled until the version (or config) changes
	}
	if !p.canStart() || !p.depsComplete(w) || p.serialBusy(name) {
		return false, nil
	}
	if err := p.startFlow(name, r, w); err != nil {
		return false, err
	}
	if p.rec.Packages[name] == nil {
		return false, nil // removed without uninstall
	}
	return true, nil
}

// stepInProgress is step for a stage in progress: observe its Pod (an interrupt: the reboot's
// proof, else completion is handled in interrupts()), revert when it failed and the policy
// says so, and step again when the stage advanced.
func (p *nodePass) stepInProgress(name string, r *PackageRecord) (again bool, err error) {
	if r.Stage == v1alpha1.StageInterrupt {
		if p.rebooted(r) {
			p.rebootDone(r) // whatever its Pod says: the node came back
			return false, nil
		}
		return false, p.observe(name, r) // completion handled in interrupts()
	}
	if r.Stage == v1alpha1.StageUninstallInterrupt && p.rebooted(r) {
		p.rebootDone(r)
		return true, nil // the removal is done (stepComplete)
	}
	advanced, err := p.observeAndAdvance(name, r)
	if err != nil {
		return false, err
	}
	if r.State == v1alpha1.StateErroring {
		if kind := p.revertOf(name, r); kind != revertNone {
			return false, p.revert(name, r, kind)
		}
	}
	return advanced, nil
}

// stepRebootedErroring is step for an erroring stage on a node that rebooted since it began.
// The reboot interrupt's pod was killed by the reboot it started (exit 143, or lost with the
// node) and was seen failed before the node came back: the node's boot ID changed, so the
// interrupt did its work (Skyhook #633: a successful reboot must not leave the node erroring
// and cordoned). Retry → Succeeded.
func (p *nodePass) stepRebootedErroring(r *PackageRecord) error {
	if err := p.transition(r, EventRetry); err != nil {
		return err
	}
	p.rebootDone(r)
	return nil
}

// stepErroring is step for an erroring stage: revert when the policy says so, else retry
// after the backoff (the failure is reported while it waits).
func (p *nodePass) stepErroring(name string, r *PackageRecord) error {
	if kind := p.revertOf(name, r); kind != revertNone {
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
		return p.revert(name, r, kind)
	}
	wait := backoff(r.Restarts) - p.f.Now.Sub(r.Since)
	if wait > 0 || !p.canStart() {
		if wait > 0 {
			p.requeueIn(wait)
		}
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
		return nil
	}
	if err := p.transition(r, EventRetry); err != nil {
		return err
	}
	p.createJob(name, r)
	return nil
}

// stepComplete is step for a completed stage: finish the flow (drop the record when removing),
// leave the interrupt to interrupts(), after an uninstall switch to the version to apply, and
// begin the next stage (again: step once more).
func (p *nodePass) stepComplete(name string, r *PackageRecord, w *Want) (again bool, err error) {
	next, done, err := NextStage(r.Stage, r.Interrupt != nil)
	if err != nil {
		return false, err
	}
	if done {
		r.Done = true
		if r.Removing {
			delete(p.rec.Packages, name)
			return false, nil
		}
		return true, nil
	}
	if next == v1alpha1.StageInterrupt {
		return false, nil // merged across packages in interrupts()
	}
	if r.Stage == v1alpha1.StageUninstall {
		if r.Removing && r.Interrupt != nil {
			p.startUninstallInterrupt(name, r)
			return false, nil
		}
		// Downgrade: the old version is gone; apply the wanted one.
		if r.Removing || w == nil {
			delete(p.rec.Packages, name)
			return false, nil
		}
		if r.Reverting && r.Prev == nil {
			// A failed new package is uninstalled: nothing to return to.
			delete(p.rec.Packages, name)
			p.withdraw(name, r.RevertedFrom)
			return false, nil
		}
		if r.Reverting {
			r.Version, r.Image, r.Config, r.Interrupt, r.Uninstall, r.Spec = r.Prev.Version, r.Prev.Image, r.Prev.Config, r.Prev.Interrupt, r.Prev.Uninstall, r.Prev.Spec
			r.Prev = nil
		} else {
			r.Version, r.Image, r.Config, r.Interrupt, r.Uninstall, r.Spec = w.Version, w.Image, w.Config, w.Interrupt, w.Uninstall, w.Spec
		}
	}
	if !p.canStart() {
		return false, nil
	}
	p.begin(r, next)
	p.createJob(name, r)
	return true, nil
}

func (p *nodePass) requeueIn(d time.Duration) {
	if p.requeue == 0 || d < p.requeue {
		p.requeue = d
	}
}

// serialBusy: the set is serial (spec.serial, Skyhook's serial) and another package of it has
// a flow unfinished on this node (not Done: a stage running, erroring, or skipped while it waits
// for a merged interrupt), so the flow of name may not start this pass.
func (p *nodePass) serialBusy(name string) bool {
	if !p.f.Serial {
		return false
	}
	for other, r := range p.rec.Packages {
		if other != name && r != nil && !r.Done {
			return true
		}
	}
	return false
}

func (p *nodePass) depsComplete(w *Want) bool {
	if w == nil {
		return true
	}
	for _, dep := range w.DependsOn {
		if !settled(p.rec.Packages[dep], p.want(dep)) {
			return false
		}
	}
	return true
}

func (p *nodePass) begin(r *PackageRecord, s Stage) {
	r.Stage, r.State, r.Restarts, r.Message, r.Since = s, "", 0, "", p.f.Now
	_ = p.transition(r, EventStarted)
}

func (p *nodePass) transition(r *PackageRecord, ev Event) error {
	next, err := Apply(r.State, ev)
	if err != nil {
		return err
	}
	if next != r.State {
		r.Since = p.f.Now
	}
	r.State = next
	return nil
}

// startFlow opens a new flow for a package (Skyhook / Skyhook HandleVersionChange): new →
// apply; version up → upgrade; version down → uninstall of the old (uninstall enabled), then
// apply; config change only → config (with the interrupts of the changed keys listed in
// configInterrupts); no longer wanted → uninstall (enabled) or forget. It records what a
// rollback returns to (Prev: the previous version, or the previous config of the same
// version; New for a new package) and clears the package's Withdrawn entry.
func (p *nodePass) startFlow(name string, r *PackageRecord, w *Want) error {
	p.unwithdraw(name)
	p.rec.Flows++
	nr := &PackageRecord{Flow: p.rec.Flows}
	var first Stage
	switch {
	case w == nil:
		if !r.Uninstall {
			delete(p.rec.Packages, name)
			return nil
		}
		*nr = PackageRecord{Flow: p.rec.Flows, Version: r.Version, Image: r.Image, Config: r.Config, Uninstall: true, Removing: true, Spec: r.Spec,
			Interrupt: RemovalInterrupt(r)}
		if nr.Interrupt != nil {
			// NodeWright: cordon and drain before the uninstall of a package with an
			// interrupt (stepRemovalGate), the interrupt after it (uninstall-interrupt).
			nr.Stage = v1alpha1.StageUninstall
			p.rec.Packages[name] = nr
			return nil
		}
		first = v1alpha1.StageUninstall
	case r == nil:
		first = v1alpha1.StageApply
		nr.New = true
	default:
		cmp, err := compareVersions(w.Version, r.Version)
		if err != nil {
			return err
		}
		switch {
		case cmp > 0:
			first = v1alpha1.StageUpgrade
		case cmp < 0 && r.Uninstall:
			*nr = PackageRecord{Flow: p.rec.Flows, Version: r.Version, Image: r.Image, Config: r.Config, Uninstall: true, Interrupt: w.Interrupt, Spec: r.Spec}
			first = v1alpha1.StageUninstall
		case cmp < 0:
			first = v1alpha1.StageApply
		case r.State != v1alpha1.StateComplete:
			// The same version again after its flow was abandoned unfinished: apply it anew
			// (what a rollback returns to is still what the abandoned flow had).
			first = v1alpha1.StageApply
			nr.New, nr.Prev = r.New, r.Prev.clone()
		default:
			first = v1alpha1.StageConfig
			nr.Version, nr.Image, nr.Config, nr.Uninstall, nr.Spec = w.Version, w.Image, w.Config, w.Uninstall, w.Spec
			it, err := configInterrupt(w.Config, r.Config, w.ConfigInterrupts)
			if err != nil {
				return err
			}
			nr.Interrupt = it
			// What a failed config change rolls back to: this version with its config.
			nr.Prev = &Applied{Version: r.Version, Image: r.Image, Config: maps.Clone(r.Config), Interrupt: r.Interrupt, Uninstall: r.Uninstall, Spec: r.Spec}
		}
	}
	if first == v1alpha1.StageConfig && r.Reapply {
		first = v1alpha1.StageApply // the node rebooted into a fresh OS since: apply, then the new config
	}
	if nr.Version == "" {
		nr.Version, nr.Image, nr.Config, nr.Interrupt, nr.Uninstall, nr.Spec = w.Version, w.Image, w.Config, w.Interrupt, w.Uninstall, w.Spec
	}
	if w != nil && r != nil && !r.Removing && r.Version != w.Version {
		nr.Prev = &Applied{Version: r.Version, Image: r.Image, Config: maps.Clone(r.Config), Interrupt: r.Interrupt, Uninstall: r.Uninstall, Spec: r.Spec}
	}
	p.rec.Packages[name] = nr
	p.begin(nr, first)
	p.createJob(name, nr)
	return nil
}

func compareVersions(a, b string) (int, error) {
	va, err := ParseVersion(a)
	if err != nil {
		return 0, err
	}
	vb, err := ParseVersion(b)
	if err != nil {
		return 0, err
	}
	return va.Compare(vb), nil
}

// ParseVersion parses a package version as users write them: a semantic version ("1.2.3",
// "2.0.0-rc.1") or MAJOR.MINOR ("1.2", compared as 1.2.0, with any pre-release or build
// suffix kept). Errors name the version.
func ParseVersion(v string) (semver.Version, error) {
	core, suffix := v, ""
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		core, suffix = v[:i], v[i:]
	}
	if strings.Count(core, ".") == 1 {
		core += ".0"
	}
	sv, err := semver.Parse(core + suffix)
	if err != nil {
		return semver.Version{}, fmt.Errorf("version %q: %w", v, err)
	}
	return sv, nil
}

func (p *nodePass) jobName(name string, r *PackageRecord) string {
	return JobName(p.f.Name, p.n.Name, name, r.Flow, r.Stage, r.Restarts)
}

func (p *nodePass) createJob(name string, r *PackageRecord) {
	jn := p.jobName(name, r)
	if _, exists := p.n.Jobs[jn]; exists {
		return
	}
	for _, j := range p.plan.Jobs {
		if j.Name == jn {
			return
		}
	}
	timeout := DefaultStageTimeout
	if w := p.want(name); w != nil {
		timeout = w.StageTimeout
	}
	js := JobSpec{Name: jn, Node: p.n.Name, Package: name, Version: r.Version, Image: r.Image, Stage: r.Stage, Timeout: timeout, Spec: r.Spec}
	if IsInterruptStage(r.Stage) {
		js.Interrupt = r.Interrupt
	}
	p.plan.Jobs = append(p.plan.Jobs, js)
}

// observe reads the Pod of an in_progress stage: succeeded → complete; failed or image pull
// error → erroring (restarts+1; a stuck pull's Pod is deleted); missing → create it.
func (p *nodePass) observe(name string, r *PackageRecord) error {
	jn := p.jobName(name, r)
	j, ok := p.n.Jobs[jn]
	switch {
	case !ok:
		p.createJob(name, r)
	case j.Succeeded:
		return p.transition(r, EventSucceeded)
	case j.Failed || j.ImagePullError:
		if err := p.transition(r, EventFailed); err != nil {
			return err
		}
		r.Restarts++
		r.Message = strings.TrimSpace(j.Reason + ": " + j.Message)
		if j.mustDelete() {
			p.plan.DeleteJobs = append(p.plan.DeleteJobs, jn)
		}
		p.failures = append(p.failures, Failure{p.n.Name, name, r.Stage, r.Message})
		p.requeueIn(backoff(r.Restarts))
	}
	return nil
}

func (p *nodePass) observeAndAdvance(name string, r *PackageRecord) (bool, error) {
	if err := p.observe(name, r); err != nil {
		return false, err
	}
	return r.State == v1alpha1.StateComplete, nil
}

func (p *nodePass) sortedRecords() []string {
	names := make([]string, 0, len(p.rec.Packages))
	for n := range p.rec.Packages {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// status is the node's Skyhook status: a hold (blocked, disabled, paused, waiting) first, then
// from the package states: any erroring → erroring, any in progress → in_progress, all
// settled → complete, otherwise waiting (queued for the budget).
func (p *nodePass) status() Status {
	if p.hold != "" && (p.hold != v1alpha1.StatusWaiting || p.needsWork()) {
		for _, r := range p.rec.Packages {
			if r.State == v1alpha1.StateInProgress {
				return v1alpha1.StatusInProgress // stages that were running finish
			}
		}
		return p.hold
	}
	erroring, progress := p.drainFailed() || p.nonInterruptFailed, false
	for _, r := range p.rec.Packages {
		switch r.State {
		case v1alpha1.StateErroring:
			erroring = true
		case v1alpha1.StateInProgress, v1alpha1.StateSkipped:
			progress = true
		case "":
			progress = progress || !r.Done // a removal waiting for its cordon and drain
		case v1alpha1.StateComplete:
			if !r.Done {
				progress = true
			}
		}
	}
	switch {
	case erroring:
		return v1alpha1.StatusErroring
	case progress || len(p.plan.Jobs) > 0 || p.plan.Cordon || p.plan.Drain || p.plan.DevicesWait != "":
		return v1alpha1.StatusInProgress
	case p.reverted:
		return v1alpha1.StatusErroring
	case !p.needsWork():
		if p.rec.Rollout == v1alpha1.RolloutSoaking {
			return v1alpha1.StatusInProgress
		}
		return v1alpha1.StatusComplete
	}
	return v1alpha1.StatusWaiting
}
