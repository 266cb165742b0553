package provider

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/performer"
)

// Adopting Hourglass Performers (hourglass.eigenlayer.io/v1alpha1) as gantry_performer, the two
// halves adopt.go describes (identity {namespace, name}). Nothing hands Hourglass's Pod and
// Service over: they carry Gantry's own names (performer-<name>) and the reconciler takes over
// nothing it does not control (OwnershipConflict), so the warning and the migration guide say
// to stop Hourglass's operator and delete them first. The endpoint stays the same, so executors
// reach the Gantry performer unchanged.

// listFromHourglass is the gantry_performer list block's `from` for Hourglass Performers.
const listFromHourglass = "hourglass"

// hourglassAdopter is gantry_performer's adopter: Hourglass Performers.
var hourglassAdopter = &adopter[performerModelV0]{
	from: listFromHourglass,
	fromDescription: "What to list: `\"gantry\"` (the default) lists Gantry Performers, `\"hourglass\"` lists the cluster's Hourglass Performers as the performers that replace them.\n\n" +
		"With `\"hourglass\"`, each Hourglass Performer (`hourglass.eigenlayer.io/v1alpha1`, filtered by `namespace` and `label_selector`) is returned as a `gantry_performer` of the " +
		"same namespace and name, translated as the migration guide's table says; each Hourglass field that does not carry over, or that Hourglass's operator ignored and Gantry " +
		"applies (`priorityClassName`, `customLabels`, the TEE), is a warning naming it. `terraform query -generate-config-out` writes the resource and an `import` block; the plan of " +
		"that import is an update that creates the Performer. A cluster without Hourglass's CRD lists none, with a warning.",
	gvr:      adopt.HourglassPerformerGVR,
	what:     "Hourglass Performer",
	operator: "Hourglass",
	noCRD: fmt.Sprintf("The cluster has no %s.%s resource at %s (Hourglass's Performer CRD is not installed): there is no Hourglass Performer to adopt.",
		adopt.HourglassPerformerGVR.Resource, adopt.HourglassPerformerGVR.Group, adopt.HourglassPerformerGVR.Version),
	translate: func(hp *unstructured.Unstructured, _ map[string]string) (*unstructured.Unstructured, []string, error) {
		return hourglassAsPerformer(hp)
	},
	importWarning: hourglassImportWarning,
	adopted:       adoptedPerformerNaming,
}

// adoptedPerformerNaming gives an adopted performer's state the service_name and
// grpc_endpoint of the naming contract (internal/performer.ObjectName, Endpoint), which the
// reconciler's status will report: the translation has no status, and a plan keeps a
// computed value the state holds (planNaming fills only unknown ones, which the plan fast
// path relies on), so null ones would be planned null and the apply's values would be
// inconsistent with the plan.
func adoptedPerformerNaming(m *performerModelV0) {
	p := &v1alpha1.Performer{ObjectMeta: metav1.ObjectMeta{Name: m.Name.ValueString(), Namespace: m.Namespace.ValueString()}}
	p.Spec.GRPCPort = int32(m.GRPCPort.ValueInt64())
	m.ServiceName = types.StringValue(performer.ObjectName(p.Name))
	m.GRPCEndpoint = types.StringValue(performer.Endpoint(p))
}

// hourglassImportWarning is the warning of an import that adopts the Hourglass Performer id
// (namespace/name): what the apply creates, what collides with it, and how executors find it.
func hourglassImportWarning(id string) string {
	ns, name, _ := strings.Cut(id, "/")
	return fmt.Sprintf("No Gantry Performer %s exists yet: this import adopts the Hourglass Performer %s. The apply creates the Gantry Performer and waits until it is Running. "+
		"Its Pod and Service are both named performer-%s, the names Hourglass's operator gives its own, and Gantry does not take over objects it does not control: "+
		"stop Hourglass's operator and delete Hourglass's Pod and Service (kubectl -n %s delete pod,service performer-%s) before the apply, or the performer fails with "+
		"OwnershipConflict until they are gone. Executors find the performer at the same address, performer-%s.%s.svc.cluster.local on grpc_port; "+
		"delete the Hourglass Performer afterwards (see the migration guide).", id, id, name, ns, name, name, ns)
}

// hourglassAsPerformer is adopt.FromHourglass as the unstructured Performer flatten reads,
// with the translation's warnings.
func hourglassAsPerformer(hp *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	return translated(adopt.FromHourglass(hp))
}
