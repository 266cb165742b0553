package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gantry-dev/terraform-provider-gantry/internal/hardware"
	"github.com/gantry-dev/terraform-provider-gantry/internal/workspace"
)

// Validators the framework's -validators module has no equivalent for. Each checks at plan
// time what the API server would otherwise reject (or accept and fail on) at apply time.

// quantityValidator checks that a string is a Kubernetes resource quantity ("500m", "2Gi", "1")
// of zero or more (the CRDs refuse a negative request or limit).
type quantityValidator struct{}

func (quantityValidator) Description(context.Context) string {
	return "value must be a Kubernetes quantity of zero or more such as 500m, 1, 256Mi or 2Gi"
}
func (v quantityValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v quantityValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	q, err := resource.ParseQuantity(req.ConfigValue.ValueString())
	switch {
	case err != nil:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Quantity",
			fmt.Sprintf("%s = %q is not a Kubernetes quantity (%v): use e.g. 500m, 1, 256Mi or 2Gi.", req.Path, req.ConfigValue.ValueString(), err))
	case q.Sign() < 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Negative Quantity",
			fmt.Sprintf("%s = %q is negative; a container's requests and limits are zero or more.", req.Path, req.ConfigValue.ValueString()))
	}
}

// jsonDecodesInto checks that a JSON string decodes into a value of the Go type new() returns,
// with no unknown fields (so a misspelt key fails at plan, not silently at the API server,
// which prunes unknown fields).
type jsonDecodesInto struct {
	typeName string
	new      func() any
	// check (optional) returns what the API server would refuse in the decoded value.
	check func(any) []string
}

func (v jsonDecodesInto) Description(context.Context) string {
	return "value must be JSON for a Kubernetes " + v.typeName
}
func (v jsonDecodesInto) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v jsonDecodesInto) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(req.ConfigValue.ValueString())))
	dec.DisallowUnknownFields()
	obj := v.new()
	if err := dec.Decode(obj); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+v.typeName,
			fmt.Sprintf("The value is not a valid Kubernetes %s: %v. Write it with jsonencode({...}) using the API's field names (camelCase).", v.typeName, err))
		return
	}
	if v.check == nil {
		return
	}
	for _, p := range v.check(obj) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid "+v.typeName, fmt.Sprintf("%s: %s.", req.Path, p))
	}
}

// nodeRequirementProblems is what the API server refuses in node selector requirements at
// at: keys that are not label keys (matchExpressions only), unknown operators (they are
// case-sensitive) and values that do not fit the operator.
func nodeRequirementProblems(at string, rs []corev1.NodeSelectorRequirement, fields bool) []string {
	var out []string
	for i, r := range rs {
		p := fmt.Sprintf("%s[%d]", at, i)
		if !fields {
			if errs := validation.IsQualifiedName(r.Key); len(errs) > 0 {
				out = append(out, fmt.Sprintf("%s.key %q is not a label key: %s", p, r.Key, strings.Join(errs, "; ")))
			}
		}
		switch r.Operator {
		case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
			if len(r.Values) == 0 {
				out = append(out, fmt.Sprintf("%s: operator %s needs values", p, r.Operator))
			}
		case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
			if len(r.Values) > 0 {
				out = append(out, fmt.Sprintf("%s: operator %s takes no values", p, r.Operator))
			}
		case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
			if len(r.Values) != 1 {
				out = append(out, fmt.Sprintf("%s: operator %s takes exactly one integer value", p, r.Operator))
			}
		default:
			out = append(out, fmt.Sprintf("%s.operator %q is not In, NotIn, Exists, DoesNotExist, Gt or Lt (operators are case-sensitive)", p, r.Operator))
		}
	}
	return out
}

// affinityProblems is what the API server refuses in an affinity (the rules of
// k8s.io/kubernetes/pkg/apis/core/validation for node and pod affinity): an empty affinity,
// required node affinity without terms, operators and their values, label keys, weights
// outside 1-100, pod affinity terms without topologyKey. Each names the JSON field.
func affinityProblems(obj any) []string {
	a, ok := obj.(*corev1.Affinity)
	if !ok || a == nil {
		return nil
	}
	var out []string
	if a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		return []string{"the affinity sets none of nodeAffinity, podAffinity and podAntiAffinity"}
	}
	term := func(at string, t corev1.NodeSelectorTerm) {
		out = append(out, nodeRequirementProblems(at+".matchExpressions", t.MatchExpressions, false)...)
		out = append(out, nodeRequirementProblems(at+".matchFields", t.MatchFields, true)...)
	}
	if na := a.NodeAffinity; na != nil {
		if r := na.RequiredDuringSchedulingIgnoredDuringExecution; r != nil {
			if len(r.NodeSelectorTerms) == 0 {
				out = append(out, "nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms is empty: it must have at least one term")
			}
			for i, t := range r.NodeSelectorTerms {
				term(fmt.Sprintf("nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d]", i), t)
			}
		}
		for i, p := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			at := fmt.Sprintf("nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[%d]", i)
			if p.Weight < 1 || p.Weight > 100 {
				out = append(out, fmt.Sprintf("%s.weight %d is not from 1 to 100", at, p.Weight))
			}
			term(at+".preference", p.Preference)
		}
	}
	podTerms := func(kind string, pa *corev1.PodAffinity, anti *corev1.PodAntiAffinity) {
		var req []corev1.PodAffinityTerm
		var pref []corev1.WeightedPodAffinityTerm
		if pa != nil {
			req, pref = pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution
		}
		if anti != nil {
			req, pref = anti.RequiredDuringSchedulingIgnoredDuringExecution, anti.PreferredDuringSchedulingIgnoredDuringExecution
		}
		check := func(at string, t corev1.PodAffinityTerm) {
			if t.TopologyKey == "" {
				out = append(out, at+".topologyKey is empty: a pod affinity term needs one (e.g. kubernetes.io/hostname)")
			}
			if t.LabelSelector != nil {
				if _, err := metav1.LabelSelectorAsSelector(t.LabelSelector); err != nil {
					out = append(out, fmt.Sprintf("%s.labelSelector: %v", at, err))
				}
			}
		}
		for i, t := range req {
			check(fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", kind, i), t)
		}
		for i, w := range pref {
			at := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", kind, i)
			if w.Weight < 1 || w.Weight > 100 {
				out = append(out, fmt.Sprintf("%s.weight %d is not from 1 to 100", at, w.Weight))
			}
			check(at+".podAffinityTerm", w.PodAffinityTerm)
		}
	}
	if a.PodAffinity != nil {
		podTerms("podAffinity", a.PodAffinity, nil)
	}
	if a.PodAntiAffinity != nil {
		podTerms("podAntiAffinity", nil, a.PodAntiAffinity)
	}
	return out
}

// hardwareRequirementsValidator checks the cross-field rules of hardware_requirements that the
// CRD enforces with CEL: tee_type needs tee_required = true, tee_required = true needs
// tee_type, gpu_type needs gpu_count > 0. Errors point at the offending attribute.
type hardwareRequirementsValidator struct{}

func (hardwareRequirementsValidator) Description(context.Context) string {
	return "tee_type requires tee_required = true; tee_required = true requires tee_type; gpu_type requires gpu_count > 0"
}
func (v hardwareRequirementsValidator) MarkdownDescription(ctx context.Context) string {
	return "`tee_type` requires `tee_required = true`; `tee_required = true` requires `tee_type`; `gpu_type` requires `gpu_count > 0`"
}

func (v hardwareRequirementsValidator) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	attrs := req.ConfigValue.Attributes()
	known := func(a attr.Value) bool { return a != nil && !a.IsNull() && !a.IsUnknown() }
	teeType, _ := attrs["tee_type"].(types.String)
	teeRequired, _ := attrs["tee_required"].(types.Bool)
	gpuType, _ := attrs["gpu_type"].(types.String)
	gpuCount, _ := attrs["gpu_count"].(types.Int64)

	if known(teeType) && !teeRequired.IsUnknown() && (!known(teeRequired) || !teeRequired.ValueBool()) {
		resp.Diagnostics.AddAttributeError(req.Path.AtName("tee_type"), "tee_type Requires tee_required",
			fmt.Sprintf("tee_type = %q only takes effect with tee_required = true: set tee_required = true, or remove tee_type.", teeType.ValueString()))
	}
	if known(teeRequired) && teeRequired.ValueBool() && !teeType.IsUnknown() && !known(teeType) {
		resp.Diagnostics.AddAttributeError(req.Path.AtName("tee_required"), "tee_required Requires tee_type",
			"tee_required = true needs tee_type: one of sgx, sev-snp or tdx.")
	}
	if known(gpuType) && !gpuCount.IsUnknown() && (!known(gpuCount) || gpuCount.ValueInt64() <= 0) {
		resp.Diagnostics.AddAttributeError(req.Path.AtName("gpu_type"), "gpu_type Requires gpu_count",
			fmt.Sprintf("gpu_type = %q selects the GPU product of the requested GPUs: set gpu_count to 1 or more.", gpuType.ValueString()))
	}
}

// uniqueNames rejects a list of objects in which two elements have the same known key
// attribute (key, "" = "name"; the CRD's listType=map with that listMapKey). what names the
// elements in the error's summary ("Duplicate <what>"; "" = "Name").
// uniqueNames: fold compares the names case-insensitively (hex addresses).
type uniqueNames struct {
	what, key string
	fold      bool
}

func (uniqueNames) Description(context.Context) string { return "element names must be unique" }

func (v uniqueNames) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v uniqueNames) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	seen := map[string]int{}
	for i, e := range req.ConfigValue.Elements() {
		o, ok := e.(types.Object)
		if !ok || o.IsNull() || o.IsUnknown() {
			continue
		}
		key := v.key
		if key == "" {
			key = "name"
		}
		n, ok := o.Attributes()[key].(types.String)
		if !ok || n.IsNull() || n.IsUnknown() {
			continue
		}
		id := n.ValueString()
		if v.fold {
			id = strings.ToLower(id)
		}
		if j, dup := seen[id]; dup {
			resp.Diagnostics.AddAttributeError(req.Path.AtListIndex(i).AtName(key), "Duplicate "+v.summaryNoun(),
				fmt.Sprintf("%s: %s %q is already used by %s; they must be unique.", req.Path.AtListIndex(i).AtName(key), key, n.ValueString(), req.Path.AtListIndex(j)))
			continue
		}
		seen[id] = i
	}
}

func (v uniqueNames) summaryNoun() string {
	if v.what == "" {
		return "Name"
	}
	return v.what
}

// presetValidator checks a workspace's inference.preset / tuning.preset against the model
// catalog shipped with the reconciler (internal/workspace/presets.yaml): an unknown name is a
// plan error naming the closest presets (for tuning: only presets that can be fine-tuned).
type presetValidator struct{ tuning bool }

func (v presetValidator) Description(context.Context) string {
	if v.tuning {
		return "a model preset that can be fine-tuned (see the Model presets guide)"
	}
	return "a model preset (see the Model presets guide)"
}

func (v presetValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v presetValidator) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	name := req.ConfigValue.ValueString()
	p, ok := workspace.LookupPreset(name)
	switch {
	case !ok:
		resp.Diagnostics.AddAttributeError(req.Path, "Unknown Model Preset", fmt.Sprintf("%s: %s.", req.Path, workspace.UnknownPresetError(name, v.tuning)))
	case v.tuning && !p.Tuning:
		resp.Diagnostics.AddAttributeError(req.Path, "Model Preset Cannot Be Tuned",
			fmt.Sprintf("%s: preset %q cannot be fine-tuned; the presets that can are: %s.", req.Path, name, strings.Join(workspace.TuningPresets(), ", ")))
	case !v.tuning && p.Gated:
		var secret types.String
		at := req.Path.ParentPath().AtName("model_access_secret")
		if d := req.Config.GetAttribute(ctx, at, &secret); !d.HasError() && secret.IsNull() {
			resp.Diagnostics.AddAttributeError(at, "Gated Model Needs a Model Access Secret",
				fmt.Sprintf("%s: preset %q is a gated model (its weights are downloaded from a gated Hugging Face repository): set %s to a Secret whose key %s holds a token.",
					req.Path, name, at, workspace.ModelAccessKey))
		}
	}
}

// requiresAnyOf: when the attribute is set, at least one of paths must be set too (values not
// known yet pass: they are checked at apply).
type requiresAnyOf struct {
	paths []path.Expression
	what  string
}

func (v requiresAnyOf) Description(context.Context) string { return "requires " + v.what }

func (v requiresAnyOf) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v requiresAnyOf) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	root := configRoot(req.Config.Raw)
	for _, e := range v.paths {
		if p, ok := exactPath(req.PathExpression.Merge(e).Resolve()); ok {
			// An exact path is read from the raw configuration (unknown parents make it
			// unknown, null parents null), as the walk of PathMatches would find it.
			if c := root.at(p); c.Unknown() || !c.Null() && !isZeroNumber(c.v) {
				return
			}
			continue
		}
		matched, diags := req.Config.PathMatches(ctx, req.PathExpression.Merge(e))
		if diags.HasError() {
			continue
		}
		for _, p := range matched {
			var val attr.Value
			if d := req.Config.GetAttribute(ctx, p, &val); d.HasError() {
				continue
			}
			if val.IsUnknown() || !val.IsNull() && !isZeroInt(val) {
				return
			}
		}
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Missing Required Attribute", fmt.Sprintf("%s requires %s.", req.Path, v.what))
}

// isZeroNumber: v is a known number equal to 0 (isZeroInt on the raw configuration).
func isZeroNumber(v tftypes.Value) bool {
	if !v.Type().Is(tftypes.Number) || !v.IsKnown() || v.IsNull() {
		return false
	}
	var f big.Float
	return v.As(&f) == nil && f.Sign() == 0
}

// isZeroInt: val is a known Int64 0.
func isZeroInt(val attr.Value) bool {
	i, ok := val.(types.Int64)
	return ok && !i.IsNull() && !i.IsUnknown() && i.ValueInt64() == 0
}

// instanceTypeValidator checks a workspace's resource.instance_type against the instance type
// catalog (internal/hardware/instancetypes.yaml), naming the closest known types.
type instanceTypeValidator struct{}

func (instanceTypeValidator) Description(context.Context) string {
	return "a GPU instance type of the Instance types guide"
}

func (v instanceTypeValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (instanceTypeValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if _, ok := hardware.LookupInstanceType(req.ConfigValue.ValueString()); !ok {
		resp.Diagnostics.AddAttributeError(req.Path, "Unknown Instance Type", fmt.Sprintf("%s: %s.", req.Path, hardware.UnknownInstanceTypeError(req.ConfigValue.ValueString())))
	}
}

// specFieldRe matches a CRD field path in a machine's error, e.g. spec.resource.gpuCount or
// spec.resource.labelSelector["node.kubernetes.io/instance-type"].
var specFieldRe = regexp.MustCompile(`spec((?:\.[A-Za-z][A-Za-z0-9]*)+)`)

// specErrorAttribute maps an error of the internal machines, which name CRD fields
// ("spec.resource.gpuCount: ..."), to the Terraform attribute of its first field and the
// message with every field spelled as Terraform's attributes ("resource.gpu_count: ...").
func specErrorAttribute(msg string) (path.Path, string) {
	msg = strings.ReplaceAll(msg, "spec.scheduling.", "spec.") // the resources write scheduling at the top level
	at := path.Empty()
	if m := specFieldRe.FindStringSubmatch(msg); m != nil {
		for i, seg := range strings.Split(strings.TrimPrefix(m[1], "."), ".") {
			if i == 0 {
				at = path.Root(snakeCase(seg))
			} else {
				at = at.AtName(snakeCase(seg))
			}
		}
	}
	return at, specFieldRe.ReplaceAllStringFunc(msg, func(f string) string {
		segs := strings.Split(strings.TrimPrefix(f, "spec."), ".")
		for i, s := range segs {
			segs[i] = snakeCase(s)
		}
		return strings.Join(segs, ".")
	})
}

// snakeCase is a CRD field name as the provider's attribute: gpuCount → gpu_count, modelGPUs
// → model_gpus.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		upper := r >= 'A' && r <= 'Z'
		if upper && i > 0 && (s[i-1] < 'A' || s[i-1] > 'Z') {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

// healthCheckURLProblem says why a health check's http_get.url is not an http(s) URL wget can
// GET, "" when it is one ($(NODE_IP) and $(NODE_NAME) stand for a host).
func healthCheckURLProblem(s string) error {
	u := strings.NewReplacer("$(NODE_IP)", "node", "$(NODE_NAME)", "node").Replace(s)
	why := ""
	scheme, _, hasScheme := strings.Cut(u, "://")
	switch {
	case strings.ContainsAny(u, " \t\n"):
		why = "it contains a space"
	case !hasScheme:
		why = "it has no scheme"
	case scheme != "http" && scheme != "https":
		why = fmt.Sprintf("its scheme is %q", scheme)
	default:
		if p, err := url.Parse(u); err != nil {
			why = err.Error()
		} else if p.Host == "" {
			why = "it has no host"
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("%q is not an http:// or https:// URL: %s. The check GETs it (wget) from a pod on the node: write e.g. http://$(NODE_IP):9400/health", s, why)
}

// grpcTargetPathProblem says why an aggregator endpoint has a path, which a gRPC target cannot
// have ("agg:9010/v1"); "" when it has none. dns:///host:port and dns://server/host:port are
// gRPC's own forms.
func grpcTargetPathProblem(s string) error {
	rest := s
	if scheme, after, ok := strings.Cut(s, "://"); ok {
		rest = after
		if (scheme == "dns" || scheme == "passthrough") && !strings.HasPrefix(after, "/") {
			_, rest, _ = strings.Cut(after, "/") // the DNS server, then the target
		}
		rest = strings.TrimLeft(rest, "/")
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		return fmt.Errorf("%q has a path (%q): the executor dials the aggregator over gRPC, which takes host:port only. Remove the path", s, rest[i:])
	}
	return nil
}

// zeroAddressProblem refuses the zero address as a TaskMailbox contract.
func zeroAddressProblem(s string) error {
	if strings.EqualFold(s, "0x"+strings.Repeat("0", 40)) {
		return fmt.Errorf("%q is the zero address, where no TaskMailbox contract can be: use the chain's TaskMailbox address (Hourglass's taskMailboxAddress)", s)
	}
	return nil
}

// gpuResourceProblem refuses a gpu_resource in a domain Kubernetes reserves.
func gpuResourceProblem(s string) error {
	if why := resourceNameProblem(s); why != "" {
		return fmt.Errorf("%q %s", s, why)
	}
	return nil
}

// validateGracefulShutdown refuses a package's graceful_shutdown under a second but above 0:
// terminationGracePeriodSeconds is whole seconds, so it rounds down to 0 (killed at once).
func validateGracefulShutdown(p configValue, diags *diag.Diagnostics) {
	g := p.Attr("graceful_shutdown")
	s, ok := g.String()
	if d, err := time.ParseDuration(s); ok && err == nil && d > 0 && d < time.Second {
		diags.AddAttributeError(g.Path(), "Grace Period Rounds to Zero",
			fmt.Sprintf("%s = %q rounds down to 0 seconds (terminationGracePeriodSeconds is whole seconds), which kills the stage pods at once: "+
				"give at least 1s, or write \"0s\" to mean it.", g.Path(), s))
	}
}
