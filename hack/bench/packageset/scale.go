package main

// Scale and health-check variants. d is variant c with b's reboot interrupt, meant for -nodes
// 10000. h runs h0 (a 20 s soak re-running the checks every 10 s), hc (h0 plus an exec health
// check each round; its cost is hc − h0) and hf (hc whose check starts failing, via kwok's
// chaos label, once 30% of nodes are complete; it reports the time to the halt and checks that
// no node starts after it). Every run also watches for more nodes cordoned at once than the
// budget (printed as a VIOLATION) and reports the package set pass time.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/hack/bench/table"
	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

var (
	benchQPS      = flag.Float64("qps", 1000, "client QPS of the bench (Burst 2×): node creation and clean-up run in parallel at this rate")
	createWorkers = flag.Int("create-workers", 32, "parallel node creates and deletes")
	haltSettle    = flag.Duration("halt-settle", 30*time.Second, "variant hf: how long to watch for node starts after the rollout halted")
	stopAfter     = flag.Duration("stop-after", 0, "stop waiting for complete after this long and report the run so far (nodes complete, RSS, pass time, requests per node-stage of the complete nodes); 0: wait until complete (or -timeout)")
	failAtFrac    = flag.Float64("fail-at", 0.3, "variant hf: fraction of the nodes complete when the health check starts failing")
)

// chaosLabel makes the local cluster's kwok fail a pod's containers (hack/cluster/kwokctl.yaml
// stage pod-container-running-failed).
const chaosLabel = "pod-container-running-failed.stage.kwok.x-k8s.io"

func init() {
	soak, every := 20*time.Second, 10*time.Second
	allVariants["d"] = variant{name: "d", desc: "2 packages, reboot interrupt on one, 3 compartments, budget 25% each, exponential batches from 1", budget: 25, reboot: true, compartments: 3}
	allVariants["h0"] = variant{name: "h0", desc: "2 packages, budget 25%, soak 20 s with check rounds every 10 s, no health check", budget: 25, soak: soak, every: every}
	allVariants["hc"] = variant{name: "hc", desc: "h0 plus an exec health check every 10 s while a node soaks", budget: 25, soak: soak, every: every, check: true}
	allVariants["hf"] = variant{name: "hf", desc: "hc whose health check starts failing mid-rollout (onHealthFailure halt)", budget: 25, soak: soak, every: every, check: true, fail: true}
}

// expandVariants splits -variants, "h" standing for h0,hc,hf.
func expandVariants(s string) []string {
	var out []string
	for _, name := range strings.Split(s, ",") {
		if strings.TrimSpace(name) == "h" {
			out = append(out, "h0", "hc", "hf")
			continue
		}
		out = append(out, name)
	}
	return out
}

// healthCheck is the hc/hf check; failing adds the chaos label to its pod.
func healthCheck(failing bool) v1alpha1.HealthCheck {
	hc := v1alpha1.HealthCheck{Name: "bench", Image: "busybox:1.36", Command: []string{"true"}}
	if failing {
		hc.PodLabels = map[string]string{chaosLabel: "true"}
	}
	return hc
}

// decorate adds the variant's rollout (soak, health check) to set.
func (v variant) decorate(set *v1alpha1.PackageSet) {
	if v.soak == 0 {
		return
	}
	ro := &v1alpha1.Rollout{SoakDuration: &metav1.Duration{Duration: v.soak}, SoakCheckInterval: &metav1.Duration{Duration: v.every},
		OnHealthFailure: v1alpha1.HealthFailureHalt}
	if v.check {
		ro.HealthChecks = []v1alpha1.HealthCheck{healthCheck(false)}
	}
	set.Spec.Rollout = ro
}

// budgets: the budget's node count per compartment ("" without a policy) over n nodes.
func (v variant) budgets(n int) map[string]int {
	pct := v.budget
	out := map[string]int{}
	if v.compartments == 0 {
		out[""] = packageset.Budget(&v1alpha1.InterruptionBudget{Percent: &pct}, n)
		return out
	}
	count := map[string]int{}
	for i := 0; i < n; i++ {
		count[v.compartmentOf(i)]++
	}
	for c, m := range count {
		out[c] = packageset.Budget(&v1alpha1.InterruptionBudget{Percent: &pct}, m)
	}
	return out
}

func sum(m map[string]int) int {
	t := 0
	for _, v := range m {
		t += v
	}
	return t
}

// statusBytes is the size of s's status as JSON (the status maps every node: it grows with
// the nodes toward etcd's request limit, 1.5 MiB by default).
func statusBytes(s v1alpha1.PackageSet) int {
	b, err := json.Marshal(s.Status)
	if err != nil {
		return 0
	}
	return len(b)
}

// rssTargetMiB is the reconciler's peak RSS target over n nodes, in MiB: < 200 up to 1,000
// nodes, ≤ 1 GiB beyond (the 10,000-node target).
func rssTargetMiB(n int) float64 {
	if n > 1000 {
		return 1024
	}
	return 200
}

// stoppedBy names the flag that ended a run's wait for complete, once ctx (the run's context,
// under -timeout) or stopAfterCtx's child of it has ended: "-stop-after <d>" when ctx is still
// live, "-timeout <d>" when ctx hit its deadline, "" when it ended for another cause (the
// reconciler exited) or has not ended.
func stoppedBy(ctx context.Context) string {
	switch {
	case ctx.Err() == nil && *stopAfter > 0:
		return fmt.Sprintf("-stop-after %s", *stopAfter)
	case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return fmt.Sprintf("-timeout %s", *timeout)
	}
	return ""
}

// stopAfterCtx bounds the wait for complete by -stop-after (when set).
func stopAfterCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if *stopAfter <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, *stopAfter)
}

// createNodes creates n kwok nodes of pool in parallel (-create-workers) and returns the
// names created (also on error, for the clean-up).
func (e *env) createNodes(ctx context.Context, pool string, v variant, n int) ([]string, error) {
	names := make([]string, n)
	created := make([]bool, n)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
	for w := 0; w < max(1, *createWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				name := fmt.Sprintf("%s-%d", pool, i)
				names[i] = name
				node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
					Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": name, "gantry.dev/bench-pool": pool}},
					Status: corev1.NodeStatus{Capacity: alloc, Allocatable: alloc}}
				if v.compartments > 0 {
					node.Labels["gantry.dev/bench-compartment"] = v.compartmentOf(i)
				}
				err := e.c.Create(ctx, node)
				mu.Lock()
				if err == nil {
					created[i] = true
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	var out []string
	for i, ok := range created {
		if ok {
			out = append(out, names[i])
		}
	}
	return out, firstErr
}

// deleteNodes deletes names in parallel (-create-workers).
func (e *env) deleteNodes(ctx context.Context, names []string) {
	ch := make(chan string)
	var wg sync.WaitGroup
	for w := 0; w < max(1, *createWorkers); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range ch {
				_ = e.c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
			}
		}()
	}
	for _, n := range names {
		ch <- n
	}
	close(ch)
	wg.Wait()
}

// nodeWatch follows the pool's nodes and keeps the most cordoned at once, overall and per
// compartment.
type nodeWatch struct {
	mu       sync.Mutex
	key      string            // the set's cordon annotation
	cordoned map[string]string // node → compartment, while cordoned
	now      map[string]int
	most     map[string]int
	mostAll  int
	inf      toolscache.SharedIndexInformer
}

func newNodeWatch(cs kubernetes.Interface, pool string) *nodeWatch {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "gantry.dev/bench-pool=" + pool
	}))
	nw := &nodeWatch{key: v1alpha1.AnnotationCordonPrefix + pool, cordoned: map[string]string{}, now: map[string]int{}, most: map[string]int{},
		inf: f.Core().V1().Nodes().Informer()}
	see := func(obj interface{}) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		_, ann := n.Annotations[nw.key]
		nw.set(n.Name, n.Labels["gantry.dev/bench-compartment"], n.Spec.Unschedulable || ann)
	}
	_, _ = nw.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o interface{}) { see(o) },
		DeleteFunc: func(obj interface{}) {
			if n, ok := obj.(*corev1.Node); ok {
				nw.set(n.Name, "", false)
			}
		}})
	return nw
}

func (nw *nodeWatch) set(name, comp string, cordoned bool) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	old, was := nw.cordoned[name]
	switch {
	case cordoned && !was:
		nw.cordoned[name] = comp
		nw.now[comp]++
		nw.most[comp] = max(nw.most[comp], nw.now[comp])
		nw.mostAll = max(nw.mostAll, len(nw.cordoned))
	case !cordoned && was:
		delete(nw.cordoned, name)
		nw.now[old]--
	}
}

func (nw *nodeWatch) start(stop <-chan struct{}) {
	go nw.inf.Run(stop)
	toolscache.WaitForCacheSync(stop, nw.inf.HasSynced)
}

// snapshot: the most cordoned at once (overall, per compartment) and how many are cordoned now.
func (nw *nodeWatch) snapshot() (most int, by map[string]int, now int) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	by = map[string]int{}
	for k, v := range nw.most {
		by[k] = v
	}
	return nw.mostAll, by, len(nw.cordoned)
}

// podWatch follows the set's health check pods: how many, and when one was first seen Failed.
type podWatch struct {
	mu        sync.Mutex
	seen      map[string]bool
	firstFail time.Time
	inf       toolscache.SharedIndexInformer
}

func newPodWatch(cs kubernetes.Interface, set string) *podWatch {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = v1alpha1.LabelPackageSet + "=" + set
	}))
	pw := &podWatch{seen: map[string]bool{}, inf: f.Core().V1().Pods().Informer()}
	see := func(obj interface{}) {
		p, ok := obj.(*corev1.Pod)
		if !ok || !strings.HasPrefix(p.Labels[v1alpha1.LabelStage], "health-") {
			return
		}
		pw.mu.Lock()
		defer pw.mu.Unlock()
		pw.seen[p.Name] = true
		if p.Status.Phase == corev1.PodFailed && pw.firstFail.IsZero() {
			pw.firstFail = time.Now()
		}
	}
	_, _ = pw.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o interface{}) { see(o) }})
	return pw
}

func (pw *podWatch) start(stop <-chan struct{}) {
	go pw.inf.Run(stop)
	toolscache.WaitForCacheSync(stop, pw.inf.HasSynced)
}

func (pw *podWatch) stats() (int, time.Time) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return len(pw.seen), pw.firstFail
}

// haltResult is what variant hf measured.
type haltResult struct {
	patched, firstFail, halted, erroring time.Time
	failedNodes, startedAfter            int
	completeAtHalt                       string
}

// completeCount parses status.completeNodes "k/n".
func completeCount(s string) int {
	k, _, _ := strings.Cut(s, "/")
	v, _ := strconv.Atoi(k)
	return v
}

// failCheck patches the set's health check to fail (a merge patch replaces the list).
func (e *env) failCheck(ctx context.Context, name string) error {
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"rollout": map[string]any{"healthChecks": []v1alpha1.HealthCheck{healthCheck(true)}}}})
	if err != nil {
		return err
	}
	return e.c.Patch(ctx, &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: name}}, client.RawPatch(types.MergePatchType, body))
}

// haltTracker follows the set's statuses during an hf run, by the status's counts (the node
// maps list at most packageset.MaxListedNodes nodes): a node has started once it left
// Pending, which it never returns to within one rollout.
type haltTracker struct {
	h             haltResult
	startedAtHalt int // nodes out of Pending when the halt was seen
}

// observe one status of the set over n nodes.
func (t *haltTracker) observe(s *v1alpha1.PackageSet, n int) {
	started := n - int(s.Status.RolloutCounts[v1alpha1.RolloutPending])
	failed := int(s.Status.RolloutCounts[v1alpha1.RolloutFailed])
	if !t.h.halted.IsZero() {
		t.h.startedAfter = max(t.h.startedAfter, started-t.startedAtHalt)
	}
	if failed > 0 && t.h.halted.IsZero() && !t.h.patched.IsZero() {
		t.h.halted, t.h.failedNodes, t.h.completeAtHalt = time.Now(), failed, s.Status.CompleteNodes
		t.startedAtHalt = started
	}
	if s.Status.Status == v1alpha1.StatusErroring && t.h.erroring.IsZero() && !t.h.patched.IsZero() {
		t.h.erroring = time.Now()
	}
}

// waitHalt (variant hf) watches the set; once -fail-at of the n nodes are complete it makes
// the health check fail, then waits for a status naming a Failed node (the halt) and watches
// -halt-settle more for nodes starting after it.
func (e *env) waitHalt(ctx context.Context, name string, n int, pw *podWatch) (v1alpha1.PackageSet, haltResult, error) {
	var last v1alpha1.PackageSet
	t := &haltTracker{}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	rv := ""
	for ctx.Err() == nil {
		w, err := e.c.Watch(ctx, &v1alpha1.PackageSetList{}, &client.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("metadata.name", name), Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			rv = ""
			time.Sleep(time.Second)
			continue
		}
	events:
		for {
			select {
			case <-ctx.Done():
				break events
			case <-tick.C:
				if !t.h.halted.IsZero() && time.Since(t.h.halted) >= *haltSettle {
					w.Stop()
					_, t.h.firstFail = pw.stats()
					return last, t.h, nil
				}
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events
				}
				s, ok := ev.Object.(*v1alpha1.PackageSet)
				if !ok {
					if ev.Type == watch.Error {
						rv = ""
					}
					continue
				}
				last, rv = *s, s.ResourceVersion
				if t.h.patched.IsZero() && float64(completeCount(s.Status.CompleteNodes)) >= *failAtFrac*float64(n) {
					if err := e.failCheck(ctx, name); err != nil {
						w.Stop()
						return last, t.h, fmt.Errorf("making the health check fail: %w", err)
					}
					t.h.patched = time.Now()
				}
				t.observe(s, n)
			}
		}
		w.Stop()
	}
	_, t.h.firstFail = pw.stats()
	return last, t.h, ctx.Err()
}

// histogram is the cumulative bucket counts of controller_runtime_reconcile_time_seconds for
// controller packageset, by upper bound.
type histogram map[float64]float64

// scrapeHist reads the package set pass-time histogram from the reconciler's metrics.
func scrapeHist() histogram {
	h := histogram{}
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return h
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return h
	}
	const prefix = `controller_runtime_reconcile_time_seconds_bucket{controller="packageset",le="`
	for _, line := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, val, ok := strings.Cut(rest, `"}`)
		if !ok {
			continue
		}
		bound := math.Inf(1)
		if le != "+Inf" {
			if bound, err = strconv.ParseFloat(le, 64); err != nil {
				continue
			}
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			h[bound] = v
		}
	}
	return h
}

// quantile q of after − before, linearly interpolated within the bucket (the last finite
// bound when it falls in +Inf); 0 without passes.
func quantile(before, after histogram, q float64) float64 {
	bounds := make([]float64, 0, len(after))
	for b := range after {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	if len(bounds) == 0 {
		return 0
	}
	total := after[bounds[len(bounds)-1]] - before[bounds[len(bounds)-1]]
	if total <= 0 {
		return 0
	}
	rank, prevBound, prevCount := q*total, 0.0, 0.0
	for _, b := range bounds {
		c := after[b] - before[b]
		if c >= rank {
			if math.IsInf(b, 1) {
				return prevBound
			}
			if c == prevCount {
				return b
			}
			return prevBound + (b-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = b, c
	}
	return prevBound
}

// tableRow prints one row of the run's table and records it for `make bench`'s table
// (hack/bench/table). limit is measured in the same run (0: none; ratio = value ÷ limit);
// target, when set, is the most the figure may be: a number in unit (0: none) or, with a
// limit, a multiple of it (targetX > 0: ≤ targetX × limit).
func tableRow(figure string, value float64, unit string, limit, target float64, limitIs ...string) {
	tableRowX(figure, value, unit, limit, target, 0, limitIs...)
}

// tableRowX is tableRow with a target relative to the limit (≤ targetX × limit).
func tableRowX(figure string, value float64, unit string, limit, target, targetX float64, limitIs ...string) {
	f := func(x float64) string {
		if x == 0 || math.IsNaN(x) {
			return "-"
		}
		return strings.TrimSpace(fmt.Sprintf("%.4g %s", x, unit))
	}
	ratio := "-"
	switch {
	case limit > 0:
		ratio = fmt.Sprintf("%.2f", value/limit)
	case target > 0:
		ratio = fmt.Sprintf("%.2f", value/target)
	}
	fmt.Printf("| %s | %s | %s | %s | %s |\n", figure, strings.TrimSpace(fmt.Sprintf("%.4g %s", value, unit)), f(limit), f(target), ratio)
	row := table.Row{Figure: figure, Value: value, Unit: unit, Limit: limit, LimitIs: strings.Join(limitIs, "")}
	switch {
	case targetX > 0 && limit > 0:
		row.Target, row.Met = fmt.Sprintf("≤ %g× limit", targetX), table.Met(value <= targetX*limit)
	case target > 0:
		row.Target, row.Met = strings.TrimSpace(fmt.Sprintf("≤ %g %s", target, unit)), table.Met(value <= target)
	}
	table.Add(row)
}

// printMeasured prints the run's main figures before its clean-up, which over 10,000 nodes
// takes minutes (the full report follows it).
func printMeasured(v variant, r result) {
	fmt.Printf("packageset bench %s over %d nodes measured (report after the clean-up): %.1f s, %s complete, peak RSS %.1f MiB, CPU %.1f s, %.0f requests, %.0f passes (%.1f s in passes)\n",
		v.name, r.nodes, r.elapsed.Seconds(), orDash(r.partial), r.hwmMiB, r.cpuRun, r.requests, r.passes, r.passSeconds)
}

func orDash(s string) string {
	if s == "" {
		return "all"
	}
	return s
}

// printExtra prints what the scale variants add to a run's report (cordons, pass time, health
// checks, the halt).
func printExtra(v variant, r result) {
	if r.partial != "" {
		fmt.Printf("  PARTIAL: stopped waiting after %.0f s (%s) with %s nodes complete; requests per node-stage over the complete nodes only\n", r.elapsed.Seconds(), r.stoppedBy, r.partial)
	}
	fmt.Printf("  package set pass time:        mean %.1f ms, p50 %.1f ms, p99 %.1f ms (%.0f passes)\n",
		r.passMean()*1000, r.passP50*1000, r.passP99*1000, r.passes)
	if r.statusBytes > 0 {
		fmt.Printf("  set status size:              %d bytes (%.0f per node; etcd's default request limit 1.5 MiB = %d bytes)\n",
			r.statusBytes, float64(r.statusBytes)/float64(max(1, r.nodes)), 1536*1024)
	}
	verdictC := "within"
	if r.cordonMax > r.budgetSum {
		verdictC = "VIOLATION: above"
	}
	fmt.Printf("  most nodes cordoned at once:  %d, %s the budget %d (per compartment: %s); %d still cordoned at the end\n",
		r.cordonMax, verdictC, r.budgetSum, perCompartment(r.cordonBy, r.budgets), r.cordonEnd)
	if v.soak > 0 {
		fmt.Printf("  health check pods:            %d (stage Pods seen: %d)\n", r.checkRuns, r.jobs)
	}
	if v.fail {
		h := r.halt
		fmt.Printf("  check made to fail at %s complete; first failed check pod %s after; halt (a Failed node in the status) %s after the patch, %s after the first failed check (%d Failed node(s), %s complete); status erroring %s after the patch\n",
			fmt.Sprintf("%.0f%%", *failAtFrac*100), since(h.patched, h.firstFail), since(h.patched, h.halted), since(h.firstFail, h.halted), h.failedNodes, h.completeAtHalt, since(h.patched, h.erroring))
		if h.startedAfter > 0 {
			fmt.Printf("  VIOLATION: %d node(s) started after the rollout halted\n", h.startedAfter)
		} else {
			fmt.Printf("  no node started in the %s after the halt\n", *haltSettle)
		}
	}
}

func since(a, b time.Time) string {
	if a.IsZero() || b.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%.1f s", b.Sub(a).Seconds())
}

func perCompartment(most, budgets map[string]int) string {
	keys := make([]string, 0, len(budgets))
	for k := range budgets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		mark := ""
		if most[k] > budgets[k] {
			mark = " VIOLATION"
		}
		name := k
		if name == "" {
			name = "set"
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d%s", name, most[k], budgets[k], mark))
	}
	return strings.Join(parts, ", ")
}

func (r result) passMean() float64 {
	if r.passes == 0 {
		return 0
	}
	return r.passSeconds / r.passes
}

// printTable prints a run's rows of the common table (target(node) when a baseline ran).
func printTable(v variant, full, base result, hasBase bool) {
	p := fmt.Sprintf("packageset %d nodes %s: ", full.nodes, v.name)
	limit, factor := 0.0, 1.5
	if hasBase {
		limit = base.elapsed.Seconds() * float64(v.waves(full.nodes))
	}
	if v.name == "c" || v.name == "d" {
		factor = 2 // exponential waves: ≤ 2 × (waves × one node's time)
	}
	if v.fail {
		h := full.halt
		if !h.firstFail.IsZero() && !h.halted.IsZero() {
			tableRow(p+"failed check → rollout halted", h.halted.Sub(h.firstFail).Seconds(), "s", 0, 0)
		}
		if !h.halted.IsZero() {
			tableRow(p+"check made failing → rollout halted", h.halted.Sub(h.patched).Seconds(), "s", 0, 0)
		}
		tableRow(p+"nodes started after the halt", float64(h.startedAfter), "", 0, 0)
	} else if full.partial != "" {
		tableRow(p+fmt.Sprintf("nodes complete after %.0f s (partial run, %s)", full.elapsed.Seconds(), full.stoppedBy), float64(completeCount(full.partial)), "", float64(full.nodes), 0)
	} else {
		tableRowX(p+"time to complete", full.elapsed.Seconds(), "s", limit, 0, factor, fmt.Sprintf("%d waves × one node's time", v.waves(full.nodes)))
		if full.limit > 0 {
			tableRow(p+"time to complete vs the same stage Pods without a reconciler", full.elapsed.Seconds(), "s", full.limit.Seconds(), 0,
				fmt.Sprintf("client-go, %d Pods in the same batches", full.nodes*v.stagesPerNode()))
		}
	}
	tableRow(p+"reconciler peak RSS", full.hwmMiB, "MiB", 0, rssTargetMiB(full.nodes))
	tableRow(p+"reconciler CPU during the run", full.cpuRun, "s", 0, 0)
	tableRow(p+"API requests per node-stage", full.requests/full.nodeStages, "", 0, 0)
	tableRow(p+"pass time mean", full.passMean()*1000, "ms", 0, 0)
	tableRow(p+"pass time p99", full.passP99*1000, "ms", 0, 0)
	if full.statusBytes > 0 {
		tableRow(p+"set status size", float64(full.statusBytes)/1024, "KiB", 1536, 0, "etcd's request limit")
	}
	if v.reboot {
		tableRowX(p+"most nodes cordoned at once", float64(full.cordonMax), "", float64(full.budgetSum), 0, 1, "the budget")
	}
}

// printHealthCost prints what hc's health checks added over h0 (same nodes, same bench run).
func printHealthCost(runs map[string]result) {
	h0, ok0 := runs["h0"]
	hc, okc := runs["hc"]
	if !ok0 || !okc || h0.nodes != hc.nodes {
		return
	}
	checks := float64(hc.checkRuns)
	dReq, dCPU := hc.requests-h0.requests, hc.cpuRun-h0.cpuRun
	fmt.Printf("health checks every 10 s over %d nodes (hc − h0): %+.0f API requests (%.0f → %.0f; %.1f per check run, %d check runs), %+.1f s reconciler CPU (%.1f → %.1f s), time to complete %.1f → %.1f s\n",
		hc.nodes, dReq, h0.requests, hc.requests, dReq/math.Max(checks, 1), hc.checkRuns, dCPU, h0.cpuRun, hc.cpuRun, h0.elapsed.Seconds(), hc.elapsed.Seconds())
	p := fmt.Sprintf("packageset %d nodes h: ", hc.nodes)
	tableRow(p+"API requests added by health checks", dReq, "", 0, 0)
	tableRow(p+"API requests per health check run", dReq/math.Max(checks, 1), "", 0, 0)
	tableRow(p+"reconciler CPU added by health checks", dCPU, "s", 0, 0)
	tableRow(p+"API requests ratio with/without checks", hc.requests/math.Max(h0.requests, 1), "", 0, 0)
}
