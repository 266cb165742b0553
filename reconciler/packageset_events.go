package reconciler

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Events of what a pass decided that only that pass sees (the next pass reads the records it
// wrote and finds nothing new): drain timeouts, re-gates after outside reboots, Skyhook
// adoptions. Events that follow a status change are statusWritten's (packageset_status.go).

// drainTimeoutEvents emits one Warning event DrainTimeout per node whose drain reached
// spec.drain.timeout in this pass (its records are written: only that pass reports it),
// naming the pods left, why, and what onTimeout did.
func (r *PackageSetReconciler) drainTimeoutEvents(set *v1alpha1.PackageSet, timeouts map[string]string) {
	for _, node := range slices.Sorted(maps.Keys(timeouts)) {
		r.Recorder.Event(set, corev1.EventTypeWarning, "DrainTimeout", "node "+node+": "+timeouts[node])
	}
}

// regateEvents emits one Normal event RebootedOutsideGantry per node this pass found rebooted
// outside the set's reboot interrupts (its record, with the re-gate, is written: only that pass
// reports it), naming the boot IDs and the packages with reapplyOnReboot that run again.
func (r *PackageSetReconciler) regateEvents(set *v1alpha1.PackageSet, regated map[string]string) {
	for _, node := range slices.Sorted(maps.Keys(regated)) {
		r.Recorder.Event(set, corev1.EventTypeNormal, "RebootedOutsideGantry", regated[node]+" (reapplyOnReboot)")
	}
}

// adoptEvents emits, per node whose packages this pass recorded complete from its Skyhook state
// (gantry.dev/adopt-from-skyhook), one Normal event AdoptedFromSkyhook naming them, and per node
// where packages Skyhook had are run again (another version or image, not complete, an
// unreadable state) one Warning event NotAdoptedFromSkyhook saying why.
func (r *PackageSetReconciler) adoptEvents(set *v1alpha1.PackageSet, adopted, skipped map[string]string) {
	for _, node := range slices.Sorted(maps.Keys(adopted)) {
		r.Recorder.Event(set, corev1.EventTypeNormal, "AdoptedFromSkyhook", adopted[node])
	}
	for _, node := range slices.Sorted(maps.Keys(skipped)) {
		r.Recorder.Event(set, corev1.EventTypeWarning, "NotAdoptedFromSkyhook", skipped[node])
	}
}
