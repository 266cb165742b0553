// Command terraform-provider-gantry is the Gantry Terraform provider
// (registry.terraform.io/gantry-dev/gantry). It serves protocol 6.0, matching
// terraform-registry-manifest.json.
package main

import (
	"flag"
	"log"
	"os"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/gantry-dev/terraform-provider-gantry/provider"
)

// version is set at build time with -ldflags "-X main.version=..."; "dev" otherwise.
var version = "dev"

// parentCheckInterval is how often the provider checks that the CLI that started it is alive.
const parentCheckInterval = time.Second

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	if !debug {
		go exitWithParent(os.Getppid(), parentCheckInterval)
	}
	// The framework's server, wrapped so that a destroy is never blocked by the configuration
	// (provider.DestroyTolerant).
	server := func() tfprotov6.ProviderServer {
		return provider.DestroyTolerant(providerserver.NewProtocol6(provider.New(version)())(), nil)
	}
	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	if err := tf6server.Serve("registry.terraform.io/gantry-dev/gantry", server, opts...); err != nil {
		log.Fatal(err.Error())
	}
}

// exitWithParent ends the process once its parent — the terraform or tofu process that
// started it as a go-plugin server — is gone. A CLI killed with SIGKILL (an OOM kill, a
// cancelled CI job) cannot stop its plugins; a provider that writes nothing to its stderr pipe
// afterwards (so gets no SIGPIPE) would be reparented and keep its sockets and API watches
// open until its own waits time out. The check is a change of the parent PID (on Unix an
// orphan is reparented to init or a subreaper), every interval; it does nothing when started
// by init itself (ppid 1). On Windows the parent PID never changes, so it is a no-op there.
func exitWithParent(ppid int, interval time.Duration) {
	if ppid <= 1 {
		return
	}
	for range time.Tick(interval) {
		if now := os.Getppid(); now != ppid {
			log.Printf("[WARN] terraform-provider-gantry: parent process %d is gone (parent is now %d); exiting", ppid, now)
			os.Exit(1)
		}
	}
}
