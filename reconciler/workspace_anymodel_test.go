package reconciler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// llama70BConfig is Llama-3.3-70B-Instruct's config.json (the fields the estimator reads):
// 70.55B parameters in bfloat16, 158Gi with headroom, 2 GPUs of 80 GiB.
const llama70BConfig = `{"architectures": ["LlamaForCausalLM"], "hidden_size": 8192, "intermediate_size": 28672,
 "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8, "vocab_size": 128256,
 "tie_word_embeddings": false, "torch_dtype": "bfloat16"}`

// TestWorkspaceAnyModel: a Hugging Face model without a preset, sized from the config.json of
// a ConfigMap the reconciler reads. While the ConfigMap is missing, then while its config.json
// cannot be read, the workspace is Stalled (InvalidSpec) naming spec.inference.modelConfig and
// no Deployment exists; once the ConfigMap is right it goes Ready on its own (read again every
// modelConfigPoll), served by KAITO's base image with vLLM's arguments and the GPUs the
// estimate asks for (2 × A100 80GB, tensor parallel 2).
func TestWorkspaceAnyModel(t *testing.T) {
	e := setup(t)
	t.Parallel()
	ctx := context.Background()
	model := "meta-llama/Llama-3.3-70B-Instruct"
	cmName := fmt.Sprintf("llama-config-%d", seq.Add(1))
	w := e.newWorkspace("anymodel", nil, v1alpha1.WorkspaceSpec{Resource: v1alpha1.WorkspaceResource{Count: 1, GPUProduct: a100},
		Inference: &v1alpha1.WorkspaceInference{Model: model, ModelConfig: &v1alpha1.WorkspaceModelConfig{ConfigMap: cmName}}})
	if err := e.c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.c.Delete(ctx, w) }()
	stalledOn := func(what string) *v1alpha1.Workspace {
		t.Helper()
		got := e.waitWS(t, w.Name, "Stalled: "+what, func(w *v1alpha1.Workspace) bool {
			st := wsCond(w, v1alpha1.ConditionStalled)
			return st.Status == metav1.ConditionTrue && strings.Contains(st.Message, what)
		})
		if st := wsCond(got, v1alpha1.ConditionStalled); st.Reason != workspace.ReasonInvalidSpec || !strings.HasPrefix(st.Message, "spec.inference.modelConfig: ") {
			t.Errorf("stalled: %s", describeWS(got))
		}
		if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &appsv1.Deployment{}); err == nil {
			t.Errorf("a Deployment exists while the model's size is unknown")
		}
		return got
	}
	stalledOn(fmt.Sprintf("ConfigMap %q not found", cmName))

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cmName, Namespace: e.ns}, Data: map[string]string{"config.json": `{"hidden_size": 8192}`}}
	if err := e.c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.c.Delete(ctx, cm) }()
	stalledOn("config.json has no positive num_hidden_layers")

	cm.Data["config.json"] = llama70BConfig
	if err := e.c.Update(ctx, cm); err != nil {
		t.Fatal(err)
	}
	e.waitWS(t, w.Name, "Ready", stateIs(v1alpha1.WorkspaceStateReady))
	var dep appsv1.Deployment
	if err := e.c.Get(ctx, types.NamespacedName{Namespace: e.ns, Name: "workspace-" + w.Name}, &dep); err != nil {
		t.Fatal(err)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	gpus := c.Resources.Limits["nvidia.com/gpu"]
	want := []string{"--served-model-name=" + model, "--port=$(PORT)", "--model=" + model, "--tensor-parallel-size=2"}
	if c.Image != workspace.DefaultModelImage || gpus.Value() != 2 || !slices.Equal(c.Args, want) {
		t.Errorf("container: image %s gpus %s args %q; want %s, 2, %q", c.Image, gpus.String(), c.Args, workspace.DefaultModelImage, want)
	}
}
