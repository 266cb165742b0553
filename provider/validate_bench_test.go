package provider

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// BenchmarkValidateResourceConfig: the framework's validation of one configuration of each
// resource type (the plan corpus's "unchanged, defaults unset" configuration), which Terraform
// runs for every resource on every plan: the framework's schema walk and Gantry's validators.
func BenchmarkValidateResourceConfig(b *testing.B) {
	up := newUpgradePair(b)
	for _, k := range readKinds() {
		typ := up.types[k.typ]
		cfg := dv(b, typ, tfv(typ, planConfig(k.rows(), "unchanged, defaults unset")))
		req := &tfprotov6.ValidateResourceConfigRequest{TypeName: k.typ, Config: cfg}
		b.Run(k.typ, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r, err := up.plain.ValidateResourceConfig(context.Background(), req)
				if err != nil || diagsHaveError(r.Diagnostics) {
					b.Fatal(err, diagsString(r.Diagnostics))
				}
			}
		})
	}
}

// planConfig returns the configuration of the row called name in rows.
func planConfig(rows []planRow, name string) map[string]any {
	for _, r := range rows {
		if r.name == name {
			return r.config
		}
	}
	panic("no plan row " + name)
}
