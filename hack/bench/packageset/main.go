// Command packageset benchmarks the PackageSet reconciler on the local cluster, one variant
// (-variants; see the flag and allVariants) at a time: first over one node (the baseline), then
// over -nodes kwok nodes, each run with its own reconciler process and cleaned up before the
// next so runs do not overlap with garbage collection. It reports time to complete, stage Pod
// times, the reconciler's peak RSS, CPU and API requests per node-stage, against the issue's
// target of 1.5 × the single-node time × waves. Two targets are printed: per stage, which a node
// with several sequential stages can never meet, and per node, which a rollout can. -pprof-dir
// saves heap and CPU profiles. Stop any other reconciler first (make reconciler-stop): two would
// share the work. Run by `make bench`.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/reconciler"
)

var (
	recBin   = flag.String("reconciler", "bin/gantry-reconciler", "reconciler binary")
	nodes    = flag.Int("nodes", 200, "kwok nodes of the scaled run")
	variants = flag.String("variants", "a,b", "comma-separated variants: a (no interrupt, budget 100%), b (reboot interrupt, budget 10%), c (3 compartments, 25% each, exponential batches), d (c with a reboot interrupt), h (h0, hc, hf: soak with a health check every 10 s; see scale.go)")
	baseline = flag.Bool("baseline", true, "run each variant over a single node first (the target's baseline)")
	metrics  = flag.String("metrics", "", "metrics address of the benchmarked reconciler (default: a free loopback port per run)")
	pprofDir = flag.String("pprof-dir", "", "save heap (at peak RSS) and CPU profiles of the reconciler here")
	pprofAt  = flag.String("pprof-address", "", "pprof address of the benchmarked reconciler (with -pprof-dir; default: a free loopback port per run)")
	pprofCPU = flag.Bool("pprof-cpu", false, "with -pprof-dir, also save consecutive 10 s CPU profiles (profiling costs the reconciler some CPU)")
	recArgs  = flag.String("reconciler-args", "", "extra flags for the reconciler (space-separated)")
	timeout  = flag.Duration("timeout", 20*time.Minute, "give up on one run after")
	limit    = flag.Bool("limit", true, "after each variant's run, time the same stage Pods created by a plain client-go program in the same batches, with no reconciler (limit.go): the limit of the time to complete")
)

// variant is one benchmarked PackageSet shape.
type variant struct {
	name, desc string
	budget     int32 // percent (per compartment with a policy)
	reboot     bool
	// compartments > 0: a deployment policy of that many compartments, exponential batches.
	compartments int
	// soak > 0: rollout.soakDuration, check rounds every `every`; check: one exec health check;
	// fail: the check starts failing mid-rollout (scale.go).
	soak, every time.Duration
	check, fail bool
}

var allVariants = map[string]variant{
	"a": {name: "a", desc: "2 packages, no interrupt, budget 100%", budget: 100},
	"b": {name: "b", desc: "2 packages, reboot interrupt on one, budget 10%", budget: 10, reboot: true},
	"c": {name: "c", desc: "2 packages, no interrupt, 3 compartments, budget 25% each, exponential batches from 1", budget: 25, compartments: 3},
}

// benchStrategy is variant c's strategy.
var benchStrategy = &v1alpha1.DeploymentStrategy{Type: v1alpha1.StrategyExponential, InitialBatch: ptr(int32(1))}

func ptr[T any](v T) *T { return &v }

// compartmentOf is node i's compartment in a variant with a policy.
func (v variant) compartmentOf(i int) string { return fmt.Sprintf("c%d", i%v.compartments) }

// policy is the variant's deployment policy (nil without compartments).
func (v variant) policy() *v1alpha1.DeploymentPolicy {
	if v.compartments == 0 {
		return nil
	}
	p := &v1alpha1.DeploymentPolicy{}
	for k := 0; k < v.compartments; k++ {
		name := fmt.Sprintf("c%d", k)
		p.Compartments = append(p.Compartments, v1alpha1.Compartment{Name: name,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/bench-compartment": name}},
			Budget:   v1alpha1.InterruptionBudget{Percent: ptr(v.budget)}, Strategy: benchStrategy})
	}
	return p
}

// stagesPerNode: apply+config per package, plus interrupt+post-interrupt for the reboot one.
func (v variant) stagesPerNode() int {
	if v.reboot {
		return 6
	}
	return 4
}

// waves over n nodes: ceil(n / the budget's node count) (packageset.Budget: percent of n,
// at least 1), which is ceil(100 / percent) when percent of n is a whole number.
func (v variant) waves(n int) int {
	pct := v.budget
	if v.compartments > 0 {
		// The most batches of a compartment when every batch succeeds (packageset.BatchSize
		// and EvaluateBatch as the machine runs them, capped by the compartment's ceiling).
		most := 0
		for k := 0; k < v.compartments; k++ {
			m := 0
			for i := 0; i < n; i++ {
				if i%v.compartments == k {
					m++
				}
			}
			ceiling := packageset.Budget(&v1alpha1.InterruptionBudget{Percent: &pct}, m)
			var st v1alpha1.BatchState
			batches := 0
			for done := 0; done < m; batches++ {
				size := min(packageset.BatchSize(benchStrategy, m, st), ceiling)
				packageset.EvaluateBatch(benchStrategy, &st, size, size, 0, m)
				done += size
			}
			most = max(most, batches)
		}
		return most
	}
	b := packageset.Budget(&v1alpha1.InterruptionBudget{Percent: &pct}, n)
	return (n + b - 1) / b
}

// result is what one run measured.
type result struct {
	nodes   int
	elapsed time.Duration
	// limit is the same stage Pods' time without a reconciler (limit.go; 0: not measured).
	limit                time.Duration
	stages               []time.Duration // per Job: first seen → Complete seen
	hwmMiB               float64
	cpuLife, cpuRun      float64
	requests, nodeStages float64
	passes, passSeconds  float64 // package set Reconcile passes and their total wall time
	loadBefore, load     string
	log                  string
	// components: CPU seconds of the local cluster's processes during the run, by name.
	components map[string]float64
	// scale.go: pass time quantiles (s), cordons vs budget, health check pods, the halt.
	passP50, passP99     float64
	cordonMax, cordonEnd int
	cordonBy, budgets    map[string]int
	budgetSum            int
	checkRuns, jobs      int
	halt                 haltResult
	statusBytes          int    // the set's status, JSON, when the bench stopped waiting
	partial              string // -stop-after or -timeout: status.completeNodes when the bench stopped waiting
	stoppedBy            string // with partial: the flag that stopped it, with its value ("-timeout 2h30m0s")
}

func (r result) slowest() time.Duration       { return pct(r.stages, 1) }
func (r result) perc(q float64) time.Duration { return pct(r.stages, q) }

func pct(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

type env struct {
	cfg        *rest.Config
	c          client.WithWatch
	cs         kubernetes.Interface
	kubeconfig string
}

func main() {
	flag.Parse()
	// -kubeconfig is controller-runtime's flag (registered by its config package).
	kubeconfig := flag.Lookup("kubeconfig").Value.String()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	check(err)
	cfg.QPS, cfg.Burst = float32(*benchQPS), int(2**benchQPS)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: reconciler.NewScheme()})
	check(err)
	cs, err := kubernetes.NewForConfig(cfg)
	check(err)
	e := &env{cfg: cfg, c: c, cs: cs, kubeconfig: kubeconfig}
	if *pprofDir != "" {
		check(os.MkdirAll(*pprofDir, 0o755))
	}

	type row struct {
		v          variant
		base, full result
		hasBase    bool
	}
	var rows []row
	failed := false
	runs := map[string]result{}
	for _, name := range expandVariants(*variants) {
		v, ok := allVariants[strings.TrimSpace(name)]
		if !ok {
			fmt.Fprintf(os.Stderr, "packageset bench: unknown variant %q (a, b, c, d, h = h0,hc,hf)\n", name)
			os.Exit(2)
		}
		rw := row{v: v}
		if *baseline && !v.fail {
			b, err := e.run(v, 1)
			if err != nil {
				fmt.Printf("packageset bench %s over 1 node: %v\n", v.name, err)
				failed = true
				continue
			}
			rw.base, rw.hasBase = b, true
			printRun(v, b)
		}
		full, err := e.run(v, *nodes)
		if err != nil {
			fmt.Printf("packageset bench %s over %d nodes: %v\n", v.name, *nodes, err)
			failed = true
			continue
		}
		rw.full = full
		printRun(v, full)
		if rw.hasBase {
			w := float64(v.waves(full.nodes))
			tStage := 1.5 * rw.base.slowest().Seconds() * w
			tNode := 1.5 * rw.base.elapsed.Seconds() * w
			fmt.Printf("  targets (waves %d: %d nodes, budget %d%%):\n", v.waves(full.nodes), full.nodes, v.budget)
			fmt.Printf("    target(stage) 1.5 × single-node slowest stage %.2f s × %d = %.1f s: %s (%.2f×)\n",
				rw.base.slowest().Seconds(), v.waves(full.nodes), tStage, verdict(full.elapsed.Seconds() <= tStage), full.elapsed.Seconds()/tStage*1.5)
			fmt.Printf("    target(node)  1.5 × single-node time to complete %.2f s × %d = %.1f s: %s (%.2f×)\n",
				rw.base.elapsed.Seconds(), v.waves(full.nodes), tNode, verdict(full.elapsed.Seconds() <= tNode), full.elapsed.Seconds()/tNode*1.5)
		}
		fmt.Printf("  RSS target < %.0f MiB: %s\n", rssTargetMiB(full.nodes), verdict(full.hwmMiB < rssTargetMiB(full.nodes)))
		if *limit && !v.fail && v.soak == 0 && full.partial == "" {
			if lim, err := e.limitRun(v, *nodes); err != nil {
				fmt.Printf("  limit (the same Pods by client-go): %v\n", err)
			} else {
				full.limit = lim
				fmt.Printf("  limit (the same %d stage Pods by client-go, same batches, no reconciler): %.1f s; the run took %.2f× it\n",
					full.nodes*v.stagesPerNode(), lim.Seconds(), full.elapsed.Seconds()/lim.Seconds())
			}
		}
		printTable(v, full, rw.base, rw.hasBase)
		fmt.Println()
		runs[v.name] = full
		rows = append(rows, rw)
	}

	// Summary: one line per variant, for the closing note.
	fmt.Println("packageset bench summary (times in s; x = time ÷ (1-node value × waves); RSS = VmHWM MiB; CPU = reconciler s during the run)")
	fmt.Printf("%-3s %6s %6s %5s %8s %8s %8s %7s %7s %7s %7s %7s %6s %6s %8s  %s\n",
		"var", "nodes", "budget", "waves", "time", "1n-time", "1n-stg", "x-node", "x-stage", "stg-max", "stg-p50", "stg-p99", "RSS", "CPU", "req/n-s", "load (before → after)")
	for _, rw := range rows {
		f := rw.full
		xn, xs := "-", "-"
		bt, bs := "-", "-"
		if rw.hasBase {
			w := float64(rw.v.waves(f.nodes))
			xn = fmt.Sprintf("%.2f", f.elapsed.Seconds()/(rw.base.elapsed.Seconds()*w))
			xs = fmt.Sprintf("%.2f", f.elapsed.Seconds()/(rw.base.slowest().Seconds()*w))
			bt, bs = fmt.Sprintf("%.1f", rw.base.elapsed.Seconds()), fmt.Sprintf("%.2f", rw.base.slowest().Seconds())
		}
		fmt.Printf("%-3s %6d %5d%% %5d %8.1f %8s %8s %7s %7s %7.2f %7.2f %7.2f %6.1f %6.1f %8.2f  %s → %s\n",
			rw.v.name, f.nodes, rw.v.budget, rw.v.waves(f.nodes), f.elapsed.Seconds(), bt, bs, xn, xs,
			f.slowest().Seconds(), f.perc(0.5).Seconds(), f.perc(0.99).Seconds(), f.hwmMiB, f.cpuRun, f.requests/f.nodeStages, f.loadBefore, f.load)
	}
	fmt.Println("targets: time ≤ 1.5 × (1-node value) × waves, i.e. x ≤ 1.5 (x-node: 1-node time to complete; x-stage: its slowest stage); RSS < 200 MiB up to 1,000 nodes, 1 GiB beyond")
	printHealthCost(runs)
	if failed {
		os.Exit(1)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

func printRun(v variant, r result) {
	fmt.Printf("packageset bench %s: %s, %d node(s), %d node-stages per node\n", v.name, v.desc, r.nodes, v.stagesPerNode())
	fmt.Printf("  load average before → after: %s → %s\n", r.loadBefore, r.load)
	fmt.Printf("  time to complete:             %.1f s\n", r.elapsed.Seconds())
	fmt.Printf("  node-stage time (Pod seen → Succeeded seen): slowest %.2f s, p50 %.2f s, p99 %.2f s (%d Pods)\n",
		r.slowest().Seconds(), r.perc(0.5).Seconds(), r.perc(0.99).Seconds(), len(r.stages))
	fmt.Printf("  reconciler peak RSS (VmHWM):  %.1f MiB\n", r.hwmMiB)
	fmt.Printf("  reconciler CPU:               %.1f s during the run (%.1f s process life)\n", r.cpuRun, r.cpuLife)
	fmt.Printf("  API requests per node-stage:  %.2f (%.0f requests / %.0f node-stages)\n", r.requests/r.nodeStages, r.requests, r.nodeStages)
	if r.passes > 0 {
		fmt.Printf("  package set passes:           %.0f, %.0f ms each on average (%.1f s in passes)\n", r.passes, r.passSeconds/r.passes*1000, r.passSeconds)
	}
	if len(r.components) > 0 {
		names := make([]string, 0, len(r.components))
		for k := range r.components {
			names = append(names, k)
		}
		sort.Strings(names)
		var parts []string
		for _, k := range names {
			parts = append(parts, fmt.Sprintf("%s %.1f", k, r.components[k]))
		}
		fmt.Printf("  cluster CPU s during the run: %s\n", strings.Join(parts, ", "))
	}
	printExtra(v, r)
	fmt.Printf("  reconciler log:               %s\n", r.log)
}

// run is one measured run of v over n nodes. Errors inside panic (check) so the deferred
// clean-up still runs; they are returned.
func (e *env) run(v variant, n int) (res result, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	res.nodes = n
	tctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	ctx, exit := context.WithCancelCause(tctx)
	defer exit(nil)
	pool := fmt.Sprintf("bench-ps%s-%d", v.name, time.Now().UnixMilli()%1000000)

	// Free loopback ports per run unless given: other clones on the machine may run this
	// bench at the same time, and a fixed port would have it scrape their reconciler.
	metricsAddr, pprofAddr = *metrics, *pprofAt
	if metricsAddr == "" {
		metricsAddr = freeAddr()
	}
	args := []string{"--kubeconfig", e.kubeconfig, "--metrics-bind-address=" + metricsAddr, "--health-probe-bind-address=0"}
	if *pprofDir != "" {
		if pprofAddr == "" {
			pprofAddr = freeAddr()
		}
		args = append(args, "--pprof-bind-address="+pprofAddr)
	}
	args = append(args, strings.Fields(*recArgs)...)
	rec := exec.Command(*recBin, args...)
	logf, err := os.CreateTemp("", "bench-packageset-reconciler-*.log")
	check(err)
	defer logf.Close()
	res.log = logf.Name()
	rec.Stdout, rec.Stderr = logf, logf
	check(rec.Start())
	// A reconciler that exits ends the run at once, naming its log, instead of waiting for a
	// set nobody reconciles.
	exited := make(chan struct{})
	go func() {
		werr := rec.Wait()
		exit(fmt.Errorf("the reconciler exited (%v); log %s", werr, logf.Name()))
		close(exited)
	}()
	defer func() { _ = rec.Process.Kill(); <-exited }()
	for i := 0; ; i++ {
		if _, err := scrape(); err == nil {
			break
		} else if i == 600 {
			check(fmt.Errorf("the reconciler's metrics at %s did not come up (log %s): %v", metricsAddr, res.log, err))
		}
		time.Sleep(100 * time.Millisecond)
	}

	var names []string
	defer func() { e.cleanup(pool, names) }()
	names, err = e.createNodes(ctx, pool, v, n)
	check(err)
	res.budgets = v.budgets(n)
	res.budgetSum = sum(res.budgets)

	// The bench's own stage Pod informer: when each stage Pod was first seen and first seen
	// succeeded.
	jw := newJobWatch(e.cs, pool)
	stopJobs := make(chan struct{})
	defer close(stopJobs)
	jw.start(stopJobs)
	nw := newNodeWatch(e.cs, pool)
	nw.start(stopJobs)
	pw := newPodWatch(e.cs, pool)
	if v.soak > 0 {
		pw.start(stopJobs)
	}

	// Let the nodes' creation settle in the reconciler before the baseline.
	time.Sleep(2 * time.Second)
	base, err := scrape()
	check(err)
	histBase := scrapeHist()
	_, cpuBase := procStats(rec.Process.Pid)
	compBase := e.componentCPU()
	res.loadBefore = loadavg()

	pct := v.budget
	tool := v1alpha1.Package{Name: "tool-a", Version: "1.0.0", Image: "ghcr.io/gantry-dev/tool-a:1"}
	second := v1alpha1.Package{Name: "tool-b", Version: "1.0.0", Image: "ghcr.io/gantry-dev/tool-b:1"}
	if v.reboot {
		second = v1alpha1.Package{Name: "driver", Version: "1.0.0", Image: "ghcr.io/gantry-dev/driver:1",
			Interrupt: &v1alpha1.Interrupt{Type: v1alpha1.InterruptReboot}}
	}
	set := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}, Spec: v1alpha1.PackageSetSpec{
		NodeSelector:       metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/bench-pool": pool}},
		Packages:           []v1alpha1.Package{tool, second},
		InterruptionBudget: &v1alpha1.InterruptionBudget{Percent: &pct}}}
	if p := v.policy(); p != nil {
		set.Spec.InterruptionBudget, set.Spec.DeploymentPolicy = nil, p
	}
	v.decorate(set)

	samplerDone := make(chan struct{})
	stopSampler := make(chan struct{})
	go func() {
		defer close(samplerDone)
		e.sample(rec.Process.Pid, fmt.Sprintf("%s-%d", v.name, n), stopSampler)
	}()
	// Completion is observed with a watch on the set, not by polling: a GET of a set over
	// 1000 nodes (its status maps every node) costs the API server as much as a status write.
	start := time.Now()
	check(e.c.Create(ctx, set))
	var got v1alpha1.PackageSet
	if v.fail {
		got, res.halt, err = e.waitHalt(ctx, pool, n, pw)
	} else {
		wctx, stop := stopAfterCtx(ctx)
		got, err = e.waitComplete(wctx, pool, n)
		stop()
		if by := stoppedBy(ctx); err != nil && by != "" {
			res.partial, res.stoppedBy, err = got.Status.CompleteNodes, by, nil // report what ran
		}
	}
	if err != nil {
		close(stopSampler)
		<-samplerDone
		if cause := context.Cause(ctx); cause != nil && cause != context.DeadlineExceeded && cause != context.Canceled {
			err = cause
		}
		return res, fmt.Errorf("not complete after %s, status %s %s: %v", time.Since(start).Round(time.Second), got.Status.Status, got.Status.CompleteNodes, err)
	}
	res.elapsed = time.Since(start)
	res.statusBytes = statusBytes(got)
	after, err := scrape()
	check(err)
	hist := scrapeHist()
	res.passP50, res.passP99 = quantile(histBase, hist, 0.5), quantile(histBase, hist, 0.99)
	res.cordonMax, res.cordonBy, res.cordonEnd = nw.snapshot()
	res.checkRuns, _ = pw.stats()
	hwm, cpu := procStats(rec.Process.Pid)
	res.components = e.componentCPU()
	for k := range res.components {
		res.components[k] -= compBase[k]
	}
	close(stopSampler)
	<-samplerDone
	res.load = loadavg()
	res.hwmMiB, res.cpuLife, res.cpuRun = hwm/1024, cpu, cpu-cpuBase
	res.requests, res.nodeStages = after.requests-base.requests, float64(n*v.stagesPerNode())
	if res.partial != "" {
		res.nodeStages = float64(max(1, completeCount(res.partial)) * v.stagesPerNode())
	}
	res.passes, res.passSeconds = after.passes-base.passes, after.passSeconds-base.passSeconds
	// The informer may lag the status by a moment: wait (briefly) for every Job's completion.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && len(jw.durations()) < n*v.stagesPerNode() {
		time.Sleep(100 * time.Millisecond)
	}
	res.stages = jw.durations()
	res.jobs = jw.count()
	printMeasured(v, res)
	return res, nil
}

// waitComplete watches the set until its status is complete on all n nodes for its current
// generation (re-watching from the last seen resourceVersion if the watch ends).
func (e *env) waitComplete(ctx context.Context, name string, n int) (v1alpha1.PackageSet, error) {
	var last v1alpha1.PackageSet
	done := func(s *v1alpha1.PackageSet) bool {
		return s.Status.Status == v1alpha1.StatusComplete && s.Status.ObservedGeneration == s.Generation &&
			s.Status.CompleteNodes == fmt.Sprintf("%d/%d", n, n)
	}
	rv := ""
	for ctx.Err() == nil {
		w, err := e.c.Watch(ctx, &v1alpha1.PackageSetList{}, &client.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name), Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			rv = ""
			time.Sleep(time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*v1alpha1.PackageSet)
			if !ok {
				if ev.Type == watch.Error {
					rv = "" // e.g. resourceVersion too old: start over
				}
				continue
			}
			last, rv = *s, s.ResourceVersion
			if done(s) {
				w.Stop()
				return last, nil
			}
		}
		w.Stop()
	}
	return last, ctx.Err()
}

// componentCPU: CPU seconds (process life) of the local cluster's components, by name, from
// the pid files kwokctl keeps beside the kubeconfig (.cache/cluster/kwok/clusters/*/pids).
func (e *env) componentCPU() map[string]float64 {
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(e.kubeconfig), "kwok", "clusters", "*", "pids", "*.pid"))
	out := map[string]float64{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if cpu, ok := cpuSeconds(pid); ok {
			out[strings.TrimSuffix(filepath.Base(f), ".pid")] = cpu
		}
	}
	return out
}

// cleanup deletes the set (waiting for its finalizer), waits for the garbage collector to
// remove its Jobs and their Pods, then deletes the nodes.
func (e *env) cleanup(pool string, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	_ = e.c.Delete(ctx, &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}})
	gone := func(list func() (int, error)) {
		for ctx.Err() == nil {
			if k, err := list(); err == nil && k == 0 {
				return
			}
			time.Sleep(time.Second)
		}
	}
	gone(func() (int, error) {
		err := e.c.Get(ctx, types.NamespacedName{Name: pool}, &v1alpha1.PackageSet{})
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 1, err
	})
	sel := client.MatchingLabels{v1alpha1.LabelPackageSet: pool}
	gone(func() (int, error) {
		var l batchv1.JobList
		err := e.c.List(ctx, &l, sel)
		return len(l.Items), err
	})
	gone(func() (int, error) {
		var l corev1.PodList
		err := e.c.List(ctx, &l, sel)
		return len(l.Items), err
	})
	e.deleteNodes(ctx, names)
	if ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "packageset bench: clean-up of %s incomplete: %v\n", pool, ctx.Err())
	}
}

// jobWatch records, per stage Pod of one set, when the bench first saw it and first saw it
// succeeded.
type jobWatch struct {
	mu      sync.Mutex
	created map[string]time.Time
	done    map[string]time.Time
	inf     toolscache.SharedIndexInformer
}

func newJobWatch(cs kubernetes.Interface, set string) *jobWatch {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = v1alpha1.LabelPackageSet + "=" + set
	}))
	jw := &jobWatch{created: map[string]time.Time{}, done: map[string]time.Time{}, inf: f.Core().V1().Pods().Informer()}
	see := func(obj interface{}) {
		j, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		jw.mu.Lock()
		defer jw.mu.Unlock()
		if _, ok := jw.created[j.Name]; !ok {
			jw.created[j.Name] = now
		}
		if _, ok := jw.done[j.Name]; ok {
			return
		}
		if j.Status.Phase == corev1.PodSucceeded {
			jw.done[j.Name] = now
		}
	}
	_, _ = jw.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o interface{}) { see(o) }})
	return jw
}

func (jw *jobWatch) start(stop <-chan struct{}) {
	go jw.inf.Run(stop)
	toolscache.WaitForCacheSync(stop, jw.inf.HasSynced)
}

// count: stage Pods seen.
func (jw *jobWatch) count() int {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	return len(jw.created)
}

// durations: first seen → complete seen, per completed Job.
func (jw *jobWatch) durations() []time.Duration {
	jw.mu.Lock()
	defer jw.mu.Unlock()
	var out []time.Duration
	for n, d := range jw.done {
		out = append(out, d.Sub(jw.created[n]))
	}
	return out
}

// sample, with -pprof-dir, saves the reconciler's heap profile whenever its RSS reaches a new
// high (at most once a second) and consecutive 10 s CPU profiles, until stop.
func (e *env) sample(pid int, tag string, stop <-chan struct{}) {
	if *pprofDir == "" {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; *pprofCPU; i++ {
			select {
			case <-stop:
				return
			default:
			}
			_ = fetch(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=10", pprofAddr), filepath.Join(*pprofDir, fmt.Sprintf("cpu-%s-%03d.pb.gz", tag, i)))
		}
	}()
	peak := 0.0
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			wg.Wait()
			return
		case <-t.C:
		}
		if rss := vmRSS(pid); rss > peak*1.02 {
			peak = rss
			_ = fetch(fmt.Sprintf("http://%s/debug/pprof/heap", pprofAddr), filepath.Join(*pprofDir, "heap-"+tag+".pb.gz"))
		}
	}
}

func fetch(url, path string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// metricsAddr and pprofAddr are the current run's reconciler's addresses.
var metricsAddr, pprofAddr string

// freeAddr is a loopback address with a port free right now.
func freeAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().String()
}

// counters are the reconciler metrics the bench reads.
type counters struct {
	requests    float64 // rest_client_requests_total, all codes and verbs
	passes      float64 // controller_runtime_reconcile_time_seconds_count{controller="packageset"}
	passSeconds float64 // controller_runtime_reconcile_time_seconds_sum{controller="packageset"}
}

// scrape reads the counters from the reconciler's metrics endpoint.
func scrape() (counters, error) {
	var c counters
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return c, err
	}
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		var dst *float64
		switch {
		case strings.HasPrefix(line, "rest_client_requests_total{"):
			dst, found = &c.requests, true
		case strings.HasPrefix(line, `controller_runtime_reconcile_time_seconds_count{controller="packageset"}`):
			dst = &c.passes
		case strings.HasPrefix(line, `controller_runtime_reconcile_time_seconds_sum{controller="packageset"}`):
			dst = &c.passSeconds
		default:
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			*dst += v
		}
	}
	if !found {
		return c, fmt.Errorf("no rest_client_requests_total yet")
	}
	return c, nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// vmRSS is the current VmRSS (KiB) of pid, 0 if unknown.
func vmRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			v, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return v
		}
	}
	return 0
}

// procStats returns VmHWM (KiB) and utime+stime (seconds) of pid.
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
	cpuSec, ok := cpuSeconds(pid)
	if !ok {
		check(fmt.Errorf("no /proc/%d/stat", pid))
	}
	return hwmKiB, cpuSec
}

// cpuSeconds is utime+stime of pid (at 100 ticks/s).
func cpuSeconds(pid int) (float64, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndex(s, ")")+2:]) // fields from 3 (state) on
	ut, _ := strconv.ParseFloat(fields[11], 64)               // field 14 utime
	st, _ := strconv.ParseFloat(fields[12], 64)               // field 15 stime
	return (ut + st) / 100, true
}

func check(err error) {
	if err != nil {
		panic(fmt.Sprint("packageset bench: ", err))
	}
}
