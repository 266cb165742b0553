// Command packageset benchmarks the PackageSet reconciler on the local cluster: it starts its
// own bin/gantry-reconciler process (metrics on a loopback port), creates -nodes kwok nodes, a
// PackageSet with 2 packages (no interrupt, budget percent 100) over them, and waits for
// status complete. It prints: seconds to complete (set created → status complete), the
// reconciler's peak RSS (MiB, VmHWM of /proc/<pid>/status) and CPU seconds (utime+stime of
// /proc/<pid>/stat, whole process life), and API requests per node-stage (the increase of
// rest_client_requests_total over the run ÷ nodes × 4 stages). It deletes what it created
// and stops its reconciler. Stop any other reconciler first (make reconciler-stop): two
// would share the work. Run by `make bench` (hack/bench.sh) after the performer bench.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/reconciler"
)

var (
	recBin  = flag.String("reconciler", "bin/gantry-reconciler", "reconciler binary")
	nodes   = flag.Int("nodes", 200, "kwok nodes")
	metrics = flag.String("metrics", "127.0.0.1:18089", "metrics address of the benchmarked reconciler")
	timeout = flag.Duration("timeout", 15*time.Minute, "give up after")
)

func main() {
	flag.Parse()
	os.Exit(run())
}

// run does the benchmark; errors panic (check) so the deferred clean-up still runs.
func run() int {
	// -kubeconfig is controller-runtime's flag (registered by its config package).
	kubeconfig := flag.Lookup("kubeconfig").Value.String()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	check(err)
	cfg.QPS, cfg.Burst = 200, 400
	c, err := client.New(cfg, client.Options{Scheme: reconciler.NewScheme()})
	check(err)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	pool := fmt.Sprintf("bench-ps-%d", time.Now().Unix()%100000)

	rec := exec.Command(*recBin, "--kubeconfig", kubeconfig, "--metrics-bind-address="+*metrics, "--health-probe-bind-address=0")
	logf, err := os.CreateTemp("", "bench-packageset-reconciler-*.log")
	check(err)
	rec.Stdout, rec.Stderr = logf, logf
	check(rec.Start())
	defer func() { _ = rec.Process.Kill(); _, _ = rec.Process.Wait() }()
	for i := 0; i < 600; i++ {
		if _, err := scrape(); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}

	var names []string
	for i := 0; i < *nodes; i++ {
		name := fmt.Sprintf("%s-%d", pool, i)
		alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "gantry.dev/bench-pool": pool}},
			Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc}}
		check(c.Create(ctx, n))
		names = append(names, name)
	}
	defer func() {
		for _, n := range names {
			_ = c.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	}()
	// Let the nodes' creation settle in the reconciler before the baseline.
	time.Sleep(2 * time.Second)
	base, err := scrape()
	check(err)

	pct := int32(100)
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/bench-pool": pool}},
		Packages: []v1alpha1.Package{
			{Name: "tool-a", Version: "1.0.0", Image: "ghcr.io/gantry-dev/tool-a:1"},
			{Name: "tool-b", Version: "1.0.0", Image: "ghcr.io/gantry-dev/tool-b:1"}},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Percent: &pct}}}
	start := time.Now()
	check(c.Create(ctx, set))
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer dcancel()
		_ = c.Delete(dctx, set)
		for dctx.Err() == nil {
			if err := c.Get(dctx, types.NamespacedName{Name: pool}, &v1alpha1.PackageSet{}); err != nil {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}()
	var got v1alpha1.PackageSet
	for {
		if err := c.Get(ctx, types.NamespacedName{Name: pool}, &got); err == nil && got.Status.Status == v1alpha1.StatusComplete &&
			got.Status.ObservedGeneration == got.Generation && got.Status.CompleteNodes == fmt.Sprintf("%d/%d", *nodes, *nodes) {
			break
		}
		if ctx.Err() != nil {
			fmt.Printf("packageset bench: timed out after %s, status %s %s\n", time.Since(start).Round(time.Second), got.Status.Status, got.Status.CompleteNodes)
			return 1
		}
		time.Sleep(250 * time.Millisecond)
	}
	elapsed := time.Since(start)
	after, err := scrape()
	check(err)
	hwm, cpu := procStats(rec.Process.Pid)
	stages := float64(*nodes * 4)
	fmt.Printf("packageset bench: %d nodes, 2 packages (apply+config each, no interrupt), budget 100%%\n", *nodes)
	fmt.Printf("  time to complete:            %.1f s\n", elapsed.Seconds())
	fmt.Printf("  reconciler peak RSS (VmHWM): %.1f MiB\n", hwm/1024)
	fmt.Printf("  reconciler CPU (life):       %.1f s\n", cpu)
	fmt.Printf("  API requests per node-stage: %.2f (%.0f requests / %.0f node-stages)\n", (after-base)/stages, after-base, stages)
	fmt.Printf("  reconciler log:              %s\n", logf.Name())
	return 0
}

// scrape sums rest_client_requests_total of the reconciler's metrics endpoint.
func scrape() (float64, error) {
	resp, err := http.Get("http://" + *metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	sum := 0.0
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err == nil {
			sum += v
			found = true
		}
	}
	if !found {
		return 0, fmt.Errorf("no rest_client_requests_total yet")
	}
	return sum, nil
}

// procStats returns VmHWM (KiB) and utime+stime (seconds, at 100 ticks/s) of pid.
func procStats(pid int) (hwmKiB, cpuSec float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmHWM:") {
			hwmKiB, _ = strconv.ParseFloat(strings.Fields(sc.Text())[1], 64)
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	check(err)
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:]) // fields from 3 (state) on
	ut, _ := strconv.ParseFloat(fields[11], 64)               // field 14 utime
	st, _ := strconv.ParseFloat(fields[12], 64)               // field 15 stime
	return hwmKiB, (ut + st) / 100
}

func check(err error) {
	if err != nil {
		panic(fmt.Sprint("packageset bench: ", err))
	}
}
