package provider

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/attr/xattr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// Plan-time checks of what the API server would reject at apply, added to every
// resource's schema by withInputValidators so the four resources check the same inputs the
// same way. Every error is an attribute error on the exact path (a map entry, a list
// element's attribute) and its message names that path.

// labelMapAttributes are the map attributes whose entries are Kubernetes labels (or label
// selectors): keys must be qualified names, values label values.
var labelMapAttributes = map[string]bool{"labels": true, "pod_labels": true, "node_selector": true, "custom_labels": true,
	"label_selector": true, "performer_selector": true, "pod_non_interrupt_labels": true,
	"pod_selector": true, "namespace_selector": true}

// annotationMapAttributes are the map attributes whose entries are Kubernetes annotations.
var annotationMapAttributes = map[string]bool{"annotations": true, "pod_annotations": true}

// reservedKeyAttributes are the labels and annotations Gantry writes onto objects (not
// selectors): no key of Gantry's own (reservedKeyProblem).
var reservedKeyAttributes = map[string]bool{"labels": true, "pod_labels": true, "annotations": true, "pod_annotations": true}

// withInputValidators returns attrs with the shared input checks added, at any depth: label
// and annotation maps (labelMapAttributes, annotationMapAttributes), non-negative timeouts,
// requests ≤ limits in resources, unique env_from names, and whole numbers for every Int64 attribute (a clear error
// for 9090.5 instead of the framework's conversion error).
func withInputValidators(attrs map[string]schema.Attribute) map[string]schema.Attribute {
	out := make(map[string]schema.Attribute, len(attrs))
	for name, a := range attrs {
		out[name] = withInputValidatorsAttr(name, a)
	}
	return out
}

func withInputValidatorsAttr(name string, a schema.Attribute) schema.Attribute {
	a = kubeValidators(name, a)
	switch t := a.(type) {
	case schema.MapAttribute:
		if t.ElementType == types.StringType && labelMapAttributes[name] {
			t.Validators = append(t.Validators, labelsValidator{})
		}
		if t.ElementType == types.StringType && annotationMapAttributes[name] {
			t.Validators = append(t.Validators, annotationsValidator{})
		}
		if t.ElementType == types.StringType && name == "env" {
			t.Validators = append(t.Validators, envValidator{})
		}
		if t.ElementType == types.StringType && reservedKeyAttributes[name] {
			t.Validators = append(t.Validators, reservedKeys{})
		}
		return t
	case schema.ListAttribute:
		if t.ElementType == types.StringType && name == "command" {
			t.Validators = append(t.Validators, commandRunsSomething{})
		}
		return t
	case schema.Int64Attribute:
		if t.CustomType == nil {
			t.CustomType = wholeNumberType{}
		}
		return t
	case schema.SingleNestedAttribute:
		t.Attributes = withInputValidators(t.Attributes)
		if name == "timeouts" {
			t.Validators = append(t.Validators, nonNegativeDurations{})
		}
		if _, ok := t.Attributes["requests"]; ok && name == "resources" {
			t.Validators = append(t.Validators, requestsWithinLimits{})
		}
		return t
	case schema.ListNestedAttribute:
		t.NestedObject.Attributes = withInputValidators(t.NestedObject.Attributes)
		if name == "env_from" {
			t.Validators = append(t.Validators, uniqueNames{what: "Environment Variable"}, envFromNotInEnv{})
		}
		return t
	case schema.MapNestedAttribute:
		t.NestedObject.Attributes = withInputValidators(t.NestedObject.Attributes)
		return t
	}
	return a
}

// uniqueValues is listvalidator.UniqueValues with the element named: the framework's says
// "This attribute contains duplicate values of: ..." under the list's path, which Terraform
// shows only as the echoed source line; this one is an error on the duplicate element,
// "performer_names[2]: "a" appears twice in performer_names (also at performer_names[0])".
type uniqueValues struct{}

func (uniqueValues) Description(context.Context) string { return "every element is different" }

func (v uniqueValues) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (uniqueValues) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	for i, e := range elems {
		if e.IsUnknown() || e.IsNull() {
			continue
		}
		for j := 0; j < i; j++ {
			if elems[j].Equal(e) {
				p := req.Path.AtListIndex(i)
				resp.Diagnostics.AddAttributeError(p, "Duplicate Value",
					fmt.Sprintf("%s: %s appears twice in %s (also at %s).", p, e, req.Path, req.Path.AtListIndex(j)))
				break
			}
		}
	}
}

// maxEnvBytes bounds the bytes of one env map (names and values): a Kubernetes object is
// stored in etcd, which refuses requests over 1.5 MiB by default (the API server's etcd client
// over 2 MiB), and the env is copied into the Deployment or Pod as well.
const maxEnvBytes = 1 << 20

// envValidator checks an env map at plan: names non-empty and without '=' (the API server's
// rule for environment variable names), and at most maxEnvBytes in all, so a value too large to
// store fails the plan naming the attribute instead of the apply with etcd's words.
type envValidator struct{}

func (envValidator) Description(context.Context) string {
	return "names are environment variable names (non-empty, no '='); names and values hold at most 1 MiB in all"
}

func (v envValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (envValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	total := 0
	for k, v := range req.ConfigValue.Elements() {
		if k == "" || strings.Contains(k, "=") {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Invalid Environment Variable Name",
				fmt.Sprintf("%q is not an environment variable name: it must be non-empty and must not contain '='.", k))
		}
		total += len(k)
		if s, ok := v.(types.String); ok && !s.IsUnknown() && !s.IsNull() {
			total += len(s.ValueString())
		}
	}
	if total > maxEnvBytes {
		resp.Diagnostics.AddAttributeError(req.Path, "Environment Too Large",
			fmt.Sprintf("%s holds %d bytes of names and values; Kubernetes cannot store an object that large (etcd refuses requests "+
				"over 1.5 MiB, and the values are copied into the Pod as well). Keep at most %d bytes here: put large values in a Secret "+
				"or ConfigMap and reference them with env_from.", req.Path, total, maxEnvBytes))
	}
}

// labelsValidator checks a map of labels: each key a qualified name (optional DNS-subdomain
// prefix + "/" + name of at most 63 characters), each known value a label value (at most 63
// characters, alphanumerics, '-', '_', '.', starting and ending alphanumeric, or empty).
type labelsValidator struct{}

func (labelsValidator) Description(context.Context) string {
	return "keys must be Kubernetes label keys (prefix/name) and values label values (at most 63 characters)"
}
func (v labelsValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (labelsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	for _, k := range sortedKeys(elems) {
		at := req.Path.AtMapKey(k)
		if errs := labelProblems(k, false); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(at, "Invalid Label Key",
				fmt.Sprintf("%s: %q is not a valid label key: %s.", req.Path, k, strings.Join(errs, "; ")))
		}
		s, ok := elems[k].(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if errs := labelProblems(s.ValueString(), true); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(at, "Invalid Label Value",
				fmt.Sprintf("%s: %q is not a valid label value: %s.", at, s.ValueString(), strings.Join(errs, "; ")))
		}
	}
}

// labelProblems is what the API server says is wrong with a label key (value false: a
// qualified name) or a label value (value true); nil when nothing.
func labelProblems(s string, value bool) []string {
	if value {
		return validation.IsValidLabelValue(s)
	}
	return validation.IsQualifiedName(s)
}

// labelString checks one label key (value false) or label value (value true) as the API server
// does, e.g. a selector requirement's key and values: "node_selector_expressions[0].key: "bad
// key!" is not a valid label key: ...".
type labelString struct{ value bool }

func (v labelString) Description(context.Context) string {
	if v.value {
		return "a label value: at most 63 characters, alphanumerics, '-', '_' or '.', starting and ending alphanumeric, or empty"
	}
	return "a label key: an optional DNS subdomain prefix and '/', then a name of at most 63 characters"
}

func (v labelString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v labelString) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s, what, errs := req.ConfigValue.ValueString(), "key", labelProblems(req.ConfigValue.ValueString(), false)
	if v.value {
		what, errs = "value", labelProblems(s, true)
	}
	if len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Label "+strings.ToUpper(what[:1])+what[1:],
			fmt.Sprintf("%s: %q is not a valid label %s: %s.", req.Path, s, what, strings.Join(errs, "; ")))
	}
}

// annotationsValidator checks a map of annotations: each key a qualified name (as the API
// server checks it, lower-cased), and the total size of keys and values at most 256 KiB
// (checked when every value is known).
type annotationsValidator struct{}

func (annotationsValidator) Description(context.Context) string {
	return "keys must be Kubernetes annotation keys (prefix/name); keys and values together at most 256 KiB"
}
func (v annotationsValidator) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (annotationsValidator) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	elems := req.ConfigValue.Elements()
	known := map[string]string{}
	complete := true
	for _, k := range sortedKeys(elems) {
		if errs := validation.IsQualifiedName(strings.ToLower(k)); len(errs) > 0 {
			resp.Diagnostics.AddAttributeError(req.Path.AtMapKey(k), "Invalid Annotation Key",
				fmt.Sprintf("%s: %q is not a valid annotation key: %s.", req.Path, k, strings.Join(errs, "; ")))
		}
		if s, ok := elems[k].(types.String); ok && !s.IsUnknown() {
			known[k] = s.ValueString()
		} else {
			complete = false
		}
	}
	if complete {
		if err := apivalidation.ValidateAnnotationsSize(known); err != nil {
			resp.Diagnostics.AddAttributeError(req.Path, "Annotations Too Large", fmt.Sprintf("%s: %v.", req.Path, err))
		}
	}
}

// reservedKeyProblem says why key may not be written in labels or annotations, "" when it may:
// the reconciler writes its own under gantry.dev/ (and its labels win on the objects it creates),
// and selects what it created by app.kubernetes.io/managed-by=gantry-reconciler.
func reservedKeyProblem(key string) string {
	switch {
	case key == v1alpha1.LabelManagedBy:
		return "Gantry labels the objects it creates " + v1alpha1.LabelManagedBy + "=" + v1alpha1.ManagedBy +
			" (the reconciler watches only those), and its own label wins. Remove it"
	case strings.HasPrefix(key, "gantry.dev/"):
		return "the gantry.dev/ prefix is Gantry's own: the reconciler writes its labels and annotations there, and its own win. " +
			"Use another prefix, e.g. team.gantry.dev/"
	}
	return ""
}

// reservedKeys refuses the keys reservedKeyProblem names in a labels or annotations map.
type reservedKeys struct{}

func (reservedKeys) Description(context.Context) string {
	return "no key under gantry.dev/ and no app.kubernetes.io/managed-by: Gantry's own"
}
func (v reservedKeys) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (reservedKeys) ValidateMap(_ context.Context, req validator.MapRequest, resp *validator.MapResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for _, k := range sortedKeys(req.ConfigValue.Elements()) {
		if why := reservedKeyProblem(k); why != "" {
			at := req.Path.AtMapKey(k)
			resp.Diagnostics.AddAttributeError(at, "Reserved Key", fmt.Sprintf("%s: %s.", at, why))
		}
	}
}

// commandRunsSomething refuses a container command whose first element (the program) is "".
type commandRunsSomething struct{}

func (commandRunsSomething) Description(context.Context) string {
	return "the first element names the program to run"
}
func (v commandRunsSomething) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (commandRunsSomething) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() || len(req.ConfigValue.Elements()) == 0 {
		return
	}
	if s, ok := req.ConfigValue.Elements()[0].(types.String); ok && !s.IsUnknown() && !s.IsNull() && strings.TrimSpace(s.ValueString()) == "" {
		at := req.Path.AtListIndex(0)
		resp.Diagnostics.AddAttributeError(at, "Empty Command",
			fmt.Sprintf("%s: an empty string is no program to run: the container would fail to start. Name the program, or remove command to run the image's entrypoint.", at))
	}
}

// nonNegativeDurations checks the create/update/delete/read durations of a timeouts block:
// each known one must parse (e.g. 30s, 10m, 1h) and be zero or more.
type nonNegativeDurations struct{}

func (nonNegativeDurations) Description(context.Context) string {
	return "each timeout must be a non-negative duration such as 30s, 10m or 1h"
}
func (v nonNegativeDurations) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (nonNegativeDurations) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	attrs := req.ConfigValue.Attributes()
	for _, n := range sortedKeys(attrs) {
		s, ok := attrs[n].(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		d, err := time.ParseDuration(s.ValueString())
		switch {
		case err != nil || d < 0:
			resp.Diagnostics.AddAttributeError(req.Path.AtName(n), "Invalid Timeout",
				fmt.Sprintf("%s = %q is not a non-negative duration such as 30s, 10m or 1h.", req.Path.AtName(n), s.ValueString()))
		case d == 0:
			resp.Diagnostics.AddAttributeError(req.Path.AtName(n), "Invalid Timeout",
				fmt.Sprintf("%s = %q: a timeout of zero ends the wait before it starts; give a duration such as 30s, 10m or 1h.", req.Path.AtName(n), s.ValueString()))
		}
	}
}

// requestsWithinLimits checks a resources block: for every resource name in both requests
// and limits with known, valid quantities, the request is at most the limit (the API server
// rejects a Pod whose request exceeds its limit).
type requestsWithinLimits struct{}

func (requestsWithinLimits) Description(context.Context) string {
	return "each request must be at most the limit of the same resource"
}
func (v requestsWithinLimits) MarkdownDescription(ctx context.Context) string {
	return v.Description(ctx)
}

func (requestsWithinLimits) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	attrs := req.ConfigValue.Attributes()
	requests, limits := knownQuantities(attrs["requests"]), knownQuantities(attrs["limits"])
	for part, qs := range map[string]map[string]resource.Quantity{"requests": requests, "limits": limits} {
		for _, n := range sortedKeys(qs) {
			at := req.Path.AtName(part).AtMapKey(n)
			if why := resourceNameProblem(n); why != "" {
				resp.Diagnostics.AddAttributeError(at, "Invalid Resource Name", fmt.Sprintf("%s: %q %s.", at, n, why))
			}
			if q := qs[n]; q.Sign() < 0 {
				resp.Diagnostics.AddAttributeError(at, "Negative Quantity", fmt.Sprintf("%s = %q: a quantity must be zero or more.", at, q.String()))
			} else if why := quantityUnitProblem(n, q); why != "" {
				resp.Diagnostics.AddAttributeError(at, "Quantity in the Wrong Unit", fmt.Sprintf("%s = %q %s.", at, q.String(), why))
			}
		}
	}
	for _, n := range sortedKeys(requests) {
		l, ok := limits[n]
		r := requests[n]
		if !ok || r.Cmp(l) <= 0 {
			continue
		}
		at := req.Path.AtName("requests").AtMapKey(n)
		resp.Diagnostics.AddAttributeError(at, "Request Exceeds Limit",
			fmt.Sprintf("%s = %q is more than %s = %q: a request must be at most its limit.",
				at, r.String(), req.Path.AtName("limits").AtMapKey(n), l.String()))
	}
}

// resourceNameProblem says what is wrong with a container resource name, "" when nothing: a
// standard name (cpu, memory, ephemeral-storage, hugepages-<size>) or a name qualified by a
// domain (nvidia.com/gpu), not in the reserved kubernetes.io domains.
func resourceNameProblem(n string) string {
	switch {
	case n == "cpu" || n == "memory" || n == "ephemeral-storage" || strings.HasPrefix(n, "hugepages-"):
		return ""
	case !strings.Contains(n, "/"):
		return "is not a container resource: use cpu, memory, ephemeral-storage, hugepages-<size>, or a name with a domain such as nvidia.com/gpu"
	case len(validation.IsQualifiedName(n)) > 0:
		return "is not a container resource name: " + strings.Join(validation.IsQualifiedName(n), "; ")
	case strings.HasSuffix(strings.SplitN(n, "/", 2)[0], "kubernetes.io"):
		return "is in a domain Kubernetes reserves (kubernetes.io)"
	}
	return ""
}

// quantityUnitProblem says what is wrong with quantity q of resource name, "" when nothing:
// memory in thousandths of a byte ("500m"), CPUs with a binary suffix ("1Ki" is 1024 CPUs).
func quantityUnitProblem(name string, q resource.Quantity) string {
	switch {
	case name == "memory" && q.MilliValue()%1000 != 0:
		return fmt.Sprintf("is %s bytes: 'm' means thousandths. Memory is whole bytes: write e.g. \"500Mi\" or \"500M\"",
			strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64))
	case name == "cpu" && q.Format == resource.BinarySI:
		return fmt.Sprintf("is %s CPUs: Ki, Mi and Gi multiply by powers of 1024. Write CPUs as cores or millicores, e.g. \"1\" or \"500m\"",
			strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64))
	}
	return ""
}

// knownQuantities is the entries of a map of quantities that are known and parse.
func knownQuantities(v attr.Value) map[string]resource.Quantity {
	m, ok := v.(types.Map)
	if !ok || m.IsNull() || m.IsUnknown() {
		return nil
	}
	out := map[string]resource.Quantity{}
	for k, e := range m.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if q, err := resource.ParseQuantity(s.ValueString()); err == nil {
			out[k] = q
		}
	}
	return out
}

// wholeNumberType is the type of every Int64 attribute: basetypes.Int64Type, except that a
// number with a fractional part (port = 9090.5) is reported as an attribute error naming the
// attribute and the value, where the framework's own conversion fails with "Value
// %!s(*big.Float=9090.5) is not an integer" (basetypes.Int64Type.ValueFromTerraform formats a
// *big.Float with %s). Values are basetypes.Int64Value, so models keep types.Int64.
type wholeNumberType struct{ basetypes.Int64Type }

// Equal: a wholeNumberType equals itself and basetypes.Int64Type (its values' type).
func (t wholeNumberType) Equal(o attr.Type) bool {
	switch o.(type) {
	case wholeNumberType, basetypes.Int64Type:
		return true
	}
	return false
}

func (t wholeNumberType) ValueFromTerraform(ctx context.Context, in tftypes.Value) (attr.Value, error) {
	if in.IsKnown() && !in.IsNull() {
		var f *big.Float
		if err := in.As(&f); err == nil && f != nil && !f.IsInt() {
			return fractionalNumber{Int64Value: basetypes.NewInt64Unknown(), text: f.Text('g', -1)}, nil
		}
		if f != nil && f.IsInt() {
			if _, acc := f.Int64(); acc != big.Exact {
				return fractionalNumber{Int64Value: basetypes.NewInt64Unknown(), text: f.Text('g', -1), tooLarge: true}, nil
			}
		}
	}
	return t.Int64Type.ValueFromTerraform(ctx, in)
}

// fractionalNumber is what wholeNumberType reads for a number with a fractional part, or
// (tooLarge) one outside the 64-bit integer range (the framework's own message for 1e30 was
// "Value %!s(*big.Float=1e+30) ..."): its ValidateAttribute reports it, so validation stops
// before any model is read.
type fractionalNumber struct {
	basetypes.Int64Value
	text     string
	tooLarge bool
}

func (v fractionalNumber) ValidateAttribute(_ context.Context, req xattr.ValidateAttributeRequest, resp *xattr.ValidateAttributeResponse) {
	if v.tooLarge {
		resp.Diagnostics.AddAttributeError(req.Path, "Number Out of Range",
			fmt.Sprintf("%s = %s: this attribute takes a whole number from %d to %d; this one is too large to hold.", req.Path, v.text, math.MinInt64, math.MaxInt64))
		return
	}
	resp.Diagnostics.AddAttributeError(req.Path, "Invalid Whole Number",
		fmt.Sprintf("%s = %s: this attribute takes a whole number (an integer such as 1 or 9090), not a fraction.", req.Path, v.text))
}

// exactlyOneOf requires exactly one of the attribute it is on and the attributes others
// match (e.g. path.MatchRelative().AtParent().AtName("config_map_key_ref")) to be set; the
// error names every one of them by its resolved path ("env_from[0].secret_key_ref and
// env_from[0].config_map_key_ref"), where the framework's ExactlyOneOf names only the
// expressions it was given. Nothing is checked while any of them is unknown.
// With noneWith, none may be set while an attribute it matches is set (e.g. operator_keys'
// remote_signer, which stands for secret_name).
type exactlyOneOf struct{ others, noneWith []path.Expression }

func exactlyOne(others ...path.Expression) exactlyOneOf { return exactlyOneOf{others: others} }

// orNoneWith is v allowing none of its attributes while one matched by alt is set.
func (v exactlyOneOf) orNoneWith(alt ...path.Expression) exactlyOneOf {
	v.noneWith = alt
	return v
}

// pathMatches is config.PathMatches(selfExpr.Merge(e)) (selfExpr: the validated attribute's
// path as an expression), answered without walking the configuration when e names a sibling,
// path.MatchRelative().AtParent().AtName(name): the walk costs about a third of a workspace's
// validation on every plan, and a sibling's parent is the validated attribute's, which the
// framework validates only when it is set (so the walk would find the sibling itself).
func pathMatches(ctx context.Context, config tfsdk.Config, selfExpr, e path.Expression) (path.Paths, diag.Diagnostics) {
	if steps := e.Steps(); len(steps) == 2 {
		if name, ok := steps[1].(path.ExpressionStepAttributeNameExact); ok && path.MatchRelative().AtParent().AtName(string(name)).Equal(e) {
			if p, ok := exactPath(selfExpr.Merge(e).Resolve()); ok {
				return path.Paths{p}, nil
			}
		}
	}
	return config.PathMatches(ctx, selfExpr.Merge(e))
}

// exactPath is the path a resolved expression of exact steps (names, list indexes, map keys)
// stands for; false when a step matches more than one (any element, a set value, a parent).
func exactPath(e path.Expression) (path.Path, bool) {
	p := path.Empty()
	for _, st := range e.Steps() {
		switch st := st.(type) {
		case path.ExpressionStepAttributeNameExact:
			p = p.AtName(string(st))
		case path.ExpressionStepElementKeyIntExact:
			p = p.AtListIndex(int(st))
		case path.ExpressionStepElementKeyStringExact:
			p = p.AtMapKey(string(st))
		default:
			return path.Empty(), false
		}
	}
	return p, len(p.Steps()) > 0
}

// anySet reports whether an attribute the expressions match (relative to selfExpr) is set;
// known is false when one of them is unknown.
func anySet(ctx context.Context, config tfsdk.Config, selfExpr path.Expression, exprs []path.Expression, diags *diag.Diagnostics) (set, known bool) {
	for _, e := range exprs {
		matched, d := pathMatches(ctx, config, selfExpr, e)
		diags.Append(d...)
		for _, mp := range matched {
			var val attr.Value
			diags.Append(config.GetAttribute(ctx, mp, &val)...)
			switch {
			case val == nil:
			case val.IsUnknown():
				return false, false
			case !val.IsNull():
				set = true
			}
		}
	}
	return set, true
}

func (v exactlyOneOf) Description(context.Context) string {
	return "exactly one of this attribute and " + path.Expressions(v.others).String() + " must be set"
}
func (v exactlyOneOf) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v exactlyOneOf) check(ctx context.Context, config tfsdk.Config, self path.Path, selfExpr path.Expression, selfValue attr.Value, diags *diag.Diagnostics) {
	if selfValue.IsUnknown() {
		return
	}
	all := []path.Path{self}
	var set []path.Path
	if !selfValue.IsNull() {
		set = append(set, self)
	}
	for _, e := range v.others {
		matched, d := pathMatches(ctx, config, selfExpr, e)
		diags.Append(d...)
		for _, mp := range matched {
			var val attr.Value
			diags.Append(config.GetAttribute(ctx, mp, &val)...)
			if val == nil {
				continue
			}
			if val.IsUnknown() {
				return
			}
			all = append(all, mp)
			if !val.IsNull() {
				set = append(set, mp)
			}
		}
	}
	names := joinPaths(all, " or ")
	if len(set) == 0 && len(v.noneWith) > 0 {
		if alt, known := anySet(ctx, config, selfExpr, v.noneWith, diags); alt || !known {
			return
		}
	}
	switch len(set) {
	case 1:
	case 0:
		diags.AddAttributeError(self, "Invalid Attribute Combination", fmt.Sprintf("Set exactly one of %s: none is set.", names))
	default:
		diags.AddAttributeError(self, "Invalid Attribute Combination", fmt.Sprintf("Set exactly one of %s, not %s.", names, joinPaths(set, " and ")))
	}
}

func (v exactlyOneOf) ValidateObject(ctx context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	v.check(ctx, req.Config, req.Path, req.PathExpression, req.ConfigValue, &resp.Diagnostics)
}
func (v exactlyOneOf) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	v.check(ctx, req.Config, req.Path, req.PathExpression, req.ConfigValue, &resp.Diagnostics)
}
func (v exactlyOneOf) ValidateString(ctx context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	v.check(ctx, req.Config, req.Path, req.PathExpression, req.ConfigValue, &resp.Diagnostics)
}
func (v exactlyOneOf) ValidateInt64(ctx context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	v.check(ctx, req.Config, req.Path, req.PathExpression, req.ConfigValue, &resp.Diagnostics)
}

// joinPaths names paths in a message, e.g. "performer_names or performer_selector".
func joinPaths(ps []path.Path, sep string) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	sort.Strings(s)
	return strings.Join(s, sep)
}
