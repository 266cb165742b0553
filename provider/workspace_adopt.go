package provider

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
)

// Adopting KAITO Workspaces (kaito.sh/v1beta1) as gantry_workspace, the two halves adopt.go
// describes (identity {namespace, name}). Nothing hands KAITO's pods over: the migration guide
// says to stop KAITO's controller and remove its workload first.

// listFromKAITO is the gantry_workspace list block's `from` for KAITO Workspaces.
const listFromKAITO = "kaito"

// kaitoAdopter is gantry_workspace's adopter: KAITO Workspaces.
var kaitoAdopter = &adopter[workspaceModelV0]{
	from: listFromKAITO,
	fromDescription: "What to list: `\"gantry\"` (the default) lists Gantry Workspaces, `\"kaito\"` lists the cluster's KAITO Workspaces as the workspaces that replace them.\n\n" +
		"With `\"kaito\"`, each KAITO Workspace (`kaito.sh/v1beta1`, filtered by `namespace` and `label_selector`) is returned as a `gantry_workspace` of the same namespace and name, " +
		"translated as the migration guide's table says; each KAITO field that does not carry over is a warning naming it. `terraform query -generate-config-out` writes the resource " +
		"and an `import` block; the plan of that import is an update that creates the Workspace. A cluster without KAITO's CRD lists none, with a warning.",
	gvr:      adopt.KAITOWorkspaceGVR,
	what:     "KAITO Workspace",
	operator: "KAITO",
	noCRD: fmt.Sprintf("The cluster has no %s.%s resource at %s (KAITO's Workspace CRD is not installed): there is no KAITO Workspace to adopt.",
		adopt.KAITOWorkspaceGVR.Resource, adopt.KAITOWorkspaceGVR.Group, adopt.KAITOWorkspaceGVR.Version),
	translate: func(kw *unstructured.Unstructured, _ map[string]string) (*unstructured.Unstructured, []string, error) {
		return kaitoAsWorkspace(kw)
	},
	importWarning: func(id string) string {
		return fmt.Sprintf("No Gantry Workspace %s exists yet: this import adopts the KAITO Workspace %s. The apply creates the Gantry Workspace and waits until it is ready; "+
			"its pods are new ones, beside KAITO's. Stop KAITO's controller and remove KAITO's workload first, so that both do not hold the same GPUs (see the migration guide).", id, id)
	},
}

// kaitoAsWorkspace is adopt.FromKAITO as the unstructured Workspace flatten reads, with the
// translation's warnings.
func kaitoAsWorkspace(kw *unstructured.Unstructured) (*unstructured.Unstructured, []string, error) {
	return translated(adopt.FromKAITO(kw))
}
