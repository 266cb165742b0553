package reconciler

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// A pass's gather phase: the facts packageset.Plan decides from (nodes, other sets, stage
// Pods, drains, fleet budget). Stage Pod outcomes are read in packageset_stagepods.go, a
// cordoned node's drain in packageset_drain.go.

// facts gathers one pass's facts: selected nodes (and nodes still carrying this set's record),
// the priority gate from the other sets, taints, stage Pods, cordons and drains.
func (r *PackageSetReconciler) facts(ctx context.Context, set *v1alpha1.PackageSet, deleting bool) (packageset.SetFacts, map[string]*corev1.Node, error) {
	f := packageset.SetFacts{Now: r.now(), Name: set.Name, Generation: set.Generation, Deleting: deleting,
		Paused: set.IsPaused(), Disabled: set.Spec.Disabled, Budget: set.Spec.InterruptionBudget, Serial: set.Spec.Serial,
		KeepInstalled: set.Spec.UninstallOnDelete != nil && !*set.Spec.UninstallOnDelete}
	var nodeList corev1.NodeList
	// The lists are read-only here (writeNode copies a node before changing it), so they
	// share the cache's objects instead of deep-copying every node and stage pod per pass.
	if err := r.Client.List(ctx, &nodeList, client.UnsafeDisableDeepCopy); err != nil {
		return f, nil, err
	}
	var sets v1alpha1.PackageSetList
	if err := r.Client.List(ctx, &sets, client.UnsafeDisableDeepCopy); err != nil {
		return f, nil, err
	}
	pods, err := r.stagePods(ctx, set.Name)
	if err != nil {
		return f, nil, err
	}
	jobs, err := r.legacyStageJobs(ctx, set.Name)
	if err != nil {
		return f, nil, err
	}
	jobsByNode := jobFactsByNode(jobs, pods, f.Now)
	reader := packageset.NewNodeReader(set, sets.Items, nodeList.Items, r.stageTolerations(set), &f)
	if f.Fleet, err = r.fleetFacts(ctx, set, sets.Items, nodeList.Items); err != nil {
		return f, nil, err
	}

	nodes := map[string]*corev1.Node{}
	for i := range nodeList.Items {
		node := &nodeList.Items[i]
		nf, ok, err := reader.Read(node)
		if err != nil {
			return f, nil, err
		}
		if !ok {
			continue
		}
		nodes[node.Name] = node
		nf.Jobs = jobsByNode[node.Name]
		// A cordoned node's pods are listed (uncached: the cache holds only our own pods) each
		// pass while its drain matters (DrainMatters: not while its interrupt runs or after,
		// when it stays cordoned but the drain facts are not read), so the drain's state is
		// never remembered in the process and a restart loses nothing.
		if nf.Cordoned && packageset.DrainMatters(nf.Record) {
			if err := r.drainFacts(ctx, set, node, &nf, f.Drain, f.Now); err != nil {
				return f, nil, err
			}
		}
		f.Nodes = append(f.Nodes, nf)
	}
	return f, nodes, nil
}

// lockFleet serializes, in this reconciler, the passes of the package sets that share set's
// fleet budget (spec.rollout.fleetBudget, by name), from their facts to their node writes; with
// fleetFacts' uncached node read, a set's admission sees every node another set of the budget
// admitted before it. (With cached nodes alone, two sets passing at once each admitted a node:
// 2 in flight under a limit of 1, seen by the acceptance test's node watch.) Returns the
// unlock, a no-op for a set without a fleet budget.
func (r *PackageSetReconciler) lockFleet(set *v1alpha1.PackageSet) func() {
	if set.Spec.Rollout == nil || set.Spec.Rollout.FleetBudget == nil {
		return func() {}
	}
	mu, _ := r.fleetLocks.LoadOrStore(set.Spec.Rollout.FleetBudget.Name, &sync.Mutex{})
	m, _ := mu.(*sync.Mutex)
	m.Lock()
	return m.Unlock
}

// fleetFacts are the set's fleet budget facts (packageset.FleetFactsOf; nil without a budget),
// read from the API server's nodes and package sets, not the cache (cached: as listed this pass):
// under lockFleet, the other sets' admissions are written before this read. Error: the
// uncached list failed.
func (r *PackageSetReconciler) fleetFacts(ctx context.Context, set *v1alpha1.PackageSet, sets []v1alpha1.PackageSet, cached []corev1.Node) (*packageset.FleetFacts, error) {
	if set.Spec.Rollout == nil || set.Spec.Rollout.FleetBudget == nil || r.APIReader == nil {
		return packageset.FleetFactsOf(set, sets, cached), nil
	}
	// The sets too: a set created in the same apply as this one may not be in the cache yet,
	// and its nodes would not count (3 in flight under a limit of 1 with cached sets).
	var fresh corev1.NodeList
	if err := r.APIReader.List(ctx, &fresh); err != nil {
		return nil, err
	}
	var freshSets v1alpha1.PackageSetList
	if err := r.APIReader.List(ctx, &freshSets); err != nil {
		return nil, err
	}
	return packageset.FleetFactsOf(set, freshSets.Items, fresh.Items), nil
}
