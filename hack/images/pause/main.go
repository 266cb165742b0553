// Command pause is the CRI sandbox ("pause") container of the test cluster's
// registry.k8s.io/pause:3.10 image (built by hack/images): it holds the Pod's namespaces open
// by blocking until SIGINT or SIGTERM, then exits 0. As PID 1 of a Pod sharing its process
// namespace it reaps the zombies reparented to it (SIGCHLD), as the upstream pause does.
// -v prints its version and exits.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is the upstream pause version this one stands in for.
const version = "3.10"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Println("pause.go (gantry test image) version", version)
		return
	}
	sig := make(chan os.Signal, 8)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sig {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "pause: shutting down, got signal %v\n", s)
			os.Exit(0)
		}
		for { // reap every exited child; signals coalesce
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
