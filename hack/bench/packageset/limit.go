package main

// The package set's limit: the same stage Pods the reconciler would run for a variant, created
// by a plain client-go program in the same order, with no reconciler and no node records.
// Per compartment (or the whole pool without one) the nodes go in the variant's batches (the
// deployment policy's exponential batches, or budget-sized waves); within a batch every node
// runs its stagesPerNode Pods one after another (each bound to the node with nodeName, created
// once the previous one is seen Succeeded), the batch's nodes at once; the next batch starts
// when the last node of the batch is done. Compartments run side by side, as they do under
// the reconciler. No cordon, drain or status write: what remains is the cluster's own cost of
// those Pod lifecycles (API server, etcd, kwok), the floor a reconciler cannot go under.

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
	"github.com/gantry-dev/terraform-provider-gantry/reconciler"
)

// batches is the variant's batch sizes over m nodes of one compartment (or of the pool):
// packageset.BatchSize and EvaluateBatch as the machine runs them, capped by the budget.
func (v variant) batches(m int) []int {
	pct := v.budget
	ceiling := packageset.Budget(&v1alpha1.InterruptionBudget{Percent: &pct}, m)
	var out []int
	if v.compartments == 0 {
		for done := 0; done < m; done += ceiling {
			out = append(out, min(ceiling, m-done))
		}
		return out
	}
	var st v1alpha1.BatchState
	for done := 0; done < m; {
		size := min(packageset.BatchSize(benchStrategy, m, st), ceiling, m-done)
		packageset.EvaluateBatch(benchStrategy, &st, size, size, 0, m)
		out = append(out, size)
		done += size
	}
	return out
}

// podDone tells waiters when a limit Pod is seen Succeeded.
type podDone struct {
	mu      sync.Mutex
	done    map[string]bool
	waiters map[string]chan struct{}
	inf     toolscache.SharedIndexInformer
}

func newPodDone(e *env, pool string) *podDone {
	f := informers.NewSharedInformerFactoryWithOptions(e.cs, 0, informers.WithNamespace(reconciler.DefaultJobNamespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = v1alpha1.LabelPackageSet + "=" + pool }))
	pd := &podDone{done: map[string]bool{}, waiters: map[string]chan struct{}{}, inf: f.Core().V1().Pods().Informer()}
	see := func(obj interface{}) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Status.Phase != corev1.PodSucceeded {
			return
		}
		pd.mu.Lock()
		defer pd.mu.Unlock()
		if !pd.done[p.Name] {
			pd.done[p.Name] = true
			if ch, ok := pd.waiters[p.Name]; ok {
				close(ch)
			}
		}
	}
	_, _ = pd.inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: see, UpdateFunc: func(_, o interface{}) { see(o) }})
	return pd
}

// wait returns a channel closed once Pod name is seen Succeeded.
func (pd *podDone) wait(name string) <-chan struct{} {
	pd.mu.Lock()
	defer pd.mu.Unlock()
	ch := make(chan struct{})
	if pd.done[name] {
		close(ch)
		return ch
	}
	pd.waiters[name] = ch
	return ch
}

// limitRun times the variant's stage Pods over n fresh kwok nodes with no reconciler (see the
// file's comment). It returns the time from the first Pod create to the last Pod seen
// Succeeded.
func (e *env) limitRun(v variant, n int) (elapsed time.Duration, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	pool := fmt.Sprintf("bench-limit%s-%d", v.name, time.Now().UnixMilli()%1000000)
	// The Pods' owner: a PackageSet no reconciler runs for (kwok completes Pods a PackageSet
	// owns; the garbage collector removes them with it at the clean-up).
	owner := &v1alpha1.PackageSet{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	owner.Spec.NodeSelector = metav1.LabelSelector{MatchLabels: map[string]string{"gantry.dev/bench-none": "none"}}
	owner.Spec.Packages = []v1alpha1.Package{{Name: "tool-a", Version: "1.0.0", Image: "ghcr.io/gantry-dev/tool-a:1"}}
	if err := e.c.Create(ctx, owner); err != nil {
		return 0, fmt.Errorf("owner set: %w", err)
	}
	var names []string
	defer func() { e.cleanup(pool, names) }()
	names, err = e.createNodes(ctx, pool, v, n)
	if err != nil {
		return 0, err
	}
	pd := newPodDone(e, pool)
	stop := make(chan struct{})
	defer close(stop)
	go pd.inf.Run(stop)
	toolscache.WaitForCacheSync(stop, pd.inf.HasSynced)

	groups := map[string][]string{}
	for i, name := range names {
		g := ""
		if v.compartments > 0 {
			g = v.compartmentOf(i)
		}
		groups[g] = append(groups[g], name)
	}
	ref := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "PackageSet", Name: pool, UID: owner.UID}
	stages := v.stagesPerNode()
	node := func(name string) error {
		for s := 0; s < stages; s++ {
			pn := fmt.Sprintf("%s-s%d", name, s)
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pn, Namespace: reconciler.DefaultJobNamespace,
				Labels: map[string]string{v1alpha1.LabelPackageSet: pool}, OwnerReferences: []metav1.OwnerReference{ref}},
				Spec: corev1.PodSpec{NodeName: name, RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "stage", Image: "busybox"}}}}
			done := pd.wait(pn)
			if err := e.c.Create(ctx, p); err != nil {
				return fmt.Errorf("pod %s: %w", pn, err)
			}
			select {
			case <-done:
			case <-ctx.Done():
				return fmt.Errorf("pod %s not Succeeded: %w", pn, ctx.Err())
			}
		}
		return nil
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(groups))
	for _, nodes := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			i := 0
			for _, size := range v.batches(len(nodes)) {
				var bw sync.WaitGroup
				var berr error
				var mu sync.Mutex
				for _, name := range nodes[i : i+size] {
					bw.Add(1)
					go func() {
						defer bw.Done()
						if err := node(name); err != nil {
							mu.Lock()
							berr = err
							mu.Unlock()
						}
					}()
				}
				bw.Wait()
				if berr != nil {
					errs <- berr
					return
				}
				i += size
			}
		}()
	}
	wg.Wait()
	elapsed = time.Since(start)
	close(errs)
	for err := range errs {
		return elapsed, err
	}
	return elapsed, nil
}
