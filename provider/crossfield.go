package provider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	kresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// Plan-time rules that check attributes against one another (inputs that plan cleanly although
// together they are wrong). Rules on one attribute's own value are in validators.go and
// inputvalidators.go. Each error names the attribute first.

// envFromNotInEnv refuses an env_from name that the sibling env map also sets: the container
// would get the variable twice and Kubernetes keeps the last one.
type envFromNotInEnv struct{}

func (envFromNotInEnv) Description(context.Context) string {
	return "no name is also set in env"
}
func (v envFromNotInEnv) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (envFromNotInEnv) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	envPath := req.Path.ParentPath().AtName("env")
	var env types.Map
	if req.Config.GetAttribute(ctx, envPath, &env).HasError() || env.IsNull() || env.IsUnknown() {
		return
	}
	for i, e := range req.ConfigValue.Elements() {
		o, ok := e.(types.Object)
		if !ok || o.IsNull() || o.IsUnknown() {
			continue
		}
		n, ok := o.Attributes()["name"].(types.String)
		if !ok || n.IsNull() || n.IsUnknown() {
			continue
		}
		if _, dup := env.Elements()[n.ValueString()]; dup {
			at := req.Path.AtListIndex(i).AtName("name")
			resp.Diagnostics.AddAttributeError(at, "Environment Variable Set Twice",
				fmt.Sprintf("%s: %q is also set in %s: the container would get two values for one variable, and Kubernetes keeps only the last. Keep one of them.", at, n.ValueString(), envPath))
		}
	}
}

// soakWindow is the longest soak a rollout has (rollout.soak_duration or a wave's), what
// names it, and whether every one is known.
func soakWindow(ro configValue) (longest time.Duration, name string, known bool) {
	consider := func(v configValue) bool {
		s, ok := v.String()
		if v.Null() {
			return true
		}
		if !ok {
			return false
		}
		if d, err := time.ParseDuration(s); err == nil && d > longest {
			longest, name = d, fmt.Sprintf("%s = %q", v.Path(), s)
		}
		return true
	}
	if !consider(ro.Attr("soak_duration")) {
		return 0, "", false
	}
	waves, ok := ro.Attr("waves").List()
	if !ok {
		return 0, "", false
	}
	for _, w := range waves {
		if !consider(w.Attr("soak_duration")) {
			return 0, "", false
		}
	}
	return longest, name, true
}

// validateSoak checks rollout.soak_check_interval and the health checks' timeouts against
// the longest soak: an interval without a soak, or longer than it, spaces no rounds; a timeout
// longer than it can keep a node soaking that long (a warning: the check still works).
func validateSoak(root configValue, diags *diag.Diagnostics) {
	ro := root.Attr("rollout")
	longest, name, known := soakWindow(ro)
	if !known || !ro.usable() {
		return
	}
	iv := ro.Attr("soak_check_interval")
	if s, ok := iv.String(); ok {
		d, err := time.ParseDuration(s)
		switch {
		case err != nil:
		case longest <= 0:
			diags.AddAttributeError(iv.Path(), "Soak Check Interval Without a Soak",
				fmt.Sprintf("%s is set, but no soak is (rollout.soak_duration, or a wave's soak_duration): there are no soak check rounds to space. "+
					"Set rollout.soak_duration (e.g. \"1m\"), or remove soak_check_interval.", iv.Path()))
		case d > longest:
			diags.AddAttributeError(iv.Path(), "Soak Check Interval Longer Than the Soak",
				fmt.Sprintf("%s = %q is longer than the longest soak (%s): no round would start between the first and the last. "+
					"Set it to at most the soak, or leave it unset (the soak / 3).", iv.Path(), s, name))
		}
	}
	hcs, _ := ro.Attr("health_checks").List()
	for _, hc := range hcs {
		to := hc.Attr("timeout")
		s, ok := to.String()
		if d, err := time.ParseDuration(s); ok && err == nil && longest > 0 && d > longest {
			diags.AddAttributeWarning(to.Path(), "Health Check Outlasts the Soak",
				fmt.Sprintf("%s = %q is longer than the longest soak (%s): one run of the check can keep a node soaking up to %s. Lower the timeout, or lengthen the soak.",
					to.Path(), s, name, s))
		}
	}
}

// selectorText is an element's node_selector and node_selector_expressions in one canonical
// string ("" when it has neither), and whether both are known.
func selectorText(c configValue) (string, bool) {
	sel, ok := c.Attr("node_selector").StringMap()
	if !ok {
		return "", false
	}
	var parts []string
	for _, k := range sortedKeys(sel) {
		parts = append(parts, k+"="+sel[k])
	}
	exprs, ok := c.Attr("node_selector_expressions").List()
	if !ok || !c.Attr("node_selector_expressions").Null() && !c.Attr("node_selector_expressions").Set() {
		return "", false
	}
	for _, e := range exprs {
		key, _ := e.Attr("key").String()
		op, _ := e.Attr("operator").String()
		vals, _ := e.Attr("values").List()
		var vs []string
		for _, v := range vals {
			s, _ := v.String()
			vs = append(vs, s)
		}
		sort.Strings(vs)
		parts = append(parts, key+" "+op+" "+strings.Join(vs, ","))
	}
	sort.Strings(parts)
	return strings.Join(parts, ";"), true
}

// validateShadowedSelectors checks items (waves or compartments: a node belongs to the first
// whose selector matches it) for one that can never get a node: after an item with the same
// selector, or after one with no selector (which matches every node).
func validateShadowedSelectors(items []configValue, what, rule string, diags *diag.Diagnostics) {
	var texts []string
	for i, it := range items {
		text, ok := selectorText(it)
		if !ok {
			return
		}
		name, _ := it.Attr("name").String()
		if text == "" && i < len(items)-1 {
			next, _ := items[i+1].Attr("name").String()
			diags.AddAttributeError(it.Path(), "Selector Shadows Later Ones",
				fmt.Sprintf("%s (%q) has no node_selector or node_selector_expressions, so it matches every node and %s (%q) can never get one: "+
					"a node belongs to the first %s whose selector matches it (%s). Give it a selector, or make it the last.", it.Path(), name, items[i+1].Path(), next, what, rule))
			return
		}
		if j := slices.Index(texts, text); j >= 0 {
			earlier, _ := items[j].Attr("name").String()
			diags.AddAttributeError(it.Path(), "Selector Shadowed by an Earlier One",
				fmt.Sprintf("%s: its selector is the same as %s's (%q): a node belongs to the first %s whose selector matches it (%s), so this %s can never get a node.",
					it.Path(), items[j].Path(), earlier, what, rule, what))
		}
		texts = append(texts, text)
	}
}

// validatePerformerTEE checks GPUs in a TEE: an SGX enclave cannot use one (an error); the
// runtime class tdx or sev-snp implies passes none into the confidential VM unless
// runtime_class_name names a GPU-capable one (a warning: the cluster may have such a class).
func validatePerformerTEE(root configValue, diags *diag.Diagnostics) {
	hr := root.Attr("hardware_requirements")
	gpus, gok := hr.Attr("gpu_count").Int64()
	tee, tok := hr.Attr("tee_required").Bool()
	typ, yok := hr.Attr("tee_type").String()
	if !gok || !tok || !yok || gpus <= 0 || !tee {
		return
	}
	at := hr.Attr("gpu_count").Path()
	classes := map[string]string{"sgx": hardware.RuntimeClassSGX, "tdx": hardware.RuntimeClassTDX, "sev-snp": hardware.RuntimeClassSEVSNP}
	switch {
	case typ == "sgx":
		diags.AddAttributeError(at, "GPU in an SGX Enclave",
			fmt.Sprintf("%s: an SGX enclave (tee_type = \"sgx\", runtime class %s) cannot use a GPU: run GPU work outside the enclave, "+
				"or use tee_type \"tdx\" or \"sev-snp\" with a GPU-capable runtime class.", at, hardware.RuntimeClassSGX))
	case root.Attr("runtime_class_name").Null():
		diags.AddAttributeWarning(at, "GPU in a Confidential VM",
			fmt.Sprintf("%s: the runtime class tee_type %q implies (%s) passes no GPU into the confidential VM; set runtime_class_name to a GPU-capable one "+
				"of your cluster (e.g. kata-qemu-nvidia-gpu-%s) and use a GPU in confidential-computing mode.", at, typ, classes[typ], strings.TrimPrefix(typ, "sev-")))
	}
}

// validateOperatorKeys refuses one key of the Secret named for two of the operator's keys.
func validateOperatorKeys(root configValue, diags *diag.Diagnostics) {
	ok := root.Attr("operator_keys")
	seen := map[string]path.Path{}
	for _, k := range []string{"ecdsa_key", "bls_key", "bls_keystore_key", "bls_keystore_password_key"} {
		v, known := ok.Attr(k).String()
		if !known {
			continue
		}
		if first, dup := seen[v]; dup {
			diags.AddAttributeError(ok.Attr(k).Path(), "One Secret Key for Two Keys",
				fmt.Sprintf("%s: %q is also %s: the ECDSA key, the BLS key (or keystore) and the keystore's password are different secrets, each its own key of the Secret.",
					ok.Attr(k).Path(), v, first))
			continue
		}
		seen[v] = ok.Attr(k).Path()
	}
}

// workspaceCrossField checks a workspace's fields against one another at plan, with the
// values known (see the rules it calls).
type workspaceCrossField struct{}

func (workspaceCrossField) Description(context.Context) string {
	return "the workspace's selectors, multi-node group, tuning output and arguments agree"
}
func (v workspaceCrossField) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (workspaceCrossField) ValidateResource(_ context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	root := configRoot(req.Config.Raw)
	validateWorkspaceSelectors(root, &resp.Diagnostics)
	validateWorkspaceGroup(root, &resp.Diagnostics)
	validateWorkspaceTuning(root, &resp.Diagnostics)
	validateInferencePortArgs(root, &resp.Diagnostics)
}

// validateWorkspaceSelectors: node_selector against resource.label_selector (a key both name
// with different values; the GPU product is checkGPUProduct's), and label_selector against
// label_selector_expressions.
func validateWorkspaceSelectors(root configValue, diags *diag.Diagnostics) {
	res := root.Attr("resource")
	ls, lok := res.Attr("label_selector").StringMap()
	ns, nok := root.Attr("node_selector").StringMap()
	if lok && nok {
		for _, k := range sortedKeys(ns) {
			if want, both := ls[k]; both && want != ns[k] && k != "nvidia.com/gpu.product" {
				at := root.Attr("node_selector").Path().AtMapKey(k)
				diags.AddAttributeError(at, "Selectors Contradict",
					fmt.Sprintf("%s = %q contradicts resource.label_selector[%q] = %q: no node carries both. Make them agree, or remove one.", at, ns[k], k, want))
			}
		}
	}
	if exprs, ok := res.Attr("label_selector_expressions").List(); ok && lok {
		exprContradictions(ls, exprs, "resource.label_selector", "so the workspace's pods could run on no node", diags)
	}
}

// exprContradictions reports each expression of exprs that no node carrying the labels set
// (written at setName) can meet.
func exprContradictions(set map[string]string, exprs []configValue, setName, consequence string, diags *diag.Diagnostics) {
	for _, e := range exprs {
		key, kok := e.Attr("key").String()
		op, ook := e.Attr("operator").String()
		values, vok := e.Attr("values").List()
		want, both := set[key]
		if !kok || !ook || !vok || !both {
			continue
		}
		in := false
		for _, v := range values {
			if s, ok := v.String(); ok && s == want {
				in = true
			}
		}
		if op == "DoesNotExist" || op == "In" && !in || op == "NotIn" && in {
			diags.AddAttributeError(e.Path(), "Selector Selects No Node",
				fmt.Sprintf("%s (%s %s) contradicts %s[%q] = %q: no node can meet both, %s.", e.Path(), key, op, setName, key, want, consequence))
		}
	}
}

// maxGroupNameLength is the longest workspace name whose multi-node group Service
// workspace-<name>-group is a DNS label (63).
const maxGroupNameLength = 63 - len("workspace--group")

// validateWorkspaceGroup checks multi-node inference (inference.model_gpus above
// resource.gpu_count, resource.count > 1): the GPUs split evenly over the group's nodes, and a
// name short enough for the group's headless Service.
func validateWorkspaceGroup(root configValue, diags *diag.Diagnostics) {
	mg, mok := root.Attr("inference").Attr("model_gpus").Int64()
	g, gok := root.Attr("resource").Attr("gpu_count").Int64()
	n, nok := root.Attr("resource").Attr("count").Int64()
	if !mok || !gok || g <= 0 || mg <= g {
		return
	}
	if mg%g != 0 {
		diags.AddAttributeError(path.Root("inference").AtName("model_gpus"), "Model GPUs Uneven Across the Group",
			fmt.Sprintf("inference.model_gpus = %d is not a multiple of resource.gpu_count = %d: the group's pods each serve the same share of the model "+
				"(tensor parallel within a node, pipeline parallel across nodes, as KAITO's multi-node inference), so model_gpus must be gpu_count × the number of nodes.", mg, g))
	}
	name, ok := root.Attr("name").String()
	if ok && nok && n > 1 && len(name) > maxGroupNameLength {
		diags.AddAttributeError(path.Root("name"), "Name Too Long for a Multi-Node Group",
			fmt.Sprintf("name: %q is %d characters, but a multi-node workspace's headless Service workspace-<name>-group is a DNS label of at most 63: "+
				"use a name of at most %d characters.", name, len(name), maxGroupNameLength))
	}
}

// validateWorkspaceTuning: a tuning workspace needs a GPU (unless a preset, an instance type or
// a partition gives it one: readAsUnsetValidator's), and output_push_secret pushes
// output_image, so it has no use with output_pvc.
func validateWorkspaceTuning(root configValue, diags *diag.Diagnostics) {
	tu, res := root.Attr("tuning"), root.Attr("resource")
	if !tu.usable() {
		return
	}
	if g, ok := res.Attr("gpu_count").Int64(); ok && g == 0 && tu.Attr("preset").Null() && res.Attr("instance_type").Null() && res.Attr("partition").Null() {
		diags.AddAttributeError(res.Attr("gpu_count").Path(), "Tuning Needs a GPU",
			"resource.gpu_count = 0: a tuning workspace fine-tunes on GPUs (KAITO tunes LoRA and QLoRA adapters on at least one): set it to 1 or more.")
	}
	if !tu.Attr("output_push_secret").Null() && !tu.Attr("output_pvc").Null() && !tu.Attr("output_pvc").Unknown() {
		diags.AddAttributeError(tu.Attr("output_push_secret").Path(), "Push Secret Without an Image to Push",
			"tuning.output_push_secret: the Secret that pushes tuning.output_image, but the adapter goes to tuning.output_pvc, so nothing is pushed. "+
				"Remove output_push_secret, or write to output_image.")
	}
}

// validateInferencePortArgs checks --port in inference.args: given once, and, when a number,
// equal to inference.port (the Service, the probes and the endpoint use that port).
func validateInferencePortArgs(root configValue, diags *diag.Diagnostics) {
	inf := root.Attr("inference")
	args, ok := inf.Attr("args").List()
	if !ok || !inf.Attr("args").Set() {
		return
	}
	first := -1
	for i, a := range args {
		s, _ := a.String()
		if s != "--port" && !strings.HasPrefix(s, "--port=") {
			continue
		}
		if first >= 0 {
			diags.AddAttributeError(a.Path(), "Port Given Twice",
				fmt.Sprintf("%s: --port is given again (also at %s): give it once, as --port=$(PORT) (the container's PORT is inference.port).", a.Path(), args[first].Path()))
			return
		}
		first = i
	}
	if first < 0 {
		return
	}
	s, _ := args[first].String()
	v, hasValue := strings.CutPrefix(s, "--port=")
	if !hasValue && first+1 < len(args) {
		v, _ = args[first+1].String()
	}
	port, pok := inf.Attr("port").Int64()
	if inf.Attr("port").Null() {
		port, pok = int64(v1alpha1.DefaultInferencePort), true
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && pok && n != port {
		diags.AddAttributeError(args[first].Path(), "Port Contradicts inference.port",
			fmt.Sprintf("%s: --port %d, but inference.port = %d: the Service, the probes and the endpoint use inference.port. Write --port=$(PORT), or set inference.port = %d.",
				args[first].Path(), n, port, n))
	}
}

// gpuMemoryProblem says when the preset's model needs more GPU memory than the nodes of the
// resolved workspace's instance type that one copy of it spans have in all (as KAITO's webhook
// checks the instance type's GPU memory against the preset's), "" when it fits or either is
// unknown.
func gpuMemoryProblem(w *v1alpha1.Workspace) string {
	if w.Spec.Resource.InstanceType == "" || w.Spec.Resource.Partition != nil {
		return ""
	}
	presetName := ""
	switch {
	case w.Spec.Inference != nil:
		presetName = w.Spec.Inference.Preset
	case w.Spec.Tuning != nil:
		presetName = w.Spec.Tuning.Preset
	}
	p, ok := workspace.LookupPreset(presetName)
	it, iok := hardware.LookupInstanceType(w.Spec.Resource.InstanceType)
	if !ok || !iok || p.GPUMemory == "" || it.GPUMemory == "" {
		return ""
	}
	need, err1 := kresource.ParseQuantity(p.GPUMemory)
	each, err2 := kresource.ParseQuantity(it.GPUMemory)
	if err1 != nil || err2 != nil {
		return ""
	}
	nodes := int64(max(workspace.SizingOf(w).NodesPerModelReplica, 1))
	have := each.Value() * int64(it.GPUCount) * nodes
	if it.GPUCount <= 0 || need.Value() <= have {
		return ""
	}
	return fmt.Sprintf("resource.instance_type: the %s preset needs %s of GPU memory, but a copy of the model gets at most %s on %s (%d node × %d %s of %s): "+
		"choose an instance type with more GPU memory, or spread the model over more nodes (resource.count and inference.model_gpus), as KAITO sizes it.",
		p.Name, p.GPUMemory, kresource.NewQuantity(have, kresource.BinarySI).String(), it.Name, nodes, it.GPUCount, it.GPUProduct, it.GPUMemory)
}
