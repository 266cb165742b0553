package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/ephemeral"
	"github.com/hashicorp/terraform-plugin-framework/provider"
)

var _ provider.ProviderWithEphemeralResources = (*gantryProvider)(nil)

// EphemeralResources are the ephemeral resources of Terraform >= 1.10 and OpenTofu >= 1.11
// (ephemeral_<name>.go): opened for the length of one plan or apply and closed at its end,
// never stored in plan or state.
func (p *gantryProvider) EphemeralResources(context.Context) []func() ephemeral.EphemeralResource {
	return []func() ephemeral.EphemeralResource{
		NewPortForwardEphemeralResource,
	}
}
