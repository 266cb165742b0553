package provider

import (
	"fmt"

	listschema "github.com/hashicorp/terraform-plugin-framework/list/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Adopting Skyhooks (skyhook.nvidia.com/v1alpha1, cluster-scoped) as gantry_package_set, the two
// halves adopt.go describes: the list block's skyhook_agent_image is the translated packages'
// agent image, and the import leaves status and complete_nodes null so the plan creates the
// PackageSet. The reconciler hands the nodes over (packageset.AdoptSkyhook), driven by the
// annotation v1alpha1.AnnotationAdoptFromSkyhook the translation sets.

// listFromSkyhook is the gantry_package_set list block's `from` for Skyhooks.
const listFromSkyhook = "skyhook"

// skyhookAgentImageAttr is the gantry_package_set list block's agent image of the translation.
const skyhookAgentImageAttr = "skyhook_agent_image"

// skyhookAdopter is gantry_package_set's adopter: Skyhooks.
var skyhookAdopter = &adopter[packageSetModel]{
	from: listFromSkyhook,
	fromDescription: "What to list: `\"gantry\"` (the default) lists PackageSets, `\"skyhook\"` lists the cluster's Skyhook (NVIDIA Skyhook / NodeWright) objects as the package sets that replace them.\n\n" +
		"With `\"skyhook\"`, each Skyhook (`skyhook.nvidia.com/v1alpha1`, filtered by `label_selector`) is returned as a `gantry_package_set` of the same name, translated as the " +
		"migration guide's table says, with `adopt_from_skyhook` set so that nodes Skyhook completed do not run their packages again; each Skyhook field that does not carry over is a " +
		"warning naming it. `terraform query -generate-config-out` writes the resource and an `import` block; the plan of that import is an update that creates the PackageSet. " +
		"A cluster without Skyhook's CRD lists none, with a warning.",
	listAttrs: map[string]listschema.StringAttribute{
		skyhookAgentImageAttr: {
			Optional: true,
			MarkdownDescription: fmt.Sprintf("Skyhook agent image the translated packages run with (`skyhook { agent_image }`) when a package sets no `agentImageOverride`, e.g. the `AGENT_IMAGE` of your Skyhook operator.\n\n"+
				"Default `%s` (the NodeWright chart's default). Only with `from = \"skyhook\"`.", adopt.DefaultSkyhookAgentImage),
		},
	},
	gvr:      adopt.SkyhookGVR,
	what:     "Skyhook",
	operator: "Skyhook",
	noCRD: fmt.Sprintf("The cluster has no %s.%s resource (Skyhook's CRD is not installed): there is no Skyhook to adopt.",
		adopt.SkyhookGVR.Resource, adopt.SkyhookGVR.Group),
	translate: func(sky *unstructured.Unstructured, opts map[string]string) (*unstructured.Unstructured, []string, error) {
		return skyhookAsPackageSet(sky, opts[skyhookAgentImageAttr])
	},
	adopted: func(m *packageSetModel) { m.Status, m.CompleteNodes = types.StringNull(), types.StringNull() },
	importWarning: func(name string) string {
		return fmt.Sprintf("No PackageSet %s exists yet: this import adopts the Skyhook %s. The apply creates the PackageSet (annotated %s=%s) and waits until it is complete; "+
			"on each node, the packages Skyhook completed at the same version are recorded complete without running again. Stop Skyhook's operator first (see the migration guide).",
			name, name, v1alpha1.AnnotationAdoptFromSkyhook, name)
	},
}

// skyhookAsPackageSet is adopt.FromSkyhook (agentImage "": its default) as the unstructured
// PackageSet flatten reads, with the translation's warnings.
func skyhookAsPackageSet(sky *unstructured.Unstructured, agentImage string) (*unstructured.Unstructured, []string, error) {
	return translated(adopt.FromSkyhook(sky, agentImage))
}
