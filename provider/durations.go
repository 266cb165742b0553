package provider

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// durationValidator accepts a Go duration ("30s", "5m", "1h") of at least min (0: any
// non-negative one).
type durationValidator struct{ min time.Duration }

func (v durationValidator) Description(context.Context) string {
	if v.min > 0 {
		return "value must be a duration of at least " + v.min.String() + " such as 30s, 5m or 1h"
	}
	return "value must be a duration such as 30s, 5m or 1h"
}

func (v durationValidator) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v durationValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	d, err := time.ParseDuration(req.ConfigValue.ValueString())
	switch {
	case err != nil || d < 0:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Duration", fmt.Sprintf("%s = %q is not a non-negative duration such as 30s, 5m or 1h.", req.Path, req.ConfigValue.ValueString()))
	case d < v.min:
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid Duration", fmt.Sprintf("%s = %q is shorter than %s.", req.Path, req.ConfigValue.ValueString(), v.min))
	}
}

// metaDuration maps an optional duration attribute (named attr in the error) to a spec
// duration: nil when null or unknown. Errors: not a Go duration (normally caught at plan by
// the attribute's validator).
func metaDuration(v types.String, attr string) (*metav1.Duration, error) {
	if v.IsNull() || v.IsUnknown() {
		return nil, nil
	}
	d, err := time.ParseDuration(v.ValueString())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", attr, err)
	}
	return &metav1.Duration{Duration: d}, nil
}

// durationString keeps the user's spelling ("60s" vs "1m0s") when it means the same duration.
func durationString(d time.Duration, prior types.String) types.String {
	if !prior.IsNull() && !prior.IsUnknown() {
		if pd, err := time.ParseDuration(prior.ValueString()); err == nil && pd == d {
			return prior
		}
	}
	return types.StringValue(d.String())
}
