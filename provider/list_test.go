package provider

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// queryConfig is a list block per kind, each selecting the objects labelled acc-query=label.
func queryConfig(ns, label string) string {
	var b strings.Builder
	for _, kind := range []string{"gantry_performer", "gantry_executor", "gantry_workspace", "gantry_package_set"} {
		nsLine := fmt.Sprintf("    namespace      = %q\n", ns)
		if kind == "gantry_package_set" {
			nsLine = ""
		}
		fmt.Fprintf(&b, "list %q \"found\" {\n  provider         = gantry\n  include_resource = true\n  config {\n%s    label_selector = \"acc-query=%s\"\n  }\n}\n\n", kind, nsLine, label)
	}
	return b.String()
}

// List resources (Terraform >= 1.14): objects of the four kinds, one of them created
// with kubectl and the others by another configuration, are found by `terraform query` with
// list blocks (namespace and label selector); `-generate-config-out` writes their resource and
// import blocks; the plan of that generated configuration imports all five with no change,
// the apply adopts them and the next plan is empty.
func TestAccList_queryGeneratesConfigThatPlansNoChanges(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "terraform query")
	testAccPreCheck(t)
	c := testClients(t)
	ns := testNamespace(t, c, "acc-query")
	pool := "acc-query-" + rand.String(5)
	accNodes(t, c, pool, 3)
	label := pool

	// A performer created with kubectl, outside any Terraform configuration.
	foreign := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": "Performer",
		"metadata": map[string]interface{}{"name": "from-kubectl", "namespace": ns, "labels": map[string]interface{}{"acc-query": label}},
		"spec":     map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v2.0.0", "env": map[string]interface{}{"MODE": "fast"}},
	}}
	if _, err := c.Dynamic.Resource(wait.Performer.GVR).Namespace(ns).Create(context.Background(), foreign, metav1.CreateOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}

	cli := newCLI(t)
	created := cli.workdir(t, requiredGantry+identityStack(ns, pool, label))
	if out, code := cli.run(t, created, "apply", "-auto-approve", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("apply of the stack exited %d:\n%s", code, out)
	}
	// A package set has no labels attribute; label the object the way kubectl would.
	patch := fmt.Sprintf(`{"metadata":{"labels":{"acc-query":%q}}}`, label)
	if _, err := c.Dynamic.Resource(wait.PackageSet.GVR).Patch(context.Background(), pool, k8stypes.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl"}); err != nil {
		t.Fatal(err)
	}

	adopt := cli.workdir(t, requiredGantry+"\nprovider \"gantry\" {}\n")
	if err := os.WriteFile(filepath.Join(adopt, "found.tfquery.hcl"), []byte(queryConfig(ns, label)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := cli.run(t, adopt, "query", "-generate-config-out=generated.tf", "-no-color")
	t.Logf("terraform query:\n%s", out)
	if code != 0 {
		t.Fatalf("terraform query exited %d", code)
	}
	for _, name := range []string{ns + "/from-kubectl", ns + "/perf", ns + "/exec", ns + "/ws", pool} {
		if !strings.Contains(out, name) {
			t.Errorf("terraform query does not list %s", name)
		}
	}
	gen, err := os.ReadFile(filepath.Join(adopt, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated.tf:\n%s", gen)
	if n := strings.Count(string(gen), "import {"); n != 5 {
		t.Errorf("generated.tf has %d import blocks, want 5", n)
	}
	if !strings.Contains(string(gen), `"MODE" = "fast"`) && !strings.Contains(string(gen), `MODE = "fast"`) {
		t.Errorf("generated.tf lacks the kubectl-created performer's env")
	}

	out, code = cli.run(t, adopt, "plan", "-input=false", "-no-color")
	t.Logf("plan of the generated configuration:\n%s", out)
	if code != 0 || !regexp.MustCompile(`Plan: 5 to import, 0 to add, 0 to change, 0 to destroy\.`).MatchString(out) {
		t.Fatalf("plan of the generated configuration: exit %d, want 5 imports and no change", code)
	}
	if out, code := cli.run(t, adopt, "apply", "-auto-approve", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("apply of the generated configuration exited %d:\n%s", code, out)
	}
	if out, code := cli.run(t, adopt, "plan", "-detailed-exitcode", "-input=false", "-no-color"); code != 0 {
		t.Fatalf("plan after adopting: exit %d, want 0 (no changes):\n%s", code, out)
	}
}
