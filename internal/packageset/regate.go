package packageset

// Rule: re-gating a node that booted into a fresh OS (NodeWright's reapplyOnReboot, NVIDIA/nodewright
// #180): when the node's boot ID changes outside this set's reboot interrupts, its packages with
// reapplyOnReboot run their apply and config stages again, without their interrupt.

import (
	"maps"
	"slices"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// gantryReboot: a reboot interrupt of this set started on the node and its boot ID change has
// not been accounted to it yet (a package record keeps the boot ID it started from: the
// interrupt runs, or its Pod completed before the node reported its new boot ID). A boot ID
// change seen meanwhile is that reboot's.
func (p *nodePass) gantryReboot() bool {
	for _, r := range p.rec.Packages {
		if r.BootID != "" {
			return true
		}
	}
	return false
}

// creditReboots accounts the node's new boot ID to the reboot interrupts whose Pod completed
// before the node reported it (the flow went on to post-interrupt with the boot ID it started
// from still recorded): the change is theirs, not a reboot outside Gantry. A reboot interrupt
// still in its stage is accounted by step (rebooted, rebootDone).
func (p *nodePass) creditReboots() {
	if p.n.BootID == "" {
		return
	}
	for _, r := range p.rec.Packages {
		if r.BootID != "" && r.BootID != p.n.BootID && !IsInterruptStage(r.Stage) {
			r.BootID = ""
		}
	}
}

// noteBoot is the start of a pass's boot accounting (newNodePass): a reboot outside this set's
// reboot interrupts starts a re-gate (regate), then the reboots of this set whose Pods completed
// first are accounted (creditReboots). The node's first pass with a boot ID only records it
// (noteBootAfter).
func (p *nodePass) noteBoot() {
	now, last := p.n.BootID, p.rec.BootID
	if now != "" && last != "" && now != last && !p.gantryReboot() {
		p.regate(last, now)
	}
	p.creditReboots()
}

// regate starts (or extends) the node's re-gate after its boot ID changed from last to now
// outside this set's reboot interrupts: every wanted package with reapplyOnReboot whose flow
// is settled on the node is marked to run again (PackageRecord.Reapply: stepIdle starts its
// re-apply flow when the node may start stages), and the record's Regate names them with
// the packages of an earlier re-gate not done yet. Packages without the flag, and flows not
// done at the reboot (they carry on), are left as they are. Nothing is marked when no such
// package is settled there.
func (p *nodePass) regate(last, now string) {
	var names []string
	for i := range p.wants {
		w := &p.wants[i]
		if r := p.rec.Packages[w.Name]; w.ReapplyOnReboot && settled(r, w) {
			r.Reapply = true
			names = append(names, w.Name)
		}
	}
	if len(names) == 0 {
		return
	}
	if old := p.rec.Regate; old != nil {
		names = append(names, p.regatePending(old.Packages)...)
	}
	slices.Sort(names)
	p.rec.Regate = &Regate{From: last, To: now, Since: p.f.Now, Packages: slices.Compact(names)}
	p.regated = true
}

// regatePending are the packages of names still to run again: marked Reapply, or a flow of
// theirs not done (the re-apply, or a flow the spec started since); a removal does not count.
func (p *nodePass) regatePending(names []string) []string {
	var out []string
	for _, name := range names {
		if r := p.rec.Packages[name]; r != nil && (r.Reapply || !r.Done && !r.Removing) {
			out = append(out, name)
		}
	}
	return out
}

// noteBootAfter is the end of a pass's boot accounting (run): the record keeps the node's boot
// ID unless a reboot interrupt of this set is still to be accounted (gantryReboot: the boot ID
// it will change to is its own), and the re-gate goes once its packages have run again.
func (p *nodePass) noteBootAfter() {
	if p.n.BootID != "" && !p.gantryReboot() {
		p.rec.BootID = p.n.BootID
	}
	if g := p.rec.Regate; g != nil && len(p.regatePending(g.Packages)) == 0 {
		p.rec.Regate = nil
	}
}

// reapplyDue: r is w's finished flow, at w's version and config, marked to run again (Reapply).
func reapplyDue(r *PackageRecord, w *Want) bool {
	return w != nil && r != nil && r.Reapply && r.Done && r.State == v1alpha1.StateComplete && !r.Removing &&
		r.Version == w.Version && maps.Equal(r.Config, w.Config)
}

// startReapply opens the re-apply flow of a package marked Reapply: apply then config (each Pod
// with its check) of the version and config it has, with the current spec of that version, and
// no interrupt (a driver re-installed after a reboot outside Gantry must not reboot the node
// again). Nothing to roll back to (Prev nil, not New): a failing re-apply is retried with
// backoff whatever the health failure policy (revertOf), and its version is not quarantined.
// A quarantined version the node runs is applied again too: it is what the node has.
func (p *nodePass) startReapply(name string, w *Want) {
	p.rec.Flows++
	nr := &PackageRecord{Flow: p.rec.Flows, Version: w.Version, Image: w.Image, Config: w.Config, Uninstall: w.Uninstall, Spec: w.Spec}
	p.rec.Packages[name] = nr
	p.begin(nr, v1alpha1.StageApply)
	p.createJob(name, nr)
}

// regateLines are "<node> rebooted outside Gantry (boot ID a → b): re-applying <packages>" for
// the nodes whose re-gate is under way after the pass, by node name.
func regateLines(nodes []NodePlan) []string {
	var out []string
	for _, np := range nodes {
		if np.Record != nil && np.Record.Regate != nil {
			out = append(out, np.Name+" "+np.Record.Regate.Message())
		}
	}
	slices.Sort(out)
	return out
}

// regateMessage is what a set's Ready message adds while nodes re-gate ("" when none).
func regateMessage(nodes []NodePlan) string {
	lines := regateLines(nodes)
	if len(lines) == 0 {
		return ""
	}
	return "; re-gating: " + listMessage(lines)
}
