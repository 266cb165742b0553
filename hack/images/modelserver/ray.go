package main

// The test image's stand-ins for what KAITO's vLLM image runs in a multi-node group (KAITO's
// buildMultiNodeRayCommand and SetDistributedInferenceProbe, which internal/workspace/ray.go
// mirrors): a tiny `ray` (start --head, start --address [--block], status, stop) whose head is a
// TCP server counting joined nodes; vLLM's multi-node-serving.sh leader/worker, which wait for
// the group or join it within --ray_init_timeout; and KAITO's multi-node-health-check.py, whose
// liveness fails unless the head counts GROUP_SIZE nodes (KAITO treats a lost worker as a dead
// actor). RAY_TEST_POLL sets the polling interval; timeouts still count 5 s a poll, as vLLM's
// script does.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultRayPort is Ray's (and KAITO's PortRayCluster) GCS port.
const DefaultRayPort = 6379

// rayDir is where the background head and worker keep their pid and log files ($TMPDIR/ray,
// as Ray keeps its session under /tmp/ray).
func rayDir() string { return filepath.Join(os.TempDir(), "ray") }

// flagValue returns the value of --name=V or --name V in args, and the args without it.
func flagValue(args []string, name string) (string, []string, bool) {
	var rest []string
	val, found := "", false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case strings.HasPrefix(a, "--"+name+"="):
			val, found = strings.TrimPrefix(a, "--"+name+"="), true
		case a == "--"+name && i+1 < len(args):
			val, found = args[i+1], true
			i++
		default:
			rest = append(rest, a)
		}
	}
	return val, rest, found
}

// hasFlag reports whether args hold --name, and the args without it.
func hasFlag(args []string, name string) (bool, []string) {
	var rest []string
	found := false
	for _, a := range args {
		if a == "--"+name {
			found = true
			continue
		}
		rest = append(rest, a)
	}
	return found, rest
}

// rayMain is the ray command; it returns the exit code.
func rayMain(args []string) int {
	log.SetPrefix("ray: ")
	log.Print(strings.Join(args, " "))
	if len(args) == 0 {
		log.Print("usage: ray start|status|stop ...")
		return 2
	}
	switch args[0] {
	case "start":
		return rayStart(args[1:])
	case "status":
		addr, _, ok := flagValue(args[1:], "address")
		if !ok {
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultRayPort))
		}
		n, err := rayNodes(addr)
		if err != nil {
			log.Printf("could not reach the Ray head at %s: %v", addr, err)
			return 1
		}
		fmt.Printf("Active: %d node(s)\n", n)
		return 0
	case "stop":
		return rayStop()
	}
	log.Printf("unknown command %q (the test image's ray has start, status and stop)", args[0])
	return 2
}

// rayStart is `ray start`: the head (--head) or a node joining --address.
func rayStart(args []string) int {
	block, args := hasFlag(args, "block")
	head, args := hasFlag(args, "head")
	if head {
		port := DefaultRayPort
		if p, _, ok := flagValue(args, "port"); ok {
			n, err := strconv.Atoi(p)
			if err != nil {
				log.Printf("--port=%q is not a port", p)
				return 2
			}
			port = n
		}
		if block {
			return runHead(port)
		}
		return background("head", []string{"start", "--head", "--port=" + strconv.Itoa(port), "--block"}, func() error {
			return waitDial(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), 30*time.Second)
		})
	}
	addr, _, ok := flagValue(args, "address")
	if !ok {
		log.Print("ray start needs --head or --address=HOST:PORT")
		return 2
	}
	if block {
		return runNode(addr)
	}
	if _, err := rayNodes(addr); err != nil {
		log.Printf("ConnectionError: could not reach the Ray head at %s: %v", addr, err)
		return 1
	}
	return background("worker", []string{"start", "--address=" + addr, "--block"}, func() error { return nil })
}

// background starts this program as `ray args...` in its own session, output to
// rayDir()/<name>.log and pid in <name>.pid, and returns 0 once ready says it is up.
func background(name string, args []string, ready func() error) int {
	self, err := os.Executable()
	if err == nil {
		err = os.MkdirAll(rayDir(), 0o755)
	}
	var out *os.File
	if err == nil {
		out, err = os.OpenFile(filepath.Join(rayDir(), name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	if err != nil {
		log.Print(err)
		return 1
	}
	defer out.Close()
	cmd := &exec.Cmd{Path: self, Args: append([]string{"ray"}, args...), Stdout: out, Stderr: out,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	if err := cmd.Start(); err != nil {
		log.Print(err)
		return 1
	}
	_ = os.WriteFile(filepath.Join(rayDir(), name+".pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644)
	_ = cmd.Process.Release()
	if err := ready(); err != nil {
		log.Printf("the Ray %s did not start: %v", name, err)
		return 1
	}
	log.Printf("Ray runtime started (%s, pid %d).", name, cmd.Process.Pid)
	return 0
}

// rayStop ends the background head and worker (their pid files).
func rayStop() int {
	stopped := 0
	for _, name := range []string{"worker", "head"} {
		pidFile := filepath.Join(rayDir(), name+".pid")
		b, err := os.ReadFile(pidFile)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && syscall.Kill(pid, syscall.SIGTERM) == nil {
			stopped++
		}
		_ = os.Remove(pidFile)
	}
	log.Printf("Stopped %d Ray processes.", stopped)
	return 0
}

// waitDial waits until addr accepts a connection, up to timeout.
func waitDial(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// head is the Ray head's node table: the connections of the nodes joined.
type head struct {
	mu    sync.Mutex
	nodes map[net.Conn]string
}

// runHead serves the head on port until SIGTERM or SIGINT: a node sends "JOIN <name>" and
// stays joined while its connection is open; "NODES" is answered with the nodes alive,
// the head included.
func runHead(port int) int {
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(port)))
	if err != nil {
		log.Print(err)
		return 1
	}
	log.Printf("Ray head listening on %s", ln.Addr())
	h := &head{nodes: map[net.Conn]string{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go h.handle(c)
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	<-ctx.Done()
	log.Print("Ray head stopping")
	_ = ln.Close()
	return 0
}

func (h *head) handle(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	cmd, arg, _ := strings.Cut(strings.TrimSpace(line), " ")
	switch cmd {
	case "NODES":
		h.mu.Lock()
		n := 1 + len(h.nodes)
		h.mu.Unlock()
		fmt.Fprintf(c, "%d\n", n)
	case "JOIN":
		h.mu.Lock()
		h.nodes[c] = arg
		n := 1 + len(h.nodes)
		h.mu.Unlock()
		log.Printf("node %s joined (%d alive)", arg, n)
		_, _ = io.Copy(io.Discard, c)
		h.mu.Lock()
		delete(h.nodes, c)
		n = 1 + len(h.nodes)
		h.mu.Unlock()
		log.Printf("node %s left (%d alive)", arg, n)
	}
}

// rayNodes asks the head at addr how many nodes are alive.
func rayNodes(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, "NODES\n"); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(line))
}

// runNode joins the head at addr and stays joined: exit 0 on SIGTERM or SIGINT, 1 when the
// head cannot be reached or goes.
func runNode(addr string) int {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		log.Printf("ConnectionError: could not reach the Ray head at %s: %v", addr, err)
		return 1
	}
	defer c.Close()
	host, _ := os.Hostname()
	if _, err := fmt.Fprintf(c, "JOIN %s\n", host); err != nil {
		log.Print(err)
		return 1
	}
	log.Printf("joined the Ray head at %s as %s", addr, host)
	gone := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, c); close(gone) }()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	select {
	case <-ctx.Done():
		log.Print("leaving the Ray cluster")
		return 0
	case <-gone:
		log.Printf("the Ray head at %s went away", addr)
		return 1
	}
}

// pollInterval is the scripts' polling interval: RAY_TEST_POLL, else 5 s (vLLM's).
func pollInterval() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("RAY_TEST_POLL")); err == nil && d > 0 {
		return d
	}
	return 5 * time.Second
}

// multiNodeServingMain is vLLM's multi-node-serving.sh (leader or worker); it returns the exit
// code.
func multiNodeServingMain(args []string) int {
	log.SetPrefix("multi-node-serving.sh: ")
	if len(args) == 0 {
		fmt.Println("unknown subcommand: ")
		return 1
	}
	sub, args := args[0], args[1:]
	port, args, _ := flagValue(args, "ray_port")
	if port == "" {
		port = strconv.Itoa(DefaultRayPort)
	}
	timeout := 300
	if t, rest, ok := flagValue(args, "ray_init_timeout"); ok {
		args = rest
		if n, err := strconv.Atoi(t); err == nil {
			timeout = n
		}
	}
	switch sub {
	case "worker":
		addr, rest, _ := flagValue(args, "ray_address")
		if addr == "" {
			fmt.Println("Error: Missing argument --ray_address")
			return 1
		}
		return servingWorker(net.JoinHostPort(addr, port), timeout, rest)
	case "leader":
		size, rest, _ := flagValue(args, "ray_cluster_size")
		n, err := strconv.Atoi(size)
		if size == "" || err != nil {
			fmt.Println("Error: Missing argument --ray_cluster_size")
			return 1
		}
		return servingLeader(port, n, timeout, rest)
	}
	fmt.Printf("unknown subcommand: %s\n", sub)
	return 1
}

// servingWorker is the script's worker: `ray start --address=addr --block`, retried every
// poll for timeout seconds (5 a try).
func servingWorker(addr string, timeout int, extra []string) int {
	for i := 0; i < timeout; i += 5 {
		if rayMain(append([]string{"start", "--address=" + addr, "--block"}, extra...)) == 0 {
			fmt.Printf("Worker: Ray runtime started with head address %s\n", addr)
			return 0
		}
		fmt.Println("Waiting until the ray worker is active...")
		time.Sleep(pollInterval())
	}
	fmt.Printf("Ray worker starts timeout, head address: %s\n", addr)
	return 1
}

// servingLeader is the script's leader: `ray start --head --port=port`, then a poll until
// size nodes are active, for timeout seconds (5 a poll).
func servingLeader(port string, size, timeout int, extra []string) int {
	if code := rayMain(append([]string{"start", "--head", "--port=" + port}, extra...)); code != 0 {
		return code
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	for i := 0; i < timeout; i += 5 {
		n, err := rayNodes(addr)
		if err == nil && n == size {
			fmt.Println("All ray workers are active and the ray cluster is initialized successfully.")
			return 0
		}
		fmt.Printf("Wait for all ray workers to be active. %d/%d is active\n", n, size)
		time.Sleep(pollInterval())
	}
	fmt.Println("Waiting for all ray workers to be active timed out.")
	return 1
}

// python3Main runs the one script named: KAITO's inference_api.py (the model server) or
// multi-node-health-check.py.
func python3Main(args []string) int {
	if len(args) == 0 {
		log.Print("python3: the test image runs only /workspace/vllm/inference_api.py and multi-node-health-check.py")
		return 2
	}
	switch filepath.Base(args[0]) {
	case "inference_api.py":
		serve(args[1:])
		return 0
	case "multi-node-health-check.py":
		return healthCheck(args[1:], os.Getenv)
	}
	log.Printf("python3: %s: the test image runs only /workspace/vllm/inference_api.py and multi-node-health-check.py", args[0])
	return 2
}

// healthCheck is KAITO's multi-node-health-check.py (see the file comment).
func healthCheck(args []string, getenv func(string) string) int {
	log.SetPrefix("multi-node-health-check: ")
	if len(args) == 0 || (args[0] != "liveness" && args[0] != "readiness") {
		log.Print("usage: multi-node-health-check.py liveness|readiness --leader-address=H [--ray-port=P] [--vllm-port=P]")
		return 2
	}
	probe, args := args[0], args[1:]
	leaderAddr, args, ok := flagValue(args, "leader-address")
	if !ok {
		log.Print("--leader-address is required")
		return 2
	}
	rayPort, args, _ := flagValue(args, "ray-port")
	vllmPort, _, _ := flagValue(args, "vllm-port")
	leader := getenv("POD_INDEX") == "0"
	switch {
	case probe == "liveness" && leader:
		return checkLiveness(net.JoinHostPort(leaderAddr, or(rayPort, strconv.Itoa(DefaultRayPort))), getenv("GROUP_SIZE"))
	case probe == "readiness" && leader:
		return checkReadiness("http://" + net.JoinHostPort(leaderAddr, or(vllmPort, "5000")) + "/health")
	}
	return 0 // workers: liveness is the leader's, and they serve no traffic
}

// checkLiveness fails unless the head at addr answers with at least groupSize nodes (1 when
// unset).
func checkLiveness(addr, groupSize string) int {
	want, err := strconv.Atoi(groupSize)
	if err != nil {
		want = 1
	}
	n, err := rayNodes(addr)
	switch {
	case err != nil:
		log.Printf("the Ray head at %s: %v", addr, err)
		return 1
	case n < want:
		log.Printf("%d of %d Ray nodes alive: a worker is gone", n, want)
		return 1
	}
	return 0
}

// checkReadiness fails unless url answers 200.
func checkReadiness(url string) int {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		fmt.Printf("Get %q: %v\n", url, err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 1
	}
	return 0
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
