package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

	cli := newCLI(t)
	dir := cli.workdir(t, requiredGantry+"\nprovider \"gantry\" {}\n")
	query := fmt.Sprintf("list \"gantry_performer\" \"hourglass\" {\n  provider         = gantry\n  include_resource = true\n  config {\n    from           = \"hourglass\"\n    namespace      = %q\n    label_selector = \"acc-adopt=%s\"\n  }\n}\n", ns, ns)
	if err := os.WriteFile(filepath.Join(dir, "adopt.tfquery.hcl"), []byte(query), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := cli.run(t, dir, "query", "-generate-config-out=generated.tf", "-no-color")
	t.Logf("terraform query:\n%s", out)
	if code != 0 || !strings.Contains(out, "hourglass/"+ns+"/"+name) || !strings.Contains(out, "spec.config.grpcPort") || !strings.Contains(out, "secretKeyRef.optional") {
		t.Fatalf("terraform query exited %d, or does not list hourglass/%s/%s with warnings about spec.config.grpcPort and secretKeyRef.optional", code, ns, name)
	}
	t.Cleanup(func() {
		if out, code := cli.run(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color"); code != 0 {
			t.Errorf("destroy exited %d:\n%s", code, out)
		}
	})
	gen, err := os.ReadFile(filepath.Join(dir, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", gen)
	for _, want := range []string{`grpc_port\s+= 8080`, `avs_address\s+= "` + avs + `"`, `config_map_key_ref`, `LOG_LEVEL\s+= "debug"`, `import \{`} {
		if !regexp.MustCompile(want).Match(gen) {
			t.Errorf("generated.tf lacks %s", want)
		}
	}
	if strings.Contains(string(gen), "hourglass.eigenlayer.io/") {
		t.Errorf("generated.tf carries Hourglass's own labels")
	}

	out, code = cli.run(t, dir, "plan", "-input=false", "-no-color")
	t.Logf("plan of the generated configuration:\n%s", out)
	if code != 0 || !regexp.MustCompile(`Plan: 1 to import, 0 to add, 1 to change, 0 to destroy\.`).MatchString(out) || !strings.Contains(out, "performer-"+name) {
		t.Fatalf("plan of the generated configuration: exit %d, want 1 import that changes (creates the performer) and the hand-over warning", code)
	}
	if out, code := cli.run(t, dir, "apply", "-auto-approve", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("apply of the generated configuration exited %d:\n%s", code, out)
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
	if out, code := cli.run(t, dir, "plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after adopting: exit %d, want 0 (no changes):\n%s", code, out)
	}
}
