package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Adopting an Hourglass Performer with the real CLI (Terraform >= 1.14; run after the shared
// reconciler has this change): an Hourglass Performer as Hourglass's executor creates it (its
// hourglass.eigenlayer.io labels, an AVS address, no spec.config.grpcPort, an environment
// variable from a ConfigMap key and one from an optional Secret key), with no Hourglass
// operator running (so no Pod or Service performer-<name> of Hourglass's holds the names).
// `terraform query` with from = "hourglass" lists it, warning about the unset gRPC port and the
// optional Secret key, and -generate-config-out writes a gantry_performer (grpc_port = 8080,
// as Hourglass's operator serves) and an import block by identity; the plan of that
// configuration imports the performer that does not exist yet as an update ("1 to import, 0 to
// add, 1 to change"); the apply creates the Gantry Performer and waits until it is Running,
// with its Service performer-<name> on port 8080. The next plan is empty.
func TestAccAdopt_hourglassQueryGeneratesConfigThatCreates(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "terraform query")
	testAccPreCheck(t)
	c := testClients(t)
	ctx := context.Background()
	installUpstreamCRD(t, c, "testdata/hourglass-performer-crd.yaml", adopt.HourglassPerformerGVR, "Hourglass Performer")
	ns := testNamespace(t, c, "acc-adopt-hourglass")
	if _, err := c.Core.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "avs-config"},
		Data: map[string]string{"rpc-url": "http://rpc.local"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "avs-secrets"},
		StringData: map[string]string{"api-key": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	name := "hello"
	avs := "0xce2ac75be2e0951f1f7b288c7a6a9bfb6c331dc4"
	hp := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "hourglass.eigenlayer.io/v1alpha1", "kind": "Performer",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"acc-adopt": ns, "app": "hourglass-performer",
			"hourglass.eigenlayer.io/avs": avs, "hourglass.eigenlayer.io/performer": name}},
		"spec": map[string]any{"avsAddress": avs, "image": "ghcr.io/layr-labs/hello-performer:v1.0.0", "imagePullPolicy": "IfNotPresent", "version": "v1.0.0",
			"config": map[string]any{
				"environment": map[string]any{"LOG_LEVEL": "debug"},
				"environmentFrom": []any{
					map[string]any{"name": "RPC_URL", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "avs-config", "key": "rpc-url"}}},
					map[string]any{"name": "API_KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "avs-secrets", "key": "api-key", "optional": true}}},
				}},
			"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}}},
	}}
	if _, err := c.Dynamic.Resource(adopt.HourglassPerformerGVR).Namespace(ns).Create(ctx, hp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(adopt.HourglassPerformerGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	run := adoptRun{
		list:      fmt.Sprintf("list \"gantry_performer\" \"hourglass\" {\n  provider         = gantry\n  include_resource = true\n  config {\n    from           = \"hourglass\"\n    namespace      = %q\n    label_selector = \"acc-adopt=%s\"\n  }\n}\n", ns, ns),
		listed:    []string{"hourglass/" + ns + "/" + name, "spec.config.grpcPort", "secretKeyRef.optional"},
		generated: []string{`grpc_port\s+= 8080`, `avs_address\s+= "` + avs + `"`, `config_map_key_ref`, `LOG_LEVEL\s+= "debug"`, `import \{`},
		planSays:  "performer-" + name, // the hand-over warning
	}
	cli, dir, gen := run.run(t)
	if strings.Contains(string(gen), "hourglass.eigenlayer.io/") {
		t.Errorf("generated.tf carries Hourglass's own labels")
	}
	p, err := c.Dynamic.Resource(gwait.Performer.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantEndpoint := fmt.Sprintf("performer-%s.%s.svc.cluster.local:8080", name, ns)
	if ph, _, _ := unstructured.NestedString(p.Object, "status", "phase"); ph != "Running" {
		t.Errorf("Gantry Performer phase %q, want Running", ph)
	}
	if ep, _, _ := unstructured.NestedString(p.Object, "status", "grpcEndpoint"); ep != wantEndpoint {
		t.Errorf("Gantry Performer grpcEndpoint %q, want %q (Hourglass's address, with its port)", ep, wantEndpoint)
	}
	svc, err := c.Core.CoreV1().Services(ns).Get(ctx, "performer-"+name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8080 {
		t.Errorf("Service performer-%s ports %+v, want 8080", name, svc.Spec.Ports)
	}
	run.planEmpty(t, cli, dir)
}
