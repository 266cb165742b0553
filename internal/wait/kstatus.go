package wait

import (
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
