package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/gantry-dev/terraform-provider-gantry/internal/adopt"
	gwait "github.com/gantry-dev/terraform-provider-gantry/internal/wait"
)

// Adopting a KAITO Workspace with the real CLI (Terraform >= 1.14; run after the shared
// reconciler has this change): a KAITO inference Workspace (preset, label selector, model
// access secret, preferredNodes) in a namespace with a kwok GPU node its selector matches.
// `terraform query` with from = "kaito" lists it, warning about preferredNodes, and
// -generate-config-out writes a gantry_workspace and an import block by identity; the plan of
// that configuration imports the workspace that does not exist yet as an update ("1 to
// import, 0 to add, 1 to change"); the apply creates the Gantry Workspace and waits until it
// is Ready. The next plan is empty.
func TestAccAdopt_kaitoQueryGeneratesConfigThatCreates(t *testing.T) {
	skipUnlessAcc(t)
	skipBelowTerraform(t, "1.14.0", "terraform query")
	testAccPreCheck(t)
	c := testClients(t)
	ctx := context.Background()
	installUpstreamCRD(t, c, "testdata/kaito-workspace-crd.yaml", adopt.KAITOWorkspaceGVR, "KAITO Workspace")
	ns := testNamespace(t, c, "acc-adopt-kaito")
	product := "NVIDIA-A10-ADOPT-" + strings.ToUpper(rand.String(5))
	node := "acc-adopt-kaito-" + strings.ToLower(product[len(product)-5:])
	alloc := corev1.ResourceList{corev1.ResourceCPU: k8sresource.MustParse("32"), corev1.ResourceMemory: k8sresource.MustParse("256Gi"),
		corev1.ResourcePods: k8sresource.MustParse("110"), "nvidia.com/gpu": k8sresource.MustParse("1")}
	if _, err := c.Core.CoreV1().Nodes().Create(ctx, &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": node, "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": product}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "nvidia.com/gpu", Value: "present", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Core.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })
	if _, err := c.Core.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hf-token"},
		StringData: map[string]string{"HF_TOKEN": "x"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	name := "phi"
	kw := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kaito.sh/v1beta1", "kind": "Workspace",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"acc-adopt": ns}},
		"resource": map[string]any{"count": int64(1), "preferredNodes": []any{node},
			"labelSelector": map[string]any{"matchLabels": map[string]any{"nvidia.com/gpu.product": product}}},
		"inference": map[string]any{"preset": map[string]any{"name": "phi-3-mini-4k-instruct",
			"presetOptions": map[string]any{"modelAccessSecret": "hf-token"}}},
	}}
	if _, err := c.Dynamic.Resource(adopt.KAITOWorkspaceGVR).Namespace(ns).Create(ctx, kw, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Dynamic.Resource(adopt.KAITOWorkspaceGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{})
	})

	run := adoptRun{
		list:      fmt.Sprintf("list \"gantry_workspace\" \"kaito\" {\n  provider         = gantry\n  include_resource = true\n  config {\n    from           = \"kaito\"\n    namespace      = %q\n    label_selector = \"acc-adopt=%s\"\n  }\n}\n", ns, ns),
		listed:    []string{"kaito/" + ns + "/" + name, "resource.preferredNodes"},
		generated: []string{`preset\s+= "phi-3-mini-4k-instruct"`, `model_access_secret\s+= "hf-token"`, `import \{`, regexp.QuoteMeta(product)},
	}
	cli, dir, _ := run.run(t)
	ws, err := c.Dynamic.Resource(gwait.Workspace.GVR).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st, _, _ := unstructured.NestedString(ws.Object, "status", "state"); st != "Ready" {
		t.Errorf("Gantry Workspace state %q, want Ready", st)
	}
	run.planEmpty(t, cli, dir)
}
