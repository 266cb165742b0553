package packageset

// Rule: the interrupt after an uninstall (NodeWright's StageUninstallInterrupt): a package
// with an interrupt that is uninstalled (uninstall.apply, removed from the set, or the set
// deleted with uninstallOnDelete) has its node cordoned and drained within the budget before
// the uninstall stage, runs its interrupt after it, and only then leaves the node's record.

import (
	"encoding/json"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// RemovalInterrupt is the interrupt a removal of the package recorded in r runs after its
// uninstall stage: the package's own interrupt in the spec of the installed version (r.Spec,
// NodeWright's package interrupt; configInterrupts do not apply to an uninstall), or the
// record's interrupt for records written before specs were kept; nil for none.
func RemovalInterrupt(r *PackageRecord) *v1alpha1.Interrupt {
	if len(r.Spec) == 0 {
		if r.Interrupt != nil && r.Prev == nil {
			it := *r.Interrupt
			return &it
		}
		return nil
	}
	var pkg v1alpha1.Package
	if err := json.Unmarshal(r.Spec, &pkg); err != nil || pkg.Interrupt == nil {
		return nil
	}
	it := *pkg.Interrupt
	return &it
}

// removalGated: r is a removal with an interrupt whose uninstall stage has not begun (it
// waits for the node's cordon and drain).
func removalGated(r *PackageRecord) bool {
	return r.Removing && r.Interrupt != nil && r.Stage == v1alpha1.StageUninstall && r.State == ""
}

// stepRemovalGate begins the uninstall stage of a removal with an interrupt once the node may
// be interrupted (readyToInterrupt: budget granted, no other stage of the set running,
// cordoned within the cordon slots, non-interrupt pods gone, drained), as NodeWright drains
// before the uninstall of a package with an interrupt. again: the stage began.
func (p *nodePass) stepRemovalGate(name string, r *PackageRecord) bool {
	if !p.readyToInterrupt() {
		return false
	}
	p.begin(r, v1alpha1.StageUninstall)
	p.createJob(name, r)
	return true
}

// startUninstallInterrupt runs the removal's interrupt once its uninstall stage completed
// (NodeWright: uncancellable from here on, even if the package is wanted again; the node
// stays cordoned until it is done, then the record goes).
func (p *nodePass) startUninstallInterrupt(name string, r *PackageRecord) {
	p.begin(r, v1alpha1.StageUninstallInterrupt)
	if r.Interrupt.Type == v1alpha1.InterruptReboot {
		r.BootID = p.n.BootID
	}
	p.createJob(name, r)
}
