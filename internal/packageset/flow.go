// Package packageset is Skyhook's package lifecycle and NixFleet's per-node rollout as pure
// machines: facts about a PackageSet, its nodes and stage Jobs (run as bare Pods: DesiredPod) go
// in; per-node records (the Nodes' gantry.dev/state_<set> annotations), Jobs to create,
// cordon/drain steps, status and conditions come out. Stages follow Skyhook (uninstall → apply →
// config, or upgrade → config, then interrupt → post-interrupt when the package has one), each
// but interrupt with its check; a package is complete at config or post-interrupt, and stages
// advance only from complete (NextStage). States are Skyhook's; erroring includes a stage past
// its timeout, so nothing stays in_progress forever (unlike Skyhook issue #306).
package packageset

import (
	"fmt"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/lifecycle"
)

// Stage, State and Status are the API's spellings (Skyhook).
type (
	Stage  = v1alpha1.PackageStage
	State  = v1alpha1.PackageState
	Status = v1alpha1.PackageSetStatusValue
)

// NextStage is the stage after s once s is complete (Skyhook NodeState.NextStage): done is true
// when s is the package's last stage (config without interrupt, post-interrupt with one).
// Errors: a stage that is not one of Skyhook's, or post-interrupt/interrupt without an
// interrupt in the flow.
func NextStage(s Stage, interrupt bool) (next Stage, done bool, err error) {
	switch s {
	case v1alpha1.StageUninstall:
		return v1alpha1.StageApply, false, nil
	case v1alpha1.StageApply, v1alpha1.StageUpgrade:
		return v1alpha1.StageConfig, false, nil
	case v1alpha1.StageConfig:
		if interrupt {
			return v1alpha1.StageInterrupt, false, nil
		}
		return "", true, nil
	case v1alpha1.StageInterrupt:
		if !interrupt {
			return "", false, &lifecycle.TransitionError{Kind: "stage", From: string(s), Why: "interrupt stage in a flow without interrupt"}
		}
		return v1alpha1.StagePostInterrupt, false, nil
	case v1alpha1.StageUninstallInterrupt:
		return "", true, nil // the last stage of a removal (NodeWright)
	case v1alpha1.StagePostInterrupt:
		if !interrupt {
			return "", false, &lifecycle.TransitionError{Kind: "stage", From: string(s), Why: "post-interrupt stage in a flow without interrupt"}
		}
		return "", true, nil
	}
	return "", false, &lifecycle.TransitionError{Kind: "stage", From: string(s), Why: "not a Skyhook stage"}
}

// CheckOf is the check that follows stage s ("apply" → "apply-check"); "" for the interrupt
// stages, the ones without a check.
func CheckOf(s Stage) string {
	if IsInterruptStage(s) {
		return ""
	}
	return string(s) + "-check"
}

// IsInterruptStage: s runs an interrupt (no stage script, no check): interrupt, or
// uninstall-interrupt after an uninstall (NodeWright).
func IsInterruptStage(s Stage) bool {
	return s == v1alpha1.StageInterrupt || s == v1alpha1.StageUninstallInterrupt
}

// Event is what happened to a package's current stage.
type Event string

const (
	// EventStarted: the stage's Pod was created (or found running).
	EventStarted Event = "Started"
	// EventSucceeded: the Pod (stage and check) succeeded.
	EventSucceeded Event = "Succeeded"
	// EventFailed: the Pod failed, its image cannot be pulled or it ran past the stage timeout.
	EventFailed Event = "Failed"
	// EventRetry: the backoff after a failure elapsed; the stage runs again.
	EventRetry Event = "Retry"
	// EventSkipped: the stage's interrupt was merged into another package's.
	EventSkipped Event = "Skipped"
	// EventPromoted: the merged interrupt completed; a skipped interrupt counts as complete
	// (Skyhook ProgressSkipped).
	EventPromoted Event = "Promoted"
)

// stateTable is Skyhook's State machine for one stage: (state, event) → state. "" is the
// state of a stage that has not begun.
var stateTable = map[State]map[Event]State{
	"":                       {EventStarted: v1alpha1.StateInProgress, EventSkipped: v1alpha1.StateSkipped},
	v1alpha1.StateUnknown:    {EventStarted: v1alpha1.StateInProgress},
	v1alpha1.StateInProgress: {EventStarted: v1alpha1.StateInProgress, EventSucceeded: v1alpha1.StateComplete, EventFailed: v1alpha1.StateErroring},
	v1alpha1.StateErroring:   {EventRetry: v1alpha1.StateInProgress, EventFailed: v1alpha1.StateErroring},
	v1alpha1.StateSkipped:    {EventPromoted: v1alpha1.StateComplete},
	v1alpha1.StateComplete:   {},
}

// Apply returns the state after ev. Errors: a *lifecycle.TransitionError for a pair Skyhook
// does not draw (e.g. Succeeded before Started, anything after complete).
func Apply(s State, ev Event) (State, error) {
	row, ok := stateTable[s]
	if !ok {
		return s, &lifecycle.TransitionError{Kind: "state", From: string(s), To: string(ev), Why: "not a Skyhook state"}
	}
	next, ok := row[ev]
	if !ok {
		return s, &lifecycle.TransitionError{Kind: "state", From: string(s), To: string(ev), Why: "event not allowed in this state"}
	}
	return next, nil
}

// interruptRank orders interrupt types for merging (Skyhook fudgeInterruptWithPriority):
// reboot (0) > restartAllServices (1) > service (2) > noop (3).
var interruptRank = map[v1alpha1.InterruptType]int{
	v1alpha1.InterruptReboot: 0, v1alpha1.InterruptRestartAllServices: 1, v1alpha1.InterruptService: 2, v1alpha1.InterruptNoop: 3,
}

// MergeInterrupts merges the interrupts several packages need on one node into the one to run:
// the highest-ranked type; equal service interrupts merge their services (sorted, unique).
// winner is the index of the package whose interrupt Pod runs (the first of the highest rank);
// the others are skipped. Errors on an empty list or an unknown type.
func MergeInterrupts(in []v1alpha1.Interrupt) (merged v1alpha1.Interrupt, winner int, err error) {
	if len(in) == 0 {
		return merged, -1, fmt.Errorf("no interrupts to merge")
	}
	winner = -1
	for i, it := range in {
		r, ok := interruptRank[it.Type]
		if !ok {
			return merged, -1, fmt.Errorf("unknown interrupt type %q", it.Type)
		}
		if winner < 0 || r < interruptRank[in[winner].Type] {
			winner = i
		}
	}
	merged = v1alpha1.Interrupt{Type: in[winner].Type}
	if merged.Type == v1alpha1.InterruptService {
		seen := map[string]bool{}
		for _, it := range in {
			if it.Type != v1alpha1.InterruptService {
				continue
			}
			for _, s := range it.Services {
				if !seen[s] {
					seen[s] = true
					merged.Services = append(merged.Services, s)
				}
			}
		}
		sortStrings(merged.Services)
	}
	return merged, winner, nil
}
