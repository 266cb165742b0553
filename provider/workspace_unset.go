package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// readAsUnsetValidator refuses, at plan, a zero or an empty list the Workspace cannot carry
// and the reconciler then replaces (issue 38 item 5: what the user writes reaches the cluster).
// The API has no "0 GPUs" apart from "unset" and no empty argument list apart from "none":
// spec.resource.gpuCount and spec.inference.args are omitted when 0 or empty, and
// workspace.Resolve fills them as KAITO does from a model preset (its GPUs per replica and its
// arguments) or an instance type (its GPUs per node). So resource.gpu_count = 0 beside
// inference.preset, tuning.preset or resource.instance_type (no partition), and
// inference.args = [] beside inference.preset, would be silently replaced: each is an error
// on the attribute, saying what would run instead.
type readAsUnsetValidator struct{}

func (readAsUnsetValidator) Description(context.Context) string {
	return "a zero or empty the Workspace reads as unset is not written beside what fills it"
}

func (v readAsUnsetValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (readAsUnsetValidator) ValidateResource(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	res := root.Attr("resource")
	if n, ok := res.Attr("gpu_count").Int64(); ok && n == 0 && res.Attr("partition").Null() {
		if fills := gpuCountFiller(root); fills != "" {
			at := res.Attr("gpu_count")
			resp.Diagnostics.AddAttributeError(at.Path(), "GPU Count Read As Unset",
				fmt.Sprintf("%s = 0 is not sent (the Workspace API has no zero GPUs apart from unset), so the reconciler gives each replica %s. "+
					"Remove gpu_count to use those GPUs, or set the number of GPUs each replica needs.", at.Path(), fills))
		}
	}
	inf := root.Attr("inference")
	args, known := inf.Attr("args").List()
	if preset, ok := inf.Attr("preset").String(); ok && known && !inf.Attr("args").Null() && len(args) == 0 {
		resp.Diagnostics.AddAttributeError(inf.Attr("args").Path(), "Arguments Read As Unset",
			fmt.Sprintf("%s = [] is not sent (the Workspace API has no empty argument list apart from unset), so the model server gets the arguments of preset %q "+
				"(--served-model-name, --port and the preset's own). Remove args to use them, or list the arguments the server needs.", inf.Attr("args").Path(), preset))
	}
}

// gpuCountFiller says what gives a replica its GPUs when resource.gpu_count is unset, as
// workspace.Resolve does ("" when nothing does): the inference or tuning preset's GPUs per
// replica, else the instance type's GPUs per node. Unknown values fill nothing.
func gpuCountFiller(root configValue) string {
	for _, mode := range []string{"inference", "tuning"} {
		if name, ok := root.Attr(mode).Attr("preset").String(); ok {
			if p, found := workspace.LookupPreset(name); found {
				return fmt.Sprintf("the %s of %s.preset %q", gpus(p.GPUCount), mode, name)
			}
		}
	}
	if name, ok := root.Attr("resource").Attr("instance_type").String(); ok {
		if it, found := hardware.LookupInstanceType(strings.TrimSpace(name)); found {
			return fmt.Sprintf("the %s per node of resource.instance_type %q", gpus(it.GPUCount), name)
		}
	}
	return ""
}

func gpus(n int32) string {
	if n == 1 {
		return "1 GPU"
	}
	return fmt.Sprintf("%d GPUs", n)
}

// releaseNodesValidator warns at plan when tuning.release_nodes_on_success = true cannot
// release anything: the workspace provisions no nodes (resource.instance_type unset, or
// resource.provision_nodes = false), so it only ever uses existing nodes, which it never
// deletes. A warning, not an error: the setting is harmless, only without effect. Unknown
// values say nothing.
type releaseNodesValidator struct{}

func (releaseNodesValidator) Description(context.Context) string {
	return "tuning.release_nodes_on_success needs nodes the workspace provisions"
}

func (v releaseNodesValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (releaseNodesValidator) ValidateResource(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	at := root.Attr("tuning").Attr("release_nodes_on_success")
	if on, ok := at.Bool(); !ok || !on {
		return
	}
	res := root.Attr("resource")
	var why string
	if res.Attr("instance_type").Null() {
		why = "resource.instance_type is not set"
	} else if prov, ok := res.Attr("provision_nodes").Bool(); ok && !prov {
		why = "resource.provision_nodes = false"
	}
	if why == "" {
		return
	}
	resp.Diagnostics.AddAttributeWarning(at.Path(), "Release Nodes Has Nothing to Release",
		fmt.Sprintf("%s = true releases the nodes the workspace provisions (Karpenter NodeClaims of resource.instance_type), but %s: the tuning run uses existing nodes, "+
			"which are never deleted, so this setting has no effect.", at.Path(), why))
}
