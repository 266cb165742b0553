// Command scale is the 1000-performer bench of `make bench`: N Performers applied by Terraform
// and by a plain client-go program at the same QPS (the limit), with a reconciler of its own.
// It prints apply/destroy against the limit (target ≤ 1.1), no-op plans (target ≤ 3 s; the
// second shows the steady state, where resourceVersions in state skip re-mapping), N
// terraform_data's no-op plan, the peak RSS of provider and reconciler (target ≤ 150 MiB), and
// each phase's CPU seconds (the machine's, terraform's, the provider's) to tell one the 2-core
// machine's CPU bounds. It exits non-zero only when a step fails, never on a number.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-dev/terraform-provider-gantry/hack/bench/table"
)

var (
	kubeconfig = flag.String("kubeconfig", "", "kubeconfig of the local cluster")
	tfBin      = flag.String("terraform", "terraform", "Terraform CLI")
	tfrc       = flag.String("tfrc", "", "Terraform CLI config with the provider's filesystem mirror")
	recBin     = flag.String("reconciler", "bin/gantry-reconciler", "reconciler binary (run as the bench's own process)")
	workdir    = flag.String("workdir", ".cache/bench/scale", "scratch directory")
	count      = flag.Int("n", 1000, "performers")
	qps        = flag.Int("qps", 200, "client QPS of the limit client and of the provider (GANTRY_QPS); burst is twice it")
	parallel   = flag.Int("parallelism", 200, "terraform -parallelism and limit client workers")
	timeout    = flag.Duration("timeout", 30*time.Minute, "give up on a step after")
)

var performerGVR = schema.GroupVersionResource{Group: "gantry.dev", Version: "v1alpha1", Resource: "performers"}

const podsPerNode = 300

func main() {
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 4**timeout)
	defer cancel()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	check(err)
	cfg.QPS, cfg.Burst = float32(*qps), 2**qps
	cs := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	run := strconv.FormatInt(time.Now().Unix()%100000, 10)
	nodes := addNodes(ctx, cs, run, *count/podsPerNode+1)
	atExit = append(atExit, func() { removeNodes(cs, nodes) })
	defer removeNodes(cs, nodes)

	rec := exec.Command(*recBin, "--kubeconfig", *kubeconfig, "--metrics-bind-address=0", "--health-probe-bind-address=0",
		"--kube-api-qps="+strconv.Itoa(*qps), "--kube-api-burst="+strconv.Itoa(2**qps))
	logf, err := os.CreateTemp("", "bench-scale-reconciler-*.log")
	check(err)
	rec.Stdout, rec.Stderr = logf, logf
	check(rec.Start())
	stopRec := func() { _ = rec.Process.Kill(); _ = rec.Wait() }
	atExit = append(atExit, stopRec)
	defer stopRec()
	time.Sleep(3 * time.Second) // CRDs applied, caches synced

	fmt.Printf("Scale bench: %d performers, QPS %d / burst %d, parallelism %d, %d extra kwok nodes (%d pods each); reconciler log %s\n\n",
		*count, *qps, 2**qps, *parallel, len(nodes), podsPerNode, logf.Name())

	limitNS := namespace(ctx, cs, "bench-scale-limit-"+run)
	limitCreateUse := measure(func() { createAll(ctx, dyn, limitNS, *count); waitAll(ctx, dyn, limitNS, *count, running) })
	limitCreate := limitCreateUse.wall
	fmt.Printf("limit: create → all Running %.2f s\n", limitCreate)
	limitDeleteUse := measure(func() { deleteAll(ctx, dyn, limitNS, *count); waitAll(ctx, dyn, limitNS, 0, nil) })
	limitDelete := limitDeleteUse.wall
	fmt.Printf("limit: delete → all gone %.2f s\n", limitDelete)

	tfNS := namespace(ctx, cs, "bench-scale-tf-"+run)
	dir := filepath.Join(*workdir, run)
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "main.tf"), []byte(config(tfNS, *count)), 0o644))
	tf(dir, "init", "-input=false")
	par := fmt.Sprintf("-parallelism=%d", *parallel)
	var rss peak
	var applyUse cpuUse
	apply := rss.during(func() { applyUse = measure(func() { tf(dir, "apply", "-input=false", "-auto-approve", par) }) })
	applyProviderCPU := rss.cpu
	fmt.Printf("terraform apply %.2f s\n", apply)
	var noopUse cpuUse
	noop := rss.during(func() { noopUse = measure(func() { tf(dir, "plan", "-input=false", "-detailed-exitcode", par) }) })
	noopProviderCPU := rss.cpu
	fmt.Printf("terraform no-op plan %.2f s (provider CPU %.2f s, terraform's %.2f s)\n", noop, noopProviderCPU, noopUse.terraform-noopProviderCPU)
	noopApply := rss.during(func() { tf(dir, "apply", "-input=false", "-auto-approve", par) })
	steady := rss.during(func() { tf(dir, "plan", "-input=false", "-detailed-exitcode", par) })
	fmt.Printf("terraform no-op apply %.2f s, then no-op plan (steady state: state refreshed by an apply) %.2f s\n", noopApply, steady)
	floorNoop := floorPlan(filepath.Join(*workdir, run+"-floor"), *count)
	fmt.Printf("terraform no-op plan of %d terraform_data (Terraform's floor) %.2f s\n", *count, floorNoop)
	var destroyUse cpuUse
	destroy := rss.during(func() { destroyUse = measure(func() { tf(dir, "destroy", "-input=false", "-auto-approve", par) }) })
	destroyProviderCPU := rss.cpu
	fmt.Printf("terraform destroy %.2f s\n", destroy)
	recHWM, recCPU := procStats(rec.Process.Pid)
	_ = cs.CoreV1().Namespaces().Delete(context.Background(), limitNS, metav1.DeleteOptions{})
	_ = cs.CoreV1().Namespaces().Delete(context.Background(), tfNS, metav1.DeleteOptions{})

	fmt.Printf("\n%-34s %10s %10s %8s %s\n", "", "gantry", "limit", "ratio", "target")
	row := func(what string, v, limit, target float64) {
		fmt.Printf("%-34s %10.2f %10.2f %8.2f ≤ %.1f %s\n", what, v, limit, v/limit, target, met(v/limit <= target))
	}
	row("apply (s) / limit create", apply, limitCreate, 1.1)
	row("destroy (s) / limit delete", destroy, limitDelete, 1.1)
	fmt.Printf("%-34s %10.2f %10.2f %8.2f ≤ 3 s %s (limit: %d terraform_data)\n", "no-op plan (s)", noop, floorNoop, noop/floorNoop, met(noop <= 3), *count)
	fmt.Printf("%-34s %10.1f %10s %8s ≤ 150 MiB %s\n", "provider peak RSS (MiB)", rss.max/1024, "", "", met(rss.max/1024 <= 150))
	fmt.Printf("%-34s %10.1f %10s %8s ≤ 150 MiB %s\n", "reconciler peak RSS (MiB)", recHWM/1024, "", "", met(recHWM/1024 <= 150))
	fmt.Printf("%-34s %10.1f\n", "reconciler CPU (s)", recCPU)
	// Where the machine's two cores went: a phase whose busy CPU is close to 2 × wall was bound
	// by CPU, and then terraform's and the provider's CPU add to the cluster's own.
	fmt.Printf("\n%-34s %10s %14s %20s %10s\n", "CPU (s)", "wall", "machine busy", "terraform+provider", "provider")
	for _, r := range []struct {
		what     string
		u        cpuUse
		provider float64
	}{{"limit create", limitCreateUse, 0}, {"terraform apply", applyUse, applyProviderCPU}, {"limit delete", limitDeleteUse, 0},
		{"terraform destroy", destroyUse, destroyProviderCPU}, {"terraform no-op plan", noopUse, noopProviderCPU}} {
		fmt.Printf("%-34s %10.2f %14.2f %20.2f %10.2f\n", r.what, r.u.wall, r.u.busy, r.u.terraform, r.provider)
	}
	n, lim := fmt.Sprintf("%d gantry_performer, -parallelism %d", *count, *parallel), fmt.Sprintf("client-go, QPS %d", *qps)
	table.Add(
		table.Row{Figure: n + ": apply", Value: apply, Unit: "s", Limit: limitCreate, LimitIs: lim, Target: "≤ 1.1× limit", Met: table.Met(apply/limitCreate <= 1.1)},
		table.Row{Figure: n + ": destroy", Value: destroy, Unit: "s", Limit: limitDelete, LimitIs: lim, Target: "≤ 1.1× limit", Met: table.Met(destroy/limitDelete <= 1.1)},
		table.Row{Figure: n + ": no-op plan", Value: noop, Unit: "s", Limit: floorNoop, LimitIs: fmt.Sprintf("%d terraform_data", *count), Target: "≤ 3 s", Met: table.Met(noop <= 3)},
		table.Row{Figure: n + ": no-op plan after a no-op apply (steady state)", Value: steady, Unit: "s", Limit: floorNoop, LimitIs: fmt.Sprintf("%d terraform_data", *count), Target: "≤ 3 s", Met: table.Met(steady <= 3)},
		table.Row{Figure: n + ": provider peak RSS", Value: rss.max / 1024, Unit: "MiB", Target: "≤ 150 MiB", Met: table.Met(rss.max/1024 <= 150)},
		table.Row{Figure: n + ": reconciler peak RSS", Value: recHWM / 1024, Unit: "MiB", Target: "≤ 150 MiB", Met: table.Met(recHWM/1024 <= 150)},
	)
}

// floorPlan applies n terraform_data in dir and returns the seconds of their no-op plan:
// Terraform's own cost of planning n resources, with no provider API call.
func floorPlan(dir string, n int) float64 {
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "main.tf"), []byte(fmt.Sprintf(`resource "terraform_data" "p" {
  count = %d
  input = "p-${count.index}"
}
`, n)), 0o644))
	par := fmt.Sprintf("-parallelism=%d", *parallel)
	tf(dir, "init", "-input=false")
	tf(dir, "apply", "-input=false", "-auto-approve", par)
	return timed(func() { tf(dir, "plan", "-input=false", "-detailed-exitcode", par) })
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}

func config(ns string, n int) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}
provider "gantry" {}
resource "gantry_performer" "p" {
  count     = %d
  name      = "p-${count.index}"
  namespace = %q
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}
`, n, ns)
}

// tf runs the CLI in dir with the mirror config, the cluster's kubeconfig and the bench's QPS.
// tf runs terraform in dir; it exits through check when terraform fails. The CPU seconds
// (user + system) of terraform and of the provider plugins it waited for go to tfCPU.
func tf(dir string, args ...string) {
	cmd := exec.Command(*tfBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+*tfrc, "KUBE_CONFIG_PATH="+*kubeconfig, "TF_IN_AUTOMATION=1",
		"GANTRY_QPS="+strconv.Itoa(*qps), "GANTRY_BURST="+strconv.Itoa(2**qps))
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState != nil { // wait4's usage of terraform includes the plugins it waited for
		tfCPU += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		check(fmt.Errorf("terraform %s: %v\n%s", strings.Join(args, " "), err, out))
	}
}

// tfCPU is the CPU seconds of every terraform run so far and its provider plugins (tf).
var tfCPU float64

// cpuUse is what one phase cost the machine: wall seconds, the CPU seconds all its processes
// used (from /proc/stat: every state but idle and iowait) and those of terraform and its
// provider plugins (tfCPU).
type cpuUse struct{ wall, busy, terraform float64 }

// measure runs f and returns its cpuUse.
func measure(f func()) cpuUse {
	b0, t0 := machineBusy(), tfCPU
	wall := timed(f)
	return cpuUse{wall: wall, busy: machineBusy() - b0, terraform: tfCPU - t0}
}

// machineBusy returns the CPU seconds the whole machine has spent outside idle and iowait
// since boot (/proc/stat's cpu line, 100 ticks/s); 0 when it cannot be read.
func machineBusy() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	f := strings.Fields(strings.SplitN(string(b), "\n", 2)[0])
	busy := 0.0
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		x, _ := strconv.ParseFloat(v, 64)
		busy += x
	}
	return busy / 100
}

// peak is the largest VmHWM (KiB) seen of any terraform-provider-gantry process, and cpu the
// CPU seconds of the provider processes of the last during (each process's last sample: up
// to 200 ms of a process's last moments are missed).
type peak struct{ max, cpu float64 }

// during runs f, sampling the provider plugin's VmHWM every 200 ms, and returns f's seconds.
func (p *peak) during(f func()) float64 {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	cpu := map[int]float64{}
	go func() {
		defer wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			for _, pid := range providerPIDs() {
				h, c := procStats(pid)
				if h > p.max {
					p.max = h
				}
				cpu[pid] = c
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	s := timed(f)
	close(stop)
	wg.Wait()
	p.cpu = 0
	for _, c := range cpu {
		p.cpu += c
	}
	return s
}

func providerPIDs() []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && strings.Contains(strings.SplitN(string(b), "\x00", 2)[0], "terraform-provider-gantry") {
			out = append(out, pid)
		}
	}
	return out
}

func namespace(ctx context.Context, cs kubernetes.Interface, name string) string {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	check(err)
	return name
}

func addNodes(ctx context.Context, cs kubernetes.Interface, run string, n int) []string {
	var names []string
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-scale-%s-%d", run, i)
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("4Ti"),
			corev1.ResourcePods: resource.MustParse(strconv.Itoa(podsPerNode))}
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "gantry.dev/bench": "scale"}},
			Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc}}
		_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		check(err)
		names = append(names, name)
	}
	return names
}

func removeNodes(cs kubernetes.Interface, names []string) {
	for _, n := range names {
		_ = cs.CoreV1().Nodes().Delete(context.Background(), n, metav1.DeleteOptions{})
	}
}

// parallelDo runs f(i) for i in [0, n) on -parallelism workers.
func parallelDo(n int, f func(i int)) {
	var wg sync.WaitGroup
	work := make(chan int)
	for w := 0; w < *parallel; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
}

func createAll(ctx context.Context, dyn dynamic.Interface, ns string, n int) {
	parallelDo(n, func(i int) {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
			"metadata": map[string]interface{}{"name": fmt.Sprintf("p-%d", i), "namespace": ns},
			"spec":     map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v1.0.0"}}}
		_, err := dyn.Resource(performerGVR).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		check(err)
	})
}

func deleteAll(ctx context.Context, dyn dynamic.Interface, ns string, n int) {
	parallelDo(n, func(i int) {
		check(dyn.Resource(performerGVR).Namespace(ns).Delete(ctx, fmt.Sprintf("p-%d", i), metav1.DeleteOptions{}))
	})
}

func running(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return phase == "Running" && og == u.GetGeneration()
}

// waitAll polls (one LIST every 250 ms) until ns holds want performers all satisfying ok (or,
// with want 0, none at all).
func waitAll(ctx context.Context, dyn dynamic.Interface, ns string, want int, ok func(*unstructured.Unstructured) bool) {
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, *timeout, true, func(ctx context.Context) (bool, error) {
		l, err := dyn.Resource(performerGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(l.Items) != want { // a failed LIST is retried at the next tick
			return false, nil //nolint:nilerr
		}
		for i := range l.Items {
			if ok != nil && !ok(&l.Items[i]) {
				return false, nil
			}
		}
		return true, nil
	})
	check(err)
}

func timed(f func()) float64 {
	t := time.Now()
	f()
	return time.Since(t).Seconds()
}

// procStats returns VmHWM (KiB) and utime+stime (seconds, at 100 ticks/s) of pid; zeros when
// the process is gone.
func procStats(pid int) (hwmKiB, cpuSec float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			hwmKiB, _ = strconv.ParseFloat(strings.Fields(l)[1], 64)
		}
	}
	if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		s := string(stat)
		f := strings.Fields(s[strings.LastIndex(s, ")")+2:])
		ut, _ := strconv.ParseFloat(f[11], 64)
		st, _ := strconv.ParseFloat(f[12], 64)
		cpuSec = (ut + st) / 100
	}
	return hwmKiB, cpuSec
}

// atExit is what check runs, newest first, before it exits: the deferred clean-ups (the
// bench's reconciler process, its kwok nodes) that os.Exit would skip.
var atExit []func()

// check exits with err (status 1) after running atExit; nil does nothing.
func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "scale bench:", err)
		for i := len(atExit) - 1; i >= 0; i-- {
			atExit[i]()
		}
		os.Exit(1)
	}
}
