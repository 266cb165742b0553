// Command terraform-provider-gantry is the Gantry Terraform provider
// (registry.terraform.io/gantry-dev/gantry). It serves protocol 6.0, matching
// terraform-registry-manifest.json.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net"
	"net/http"
	_ "net/http/pprof" // served only when GANTRY_PROVIDER_PPROF is set
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/gantry-dev/terraform-provider-gantry/provider"
)

// version is set at build time with -ldflags "-X main.version=..."; "dev" otherwise.
var version = "dev"

// envPprof names the variable that turns on net/http/pprof in the provider process: an
// address such as 127.0.0.1:6061 (loopback only; the benchmarks' profiles are taken this way).
// Terraform may start several provider processes in one run: the ones that find the address
// taken serve none.
const envPprof = "GANTRY_PROVIDER_PPROF"

// envProfileDir names the variable that makes every provider process write, when Terraform
// stops it, its CPU profile of its whole life and its heap profile (allocations since start) to
// <dir>/cpu-<pid>.pprof and <dir>/heap-<pid>.pprof (`go tool pprof -top`), and the fast paths'
// decisions (provider.FastPathDecisions: {"plan": {decision: count}, "read": {...}}) to
// <dir>/fastpath-<pid>.json.
const envProfileDir = "GANTRY_PROVIDER_PROFILE_DIR"

// profileTo starts the CPU profile into dir and returns what writes both profiles; dir "" (or a
// profile that cannot start) returns a no-op. Failures are logged (TF_LOG) and skipped.
func profileTo(dir string) func() {
	if dir == "" {
		return func() {}
	}
	pid := strconv.Itoa(os.Getpid())
	cpu, err := os.Create(filepath.Join(dir, "cpu-"+pid+".pprof"))
	if err == nil {
		err = pprof.StartCPUProfile(cpu)
	}
	if err != nil {
		log.Printf("[WARN] terraform-provider-gantry: %s: %v", envProfileDir, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = cpu.Close()
		if heap, err := os.Create(filepath.Join(dir, "heap-"+pid+".pprof")); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(heap, 0)
			_ = heap.Close()
		}
		if b, err := json.Marshal(provider.FastPathDecisions()); err == nil {
			_ = os.WriteFile(filepath.Join(dir, "fastpath-"+pid+".json"), b, 0o600)
		}
	}
}

// servePprof serves /debug/pprof/ on addr in the background; "" does nothing, and an address
// that cannot be bound is logged (Terraform's log, TF_LOG) and skipped.
func servePprof(addr string) {
	if addr == "" {
		return
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		log.Printf("[WARN] terraform-provider-gantry: %s: %v", envPprof, err)
		return
	}
	go func() { _ = http.Serve(l, nil) }() //nolint:gosec // loopback debugging endpoint, opt-in
}

// parentCheckInterval is how often the provider checks that the CLI that started it is alive.
const parentCheckInterval = time.Second

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	if !debug {
		go exitWithParent(os.Getppid(), parentCheckInterval)
	}
	servePprof(os.Getenv(envPprof))
	defer profileTo(os.Getenv(envProfileDir))()
	// The framework's server, its request contexts released as each request returns and never
	// blocking a destroy on the configuration (provider.Server).
	server := func() tfprotov6.ProviderServer { return provider.Server(version) }
	var opts []tf6server.ServeOpt
	if debug {
		opts = append(opts, tf6server.WithManagedDebug())
	}
	if err := tf6server.Serve("registry.terraform.io/gantry-dev/gantry", server, opts...); err != nil {
		log.Print(err.Error())
		os.Exit(1) //nolint:gocritic // the profile of a failed serve is not wanted
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
