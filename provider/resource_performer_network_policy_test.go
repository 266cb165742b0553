package provider

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// network_policy maps to spec.networkPolicy exactly: the flag, and each peer's label maps as
// matchLabels, {} as an empty selector (everything), null as no selector.
func TestPerformerNetworkPolicyExpand(t *testing.T) {
	m := minimalModel()
	m.NetworkPolicy = &networkPolicyModel{Enabled: types.BoolValue(true), AllowFrom: []networkPeerModel{
		{NamespaceSelector: map[string]string{}},
		{PodSelector: map[string]string{"app": "prometheus"}, NamespaceSelector: map[string]string{"team": "obs"}},
	}}
	obj := apiRoundTrip(t, m)
	got, _, _ := unstructured.NestedMap(obj.Object, "spec", "networkPolicy")
	want := map[string]interface{}{"enabled": true, "allowFrom": []interface{}{
		map[string]interface{}{"namespaceSelector": map[string]interface{}{}},
		map[string]interface{}{"podSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"app": "prometheus"}},
			"namespaceSelector": map[string]interface{}{"matchLabels": map[string]interface{}{"team": "obs"}}},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spec.networkPolicy = %#v\nwant %#v", got, want)
	}
	m.NetworkPolicy = &networkPolicyModel{Enabled: types.BoolValue(false)}
	if got, _, _ := unstructured.NestedMap(apiRoundTrip(t, m).Object, "spec", "networkPolicy"); !reflect.DeepEqual(got, map[string]interface{}{"enabled": false}) {
		t.Errorf("disabled: spec.networkPolicy = %#v, want enabled: false kept", got)
	}
	m.NetworkPolicy = nil
	if _, found, _ := unstructured.NestedMap(apiRoundTrip(t, m).Object, "spec", "networkPolicy"); found {
		t.Error("null network_policy wrote spec.networkPolicy")
	}
}

// A policy changed outside Terraform shows as drift.
func TestPerformerNetworkPolicyDrift(t *testing.T) {
	m := minimalModel()
	m.NetworkPolicy = &networkPolicyModel{Enabled: types.BoolValue(true)}
	obj := apiRoundTrip(t, m)
	if err := unstructured.SetNestedField(obj.Object, false, "spec", "networkPolicy", "enabled"); err != nil {
		t.Fatal(err)
	}
	got, err := flattenPerformer(obj, &m)
	if err != nil {
		t.Fatal(err)
	}
	if got.NetworkPolicy == nil || got.NetworkPolicy.Enabled.ValueBool() {
		t.Errorf("network_policy = %+v, want enabled = false read back", got.NetworkPolicy)
	}
}

// networkPolicyOf reads the NetworkPolicy performer-<name>; nil when it does not exist.
func networkPolicyOf(c *kube.Clients, ns, name string) (*networkingv1.NetworkPolicy, error) {
	np, err := c.Core.NetworkingV1().NetworkPolicies(ns).Get(context.Background(), "performer-"+name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return np, err
}

// checkNetworkPolicy checks that the performer's NetworkPolicy is owned by the Performer and
// admits exactly the executors execs (by their gantry.dev/executor pod label, in order) and
// extra other peers, on TCP port.
func checkNetworkPolicy(c *kube.Clients, ns, name string, port int, execs []string, extra int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		np, err := networkPolicyOf(c, ns, name)
		if err != nil || np == nil {
			return fmt.Errorf("NetworkPolicy performer-%s: %v (exists: %v)", name, err, np != nil)
		}
		if ref := metav1.GetControllerOf(np); ref == nil || ref.Kind != "Performer" || ref.Name != name {
			return fmt.Errorf("NetworkPolicy controller = %+v, want Performer %s", ref, name)
		}
		if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].Ports) != 1 || np.Spec.Ingress[0].Ports[0].Port.IntValue() != port {
			return fmt.Errorf("ingress = %+v, want one rule on port %d", np.Spec.Ingress, port)
		}
		var gotExecs []string
		gotExtra := 0
		for _, p := range np.Spec.Ingress[0].From {
			if p.PodSelector != nil && p.NamespaceSelector == nil && p.PodSelector.MatchLabels[v1alpha1.LabelExecutor] != "" {
				gotExecs = append(gotExecs, p.PodSelector.MatchLabels[v1alpha1.LabelExecutor])
			} else {
				gotExtra++
			}
		}
		if !slices.Equal(gotExecs, execs) || gotExtra != extra {
			return fmt.Errorf("peers: executors %v and %d others, want %v and %d", gotExecs, gotExtra, execs, extra)
		}
		u, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		allowed, _, _ := unstructured.NestedStringSlice(u.Object, "status", "allowedExecutors")
		if !slices.Equal(allowed, execs) {
			return fmt.Errorf("status.allowedExecutors = %v, want %v", allowed, execs)
		}
		return nil
	}
}

// network_policy end to end: on with an allow_from peer (the policy admits that peer only),
// an executor naming the performer (it is admitted: the reconciler follows performer_names),
// import, off (the policy is deleted); every apply is followed by an empty plan.
// Needs a reconciler built with spec.networkPolicy.
func TestAccPerformer_networkPolicy(t *testing.T) {
	skipUnlessAcc(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-netpol")
	createKeySecret(t, c, ns)
	addr := "gantry_performer.iso"
	perf := func(np string) string {
		return fmt.Sprintf(`
provider "gantry" {}

resource "gantry_performer" "iso" {
  name      = "iso"
  namespace = %q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
  grpc_port = 8080
  network_policy = %s
}
`, ns, np)
	}
	on := `{
    enabled    = true
    allow_from = [{ namespace_selector = { "kubernetes.io/metadata.name" = "monitoring" }, pod_selector = { app = "prometheus" } }]
  }`
	withExecutor := perf(on) + fmt.Sprintf(`
resource "gantry_executor" "x" {
  name                = "exec"
  namespace           = %q
  image               = "ghcr.io/layr-labs/hourglass/executor:1.0.0"
  aggregator_endpoint = "aggregator.avs.svc:9010"
  performer_names     = [gantry_performer.iso.name]
  chains = [{ name = "ethereum", chain_id = 1, rpc_url = "https://eth.example.com", task_mailbox_address = "0x%s" }]
  operator_keys = {
    secret_name = "operator-keys"
    ecdsa_key   = "ecdsa"
    bls_key     = "bls"
  }
}
`, ns, strings.Repeat("ab", 20))
	empty := resource.ConfigPlanChecks{PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		CheckDestroy:             checkPerformersDestroyed(c),
		Steps: []resource.TestStep{
			{
				Config:           perf(on),
				ConfigPlanChecks: empty,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("phase"), knownvalue.StringExact("Running")),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("network_policy").AtMapKey("enabled"), knownvalue.Bool(true)),
					statecheck.ExpectKnownValue(addr, tfjsonpath.New("network_policy").AtMapKey("allow_from").AtSliceIndex(0).AtMapKey("pod_selector").AtMapKey("app"), knownvalue.StringExact("prometheus")),
				},
				Check: checkNetworkPolicy(c, ns, "iso", 8080, nil, 1),
			},
			{
				Config:           withExecutor,
				ConfigPlanChecks: empty,
				Check:            eventually(checkNetworkPolicy(c, ns, "iso", 8080, []string{"exec"}, 1)),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateId:           ns + "/iso",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"timeouts", "candidate_nodes"},
			},
			{
				Config:           perf(`{ enabled = false }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate)}, PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: eventually(func(*terraform.State) error {
					np, err := networkPolicyOf(c, ns, "iso")
					if err != nil || np != nil {
						return fmt.Errorf("NetworkPolicy performer-iso still there (%v) after enabled = false", err)
					}
					return nil
				}),
			},
		},
	})
}

// eventually retries check for up to a minute: what the reconciler does after an apply
// returned (here: react to an executor created in the same apply) is seen a moment later.
func eventually(check resource.TestCheckFunc) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		var err error
		deadline := time.Now().Add(time.Minute)
		for {
			if err = check(s); err == nil || time.Now().After(deadline) {
				return err
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
