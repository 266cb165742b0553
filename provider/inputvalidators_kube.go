package provider

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework-validators/mapvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The Kubernetes rules withInputValidators adds by attribute name (the same name means the same
// Kubernetes field in every resource): image references, object names, tolerations, the
// bounds the CRDs put on maps and lists, and the int32 range of the CRDs' integers. Each is
// what the API server, the kubelet or the CRD would refuse at apply.

// imageAttributes are the string attributes that hold a container image reference.
var imageAttributes = map[string]bool{"image": true, "agent_image": true, "input_image": true, "output_image": true}

// objectNameAttributes are the string attributes that name a Kubernetes object by a DNS-1123
// subdomain (PriorityClass, RuntimeClass, ServiceAccount, Secret, ConfigMap).
var objectNameAttributes = map[string]bool{"priority_class_name": true, "runtime_class_name": true, "service_account_name": true}

// collectionLimits are the CRDs' maxProperties / maxItems of the maps and lists of these names
// (Scheduling's nodeSelector and tolerations, hardwareRequirements.customLabels, podLabels and
// podAnnotations, a package's dependsOn and config, an interrupt's services, a workspace's
// labelSelector and its expressions).
var collectionLimits = map[string]int{"node_selector": 64, "tolerations": 64, "additional_tolerations": 64, "custom_labels": 32,
	"pod_labels": 64, "pod_annotations": 64, "depends_on": 16, "config": 64, "services": 32, "label_selector": 32,
	"label_selector_expressions": 16}

// int64Attributes are the Int64 attributes whose Kubernetes field is an int64; every other one
// is an int32 in the CRD, and a larger number would wrap when written.
var int64Attributes = map[string]bool{"chain_id": true, "toleration_seconds": true}

// kubeValidators adds the rules above to attribute a named name; withInputValidatorsAttr calls
// it for every attribute at any depth.
func kubeValidators(name string, a schema.Attribute) schema.Attribute {
	switch t := a.(type) {
	case schema.StringAttribute:
		switch {
		case imageAttributes[name]:
			t.Validators = append(t.Validators, imageRef{})
		case objectNameAttributes[name]:
			t.Validators = append(t.Validators, dnsName{what: strings.ReplaceAll(strings.TrimSuffix(name, "_name"), "_", " ") + " name"})
		}
		return t
	case schema.ListAttribute:
		if name == "image_pull_secrets" {
			t.Validators = append(t.Validators, listvalidator.ValueStringsAre(dnsName{what: "Secret name"}))
		}
		if n, ok := collectionLimits[name]; ok {
			t.Validators = append(t.Validators, listvalidator.SizeAtMost(n))
		}
		return t
	case schema.MapAttribute:
		if n, ok := collectionLimits[name]; ok {
			t.Validators = append(t.Validators, mapvalidator.SizeAtMost(n))
		}
		return t
	case schema.ListNestedAttribute:
		if n, ok := collectionLimits[name]; ok {
			t.Validators = append(t.Validators, listvalidator.SizeAtMost(n))
		}
		if name == "tolerations" || name == "additional_tolerations" {
			t.NestedObject.Validators = append(t.NestedObject.Validators, tolerationRules{})
		}
		return t
	case schema.SingleNestedAttribute:
		if name == "secret_key_ref" || name == "config_map_key_ref" {
			if n, ok := t.Attributes["name"].(schema.StringAttribute); ok {
				n.Validators = append(n.Validators, dnsName{what: "Secret or ConfigMap name"})
				t.Attributes["name"] = n
			}
			if k, ok := t.Attributes["key"].(schema.StringAttribute); ok {
				k.Validators = append(k.Validators, configMapKey{})
				t.Attributes["key"] = k
			}
		}
		return t
	case schema.Int64Attribute:
		if !int64Attributes[name] {
			t.Validators = append(t.Validators, int64validator.Between(math.MinInt32, math.MaxInt32))
		}
		return t
	}
	return a
}

// imageRef checks a container image reference as the kubelet parses it: [registry/]repository
// [:tag][@digest], lower-case repository, no spaces or scheme, at most 512 characters.
type imageRef struct{}

func (imageRef) Description(context.Context) string {
	return "a container image reference: [registry/]repository[:tag][@sha256:digest]"
}
func (v imageRef) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (imageRef) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	if why := imageRefError(s); why != "" {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Image Reference",
			fmt.Sprintf("%s: %q is not a container image reference ([registry/]repository[:tag][@sha256:digest], repository in lower case, "+
				"no scheme or spaces), so the kubelet could not pull it: %s.", req.Path, s, why))
	}
}

// imageRefError says why s is not a container image reference as the kubelet parses it (too
// long, or go-containerregistry's parse error); "" when it is one.
func imageRefError(s string) string {
	if len(s) > 512 {
		return fmt.Sprintf("it is %d characters long; at most 512", len(s))
	}
	if _, err := name.ParseReference(s); err != nil {
		return err.Error()
	}
	return ""
}

// dnsName checks a Kubernetes object name that is a DNS-1123 subdomain.
type dnsName struct{ what string }

func (v dnsName) Description(context.Context) string {
	return v.what + ": a DNS-1123 subdomain (lower-case letters, digits, '-' and '.')"
}
func (v dnsName) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v dnsName) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := validation.IsDNS1123Subdomain(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Object Name",
			fmt.Sprintf("%s: %q is not a valid %s: %s.", req.Path, req.ConfigValue.ValueString(), v.what, strings.Join(errs, "; ")))
	}
}

// configMapKey checks a Secret or ConfigMap data key.
type configMapKey struct{}

func (configMapKey) Description(context.Context) string {
	return "a Secret or ConfigMap key: letters, digits, '-', '_' and '.'"
}
func (v configMapKey) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (configMapKey) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if errs := validation.IsConfigMapKey(req.ConfigValue.ValueString()); len(errs) > 0 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Key",
			fmt.Sprintf("%s: %q is not a valid Secret or ConfigMap key: %s.", req.Path, req.ConfigValue.ValueString(), strings.Join(errs, "; ")))
	}
}

// tolerationRules checks one toleration as the API server does: a label-key key (or none, with
// operator Exists), Exists takes no value, a value is a label value, tolerationSeconds only with
// effect NoExecute.
type tolerationRules struct{}

func (tolerationRules) Description(context.Context) string {
	return "a valid Kubernetes toleration"
}
func (v tolerationRules) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (tolerationRules) ValidateObject(_ context.Context, req validator.ObjectRequest, resp *validator.ObjectResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	attrs := req.ConfigValue.Attributes()
	str := func(n string) (string, bool) {
		s, ok := attrs[n].(types.String)
		if !ok || s.IsNull() {
			return "", ok && s.IsNull()
		}
		return s.ValueString(), !s.IsUnknown()
	}
	key, kok := str("key")
	op, ook := str("operator")
	value, vok := str("value")
	effect, eok := str("effect")
	fail := func(at, msg string) {
		resp.Diagnostics.AddAttributeError(req.Path.AtName(at), "Invalid Toleration", fmt.Sprintf("%s: %s.", req.Path.AtName(at), msg))
	}
	if kok && key != "" {
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			fail("key", fmt.Sprintf("%q is not a valid taint key: %s", key, strings.Join(errs, "; ")))
		}
	}
	if kok && ook && key == "" && op != "Exists" {
		fail("operator", "a toleration without a key must have operator \"Exists\" (it then tolerates every taint)")
	}
	if ook && vok && op == "Exists" && value != "" {
		fail("value", fmt.Sprintf("operator \"Exists\" takes no value (got %q): remove value, or use operator \"Equal\"", value))
	}
	if vok && value != "" {
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			fail("value", fmt.Sprintf("%q is not a valid taint value: %s", value, strings.Join(errs, "; ")))
		}
	}
	if ts, ok := attrs["toleration_seconds"].(types.Int64); ok && !ts.IsNull() && !ts.IsUnknown() && eok && effect != "NoExecute" {
		fail("toleration_seconds", fmt.Sprintf("toleration_seconds applies only to effect \"NoExecute\" (effect is %q)", effect))
	}
}

// endpointPort checks the port of a host:port endpoint or URL is from 1 to 65535 and, when
// schemes is set, that a scheme it names is one of them (the gRPC resolvers the executor
// dials: dns:///host:port, grpcs://host:port, ...).
type endpointPort struct{ schemes []string }

func (v endpointPort) Description(context.Context) string {
	return "a port from 1 to 65535"
}
func (v endpointPort) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v endpointPort) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	s := req.ConfigValue.ValueString()
	rest := s
	if scheme, after, ok := strings.Cut(s, "://"); ok {
		rest = strings.TrimLeft(after, "/")
		if len(v.schemes) > 0 && !slices.Contains(v.schemes, scheme) {
			resp.Diagnostics.AddAttributeError(req.Path, "Invalid Endpoint",
				fmt.Sprintf("%s: %q: the executor cannot dial scheme %q; use host:port or one of %s://host:port.", req.Path, s, scheme, strings.Join(v.schemes, ", ")))
			return
		}
	}
	host := rest
	if i := strings.IndexAny(host, "/?#"); i >= 0 {
		host = host[:i]
	}
	i := strings.LastIndex(host, ":")
	if i < 0 || strings.HasSuffix(host, "]") {
		return // no port: the scheme's default
	}
	if port, err := strconv.Atoi(host[i+1:]); err != nil || port < 1 || port > 65535 {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Endpoint",
			fmt.Sprintf("%s: %q: port %q is not a number from 1 to 65535.", req.Path, s, host[i+1:]))
	}
}
