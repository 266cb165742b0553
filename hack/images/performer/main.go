// Command performer is the test-performer image's server. Gantry gives a Performer's container
// no port environment, so the port is -grpc-port, $GRPC_PORT or 9090: set spec.grpcPort and
// spec.env.GRPC_PORT together. It speaks plain HTTP/1 (the TCP probe only needs the port open):
// GET / (name and version), /healthz, /devices, also on -health-port if set. Env knobs for tests:
// PERFORMER_VERSION, PERFORMER_FAIL_AFTER_START=1 (exit 1 at once), PERFORMER_ALLOC_MB=N (hold N
// MiB: OOMKilled tests), PERFORMER_LISTEN_DELAY=S (running but not Ready for S seconds).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/gantry-dev/terraform-provider-gantry/hack/internal/gpuinfo"
)

// DefaultGRPCPort is Gantry's default spec.grpcPort (v1alpha1.DefaultGRPCPort).
const DefaultGRPCPort = 9090

// ballast holds PERFORMER_ALLOC_MB's memory for the life of the process.
var ballast []byte

func main() {
	log.SetFlags(0)
	log.SetPrefix("performer: ")
	grpcPort := flag.Int("grpc-port", envInt("GRPC_PORT", DefaultGRPCPort), "port of the (HTTP/1) server Gantry probes, named grpc (env GRPC_PORT)")
	healthPort := flag.Int("health-port", envInt("PERFORMER_HEALTH_PORT", 0), "optional management port serving /healthz (env PERFORMER_HEALTH_PORT; 0: none)")
	listen := flag.String("listen", "", "address to listen on (default all)")
	version := flag.String("version", envOr("PERFORMER_VERSION", "1.0.0"), "version reported by GET / (env PERFORMER_VERSION)")
	flag.Parse()

	if os.Getenv("PERFORMER_FAIL_AFTER_START") == "1" {
		fail("failing on purpose (PERFORMER_FAIL_AFTER_START=1)")
	}
	if v := os.Getenv("PERFORMER_ALLOC_MB"); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil || mb < 0 {
			fail(fmt.Sprintf("PERFORMER_ALLOC_MB=%q: want a number of MiB", v))
		}
		ballast = make([]byte, mb<<20)
		for i := 0; i < len(ballast); i += 4096 {
			ballast[i] = 1 // touch every page so it is resident (counted against the memory limit)
		}
		log.Printf("allocated and touched %d MiB", mb)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if d := envInt("PERFORMER_LISTEN_DELAY", 0); d > 0 {
		log.Printf("waiting %ds before listening (PERFORMER_LISTEN_DELAY)", d)
		select {
		case <-time.After(time.Duration(d) * time.Second):
		case <-ctx.Done():
			log.Print("shutting down before listening")
			return
		}
	}

	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "gantry test performer %s version %s\n", host, *version)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	gpuinfo.Handle(mux)

	ports := []int{*grpcPort}
	if *healthPort != 0 && *healthPort != *grpcPort {
		ports = append(ports, *healthPort)
	}
	var servers []*http.Server
	errc := make(chan error, len(ports))
	for _, p := range ports {
		ln, err := net.Listen("tcp", net.JoinHostPort(*listen, strconv.Itoa(p)))
		if err != nil {
			fail(err.Error())
		}
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		log.Printf("gantry test performer %s version %s listening on %s", host, *version, ln.Addr())
		go func() { errc <- srv.Serve(ln) }()
	}

	select {
	case err := <-errc:
		fail(err.Error())
	case <-ctx.Done():
	}
	log.Print("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		if err := s.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Print(err)
		}
	}
}

// fail prints msg on stderr and to /dev/termination-log (the kubelet's termination message)
// when it can, and exits 1.
func fail(msg string) {
	log.Print(msg)
	if f, err := os.OpenFile("/dev/termination-log", os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		fmt.Fprintln(f, "performer: "+msg)
		f.Close()
	}
	os.Exit(1)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func envInt(k string, def int) int {
	v := os.Getenv(k)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		log.Printf("%s=%q is not a number, using %d", k, v, def)
		return def
	}
	return n
}
