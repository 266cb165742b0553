// Package s3 stands in for Terraform's "s3" remote-state backend, a nested module that the Go
// module proxy's zip of github.com/hashicorp/terraform leaves out. The CLI built by
// tools/install.sh is used only with the local backend; configuring this one fails with
// "backend not available in this build".
package s3

import (
	"github.com/hashicorp/terraform/internal/backend"
	"github.com/hashicorp/terraform/internal/configs/configschema"
	"github.com/hashicorp/terraform/internal/states/statemgr"
	"github.com/hashicorp/terraform/internal/tfdiags"
	"github.com/zclconf/go-cty/cty"
)

// New returns a backend whose every operation fails with "backend not available in this build".
func New() backend.Backend { return unavailable{} }

type unavailable struct{}

func errDiags() tfdiags.Diagnostics {
	var d tfdiags.Diagnostics
	return d.Append(tfdiags.Sourceless(tfdiags.Error, "Backend not available",
		"The \"s3\" backend is not available in this build of Terraform (built by Gantry's tools/install.sh for tests)."))
}

func (unavailable) ConfigSchema() *configschema.Block                          { return &configschema.Block{} }
func (unavailable) PrepareConfig(v cty.Value) (cty.Value, tfdiags.Diagnostics) { return v, errDiags() }
func (unavailable) Configure(cty.Value) tfdiags.Diagnostics                    { return errDiags() }
func (unavailable) StateMgr(string) (statemgr.Full, tfdiags.Diagnostics)       { return nil, errDiags() }
func (unavailable) DeleteWorkspace(string, bool) tfdiags.Diagnostics           { return errDiags() }
func (unavailable) Workspaces() ([]string, tfdiags.Diagnostics)                { return nil, errDiags() }
