package packageset

// Rule: reboot completion: a node rebooted once its boot ID changed since the interrupt started.

import (
	"fmt"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// rebooted: r is the running (or failed) reboot interrupt and the node has booted since it
// started (its boot ID differs from the one recorded then). A node that reports no boot ID
// cannot be told to have rebooted: its interrupt counts only by its Pod's outcome.
func (p *nodePass) rebooted(r *PackageRecord) bool {
	return IsInterruptStage(r.Stage) && r.Interrupt != nil && r.Interrupt.Type == v1alpha1.InterruptReboot &&
		r.BootID != "" && p.n.BootID != "" && p.n.BootID != r.BootID
}

// rebootDone completes a reboot interrupt the node's new boot ID proves done (Skyhook
// Succeeded from in_progress); the message says so until post-interrupt starts.
func (p *nodePass) rebootDone(r *PackageRecord) {
	_ = p.transition(r, EventSucceeded) // in_progress → complete is always legal
	r.Message = fmt.Sprintf("node rebooted (boot ID %s → %s)", r.BootID, p.n.BootID)
	r.BootID = ""
}
