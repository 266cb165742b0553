package reconciler

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gantry-dev/terraform-provider-gantry/internal/api/v1alpha1"
	"github.com/gantry-dev/terraform-provider-gantry/internal/packageset"
)

// A pass's act phase on nodes: per node, its record, status and cordon written first (so a
// restart never repeats a stage), then its stage Pods, then its drain. The runtime-required
// taint's changes around it are in packageset_runtime.go.

// actWorkers bounds the nodes a pass acts on concurrently.
const actWorkers = 32

// act carries out the node plans: per node its record write, then its stage Pod deletes and
// creates, then its drain; nodes concurrently (actWorkers). It returns how many nodes had a
// write conflict (their remaining actions skipped), the drains' refused evictions (node →
// message) and the first other error.
func (r *PackageSetReconciler) act(ctx context.Context, set *v1alpha1.PackageSet, nodes map[string]*corev1.Node, plans []packageset.NodePlan) (int, map[string]string, error) {
	var (
		wg         sync.WaitGroup
		mu         sync.Mutex
		conflicted int
		firstErr   error
		refusals   = map[string]string{}
	)
	work := make(chan int)
	one := func(np packageset.NodePlan) error {
		node := nodes[np.Name]
		if node == nil {
			return nil
		}
		if err := r.writeNode(ctx, set, node, np); err != nil {
			return err
		}
		for _, j := range np.DeleteJobs {
			if err := r.deleteStage(ctx, j); err != nil {
				return err
			}
		}
		for _, js := range np.Jobs {
			if err := r.createPod(ctx, set, node, js); err != nil {
				return err
			}
		}
		if np.Drain {
			refused, err := r.drain(ctx, set, node, np.DrainNonInterrupt)
			if err != nil {
				return err
			}
			if refused != "" {
				mu.Lock()
				refusals[node.Name] = refused
				mu.Unlock()
			}
		}
		return nil
	}
	for w := 0; w < min(actWorkers, len(plans)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				err := one(plans[i])
				if err == nil {
					continue
				}
				mu.Lock()
				if apierrors.IsConflict(err) {
					conflicted++
				} else if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for i := range plans {
		work <- i
	}
	close(work)
	wg.Wait()
	return conflicted, refusals, firstErr
}

// writeNode writes the node's record, status and cordon annotations (and spec.unschedulable)
// in one update with the node's resourceVersion (optimistic concurrency), only if they change.
func (r *PackageSetReconciler) writeNode(ctx context.Context, set *v1alpha1.PackageSet, node *corev1.Node, np packageset.NodePlan) error {
	// The new annotations and cordon first: the node (status included) is only copied when
	// they change, which most nodes of most passes do not.
	ann := maps.Clone(node.Annotations)
	if ann == nil {
		ann = map[string]string{}
	}
	unschedulable := node.Spec.Unschedulable
	stateKey, statusKey, cordonKey := v1alpha1.AnnotationNodeStatePrefix+set.Name, v1alpha1.AnnotationNodeStatusPrefix+set.Name, v1alpha1.AnnotationCordonPrefix+set.Name
	if np.Record == nil {
		delete(ann, stateKey)
		delete(ann, statusKey)
	} else {
		b, err := json.Marshal(np.Record)
		if err != nil {
			return err
		}
		ann[stateKey] = string(b)
		ann[statusKey] = string(np.Status)
	}
	// A node an operator cordoned stays cordoned (packageset.Cordon).
	unschedulable = packageset.Cordon(ann, unschedulable, cordonKey, np.Cordon, np.Uncordon)
	if maps.Equal(ann, node.Annotations) && unschedulable == node.Spec.Unschedulable {
		return nil
	}
	n := node.DeepCopy()
	n.Annotations, n.Spec.Unschedulable = ann, unschedulable
	// An Update with the cached resourceVersion, not a merge patch: a pass that planned from a
	// cache behind this set's own last write must not overwrite the newer record with an older
	// one (a node sent back to Activating counts against a fleet budget twice). The price is a
	// conflict per kubelet/kwok heartbeat in between, resolved below by a re-read.
	if err := r.Client.Update(ctx, n); err != nil {
		if !apierrors.IsConflict(err) {
			return err
		}
		// The node changed since the pass read it: someone else (e.g. kwok's or the kubelet's
		// status heartbeat) or our own previous write not yet in the cache. Re-read it: if
		// what this set owns already is what we want, the write is done; if nothing the plan
		// read changed (labels, taints, unschedulable, gantry.dev/ annotations), write the
		// same change onto the fresh node (still with its resourceVersion); else it is a real
		// conflict and the pass is retried.
		fresh := &corev1.Node{}
		if gerr := r.APIReader.Get(ctx, types.NamespacedName{Name: node.Name}, fresh); gerr != nil {
			return err
		}
		switch {
		case sameGantryState(fresh, n):
			n = fresh
		case samePlanInputs(fresh, node):
			retry := fresh.DeepCopy()
			if retry.Annotations == nil {
				retry.Annotations = map[string]string{}
			}
			for k := range gantryAnnotations(fresh) {
				delete(retry.Annotations, k)
			}
			for k, v := range gantryAnnotations(n) {
				retry.Annotations[k] = v
			}
			retry.Spec.Unschedulable = n.Spec.Unschedulable
			if rerr := r.Client.Update(ctx, retry); rerr != nil {
				return rerr
			}
			n = retry
		default:
			return err
		}
	}
	if np.Cordon {
		r.Recorder.Event(set, corev1.EventTypeNormal, "Cordoned", "cordoned node "+node.Name+" for its interrupt")
	}
	if np.Uncordon {
		r.Recorder.Event(set, corev1.EventTypeNormal, "Released", "released the cordon of node "+node.Name)
	}
	*node = *n
	return nil
}

// gantryAnnotations are a node's gantry.dev/ annotations (every set's record, status and
// cordon).
func gantryAnnotations(n *corev1.Node) map[string]string {
	out := map[string]string{}
	for k, v := range n.Annotations {
		if strings.HasPrefix(k, "gantry.dev/") {
			out[k] = v
		}
	}
	return out
}

// sameGantryState: a and b carry the same gantry.dev/ annotations and cordon.
func sameGantryState(a, b *corev1.Node) bool {
	return a.Spec.Unschedulable == b.Spec.Unschedulable && equality.Semantic.DeepEqual(gantryAnnotations(a), gantryAnnotations(b))
}

// samePlanInputs: nothing a pass reads from a node differs between a and b (labels, taints,
// unschedulable, gantry.dev/ annotations; the rest, e.g. status heartbeats, does not matter).
func samePlanInputs(a, b *corev1.Node) bool {
	return sameGantryState(a, b) && equality.Semantic.DeepEqual(a.Labels, b.Labels) && equality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints)
}
