// Command presetdoc writes the Model presets and Instance types guides (tfplugindocs
// templates) from the catalogs the reconciler ships (internal/workspace/presets.yaml,
// internal/hardware/instancetypes.yaml), so the guides list exactly what the reconciler and
// the provider's plan-time checks know. `make generate` runs it:
//
//	go run ./hack/presetdoc templates/guides
package main

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

func main() {
	if len(os.Args) != 2 {
		log.Fatal("usage: presetdoc DIR")
	}
	for name, write := range map[string]func(io.Writer){"model-presets.md.tmpl": presets, "instance-types.md.tmpl": instanceTypes} {
		var b bytes.Buffer
		write(&b)
		if err := os.WriteFile(filepath.Join(os.Args[1], name), b.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

func instanceTypes(w io.Writer) {
	fmt.Fprint(w, `---
page_title: "Instance types"
subcategory: "Guides"
description: |-
  The cloud GPU instance types gantry_workspace accepts in resource.instance_type: GPUs per node and GPU product; the MIG profiles of each GPU.
---

# Instance types

`+"`resource.instance_type`"+` names a cloud GPU instance type as KAITO's
`+"`resource.instanceType`"+` does. Gantry then

* runs the replicas on nodes labelled `+"`node.kubernetes.io/instance-type=<type>`"+` (the label
  every cloud sets on its nodes), so the capacity check and its messages ("no node has the label
  node.kubernetes.io/instance-type=...") are about that type;
* sets `+"`resource.gpu_count`"+` to the type's GPUs per node when neither the configuration nor a
  model preset sets it;
* refuses a replica that needs more GPUs than one node of the type has (one replica runs on one
  node).

With `+"`resource.provision_nodes`"+` (default true, as in KAITO) the reconciler creates Karpenter NodeClaims of the type for the nodes missing (see the Node provisioning guide); with it false, the cluster (or its autoscaler) must have nodes of the type. An
unknown type fails `+"`terraform plan`"+`, naming the closest known ones; this page is generated
from the catalog the reconciler ships (`+"`internal/hardware/instancetypes.yaml`"+`).

| instance type | cloud | GPUs per node | GPU product (`+"`nvidia.com/gpu.product`"+`) | memory per GPU |
| --- | --- | --- | --- | --- |
`)
	for _, t := range hardware.InstanceTypes() {
		fmt.Fprintf(w, "| `%s` | %s | %d | `%s` | %s |\n", t.Name, t.Cloud, t.GPUCount, t.GPUProduct, t.GPUMemory)
	}
	migProfiles(w)
}

// migProfiles writes the MIG profiles of each GPU product the MIG table knows
// (internal/hardware/mig.go, from NVIDIA's MIG user guide).
func migProfiles(w io.Writer) {
	fmt.Fprint(w, `
## MIG profiles per GPU

A workspace's `+"`resource.partition.profile`"+` (and a performer's MIG `+"`gpu_resource`"+`,
`+"`nvidia.com/mig-<profile>`"+`) must be a profile its GPU offers: the GPU of
`+"`resource.gpu_product`"+`, of `+"`resource.label_selector[\"nvidia.com/gpu.product\"]`"+` or of
`+"`resource.instance_type`"+` (a performer's `+"`gpu_type`"+`). Another profile fails
`+"`terraform plan`"+`, naming the GPU's profiles, and a Workspace applied with kubectl is Stalled
(`+"`InvalidSpec`"+`) with the same message. The profiles are those of NVIDIA's MIG user guide
(["Supported MIG Profiles"](`+hardware.MIGUserGuide+`)). A `+"`+me`"+` profile (with media
extensions) is advertised by the NVIDIA device plugin under its base profile's resource, so a
workspace or performer names the base profile (`+"`1g.18gb`"+` for `+"`1g.18gb+me`"+`). A GPU
not listed here is not checked.

| GPU product (`+"`nvidia.com/gpu.product`"+`) | MIG profiles |
| --- | --- |
`)
	for _, p := range hardware.MIGProducts() {
		profiles, _ := hardware.MIGProfiles(p)
		list := "none (no MIG)"
		if len(profiles) > 0 {
			list = "`" + strings.Join(profiles, "`, `") + "`"
		}
		fmt.Fprintf(w, "| `%s` | %s |\n", p, list)
	}
}

func presets(w io.Writer) {
	fmt.Fprint(w, `---
page_title: "Model presets"
subcategory: "Guides"
description: |-
  The model presets gantry_workspace accepts in inference.preset and tuning.preset: image, GPUs, GPU memory, arguments.
---

# Model presets

`+"`gantry_workspace`"+` can name a model by its preset, as KAITO's workspaces do
(`+"`inference = { preset = \"falcon-7b-instruct\" }`"+`), instead of spelling out its image,
arguments and GPU count. The presets come from a catalog shipped with the reconciler (one data
file, `+"`internal/workspace/presets.yaml`"+`); this page is generated from it.

A preset fills each field the configuration leaves empty, field by field:

| workspace attribute | from the preset |
| --- | --- |
| `+"`inference.model`"+` / `+"`tuning.base_model`"+` | the model name |
| `+"`inference.image`"+` / `+"`tuning.image`"+` | the image |
| `+"`inference.args`"+` | `+"`--served-model-name=<model>`"+`, `+"`--port=$(PORT)`"+` and the preset's own arguments (the container's `+"`PORT`"+` is `+"`inference.port`"+`, default 8000) |
| `+"`resource.gpu_count`"+` | the GPUs per replica, when not set (or 0) |

A value given in the configuration always wins, so a preset can run with another image tag or
more GPUs. `+"`resource.gpu_product`"+` is never set by a preset: choose the GPU (the GPU memory
column says how much the model needs in total across its GPUs).

An unknown preset fails `+"`terraform plan`"+`, naming the closest presets; a Workspace applied
with kubectl that names one is Stalled (`+"`InvalidSpec`"+`) with the same message. Only presets
marked tunable can be used in `+"`tuning.preset`"+`. A gated model downloads its weights at start
from a gated Hugging Face repository and needs a token there.

## Catalog

| preset | model | GPUs | GPU memory | tunable | gated | image |
| --- | --- | --- | --- | --- | --- | --- |
`)
	for _, p := range workspace.Presets() {
		fmt.Fprintf(w, "| `%s` | %s | %d | %s | %s | %s | `%s` |\n", p.Name, p.Model, p.GPUCount, p.GPUMemory, yes(p.Tuning), yes(p.Gated), p.Image)
	}
	fmt.Fprint(w, `
Extra arguments per preset:

`)
	for _, p := range workspace.Presets() {
		if len(p.Args) > 0 {
			fmt.Fprintf(w, "* `%s`: `%s`\n", p.Name, strings.Join(p.Args, " "))
		}
	}
	fmt.Fprint(w, `
Images and GPU needs follow KAITO's published presets (kaito-project/kaito,
`+"`presets/workspace/models`"+`).

## Example

`+"```terraform"+`
resource "gantry_workspace" "chat" {
  name      = "chat"
  namespace = "inference"
  resource  = { count = 2, gpu_product = "NVIDIA-A100-SXM4-80GB" }
  inference = { preset = "phi-3-mini-4k-instruct" }
}
`+"```"+`
`)
	anyModel(w)
}

// anyModel is the "Serving any Hugging Face model" section.
func anyModel(w io.Writer) {
	c := func(s string) string { return "`" + s + "`" }
	fmt.Fprintf(w, `
## Serving any Hugging Face model

A model that is not in the catalog is served by its Hugging Face model ID, as KAITO serves
generic Hugging Face models: %s is %s, with no %s, and its size is given
(%s) or derived from its %s (%s). Such a workspace gets, where the configuration leaves them
empty:

| workspace attribute | value |
| --- | --- |
| %s | KAITO's base vLLM image, %s |
| %s | %s, %s, %s, and for more than one GPU %s (and %s over a multi-node group), as a preset |
| %s | the GPUs that hold the model on the workspace's GPU (below) |

**The estimate.** From %s the estimator counts the parameters of a llama-style decoder
(Llama, Mistral, Qwen2, Phi-3, Gemma; %s of a multimodal config): the token embeddings, the
output head unless %s, and per layer the attention (query and output of %s × head size,
key and value of %s × head size: grouped-query attention), the gated MLP (gate, up and down
projections of %s; one per expert for a mixture of experts) and two norms. It reads
%s, %s, %s, %s, %s, %s, %s (or a %s's bits) and %s; nothing is downloaded.
The weights take parameters × the bytes of the dtype (4 for float32, 2 for float16/bfloat16, 1
for fp8/int8, 0.5 for int4), and the model needs **%.1f ×** that, rounded up to a whole GiB: 20%%
for vLLM's KV cache, activations and the CUDA context. Checked against KAITO's presets, the
estimate of Llama-3.1-8B is 18Gi (preset 22Gi), Mistral-7B 17Gi (14Gi), Phi-3-mini 9Gi (9Gi),
DeepSeek-R1-Distill-Qwen-14B 34Gi (40Gi), Phi-4 33Gi (30Gi) and Llama-3.3-70B 158Gi (150Gi):
within 25%%, and the same GPU count on 80 GiB GPUs. %s instead states the
memory outright.

**The GPUs.** The memory of one GPU is %s's, else %s's from the
[Instance types](instance-types.md) catalog (or the MIG slice of %s). The
GPUs per replica are the fewest that hold the model, rounded up to a power of two (vLLM splits
the attention heads evenly over them). A %s of your own is kept and checked; a model
larger than one node of the instance type serves across %s nodes (multi-node
inference) or, with one replica, fails the plan. A GPU of unknown memory fails the plan unless
%s is given.

**The plan shows it.** %s's %s and %s show the estimate and
%s the GPUs, in the plan. With %s, the plan reads the ConfigMap when the cluster
answers (the runner needs %s on ConfigMaps); otherwise %s is known after apply and a
warning says why. The reconciler reads the ConfigMap itself: while it or its key is missing, or
its %s cannot be read, the workspace is Stalled (%s) naming
%s, the apply fails with those words, and the workspace proceeds on its own
once the ConfigMap is fixed. A new or changed workspace of this kind also gets a plan warning
summarising its sizing.

`+"```terraform"+`
resource "gantry_workspace" "qwen" {
  name      = "qwen"
  namespace = "inference"
  resource  = { count = 2, instance_type = "g4dn.12xlarge" } # 4 × Tesla-T4 (16Gi) per node
  inference = {
    model      = "Qwen/Qwen2.5-7B-Instruct"
    model_size = { parameters = "7.62B", dtype = "bfloat16" } # 18Gi: 2 T4s per replica
  }
}

resource "kubernetes_config_map" "llama" {
  metadata {
    name      = "llama-3-1-8b"
    namespace = "inference"
  }
  data = { "config.json" = file("${path.module}/llama-3.1-8b/config.json") }
}

resource "gantry_workspace" "llama" {
  name      = "llama"
  namespace = "inference"
  resource  = { gpu_product = "NVIDIA-L4", provision_nodes = false }
  inference = {
    model               = "meta-llama/Llama-3.1-8B-Instruct"
    model_config        = { config_map = kubernetes_config_map.llama.metadata[0].name }
    model_access_secret = "hf-token" # a gated repository
  }
}
`+"```"+`

A model ID with an %s of your own and no size is served as before: your image, your
arguments, your %s.
`,
		c("inference.model"), c("org/name"), c("preset"), c("inference.model_size = { parameters = \"7B\", dtype = \"bfloat16\" }"),
		c("config.json"), c("inference.model_config = { config_map = \"name\", key = \"config.json\" }"),
		c("inference.image"), c(workspace.DefaultModelImage),
		c("inference.args"), c("--served-model-name=<model>"), c("--port=$(PORT)"), c("--model=<model>"), c("--tensor-parallel-size=<GPUs>"), c("--pipeline-parallel-size"),
		c("resource.gpu_count"),
		c("config.json"), c("text_config"), c("tie_word_embeddings"), c("num_attention_heads"), c("num_key_value_heads"), c("intermediate_size"),
		c("hidden_size"), c("num_hidden_layers"), c("intermediate_size"), c("vocab_size"), c("num_attention_heads"), c("num_key_value_heads"), c("torch_dtype"), c("quantization_config"), c("tie_word_embeddings"),
		workspace.MemoryHeadroom, c("model_size = { gpu_memory = \"40Gi\" }"),
		c("resource.instance_type"), c("resource.gpu_product"), c("resource.partition"), c("resource.gpu_count"), c("resource.count"), c("resource.gpu_count"),
		c("gantry_workspace"), c("sizing.model_parameters"), c("sizing.model_gpu_memory"), c("sizing.gpus_per_replica"), c("model_config"), c("get"), c("sizing"),
		c("config.json"), c("InvalidSpec"), c("inference.model_config"),
		c("image"), c("resource.gpu_count"))
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}
