package adopt

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// KAITOWorkspaceGVR is KAITO's namespaced Workspace at its storage version:
// kaito.sh/v1beta1 workspaces (kaito-project/kaito api/v1beta1/workspace_types.go).
var KAITOWorkspaceGVR = schema.GroupVersionResource{Group: "kaito.sh", Version: "v1beta1", Resource: "workspaces"}

// kaitoPerformanceMode is KAITO's annotation selecting the vLLM performance preset; it maps
// to inference.performanceMode.
const kaitoPerformanceMode = "kaito.sh/performance-mode"

// kaitoDroppedAnnotations are annotations KAITO or kubectl keep for themselves: left out
// without a warning.
var kaitoDroppedAnnotations = map[string]bool{
	"workspace.kaito.io/revision":                      true,
	"kubectl.kubernetes.io/last-applied-configuration": true,
}

// kaitoWorkspace is the part of KAITO's v1beta1 Workspace the translation reads; fields it
// does not know are found by unknownFields and warned about.
type kaitoWorkspace struct {
	Resource struct {
		Count          *int                  `json:"count,omitempty"`
		InstanceType   string                `json:"instanceType,omitempty"`
		LabelSelector  *metav1.LabelSelector `json:"labelSelector,omitempty"`
		PreferredNodes []string              `json:"preferredNodes,omitempty"`
		Partition      *struct {
			Mode    string `json:"mode"`
			Profile string `json:"profile,omitempty"`
			Count   *int   `json:"count,omitempty"`
		} `json:"partition,omitempty"`
	} `json:"resource,omitempty"`
	Inference *struct {
		Preset   *kaitoPreset            `json:"preset,omitempty"`
		Template *corev1.PodTemplateSpec `json:"template,omitempty"`
		Config   string                  `json:"config,omitempty"`
		Adapters []struct {
			Source   *kaitoDataSource `json:"source,omitempty"`
			Strength *string          `json:"strength,omitempty"`
		} `json:"adapters,omitempty"`
	} `json:"inference,omitempty"`
	Tuning *struct {
		Preset *kaitoPreset     `json:"preset,omitempty"`
		Method string           `json:"method,omitempty"`
		Config string           `json:"config,omitempty"`
		Input  *kaitoDataSource `json:"input,omitempty"`
		Output *struct {
			Volume          *corev1.VolumeSource `json:"volumeSource,omitempty"`
			Image           string               `json:"image,omitempty"`
			ImagePushSecret string               `json:"imagePushSecret,omitempty"`
		} `json:"output,omitempty"`
	} `json:"tuning,omitempty"`
}

type kaitoPreset struct {
	Name          string `json:"name"`
	AccessMode    string `json:"accessMode,omitempty"`
	PresetOptions struct {
		Image             string   `json:"image,omitempty"`
		ImagePullSecrets  []string `json:"imagePullSecrets,omitempty"`
		ModelAccessSecret string   `json:"modelAccessSecret,omitempty"`
	} `json:"presetOptions,omitempty"`
}

type kaitoDataSource struct {
	Name             string               `json:"name,omitempty"`
	URLs             []string             `json:"urls,omitempty"`
	Volume           *corev1.VolumeSource `json:"volumeSource,omitempty"`
	Image            string               `json:"image,omitempty"`
	ImagePullSecrets []string             `json:"imagePullSecrets,omitempty"`
}

// The JSON fields of KAITO's Workspace the translation reads, per object.
var (
	kaitoTopFields       = []string{"apiVersion", "kind", "metadata", "resource", "inference", "tuning", "status"}
	kaitoResourceFields  = []string{"count", "instanceType", "labelSelector", "preferredNodes", "partition"}
	kaitoInferenceFields = []string{"preset", "template", "config", "adapters"}
	kaitoTuningFields    = []string{"preset", "method", "config", "input", "output"}
	kaitoPresetFields    = []string{"name", "accessMode", "presetOptions"}
	kaitoOptionsFields   = []string{"image", "imagePullSecrets", "modelAccessSecret"}
	kaitoPodFields       = []string{"containers", "volumes", "imagePullSecrets"}
	kaitoContainerFields = []string{"name", "image", "command", "args", "ports", "readinessProbe", "livenessProbe", "volumeMounts"}
	kaitoProbeFields     = []string{"httpGet", "exec", "initialDelaySeconds", "periodSeconds", "failureThreshold"}
)

// FromKAITO translates a KAITO Workspace (kaito.sh/v1beta1, as listed by the dynamic client)
// into the Gantry Workspace of the same namespace and name that replaces it (see the
// migration guide's "From KAITO" table). warnings name each KAITO field that does not carry
// over, and why; they are sorted. Error: the object is not a KAITO Workspace.
func FromKAITO(u *unstructured.Unstructured) (*v1alpha1.Workspace, []string, error) {
	name := u.GetName()
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, nil, err
	}
	var kw kaitoWorkspace
	if err := json.Unmarshal(raw, &kw); err != nil {
		return nil, nil, fmt.Errorf("workspace %s/%s: not a KAITO Workspace: %w", u.GetNamespace(), name, err)
	}
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	unknown := func(prefix string, obj any, known []string) {
		m, _ := obj.(map[string]any)
		for _, f := range unknownFields(m, known) {
			w("%s%s: not known to Gantry; left out", prefix, f)
		}
	}
	unknown("", u.Object, kaitoTopFields)

	ws := &v1alpha1.Workspace{}
	ws.APIVersion, ws.Kind = v1alpha1.GroupVersion.String(), "Workspace"
	ws.Name, ws.Namespace = name, u.GetNamespace()
	if l := u.GetLabels(); len(l) > 0 {
		ws.Labels = l
	}
	var perfMode string
	for _, k := range sortedKeys(u.GetAnnotations()) {
		v := u.GetAnnotations()[k]
		switch {
		case kaitoDroppedAnnotations[k]:
		case k == kaitoPerformanceMode:
			perfMode = v
		case strings.HasPrefix(k, "kaito.sh/"):
			w("metadata.annotations[%s]: a KAITO controller setting Gantry does not read; left out", k)
		default:
			if ws.Annotations == nil {
				ws.Annotations = map[string]string{}
			}
			ws.Annotations[k] = v
		}
	}

	warn = append(warn, fromKAITOResource(kw, u.Object["resource"], &ws.Spec.Resource)...)
	if kw.Inference != nil {
		gi, iw := fromKAITOInference(kw, name, asMap(u.Object["inference"]), perfMode)
		warn = append(warn, iw...)
		ws.Spec.Inference = gi
	} else if perfMode != "" {
		w("metadata.annotations[%s]: only for inference; left out", kaitoPerformanceMode)
	}

	if kw.Tuning != nil {
		gt, tw := fromKAITOTuning(kw, asMap(u.Object["tuning"]))
		warn = append(warn, tw...)
		ws.Spec.Tuning = gt
	}
	sort.Strings(warn)
	return ws, warn, nil
}

// fromKAITOResource maps KAITO's resource (raw as rm) onto r.
func fromKAITOResource(kw kaitoWorkspace, rm any, r *v1alpha1.WorkspaceResource) []string {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	for _, f := range unknownFields(asMap(rm), kaitoResourceFields) {
		w("resource.%s: not known to Gantry; left out", f)
	}
	kr := kw.Resource
	if kr.Count != nil {
		r.Count = int32(*kr.Count)
	}
	r.InstanceType = kr.InstanceType
	if ls := kr.LabelSelector; ls != nil {
		if len(ls.MatchLabels) > 0 {
			r.LabelSelector = ls.MatchLabels
		}
		for _, e := range ls.MatchExpressions {
			switch e.Operator {
			case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
				r.LabelSelectorExpressions = append(r.LabelSelectorExpressions, v1alpha1.LabelRequirement{Key: e.Key, Operator: e.Operator, Values: e.Values})
			default:
				w("resource.labelSelector.matchExpressions[%s %s]: operator not supported by label_selector_expressions; left out", e.Key, e.Operator)
			}
		}
	}
	if len(kr.PreferredNodes) > 0 {
		w("resource.preferredNodes: not supported by Gantry (deprecated in KAITO v1beta1); left out (%s)", strings.Join(kr.PreferredNodes, ", "))
	}
	if p := kr.Partition; p != nil {
		switch p.Mode {
		case string(v1alpha1.PartitionModeMIG):
			r.Partition = &v1alpha1.WorkspacePartition{Mode: v1alpha1.PartitionModeMIG, Profile: p.Profile}
			if r.InstanceType != "" {
				no := false // KAITO partitions on existing (BYO) nodes only
				r.ProvisionNodes = &no
			}
		case "accelerator":
			if p.Count != nil {
				r.GPUCount = int32(*p.Count)
			}
		default:
			w("resource.partition.mode %q: not known to Gantry; left out", p.Mode)
		}
	}

	return warn
}

// fromKAITOInference maps KAITO's inference (raw as im) and performance-mode annotation.
func fromKAITOInference(kw kaitoWorkspace, wsName string, im map[string]any, perfMode string) (*v1alpha1.WorkspaceInference, []string) {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	unknown := func(prefix string, obj any, known []string) {
		for _, f := range unknownFields(asMap(obj), known) {
			w("%s%s: not known to Gantry; left out", prefix, f)
		}
	}
	in := kw.Inference
	unknown("inference.", im, kaitoInferenceFields)
	gi := &v1alpha1.WorkspaceInference{Config: in.Config, PerformanceMode: perfMode}
	if p := in.Preset; p != nil {
		pm, _ := im["preset"].(map[string]any)
		unknown("inference.preset.", pm, kaitoPresetFields)
		unknown("inference.preset.presetOptions.", pm["presetOptions"], kaitoOptionsFields)
		gi.Preset = p.Name
		if p.AccessMode == "private" {
			gi.AccessMode = p.AccessMode
		}
		gi.Image, gi.ImagePullSecrets, gi.ModelAccessSecret = p.PresetOptions.Image, p.PresetOptions.ImagePullSecrets, p.PresetOptions.ModelAccessSecret
	}
	for i, a := range in.Adapters {
		at := fmt.Sprintf("inference.adapters[%d]", i)
		if a.Source == nil || a.Source.Image == "" {
			w("%s: only an adapter whose source is an image carries over; left out", at)
			continue
		}
		if len(a.Source.URLs) > 0 || a.Source.Volume != nil || len(a.Source.ImagePullSecrets) > 0 {
			w("%s.source: urls, volumeSource and imagePullSecrets do not carry over (Gantry pulls the adapter image); left out", at)
		}
		ga := v1alpha1.WorkspaceAdapter{Name: a.Source.Name, Image: a.Source.Image}
		if a.Strength != nil {
			ga.Strength = *a.Strength
		}
		gi.Adapters = append(gi.Adapters, ga)
	}
	if t := in.Template; t != nil {
		tm, _ := im["template"].(map[string]any)
		warn = append(warn, fromKAITOTemplate(wsName, t, tm, gi)...)
	}
	return gi, warn
}

// fromKAITOTuning maps KAITO's tuning (raw as tm).
func fromKAITOTuning(kw kaitoWorkspace, tm map[string]any) (*v1alpha1.WorkspaceTuning, []string) {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	unknown := func(prefix string, obj any, known []string) {
		for _, f := range unknownFields(asMap(obj), known) {
			w("%s%s: not known to Gantry; left out", prefix, f)
		}
	}
	t := kw.Tuning
	unknown("tuning.", tm, kaitoTuningFields)
	gt := &v1alpha1.WorkspaceTuning{Method: v1alpha1.TuningMethod(strings.ToLower(t.Method)), Config: t.Config}
	if p := t.Preset; p != nil {
		pm, _ := tm["preset"].(map[string]any)
		unknown("tuning.preset.", pm, kaitoPresetFields)
		unknown("tuning.preset.presetOptions.", pm["presetOptions"], kaitoOptionsFields)
		gt.Preset, gt.Image = p.Name, p.PresetOptions.Image
		gt.ImagePullSecrets, gt.ModelAccessSecret = p.PresetOptions.ImagePullSecrets, p.PresetOptions.ModelAccessSecret
		if p.AccessMode == "private" {
			gt.AccessMode = p.AccessMode
		}
	}
	if in := t.Input; in != nil {
		gt.Input.URLs, gt.Input.Image = in.URLs, in.Image
		if in.Volume != nil {
			if pvc := in.Volume.PersistentVolumeClaim; pvc != nil {
				gt.Input.PVC = pvc.ClaimName
			} else {
				w("tuning.input.volumeSource: only a persistentVolumeClaim carries over (tuning.input_pvc); left out")
			}
		}
		if len(in.ImagePullSecrets) > 0 {
			w("tuning.input.imagePullSecrets: not supported by Gantry; left out")
		}
		if in.Name != "" {
			w("tuning.input.name: not used by Gantry; left out")
		}
	}
	if out := t.Output; out != nil {
		gt.Output.Image, gt.Output.ImagePushSecret = out.Image, out.ImagePushSecret
		if out.Volume != nil {
			if pvc := out.Volume.PersistentVolumeClaim; pvc != nil {
				gt.Output.PVC = pvc.ClaimName
			} else {
				w("tuning.output.volumeSource: only a persistentVolumeClaim carries over (tuning.output_pvc); left out")
			}
		}
	}
	return gt, warn
}

// fromKAITOTemplate maps KAITO's inference.template (a whole pod template, raw as tm) onto
// Gantry's typed custom model server: the first container's name, image, command, args, first
// port, probes and volume mounts, and the pod's imagePullSecrets.
func fromKAITOTemplate(wsName string, t *corev1.PodTemplateSpec, tm map[string]any, gi *v1alpha1.WorkspaceInference) []string {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	for k := range tm {
		if k != "spec" {
			w("inference.template.%s: a pod template's %s is not supported; left out", k, k)
		}
	}
	sm, _ := tm["spec"].(map[string]any)
	for _, f := range unknownFields(sm, kaitoPodFields) {
		w("inference.template.spec.%s: not supported by Gantry's typed template; left out", f)
	}
	if gi.Model == "" && gi.Preset == "" {
		gi.Model = wsName
		w("inference.template: Gantry names the model of a custom image (inference.model, passed as MODEL_NAME); set to the workspace's name %q", wsName)
	}
	for _, s := range t.Spec.ImagePullSecrets {
		gi.ImagePullSecrets = append(gi.ImagePullSecrets, s.Name)
	}
	if len(t.Spec.Containers) == 0 {
		w("inference.template.spec.containers: none; nothing to map")
		return warn
	}
	cms, _ := sm["containers"].([]any)
	for i := 1; i < len(t.Spec.Containers); i++ {
		w("inference.template.spec.containers[%d] (%s): Gantry runs one container (sidecars are not supported); left out", i, t.Spec.Containers[i].Name)
	}
	c := t.Spec.Containers[0]
	if len(cms) > 0 {
		for _, f := range unknownFields(asMap(cms[0]), kaitoContainerFields) {
			w("inference.template.spec.containers[0].%s: not supported by Gantry's typed template; left out", f)
		}
	}
	gi.ContainerName, gi.Image, gi.Command, gi.Args = c.Name, c.Image, c.Command, c.Args
	if len(c.Ports) > 0 {
		gi.Port = c.Ports[0].ContainerPort
		if len(c.Ports) > 1 {
			w("inference.template.spec.containers[0].ports[1:]: Gantry serves one port (the first, %d); left out", gi.Port)
		}
	}
	cm := asMap(cms[0])
	var pw []string
	gi.ReadinessProbe, pw = kaitoProbe("readinessProbe", c.ReadinessProbe, cm["readinessProbe"])
	warn = append(warn, pw...)
	gi.LivenessProbe, pw = kaitoProbe("livenessProbe", c.LivenessProbe, cm["livenessProbe"])
	warn = append(warn, pw...)

	vw := kaitoVolumes(t, c, gi)
	warn = append(warn, vw...)
	return warn
}

// kaitoProbe maps the serving container's probe field (raw as raw) onto Gantry's typed probe.
func kaitoProbe(field string, p *corev1.Probe, raw any) (*v1alpha1.WorkspaceProbe, []string) {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	if p == nil {
		return nil, nil
	}
	at := "inference.template.spec.containers[0]." + field
	for _, f := range unknownFields(asMap(raw), kaitoProbeFields) {
		w("%s.%s: Gantry's probes are an HTTP GET or exec; left out", at, f)
	}
	gp := &v1alpha1.WorkspaceProbe{InitialDelaySeconds: p.InitialDelaySeconds, PeriodSeconds: p.PeriodSeconds, FailureThreshold: p.FailureThreshold}
	switch {
	case p.HTTPGet != nil:
		gp.HTTPPath = p.HTTPGet.Path
		if gp.HTTPPath == "" {
			gp.HTTPPath = "/"
		}
		switch {
		case p.HTTPGet.Port.IntVal != 0:
			gp.Port = p.HTTPGet.Port.IntVal
		case p.HTTPGet.Port.StrVal != "":
			w("%s.httpGet.port %q: a named port; the probe uses the serving port", at, p.HTTPGet.Port.StrVal)
		}
		if p.HTTPGet.Scheme != "" && p.HTTPGet.Scheme != corev1.URISchemeHTTP || p.HTTPGet.Host != "" || len(p.HTTPGet.HTTPHeaders) > 0 {
			w("%s.httpGet: scheme, host and httpHeaders are not supported; left out", at)
		}
	case p.Exec != nil:
		gp.Exec = p.Exec.Command
	default:
		return nil, warn // only unsupported handlers, warned above
	}
	return gp, warn
}

// kaitoVolumes maps the serving container's volume mounts of configMap, secret,
// persistentVolumeClaim and emptyDir volumes onto gi.Volumes.
func kaitoVolumes(t *corev1.PodTemplateSpec, c corev1.Container, gi *v1alpha1.WorkspaceInference) []string {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	vols := map[string]corev1.Volume{}
	for _, v := range t.Spec.Volumes {
		vols[v.Name] = v
	}
	mounted := map[string]bool{}
	for _, m := range c.VolumeMounts {
		at := fmt.Sprintf("inference.template.spec.containers[0].volumeMounts[%s]", m.Name)
		v, ok := vols[m.Name]
		if !ok {
			w("%s: no volume of that name; left out", at)
			continue
		}
		mounted[m.Name] = true
		if m.SubPath != "" || m.SubPathExpr != "" || m.MountPropagation != nil {
			w("%s: subPath and mountPropagation are not supported; mounted whole", at)
		}
		gv := v1alpha1.WorkspaceVolume{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		switch {
		case v.ConfigMap != nil:
			gv.ConfigMap = v.ConfigMap.Name
		case v.Secret != nil:
			gv.Secret = v.Secret.SecretName
		case v.PersistentVolumeClaim != nil:
			gv.PVC = v.PersistentVolumeClaim.ClaimName
			gv.ReadOnly = gv.ReadOnly || v.PersistentVolumeClaim.ReadOnly
		case v.EmptyDir != nil:
			gv.EmptyDir = true
			warn = append(warn, kaitoEmptyDir(v.Name, v.EmptyDir, &gv)...)
		default:
			w("inference.template.spec.volumes[%s]: only configMap, secret, persistentVolumeClaim and emptyDir volumes are supported; left out", m.Name)
			continue
		}
		if m.Name == "config" {
			w("inference.template.spec.volumes[config]: the name config is inference.config's; left out")
			continue
		}
		gi.Volumes = append(gi.Volumes, gv)
	}
	for _, v := range t.Spec.Volumes {
		if !mounted[v.Name] {
			w("inference.template.spec.volumes[%s]: not mounted by the serving container; left out", v.Name)
		}
	}
	return warn
}

// kaitoEmptyDir carries an emptyDir's medium (Memory) and sizeLimit onto gv.
func kaitoEmptyDir(name string, e *corev1.EmptyDirVolumeSource, gv *v1alpha1.WorkspaceVolume) []string {
	var warn []string
	switch e.Medium {
	case corev1.StorageMediumDefault:
	case corev1.StorageMediumMemory:
		gv.Medium = string(e.Medium)
	default:
		warn = append(warn, fmt.Sprintf("inference.template.spec.volumes[%s].emptyDir.medium %q: only Memory is supported; left out (the node's disk)", name, e.Medium))
	}
	if q := e.SizeLimit; q != nil {
		if s := q.String(); q.Sign() > 0 && sizeLimitRe.MatchString(s) {
			gv.SizeLimit = s
		} else {
			warn = append(warn, fmt.Sprintf("inference.template.spec.volumes[%s].emptyDir.sizeLimit %q: not a size above 0 without a milli suffix; left out", name, s))
		}
	}
	return warn
}

// sizeLimitRe is the Workspace CRD's pattern of spec.inference.volumes[].sizeLimit.
var sizeLimitRe = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
