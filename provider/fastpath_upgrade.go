package provider

// The UpgradeResourceState fast path (issue 37 item 2): Terraform calls UpgradeResourceState
// for every resource instance in state before each plan, refresh and apply, also when the
// state's schema version is the resource's current one. terraform-plugin-framework then runs
// its passthrough (fwserver/server_upgraderesourcestate.go: the JSON state decoded with the
// schema's type, IgnoreUndefinedAttributes) and encodes the result as MessagePack; on the way
// it instantiates the resource, looks its schema up and computes the schema's Terraform type
// twice (about 0.8 ms per performer; 23% of the provider's CPU in a steady no-op plan).
//
// planFastPath.UpgradeResourceState does the same passthrough with the type computed once
// (fastPlanType.typ) and answers itself only when that is certainly the framework's answer:
// the upgraded state, no diagnostics. It falls back to the framework (the reason is counted,
// see planFastPath.upgradeDecisionCounts) when:
//
//   - type: the resource type is not one the fast path knows (newFastPlanType);
//   - version: the state's schema version is not the schema's (an upgrader runs, or the
//     framework reports the missing one);
//   - encoding: the raw state has no JSON (a flatmap state of Terraform 0.11, or none);
//   - decode: the JSON does not decode with the schema's type (the framework's "Unable to
//     Read Previously Saved State" error), or the value does not encode.
//
// The differential test (fastpath_upgrade_test.go) and its fuzz target hold the fast path to
// the framework's answer byte for byte.

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
