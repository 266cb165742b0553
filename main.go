// Command terraform-provider-gantry is the Gantry Terraform provider
// (registry.terraform.io/gantry-dev/gantry). It serves protocol 6.0, matching
// terraform-registry-manifest.json.
package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/gantry-dev/terraform-provider-gantry/provider"
)

// version is set at build time with -ldflags "-X main.version=..."; "dev" otherwise.
var version = "dev"

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version), providerserver.ServeOpts{
		Address: "registry.terraform.io/gantry-dev/gantry",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
