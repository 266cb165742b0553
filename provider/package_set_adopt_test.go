package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/yaml"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/kube"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// installUpstreamCRD installs the CRD in file (an upstream operator's group, version, kind and
// scope; what names its kind, e.g. "Skyhook") unless the cluster has it already (a real install
// or another run: left as it is), waits (1 min) until served serves it, and removes what it
// installed when the test ends.
func installUpstreamCRD(t *testing.T, c *kube.Clients, file string, served schema.GroupVersionResource, what string) {
	t.Helper()
	ctx := context.Background()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &crd.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Dynamic.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return // a real install (or another run): leave it
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(crdGVR).Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{})
	})
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic.Resource(served).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("%s CRD not served: %v", what, err)
	}
}

// Adopting a Skyhook with the real CLI (Terraform >= 1.14; run after the shared reconciler has
// this change): two GPU nodes a Skyhook served — the first left with its package complete in
// Skyhook's node state, the second not yet reached. `terraform query` with from = "skyhook"
// lists the Skyhook and -generate-config-out writes a gantry_package_set (adopt_from_skyhook,
// Skyhook's agent) and an import block by identity; the plan of that configuration imports
// the set that does not exist yet as an update ("1 to import, 0 to add, 1 to change"); the
// apply creates the PackageSet and waits until it is complete. The first node's record holds
// the package complete with no stage Pod ever on it; the second ran it. The next plan is empty.
func TestAccAdopt_skyhookQueryGeneratesConfigThatCreatesAndHandsOver(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "terraform query")
	testAccPreCheck(t)
	c := testClients(t)
	ctx := context.Background()
	installUpstreamCRD(t, c, "testdata/skyhook-crd.yaml", adopt.SkyhookGVR, "Skyhook")
	pool := "acc-adopt-" + rand.String(5)
	accNodes(t, c, pool, 2)
	node0, node1 := pool+"-0", pool+"-1"

	sky := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "skyhook.nvidia.com/v1alpha1", "kind": "Skyhook",
		"metadata": map[string]any{"name": pool, "labels": map[string]any{"acc-adopt": pool}},
		"spec": map[string]any{
			"nodeSelectors":         map[string]any{"matchLabels": map[string]any{"gantry.dev/test-pool": pool}},
			"interruptionBudget":    map[string]any{"count": int64(1)},
			"additionalTolerations": []any{map[string]any{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}},
			"packages": map[string]any{"dcgm-tool": map[string]any{"version": "1.0.0", "image": "ghcr.io/gantry-dev/dcgm-tool",
				"env": []any{map[string]any{"name": "MODE", "value": "fast"}}}},
		},
	}}
	if _, err := c.Dynamic.Resource(adopt.SkyhookGVR).Create(ctx, sky, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(adopt.SkyhookGVR).Delete(context.Background(), pool, metav1.DeleteOptions{})
	})
	// What Skyhook's operator left on the first node.
	state, _ := json.Marshal(packageset.SkyhookNodeState{"dcgm-tool|1.0.0": {Name: "dcgm-tool", Version: "1.0.0",
		Image: "ghcr.io/gantry-dev/dcgm-tool", Stage: "config", State: "complete"}})
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		v1alpha1.SkyhookNodeStatePrefix + pool: string(state), "skyhook.nvidia.com/status_" + pool: "complete"}}})
	if _, err := c.Core.CoreV1().Nodes().Patch(ctx, node0, k8stypes.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	run := adoptRun{
		list:      fmt.Sprintf("list \"gantry_package_set\" \"skyhook\" {\n  provider         = gantry\n  include_resource = true\n  config {\n    from           = \"skyhook\"\n    label_selector = \"acc-adopt=%s\"\n  }\n}\n", pool),
		listed:    []string{"skyhook/" + pool},
		generated: []string{`adopt_from_skyhook\s+= "` + pool + `"`, `import \{`, `agent_image\s+= "` + regexp.QuoteMeta(adopt.DefaultSkyhookAgentImage) + `"`, `MODE = "fast"`},
	}
	cli, dir, _ := run.run(t)

	ps, err := c.Dynamic.Resource(gwait.PackageSet.GVR).Get(ctx, pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ps.GetAnnotations()[v1alpha1.AnnotationAdoptFromSkyhook]; got != pool {
		t.Errorf("PackageSet annotation %s = %q", v1alpha1.AnnotationAdoptFromSkyhook, got)
	}
	n0, err := c.Core.CoreV1().Nodes().Get(ctx, node0, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var rec packageset.NodeRecord
	if err := json.Unmarshal([]byte(n0.Annotations[v1alpha1.AnnotationNodeStatePrefix+pool]), &rec); err != nil {
		t.Fatalf("node %s record: %v", node0, err)
	}
	if p := rec.Packages["dcgm-tool"]; p == nil || !p.Done || p.Version != "1.0.0" {
		t.Errorf("node %s: dcgm-tool record %+v, want done at 1.0.0", node0, p)
	}
	pods, err := c.Core.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelPackageSet + "=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	ran := map[string]int{}
	for _, p := range pods.Items {
		ran[p.Spec.NodeName]++
	}
	if ran[node0] != 0 || ran[node1] == 0 {
		t.Errorf("stage Pods per node %v: want none on %s (adopted) and some on %s", ran, node0, node1)
	}
	evs, _ := c.Core.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + pool + ",reason=AdoptedFromSkyhook"})
	if evs == nil || !eventSays(evs.Items, "node "+node0+": adopted from Skyhook "+pool) {
		t.Errorf("no AdoptedFromSkyhook event for %s", node0)
	}
	run.planEmpty(t, cli, dir)
}

func eventSays(evs []corev1.Event, want string) bool {
	for _, e := range evs {
		if strings.Contains(e.Message, want) {
			return true
		}
	}
	return false
}
