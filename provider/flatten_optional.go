package provider

import "github.com/hashicorp/terraform-plugin-framework/types"

// The flatten functions' rule for optional attributes: a value the cluster does not have
// ("", 0, false, an empty map or list) is null unless prior (the state or plan being
// refreshed) held the empty value, so an unchanged refresh equals prior exactly.

func optString(v string, prior types.String) types.String {
	if v == "" {
		if !prior.IsNull() && !prior.IsUnknown() && prior.ValueString() == "" {
			return types.StringValue("")
		}
		return types.StringNull()
	}
	return types.StringValue(v)
}

func optStringPtr(v *string, prior types.String) types.String {
	if v == nil {
		return optString("", prior)
	}
	if *v == "" {
		return optString("", prior)
	}
	return types.StringValue(*v)
}

func optInt64(v int64, prior types.Int64) types.Int64 {
	if v == 0 {
		if !prior.IsNull() && !prior.IsUnknown() && prior.ValueInt64() == 0 {
			return types.Int64Value(0)
		}
		return types.Int64Null()
	}
	return types.Int64Value(v)
}

func optBool(v bool, prior types.Bool) types.Bool {
	if !v {
		if !prior.IsNull() && !prior.IsUnknown() && !prior.ValueBool() {
			return types.BoolValue(false)
		}
		return types.BoolNull()
	}
	return types.BoolValue(true)
}

func optMap(v, prior map[string]string) map[string]string {
	if len(v) == 0 {
		if prior != nil && len(prior) == 0 {
			return map[string]string{}
		}
		return nil
	}
	return cloneMap(v)
}

func optList(v, prior []string) []string {
	if len(v) == 0 {
		if prior != nil && len(prior) == 0 {
			return []string{}
		}
		return nil
	}
	return append([]string(nil), v...)
}
