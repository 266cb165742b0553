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
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}
