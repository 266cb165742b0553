package provider

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Import keeps every label: a Performer created outside Terraform with
// app.kubernetes.io/name and team.gantry.dev/x labels (and kubectl's last-applied annotation, a
// system key) is imported with both labels; the configuration that has them plans no change;
// an out-of-band change to team.gantry.dev/x shows as drift and apply puts it back.
func TestAccPerformer_importKeepsLabels(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-import")
	addr := "gantry_performer.imported"
	ri := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns)
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Performer",
		"metadata": map[string]interface{}{"name": "imported", "namespace": ns,
			"labels":      map[string]interface{}{"app.kubernetes.io/name": "hello", "team.gantry.dev/x": "one"},
			"annotations": map[string]interface{}{"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
		"spec": map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v1.0.0"},
	}}
	if _, err := ri.Create(context.Background(), obj, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}
	config := performerConfig(ns, "imported", `
  labels = { "app.kubernetes.io/name" = "hello", "team.gantry.dev/x" = "one" }
`)
	labels := knownvalue.MapExact(map[string]knownvalue.Check{
		"app.kubernetes.io/name": knownvalue.StringExact("hello"), "team.gantry.dev/x": knownvalue.StringExact("one")})
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config:             config,
				ResourceName:       addr,
				ImportState:        true,
				ImportStateId:      ns + "/imported",
				ImportStatePersist: true,
				ImportStateCheck: func(states []*terraform.InstanceState) error {
					if len(states) != 1 {
						return fmt.Errorf("imported %d instances", len(states))
					}
					a := states[0].Attributes
					if a["labels.app.kubernetes.io/name"] != "hello" || a["labels.team.gantry.dev/x"] != "one" || a["labels.%"] != "2" {
						return fmt.Errorf("imported labels: %v", a)
					}
					if _, ok := a["annotations.kubectl.kubernetes.io/last-applied-configuration"]; ok {
						return fmt.Errorf("a system annotation was imported: %v", a)
					}
					return nil
				},
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("labels"), labels)},
			},
			{
				PreConfig: func() {
					patch := `{"metadata":{"labels":{"team.gantry.dev/x":"two"}}}`
					if _, err := ri.Patch(context.Background(), "imported", k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "drift-test"}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             config,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: config,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{statecheck.ExpectKnownValue(addr, tfjsonpath.New("labels"), labels)},
			},
		},
	})
}
