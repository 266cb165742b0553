package provider

// The UpgradeResourceState fast path: Terraform upgrades every instance's state before each
// plan, refresh and apply, even at the current schema version, and the framework's passthrough
// recomputes the schema's type each time (about 23% of the provider's CPU in a steady plan).
// planFastPath.UpgradeResourceState does the same passthrough with the type computed once and
// falls back to the framework on any reason in upgradeDecisions. fastpath_upgrade_test.go and
// its fuzz target hold it to the framework's answer byte for byte.
// Every fallback reason: FASTPATHS.md.

import (
	"context"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// fbVersion is the upgrade fast path's own fallback reason (the others are the plan's).
const fbVersion = "version"

// upgradeDecisions lists every decision of the upgrade fast path, in the order it checks them.
var upgradeDecisions = []string{fbType, fbVersion, fbEncoding, fbDecode, planAnswered}

// upgradeOpts are the framework passthrough's decoding options: attributes the schema no
// longer has are dropped.
var upgradeOpts = tfprotov6.UnmarshalOpts{ValueFromJSONOpts: tftypes.ValueFromJSONOpts{IgnoreUndefinedAttributes: true}}

// UpgradeResourceState answers a state already at the schema's version itself (see above);
// every other request reaches the framework.
func (f *planFastPath) UpgradeResourceState(ctx context.Context, req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.UpgradeResourceStateResponse, error) {
	if f.noUpgrade {
		return f.fullServer.UpgradeResourceState(ctx, req)
	}
	state, why := f.upgrade(req)
	f.upgradeCounts[why].Add(1)
	if why != planAnswered {
		return f.fullServer.UpgradeResourceState(ctx, req)
	}
	return &tfprotov6.UpgradeResourceStateResponse{UpgradedState: state}, nil
}

// upgrade returns the upgraded state of req and planAnswered, or nil and the fallback reason.
func (f *planFastPath) upgrade(req *tfprotov6.UpgradeResourceStateRequest) (*tfprotov6.DynamicValue, string) {
	if req == nil {
		return nil, fbType
	}
	t, ok := f.types[req.TypeName]
	switch {
	case !ok:
		return nil, fbType
	case req.Version != t.schema.GetVersion():
		return nil, fbVersion
	case req.RawState == nil || req.RawState.JSON == nil:
		return nil, fbEncoding
	}
	v, err := req.RawState.UnmarshalWithOpts(t.typ, upgradeOpts)
	if err != nil {
		return nil, fbDecode
	}
	dv, err := tfprotov6.NewDynamicValue(t.typ, v)
	if err != nil {
		return nil, fbDecode
	}
	return &dv, planAnswered
}

// upgradeDecisionCounts returns how many upgrades each decision took.
func (f *planFastPath) upgradeDecisionCounts() map[string]int64 {
	out := make(map[string]int64, len(f.upgradeCounts))
	for d, n := range f.upgradeCounts {
		out[d] = n.Load()
	}
	return out
}
