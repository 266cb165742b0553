package adopt

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
)

// HourglassPerformerGVR is Hourglass's namespaced Performer: hourglass.eigenlayer.io/v1alpha1
// performers (Layr-Labs/hourglass-monorepo hourglass-operator/api/v1alpha1/performerTypes.go).
var HourglassPerformerGVR = schema.GroupVersionResource{Group: "hourglass.eigenlayer.io", Version: "v1alpha1", Resource: "performers"}

// HourglassUnsetGRPCPort is the port Hourglass's operator serves a Performer on when
// spec.config.grpcPort is unset (performerController.go: "Default to 8080 to match
// hello-performer"); its CRD's default 9090 applies only when spec.config is given.
const HourglassUnsetGRPCPort = 8080

// hourglassLabelPrefix is the prefix of the labels Hourglass's executor (ponos) puts on the
// Performers it creates, and its operator on their Pods: left out, with a warning.
const hourglassLabelPrefix = "hourglass.eigenlayer.io/"

// hourglassPerformer is Hourglass's Performer spec as the translation reads it; fields it does
// not know are found by unknownFields and warned about.
type hourglassPerformer struct {
	AVSAddress      string                      `json:"avsAddress,omitempty"`
	Image           string                      `json:"image,omitempty"`
	ImagePullPolicy string                      `json:"imagePullPolicy,omitempty"`
	Version         string                      `json:"version,omitempty"`
	Resources       corev1.ResourceRequirements `json:"resources,omitempty"`
	Config          struct {
		GRPCPort        int32             `json:"grpcPort,omitempty"`
		Environment     map[string]string `json:"environment,omitempty"`
		EnvironmentFrom []struct {
			Name      string `json:"name"`
			ValueFrom *struct {
				SecretKeyRef    *corev1.SecretKeySelector    `json:"secretKeyRef,omitempty"`
				ConfigMapKeyRef *corev1.ConfigMapKeySelector `json:"configMapKeyRef,omitempty"`
			} `json:"valueFrom,omitempty"`
		} `json:"environmentFrom,omitempty"`
		Args               []string `json:"args,omitempty"`
		Command            []string `json:"command,omitempty"`
		ServiceAccountName string   `json:"serviceAccountName,omitempty"`
	} `json:"config,omitempty"`
	Scheduling *struct {
		NodeSelector      map[string]string   `json:"nodeSelector,omitempty"`
		Tolerations       []corev1.Toleration `json:"tolerations,omitempty"`
		Affinity          *corev1.Affinity    `json:"affinity,omitempty"`
		RuntimeClass      *string             `json:"runtimeClass,omitempty"`
		PriorityClassName *string             `json:"priorityClassName,omitempty"`
	} `json:"scheduling,omitempty"`
	HardwareRequirements *struct {
		GPUType      string            `json:"gpuType,omitempty"`
		GPUCount     int32             `json:"gpuCount,omitempty"`
		TEERequired  bool              `json:"teeRequired,omitempty"`
		TEEType      string            `json:"teeType,omitempty"`
		CustomLabels map[string]string `json:"customLabels,omitempty"`
	} `json:"hardwareRequirements,omitempty"`
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
}

// The JSON fields of Hourglass's Performer the translation reads, per object.
var (
	hourglassTopFields        = []string{"apiVersion", "kind", "metadata", "spec", "status"}
	hourglassSpecFields       = []string{"avsAddress", "image", "imagePullPolicy", "version", "config", "resources", "scheduling", "hardwareRequirements", "imagePullSecrets"}
	hourglassConfigFields     = []string{"grpcPort", "environment", "environmentFrom", "args", "command", "serviceAccountName"}
	hourglassSchedulingFields = []string{"nodeSelector", "tolerations", "affinity", "runtimeClass", "priorityClassName"}
	hourglassHardwareFields   = []string{"gpuType", "gpuCount", "teeRequired", "teeType", "customLabels"}
	hourglassResourcesFields  = []string{"requests", "limits", "claims"}
)

// Patterns of Gantry's Performer CRD the translation checks, so that what it writes plans.
var (
	avsAddressRe       = regexp.MustCompile(`^0x[0-9a-fA-F]{40}$`)
	envNameRe          = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	performerNameRe    = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	gpuResourceNameRe  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`)
	dnsSubdomainNameRe = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// hourglassTEE maps Hourglass's teeType values (its docs: "sgx", "sev", "tdx") to Gantry's.
var hourglassTEE = map[string]v1alpha1.TEEType{
	"sgx": v1alpha1.TEESGX, "tdx": v1alpha1.TEETDX, "sev": v1alpha1.TEESEVSNP, "sev-snp": v1alpha1.TEESEVSNP,
}

// FromHourglass translates an Hourglass Performer (hourglass.eigenlayer.io/v1alpha1, as listed
// by the dynamic client) into the Gantry Performer of the same namespace and name that
// replaces it (see the migration guide's "From Hourglass" table): the same image, version,
// AVS address, gRPC port (8080 when Hourglass's is unset, as its operator serves), environment,
// command, service account, resources, scheduling and hardware requirements. warnings name
// each Hourglass field that does not carry over, and each one Hourglass's operator ignored
// that Gantry applies; they are sorted. Error: the object is not an Hourglass Performer.
func FromHourglass(u *unstructured.Unstructured) (*v1alpha1.Performer, []string, error) {
	raw, err := json.Marshal(u.Object["spec"])
	if err != nil {
		return nil, nil, err
	}
	var hp hourglassPerformer
	if err := json.Unmarshal(raw, &hp); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			err = fmt.Errorf("spec.%s: a %s where Hourglass's Performer has %s", te.Field, te.Value, te.Type.Kind())
		}
		return nil, nil, fmt.Errorf("performer %s/%s: not an Hourglass Performer: %w", u.GetNamespace(), u.GetName(), err)
	}
	sm := asMap(u.Object["spec"])
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	unknown := func(prefix string, obj any, known []string) {
		for _, f := range unknownFields(asMap(obj), known) {
			w("%s%s: not known to Gantry; left out", prefix, f)
		}
	}
	unknown("", u.Object, hourglassTopFields)
	unknown("spec.", sm, hourglassSpecFields)
	unknown("spec.config.", sm["config"], hourglassConfigFields)
	unknown("spec.scheduling.", sm["scheduling"], hourglassSchedulingFields)
	unknown("spec.hardwareRequirements.", sm["hardwareRequirements"], hourglassHardwareFields)
	unknown("spec.resources.", sm["resources"], hourglassResourcesFields)

	p := &v1alpha1.Performer{}
	p.APIVersion, p.Kind = v1alpha1.GroupVersion.String(), "Performer"
	warn = append(warn, hourglassMetadata(u, p)...)
	s := &p.Spec
	s.Image, s.Version = hp.Image, hp.Version
	switch a := hp.AVSAddress; {
	case avsAddressRe.MatchString(a):
		s.AVSAddress = a
	case a != "":
		w("spec.avsAddress %q: Gantry's avs_address is 0x followed by 40 hex digits; left out", a)
	}
	switch pp := corev1.PullPolicy(hp.ImagePullPolicy); pp {
	case "":
	case corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
		s.ImagePullPolicy = pp
	default:
		w("spec.imagePullPolicy %q: not Always, Never or IfNotPresent; left out (IfNotPresent)", pp)
	}
	for _, ps := range hp.ImagePullSecrets {
		s.ImagePullSecrets = append(s.ImagePullSecrets, corev1.LocalObjectReference{Name: ps.Name})
	}
	warn = append(warn, hourglassConfig(hp, s)...)
	s.Resources = v1alpha1.ResourceRequirements{Requests: hp.Resources.Requests, Limits: hp.Resources.Limits}
	if len(hp.Resources.Claims) > 0 {
		w("spec.resources.claims: dynamic resource claims are not supported by Gantry; left out")
	}
	warn = append(warn, hourglassScheduling(hp, s)...)
	warn = append(warn, hourglassHardware(hp, s)...)
	warn = append(warn, hourglassGPUResources(s)...)
	if _, err := hardware.Place(s.HardwareRequirements, s.Scheduling); err != nil {
		w("spec.hardwareRequirements and spec.scheduling: Gantry cannot place them as translated (%v); the plan fails until the configuration is fixed", err)
	}
	sort.Strings(warn)
	return p, warn, nil
}

// hourglassMetadata sets p's name, namespace, labels and annotations from u's: Hourglass's own
// labels (hourglass.eigenlayer.io/...) and kubectl's last-applied annotation are left out.
func hourglassMetadata(u *unstructured.Unstructured, p *v1alpha1.Performer) []string {
	var warn []string
	p.Name, p.Namespace = u.GetName(), u.GetNamespace()
	if len(p.Name) > 53 || !performerNameRe.MatchString(p.Name) {
		warn = append(warn, fmt.Sprintf("metadata.name %q: a Gantry Performer's name is a DNS-1035 label of at most 53 characters (it names the Pod and Service performer-<name>); "+
			"the apply fails until the performer is declared under such a name", p.Name))
	}
	for _, k := range sortedKeys(u.GetLabels()) {
		if strings.HasPrefix(k, hourglassLabelPrefix) {
			warn = append(warn, fmt.Sprintf("metadata.labels[%s]: Hourglass's own label; left out", k))
			continue
		}
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = u.GetLabels()[k]
	}
	for k, v := range u.GetAnnotations() {
		if k == "kubectl.kubernetes.io/last-applied-configuration" {
			continue
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
	return warn
}

// hourglassConfig maps spec.config: the gRPC port, environment, command, args and service
// account.
func hourglassConfig(hp hourglassPerformer, s *v1alpha1.PerformerSpec) []string {
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	c := hp.Config
	s.GRPCPort = c.GRPCPort
	if s.GRPCPort == 0 {
		s.GRPCPort = HourglassUnsetGRPCPort
		w("spec.config.grpcPort: unset, and Hourglass's operator then serves on %d (its CRD's default 9090 applies only with spec.config); grpc_port = %d keeps the endpoint",
			HourglassUnsetGRPCPort, HourglassUnsetGRPCPort)
	}
	if len(c.Environment) > 0 {
		s.Env = map[string]string{}
	}
	for _, k := range sortedKeys(c.Environment) {
		if !envNameRe.MatchString(k) {
			w("spec.config.environment[%s]: not an environment variable name Gantry accepts; left out", k)
			continue
		}
		s.Env[k] = c.Environment[k]
	}
	for i, e := range c.EnvironmentFrom {
		at := fmt.Sprintf("spec.config.environmentFrom[%d] (%s)", i, e.Name)
		switch {
		case !envNameRe.MatchString(e.Name):
			w("%s: not an environment variable name Gantry accepts; left out", at)
		case e.ValueFrom == nil || (e.ValueFrom.SecretKeyRef == nil) == (e.ValueFrom.ConfigMapKeyRef == nil):
			w("%s: needs exactly one of valueFrom.secretKeyRef and valueFrom.configMapKeyRef; left out", at)
		case e.ValueFrom.SecretKeyRef != nil:
			r := e.ValueFrom.SecretKeyRef
			s.EnvFrom = append(s.EnvFrom, v1alpha1.EnvFromRef{Name: e.Name, SecretKeyRef: &v1alpha1.KeyRef{Name: r.Name, Key: r.Key}})
			if r.Optional != nil && *r.Optional {
				w("%s: valueFrom.secretKeyRef.optional: Gantry waits for the Secret key (ReferenceNotFound) instead; left out", at)
			}
		default:
			r := e.ValueFrom.ConfigMapKeyRef
			s.EnvFrom = append(s.EnvFrom, v1alpha1.EnvFromRef{Name: e.Name, ConfigMapKeyRef: &v1alpha1.KeyRef{Name: r.Name, Key: r.Key}})
			if r.Optional != nil && *r.Optional {
				w("%s: valueFrom.configMapKeyRef.optional: Gantry waits for the ConfigMap key (ReferenceNotFound) instead; left out", at)
			}
		}
	}
	s.Command, s.Args = c.Command, c.Args
	switch sa := c.ServiceAccountName; {
	case sa == "":
	case len(sa) <= 253 && dnsSubdomainNameRe.MatchString(sa):
		s.ServiceAccountName = sa
	default:
		w("spec.config.serviceAccountName %q: not a ServiceAccount name; left out", sa)
	}
	return warn
}

// hourglassScheduling maps spec.scheduling: node selector, tolerations, affinity, runtime class
// and priority class (which Hourglass's operator never set on the Pod; Gantry does).
func hourglassScheduling(hp hourglassPerformer, s *v1alpha1.PerformerSpec) []string {
	sc := hp.Scheduling
	if sc == nil {
		return nil
	}
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	g := &s.Scheduling
	for _, k := range sortedKeys(sc.NodeSelector) {
		if problem := labelProblem(k, sc.NodeSelector[k]); problem != "" {
			w("spec.scheduling.nodeSelector[%s]: %s; left out", k, problem)
			continue
		}
		if g.NodeSelector == nil {
			g.NodeSelector = map[string]string{}
		}
		g.NodeSelector[k] = sc.NodeSelector[k]
	}
	g.Tolerations, g.Affinity = sc.Tolerations, sc.Affinity
	if rc := sc.RuntimeClass; rc != nil && *rc != "" {
		if dnsSubdomainNameRe.MatchString(*rc) && len(*rc) <= 253 {
			g.RuntimeClassName = rc
		} else {
			w("spec.scheduling.runtimeClass %q: not a RuntimeClass name; left out", *rc)
		}
	}
	if pc := sc.PriorityClassName; pc != nil && *pc != "" {
		if dnsSubdomainNameRe.MatchString(*pc) && len(*pc) <= 253 {
			g.PriorityClassName = pc
			w("spec.scheduling.priorityClassName %q: Hourglass's operator never set it on the Pod; Gantry does (priority_class_name), and the Pod is rejected if no such PriorityClass exists", *pc)
		} else {
			w("spec.scheduling.priorityClassName %q: not a PriorityClass name; left out", *pc)
		}
	}
	return warn
}

// hourglassHardware maps spec.hardwareRequirements: gpuCount, gpuType as the resource
// nvidia.com/<gpuType> Hourglass requests (gpu_resource), the TEE and custom labels (which
// Hourglass's operator never applied; Gantry does).
func hourglassHardware(hp hourglassPerformer, s *v1alpha1.PerformerSpec) []string {
	hw := hp.HardwareRequirements
	if hw == nil {
		return nil
	}
	var warn []string
	w := func(format string, a ...any) { warn = append(warn, fmt.Sprintf(format, a...)) }
	g := &s.HardwareRequirements
	switch {
	case hw.GPUCount < 0 || hw.GPUCount > 1024:
		w("spec.hardwareRequirements.gpuCount %d: Gantry's gpu_count is 0-1024; left out", hw.GPUCount)
	case hw.GPUCount > 0:
		g.GPUCount = hw.GPUCount
	}
	switch {
	case hw.GPUType == "":
	case g.GPUCount == 0:
		w("spec.hardwareRequirements.gpuType %q: without gpuCount Hourglass's operator ignores it; left out", hw.GPUType)
	case gpuResourceNameRe.MatchString(hw.GPUType):
		g.GPUResource = "nvidia.com/" + hw.GPUType
	default:
		w("spec.hardwareRequirements.gpuType %q: nvidia.com/%s is not an extended resource name; left out (nvidia.com/gpu)", hw.GPUType, hw.GPUType)
	}
	warn = append(warn, hourglassTEEOf(hw.TEERequired, hw.TEEType, g)...)
	for _, k := range sortedKeys(hw.CustomLabels) {
		v := hw.CustomLabels[k]
		if problem := labelProblem(k, v); problem != "" {
			w("spec.hardwareRequirements.customLabels[%s]: %s; left out", k, problem)
			continue
		}
		if sv, ok := s.Scheduling.NodeSelector[k]; ok && sv != v {
			w("spec.hardwareRequirements.customLabels[%s]: %q conflicts with spec.scheduling.nodeSelector's %q; left out", k, v, sv)
			continue
		}
		if g.CustomLabels == nil {
			g.CustomLabels = map[string]string{}
		}
		g.CustomLabels[k] = v
	}
	if len(g.CustomLabels) > 0 {
		w("spec.hardwareRequirements.customLabels: Hourglass's operator never applied them; Gantry adds them to the node selector (custom_labels), so the Pod runs only on nodes with these labels")
	}
	return warn
}

// hourglassGPUResources drops from s.Resources the GPU resource hardwareRequirements requests
// with another quantity: Hourglass's operator overwrote it with gpuCount; Gantry rejects it.
func hourglassGPUResources(s *v1alpha1.PerformerSpec) []string {
	hw := s.HardwareRequirements
	if hw.GPUCount == 0 {
		return nil
	}
	name := hardware.ResourceGPU
	if hw.GPUResource != "" {
		name = corev1.ResourceName(hw.GPUResource)
	}
	var warn []string
	for field, l := range map[string]corev1.ResourceList{"requests": s.Resources.Requests, "limits": s.Resources.Limits} {
		if q, ok := l[name]; ok && q.Value() != int64(hw.GPUCount) {
			warn = append(warn, fmt.Sprintf("spec.resources.%s[%s] %s: Hourglass's operator replaced it with gpuCount %d, as Gantry does; left out", field, name, q.String(), hw.GPUCount))
			delete(l, name)
		}
	}
	return warn
}

// hourglassTEEOf maps teeRequired and teeType onto g: Hourglass's operator never acted on
// them; Gantry places the performer on nodes of that TEE with its runtime class.
func hourglassTEEOf(required bool, teeType string, g *v1alpha1.HardwareRequirements) []string {
	t, known := hourglassTEE[strings.ToLower(teeType)]
	switch {
	case !required && teeType == "":
		return nil
	case !required:
		return []string{fmt.Sprintf("spec.hardwareRequirements.teeType %q: without teeRequired Hourglass ignores it (and Gantry rejects it); left out", teeType)}
	case teeType == "":
		return []string{"spec.hardwareRequirements.teeRequired: without teeType Gantry cannot tell which TEE; left out"}
	case !known:
		return []string{fmt.Sprintf("spec.hardwareRequirements.teeType %q: Gantry's TEE types are sgx, sev-snp and tdx; left out (with teeRequired)", teeType)}
	}
	g.TEERequired, g.TEEType = true, t
	var labels []string
	if pl, err := hardware.Place(v1alpha1.HardwareRequirements{TEERequired: true, TEEType: t}, v1alpha1.Scheduling{}); err == nil {
		for _, k := range sortedKeys(pl.NodeSelector) {
			labels = append(labels, k+"="+pl.NodeSelector[k])
		}
	}
	msg := fmt.Sprintf("spec.hardwareRequirements.teeType %q: Hourglass's operator never applied it; Gantry does (tee_type %q): the Pod runs only on nodes labelled %s, "+
		"with the TEE's runtime class unless scheduling sets one", teeType, t, strings.Join(labels, ", "))
	return []string{msg}
}

// labelProblem is why key=value cannot be a node label Gantry's CRD accepts, or "".
func labelProblem(key, value string) string {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return "not a label key (" + strings.Join(errs, "; ") + ")"
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return "not a label value (" + strings.Join(errs, "; ") + ")"
	}
	return ""
}
