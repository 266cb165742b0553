package main

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// The per-object trace (issue 24, item 1): while Terraform applies and destroys the N
// performers, three watches (Performers, their Pods, their Services) stamp, per performer, the
// first time each step was seen. The report is the median duration of each step, so the
// latency of one object at -parallelism 10 is broken down into what the provider, the
// reconciler, the API server and kwok each take. Times are when the bench's watch saw the
// event (the same watch lag for every step).

// Steps of one performer, in the order they happen.
const (
	stCreated     = "performer created"
	stSvcCreated  = "service created"
	stPodCreated  = "pod created"
	stPodReady    = "pod Ready"
	stRunning     = "performer Running"
	stDeleting    = "performer deletionTimestamp"
	stSvcGone     = "service gone"
	stPodDeleting = "pod deletionTimestamp"
	stPodGone     = "pod gone"
	stGone        = "performer gone"
)

// tracer holds, per performer name, the first time each step was seen.
type tracer struct {
	mu     sync.Mutex
	prefix string
	at     map[string]map[string]time.Time
}

// traced is one kind the trace watches: its objects name their performer (performerOf) and
// each watch event stamps the kind's steps (created, then ready when isReady says so;
// deleting once it carries a deletionTimestamp; gone when deleted). "" steps are not stamped.
type traced struct {
	gvr                            schema.GroupVersionResource
	performerOf                    func(*unstructured.Unstructured) string
	created, ready, deleting, gone string
	isReady                        func(*unstructured.Unstructured) bool
}

// tracedKinds are the Performers, their Pods and their Services.
var tracedKinds = []traced{
	{gvr: performerGVR, performerOf: (*unstructured.Unstructured).GetName,
		created: stCreated, ready: stRunning, deleting: stDeleting, gone: stGone, isReady: running},
	{gvr: corev1.SchemeGroupVersion.WithResource("pods"), performerOf: performerLabel,
		created: stPodCreated, ready: stPodReady, deleting: stPodDeleting, gone: stPodGone, isReady: podReadyU},
	{gvr: corev1.SchemeGroupVersion.WithResource("services"), performerOf: performerLabel,
		created: stSvcCreated, gone: stSvcGone},
}

func performerLabel(u *unstructured.Unstructured) string {
	return u.GetLabels()["gantry.dev/performer"]
}

// podReadyU is podReady of an unstructured Pod.
func podReadyU(u *unstructured.Unstructured) bool {
	var p corev1.Pod
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) == nil && podReady(&p)
}

// startTrace watches the bench namespace's Performers, Pods and Services whose performer name
// starts with prefix until ctx ends. Each watch starts from a LIST's resourceVersion, so
// objects that exist already are not taken for new ones.
func startTrace(ctx context.Context, cfg *rest.Config, prefix string) *tracer {
	t := &tracer{prefix: prefix, at: map[string]map[string]time.Time{}}
	dyn := dynamic.NewForConfigOrDie(cfg)
	ready := make(chan struct{}, len(tracedKinds))
	for _, k := range tracedKinds {
		go t.follow(ctx, ready, dyn.Resource(k.gvr).Namespace(namespace), k)
	}
	for range tracedKinds {
		<-ready
	}
	return t
}

// follow lists ri (for a resourceVersion), then watches from there and stamps k's steps from
// each event; a watch that ends is resumed the same way.
func (t *tracer) follow(ctx context.Context, ready chan<- struct{}, ri dynamic.ResourceInterface, k traced) {
	first := true
	for ctx.Err() == nil {
		l, err := ri.List(ctx, metav1.ListOptions{})
		var wi watch.Interface
		if err == nil {
			wi, err = ri.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
		}
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if first {
			ready <- struct{}{}
			first = false
		}
		for ev := range wi.ResultChan() {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				t.stamp(k, ev.Type, u)
			}
		}
	}
}

// stamp marks the step of kind k that event type et on u shows.
func (t *tracer) stamp(k traced, et watch.EventType, u *unstructured.Unstructured) {
	n := k.performerOf(u)
	switch {
	case et == watch.Deleted:
		t.mark(n, k.gone)
	case u.GetDeletionTimestamp() != nil:
		t.mark(n, k.deleting)
	default:
		t.mark(n, k.created)
		if k.isReady != nil && k.isReady(u) {
			t.mark(n, k.ready)
		}
	}
}

// mark records the first time step was seen for performer name (prefix only; "" steps not).
func (t *tracer) mark(name, step string) {
	if step == "" || !strings.HasPrefix(name, t.prefix) {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.at[name]
	if m == nil {
		m = map[string]time.Time{}
		t.at[name] = m
	}
	if _, ok := m[step]; !ok {
		m[step] = now
	}
}

// traceSpans are the steps reported: each the time from one step to the next.
var traceSpans = [][2]string{
	{stCreated, stSvcCreated}, {stCreated, stPodCreated}, {stPodCreated, stPodReady}, {stPodReady, stRunning},
	{stCreated, stRunning},
	{stDeleting, stSvcGone}, {stDeleting, stPodDeleting}, {stPodDeleting, stPodGone}, {stPodGone, stGone},
	{stDeleting, stGone},
}

// report prints, for each span, the median and p90 over the performers that saw both steps,
// and, per phase, the median gap between one object's end and the next object's start (the
// slot refill: Terraform and the provider between two objects of one -parallelism slot).
func (t *tracer) report() {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Printf("\nper-object trace (%d performers; seconds, median / p90 / max):\n", len(t.at))
	for _, s := range traceSpans {
		var ds []float64
		for _, m := range t.at {
			a, okA := m[s[0]]
			b, okB := m[s[1]]
			if okA && okB {
				ds = append(ds, b.Sub(a).Seconds())
			}
		}
		if len(ds) == 0 {
			continue
		}
		sort.Float64s(ds)
		fmt.Printf("  %-30s → %-28s %6.3f / %6.3f / %6.3f  (%d)\n", s[0], s[1], ds[len(ds)/2], ds[len(ds)*9/10], ds[len(ds)-1], len(ds))
	}
	for _, ph := range [][2]string{{stCreated, stRunning}, {stDeleting, stGone}} {
		var starts, ends []time.Time
		for _, m := range t.at {
			if a, ok := m[ph[0]]; ok {
				starts = append(starts, a)
			}
			if b, ok := m[ph[1]]; ok {
				ends = append(ends, b)
			}
		}
		if len(starts) == 0 || len(ends) == 0 {
			continue
		}
		sortTimes(starts)
		sortTimes(ends)
		fmt.Printf("  %s … %s: first start → last end %.2f s; first start %s, last end %s\n", ph[0], ph[1],
			ends[len(ends)-1].Sub(starts[0]).Seconds(), starts[0].Format("15:04:05.000"), ends[len(ends)-1].Format("15:04:05.000"))
		// Slot refill: the k-th end frees a slot whose next start is the (k+parallel)-th start.
		var gaps []float64
		for k := 0; k+*parallel < len(starts) && k < len(ends); k++ {
			gaps = append(gaps, starts[k+*parallel].Sub(ends[k]).Seconds())
		}
		if len(gaps) > 0 {
			sort.Float64s(gaps)
			fmt.Printf("    slot refill (an end → the start it lets in): median %.3f s, p90 %.3f s\n", gaps[len(gaps)/2], gaps[len(gaps)*9/10])
		}
	}
}

func sortTimes(ts []time.Time) { sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) }) }

// apiTimes is the API server's own request time so far (apiserver_request_duration_seconds
// sum and count from its /metrics), by "VERB resource[/subresource]"; WATCH and CONNECT
// excluded (long-running).
type apiTimes map[string][2]float64

var (
	apiMetricLine  = regexp.MustCompile(`^apiserver_request_duration_seconds_(sum|count)\{(.*)\} (\S+)$`)
	apiMetricLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)
)

// scrapeAPITimes reads the API server's /metrics; nil when it cannot.
func scrapeAPITimes(ctx context.Context, cs *kubernetes.Clientset) apiTimes {
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	out := apiTimes{}
	for _, l := range strings.Split(string(raw), "\n") {
		m := apiMetricLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, kv := range apiMetricLabel.FindAllStringSubmatch(m[2], -1) {
			labels[kv[1]] = kv[2]
		}
		if v := labels["verb"]; v == "WATCH" || v == "CONNECT" || v == "" {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if s := labels["subresource"]; s != "" {
			key += "/" + s
		}
		v, _ := strconv.ParseFloat(m[3], 64)
		e := out[key]
		if m[1] == "sum" {
			e[0] += v
		} else {
			e[1] += v
		}
		out[key] = e
	}
	return out
}

// reportAPITimes prints the n request kinds with the most API server time between before and
// after: count, mean and total (the API server's handling time, which includes its waits on
// etcd and on its own loopback calls).
func reportAPITimes(before, after apiTimes, n int) {
	if before == nil || after == nil {
		return
	}
	type row struct {
		key          string
		total, count float64
	}
	var rows []row
	for k, a := range after {
		b := before[k]
		if c := a[1] - b[1]; c > 0 {
			rows = append(rows, row{k, a[0] - b[0], c})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].total > rows[j].total })
	fmt.Printf("  API server time by request (the same apply and destroy; top %d):\n", n)
	for i, r := range rows {
		if i == n {
			break
		}
		fmt.Printf("    %-32s %5.0f requests, mean %6.1f ms, total %6.2f s\n", r.key, r.count, 1000*r.total/r.count, r.total)
	}
}
