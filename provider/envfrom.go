package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
)

// env_from shared by gantry_performer and gantry_package_set: the schema and model of the
// env_from attribute and its mapping to and from the API's []v1alpha1.EnvFromRef.

type envFromModel struct {
	Name            types.String `tfsdk:"name"`
	SecretKeyRef    *keyRefModel `tfsdk:"secret_key_ref"`
	ConfigMapKeyRef *keyRefModel `tfsdk:"config_map_key_ref"`
}

type keyRefModel struct {
	Name types.String `tfsdk:"name"`
	Key  types.String `tfsdk:"key"`
}

// envFromAttribute is the schema of the env_from attribute; where names the namespace the
// Secrets and ConfigMaps are read from, e.g. "the performer's namespace".
func envFromAttribute(where string) schema.ListNestedAttribute {
	keyRef := func(what string) schema.SingleNestedAttribute {
		return schema.SingleNestedAttribute{
			Optional:            true,
			MarkdownDescription: fmt.Sprintf("A key of a %s in %s. Exactly one of `secret_key_ref` and `config_map_key_ref`.", what, where),
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{
					Required:            true,
					MarkdownDescription: fmt.Sprintf("Name of the %s.", what),
					Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
				},
				"key": schema.StringAttribute{
					Required:            true,
					MarkdownDescription: "Key within it.",
					Validators:          []validator.String{stringvalidator.LengthAtLeast(1)},
				},
			},
		}
	}
	secretRef := keyRef("Secret")
	secretRef.Validators = []validator.Object{exactlyOne(path.MatchRelative().AtParent().AtName("config_map_key_ref"))}
	return schema.ListNestedAttribute{
		Optional:            true,
		MarkdownDescription: fmt.Sprintf("Environment variables read from a key of a Secret or a ConfigMap in %s. Names must be unique.", where),
		NestedObject: schema.NestedAttributeObject{
			Attributes: map[string]schema.Attribute{
				"name": schema.StringAttribute{
					Required:            true,
					MarkdownDescription: "Name of the environment variable.",
					Validators:          []validator.String{stringvalidator.RegexMatches(envName, "must be a C identifier: letters, digits and '_', not starting with a digit")},
				},
				"secret_key_ref":     secretRef,
				"config_map_key_ref": keyRef("ConfigMap"),
			},
		},
	}
}

// expandEnvFrom maps the env_from attribute to the API's references (nil when empty).
func expandEnvFrom(in []envFromModel) []v1alpha1.EnvFromRef {
	var out []v1alpha1.EnvFromRef
	for _, e := range in {
		ref := v1alpha1.EnvFromRef{Name: e.Name.ValueString()}
		if e.SecretKeyRef != nil {
			ref.SecretKeyRef = &v1alpha1.KeyRef{Name: e.SecretKeyRef.Name.ValueString(), Key: e.SecretKeyRef.Key.ValueString()}
		}
		if e.ConfigMapKeyRef != nil {
			ref.ConfigMapKeyRef = &v1alpha1.KeyRef{Name: e.ConfigMapKeyRef.Name.ValueString(), Key: e.ConfigMapKeyRef.Key.ValueString()}
		}
		out = append(out, ref)
	}
	return out
}

// flattenEnvFrom maps the API's references to the env_from attribute: null when there are
// none, unless prior (the state's value) was an empty list.
func flattenEnvFrom(in []v1alpha1.EnvFromRef, prior []envFromModel) []envFromModel {
	var out []envFromModel
	for _, e := range in {
		em := envFromModel{Name: types.StringValue(e.Name)}
		if e.SecretKeyRef != nil {
			em.SecretKeyRef = &keyRefModel{Name: types.StringValue(e.SecretKeyRef.Name), Key: types.StringValue(e.SecretKeyRef.Key)}
		}
		if e.ConfigMapKeyRef != nil {
			em.ConfigMapKeyRef = &keyRefModel{Name: types.StringValue(e.ConfigMapKeyRef.Name), Key: types.StringValue(e.ConfigMapKeyRef.Key)}
		}
		out = append(out, em)
	}
	if out == nil && prior != nil {
		out = []envFromModel{}
	}
	return out
}
