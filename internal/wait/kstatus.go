package wait

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// KStatus computes the kstatus (sigs.k8s.io/cli-utils/pkg/kstatus) status of obj: the view
// of `kubectl wait`, Flux, Argo CD and Helm 4 on the same object. Gantry kinds are meant to be
// kstatus-compatible: when Evaluate says Succeeded, KStatus should say Current; when Stalled=True,
// Failed. Tests use it to check that the reconciler's status and this wait engine agree.
func KStatus(obj *unstructured.Unstructured) (status.Status, string, error) {
	res, err := status.Compute(obj)
	if err != nil {
		return status.UnknownStatus, "", err
	}
	return res.Status, res.Message, nil
}

// Agreement computes both verdicts on obj, Evaluate's under spec and kstatus', and reports
// whether they agree: Succeeded ↔ Current; Failed ↔ Failed (or Terminating for an object
// being deleted); InProgress ↔ InProgress; ReturnedAtOnce (held by the user: a paused
// PackageSet) ↔ InProgress from Ready=False alone, neither Reconciling nor Stalled True
// (kstatus has no "held" status; `kubectl wait --for=condition=Ready` keeps waiting, the
// provider returns). An error is kstatus' own (a malformed object).
func Agreement(spec Spec, obj *unstructured.Unstructured) (v Verdict, ks status.Status, ok bool, err error) {
	v = Evaluate(spec, obj)
	ks, _, err = KStatus(obj)
	if err != nil {
		return v, ks, false, err
	}
	switch v.State {
	case Succeeded:
		ok = ks == status.CurrentStatus
	case ReturnedAtOnce:
		rc, st := FindCondition(v.Conditions, "Reconciling"), FindCondition(v.Conditions, "Stalled")
		ok = ks == status.InProgressStatus && (rc == nil || rc.Status != metav1.ConditionTrue) && (st == nil || st.Status != metav1.ConditionTrue)
	case Failed:
		ok = ks == status.FailedStatus || (obj.GetDeletionTimestamp() != nil && ks == status.TerminatingStatus)
	case InProgress:
		ok = ks == status.InProgressStatus
	}
	return v, ks, ok, nil
}
