package provider

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

type chainModel struct {
	Name               types.String `tfsdk:"name"`
	ChainID            types.Int64  `tfsdk:"chain_id"`
	RPCURL             types.String `tfsdk:"rpc_url"`
	TaskMailboxAddress types.String `tfsdk:"task_mailbox_address"`
}

// checkUniqueChains reports a chain (of the list at p) whose name or chain_id an earlier one
// has, on that attribute and naming both elements; unknown values are skipped.
func checkUniqueChains(p path.Path, chains []chainModel, diags *diag.Diagnostics) {
	names, ids := map[string]int{}, map[int64]int{}
	for i, c := range chains {
		if !c.Name.IsUnknown() && !c.Name.IsNull() {
			if j, ok := names[c.Name.ValueString()]; ok {
				diags.AddAttributeError(p.AtListIndex(i).AtName("name"), "Duplicate Chain Name",
					fmt.Sprintf("chains[%d] and chains[%d] are both named %q.", j, i, c.Name.ValueString()))
			}
			names[c.Name.ValueString()] = i
		}
		if !c.ChainID.IsUnknown() && !c.ChainID.IsNull() {
			if j, ok := ids[c.ChainID.ValueInt64()]; ok {
				diags.AddAttributeError(p.AtListIndex(i).AtName("chain_id"), "Duplicate Chain ID",
					fmt.Sprintf("chains[%d] and chains[%d] both have chain_id %d.", j, i, c.ChainID.ValueInt64()))
			}
			ids[c.ChainID.ValueInt64()] = i
		}
	}
}
