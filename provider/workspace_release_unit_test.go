package provider

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
)

// tuning.release_nodes_on_success warns at plan, naming the attribute, when the workspace
// provisions no nodes to release (no instance_type, or provision_nodes = false); with nodes to
// release, unset, false or unknown it says nothing.
func TestReleaseNodesValidator(t *testing.T) {
	ctx := context.Background()
	var sr resource.SchemaResponse
	NewWorkspaceResource().Schema(ctx, resource.SchemaRequest{}, &sr)
	typ := sr.Schema.Type().TerraformType(ctx)
	tun := func(release any) map[string]any {
		return map[string]any{"method": "lora", "preset": "phi-3-mini-4k-instruct", "input_image": "d", "output_image": "o", "release_nodes_on_success": release}
	}
	it := map[string]any{"count": 1, "instance_type": "Standard_NC24ads_A100_v4"}
	for _, c := range []struct {
		name     string
		resource map[string]any
		release  any
		want     string // "" for no diagnostic
	}{
		{"no instance type", map[string]any{"count": 1, "gpu_count": 1}, true, "resource.instance_type is not set"},
		{"provisioning off", with(it, "provision_nodes", false), true, "resource.provision_nodes = false"},
		{"nodes to release", it, true, ""},
		{"provisioning on explicitly", with(it, "provision_nodes", true), true, ""},
		{"flag false", map[string]any{"count": 1, "gpu_count": 1}, false, ""},
		{"flag unset", map[string]any{"count": 1, "gpu_count": 1}, nil, ""},
		{"flag unknown", map[string]any{"count": 1, "gpu_count": 1}, tfUnknown{}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := tfv(typ, map[string]any{"name": "tune", "resource": c.resource, "tuning": tun(c.release)})
			var resp resource.ValidateConfigResponse
			releaseNodesValidator{}.ValidateResource(ctx, resource.ValidateConfigRequest{Config: tfsdk.Config{Raw: raw, Schema: sr.Schema}}, &resp)
			if c.want == "" {
				if len(resp.Diagnostics) != 0 {
					t.Fatalf("diagnostics %v", resp.Diagnostics)
				}
				return
			}
			if len(resp.Diagnostics) != 1 || resp.Diagnostics.WarningsCount() != 1 {
				t.Fatalf("want one warning, got %v", resp.Diagnostics)
			}
			d := resp.Diagnostics[0]
			if !strings.Contains(d.Detail(), "tuning.release_nodes_on_success = true") || !strings.Contains(d.Detail(), c.want) {
				t.Fatalf("warning %q: %q", d.Summary(), d.Detail())
			}
		})
	}
}
