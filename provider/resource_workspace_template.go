package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	corev1 "k8s.io/api/core/v1"
	k8sresource "k8s.io/apimachinery/pkg/api/resource"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// The parts of gantry_workspace that express KAITO's resource.partition (MIG), its
// inference.template pod settings (container name, command, probes, volumes) and its private
// presets (inference and tuning).

var (
	migProfileRe = regexp.MustCompile(`^[1-7]g\.[0-9]+(\.[0-9]+)?gb$`)
	volumeNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// sizeLimitRe is the CRD's pattern of volumes[].sizeLimit: a quantity without an exponent
	// or a milli suffix.
	sizeLimitRe = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)
)

// containerNameAttribute is inference.container_name (the named container of KAITO's
// inference.template).
func containerNameAttribute() schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: "Name of the model server container, as the container of KAITO's `inference.template` is named " +
		"(e.g. `custom-llm-container`); a DNS label, default `model`. Changing it rolls the pods.",
		Validators: []validator.String{stringvalidator.RegexMatches(volumeNameRe, "must be a DNS label: lower-case letters, digits and '-', at most 63, starting and ending with a letter or digit")}}
}

// tuningAccessModeAttribute is tuning.access_mode (KAITO's tuning preset accessMode).
func tuningAccessModeAttribute() schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: "KAITO's tuning preset `accessMode`: `public` (default) or `private`, as KAITO's fine-tuning examples write it.\n\n" +
		"`private` means the tuning image is in a private registry: `image` must name it (KAITO's `presetOptions.image`; the plan fails naming this attribute without it), " +
		"usually with `image_pull_secrets`, which the tuning Job's pod gets as its `imagePullSecrets`, as KAITO's tuning Job did. KAITO v1beta1 deprecates `accessMode`; " +
		"`image` and `image_pull_secrets` work without it too.",
		Validators: []validator.String{stringvalidator.OneOf("public", "private"), privateNeedsImage{block: "tuning"}}}
}

// tuningPullSecretsAttribute is tuning.image_pull_secrets (KAITO's presetOptions.imagePullSecrets).
func tuningPullSecretsAttribute() schema.ListAttribute {
	return schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Names of docker-config Secrets in the namespace used to pull `image` " +
		"(KAITO's tuning `presetOptions.imagePullSecrets`; at most 8): the tuning Job pod's `imagePullSecrets`. The reconciler checks that they exist (the apply fails naming a missing one) and never reads them.",
		Validators: []validator.List{listvalidator.SizeBetween(1, 8), uniqueValues{}, listvalidator.ValueStringsAre(stringvalidator.RegexMatches(objNameRe, "must be a Secret name"))}}
}

// tuningModelAccessAttribute is tuning.model_access_secret (KAITO's presetOptions.modelAccessSecret).
func tuningModelAccessAttribute() schema.StringAttribute {
	return schema.StringAttribute{Optional: true, MarkdownDescription: "Name of a Secret in the namespace whose key `HF_TOKEN` holds a Hugging Face token (KAITO's `presetOptions.modelAccessSecret`).\n\n" +
		"The tuning container gets it as `HF_TOKEN`, as KAITO's model servers do, to download a gated base model. " +
		"Only the name is in Terraform; the reconciler checks that the Secret and its key exist (the apply fails naming them otherwise) and never reads the token.",
		Validators: []validator.String{stringvalidator.RegexMatches(objNameRe, "must be a Secret name")}}
}

func partitionAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: "Run each replica on one GPU partition instead of whole GPUs (KAITO's `resource.partition`).\n\n" +
		"With `mode = \"mig\"` (NVIDIA Multi-Instance GPU) the pods request one `nvidia.com/mig-<profile>` — the NVIDIA device plugin's resource under the GPU operator's " +
		"`mixed` MIG strategy — instead of `nvidia.com/gpu`, and tolerate a `NoSchedule` taint of that key, as KAITO's pods do; `gpu_product` and `label_selector` still " +
		"select the nodes, and a workspace the matching nodes have too few free slices for is `Stalled` naming them. As in KAITO: one slice per replica (`gpu_count` and `inference.model_gpus` must be unset), inference only, on existing nodes " +
		"(with `instance_type`, `provision_nodes = false`). KAITO's `accelerator` mode is `gpu_count`.",
		Attributes: map[string]schema.Attribute{
			"mode": schema.StringAttribute{Required: true, MarkdownDescription: "`mig`.", Validators: []validator.String{stringvalidator.OneOf(string(v1alpha1.PartitionModeMIG))}},
			"profile": schema.StringAttribute{Required: true, MarkdownDescription: "MIG profile, `<compute slices>g.<memory>gb` as NVIDIA names them, e.g. `1g.10gb`, `3g.40gb`.\n\nIt must be " +
				"one of the profiles KAITO knows (those of A30, A100, H100, H200 and B200), and one the GPU offers: a profile that the GPU of `gpu_product`, " +
				"`label_selector[\"nvidia.com/gpu.product\"]` or `instance_type` does not offer (NVIDIA's MIG user guide; the profiles per GPU are in the " +
				"[Instance types](../guides/instance-types.md) guide) fails the plan, naming the GPU's profiles; a GPU the table does not know is not checked.",
				Validators: []validator.String{stringvalidator.RegexMatches(migProfileRe, "must be a MIG profile such as 1g.10gb"), migProfileValidator{}}},
		},
		Validators: []validator.Object{partitionValidator{}},
	}
}

func probeAttribute(desc string) schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{Optional: true, MarkdownDescription: desc + " Exactly one of `http_path` and `exec`.",
		Attributes: map[string]schema.Attribute{
			"http_path": schema.StringAttribute{Optional: true, MarkdownDescription: "Path of an HTTP GET that must answer 200-399, e.g. `/health` (KAITO's model servers' probe path).",
				Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^/\S*$`), "must be an absolute URL path such as /health"), stringvalidator.LengthAtMost(1024),
					exactlyOne(path.MatchRelative().AtParent().AtName("exec"))}},
			"port": schema.Int64Attribute{Optional: true, MarkdownDescription: "Port of the HTTP GET (1-65535); default: `inference.port`.",
				Validators: []validator.Int64{int64validator.Between(1, 65535), int64validator.AlsoRequires(path.MatchRelative().AtParent().AtName("http_path"))}},
			"exec": schema.ListAttribute{Optional: true, ElementType: types.StringType, MarkdownDescription: "Command run in the container that must exit 0 (1-32 items).",
				Validators: []validator.List{listvalidator.SizeBetween(1, 32)}},
			"initial_delay_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "Seconds before the first probe (0-3600, default 0).",
				Validators: []validator.Int64{int64validator.Between(0, 3600)}},
			"period_seconds": schema.Int64Attribute{Optional: true, MarkdownDescription: "Seconds between probes (1-3600, default 10).",
				Validators: []validator.Int64{int64validator.Between(1, 3600)}},
			"failure_threshold": schema.Int64Attribute{Optional: true, MarkdownDescription: "Consecutive failures that count as failed (1-100, default 3).",
				Validators: []validator.Int64{int64validator.Between(1, 100)}},
		},
	}
}

func volumesAttribute() schema.ListNestedAttribute {
	source := func(name string) path.Expression { return path.MatchRelative().AtParent().AtName(name) }
	oneSource := func(self string) validator.String {
		var others []path.Expression
		for _, o := range []string{"config_map", "secret", "pvc", "empty_dir"} {
			if o != self {
				others = append(others, source(o))
			}
		}
		return exactlyOne(others...)
	}
	objName := func(kind string) validator.String {
		return stringvalidator.RegexMatches(objNameRe, "must be a "+kind+" name")
	}
	return schema.ListNestedAttribute{Optional: true, MarkdownDescription: "Volumes mounted into the model server (the `volumes` and `volumeMounts` of KAITO's " +
		"`inference.template`).\n\nAt most 16, names and mount paths unique; each is exactly one of `config_map`, `secret`, `pvc` (of the workspace's namespace) and `empty_dir`. " +
		"The reconciler checks that the ConfigMaps, Secrets and claims exist (the apply fails naming a missing one) and waits for unbound claims.",
		Validators: []validator.List{listvalidator.SizeAtMost(16), uniqueNames{}, uniqueNames{what: "Mount Path", key: "mount_path"}},
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"name": schema.StringAttribute{Required: true, MarkdownDescription: "Volume name: a DNS label; not `config` (`inference.config`'s volume).",
				Validators: []validator.String{stringvalidator.RegexMatches(volumeNameRe, "must be a DNS label"), stringvalidator.NoneOf("config")}},
			"mount_path": schema.StringAttribute{Required: true, MarkdownDescription: "Absolute path it is mounted at in the container.",
				Validators: []validator.String{stringvalidator.RegexMatches(regexp.MustCompile(`^/`), "must be an absolute path"), stringvalidator.LengthAtMost(1024)}},
			"read_only": schema.BoolAttribute{Optional: true, MarkdownDescription: "Mount read-only (ConfigMaps and Secrets always are)."},
			"config_map": schema.StringAttribute{Optional: true, MarkdownDescription: "A ConfigMap's name.",
				Validators: []validator.String{objName("ConfigMap"), oneSource("config_map")}},
			"secret": schema.StringAttribute{Optional: true, MarkdownDescription: "A Secret's name (only the name is in Terraform).", Validators: []validator.String{objName("Secret")}},
			"pvc":    schema.StringAttribute{Optional: true, MarkdownDescription: "A PersistentVolumeClaim's name.", Validators: []validator.String{objName("PersistentVolumeClaim")}},
			"empty_dir": schema.BoolAttribute{Optional: true, MarkdownDescription: "`true`: a scratch directory that lives as long as the pod.",
				Validators: []validator.Bool{emptyDirTrue{}}},
			"medium": schema.StringAttribute{Optional: true, MarkdownDescription: "Storage medium of the `empty_dir`: `Memory` (a tmpfs, as the `emptyDir: {medium: Memory}` " +
				"KAITO's inference templates mount at `/dev/shm` for vLLM); unset, the node's disk. Requires `empty_dir = true`.",
				Validators: []validator.String{stringvalidator.OneOf(string(corev1.StorageMediumMemory)), emptyDirOnly{}}},
			"size_limit": schema.StringAttribute{Optional: true, MarkdownDescription: "Size limit of the `empty_dir`, a quantity above 0 such as `8Gi` (emptyDir's `sizeLimit`; " +
				"with `medium = \"Memory\"` it counts against the container's memory). Requires `empty_dir = true`.",
				Validators: []validator.String{sizeLimitValidator{}, emptyDirOnly{}}},
		}},
	}
}

// emptyDirTrue: volumes[*].empty_dir is true when set (false would leave the volume sourceless).
type emptyDirTrue struct{}

func (emptyDirTrue) Description(context.Context) string               { return "must be true when set" }
func (v emptyDirTrue) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (emptyDirTrue) ValidateBool(_ context.Context, req validator.BoolRequest, resp *validator.BoolResponse) {
	if !req.ConfigValue.IsNull() && !req.ConfigValue.IsUnknown() && !req.ConfigValue.ValueBool() {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Volume Source", fmt.Sprintf("%s = false gives the volume no source: set it to true, or use config_map, secret or pvc instead.", req.Path))
	}
}

// emptyDirOnly: volumes[*].medium and size_limit need empty_dir = true beside them (the CRD's
// rule "a volume's medium and sizeLimit go with emptyDir").
type emptyDirOnly struct{}

func (emptyDirOnly) Description(context.Context) string               { return "requires empty_dir = true" }
func (v emptyDirOnly) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (emptyDirOnly) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() {
		return
	}
	var ed types.Bool
	if req.Config.GetAttribute(ctx, req.Path.ParentPath().AtName("empty_dir"), &ed).HasError() || ed.IsUnknown() || ed.ValueBool() {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Medium or Size Limit Without an Empty Dir",
		fmt.Sprintf("%s sets an emptyDir's %s: it needs %s = true beside it (a config_map, secret or pvc volume has none).",
			req.Path, req.Path.Steps()[len(req.Path.Steps())-1], req.Path.ParentPath().AtName("empty_dir")))
}

// sizeLimitValidator: volumes[*].size_limit is a quantity above 0 in the CRD's form (no
// exponent, no milli suffix).
type sizeLimitValidator struct{}

func (sizeLimitValidator) Description(context.Context) string {
	return "a quantity above 0 such as 8Gi or 512Mi"
}
func (v sizeLimitValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (sizeLimitValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v := req.ConfigValue.ValueString()
	q, err := k8sresource.ParseQuantity(v)
	if err == nil && sizeLimitRe.MatchString(v) && q.Sign() > 0 {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid Size Limit",
		fmt.Sprintf("%s = %q is not a size: use a quantity above 0 such as 8Gi, 512Mi or 1G (no exponent, no milli suffix m).", req.Path, v))
}

// migProfileValidator: resource.partition.profile is one of KAITO's known MIG profiles.
type migProfileValidator struct{}

func (migProfileValidator) Description(context.Context) string {
	return "a MIG profile KAITO knows"
}
func (v migProfileValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (migProfileValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	p := req.ConfigValue
	if p.IsNull() || p.IsUnknown() || !migProfileRe.MatchString(p.ValueString()) {
		return
	}
	for _, k := range workspace.MIGProfiles {
		if k == p.ValueString() {
			return
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Unknown MIG Profile", fmt.Sprintf("%s = %q is not a MIG profile of any GPU KAITO supports; "+
		"the profiles are %s.", req.Path, p.ValueString(), strings.Join(workspace.MIGProfiles, ", ")))
}

// partitionValidator: resource.partition goes without gpu_count, inference.model_gpus,
// tuning, and provisioned instance types (the Workspace CRD's rules, as KAITO's validation).
type partitionValidator struct{}

func (partitionValidator) Description(context.Context) string {
	return "a partition is one MIG slice per inference replica on existing nodes"
}
func (v partitionValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (partitionValidator) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	var gpus, modelGPUs types.Int64
	var tuning types.Object
	var it types.String
	var provision types.Bool
	for _, a := range []struct {
		at  path.Path
		dst any
	}{
		{path.Root("resource").AtName("gpu_count"), &gpus}, {path.Root("inference").AtName("model_gpus"), &modelGPUs}, {path.Root("tuning"), &tuning},
		{path.Root("resource").AtName("instance_type"), &it}, {path.Root("resource").AtName("provision_nodes"), &provision},
	} {
		if req.Config.GetAttribute(ctx, a.at, a.dst).HasError() {
			return
		}
	}
	bad := func(why string) { resp.Diagnostics.AddAttributeError(req.Path, "Invalid GPU Partition", why) }
	switch {
	case !gpus.IsNull() && !gpus.IsUnknown() && gpus.ValueInt64() != 0:
		bad(fmt.Sprintf("resource.partition gives each replica one MIG slice, as KAITO does: remove resource.gpu_count (= %d).", gpus.ValueInt64()))
	case !modelGPUs.IsNull() && !modelGPUs.IsUnknown() && modelGPUs.ValueInt64() != 0:
		bad("resource.partition serves a model from one MIG slice (KAITO supports no tensor parallelism across partitions): remove inference.model_gpus.")
	case !tuning.IsNull():
		bad("resource.partition is for inference only, as in KAITO: tuning runs on whole GPUs.")
	case !it.IsNull() && !it.IsUnknown() && (provision.IsNull() || provision.IsUnknown() || provision.ValueBool()):
		bad("resource.partition needs existing MIG-enabled nodes, as in KAITO: set resource.provision_nodes = false with resource.instance_type.")
	}
}

// privateNeedsImage: <block>.access_mode = "private" needs <block>.image (KAITO: "When
// AccessMode is private, an image must be provided in PresetOptions"); block is inference or
// tuning (KAITO's tuning Job ran presetOptions.image when private).
type privateNeedsImage struct{ block string }

func (privateNeedsImage) Description(context.Context) string {
	return "access_mode private needs image"
}
func (v privateNeedsImage) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v privateNeedsImage) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || req.ConfigValue.ValueString() != "private" {
		return
	}
	var image types.String
	if req.Config.GetAttribute(ctx, req.Path.ParentPath().AtName("image"), &image).HasError() || !image.IsNull() {
		return
	}
	what := "the preset's image"
	if v.block == "tuning" {
		what = "the tuning image"
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Private Preset Needs an Image",
		fmt.Sprintf("%[1]s.access_mode = \"private\" means %[2]s is in a private registry: set %[1]s.image to it (KAITO's presetOptions.image), usually with %[1]s.image_pull_secrets.", v.block, what))
}

func expandProbe(p *wsProbeModel) *v1alpha1.WorkspaceProbe {
	if p == nil {
		return nil
	}
	return &v1alpha1.WorkspaceProbe{HTTPPath: p.HTTPPath.ValueString(), Port: int32(p.Port.ValueInt64()), Exec: p.Exec,
		InitialDelaySeconds: int32(p.InitialDelaySeconds.ValueInt64()), PeriodSeconds: int32(p.PeriodSeconds.ValueInt64()), FailureThreshold: int32(p.FailureThreshold.ValueInt64())}
}

func flattenProbe(p *v1alpha1.WorkspaceProbe, prior *wsProbeModel) *wsProbeModel {
	if p == nil {
		return nil
	}
	if prior == nil {
		prior = &wsProbeModel{}
	}
	return &wsProbeModel{HTTPPath: optString(p.HTTPPath, prior.HTTPPath), Port: optInt64(int64(p.Port), prior.Port), Exec: optList(p.Exec, prior.Exec),
		InitialDelaySeconds: optInt64(int64(p.InitialDelaySeconds), prior.InitialDelaySeconds), PeriodSeconds: optInt64(int64(p.PeriodSeconds), prior.PeriodSeconds),
		FailureThreshold: optInt64(int64(p.FailureThreshold), prior.FailureThreshold)}
}

// expandInferenceTemplate sets the KAITO inference.template and private preset parts of in.
func expandInferenceTemplate(i *wsInferenceModel, in *v1alpha1.WorkspaceInference) {
	in.Command, in.ImagePullSecrets, in.ContainerName = i.Command, i.ImagePullSecrets, i.ContainerName.ValueString()
	in.PerformanceMode, in.AccessMode = i.PerformanceMode.ValueString(), i.AccessMode.ValueString()
	in.ReadinessProbe, in.LivenessProbe = expandProbe(i.ReadinessProbe), expandProbe(i.LivenessProbe)
	for _, v := range i.Volumes {
		in.Volumes = append(in.Volumes, v1alpha1.WorkspaceVolume{Name: v.Name.ValueString(), MountPath: v.MountPath.ValueString(), ReadOnly: v.ReadOnly.ValueBool(),
			ConfigMap: v.ConfigMap.ValueString(), Secret: v.Secret.ValueString(), PVC: v.PVC.ValueString(), EmptyDir: v.EmptyDir.ValueBool(),
			Medium: v.Medium.ValueString(), SizeLimit: v.SizeLimit.ValueString()})
	}
}

// flattenInferenceTemplate is expandInferenceTemplate's inverse; pi only decides null versus empty.
func flattenInferenceTemplate(in *v1alpha1.WorkspaceInference, pi, m *wsInferenceModel) {
	m.Command, m.ImagePullSecrets = optList(in.Command, pi.Command), optList(in.ImagePullSecrets, pi.ImagePullSecrets)
	m.ContainerName = optString(in.ContainerName, pi.ContainerName)
	m.PerformanceMode, m.AccessMode = optString(in.PerformanceMode, pi.PerformanceMode), optString(in.AccessMode, pi.AccessMode)
	m.ReadinessProbe, m.LivenessProbe = flattenProbe(in.ReadinessProbe, pi.ReadinessProbe), flattenProbe(in.LivenessProbe, pi.LivenessProbe)
	for i, v := range in.Volumes {
		var pv wsVolumeModel
		if i < len(pi.Volumes) {
			pv = pi.Volumes[i]
		}
		m.Volumes = append(m.Volumes, wsVolumeModel{Name: types.StringValue(v.Name), MountPath: types.StringValue(v.MountPath), ReadOnly: optBool(v.ReadOnly, pv.ReadOnly),
			ConfigMap: optString(v.ConfigMap, pv.ConfigMap), Secret: optString(v.Secret, pv.Secret), PVC: optString(v.PVC, pv.PVC), EmptyDir: optBool(v.EmptyDir, pv.EmptyDir),
			Medium: optString(v.Medium, pv.Medium), SizeLimit: optString(v.SizeLimit, pv.SizeLimit)})
	}
	if m.Volumes == nil && pi.Volumes != nil {
		m.Volumes = []wsVolumeModel{}
	}
}

// expandTuningPreset sets KAITO's tuning preset accessMode and presetOptions on t.
func expandTuningPreset(m *wsTuningModel, t *v1alpha1.WorkspaceTuning) {
	t.AccessMode, t.ImagePullSecrets, t.ModelAccessSecret = m.AccessMode.ValueString(), m.ImagePullSecrets, m.ModelAccessSecret.ValueString()
}

// flattenTuningPreset is expandTuningPreset's inverse; pt only decides null versus empty.
func flattenTuningPreset(t *v1alpha1.WorkspaceTuning, pt, m *wsTuningModel) {
	m.AccessMode, m.ModelAccessSecret = optString(t.AccessMode, pt.AccessMode), optString(t.ModelAccessSecret, pt.ModelAccessSecret)
	m.ImagePullSecrets = optList(t.ImagePullSecrets, pt.ImagePullSecrets)
}

func expandPartition(p *wsPartitionModel) *v1alpha1.WorkspacePartition {
	if p == nil {
		return nil
	}
	return &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionMode(p.Mode.ValueString()), Profile: p.Profile.ValueString()}
}

func flattenPartition(p *v1alpha1.WorkspacePartition) *wsPartitionModel {
	if p == nil {
		return nil
	}
	return &wsPartitionModel{Mode: types.StringValue(string(p.Mode)), Profile: types.StringValue(p.Profile)}
}

// performanceModeAnnotation: a kaito.sh/performance-mode annotation holds a KAITO performance
// mode (KAITO's webhook refuses other values the same way).
type performanceModeAnnotation struct{}

func (performanceModeAnnotation) Description(context.Context) string {
	return workspace.AnnotationPerformanceMode + " is balanced, interactivity or throughput"
}
func (v performanceModeAnnotation) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}
func (performanceModeAnnotation) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v, ok := req.ConfigValue.Elements()[workspace.AnnotationPerformanceMode].(types.String)
	if !ok || v.IsNull() || v.IsUnknown() || slices.Contains(workspace.PerformanceModes, v.ValueString()) {
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(workspace.AnnotationPerformanceMode), "Invalid Performance Mode",
		fmt.Sprintf("%q is not a KAITO performance mode; choose one of: %s.", v.ValueString(), strings.Join(workspace.PerformanceModes, ", ")))
}
