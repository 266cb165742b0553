// Command bench times the Gantry provider against its limit and Terraform's own floor on the
// local cluster (run by `make bench`, which sets up the cluster, reconciler and mirror). Each of
// -rounds back-to-back rounds, so ratios compare numbers taken under the same load, measures the
// limit (N Performers by a client-go program, limit.go), terraform plan/apply/no-op plan/destroy
// of N gantry_performer beside N terraform_data, kwok's ready delay, and the wait latency from
// the reconciler's status write to the provider's Create returning. It prints numbers and never
// fails on them.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gantry-dev/terraform-provider-gantry/hack/bench/table"
)

var (
	kubeconfig = flag.String("kubeconfig", "", "kubeconfig of the local cluster")
	tfBin      = flag.String("terraform", "terraform", "Terraform CLI")
	tfrc       = flag.String("tfrc", "", "Terraform CLI config with the provider's filesystem mirror")
	workdir    = flag.String("workdir", ".cache/bench", "scratch directory")
	recLog     = flag.String("reconciler-log", "", "the running reconciler's log file (JSON lines)")
	count      = flag.Int("n", 100, "resources per configuration")
	samples    = flag.Int("samples", 20, "wait-latency samples (0: skip)")
	parallel   = flag.Int("parallelism", 10, "terraform -parallelism")
	rounds     = flag.Int("rounds", 3, "rounds of limit, gantry and terraform_data")
	limitQPS   = flag.Int("limit-qps", 200, "client QPS of the limit program (burst twice it)")
)

const namespace = "gantry-bench"

func main() {
	flag.Parse()
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	check(err)
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	check(err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		check(err)
	}

	fmt.Printf("Gantry bench: %d resources, terraform -parallelism=%d, %d rounds (limit: client-go, QPS %d)\n\n", *count, *parallel, *rounds, *limitQPS)
	delay := kwokReadyDelay(ctx, cs, 5)

	// Each round measures the limit, Gantry and Terraform's floor back to back, so a ratio
	// compares numbers taken under the same load of the (shared) machine.
	var gantry, floor []map[string]float64
	var limit, slotLimit []limitRun
	for r := 1; r <= *rounds; r++ {
		l := runLimit(ctx, cfg, fmt.Sprintf("limit%d", r), *count, float32(*limitQPS))
		fmt.Printf("round %d: limit    create → all Running %.2f s, delete → all gone %.2f s\n", r, l.create, l.delete)
		limit = append(limit, l)
		l = runLimitSlots(ctx, cfg, fmt.Sprintf("slots%d", r), *count, *parallel, float32(*limitQPS))
		fmt.Printf("round %d: limit ×%d create → all Running %.2f s, delete → all gone %.2f s\n", r, *parallel, l.create, l.delete)
		slotLimit = append(slotLimit, l)
		// Round 1 also traces each performer (trace.go) and the API server's time by request.
		var tr *tracer
		var api0 apiTimes
		tctx, stop := context.WithCancel(ctx)
		if r == 1 {
			tr, api0 = startTrace(tctx, cfg, "bench-"), scrapeAPITimes(ctx, cs)
		}
		gantry = append(gantry, runStack(fmt.Sprintf("round %d: gantry", r), filepath.Join(*workdir, "gantry"), performerConfig("bench", *count)))
		stop()
		if tr != nil {
			tr.report()
			reportAPITimes(api0, scrapeAPITimes(ctx, cs), 8)
		}
		floor = append(floor, runStack(fmt.Sprintf("round %d: floor", r), filepath.Join(*workdir, "floor"), floorConfig(*count)))
	}
	printTable(gantry, floor, limit, slotLimit)

	applyFloor := median(column(floor, "apply")) + math.Ceil(float64(*count)/float64(*parallel))*delay
	fmt.Printf("\nkwok ready delay (Pod created → Ready, median): %.3f s\n", delay)
	fmt.Printf("apply floor = terraform_data apply + ceil(%d/%d) × ready delay = %.2f s; gantry apply (median) / floor = %.2f\n",
		*count, *parallel, applyFloor, median(column(gantry, "apply"))/applyFloor)

	if *samples <= 0 {
		return
	}
	lat := waitLatency()
	if len(lat) > 0 {
		sort.Float64s(lat)
		fmt.Printf("\nwait latency (reconciler writes Running → Create returns), %d samples: min %.3f s, median %.3f s, p90 %.3f s, max %.3f s (target median ≤ 0.15 s)\n",
			len(lat), lat[0], lat[len(lat)/2], lat[len(lat)*9/10], lat[len(lat)-1])
		table.Add(table.Row{Figure: fmt.Sprintf("wait latency: reconciler writes Running → Create returns (median of %d)", len(lat)),
			Value: lat[len(lat)/2], Unit: "s", Target: "≤ 0.15 s", Met: table.Met(lat[len(lat)/2] <= 0.15)})
	}
}

// printTable prints Gantry beside its limit, step by step: each cell the range (min–max) over
// the rounds, the ratio column the range of the per-round ratios. Apply and destroy are
// compared with the client-go limit (runLimit), plan and no-op plan with the same plans of
// N terraform_data (no API calls at all: Terraform's own cost). Apply and destroy are also
// compared, without a target, with the client-go limit at Terraform's -parallelism
// (runLimitSlots): what Terraform and the provider add to each object's own latency.
func printTable(gantry, floor []map[string]float64, limit, slotLimit []limitRun) {
	limits := map[string][]float64{}
	for _, l := range limit {
		limits["apply"] = append(limits["apply"], l.create)
		limits["destroy"] = append(limits["destroy"], l.delete)
	}
	for _, l := range slotLimit {
		limits["apply ×slots"] = append(limits["apply ×slots"], l.create)
		limits["destroy ×slots"] = append(limits["destroy ×slots"], l.delete)
	}
	fmt.Printf("\n%-12s %-18s %-16s %-26s %-14s %s\n", "step", "limit is", "gantry (s)", "limit (s)", "ratio", "target")
	for _, s := range []string{"apply", "destroy", "apply ×slots", "destroy ×slots", "no-op plan", "plan"} {
		what, lim, target, label := "client-go", limits[s], "≤ 1.10", s
		if strings.HasSuffix(s, " ×slots") {
			what, target = fmt.Sprintf("client-go ×%d", *parallel), ""
			s = strings.TrimSuffix(s, " ×slots")
			label = s + " (limit at the same -parallelism)"
		}
		if lim == nil {
			what, lim, target = "terraform_data", column(floor, s), ""
		}
		g := column(gantry, s)
		ratios := make([]float64, len(g))
		for i := range g {
			ratios[i] = g[i] / lim[i]
		}
		fmt.Printf("%-12s %-18s %-16s %-26s %-14s %s\n", s, what, span(g, "%.2f"), span(lim, "%.2f"), span(ratios, "%.2f"), target)
		row := table.Row{Figure: fmt.Sprintf("%d gantry_performer, -parallelism %d: %s (median of %d rounds)", *count, *parallel, label, len(g)),
			Value: median(g), Unit: "s", Limit: median(lim), LimitIs: fmt.Sprintf("%d %s", *count, what), Ratio: median(ratios)}
		if target != "" {
			row.Target, row.Met = "≤ 1.1× limit", table.Met(median(ratios) <= 1.1)
		}
		table.Add(row)
	}
}

// column returns step s of every round.
func column(rounds []map[string]float64, s string) []float64 {
	out := make([]float64, len(rounds))
	for i, r := range rounds {
		out[i] = r[s]
	}
	return out
}

// span formats the range of vs ("min–max", or the one value).
func span(vs []float64, f string) string {
	lo, hi := slices.Min(vs), slices.Max(vs)
	if len(vs) == 1 || fmt.Sprintf(f, lo) == fmt.Sprintf(f, hi) {
		return fmt.Sprintf(f, lo)
	}
	return fmt.Sprintf(f+"–"+f, lo, hi)
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	sort.Float64s(s)
	return s[len(s)/2]
}

// runStack writes cfg into dir and returns the wall-clock seconds of plan, apply, no-op plan
// and destroy; name labels its line.
func runStack(name, dir, cfg string) map[string]float64 {
	check(os.RemoveAll(dir))
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "main.tf"), []byte(cfg), 0o644))
	tf(dir, nil, "init", "-input=false", "-upgrade")
	out := map[string]float64{}
	par := fmt.Sprintf("-parallelism=%d", *parallel)
	out["plan"] = timed(func() { tf(dir, nil, "plan", "-input=false", "-out=plan.tfplan", par) })
	out["apply"] = timed(func() { tf(dir, nil, "apply", "-input=false", par, "plan.tfplan") })
	out["no-op plan"] = timed(func() { tf(dir, nil, "plan", "-input=false", "-detailed-exitcode", par) })
	out["destroy"] = timed(func() { tf(dir, nil, "destroy", "-input=false", "-auto-approve", par) })
	fmt.Printf("%s plan %.2f s, apply %.2f s, no-op plan %.2f s, destroy %.2f s\n", name, out["plan"], out["apply"], out["no-op plan"], out["destroy"])
	return out
}

func floorConfig(n int) string {
	return fmt.Sprintf("resource \"terraform_data\" \"d\" {\n  count = %d\n  input = count.index\n}\n", n)
}

func performerConfig(prefix string, n int) string {
	return fmt.Sprintf(`terraform {
  required_providers {
    gantry = { source = "gantry-dev/gantry" }
  }
}
provider "gantry" {}
resource "gantry_performer" "p" {
  count     = %d
  name      = "%s-${count.index}"
  namespace = "%s"
  image     = "ghcr.io/layr-labs/hello-performer:v1.0.0"
}
`, n, prefix, namespace)
}

// tf runs the Terraform CLI in dir with the mirror config and the cluster's kubeconfig.
func tf(dir string, env []string, args ...string) {
	cmd := exec.Command(*tfBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+*tfrc, "KUBE_CONFIG_PATH="+*kubeconfig, "TF_IN_AUTOMATION=1")
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		// -detailed-exitcode: 2 means changes are present, which a no-op plan must not have.
		fmt.Fprintf(os.Stderr, "terraform %s in %s: %v\n%s\n", strings.Join(args, " "), dir, err, out)
		os.Exit(1)
	}
}

func timed(f func()) float64 {
	t := time.Now()
	f()
	return time.Since(t).Seconds()
}

// kwokReadyDelay creates n plain Pods and returns the median seconds from create to the
// Ready condition observed on a watch.
func kwokReadyDelay(ctx context.Context, cs *kubernetes.Clientset, n int) float64 {
	var ds []float64
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("bench-ready-%d", i)
		pods := cs.CoreV1().Pods(namespace)
		_ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		check(err)
		t0 := time.Now()
		_, err = pods.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"gantry.dev/node-pool": "cpu"},
				Containers:   []corev1.Container{{Name: "c", Image: "busybox"}},
			},
		}, metav1.CreateOptions{})
		check(err)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Deleted && podReady(p) {
				ds = append(ds, time.Since(t0).Seconds())
				break
			}
		}
		w.Stop()
		_ = pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	}
	sort.Float64s(ds)
	return ds[len(ds)/2]
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// waitLatency applies -samples performers one at a time (-parallelism=1) with provider debug
// logs, then pairs, per performer, the reconciler's log line that wrote phase Running with the
// provider's log line that ended the wait, and returns the differences in seconds.
func waitLatency() []float64 {
	if *recLog == "" {
		return nil
	}
	dir := filepath.Join(*workdir, "latency")
	check(os.RemoveAll(dir))
	check(os.MkdirAll(dir, 0o755))
	check(os.WriteFile(filepath.Join(dir, "main.tf"), []byte(performerConfig("lat", *samples)), 0o644))
	tf(dir, nil, "init", "-input=false", "-upgrade")
	provLog := filepath.Join(dir, "provider.log")
	tf(dir, []string{"TF_LOG_PROVIDER=DEBUG", "TF_LOG_PATH=" + provLog}, "apply", "-input=false", "-auto-approve", "-parallelism=1")
	defer tf(dir, nil, "destroy", "-input=false", "-auto-approve")

	ready := reconcilerRunningTimes(*recLog)
	done := providerWaitDoneTimes(provLog)
	var out []float64
	for key, t := range done {
		if r, ok := ready[key]; ok {
			out = append(out, t.Sub(r).Seconds())
		}
	}
	if len(out) == 0 {
		fmt.Printf("\nwait latency: no matching log lines (reconciler %d, provider %d)\n", len(ready), len(done))
	}
	return out
}

// reconcilerRunningTimes reads the reconciler's JSON log and returns, per "namespace/name",
// the time of the last status write with phase Running (the reconciler's "phase" line).
func reconcilerRunningTimes(path string) map[string]time.Time {
	out := map[string]time.Time{}
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l map[string]any
		// The "phase" line follows the status write that set the phase (rfc3339nano timestamps:
		// hack/reconciler.sh starts the reconciler with --zap-time-encoding=rfc3339nano).
		if json.Unmarshal(sc.Bytes(), &l) != nil || l["msg"] != "phase" || l["phase"] != "Running" {
			continue
		}
		ts, _ := l["ts"].(string)
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			continue
		}
		key := fmt.Sprint(l["namespace"], "/", l["name"])
		out[key] = t
	}
	return out
}

// tflogLine matches the provider's "Performer is ready" line (applyAndWait), logged as Create's
// wait returns.
var tflogLine = regexp.MustCompile(`^(\S+) \[INFO\]\s+provider\.terraform-provider-gantry[^:]*: Performer is ready: .*performer=(\S+)`)

// providerWaitDoneTimes reads Terraform's provider log and returns, per "namespace/name",
// the time the wait engine returned.
func providerWaitDoneTimes(path string) map[string]time.Time {
	out := map[string]time.Time{}
	f, err := os.Open(path)
	check(err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := tflogLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		t, err := time.Parse("2006-01-02T15:04:05.000Z0700", m[1])
		if err != nil {
			continue
		}
		out[strings.Trim(m[2], `"`)] = t
	}
	return out
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
