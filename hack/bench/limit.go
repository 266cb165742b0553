package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The limit: what the same Performers cost with no Terraform at all. A plain client-go program
// creates the N Performers from N goroutines at once (client QPS -limit-qps, burst twice
// it), follows one watch until every one is Running for its generation, then deletes them
// all the same way and follows the watch until every one is gone. Reconciler, API server and
// kwok are the same as Gantry's, so Gantry / limit is what Terraform and the provider add.

var performerGVR = schema.GroupVersionResource{Group: "gantry.dev", Version: "v1alpha1", Resource: "performers"}

// limitRun is one round of the limit: seconds from the first create to all Running (seen by
// the watch) and from the first delete to all gone.
type limitRun struct{ create, delete float64 }

// runLimit creates, waits for, deletes and waits for n Performers named <prefix>-<i> in
// namespace, with a client of the given QPS (burst 2×qps).
func runLimit(ctx context.Context, base *rest.Config, prefix string, n int, qps float32) limitRun {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	ri := dynamic.NewForConfigOrDie(cfg).Resource(performerGVR).Namespace(namespace)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
	}
	var out limitRun

	t0 := time.Now()
	eachAtOnce(names, func(name string) {
		_, err := ri.Create(ctx, limitPerformer(name), metav1.CreateOptions{})
		check(err)
	})
	untilAll(ctx, ri, names, running)
	out.create = time.Since(t0).Seconds()

	t0 = time.Now()
	eachAtOnce(names, func(name string) { check(ri.Delete(ctx, name, metav1.DeleteOptions{})) })
	untilAll(ctx, ri, names, nil)
	out.delete = time.Since(t0).Seconds()
	return out
}

// limitPerformer is the Performer the limits create: the bench's image, nothing else set.
func limitPerformer(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "gantry.dev/v1alpha1", "kind": "Performer",
		"metadata": map[string]interface{}{"name": name, "namespace": namespace},
		"spec":     map[string]interface{}{"image": "ghcr.io/layr-labs/hello-performer:v1.0.0"}}}
}

// untilAll returns once every name satisfies done (with done nil: once every name is gone),
// as a LIST and then its WATCH tell; a watch that ends is resumed with a new LIST.
func untilAll(ctx context.Context, ri dynamic.ResourceInterface, names []string, done func(*unstructured.Unstructured) bool) {
	mine := map[string]bool{}
	for _, n := range names {
		mine[n] = true
	}
	for {
		l, err := ri.List(ctx, metav1.ListOptions{})
		check(err)
		ok := map[string]bool{} // names that satisfy done
		if done == nil {
			ok = maps.Clone(mine)
		}
		for i := range l.Items {
			u := &l.Items[i]
			if mine[u.GetName()] {
				ok[u.GetName()] = done != nil && done(u)
			}
		}
		if countTrue(ok) == len(names) {
			return
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{ResourceVersion: l.GetResourceVersion()})
		check(err)
		for ev := range w.ResultChan() {
			u, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj || !mine[u.GetName()] {
				continue
			}
			ok[u.GetName()] = (ev.Type == watch.Deleted) == (done == nil) && (done == nil || done(u))
			if countTrue(ok) == len(names) {
				w.Stop()
				return
			}
		}
		w.Stop()
		fmt.Fprintln(os.Stderr, "limit: the watch ended; listing again")
	}
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

func running(u *unstructured.Unstructured) bool {
	phase, _, _ := unstructured.NestedString(u.Object, "status", "phase")
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return phase == "Running" && og == u.GetGeneration()
}

// eachAtOnce runs f on every name, each in its own goroutine (the client's QPS paces them).
func eachAtOnce(names []string, f func(string)) {
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(n)
		}()
	}
	wg.Wait()
}

// runLimitSlots is the limit at Terraform's concurrency: slots workers (Terraform's
// -parallelism) each take the next of the n Performers, create it and wait until the shared
// informer shows it Running, then take the next; then the same for the deletes, each waiting
// until it is gone. Against runLimit (all n at once) it isolates what each object's own latency
// costs at that concurrency, so Gantry / this limit is what Terraform and the provider add per
// object.
func runLimitSlots(ctx context.Context, base *rest.Config, prefix string, n, slots int, qps float32) limitRun {
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = qps, int(2*qps)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ri := dyn.Resource(performerGVR).Namespace(namespace)
	type signals struct {
		running, gone         chan struct{}
		onceRunning, onceGone sync.Once
	}
	names := make([]string, n)
	sig := map[string]*signals{}
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", prefix, i)
		sig[names[i]] = &signals{running: make(chan struct{}), gone: make(chan struct{})}
	}
	on := func(obj interface{}, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || sig[u.GetName()] == nil {
			return
		}
		s := sig[u.GetName()]
		switch {
		case deleted:
			s.onceGone.Do(func() { close(s.gone) })
		case running(u):
			s.onceRunning.Do(func() { close(s.running) })
		}
	}
	inf := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, namespace, nil).ForResource(performerGVR).Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o interface{}) { on(o, false) },
		UpdateFunc: func(_, o interface{}) { on(o, false) },
		DeleteFunc: func(o interface{}) { on(o, true) },
	})
	check(err)
	ictx, stop := context.WithCancel(ctx)
	defer stop()
	go inf.Run(ictx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		check(fmt.Errorf("limit: the performer informer did not sync"))
	}

	var out limitRun
	t0 := time.Now()
	inSlots(names, slots, func(name string) {
		_, err := ri.Create(ctx, limitPerformer(name), metav1.CreateOptions{})
		check(err)
		<-sig[name].running
	})
	out.create = time.Since(t0).Seconds()
	t0 = time.Now()
	inSlots(names, slots, func(name string) {
		check(ri.Delete(ctx, name, metav1.DeleteOptions{}))
		<-sig[name].gone
	})
	out.delete = time.Since(t0).Seconds()
	return out
}

// inSlots runs f on every name from slots workers, each taking the next name when its f
// returns (Terraform's -parallelism walk).
func inSlots(names []string, slots int, f func(string)) {
	next := make(chan string)
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				f(n)
			}
		}()
	}
	for _, n := range names {
		next <- n
	}
	close(next)
	wg.Wait()
}
